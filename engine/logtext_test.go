package engine

import "testing"

// TestLogTexts: partitions and counts in log lines read as text (issue 25
// item 5: "assigned map[orders:[2 0]]", "written by 1 tasks").
func TestLogTexts(t *testing.T) {
	if got, want := partitionList(map[string][]int32{"orders": {2, 0}, "a": {1}}), "a/1, orders/0, orders/2"; got != want {
		t.Errorf("partitionList = %q, want %q", got, want)
	}
	if got := partitionList(nil); got != "none" {
		t.Errorf("partitionList(nil) = %q", got)
	}
	if got := count(1, "task"); got != "1 task" {
		t.Errorf("count(1) = %q", got)
	}
	if got := count(4, "task"); got != "4 tasks" {
		t.Errorf("count(4) = %q", got)
	}
}

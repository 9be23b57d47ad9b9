package engine

import "testing"

// TestLogTexts: partitions and counts in log lines read as text (issue 25
// item 5: "assigned map[orders:[2 0]]", "written by 1 tasks").
func TestLogTexts(t *testing.T) {
	if got := count(1, "task"); got != "1 task" {
		t.Errorf("count(1) = %q", got)
	}
	if got := count(4, "task"); got != "4 tasks" {
		t.Errorf("count(4) = %q", got)
	}
}

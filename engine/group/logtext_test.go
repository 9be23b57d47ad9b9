package group

import "testing"

// TestPartitionList: partitions in log lines read as text (issue 25
// item 5: "assigned map[orders:[2 0]]").
func TestPartitionList(t *testing.T) {
	if got, want := partitionList(map[string][]int32{"orders": {2, 0}, "a": {1}}), "a/1, orders/0, orders/2"; got != want {
		t.Errorf("partitionList = %q, want %q", got, want)
	}
	if got := partitionList(nil); got != "none" {
		t.Errorf("partitionList(nil) = %q", got)
	}
}

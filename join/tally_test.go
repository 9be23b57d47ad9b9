package join

import (
	"testing"

	"pgregory.net/rapid"
)

// TestJoinsEqualBatchExercises: the differential test's generator makes
// the cases it is for — late rows accepted, too-late rows, retractions in
// modes update and retract, rows of every type and kind — in a fixed
// number of draws.
func TestJoinsEqualBatchExercises(t *testing.T) {
	var tooLate, rows int
	streamRetractions = 0
	kinds := map[[2]int]int{}
	rapid.Check(t, func(t *rapid.T) {
		c := genConfig(t)
		in := genRows(t, &c)
		got, acc, _ := stream(t, c, in, 20)
		tooLate += len(in) - len(acc)
		for _, n := range got {
			rows += n
		}
		kinds[[2]int{int(c.Type), int(c.Kind)}]++
	})
	if tooLate == 0 || rows == 0 || len(kinds) < 10 || streamRetractions == 0 {
		t.Fatalf("too late %d, rows %d, type/kind pairs %d, retractions %d", tooLate, rows, len(kinds), streamRetractions)
	}
	t.Logf("too late %d, rows %d, type/kind pairs %d, retractions %d", tooLate, rows, len(kinds), streamRetractions)
}

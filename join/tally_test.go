package join

import (
	"testing"

	"pgregory.net/rapid"
)

// TestJoinsEqualBatchExercises: the differential test's generator makes
// the cases it is for — late rows accepted, too-late rows, retractions in
// modes update and retract, rows of every type and kind — in a fixed
// number of draws (at most five rounds of rapid's checks).
func TestJoinsEqualBatchExercises(t *testing.T) {
	var tooLate, rows int
	streamRetractions = 0
	kinds := map[[2]int]int{}
	// rapid draws from a random seed: up to five rounds of its checks, so
	// that a round that happens to miss a rare pair does not fail the
	// test (once in a few dozen runs with one round); a generator that
	// cannot make a case still fails.
	for round := 0; round < 5; round++ {
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
		if tooLate > 0 && rows > 0 && len(kinds) >= 10 && streamRetractions > 0 {
			break
		}
	}
	if tooLate == 0 || rows == 0 || len(kinds) < 10 || streamRetractions == 0 {
		t.Fatalf("too late %d, rows %d, type/kind pairs %d, retractions %d", tooLate, rows, len(kinds), streamRetractions)
	}
	t.Logf("too late %d, rows %d, type/kind pairs %d, retractions %d", tooLate, rows, len(kinds), streamRetractions)
}

package join

import (
	"maps"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/keygroup"
)

// genDenseRows draws rows that crowd the state: many rows of one event
// time per key (times on a coarse grid), a key space from one key to
// dozens in one key group (the key table's probe runs, deletes and
// re-inserts as keys empty and come back), and bursts of one key (its
// list past 16 entries, then freed).
func genDenseRows(t *rapid.T, c *Config) []tRow {
	n := rapid.IntRange(0, 220).Draw(t, "rows")
	nkeys := rapid.SampledFrom([]int64{1, 2, 5, 40}).Draw(t, "keys")
	grid := rapid.SampledFrom([]int64{1, 10, 25}).Draw(t, "grid")
	var rows []tRow
	clock := int64(1_000_000)
	burst, burstKey := 0, int64(0)
	for i := range n {
		clock += rapid.Int64Range(0, 6).Draw(t, "step")
		ts := clock - rapid.Int64Range(0, 20).Draw(t, "jitter")
		if rapid.IntRange(0, 7).Draw(t, "far") == 0 {
			ts -= rapid.Int64Range(0, 120).Draw(t, "behind")
		}
		ts -= ts % grid
		key := rapid.Int64Range(0, nkeys-1).Draw(t, "key")
		if burst == 0 && rapid.IntRange(0, 15).Draw(t, "burst?") == 0 {
			burst, burstKey = rapid.IntRange(10, 40).Draw(t, "burst"), key
		}
		if burst > 0 {
			burst--
			key = burstKey
		}
		x := tRow{side: rapid.IntRange(0, 1).Draw(t, "side"), key: key, ts: ts, id: int64(i)}
		if c.UpperCol >= 0 {
			x.up = ts + rapid.Int64Range(0, c.Upper).Draw(t, "span")
		}
		if c.Type == Temporal && x.side == R {
			x.tomb = rapid.IntRange(0, 4).Draw(t, "tomb") == 0
		}
		rows = append(rows, x)
	}
	return rows
}

// TestDenseJoinsEqualBatch is TestJoinsEqualBatch over crowded state:
// equal event times per key, one key group holding every key, long lists,
// keys emptied and made again (see genDenseRows).
func TestDenseJoinsEqualBatch(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genConfig(t)
		if rapid.Bool().Draw(t, "oneGroup") {
			c.KeyGroups, c.Groups = 1, keygroup.Range{Lo: 0, Hi: 1}
		}
		rows := genDenseRows(t, &c)
		ooo := rapid.SampledFrom([]int64{0, 5, 20}).Draw(t, "ooo")
		got, accepted, op := stream(t, c, rows, ooo)
		want := batch(&c, accepted)
		if !maps.Equal(got, want) {
			t.Fatalf("streamed join differs from the batch join of %d accepted rows:\n got %s\nwant %s", len(accepted), show(got), show(want))
		}
		if n, slots := op.Live(); n != 0 || slots != 0 {
			t.Fatalf("%d rows and %d slots left at +inf", n, slots)
		}
	})
}

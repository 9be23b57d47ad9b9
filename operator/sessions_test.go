package operator

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

const minute = int64(60_000)

// sessionRig is a session operator over {k string, v int} counting
// events, in mode update.
type sessionRig struct {
	t      *testing.T
	op     *Operator
	schema *row.Schema
	k, v   row.Field
	r      *row.Row
	rows   []string
}

func newSessionRig(t *testing.T, gap, lateness int64) *sessionRig {
	schema, kf, vf := testSchema(t)
	count, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
	op, err := New(Config{Gap: gap, AllowedLateness: lateness, Mode: Update, Key: []row.Field{kf}, Aggs: []aggregate.Column{count}})
	if err != nil {
		t.Fatal(err)
	}
	return &sessionRig{t: t, op: op, schema: schema, k: kf, v: vf, r: schema.NewRow()}
}

// event processes an event of key k at minute m (ms offsets from 09:00)
// and returns its outcome.
func (g *sessionRig) event(k string, m int64) Outcome {
	g.t.Helper()
	g.schema.Shape(g.r)
	g.r.Set(g.k, row.Str(k))
	g.r.Set(g.v, row.Int(1))
	out, err := g.op.Process(g.r, m*minute, 1, 0)
	if err != nil {
		g.t.Fatal(err)
	}
	g.drain()
	return out
}

func (g *sessionRig) advance(m int64) {
	g.t.Helper()
	if err := g.op.AdvanceWatermark(m*minute, 0); err != nil {
		g.t.Fatal(err)
	}
	g.drain()
}

func (g *sessionRig) drain() {
	for _, r := range g.op.Drain() {
		g.rows = append(g.rows, strings.Join([]string{r.Op.Short(), r.Key[0].S, mins(r.WindowStart), mins(r.WindowEnd), r.Values[0].String()}, " "))
	}
}

func mins(ms int64) string {
	if ms == changelog.WatermarkInfinity {
		return "+inf"
	}
	m := ms / minute
	return string(rune('0'+m/10)) + string(rune('0'+m%10))
}

// TestClosedSessionNotReopened is the example (gap 10m, lateness
// 0, minutes after 09:00): k at :00 opens [:00, :10); another key's event
// at :12 moves the watermark to :12 and closes it; then k at :05 belongs
// to k's closed session: too late. tidemark emitted a second session
// [:05, :15) beside [:00, :10).
func TestClosedSessionNotReopened(t *testing.T) {
	g := newSessionRig(t, 10*minute, 0)
	if out := g.event("k", 0); out != OnTime {
		t.Fatalf("k at :00: %d", out)
	}
	g.event("j", 12)
	g.advance(12)
	if out := g.event("k", 5); out != TooLate {
		t.Fatalf("k at :05 after its session [:00, :10) closed: outcome %d, want TooLate", out)
	}
	// An event after the closed session's end starts a new one.
	if out := g.event("k", 11); out != OnTime {
		t.Fatalf("k at :11: %d", out)
	}
	g.advance(changelog.WatermarkInfinity / minute)
	want := "+I k 00 10 1|+I k 11 21 1|+I j 12 22 1" // by (end, start)
	if got := strings.Join(g.rows, "|"); got != want {
		t.Fatalf("rows\n%s\nwant\n%s", got, want)
	}
}

// TestClosedSessionBridge: the closed session's end E is remembered past
// E + gap + lateness. Gap 10m: k's [:00, :10) closes; at watermark :20
// (E + gap) k at :11 opens [:11, :21), still open; k at :05 would bridge
// the two — it touches the closed session, so it is too late, and no
// session overlaps [:00, :10).
func TestClosedSessionBridge(t *testing.T) {
	g := newSessionRig(t, 10*minute, 0)
	g.event("k", 0)
	g.advance(10)
	g.advance(20)
	if out := g.event("k", 11); out != OnTime {
		t.Fatalf("k at :11: %d", out)
	}
	if out := g.event("k", 5); out != TooLate {
		t.Fatalf("k at :05 touching the closed [:00, :10) and the open [:11, :21): outcome %d, want TooLate", out)
	}
	g.advance(changelog.WatermarkInfinity / minute)
	if got, want := strings.Join(g.rows, "|"), "+I k 00 10 1|+I k 11 21 1"; got != want {
		t.Fatalf("rows\n%s\nwant\n%s", got, want)
	}
}

// TestClosedSessionForgotten: the memory of k's closed sessions ends once
// the watermark passes E + 2·gap + lateness and k has no open session —
// not before, and not while k has an open session — and goes into the
// key group's section (a restore keeps it).
func TestClosedSessionForgotten(t *testing.T) {
	const gap, late = 10 * minute, 2 * minute
	held := func(o *Operator) bool {
		id, ok := o.keys.lookup([]byte("\x02\x01k"))
		return ok && o.keys.ent(id).closedHeld
	}
	g := newSessionRig(t, gap, late)
	g.event("k", 0)
	g.advance(12) // [:00, :10) closes at :10 + 2m
	if !held(g.op) {
		t.Fatal("no memory of the closed session")
	}
	// A restore from the key group's section keeps the memory.
	enc := map[int]*state.Encoder{}
	groups := g.op.Changed(nil)
	g.op.SnapshotGroups(groups, func(kg int) *state.Encoder { enc[kg] = &state.Encoder{}; return enc[kg] })
	var parts [][]byte
	for _, kg := range groups {
		parts = append(parts, enc[kg].Bytes())
	}
	r := newSessionRig(t, gap, late)
	if err := r.op.RestoreGroups(parts, g.op.Globals()); err != nil {
		t.Fatal(err)
	}
	if !held(r.op) {
		t.Fatal("the restore lost the memory of the closed session")
	}
	if out := r.event("k", 3); out != TooLate {
		t.Fatalf("restored: k at :03: %d", out)
	}
	for _, o := range []*sessionRig{g, r} {
		o.advance(31) // E + 2·gap + lateness = :10 + 20m + 2m = :32
		if !held(o.op) {
			t.Fatal("memory ended before E + 2·gap + lateness")
		}
		o.advance(32)
		if held(o.op) {
			t.Fatal("memory kept after E + 2·gap + lateness with no open session")
		}
	}
	// With an open session at that watermark the memory stays until the
	// session closes, then ends at the next due time.
	g = newSessionRig(t, gap, late)
	g.event("k", 0)
	g.advance(12)
	g.event("k", 25) // [:25, :35), open until :37
	g.advance(32)
	if !held(g.op) {
		t.Fatal("memory ended while the key had an open session")
	}
	g.advance(37) // [:25, :35) closes: E is :35, due at :57
	g.advance(56)
	if !held(g.op) {
		t.Fatal("memory of the later close ended early")
	}
	g.advance(57)
	if held(g.op) {
		t.Fatal("memory kept after the later close came due")
	}
	if st := g.op.Stats(); st.Keys != 0 {
		t.Fatalf("keys left: %+v", st)
	}
}

// TestSessionTimersBounded: a session that grows with every event keeps
// one fire and one close timer in the heap (a timer for an end it grew
// past is armed again when it comes due), not two per growth; and the
// rows are those of sessions fired at their final ends, worked out by
// hand: k's events at :00, :01, … :49 (gap 2m, lateness 60m, so that no close timer comes due before the end) make one
// session [:00, :51) of 50 events, fired once the watermark passes :51
// (not at its close, 1:51, the final +U of update mode), j's at :00 and :30 two sessions.
func TestSessionTimersBounded(t *testing.T) {
	g := newSessionRig(t, 2*minute, 60*minute)
	g.event("j", 0)
	for m := range int64(50) {
		g.event("k", m)
		if m == 30 {
			g.event("j", 30)
		}
		// k's session, j's first and (from :30) second: two timers each.
		want := 4
		if m >= 30 {
			want = 6
		}
		if n := len(g.op.sess.timers); n > want {
			t.Fatalf("after k at :%02d: %d timers, want at most %d", m, n, want)
		}
		if m%7 == 0 {
			// The watermark passes stale timers: they are armed again.
			g.advance(m - 1)
		}
	}
	g.advance(52)
	// Fired, none closed.
	want := "+I j 00 02 1|+I j 30 32 1|+I k 00 51 50"
	if got := strings.Join(g.rows, "|"); got != want {
		t.Fatalf("rows at :52\n%s\nwant\n%s", got, want)
	}
	g.advance(changelog.WatermarkInfinity / minute)
	want += "|+U j 00 02 1|+U j 30 32 1|+U k 00 51 50" // closed: the final rows
	if got := strings.Join(g.rows, "|"); got != want {
		t.Fatalf("rows\n%s\nwant\n%s", got, want)
	}
	if n := len(g.op.sess.timers); n != 0 {
		t.Fatalf("%d timers left", n)
	}
}

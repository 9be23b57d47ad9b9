package operator

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/watermark"
	"github.com/tidemark/tidemark/window"
)

// benchEvents returns n events over nKeys keys, one per ms of event time,
// with 5% moved back by up to 5 s (out of order), amounts as decimals with
// two digits after the point. Each event's key string is its own copy, as a
// decoder produces it: a map lookup must compare the bytes, not only the
// pointer (sharing one string per key would let a Go map skip the compare
// and flatter whichever side stores the same pointer).
func benchEvents(n, nKeys int) (schema *row.Schema, kf, af row.Field, rows []row.Row, ts []int64) {
	schema = row.NewSchema()
	kf, _ = schema.Add("store_id", row.KindString)
	af, _ = schema.Add("amount", row.KindDecimal)
	keys := make([]string, nKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("store-%d", i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rows = make([]row.Row, n)
	ts = make([]int64, n)
	base := int64(1_790_000_000_000)
	for i := range rows {
		schema.Shape(&rows[i])
		rows[i].Set(kf, row.Str(strings.Clone(keys[rng.IntN(nKeys)])))
		d, _ := row.ParseDecimal([]byte(fmt.Sprintf("%d.%02d", rng.IntN(500), rng.IntN(100))))
		rows[i].Set(af, row.Dec(d))
		ts[i] = base + int64(i)
		if rng.IntN(100) < 5 {
			ts[i] -= rng.Int64N(5000)
		}
	}
	return
}

// BenchmarkTumblingSum is the engine path: window operator + watermark
// tracker, a 1-minute tumbling decimal sum over 10,000 keys, 5% out of
// order, out_of_orderness 5 s, update mode.
func BenchmarkTumblingSum(b *testing.B) {
	const n = 1 << 20
	_, kf, af, rows, ts := benchEvents(n, 10_000)
	b.ReportAllocs()
	b.ResetTimer()
	emitted := 0
	for it := 0; it < b.N; {
		b.StopTimer()
		sum, _ := aggregate.New(aggregate.Spec{Name: "revenue", Func: "sum", Arg: af, HasArg: true})
		op, _ := New(Config{Assigner: &window.Fixed{Size: 60_000, Slide: 60_000}, Mode: Update, Key: []row.Field{kf}, Aggs: []aggregate.Column{sum}})
		tr := watermark.New(5000, 0)
		b.StartTimer()
		for i := 0; i < n && it < b.N; i, it = i+1, it+1 {
			op.Process(&rows[i], ts[i], 1, 0)
			if wm := tr.Observe(0, ts[i], 0); wm > op.Watermark() {
				op.AdvanceWatermark(wm, 0)
			}
			if op.Pending() > 0 {
				emitted += len(op.Drain())
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	_ = emitted
}

// BenchmarkTumblingSumBaseline is the practical limit: a hand-written loop
// doing the same sums with Go maps (per-window map of key → decimal sum),
// the same watermark rule and the same emission (a row per window/key
// when the window closes).
func BenchmarkTumblingSumBaseline(b *testing.B) {
	const n = 1 << 20
	_, kf, af, rows, ts := benchEvents(n, 10_000)
	type out struct {
		start int64
		key   string
		sum   row.Decimal
	}
	b.ReportAllocs()
	b.ResetTimer()
	var emitted []out
	for it := 0; it < b.N; {
		windows := map[int64]map[string]row.Decimal{}
		maxTs, wm := int64(-1<<62), int64(-1<<62)
		minStart := int64(1 << 62) // earliest open window: scan only when it closes
		for i := 0; i < n && it < b.N; i, it = i+1, it+1 {
			r := &rows[i]
			start := ts[i] - ts[i]%60_000
			if start+60_000 <= wm {
				continue // too late
			}
			w := windows[start]
			if w == nil {
				w = map[string]row.Decimal{}
				windows[start] = w
				minStart = min(minStart, start)
			}
			k := r.S[kf.Slot]
			w[k] = w[k].Add(r.D[af.Slot])
			if ts[i] > maxTs {
				maxTs = ts[i]
				if nw := maxTs - 5000; nw > wm {
					wm = nw
					if minStart+60_000 <= wm {
						minStart = 1 << 62
						for s, m := range windows {
							if s+60_000 <= wm {
								for k, v := range m {
									emitted = append(emitted, out{s, k, v})
								}
								delete(windows, s)
							} else {
								minStart = min(minStart, s)
							}
						}
						emitted = emitted[:0]
					}
				}
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkStateBytes measures heap bytes per open (window, key) with a
// count and a decimal sum: 100,000 keys in one window.
func BenchmarkStateBytes(b *testing.B) {
	const keys = 100_000
	schema := row.NewSchema()
	kf, _ := schema.Add("store_id", row.KindString)
	af, _ := schema.Add("amount", row.KindDecimal)
	rows := make([]row.Row, keys)
	for i := range rows {
		schema.Shape(&rows[i])
		rows[i].Set(kf, row.Str(fmt.Sprintf("store-%d", i)))
		d, _ := row.ParseDecimal([]byte("19.99"))
		rows[i].Set(af, row.Dec(d))
	}
	var perEntry, estimate float64
	for it := 0; it < b.N; it++ {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		cnt, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
		sum, _ := aggregate.New(aggregate.Spec{Name: "revenue", Func: "sum", Arg: af, HasArg: true})
		op, _ := New(Config{Assigner: &window.Fixed{Size: 60_000, Slide: 60_000}, Mode: Update, Key: []row.Field{kf}, Aggs: []aggregate.Column{cnt, sum}})
		for i := range rows {
			op.Process(&rows[i], 1000, 1, 0)
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		st := op.Stats()
		perEntry = float64(m1.HeapAlloc-m0.HeapAlloc) / float64(st.Entries)
		estimate = float64(st.StateBytes) / float64(st.Entries)
		runtime.KeepAlive(op)
	}
	b.ReportMetric(perEntry, "heap-bytes/window-key")
	b.ReportMetric(estimate, "estimated-bytes/window-key")
	_ = changelog.Insert
}

// BenchmarkSlicedCount is q5's operator path alone: count per int key
// (600,000 keys drawn uniformly, as q5's auctions) over sliding windows of
// 10 s sliding by 2 s (sliced), mode final, 4M events within one slice,
// so every record looks its slice entry up among up to 600,000 keys.
// cpu-ns/event is the process's CPU time (user + system, every thread,
// getrusage) per event: on a shared machine wall time per op is not.
func BenchmarkSlicedCount(b *testing.B) {
	const n, nKeys = 1 << 22, 600_000
	schema := row.NewSchema()
	kf, _ := schema.Add("auction", row.KindInt)
	rng := rand.New(rand.NewPCG(3, 4))
	rows := make([]row.Row, n)
	for i := range rows {
		schema.Shape(&rows[i])
		rows[i].Set(kf, row.Int(rng.Int64N(nKeys)))
	}
	const base = int64(1_790_000_000_000)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuNanos()
	for it := 0; it < b.N; {
		b.StopTimer()
		count, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
		op, _ := New(Config{Assigner: &window.Fixed{Size: 10_000, Slide: 2_000}, Mode: Final, Key: []row.Field{kf}, Aggs: []aggregate.Column{count}})
		b.StartTimer()
		for i := 0; i < n && it < b.N; i, it = i+1, it+1 {
			op.Process(&rows[i], base+int64(i)%2000, 1, 0)
		}
	}
	b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N), "cpu-ns/event")
}

// cpuNanos is the process's CPU time so far (user + system), in ns.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

package slo

import (
	"math"
	"testing"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/spec"
)

// TestEvaluate: nearest-rank p95s, ratios and no-data states, computed by
// hand.
func TestEvaluate(t *testing.T) {
	late, ck := spec.Ratio(0.01), spec.Ratio(0.999)
	e := New(&spec.SLO{EventTimeLagP95: spec.Duration(30 * time.Second), LateRatio: &late, CheckpointSuccess: &ck, SinkCommitP95: spec.Duration(time.Second)})
	for _, s := range e.States() {
		if !s.NoData || !s.Met || !math.IsNaN(s.Value) {
			t.Errorf("before any snapshot %s: %+v, want no data", s.Name, s)
		}
	}
	// 20 snapshots, lag 1 s … 20 s: the nearest-rank p95 is the 19th, 19 s.
	for i := 1; i <= 20; i++ {
		l := &engine.Live{ProcessingTime: 100_000 + int64(i)*1000, Watermark: 100_000}
		if i == 20 {
			l.Stages = []engine.LiveStage{{Counters: engine.Counters{OnTime: 196, LateAccepted: 3, TooLateDropped: 1}}}
			l.Checkpoints = engine.LiveCheckpoints{Enabled: true, Taken: 999, Failures: 1}
			for j := 1; j <= 40; j++ {
				l.SinkCommits = append(l.SinkCommits, engine.SinkCommit{Sink: "s", Duration: time.Duration(j) * 50 * time.Millisecond})
			}
		}
		e.Update(l)
	}
	e.Update(&engine.Live{ProcessingTime: 1, Watermark: changelog.WatermarkInfinity, Stages: []engine.LiveStage{{Counters: engine.Counters{OnTime: 196, LateAccepted: 3, TooLateDropped: 1}}},
		Checkpoints: engine.LiveCheckpoints{Enabled: true, Taken: 999, Failures: 1}}) // the end: no lag sample
	want := []struct {
		name  string
		value float64
		met   bool
	}{
		{"event_time_lag_p95", 19, true},
		{"late_ratio", 4.0 / 200, false},           // 2% > 1%
		{"checkpoint_success", 999.0 / 1000, true}, // 99.9% ≥ 99.9%
		{"sink_commit_p95", 1.9, false},            // the 38th of 40 × 50 ms
	}
	got := e.States()
	if len(got) != len(want) {
		t.Fatalf("%d states, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.name || math.Abs(g.Value-w.value) > 1e-9 || g.Met != w.met || g.NoData {
			t.Errorf("%s: %+v, want value %g met %v", w.name, g, w.value, w.met)
		}
	}
	if m := e.Missed(); len(m) != 2 || m[0].Name != "late_ratio" || m[1].Name != "sink_commit_p95" {
		t.Errorf("missed %+v", m)
	}
	if s := got[1].String(); s != "late_ratio 2% (target ≤ 1%): MISSED" {
		t.Errorf("String() = %q", s)
	}
	if s := got[0].String(); s != "event_time_lag_p95 19s (target ≤ 30s): met" {
		t.Errorf("String() = %q", s)
	}
}

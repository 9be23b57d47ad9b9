package plan

import (
	"testing"
	"time"
)

// TestIdleAdvanceLimit: the limit of idle advance is the watermark that
// closes the newest event's windows at every stage (worked out by hand).
func TestIdleAdvanceLimit(t *testing.T) {
	at := func(hh, mm int) int64 { return time.Date(2026, 9, 1, hh, mm, 0, 0, time.UTC).UnixMilli() }
	for _, tc := range []struct {
		name, yaml string
		newest     int64
		want       int64
	}{
		{"tumbling 10m, lateness 2m: [10:00, 10:10) closes at 10:12",
			"name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nwindow: {type: tumbling, size: 10m}\nallowed_lateness: 2m\naggregates: {n: count()}\n",
			at(10, 5), at(10, 12)},
		{"sliding 90m every 60m: the latest window containing 10:05 is [10:00, 11:30)",
			"name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nwindow: {type: sliding, size: 90m, slide: 60m}\naggregates: {n: count()}\n",
			at(10, 5), at(11, 30)},
		{"session gap 20m, lateness 5m: 10:05 + 20m + 5m",
			"name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nkey: [k]\nwindow: {type: session, gap: 20m}\nallowed_lateness: 5m\naggregates: {n: count()}\n",
			at(10, 5), at(10, 30)},
		{"a stage of hours reading a stage of 10 minutes: [10:00, 11:00) closes at 11:05",
			"name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nstages:\n" +
				"  - {name: a, key: [k], window: {type: tumbling, size: 10m}, allowed_lateness: 2m, aggregates: {n: count()}, emit: {mode: retract}}\n" +
				"  - {name: b, window: {type: tumbling, size: 1h}, allowed_lateness: 5m, aggregates: {m: sum(n)}}\n",
			at(10, 5), at(11, 5)},
		{"upstream rows ending at 11:00 have event time 10:59:59.999 downstream: [10:00, 11:00)",
			"name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nstages:\n" +
				"  - {name: a, key: [k], window: {type: tumbling, size: 10m}, aggregates: {n: count()}, emit: {mode: retract}}\n" +
				"  - {name: b, window: {type: tumbling, size: 1h}, aggregates: {m: sum(n)}}\n",
			at(10, 55), at(11, 0)},
		{"a downstream event time of window_start is bounded by the upstream end: [11:00, 12:00)",
			"name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nstages:\n" +
				"  - {name: a, key: [k], window: {type: tumbling, size: 10m}, aggregates: {n: count()}, emit: {mode: retract}}\n" +
				"  - {name: b, event_time: {field: window_start, format: rfc3339}, window: {type: tumbling, size: 1h}, aggregates: {m: sum(n)}}\n",
			at(10, 55), at(12, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := Compile(parse(t, tc.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			lim := pl.IdleAdvanceLimit()
			if got := lim(tc.newest); got != tc.want {
				t.Fatalf("limit(%s) = %s, want %s", time.UnixMilli(tc.newest).UTC(), time.UnixMilli(got).UTC(), time.UnixMilli(tc.want).UTC())
			}
			if lim(tc.newest+1) < lim(tc.newest) {
				t.Fatal("the limit decreased")
			}
		})
	}
}

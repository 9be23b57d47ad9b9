package nexmark

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// TestDelivery: the stream is every event once, sorted by (arrival, id);
// arrival is the event time plus the delay; a seeded 10% are delayed by
// 1 to 3000 ms; so no event is more than 3000 ms behind the largest
// event time delivered before it, and a watermark 4 s behind that makes
// no event late.
func TestDelivery(t *testing.T) {
	const n = 200_000
	src, s := newSource(t, Config{Events: n, Rate: 20_000})
	recs, eof := read(t, src, s, -1, 1000)
	if !eof || len(recs) != n {
		t.Fatalf("%d events, eof %v", len(recs), eof)
	}
	seen := make([]bool, n)
	maxSeen := int64(-1 << 62)
	delayed, maxBehind := 0, int64(0)
	for i, r := range recs {
		if seen[r.id] {
			t.Fatalf("event %d delivered twice", r.id)
		}
		seen[r.id] = true
		tm := value(s, r, "date_time").I
		if want := DefaultBaseTime + r.id/20; tm != want {
			t.Fatalf("event %d: time %d, want %d", r.id, tm, want)
		}
		d := r.arrival - tm
		if d < 0 || d > DefaultMaxDelayMs {
			t.Fatalf("event %d: arrival %d ms after its time", r.id, d)
		}
		if d > 0 {
			delayed++
		}
		if i > 0 {
			p := recs[i-1]
			if r.arrival < p.arrival || r.arrival == p.arrival && r.id < p.id {
				t.Fatalf("event %d (arrival %d) after event %d (arrival %d)", r.id, r.arrival, p.id, p.arrival)
			}
		}
		maxSeen = max(maxSeen, tm)
		behind := maxSeen - tm
		if behind > DefaultMaxDelayMs {
			t.Fatalf("event %d is %d ms behind the largest event time", r.id, behind)
		}
		maxBehind = max(maxBehind, behind)
		if wm := maxSeen - 4000; tm < wm {
			t.Fatalf("event %d late for a watermark 4 s behind", r.id)
		}
	}
	if f := float64(delayed) / n; f < 0.095 || f > 0.105 {
		t.Errorf("%.4f of events delayed, want 0.1", f)
	}
	if delayed != 19781 {
		t.Errorf("%d events delayed, want 19781 for seed 0", delayed)
	}
	if maxBehind < 2900 {
		t.Errorf("events at most %d ms behind, want close to 3000", maxBehind)
	}
}

// TestNoDelay: with Delay{} events come in id order, arrival = event time.
func TestNoDelay(t *testing.T) {
	src, s := newSource(t, Config{Events: 1000, Delay: noDelay, Rate: 300, BaseTime: 5})
	recs, _ := read(t, src, s, -1, 64)
	for i, r := range recs {
		if r.id != int64(i) || r.arrival != 5+r.id*1000/300 || value(s, r, "date_time").I != r.arrival {
			t.Fatalf("event %d: id %d, arrival %d", i, r.id, r.arrival)
		}
	}
}

// TestSeek: a source that seeks to a position continues exactly as the
// source that returned it, at any cut (inside a delivery ms, with events
// held back), with any batch sizes.
func TestSeek(t *testing.T) {
	cfgs := []Config{
		{Events: 30_000, Rate: 1000, Seed: 1},
		{Events: 30_000, Rate: 7000, Delay: &Delay{Fraction: 0.5, MaxMs: 500}},
		{Events: 30_000, Rate: 1_000_000, Delay: &Delay{Fraction: 1, MaxMs: 2}},
		{Events: 5000, Rate: 3, Delay: &Delay{Fraction: 0.3, MaxMs: 10_000}},
		{Events: 30_000, Delay: noDelay},
		{Rate: 100_000, Delay: &Delay{Fraction: 0.1, MaxMs: 300}}, // unbounded
	}
	for ci, cfg := range cfgs {
		ref, s := newSource(t, cfg, "bid.price", "date_time")
		all, _ := read(t, ref, s, 20_000, 999)
		// positions[k] is the position after k events.
		cont, _ := newSource(t, cfg, "bid.price", "date_time")
		positions := map[int][]byte{0: cont.Position()}
		got := 0
		for _, size := range []int{1, 2, 3, 50, 1, 997, 4096, 7} {
			recs, _ := read(t, cont, s, size, size)
			got += len(recs)
			positions[got] = cont.Position()
		}
		for got < len(all)-3000 {
			recs, _ := read(t, cont, s, 1234, 1234)
			got += len(recs)
			positions[got] = cont.Position()
		}
		for k, pos := range positions {
			src, _ := newSource(t, cfg, "bid.price", "date_time")
			if err := src.Seek(context.Background(), pos); err != nil {
				t.Fatalf("config %d, after %d events: %v", ci, k, err)
			}
			rest, _ := read(t, src, s, 2000, 333)
			for i, r := range rest {
				w := all[k+i]
				if r.id != w.id || r.arrival != w.arrival || !r.vals[0].Equal(w.vals[0]) || !r.vals[1].Equal(w.vals[1]) {
					t.Fatalf("config %d, seek after %d events: event %d is %d@%d, want %d@%d", ci, k, i, r.id, r.arrival, w.id, w.arrival)
				}
			}
			if p, q := src.Position(), positionAfter(t, cfg, k+len(rest)); string(p) != string(q) {
				t.Fatalf("config %d: position after seek and %d events differs", ci, len(rest))
			}
		}
	}
}

// positionAfter returns the position of a fresh source after k events.
func positionAfter(t *testing.T, cfg Config, k int) []byte {
	src, s := newSource(t, cfg, "date_time")
	read(t, src, s, k, 5000)
	return src.Position()
}

// TestSeekDefaults: the default stream (10M events/s, 10% delayed up to
// 3 s) seeks directly: the state comes from 3 s of event time (30M
// hashes), not a replay.
func TestSeekDefaults(t *testing.T) {
	if testing.Short() || raceOn {
		t.Skip("generates 40M events")
	}
	ref, s := newSource(t, Config{}, bidFields...)
	skip(t, ref, 40_000_000) // past the first 3 s
	pos := ref.Position()
	want, _ := read(t, ref, s, 5000, 1000)
	src, _ := newSource(t, Config{}, bidFields...)
	start := time.Now()
	if err := src.Seek(context.Background(), pos); err != nil {
		t.Fatal(err)
	}
	t.Logf("seek after %d events: %v", 40_000_000, time.Since(start))
	got, _ := read(t, src, s, 5000, 1000)
	for i := range want {
		if got[i].id != want[i].id || got[i].arrival != want[i].arrival {
			t.Fatalf("event %d after seek: %d, want %d", i, got[i].id, want[i].id)
		}
	}
}

func TestSeekErrors(t *testing.T) {
	ctx := context.Background()
	cfg := Config{Events: 10_000, Rate: 1000}
	ref, s := newSource(t, cfg, "date_time")
	read(t, ref, s, 5000, 1000)
	pos := ref.Position()

	src, _ := newSource(t, cfg, "date_time")
	read(t, src, s, 1, 1)
	if err := src.Seek(ctx, pos); err == nil || !strings.Contains(err.Error(), "after 1 events") {
		t.Errorf("seek after delivering: %v", err)
	}
	for _, other := range []Config{{Events: 10_000, Rate: 1000, Seed: 2}, {Events: 10_000, Rate: 2000}, {Events: 10_000, Rate: 1000, Delay: &Delay{Fraction: 0.5, MaxMs: 3000}}} {
		src, _ = newSource(t, other, "date_time")
		if err := src.Seek(ctx, pos); err == nil || !strings.Contains(err.Error(), "changed since") {
			t.Errorf("seek with %+v: %v", other, err)
		}
	}
	src, _ = newSource(t, Config{Events: 100, Rate: 1000}, "date_time")
	if err := src.Seek(ctx, pos); err == nil || !strings.Contains(err.Error(), "outside this stream") {
		t.Errorf("seek past the end: %v", err)
	}
	src, _ = newSource(t, cfg, "date_time")
	if err := src.Seek(ctx, []byte{9, 1, 2}); err == nil || !strings.Contains(err.Error(), "section version 9") {
		t.Errorf("bad position: %v", err)
	}
	if err := src.Seek(ctx, pos[:1]); err == nil {
		t.Error("truncated position accepted")
	}
	// The position of a source that delivered nothing seeks to the start.
	fresh, _ := newSource(t, cfg, "date_time")
	src, _ = newSource(t, cfg, "date_time")
	if err := src.Seek(ctx, fresh.Position()); err != nil {
		t.Fatal(err)
	}
	if recs, _ := read(t, src, s, 1, 1); recs[0].id != 0 {
		t.Errorf("first event after seeking to the start: %d", recs[0].id)
	}
}

// TestEventJSON: the JSON of each event decodes (dotted names) to the
// values Next filled, for every type.
func TestEventJSON(t *testing.T) {
	src, s := newSource(t, Config{Events: 3000, Seed: 11})
	dec := format.NewJSON(format.Fields{Schema: s})
	r := s.NewRow()
	var b source.Batch
	var a source.Arena
	var buf []byte
	types := map[int64]bool{}
	for {
		b.Reset()
		st, err := src.Next(context.Background(), &b, 500)
		for i := range b.Rows {
			buf = src.EventJSON(buf[:0], &b.Meta[i])
			if !json.Valid(buf) {
				t.Fatalf("event %d: invalid JSON %s", b.Meta[i].Pos.Offset, buf)
			}
			s.Shape(r)
			if derr := dec.Decode(buf, r, &a); derr != nil {
				t.Fatalf("event %d: %v in %s", b.Meta[i].Pos.Offset, derr, buf)
			}
			for _, f := range s.Fields {
				if g, w := r.Get(f), b.Rows[i].Get(f); !g.Equal(w) {
					t.Fatalf("event %d: %s decodes to %v, Next gave %v\n%s", b.Meta[i].Pos.Offset, f.Name, g, w, buf)
				}
			}
			types[b.Rows[i].I[0]] = true
		}
		a.Reset()
		if st == source.End {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(types) != 3 {
		t.Errorf("event types seen: %v", types)
	}
	// EventJSON works from the position alone (a Meta restored from a
	// checkpoint), on a source whose schema has no strings.
	small, _ := newSource(t, Config{Events: 3000, Seed: 11}, "date_time")
	m := &source.Meta{Pos: b.Meta[0].Pos}
	want := string(src.EventJSON(nil, m))
	if got := string(small.EventJSON(nil, m)); got != want {
		t.Errorf("EventJSON from another source:\n%s\nwant\n%s", got, want)
	}
	if !strings.HasPrefix(want, `{"event_type":`) {
		t.Errorf("EventJSON %s", want)
	}
}

// TestEventJSONShape pins the layout of one bid.
func TestEventJSONShape(t *testing.T) {
	src, _ := newSource(t, Config{Rate: 10_000}, "date_time")
	got := string(src.EventJSON(nil, &source.Meta{Pos: source.Meta{}.Pos}))
	if !strings.HasPrefix(got, `{"event_type":0,"person":{"id":1000,"name":"Peter Jones","email_address":"nhd@xcat.com","credit_card":"7241 7320 9143 4888","city":"Portland","state":"WY","date_time":"2015-07-15T00:00:00Z","extra":"WN_HS_bnpkkiwhwana_L^`+"`"+`KZjdgsid`) ||
		!strings.HasSuffix(got, `VVQ\\[["},"date_time":"2015-07-15T00:00:00Z"}`) {
		t.Errorf("EventJSON of event 0:\n%s", got)
	}
}

func TestConfigErrors(t *testing.T) {
	s, _ := NewSchema("bid.price")
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{Events: -1}, "source.events"},
		{Config{Events: MaxEvents + 1}, "source.events"},
		{Config{Rate: -5}, "source.rate"},
		{Config{Rate: MaxRate + 1}, "source.rate"},
		{Config{Delay: &Delay{Fraction: 1.5, MaxMs: 10}}, "source.delay.fraction"},
		{Config{Delay: &Delay{Fraction: -0.1, MaxMs: 10}}, "source.delay.fraction"},
		{Config{Delay: &Delay{Fraction: 0.1}}, "source.delay.max"},
		{Config{Rate: 1, Delay: &Delay{Fraction: 0.1, MaxMs: MaxDelayMs + 1}}, "source.delay.max"},
		{Config{Rate: MaxRate, Delay: &Delay{Fraction: 0.1, MaxMs: 10_000}}, "source.delay.max"},
		{Config{BaseTime: 1 << 62}, "source.base_time"},
	}
	for _, b := range bad {
		b.cfg.Fields = fieldsOf(s)
		if _, err := New(b.cfg); err == nil || !strings.HasPrefix(err.Error(), b.want+":") {
			t.Errorf("%+v: %v, want an error naming %s", b.cfg, err, b.want)
		}
	}
	if _, err := New(Config{}); err == nil {
		t.Error("no schema accepted")
	}
	wrong := row.NewSchema()
	wrong.Add("bid.price", row.KindString)
	if _, err := New(Config{Fields: fieldsOf(wrong)}); err == nil || !strings.Contains(err.Error(), "source.schema: field bid.price is string; nexmark gives int") {
		t.Errorf("wrong kind: %v", err)
	}
	unknown := row.NewSchema()
	unknown.Add("bid.prize", row.KindInt)
	if _, err := New(Config{Fields: fieldsOf(unknown)}); err == nil || !strings.Contains(err.Error(), `"bid.prize" is not a nexmark field`) {
		t.Errorf("unknown field: %v", err)
	}
	if _, err := NewSchema("bid.price", "bid.price"); err == nil {
		t.Error("repeated field accepted")
	}
	// A derived field (filled by the caller) may have any name.
	d := row.NewSchema()
	d.Add("bid.price", row.KindInt)
	f, _ := d.Add("mine", row.KindString)
	if _, err := New(Config{Fields: format.Fields{Schema: d, Derived: []int{f.Index}}}); err != nil {
		t.Errorf("derived field: %v", err)
	}
}

// TestFields: Fields lists each name once, with the kinds of the schema
// NewSchema builds.
func TestFields(t *testing.T) {
	fs := Fields()
	if len(fs) != 27 || fs[0].Name != "event_type" || fs[len(fs)-1].Name != "date_time" {
		t.Fatalf("Fields: %d, first %s, last %s", len(fs), fs[0].Name, fs[len(fs)-1].Name)
	}
	s, err := NewSchema()
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range fs {
		if s.Fields[i].Name != f.Name || s.Fields[i].Kind != f.Kind || f.Doc == "" {
			t.Errorf("field %d: %+v vs %+v", i, f, s.Fields[i])
		}
	}
}

// TestEOFAndClose: a bounded stream ends with source.End (with its last
// events), and stays ended; Next fails after Close.
func TestEOFAndClose(t *testing.T) {
	src, _ := newSource(t, Config{Events: 10, Delay: noDelay}, "date_time")
	var b source.Batch
	if st, err := src.Next(context.Background(), &b, 10); err != nil || st != source.End || b.Len() != 10 {
		t.Fatalf("Next: %v with %d events", err, b.Len())
	}
	b.Reset()
	if st, err := src.Next(context.Background(), &b, 10); err != nil || st != source.End || b.Len() != 0 {
		t.Fatalf("Next after the end: %v with %d events", err, b.Len())
	}
	src.Close()
	if _, err := src.Next(context.Background(), &b, 10); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	if got := src.Partitions(); len(got) != 1 || got[0] != "0" {
		t.Errorf("Partitions %v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src, _ = newSource(t, Config{Events: 10}, "date_time")
	if _, err := src.Next(ctx, &b, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("Next with a cancelled context: %v", err)
	}
}

// TestNoAllocations: Next allocates nothing once its buffers have grown.
func TestNoAllocations(t *testing.T) {
	for _, names := range [][]string{bidFields, nil} {
		src, _ := newSource(t, Config{Rate: 100_000}, names...)
		var b source.Batch
		ctx := context.Background()
		for range 400 { // 4 s of event time: the delay wheel is full
			b.Reset()
			src.Next(ctx, &b, 1024)
		}
		allocs := testing.AllocsPerRun(100, func() {
			b.Reset()
			src.Next(ctx, &b, 1024)
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per batch", names, allocs)
		}
	}
}

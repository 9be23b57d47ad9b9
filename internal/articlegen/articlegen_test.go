package articlegen

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func generate(t *testing.T, cfg Config) ([]byte, Stats) {
	t.Helper()
	var b bytes.Buffer
	st, err := Write(&b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), st
}

func TestDeterministic(t *testing.T) {
	a, sa := generate(t, Config{Events: 20_000, Seed: 3})
	b, sb := generate(t, Config{Events: 20_000, Seed: 3})
	c, _ := generate(t, Config{Events: 20_000, Seed: 4})
	if !bytes.Equal(a, b) || sa != sb {
		t.Error("one config, two streams")
	}
	if bytes.Equal(a, c) {
		t.Error("seeds 3 and 4 give the same stream")
	}
	if n := int64(bytes.Count(a, []byte("\n"))); n != 20_000 || sa.Lines != n {
		t.Errorf("%d lines, stats %d, want 20,000", n, sa.Lines)
	}
}

// TestFirstLines pins the first lines of seed 1, as the article writes
// them (member order, +09:00, whole seconds, amounts by currency).
func TestFirstLines(t *testing.T) {
	out, _ := generate(t, Config{Events: 3, Seed: 1})
	want := `{"event_id":"evt-20260624-0000000","event_type":"ORDER_PAID","event_version":1,"order_id":"ord-0000000","store_id":"store-0396","amount":181200,"currency":"KRW","paid_at":"2026-06-23T23:59:58+09:00","produced_at":"2026-06-24T00:00:00+09:00"}
{"event_id":"evt-20260624-0000001","event_type":"ORDER_PAID","event_version":1,"order_id":"ord-0000001","store_id":"store-0327","amount":141.09,"currency":"USD","paid_at":"2026-06-23T23:59:33+09:00","produced_at":"2026-06-23T23:59:35+09:00"}
{"event_id":"evt-20260624-0000002","event_type":"ORDER_PAID","event_version":1,"order_id":"ord-0000002","store_id":"store-0723","amount":147400,"currency":"KRW","paid_at":"2026-06-23T23:59:31+09:00","produced_at":"2026-06-23T23:59:34+09:00"}
`
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

type line struct {
	EventID      string      `json:"event_id"`
	EventType    string      `json:"event_type"`
	EventVersion json.Number `json:"event_version"`
	OrderID      string      `json:"order_id"`
	StoreID      string      `json:"store_id"`
	Amount       json.Number `json:"amount"`
	Currency     string      `json:"currency"`
	PaidAt       string      `json:"paid_at"`
	ProducedAt   string      `json:"produced_at"`
}

// TestStream reads a stream with encoding/json and checks what the
// package doc promises: fields and formats, copies of an earlier first
// delivery (redeliveries equal but for produced_at, conflicting ones with
// another amount), fates, and the shares of each kind.
func TestStream(t *testing.T) {
	cfg := Config{Events: 200_000, Seed: 11}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	firsts := map[string]line{}
	maxPaid := int64(-1 << 63)
	var buf []byte
	var e *Event
	types := map[string]int{}
	keys := map[string]map[string]bool{}
	shuffled, later := 0, 0
	for {
		if buf, e = g.Next(buf[:0]); e == nil {
			break
		}
		var l line
		d := json.NewDecoder(bytes.NewReader(buf))
		d.DisallowUnknownFields()
		if err := d.Decode(&l); err != nil {
			t.Fatalf("%q: %v", buf, err)
		}
		paid, err1 := time.Parse(time.RFC3339, l.PaidAt)
		produced, err2 := time.Parse(time.RFC3339, l.ProducedAt)
		if err1 != nil || err2 != nil || !strings.HasSuffix(l.PaidAt, "+09:00") || !strings.HasSuffix(l.ProducedAt, "+09:00") {
			t.Fatalf("%q: times %v %v", buf, err1, err2)
		}
		if d := produced.Sub(paid); d < 0 || d > 63*time.Second {
			t.Fatalf("%q: produced_at − paid_at = %v", buf, d)
		}
		if paid.UnixMilli() != e.PaidAt || paid.Nanosecond() != 0 {
			t.Fatalf("%q: paid_at %v, event %d", buf, paid, e.PaidAt)
		}
		if bytes.HasPrefix(buf, []byte(`{"event_id"`)) == e.Shuffled || e.Shuffled != bytes.Contains(buf, []byte(", ")) {
			t.Fatalf("%q: shuffled %v", buf, e.Shuffled)
		}
		switch e.Delivery {
		case First:
			if _, ok := firsts[l.EventID]; ok {
				t.Fatalf("%s delivered first twice", l.EventID)
			}
			firsts[l.EventID] = l
			types[l.EventType]++
			if keys[l.StoreID] == nil {
				keys[l.StoreID] = map[string]bool{}
			}
			keys[l.StoreID][l.Currency] = true
			ms := paid.UnixMilli()
			switch e.Fate {
			case OnTime:
				if maxPaid != int64(-1<<63) && ms < maxPaid-maxReorder.Milliseconds() {
					t.Fatalf("%s on time, %v before the largest paid_at", l.EventID, time.Duration(maxPaid-ms)*time.Millisecond)
				}
			case Late:
				if d := maxPaid - ms; d < lateMin || d > lateMax+999 {
					t.Fatalf("%s late, %dms behind", l.EventID, d)
				}
			case TooLate:
				if d := maxPaid - ms; d < tooLateMin || d > tooLateMax+999 {
					t.Fatalf("%s too late, %dms behind", l.EventID, d)
				}
			}
			maxPaid = max(maxPaid, ms)
		case Redelivery, Conflicting:
			f, ok := firsts[l.EventID]
			if !ok {
				t.Fatalf("%s: a copy before its first delivery", l.EventID)
			}
			if f.ProducedAt != l.ProducedAt {
				later++
			}
			if e.Shuffled {
				shuffled++
			}
			f.ProducedAt, l.ProducedAt = "", ""
			sameAmount := f.Amount == l.Amount
			f.Amount, l.Amount = "", ""
			if f != l || sameAmount != (e.Delivery == Redelivery) {
				t.Fatalf("%s: copy %+v of %+v (delivery %d)", l.EventID, l, f, e.Delivery)
			}
		}
	}
	st := g.Stats()
	if st.Lines != cfg.Events || st.First+st.Redeliveries+st.Conflicting != st.Lines || int64(len(firsts)) != st.First {
		t.Fatalf("stats %+v, %d first deliveries read", st, len(firsts))
	}
	share := func(what string, n, of int64, lo, hi float64) {
		if f := float64(n) / float64(of); f < lo || f > hi {
			t.Errorf("%s: %d of %d (%.4f), want %.4f to %.4f", what, n, of, f, lo, hi)
		}
	}
	share("redeliveries", st.Redeliveries, st.First, 0.018, 0.022)
	share("conflicting", st.Conflicting, st.First, 0.0003, 0.0007)
	share("late", st.Late, st.First, 0.0015, 0.0025)
	share("too late", st.TooLate, st.First, 0.0007, 0.0013)
	share("paid", int64(types[OrderPaid]), st.First, 0.92, 0.94)
	share("refunded", int64(types[OrderRefunded]), st.First, 0.035, 0.045)
	share("shuffled copies", int64(shuffled), st.Redeliveries, 0.2, 0.3)
	share("copies with a later produced_at", int64(later), st.Redeliveries, 0.45, 0.55)
	if len(keys) != DefaultStores {
		t.Errorf("%d stores, want %d", len(keys), DefaultStores)
	}
	two := 0
	for _, c := range keys {
		if len(c) > 1 {
			two++
		}
	}
	if two < 600 || two > 700 {
		t.Errorf("%d stores with two currencies, want about 700 (the KRW stores)", two)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "events 0: must be positive"},
		{Config{Events: 1, Stores: 20000}, "stores 20000: want 1 to 10,000"},
		{Config{Events: 1, Rate: -1}, "rate -1"},
		{Config{Events: 1, RedeliverFraction: 0.9, ConflictFraction: 0.2}, "more than 1"},
		{Config{Events: 1, Reorder: 2 * time.Minute}, "reorder 2m0s: at most 1m45s"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestAppendDecimal(t *testing.T) {
	for _, c := range []struct {
		units int64
		scale int
		want  string
	}{{181200, 0, "181200"}, {14109, 2, "141.09"}, {5, 2, "0.05"}, {12345, 3, "12.345"}, {-1005, 3, "-1.005"}} {
		if got := string(AppendDecimal(nil, c.units, c.scale)); got != c.want {
			t.Errorf("%d scale %d: %s, want %s", c.units, c.scale, got, c.want)
		}
	}
	if id := EventID("20260624", 42); id != "evt-20260624-0000042" {
		t.Errorf("EventID: %s", id)
	}
}

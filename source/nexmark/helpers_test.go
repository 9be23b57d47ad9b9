package nexmark

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// rec is one delivered event, copied out of its batch.
type rec struct {
	id, arrival int64
	vals        []row.Value // by schema field
}

func newSource(t testing.TB, cfg Config, names ...string) (*Source, *row.Schema) {
	t.Helper()
	s, err := NewSchema(names...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Fields = format.Fields{Schema: s}
	src, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return src, s
}

// read returns up to n events (all of a bounded stream when n < 0),
// asking for batches of size batch, and whether the stream ended.
func read(t testing.TB, src *Source, s *row.Schema, n, batch int) ([]rec, bool) {
	t.Helper()
	var out []rec
	var b source.Batch
	for n < 0 || len(out) < n {
		b.Reset()
		max := batch
		if n >= 0 {
			max = min(batch, n-len(out))
		}
		st, err := src.Next(context.Background(), &b, max)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Rows {
			m := &b.Meta[i]
			if m.Pos.Source != SourceName || m.Partition != 0 || m.Raw != nil || m.Err != nil {
				t.Fatalf("meta %+v", m)
			}
			r := rec{id: m.Pos.Offset, arrival: m.Arrival}
			for _, f := range s.Fields {
				v := b.Rows[i].Get(f)
				if v.Kind == row.KindString {
					v.S = string([]byte(v.S)) // out of the arena
				}
				r.vals = append(r.vals, v)
			}
			out = append(out, r)
		}
		if st == source.End {
			return out, true
		}
	}
	return out, false
}

// value returns field name of r.
func value(s *row.Schema, r rec, name string) row.Value {
	f, ok := s.Lookup(name)
	if !ok {
		panic(name)
	}
	return r.vals[f.Index]
}

// event generates event id alone into a row of every field.
func event(src *Source, id int64) (*row.Row, *row.Schema) {
	all, _ := NewSchema()
	p, _ := newPlan(all, nil)
	g := &gen{p: p, clk: src.g.clk, seedOff: src.g.seedOff, urls: newURLTable(src.urlKey), chans: channelNames(), arena: new(source.Arena)}
	r := all.NewRow()
	g.fill(r, id, g.clk.at(id))
	return r, all
}

func fieldsOf(s *row.Schema) format.Fields { return format.Fields{Schema: s} }

// skip reads n events without keeping them.
func skip(t testing.TB, src *Source, n int) {
	t.Helper()
	var b source.Batch
	for n > 0 {
		b.Reset()
		if _, err := src.Next(context.Background(), &b, min(n, 8192)); err != nil {
			t.Fatal(err)
		}
		n -= b.Len()
	}
}

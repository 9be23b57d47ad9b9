package nexmark

import (
	"strconv"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// EventJSON appends the event of m as a JSON object, rebuilt from its id
// (m.Pos.Offset): event_type, the object of its type with every field
// ("person", "auction" or "bid"), and date_time, times in RFC 3339 UTC:
//
//	{"event_type":2,"bid":{"auction":1007,…,"date_time":"2015-07-15T00:00:00.001Z","extra":"…"},"date_time":"2015-07-15T00:00:00.001Z"}
//
// Decoding it with dotted field names gives the values Next filled. It
// costs a full generation of the event (about a microsecond for an
// auction's long strings); the hot path never builds JSON.
//
// EventJSON is safe for concurrent use, also with Next: it reads only
// m.Pos.Offset and the source's configuration, and generates into
// scratch memory of its own (pooled, so it allocates nothing in steady
// state).
func (s *Source) EventJSON(dst []byte, m *source.Meta) []byte {
	s.fullOnce.Do(func() {
		all, _ := NewSchema()
		p, _ := newPlan(all, nil)
		s.full = gen{p: p, clk: s.g.clk, seedOff: s.g.seedOff, urls: s.g.urls, chans: channelNames()}
		if s.full.urls == nil {
			s.full.urls = newURLTable(s.urlKey)
		}
		s.fullAll = all
	})
	sc, _ := s.scratch.Get().(*jsonScratch)
	if sc == nil {
		sc = &jsonScratch{r: s.fullAll.NewRow()}
	}
	sc.g = s.full // the immutable configuration; v and scratch are overwritten
	sc.g.arena = &sc.a
	id := m.Pos.Offset
	s.fullAll.Shape(sc.r)
	sc.a.Reset()
	sc.g.fill(sc.r, id, s.g.clk.at(id))
	dst = appendEventJSON(dst, sc.g.p, sc.r, kindOfID(id))
	sc.g.arena = nil
	s.scratch.Put(sc)
	return dst
}

// jsonScratch is the memory of one EventJSON call.
type jsonScratch struct {
	g gen
	a source.Arena
	r *row.Row
}

// appendEventJSON writes the fields of kind k of a full row.
func appendEventJSON(dst []byte, p *plan, r *row.Row, k int) []byte {
	dst = append(dst, `{"event_type":`...)
	dst = strconv.AppendInt(dst, int64(k), 10)
	var lo, hi attr
	var obj string
	switch k {
	case EventPerson:
		lo, hi, obj = aPersonID, aPersonExtra, "person"
	case EventAuction:
		lo, hi, obj = aAuctionID, aAuctionExtra, "auction"
	default:
		lo, hi, obj = aBidAuction, aBidExtra, "bid"
	}
	dst = append(dst, `,"`...)
	dst = append(dst, obj...)
	dst = append(dst, `":{`...)
	for a := lo; a <= hi; a++ {
		if a > lo {
			dst = append(dst, ',')
		}
		name := defs[a].Name[len(obj)+1:]
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, `":`...)
		dst = appendValue(dst, p, r, a)
	}
	dst = append(dst, `},"date_time":`...)
	dst = appendValue(dst, p, r, aDateTime)
	return append(dst, '}')
}

func appendValue(dst []byte, p *plan, r *row.Row, a attr) []byte {
	t := &p.t[a]
	if r.IsNull(t.index) {
		return append(dst, "null"...)
	}
	switch defs[a].Kind {
	case row.KindString:
		return changelog.AppendJSONString(dst, r.S[t.slot])
	case row.KindTime:
		dst = append(dst, '"')
		dst = row.AppendTime(dst, r.I[t.slot], nil)
		return append(dst, '"')
	}
	return strconv.AppendInt(dst, r.I[t.slot], 10)
}

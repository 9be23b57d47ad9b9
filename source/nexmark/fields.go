package nexmark

import (
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/nexschema"
	"github.com/tidemark/tidemark/row"
)

// FieldDef describes one field of the Nexmark record (package nexschema,
// the record's schema as data).
type FieldDef = nexschema.Field

// attr numbers the fields; it indexes defs and a plan's targets.
type attr int

const (
	aEventType attr = iota
	aPersonID
	aPersonName
	aPersonEmail
	aPersonCard
	aPersonCity
	aPersonState
	aPersonDateTime
	aPersonExtra
	aAuctionID
	aAuctionItem
	aAuctionDesc
	aAuctionInitial
	aAuctionReserve
	aAuctionDateTime
	aAuctionExpires
	aAuctionSeller
	aAuctionCategory
	aAuctionExtra
	aBidAuction
	aBidBidder
	aBidPrice
	aBidChannel
	aBidURL
	aBidDateTime
	aBidExtra
	aDateTime
	nAttrs
)

// Event types, the values of event_type (as in Flink's nexmark table).
const (
	// EventPerson is event_type of a new person (a seller or bidder).
	EventPerson = nexschema.EventPerson
	// EventAuction is event_type of a new auction.
	EventAuction = nexschema.EventAuction
	// EventBid is event_type of a bid.
	EventBid = nexschema.EventBid
)

// defs is nexschema's record by attr: the attr constants follow its
// order, which the array's length and TestFieldOrder hold them to.
var defs = func() (d [nAttrs]FieldDef) {
	copy(d[:], nexschema.Fields())
	return d
}()

// The attrs and nexschema's fields are as many (a compile error
// otherwise).
var _ = [1]struct{}{}[nAttrs-attr(nexschema.NumFields)]
var _ = [1]struct{}{}[attr(nexschema.NumFields)-nAttrs]

var byName = func() map[string]attr {
	m := make(map[string]attr, nAttrs)
	for a, d := range defs {
		m[d.Name] = attr(a)
	}
	return m
}()

// Fields lists every field a Nexmark source can fill, with its kind, in
// record order: event_type, person.*, auction.*, bid.*, date_time. The
// caller may change the slice.
func Fields() []FieldDef { return nexschema.Fields() }

// Names returns the names of Fields.
func Names() []string { return nexschema.Names() }

// NewSchema returns a schema of the named Nexmark fields with their
// kinds, in the order given; every field (in Fields order) when names is
// empty. It fails on a name that is not a Nexmark field or is repeated.
func NewSchema(names ...string) (*row.Schema, error) {
	if len(names) == 0 {
		names = Names()
	}
	s := row.NewSchema()
	for _, n := range names {
		a, ok := byName[n]
		if !ok {
			return nil, unknownField(n)
		}
		if _, err := s.Add(n, defs[a].Kind); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func unknownField(name string) error {
	return fmt.Errorf("source.schema: %q is not a nexmark field (fields: %s)", name, strings.Join(Names(), ", "))
}

// target is where a plan writes one attribute.
type target struct {
	on    bool
	dec   bool // an int attribute into a decimal field
	index int  // Field.Index (null bit)
	slot  int  // Field.Slot
}

// Generation steps: the draws of each kind, in Beam's order. A plan
// draws up to the last step whose value it needs and stops there.
const (
	psName, psEmail, psCard, psCity, psState, psExtra                              = 1, 2, 3, 4, 5, 6
	asSeller, asCategory, asInitial, asExpires, asItem, asDesc, asReserve, asExtra = 1, 2, 3, 4, 5, 6, 7, 8
	bsAuction, bsBidder, bsPrice, bsExtra, bsChannel                               = 1, 2, 3, 4, 5
)

// step is the generation step that produces each attribute (0: no draw).
var step = [nAttrs]int{
	aPersonName: psName, aPersonEmail: psEmail, aPersonCard: psCard, aPersonCity: psCity,
	aPersonState: psState, aPersonExtra: psExtra,
	aAuctionSeller: asSeller, aAuctionCategory: asCategory, aAuctionInitial: asInitial,
	aAuctionExpires: asExpires, aAuctionItem: asItem, aAuctionDesc: asDesc,
	aAuctionReserve: asReserve, aAuctionExtra: asExtra,
	aBidAuction: bsAuction, aBidBidder: bsBidder, aBidPrice: bsPrice, aBidExtra: bsExtra,
	aBidChannel: bsChannel, aBidURL: bsChannel,
}

// kindOf is the event type an attribute belongs to (-1: every type).
func kindOf(a attr) int {
	switch {
	case a >= aPersonID && a <= aPersonExtra:
		return EventPerson
	case a >= aAuctionID && a <= aAuctionExtra:
		return EventAuction
	case a >= aBidAuction && a <= aBidExtra:
		return EventBid
	}
	return -1
}

// plan maps the attributes to the fields of a schema.
type plan struct {
	t     [nAttrs]target
	need  [3]int      // last generation step needed, per event type
	write [3][]output // the fields each event type fills
}

// output is one field an event type fills.
type output struct {
	a     attr
	kind  row.Kind // the field's kind (decimal for an int attribute in a decimal field)
	index int
	slot  int
}

// newPlan resolves the fields of s (except those listed in skip) to
// attributes. An int attribute may go into a decimal field; any other
// kind must match.
func newPlan(s *row.Schema, skip []int) (*plan, error) {
	p := &plan{}
	skipped := map[int]bool{}
	for _, i := range skip {
		skipped[i] = true
	}
	for _, f := range s.Fields {
		if skipped[f.Index] {
			continue
		}
		a, ok := byName[f.Name]
		if !ok {
			return nil, unknownField(f.Name)
		}
		want := defs[a].Kind
		dec := want == row.KindInt && f.Kind == row.KindDecimal
		if f.Kind != want && !dec {
			return nil, fmt.Errorf("source.schema: field %s is %s; nexmark gives %s", f.Name, f.Kind, want)
		}
		p.t[a] = target{on: true, dec: dec, index: f.Index, slot: f.Slot}
		o := output{a: a, kind: f.Kind, index: f.Index, slot: f.Slot}
		if k := kindOf(a); k >= 0 {
			p.need[k] = max(p.need[k], step[a])
			p.write[k] = append(p.write[k], o)
		} else {
			for k := range p.write {
				p.write[k] = append(p.write[k], o)
			}
		}
	}
	return p, nil
}

func (p *plan) on(a attr) bool { return p.t[a].on }

// values holds the attributes of one event, by attr; a plan copies the
// ones its schema has into the row.
type values struct {
	i [nAttrs]int64
	s [nAttrs]string
}

// fill copies the fields of event type k from v into r.
func (p *plan) fill(r *row.Row, k int, v *values) {
	for _, o := range p.write[k] {
		switch o.kind {
		case row.KindString:
			r.S[o.slot] = v.s[o.a]
		case row.KindDecimal:
			r.D[o.slot] = row.DecimalFromInt(v.i[o.a])
		default:
			r.I[o.slot] = v.i[o.a]
		}
		r.SetValid(o.index)
	}
}

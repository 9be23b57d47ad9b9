// Package nexschema is the schema of the Nexmark benchmark's record as
// data: the fields the generator of source/nexmark fills (their names,
// kinds and units, in record order) and the values of event_type
// (docs/nexmark.md).
//
// In the data flow it sits at the bottom beside row, which is all it
// imports: the plan (package plan) and the SQL planner read it to type and
// check the fields a pipeline over the Nexmark source uses, without
// importing the connector, and source/nexmark generates records of this
// shape.
package nexschema

import "github.com/tidemark/tidemark/row"

// Field describes one field of the Nexmark record.
type Field struct {
	// Name is the field's name in a pipeline ("bid.price").
	Name string
	// Kind is the field's type: KindInt for ids, prices (cents) and
	// categories, KindTime for times (ms since the epoch), KindString for
	// text.
	Kind row.Kind
	// Doc says what the field holds, with its unit.
	Doc string
}

// Event types, the values of event_type (as in Flink's nexmark table).
const (
	// EventPerson is event_type of a new person (a seller or bidder).
	EventPerson = 0
	// EventAuction is event_type of a new auction.
	EventAuction = 1
	// EventBid is event_type of a bid.
	EventBid = 2
)

// NumFields is the number of fields of the record (len(Fields())).
const NumFields = 27

// fields is the record in its order; source/nexmark numbers its fields
// by their position here.
var fields = [NumFields]Field{
	{"event_type", row.KindInt, "0 person, 1 auction, 2 bid"},
	{"person.id", row.KindInt, "person id, from 1000"},
	{"person.name", row.KindString, `"First Last" from 11 first and 9 last names`},
	{"person.email_address", row.KindString, "random letters, \"@\", letters, \".com\""},
	{"person.credit_card", row.KindString, "four groups of four digits"},
	{"person.city", row.KindString, "one of 10 US cities"},
	{"person.state", row.KindString, "one of 6 US states"},
	{"person.date_time", row.KindTime, "event time, ms since the epoch"},
	{"person.extra", row.KindString, "padding to an average record of 200 bytes"},
	{"auction.id", row.KindInt, "auction id, from 1000"},
	{"auction.item_name", row.KindString, "random text, up to 19 characters"},
	{"auction.description", row.KindString, "random text, up to 99 characters"},
	{"auction.initial_bid", row.KindInt, "starting price in cents"},
	{"auction.reserve", row.KindInt, "reserve price in cents (above initial_bid)"},
	{"auction.date_time", row.KindTime, "event time, ms since the epoch"},
	{"auction.expires", row.KindTime, "end of the auction, ms since the epoch"},
	{"auction.seller", row.KindInt, "person id of the seller"},
	{"auction.category", row.KindInt, "category id, 10 to 14"},
	{"auction.extra", row.KindString, "padding to an average record of 500 bytes"},
	{"bid.auction", row.KindInt, "auction id bid on"},
	{"bid.bidder", row.KindInt, "person id of the bidder"},
	{"bid.price", row.KindInt, "price in cents"},
	{"bid.channel", row.KindString, `"Google", "Facebook", "Baidu", "Apple" or "channel-N"`},
	{"bid.url", row.KindString, "URL of the bid's channel"},
	{"bid.date_time", row.KindTime, "event time, ms since the epoch"},
	{"bid.extra", row.KindString, "padding to an average record of 100 bytes"},
	{"date_time", row.KindTime, "event time of any kind, ms since the epoch (Flink's dateTime column)"},
}

// Fields lists every field of the record, with its kind, in record
// order: event_type, person.*, auction.*, bid.*, date_time. The caller
// may change the slice.
func Fields() []Field { return append([]Field(nil), fields[:]...) }

// Names returns the names of Fields, in the same order.
func Names() []string {
	out := make([]string, NumFields)
	for i, f := range fields {
		out[i] = f.Name
	}
	return out
}

package nexmark

import "testing"

// TestFieldOrder holds the attr constants, which the generator and the
// JSON rendering index defs by, to nexschema's order: each attr names the
// field written beside it here.
func TestFieldOrder(t *testing.T) {
	want := map[attr]string{
		aEventType: "event_type", aPersonID: "person.id", aPersonName: "person.name",
		aPersonEmail: "person.email_address", aPersonCard: "person.credit_card",
		aPersonCity: "person.city", aPersonState: "person.state",
		aPersonDateTime: "person.date_time", aPersonExtra: "person.extra",
		aAuctionID: "auction.id", aAuctionItem: "auction.item_name",
		aAuctionDesc: "auction.description", aAuctionInitial: "auction.initial_bid",
		aAuctionReserve: "auction.reserve", aAuctionDateTime: "auction.date_time",
		aAuctionExpires: "auction.expires", aAuctionSeller: "auction.seller",
		aAuctionCategory: "auction.category", aAuctionExtra: "auction.extra",
		aBidAuction: "bid.auction", aBidBidder: "bid.bidder", aBidPrice: "bid.price",
		aBidChannel: "bid.channel", aBidURL: "bid.url", aBidDateTime: "bid.date_time",
		aBidExtra: "bid.extra", aDateTime: "date_time",
	}
	if len(want) != int(nAttrs) {
		t.Fatalf("%d attrs named here, %d declared", len(want), nAttrs)
	}
	for a, n := range want {
		if defs[a].Name != n {
			t.Errorf("attr %d: defs has %q, want %q", a, defs[a].Name, n)
		}
	}
}

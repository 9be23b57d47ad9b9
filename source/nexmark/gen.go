package nexmark

import (
	"encoding/binary"
	"math"
	"strconv"
	"sync"
	"unsafe"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// The constants of Beam's generator (sdks/java/testing/nexmark,
// GeneratorConfig, NexmarkConfiguration and the model generators); the
// sources are listed in docs/nexmark.md.
const (
	firstPersonID   = 1000 // GeneratorConfig.FIRST_PERSON_ID
	firstAuctionID  = 1000 // GeneratorConfig.FIRST_AUCTION_ID
	firstCategoryID = 10   // GeneratorConfig.FIRST_CATEGORY_ID

	personProportion  = 1  // GeneratorConfig.PERSON_PROPORTION
	auctionProportion = 3  // GeneratorConfig.AUCTION_PROPORTION
	bidProportion     = 46 // GeneratorConfig.BID_PROPORTION
	proportions       = personProportion + auctionProportion + bidProportion

	numCategories = 5  // AuctionGenerator.NUM_CATEGORIES
	auctionIDLead = 10 // AuctionGenerator.AUCTION_ID_LEAD
	personIDLead  = 10 // PersonGenerator.PERSON_ID_LEAD

	// 1 over these is the share of people / auctions that can be hot.
	hotSellerBatch  = 100 // AuctionGenerator.HOT_SELLER_RATIO
	hotAuctionBatch = 100 // BidGenerator.HOT_AUCTION_RATIO
	hotBidderBatch  = 100 // BidGenerator.HOT_BIDDER_RATIO

	// NexmarkConfiguration defaults: P(hot) = 1 - 1/ratio.
	hotAuctionRatio = 2 // hotAuctionRatio: half the bids go to the hot auction
	hotSellersRatio = 4 // hotSellersRatio: 3/4 of auctions are by the hot seller
	hotBiddersRatio = 4 // hotBiddersRatio: 3/4 of bids are by the hot bidder

	numInFlightAuctions = 100  // numInFlightAuctions
	numActivePeople     = 1000 // numActivePeople

	avgPersonBytes  = 200 // avgPersonByteSize
	avgAuctionBytes = 500 // avgAuctionByteSize
	avgBidBytes     = 100 // avgBidByteSize

	minStringLength = 3 // StringsGenerator.MIN_STRING_LENGTH

	// Channels (Flink's nexmark BidGenerator; Beam's bids have none).
	hotChannelsRatio = 2 // HOT_CHANNELS_RATIO: half the bids on a hot channel
	numChannels      = 10000
	cardLength       = 19 // "dddd dddd dddd dddd"
)

var (
	usStates   = [...]string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities   = [...]string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	firstNames = [...]string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = [...]string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}

	hotChannels = [...]string{"Google", "Facebook", "Baidu", "Apple"}

	// personNames holds every "First Last", by first*len(lastNames)+last.
	personNames = func() []string {
		out := make([]string, 0, len(firstNames)*len(lastNames))
		for _, f := range firstNames {
			for _, l := range lastNames {
				out = append(out, f+" "+l)
			}
		}
		return out
	}()

	// channelNames holds "channel-0" … "channel-9999".
	channelNames = sync.OnceValue(func() []string {
		out := make([]string, numChannels)
		for i := range out {
			out[i] = "channel-" + strconv.Itoa(i)
		}
		return out
	})
)

// clock maps event numbers to event times: event n happens at base +
// n·1000/rate ms (whole ms, rounded down).
type clock struct {
	base int64 // ms since the epoch of event 0
	rate int64 // events per second of event time
}

// at returns the event time of event n, in ms since the epoch.
func (c clock) at(n int64) int64 { return c.base + n*1000/c.rate }

// first returns the first event number whose time is at least t.
func (c clock) first(t int64) int64 {
	y := t - c.base
	if y <= 0 {
		return 0
	}
	return (y*c.rate + 999) / 1000
}

// gen builds the content of events: the fields its plan asks for, from
// the event's id alone (each event seeds its own random generator).
type gen struct {
	p       *plan
	clk     clock
	seedOff int64         // added to the id to seed an event's generator (0: Beam's seeds)
	urls    *urlTable     // channel URLs; nil unless bid.url is filled
	chans   []string      // channel names; nil unless bid.channel is filled
	arena   *source.Arena // where strings go: the arena of the batch being filled
	v       values        // the event being generated
	scratch [128]byte
}

// random returns the generator of event id: new Random(id) in Beam.
func (g *gen) random(id int64) jrand { return seedJ(id + g.seedOff) }

// kindOfID returns the event type of id: id % 50 is 0 for a person, 1 to
// 3 for an auction, 4 to 49 for a bid.
func kindOfID(id int64) int {
	switch rem := id % proportions; {
	case rem < personProportion:
		return EventPerson
	case rem < personProportion+auctionProportion:
		return EventAuction
	}
	return EventBid
}

// fill sets the fields of r (shaped, all null) for event id at event
// time t (ms). Fields of the other event types stay null.
func (g *gen) fill(r *row.Row, id, t int64) {
	v := &g.v
	v.i[aDateTime] = t
	k := kindOfID(id)
	v.i[aEventType] = int64(k)
	switch k {
	case EventPerson:
		g.person(id, t)
	case EventAuction:
		g.auction(id, t)
	default:
		g.bid(id, t)
	}
	g.p.fill(r, k, v)
}

// lastBase0PersonID is PersonGenerator.lastBase0PersonId: the newest
// person id (without FIRST_PERSON_ID) at event id.
func lastBase0PersonID(id int64) int64 {
	epoch, off := id/proportions, id%proportions
	if off >= personProportion {
		off = personProportion - 1
	}
	return epoch*personProportion + off
}

// lastBase0AuctionID is AuctionGenerator.lastBase0AuctionId.
func lastBase0AuctionID(id int64) int64 {
	epoch, off := id/proportions, id%proportions
	switch {
	case off < personProportion:
		epoch--
		off = auctionProportion - 1
	case off >= personProportion+auctionProportion:
		off = auctionProportion - 1
	default:
		off -= personProportion
	}
	return epoch*auctionProportion + off
}

// nextBase0PersonID is PersonGenerator.nextBase0PersonId: one of the
// active people, or a few ids ahead of the newest.
func nextBase0PersonID(id int64, rnd *jrand) int64 {
	numPeople := lastBase0PersonID(id) + 1
	active := min(numPeople, numActivePeople)
	return numPeople - active + rnd.boundedLong(active+personIDLead)
}

// nextBase0AuctionID is AuctionGenerator.nextBase0AuctionId: one of the
// auctions likely in flight, or a few ids ahead of the newest.
func nextBase0AuctionID(id int64, rnd *jrand) int64 {
	maxA := lastBase0AuctionID(id)
	minA := max(maxA-numInFlightAuctions, 0)
	return minA + rnd.boundedLong(maxA-minA+1+auctionIDLead)
}

// nextPrice is PriceGenerator.nextPrice: round(10^(U·6) × 100) cents,
// from 1.00 to 1,000,000.00.
func nextPrice(rnd *jrand) int64 {
	return priceOf(rnd.nextDouble())
}

// appendString is StringsGenerator.nextString(random, maxLength, special)
// before its trim: 3 to maxLength-1 characters, each special with
// probability 1/13, otherwise a lowercase letter.
func appendString(b []byte, rnd *jrand, maxLength int32, special byte) []byte {
	n := minStringLength + rnd.nextInt(maxLength-minStringLength)
	for ; n > 0; n-- {
		// rnd.nextInt(13) and rnd.nextInt(26), written out so that the
		// constant bounds compile to multiplications.
		u := rnd.next(31)
		v := u % 13
		if u-v+12 < 0 {
			v = rnd.nextIntRetry(13)
		}
		if v == 0 {
			b = append(b, special)
			continue
		}
		u = rnd.next(31)
		v = u % 26
		if u-v+25 < 0 {
			v = rnd.nextIntRetry(26)
		}
		b = append(b, byte('a'+v))
	}
	return b
}

// trim is Java's String.trim for these strings (only spaces occur).
func trim(b []byte) []byte {
	for len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}

// nextString is StringsGenerator.nextString(random, maxLength): the text
// in g.scratch, valid until the next use of the scratch buffer.
func (g *gen) nextString(rnd *jrand, maxLength int32) []byte {
	return trim(appendString(g.scratch[:0], rnd, maxLength, ' '))
}

// extra is StringsGenerator.nextExtra: a string of exactly-random
// characters making currentSize up to avg bytes on average (±20%). When
// want is false it only advances rnd past the draws and returns "".
func (g *gen) extra(rnd *jrand, currentSize, avg int, want bool) string {
	if currentSize > avg {
		return ""
	}
	desired := avg - currentSize
	delta := int32(math.Round(float64(desired) * 0.2))
	size := int32(desired) - delta
	if delta != 0 {
		size += rnd.nextInt(2 * delta)
	}
	if !want {
		rnd.skip(int(size+5) / 6)
		return ""
	}
	return g.exactString(rnd, int(size))
}

// exactString is StringsGenerator.nextExactString: each nextInt() gives
// six characters 'a' + v%26, v /= 26 — with Java's signed remainder, so
// characters from 'H' to 'z' occur ('H'..'`' from negative values, as in
// Beam).
func (g *gen) exactString(rnd *jrand, n int) string {
	if n == 0 {
		return ""
	}
	b := g.arena.Alloc(n)
	i := 0
	for ; i+6 <= n; i += 6 {
		sixChars(b[i:i+6], rnd.nextInt32())
	}
	if i < n {
		var c [6]byte
		sixChars(c[:], rnd.nextInt32())
		copy(b[i:], c[:n-i])
	}
	return unsafe.String(&b[0], n)
}

// charPairs[neg][p] holds the two characters of the base-26 digit pair p
// (low digit in the low byte), added to 'a' (neg 0) or subtracted from it
// (neg 1).
var charPairs = func() (t [2][26 * 26]uint16) {
	for p := range 26 * 26 {
		t[0][p] = uint16('a'+p%26) | uint16('a'+p/26)<<8
		t[1][p] = uint16('a'-p%26) | uint16('a'-p/26)<<8
	}
	return t
}()

// sixChars writes into b[:6] the six characters Java derives from v: the
// base-26 digits of |v|, low first, signed like v. v's sign only picks
// the table (no branch).
func sixChars(b []byte, v int32) {
	s := v >> 31             // 0 or -1
	u := uint32((v ^ s) - s) // |v|; 2³¹ for MinInt32
	t := &charPairs[s&1]
	q := u / 676
	_ = b[5]
	binary.LittleEndian.PutUint16(b, t[u-q*676])
	binary.LittleEndian.PutUint16(b[2:], t[q%676])
	binary.LittleEndian.PutUint16(b[4:], t[q/676%676])
}

// person is PersonGenerator.nextPerson.
func (g *gen) person(id, t int64) {
	p, v := g.p, &g.v
	v.i[aPersonID] = lastBase0PersonID(id) + firstPersonID
	v.i[aPersonDateTime] = t
	need := p.need[EventPerson]
	if need < psName {
		return
	}
	rnd := g.random(id)
	first := rnd.nextInt(int32(len(firstNames)))
	last := rnd.nextInt(int32(len(lastNames)))
	name := personNames[int(first)*len(lastNames)+int(last)]
	v.s[aPersonName] = name
	if need < psEmail {
		return
	}
	b := appendString(g.scratch[:0], &rnd, 7, ' ')
	b = append(trim(b), '@')
	n := len(b)
	b = append(b[:n], trim(appendString(b[n:], &rnd, 5, ' '))...)
	b = append(b, ".com"...)
	emailLen := len(b)
	if p.on(aPersonEmail) {
		v.s[aPersonEmail] = g.arena.String(b)
	}
	if need < psCard {
		return
	}
	var card [4]int32
	for i := range card {
		card[i] = rnd.nextInt(10000)
	}
	if p.on(aPersonCard) {
		c := g.arena.Alloc(cardLength)
		for i, v := range card {
			j := i * 5
			c[j], c[j+1], c[j+2], c[j+3] = byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10)
			if i < 3 {
				c[j+4] = ' '
			}
		}
		v.s[aPersonCard] = unsafe.String(&c[0], cardLength)
	}
	if need < psCity {
		return
	}
	city := usCities[rnd.nextInt(int32(len(usCities)))]
	v.s[aPersonCity] = city
	if need < psState {
		return
	}
	state := usStates[rnd.nextInt(int32(len(usStates)))]
	v.s[aPersonState] = state
	if need < psExtra {
		return
	}
	size := 8 + len(name) + emailLen + cardLength + len(city) + len(state)
	v.s[aPersonExtra] = g.extra(&rnd, size, avgPersonBytes, true)
}

// auction is AuctionGenerator.nextAuction.
func (g *gen) auction(id, t int64) {
	p, v := g.p, &g.v
	v.i[aAuctionID] = lastBase0AuctionID(id) + firstAuctionID
	v.i[aAuctionDateTime] = t
	need := p.need[EventAuction]
	if need < asSeller {
		return
	}
	rnd := g.random(id)
	var seller int64
	if rnd.nextInt(hotSellersRatio) > 0 {
		seller = lastBase0PersonID(id) / hotSellerBatch * hotSellerBatch
	} else {
		seller = nextBase0PersonID(id, &rnd)
	}
	v.i[aAuctionSeller] = seller + firstPersonID
	if need < asCategory {
		return
	}
	v.i[aAuctionCategory] = firstCategoryID + int64(rnd.nextInt(numCategories))
	if need < asInitial {
		return
	}
	initial := nextPrice(&rnd)
	v.i[aAuctionInitial] = initial
	if need < asExpires {
		return
	}
	// AuctionGenerator.nextAuctionLengthMs: on average the time until
	// numInFlightAuctions more auctions have been created. The event
	// number is the id (Beam's firstEventId and firstEventNumber are 0).
	ahead := int64(numInFlightAuctions) * proportions / auctionProportion
	horizon := g.clk.at(id+ahead) - t
	v.i[aAuctionExpires] = t + 1 + rnd.boundedLong(max(horizon*2, 1))
	if need < asItem {
		return
	}
	item := g.nextString(&rnd, 20)
	itemLen := len(item)
	if p.on(aAuctionItem) {
		v.s[aAuctionItem] = g.arena.String(item)
	}
	if need < asDesc {
		return
	}
	desc := g.nextString(&rnd, 100)
	descLen := len(desc)
	if p.on(aAuctionDesc) {
		v.s[aAuctionDesc] = g.arena.String(desc)
	}
	if need < asReserve {
		return
	}
	v.i[aAuctionReserve] = initial + nextPrice(&rnd)
	if need < asExtra {
		return
	}
	size := 8 + itemLen + descLen + 8 + 8 + 8 + 8 + 8
	v.s[aAuctionExtra] = g.extra(&rnd, size, avgAuctionBytes, true)
}

// bid is BidGenerator.nextBid (Beam's draws, then Flink's channel).
func (g *gen) bid(id, t int64) {
	p, v := g.p, &g.v
	v.i[aBidDateTime] = t
	need := p.need[EventBid]
	if need < bsAuction {
		return
	}
	rnd := g.random(id)
	var auction int64
	if rnd.nextInt(hotAuctionRatio) > 0 {
		auction = lastBase0AuctionID(id) / hotAuctionBatch * hotAuctionBatch
	} else {
		auction = nextBase0AuctionID(id, &rnd)
	}
	v.i[aBidAuction] = auction + firstAuctionID
	if need < bsBidder {
		return
	}
	var bidder int64
	if rnd.nextInt(hotBiddersRatio) > 0 {
		// The second person of the batch, so that hot bidders and hot
		// sellers differ.
		bidder = lastBase0PersonID(id)/hotBidderBatch*hotBidderBatch + 1
	} else {
		bidder = nextBase0PersonID(id, &rnd)
	}
	v.i[aBidBidder] = bidder + firstPersonID
	if need < bsPrice {
		return
	}
	v.i[aBidPrice] = nextPrice(&rnd)
	if need < bsExtra {
		return
	}
	v.s[aBidExtra] = g.extra(&rnd, 8+8+8+8, avgBidBytes, p.on(aBidExtra))
	if need < bsChannel {
		return
	}
	// Flink draws the channel before the extra; drawing it after keeps
	// every one of Beam's fields equal to Beam's.
	var ch, url string
	if rnd.nextInt(hotChannelsRatio) > 0 {
		i := rnd.nextInt(int32(len(hotChannels)))
		ch = hotChannels[i]
		if g.urls != nil {
			url = g.urls.hot[i]
		}
	} else {
		i := rnd.nextInt(numChannels)
		if g.chans != nil {
			ch = g.chans[i]
		}
		if g.urls != nil {
			url = g.urls.channel(int(i))
		}
	}
	v.s[aBidChannel] = ch
	v.s[aBidURL] = url
}

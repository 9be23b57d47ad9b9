package nexmark

import (
	"fmt"
	"math"

	"github.com/tidemark/tidemark/source"
)

// order decides the delivery order: each event is delivered at its event
// time, except a seeded fraction delayed by 1 to maxMs ms (Beam's
// UnboundedEventSource holds such events back, probDelayedEvent and
// occasionalDelaySec). The stream is every event sorted by (delivery
// time, id). Delayed events wait in a wheel of two levels: the delivery
// ms of the cursor's block (wheelBlock ms) have a bucket each (fine),
// later blocks a slot each (stage), whose ids are spread over fine when
// the cursor enters the block. Buckets and slots list ids in generation
// order, which is id order. Two levels because a delayed event's append
// to one of 3,000 buckets (a bucket per ms of a 3 s delay, 5 KB apart)
// missed the caches and the TLB almost every time — about 250 ns per
// delayed event, a quarter of the router's CPU at two tasks — where 64
// buckets and 48 slots stay cached.
type order struct {
	n   int64 // events in the stream: ids 0 … n-1
	clk clock
	delays

	gen  int64 // next id to generate
	tGen int64 // its event time, ms: clk.at(gen), kept without dividing
	rGen int64 // gen·1000 mod rate
	dq   int64 // 1000 / rate: whole ms from one event to the next
	dr   int64 // 1000 % rate

	cur   int64      // delivery ms of the bucket being drained
	blk   int64      // its block: ⌊cur / wheelBlock⌋
	ci    int        // its bucket in fine: cur − blk·wheelBlock
	pos   int        // entries of that bucket already delivered
	held  int64      // events waiting in the wheel (fine and stage)
	fine  [][]uint32 // wheelBlock buckets, the delivery ms of block blk; low 32 bits of ids (nil: no delays)
	stage [][]uint32 // maxMs/wheelBlock+2 slots: the ids due in block b > blk, in slot b mod len(stage)
}

// wheelBlock is the number of delivery ms of a block of the wheel: near
// √3000, so that the buckets of a block and the slots of the blocks a
// 3 s delay (DefaultMaxDelayMs) reaches are fewest together (64 + 48).
const wheelBlock = 64

// delays decides which events are delivered late, and by how much: a
// function of the event id alone, fixed when the source is built (so
// decoders read it on any goroutine).
type delays struct {
	thresh uint64 // an event is delayed when its hash's top 32 bits are below
	maxMs  int64  // the longest delay, ms
	key    uint64 // seeds the delay hash
}

func newOrder(n int64, clk clock, fraction float64, maxMs int64, key uint64) *order {
	o := &order{n: n, clk: clk, delays: delays{maxMs: maxMs, key: key}, dq: 1000 / clk.rate, dr: 1000 % clk.rate}
	o.setGen(0)
	if fraction > 0 && maxMs > 0 {
		o.thresh = uint64(math.Round(fraction * (1 << 32)))
		// A bucket receives rate·fraction/1000 events on average (each ms
		// of event time spreads its delayed events over maxMs buckets), a
		// slot those of its block generated before the cursor enters it
		// (at most maxMs of event time). Buckets and slots get room for 6
		// standard deviations more, in one allocation each, so that steady
		// state allocates nothing; one that still overflows grows on its
		// own.
		lambda := float64(clk.rate) * fraction / 1000
		room := func(mean float64) int { return int(math.Ceil(mean+6*math.Sqrt(mean))) + 2 }
		o.fine = slots(wheelBlock, room(lambda))
		o.stage = slots(int(maxMs/wheelBlock+2), room(lambda*float64(min(maxMs, wheelBlock))))
	}
	return o
}

// slots returns n empty slices with room for per entries each, in one
// allocation.
func slots(n, per int) [][]uint32 {
	backing := make([]uint32, n*per)
	s := make([][]uint32, n)
	for i := range s {
		s[i] = backing[i*per : i*per : (i+1)*per]
	}
	return s
}

// mix64 is SplitMix64's finalizer.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// delay returns the delivery delay of event id in ms (0 for most events).
func (o *delays) delay(id int64) int64 {
	if o.thresh == 0 {
		return 0
	}
	h := mix64(uint64(id)*0x9E3779B97F4A7C15 + o.key)
	if h>>32 >= o.thresh {
		return 0
	}
	return 1 + int64((h&0xFFFFFFFF)*uint64(o.maxMs)>>32)
}

// id rebuilds an id from its low 32 bits: ids in the wheel are less than
// 2³¹ behind o.gen (New checks rate × max delay).
func (o *order) id(low uint32) int64 { return o.gen - int64(uint32(o.gen)-low) }

// setGen makes id the next to generate.
func (o *order) setGen(id int64) {
	o.gen, o.tGen, o.rGen = id, o.clk.at(id), id*1000%o.clk.rate
}

// setCursor makes ms the delivery ms of the bucket being drained, the
// wheel empty but for what it holds for ms and later.
func (o *order) setCursor(ms int64) {
	o.cur, o.pos = ms, 0
	if o.fine != nil {
		if b := floorDiv(ms, wheelBlock); b != o.blk {
			o.enter(b)
		} else {
			o.ci = int(ms - b*wheelBlock)
		}
	}
}

// floorDiv is ⌊a / b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// slot returns the stage slot of block b.
func (o *order) slot(b int64) int {
	n := int64(len(o.stage))
	return int((b%n + n) % n)
}

// hold puts delayed event id, due at delivery ms at in [o.cur,
// o.cur+maxMs], in the wheel: in its bucket when at is in the cursor's
// block, else in its block's slot.
func (o *order) hold(id, at int64) {
	if b := floorDiv(at, wheelBlock); b != o.blk {
		s := o.slot(b)
		o.stage[s] = append(o.stage[s], uint32(id))
	} else {
		i := int(at - b*wheelBlock)
		o.fine[i] = append(o.fine[i], uint32(id))
	}
	o.held++
}

// advance empties the drained bucket and moves the cursor to the next
// ms, entering the next block after the last ms of one.
func (o *order) advance() {
	o.fine[o.ci] = o.fine[o.ci][:0]
	o.pos = 0
	o.cur++
	if o.ci++; o.ci == wheelBlock {
		o.enter(o.blk + 1)
	}
}

// enter makes b, the block of o.cur, the cursor's block: its slot's ids,
// in id order, go to the buckets of their delivery ms (fine is empty:
// the buckets of the block before were drained, or the wheel held
// nothing), and the slot is emptied for block b+len(stage).
func (o *order) enter(b int64) {
	o.blk = b
	o.ci = int(o.cur - b*wheelBlock)
	s := o.slot(b)
	for _, low := range o.stage[s] {
		id := o.id(low)
		i := int(o.clk.at(id) + o.delay(id) - b*wheelBlock)
		o.fine[i] = append(o.fine[i], low)
	}
	o.stage[s] = o.stage[s][:0]
}

// next returns the next event in delivery order: its id, event time and
// delivery time (ms). ok is false at the end of a bounded stream.
func (o *order) next() (id, t, at int64, ok bool) {
	for {
		tn := int64(math.MaxInt64) // event time of the next id to generate
		if o.gen < o.n {
			tn = o.tGen
		}
		// Held events due at or before tn go first: every one of them has
		// a smaller id than o.gen.
		for o.held > 0 && o.cur <= tn {
			if b := o.fine[o.ci]; o.pos < len(b) {
				id := o.id(b[o.pos])
				o.pos++
				o.held--
				return id, o.cur - o.delay(id), o.cur, true
			}
			o.advance()
		}
		if o.gen >= o.n {
			return 0, 0, 0, false
		}
		if o.held == 0 && o.cur < tn {
			if o.fine != nil {
				o.fine[o.ci] = o.fine[o.ci][:0]
			}
			o.setCursor(tn)
		}
		id := o.gen
		o.gen++
		o.tGen += o.dq
		if o.rGen += o.dr; o.rGen >= o.clk.rate {
			o.rGen -= o.clk.rate
			o.tGen++
		}
		if d := o.delay(id); d > 0 {
			// o.cur ≥ tn here, and the event is not yet due, so tn+d lies in
			// [o.cur, o.cur+maxMs]: inside the wheel, at or after the cursor.
			o.hold(id, tn+d)
			continue
		}
		return id, tn, tn, true
	}
}

// onTime marks a Span of on-time events (Span.At): every event of
// [Lo, Hi) that is not delayed, in id order, each delivered at its event
// time. Any other At is the delivery time of the one delayed event Lo
// (Hi = Lo+1). Event times are above -2⁶⁰ ms (New), so no delivery time
// is onTime.
const onTime = math.MinInt64

// claim advances the order by up to max events, exactly as max calls of
// next would, and appends to spans what those calls would have returned,
// in order: each delayed event drained from the wheel as a span of its
// own (At its delivery time), and the on-time events as ranges of ids
// (At onTime; the ids of a range that it does not deliver are the
// delayed ones, which went into the wheel). It returns the spans, the
// number of events they hold (fewer than max only at the end of a
// bounded stream) and the id of the last one (-1 when none).
//
// It costs one delay hash per id generated and a few operations per
// delayed event and per ms of event time, not a record's meta per event:
// between two held deliveries, the ids of one ms of event time are
// delivered one after another (a delayed event of that ms is due in a
// later ms, and every event due in it or before was delivered before its
// first id: next's order), so the run of them is one span.
func (o *order) claim(max int, spans []source.Span) ([]source.Span, int, int64) {
	k := 0
	last := int64(-1)
	ontime := false // spans ends with an on-time span that the next on-time id may extend
	for k < max {
		tn := int64(math.MaxInt64) // event time of the next id to generate
		if o.gen < o.n {
			tn = o.tGen
		}
		for k < max && o.held > 0 && o.cur <= tn {
			if b := o.fine[o.ci]; o.pos < len(b) {
				id := o.id(b[o.pos])
				o.pos++
				o.held--
				spans = append(spans, source.Span{Lo: id, Hi: id + 1, At: o.cur})
				ontime = false
				k++
				last = id
				continue
			}
			o.advance()
		}
		if k == max || o.gen >= o.n {
			break
		}
		if o.held == 0 && o.cur < tn {
			if o.fine != nil {
				o.fine[o.ci] = o.fine[o.ci][:0]
			}
			o.setCursor(tn)
		}
		// The ids of ms tn, up to the max-th event: no held event falls due
		// among them (the wheel's due buckets are drained, and a delayed id
		// of ms tn is due at tn+1 or later, inside the wheel: o.cur is tn or
		// tn+1 here).
		end := min(o.clk.first(tn+1), o.n)
		id, first, lastOn := o.gen, int64(-1), int64(-1)
		if o.thresh == 0 {
			take := min(end-id, int64(max-k))
			first, lastOn = id, id+take-1
			k += int(take)
			id += take
		} else {
			for ; id < end && k < max; id++ {
				if d := o.delay(id); d > 0 {
					o.hold(id, tn+d)
					continue
				}
				if first < 0 {
					first = id
				}
				lastOn = id
				k++
			}
		}
		o.setGen(id)
		if first < 0 {
			continue // every id of the run was delayed
		}
		if ontime {
			spans[len(spans)-1].Hi = lastOn + 1
		} else {
			spans = append(spans, source.Span{Lo: first, Hi: lastOn + 1, At: onTime})
			ontime = true
		}
		last = lastOn
	}
	return spans, k, last
}

// delivered reports whether event m comes at or before event last in
// delivery order, last being due at lastAt.
func (o *order) delivered(m, last, lastAt int64) bool {
	at := o.clk.at(m) + o.delay(m)
	return at < lastAt || at == lastAt && m <= last
}

// seek puts a fresh order right after event last was delivered and
// returns how many events that makes. The state is rebuilt from the
// events that can still be pending: those less than maxMs older than
// last's delivery. It costs two hashes per event in that window, not a
// replay of the stream.
func (o *order) seek(last int64) (int64, error) {
	if last < 0 || last >= o.n {
		return 0, fmt.Errorf("nexmark source: the checkpoint's last event %d is outside this stream of %d events", last, o.n)
	}
	lastAt := o.clk.at(last) + o.delay(last)
	lo := o.clk.first(lastAt - o.maxMs) // older events are all delivered
	hi := min(o.clk.first(lastAt+1), o.n)
	// The largest delivered id: every later one is pending.
	maxID := lo - 1
	for m := hi - 1; m >= lo; m-- {
		if o.delivered(m, last, lastAt) {
			maxID = m
			break
		}
	}
	o.setGen(maxID + 1)
	o.held = 0
	for _, w := range [][][]uint32{o.fine, o.stage} {
		for i := range w {
			w[i] = w[i][:0]
		}
	}
	o.setCursor(lastAt)
	if o.fine != nil {
		for m := lo; m < o.gen; m++ {
			d := o.delay(m)
			if d == 0 || o.delivered(m, last, lastAt) {
				continue
			}
			o.hold(m, o.clk.at(m)+d)
		}
	}
	return o.gen - o.held, nil
}

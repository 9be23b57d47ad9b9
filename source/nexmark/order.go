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
// time, id). Delayed events wait in a wheel of one bucket per delivery
// ms; a bucket lists ids in generation order, which is id order.
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
	ci    int        // its index: cur mod len(wheel)
	pos   int        // entries of that bucket already delivered
	held  int64      // events waiting in the wheel
	wheel [][]uint32 // maxMs+1 buckets by delivery ms; low 32 bits of ids
}

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
		// of event time spreads its delayed events over maxMs buckets).
		// Buckets get room for 6 standard deviations more, in one
		// allocation, so that steady state allocates nothing; a bucket
		// that still overflows grows on its own.
		lambda := float64(clk.rate) * fraction / 1000
		per := int(math.Ceil(lambda+6*math.Sqrt(lambda))) + 2
		backing := make([]uint32, int(maxMs+1)*per)
		o.wheel = make([][]uint32, maxMs+1)
		for i := range o.wheel {
			o.wheel[i] = backing[i*per : i*per : (i+1)*per]
		}
	}
	return o
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

// setCursor makes ms the delivery ms of the bucket being drained.
func (o *order) setCursor(ms int64) {
	o.cur, o.pos = ms, 0
	if o.wheel != nil {
		o.ci = int(ms % int64(len(o.wheel)))
	}
}

// bucket returns the index of the bucket for delivery ms at, which lies
// in [o.cur, o.cur+maxMs].
func (o *order) bucket(at int64) int {
	i := o.ci + int(at-o.cur)
	if i >= len(o.wheel) {
		i -= len(o.wheel)
	}
	return i
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
			if b := o.wheel[o.ci]; o.pos < len(b) {
				id := o.id(b[o.pos])
				o.pos++
				o.held--
				return id, o.cur - o.delay(id), o.cur, true
			}
			o.wheel[o.ci] = o.wheel[o.ci][:0]
			o.pos = 0
			o.cur++
			if o.ci++; o.ci == len(o.wheel) {
				o.ci = 0
			}
		}
		if o.gen >= o.n {
			return 0, 0, 0, false
		}
		if o.held == 0 && o.cur < tn {
			if o.wheel != nil {
				o.wheel[o.ci] = o.wheel[o.ci][:0]
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
			w := o.bucket(tn + d)
			o.wheel[w] = append(o.wheel[w], uint32(id))
			o.held++
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
			if b := o.wheel[o.ci]; o.pos < len(b) {
				id := o.id(b[o.pos])
				o.pos++
				o.held--
				spans = append(spans, source.Span{Lo: id, Hi: id + 1, At: o.cur})
				ontime = false
				k++
				last = id
				continue
			}
			o.wheel[o.ci] = o.wheel[o.ci][:0]
			o.pos = 0
			o.cur++
			if o.ci++; o.ci == len(o.wheel) {
				o.ci = 0
			}
		}
		if k == max || o.gen >= o.n {
			break
		}
		if o.held == 0 && o.cur < tn {
			if o.wheel != nil {
				o.wheel[o.ci] = o.wheel[o.ci][:0]
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
					w := o.bucket(tn + d)
					o.wheel[w] = append(o.wheel[w], uint32(id))
					o.held++
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
	o.setCursor(lastAt)
	o.held = 0
	if o.wheel != nil {
		for i := range o.wheel {
			o.wheel[i] = o.wheel[i][:0]
		}
		for m := lo; m < o.gen; m++ {
			d := o.delay(m)
			if d == 0 || o.delivered(m, last, lastAt) {
				continue
			}
			w := o.bucket(o.clk.at(m) + d)
			o.wheel[w] = append(o.wheel[w], uint32(m))
			o.held++
		}
	}
	return o.gen - o.held, nil
}

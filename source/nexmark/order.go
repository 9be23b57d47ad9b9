package nexmark

import (
	"fmt"
	"math"
)

// order decides the delivery order: each event is delivered at its event
// time, except a seeded fraction delayed by 1 to maxMs ms (Beam's
// UnboundedEventSource holds such events back, probDelayedEvent and
// occasionalDelaySec). The stream is every event sorted by (delivery
// time, id). Delayed events wait in a wheel of one bucket per delivery
// ms; a bucket lists ids in generation order, which is id order.
type order struct {
	n      int64 // events in the stream: ids 0 … n-1
	clk    clock
	thresh uint64 // an event is delayed when its hash's top 32 bits are below
	maxMs  int64  // the longest delay, ms
	key    uint64 // seeds the delay hash

	gen   int64      // next id to generate
	cur   int64      // delivery ms of the bucket being drained
	pos   int        // entries of that bucket already delivered
	held  int64      // events waiting in the wheel
	wheel [][]uint32 // maxMs+1 buckets by delivery ms; low 32 bits of ids
}

func newOrder(n int64, clk clock, fraction float64, maxMs int64, key uint64) *order {
	o := &order{n: n, clk: clk, maxMs: maxMs, key: key}
	if fraction > 0 && maxMs > 0 {
		o.thresh = uint64(math.Round(fraction * (1 << 32)))
		o.wheel = make([][]uint32, maxMs+1)
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
func (o *order) delay(id int64) int64 {
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

// next returns the next event in delivery order: its id, event time and
// delivery time (ms). ok is false at the end of a bounded stream.
func (o *order) next() (id, t, at int64, ok bool) {
	for {
		tn := int64(math.MaxInt64) // event time of the next id to generate
		if o.gen < o.n {
			tn = o.clk.at(o.gen)
		}
		// Held events due at or before tn go first: every one of them has
		// a smaller id than o.gen.
		for o.held > 0 && o.cur <= tn {
			w := int(o.cur % int64(len(o.wheel)))
			if b := o.wheel[w]; o.pos < len(b) {
				id := o.id(b[o.pos])
				o.pos++
				o.held--
				return id, o.clk.at(id), o.cur, true
			}
			o.wheel[w] = o.wheel[w][:0]
			o.pos = 0
			o.cur++
		}
		if o.gen >= o.n {
			return 0, 0, 0, false
		}
		if o.held == 0 && o.cur < tn {
			if o.wheel != nil {
				w := int(o.cur % int64(len(o.wheel)))
				o.wheel[w] = o.wheel[w][:0]
			}
			o.pos = 0
			o.cur = tn
		}
		id := o.gen
		o.gen++
		if d := o.delay(id); d > 0 {
			// tn ≤ o.cur ≤ tn+1 here and d ≤ maxMs: the bucket is ahead of
			// the cursor by at most maxMs, inside the wheel.
			w := int((tn + d) % int64(len(o.wheel)))
			o.wheel[w] = append(o.wheel[w], uint32(id))
			o.held++
			continue
		}
		return id, tn, tn, true
	}
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
	o.gen = maxID + 1
	o.cur, o.pos, o.held = lastAt, 0, 0
	if o.wheel != nil {
		for i := range o.wheel {
			o.wheel[i] = o.wheel[i][:0]
		}
		for m := lo; m < o.gen; m++ {
			d := o.delay(m)
			if d == 0 || o.delivered(m, last, lastAt) {
				continue
			}
			at := o.clk.at(m) + d
			w := int(at % int64(len(o.wheel)))
			o.wheel[w] = append(o.wheel[w], uint32(m))
			o.held++
		}
	}
	return o.gen - o.held, nil
}

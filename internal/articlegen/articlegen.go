// Package articlegen generates the order events of the first source
// article ([A1], "이벤트 스키마": event_id, event_type, event_version,
// order_id, store_id, amount, currency, paid_at, produced_at) as JSON
// lines, in arrival order, from a seed: the input of `tidemark bench
// article`, of the bundled pipeline examples/article/pipeline.yaml and of
// its hand-written loop (internal/articlebase).
//
// # The stream
//
// First deliveries are numbered 0, 1, 2 …; first delivery i has the
// stable event id evt-YYYYMMDD-%07d (the start's date in +09:00 and i),
// and its clock is Start + i·1000/Rate ms. Each is one of
//
//   - ORDER_PAID of a new order (90 %), or of a recent order again
//     (3 %: a split payment, a new event id for the same order_id, so
//     count_distinct(order_id) differs from count());
//   - ORDER_REFUNDED (4 %) or ORDER_CANCELLED (3 %) of a recent order.
//
// Stores are store-0000 … store-(Stores−1); seven in ten sell in KRW
// (whole won), two in USD (cents; one USD amount in five has three
// decimals, tax included, so round(amount, 2) matters) and one in JPY
// (whole yen); one order in twenty at a KRW store is paid in USD (a duty
// free counter), so a store can have two (store_id, currency) keys.
//
// paid_at (the event time) and produced_at are RFC 3339 in +09:00 with
// whole seconds; produced_at is 0–3 s after paid_at. An event's paid_at is
//
//   - on time (the rest): its clock minus up to Reorder (30 s by
//     default, well within the pipeline's 2 m out-of-orderness: never
//     late);
//   - late (LateFraction): 3m15s–4m45s before the largest paid_at
//     delivered so far, so with a watermark 2 m behind that largest time
//     its 1-minute window has fired but is still within the 3 m allowed
//     lateness (late, accepted);
//   - too late (TooLateFraction): 6m30s–20m before the largest paid_at,
//     so its window has closed (the late output).
//
// The margins (15 s at least on either side of a boundary) make these
// fates independent of how a runner batches records.
//
// A first delivery is redelivered later (RedeliverFraction) with the same
// payload — half of the copies with a later produced_at, a quarter of
// them re-serialized with the members in another order and spaces
// (another producer library) — and a few (ConflictFraction) are delivered
// again with the same id and another amount (a conflict). Copies arrive
// 1–5,000 lines after the first delivery; copies still pending when
// Events lines have been written are not written.
//
// The generator is deterministic: the same Config gives the same bytes.
package articlegen

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"time"
)

// Event types of the stream.
const (
	OrderPaid      = "ORDER_PAID"
	OrderRefunded  = "ORDER_REFUNDED"
	OrderCancelled = "ORDER_CANCELLED"
)

// Defaults of Config.
const (
	DefaultStores            = 1000
	DefaultRate              = 1000
	DefaultRedeliverFraction = 0.02
	DefaultConflictFraction  = 0.0005
	DefaultLateFraction      = 0.002
	DefaultTooLateFraction   = 0.001
	DefaultReorder           = 30 * time.Second
)

// DefaultStart is the default event time of the first event: the
// article's day, 2026-06-24 00:00:00 in Seoul.
var DefaultStart = time.Date(2026, 6, 24, 0, 0, 0, 0, KST)

// KST is the fixed +09:00 offset of every generated timestamp.
var KST = time.FixedZone("KST", 9*3600)

// Config configures a stream. The zero value of a field means its
// default; Events is required.
type Config struct {
	// Events is the number of lines written: first deliveries,
	// redeliveries and conflicting copies. Required, > 0.
	Events int64
	// Seed selects the stream (any value, 0 included).
	Seed uint64
	// Stores is the number of stores. Default 1,000.
	Stores int
	// Rate is the number of first deliveries per second of event time.
	// Default 1,000 (a 2M-event stream spans about 33 minutes).
	Rate int64
	// Start is the event time of first delivery 0. Default DefaultStart.
	Start time.Time
	// RedeliverFraction is the share of first deliveries delivered again
	// with the same payload, 0 to 1. Default 0.02; negative means 0.
	RedeliverFraction float64
	// ConflictFraction is the share of first deliveries delivered again
	// with the same id and another amount, 0 to 1. Default 0.0005;
	// negative means 0.
	ConflictFraction float64
	// LateFraction is the share of first deliveries that are late but
	// within the allowed lateness (see the package doc). Default 0.002;
	// negative means 0.
	LateFraction float64
	// TooLateFraction is the share of first deliveries whose window has
	// closed when they arrive. Default 0.001; negative means 0.
	TooLateFraction float64
	// Reorder bounds how far an on-time event's paid_at is before its
	// clock, at most 1m45s (below the pipeline's 2 m out-of-orderness,
	// with margin). Default 30 s; negative means 0.
	Reorder time.Duration
}

func (c *Config) defaults() {
	if c.Stores == 0 {
		c.Stores = DefaultStores
	}
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	if c.Start.IsZero() {
		c.Start = DefaultStart
	}
	frac := func(f *float64, def float64) {
		switch {
		case *f == 0:
			*f = def
		case *f < 0:
			*f = 0
		}
	}
	frac(&c.RedeliverFraction, DefaultRedeliverFraction)
	frac(&c.ConflictFraction, DefaultConflictFraction)
	frac(&c.LateFraction, DefaultLateFraction)
	frac(&c.TooLateFraction, DefaultTooLateFraction)
	switch {
	case c.Reorder == 0:
		c.Reorder = DefaultReorder
	case c.Reorder < 0:
		c.Reorder = 0
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.Events <= 0 {
		errs = append(errs, fmt.Errorf("events %d: must be positive", c.Events))
	}
	if c.Stores < 1 || c.Stores > 10000 {
		errs = append(errs, fmt.Errorf("stores %d: want 1 to 10,000", c.Stores))
	}
	if c.Rate < 1 || c.Rate > 1_000_000 {
		errs = append(errs, fmt.Errorf("rate %d: want 1 to 1,000,000 events per second of event time", c.Rate))
	}
	if c.RedeliverFraction+c.ConflictFraction > 1 {
		errs = append(errs, fmt.Errorf("redeliver fraction %v + conflict fraction %v: more than 1", c.RedeliverFraction, c.ConflictFraction))
	}
	if c.LateFraction+c.TooLateFraction > 1 {
		errs = append(errs, fmt.Errorf("late fraction %v + too-late fraction %v: more than 1", c.LateFraction, c.TooLateFraction))
	}
	if c.Reorder > maxReorder {
		errs = append(errs, fmt.Errorf("reorder %v: at most %v", c.Reorder, time.Duration(maxReorder)))
	}
	if y := c.Start.Year(); y < 1000 || y > 9000 {
		errs = append(errs, fmt.Errorf("start %v: want a year from 1000 to 9000", c.Start))
	}
	return errors.Join(errs...)
}

// maxReorder is the largest Reorder: on-time events stay 15 s clear of
// the 2 m out-of-orderness.
const maxReorder = 105 * time.Second

// Late and too-late offsets behind the largest paid_at delivered, ms.
const (
	lateMin, lateMax       = 195_000, 285_000   // 3m15s … 4m45s
	tooLateMin, tooLateMax = 390_000, 1_200_000 // 6m30s … 20m
)

// Fate says how an event's paid_at was chosen.
type Fate uint8

// Fates of a first delivery.
const (
	OnTime  Fate = iota // within the out-of-orderness
	Late                // its window fired, and is still open for late data
	TooLate             // its window has closed
)

// Delivery says what a line is.
type Delivery uint8

// Kinds of line.
const (
	First       Delivery = iota // a first delivery
	Redelivery                  // the same id and payload again
	Conflicting                 // the same id with another amount
)

// Event is one line's content.
type Event struct {
	Seq        int64  // first-delivery number; the event id's digits
	Type       string // OrderPaid, OrderRefunded or OrderCancelled
	Order      int64  // order number; the order_id's digits
	Store      int    // store number; the store_id's digits
	Currency   string // KRW, USD or JPY
	Amount     int64  // amount × 10^Scale
	Scale      int    // digits after the point: 0, 2 or 3
	PaidAt     int64  // event time, ms since the epoch (whole seconds)
	ProducedAt int64  // ms since the epoch (whole seconds)
	Fate       Fate
	Delivery   Delivery
	Shuffled   bool // members written in another order, with spaces
}

// Stats counts the lines written so far.
type Stats struct {
	Lines        int64 // every line
	First        int64 // first deliveries
	Redeliveries int64 // same id, same payload
	Conflicting  int64 // same id, another amount
	Late         int64 // first deliveries with fate Late
	TooLate      int64 // first deliveries with fate TooLate
	Paid         int64 // first deliveries of type ORDER_PAID
}

// copyOf is a pending redelivery or conflicting copy, due at line due.
type copyOf struct {
	due int64
	ev  Event
}

// recent is an order that later events may refer to.
type recent struct {
	order    int64
	store    int
	currency string
	scale    int
}

// Gen generates the stream line by line. Not safe for concurrent use.
type Gen struct {
	cfg     Config
	rng     *rand.Rand
	idDate  string // YYYYMMDD of Start in +09:00
	start   int64  // ms
	orders  int64
	maxPaid int64
	pending []copyOf // a min-heap by due
	recents [1024]recent
	nrecent int
	st      Stats
	ev      Event
}

// New returns a generator, or the errors of cfg (each naming its field).
func New(cfg Config) (*Gen, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("articlegen: %w", err)
	}
	g := &Gen{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x61727469636c6531)),
		idDate: cfg.Start.In(KST).Format("20060102"), start: cfg.Start.UnixMilli()}
	g.start -= floorMod(g.start, 1000)
	return g, nil
}

// Config returns the configuration with its defaults filled in.
func (g *Gen) Config() Config { return g.cfg }

// Stats returns the counts of the lines written so far.
func (g *Gen) Stats() Stats { return g.st }

// Done reports whether Events lines have been written.
func (g *Gen) Done() bool { return g.st.Lines >= g.cfg.Events }

// Next appends the next line (a JSON object and "\n") to dst and returns
// it with the line's event (valid until the next call), or dst and nil
// when Events lines have been written.
func (g *Gen) Next(dst []byte) ([]byte, *Event) {
	if g.Done() {
		return dst, nil
	}
	if len(g.pending) > 0 && g.pending[0].due <= g.st.Lines {
		g.ev = g.pop().ev
		if g.ev.Delivery == Redelivery {
			g.st.Redeliveries++
		} else {
			g.st.Conflicting++
		}
	} else {
		g.first()
	}
	g.st.Lines++
	return AppendJSON(dst, &g.ev, g.idDate), &g.ev
}

// first makes the next first delivery in g.ev and schedules its copies.
func (g *Gen) first() {
	r := g.rng
	seq := g.st.First
	clock := g.start + seq*1000/g.cfg.Rate
	e := Event{Seq: seq, Delivery: First}
	switch u := r.IntN(100); {
	case u < 90 || g.nrecent == 0:
		g.newOrder(&e)
		e.Type = OrderPaid
	default:
		o := g.recents[r.IntN(min(g.nrecent, len(g.recents)))]
		e.Order, e.Store, e.Currency, e.Scale = o.order, o.store, o.currency, o.scale
		switch {
		case u < 93:
			e.Type = OrderPaid
		case u < 97:
			e.Type = OrderRefunded
		default:
			e.Type = OrderCancelled
		}
		e.Amount = g.amount(e.Currency, e.Scale)
	}
	e.PaidAt = clock - r.Int64N(int64(g.cfg.Reorder/time.Millisecond)+1)
	if seq > 0 {
		switch u := r.Float64(); {
		case u < g.cfg.TooLateFraction:
			e.Fate = TooLate
			e.PaidAt = g.maxPaid - tooLateMin - r.Int64N(tooLateMax-tooLateMin+1)
		case u < g.cfg.TooLateFraction+g.cfg.LateFraction:
			e.Fate = Late
			e.PaidAt = g.maxPaid - lateMin - r.Int64N(lateMax-lateMin+1)
		}
	}
	e.PaidAt -= floorMod(e.PaidAt, 1000)
	e.ProducedAt = e.PaidAt + 1000*r.Int64N(4)
	if seq == 0 || e.PaidAt > g.maxPaid {
		g.maxPaid = e.PaidAt
	}
	g.st.First++
	switch e.Fate {
	case Late:
		g.st.Late++
	case TooLate:
		g.st.TooLate++
	}
	if e.Type == OrderPaid {
		g.st.Paid++
	}
	g.ev = e
	switch u := r.Float64(); {
	case u < g.cfg.RedeliverFraction:
		c := e
		c.Delivery = Redelivery
		if r.IntN(2) == 0 {
			c.ProducedAt += 1000 * (1 + r.Int64N(60))
		}
		c.Shuffled = r.IntN(4) == 0
		g.push(copyOf{due: g.st.Lines + 1 + r.Int64N(5000), ev: c})
	case u < g.cfg.RedeliverFraction+g.cfg.ConflictFraction:
		c := e
		c.Delivery = Conflicting
		c.Amount += pow10(c.Scale) * (1 + r.Int64N(100))
		g.push(copyOf{due: g.st.Lines + 1 + r.Int64N(5000), ev: c})
	}
}

// newOrder gives e a new order: its store, currency and amount.
func (g *Gen) newOrder(e *Event) {
	r := g.rng
	e.Order = g.orders
	g.orders++
	e.Store = r.IntN(g.cfg.Stores)
	switch e.Store % 10 {
	case 7, 8:
		e.Currency, e.Scale = "USD", 2
	case 9:
		e.Currency, e.Scale = "JPY", 0
	default:
		e.Currency, e.Scale = "KRW", 0
		if r.IntN(20) == 0 {
			e.Currency, e.Scale = "USD", 2
		}
	}
	if e.Currency == "USD" && r.IntN(5) == 0 {
		e.Scale = 3
	}
	e.Amount = g.amount(e.Currency, e.Scale)
	g.recents[g.nrecent%len(g.recents)] = recent{order: e.Order, store: e.Store, currency: e.Currency, scale: e.Scale}
	g.nrecent++
}

// amount draws an amount in units of 10^-scale.
func (g *Gen) amount(currency string, scale int) int64 {
	r := g.rng
	switch currency {
	case "KRW":
		return 100 * (10 + r.Int64N(1991)) // 1,000 … 200,000 won
	case "JPY":
		return 10 * (10 + r.Int64N(2991)) // 100 … 30,000 yen
	}
	cents := 100 + r.Int64N(49901) // 1.00 … 500.00 dollars
	if scale == 3 {
		return cents*10 + r.Int64N(10)
	}
	return cents
}

func (g *Gen) push(c copyOf) {
	g.pending = append(g.pending, c)
	a := g.pending
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if less(&a[p], &a[i]) {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (g *Gen) pop() copyOf {
	a := g.pending
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && less(&a[l], &a[m]) {
			m = l
		}
		if r := l + 1; r < n && less(&a[r], &a[m]) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	g.pending = a
	return top
}

// less orders pending copies by due line, then by first delivery (two
// copies due at one line keep a fixed order).
func less(a, b *copyOf) bool {
	if a.due != b.due {
		return a.due < b.due
	}
	return a.ev.Seq < b.ev.Seq
}

// EventID returns the event id of first delivery seq of a stream that
// starts on idDate (YYYYMMDD).
func EventID(idDate string, seq int64) string {
	return string(appendPadded([]byte("evt-"+idDate+"-"), seq, 7))
}

// AppendJSON appends e as the JSON line the generator writes (with its
// "\n"): the article's member order without spaces, or, when e.Shuffled,
// the members in another fixed order with spaces after ':' and ','.
func AppendJSON(dst []byte, e *Event, idDate string) []byte {
	sep, colon := ",", ":"
	order := canonicalOrder
	if e.Shuffled {
		sep, colon = ", ", ": "
		order = shuffledOrder
	}
	dst = append(dst, '{')
	for i, m := range order {
		if i > 0 {
			dst = append(dst, sep...)
		}
		dst = append(dst, '"')
		dst = append(dst, members[m]...)
		dst = append(dst, '"')
		dst = append(dst, colon...)
		switch m {
		case mEventID:
			dst = append(dst, `"evt-`...)
			dst = append(dst, idDate...)
			dst = append(dst, '-')
			dst = appendPadded(dst, e.Seq, 7)
			dst = append(dst, '"')
		case mEventType:
			dst = append(dst, '"')
			dst = append(dst, e.Type...)
			dst = append(dst, '"')
		case mEventVersion:
			dst = append(dst, '1')
		case mOrderID:
			dst = append(dst, `"ord-`...)
			dst = appendPadded(dst, e.Order, 7)
			dst = append(dst, '"')
		case mStoreID:
			dst = append(dst, `"store-`...)
			dst = appendPadded(dst, int64(e.Store), 4)
			dst = append(dst, '"')
		case mAmount:
			dst = AppendDecimal(dst, e.Amount, e.Scale)
		case mCurrency:
			dst = append(dst, '"')
			dst = append(dst, e.Currency...)
			dst = append(dst, '"')
		case mPaidAt:
			dst = appendTime(dst, e.PaidAt)
		case mProducedAt:
			dst = appendTime(dst, e.ProducedAt)
		}
	}
	return append(dst, '}', '\n')
}

// Members of an event, in the article's order.
const (
	mEventID = iota
	mEventType
	mEventVersion
	mOrderID
	mStoreID
	mAmount
	mCurrency
	mPaidAt
	mProducedAt
)

var members = [...]string{"event_id", "event_type", "event_version", "order_id", "store_id", "amount", "currency", "paid_at", "produced_at"}

var (
	canonicalOrder = []int{mEventID, mEventType, mEventVersion, mOrderID, mStoreID, mAmount, mCurrency, mPaidAt, mProducedAt}
	shuffledOrder  = []int{mPaidAt, mStoreID, mAmount, mEventID, mProducedAt, mCurrency, mOrderID, mEventVersion, mEventType}
)

// AppendDecimal appends units × 10^-scale as a JSON number literal with
// exactly scale digits after the point (none for scale 0).
func AppendDecimal(dst []byte, units int64, scale int) []byte {
	if units < 0 {
		dst = append(dst, '-')
		units = -units
	}
	if scale == 0 {
		return strconv.AppendInt(dst, units, 10)
	}
	p := pow10(scale)
	dst = strconv.AppendInt(dst, units/p, 10)
	dst = append(dst, '.')
	return appendPadded(dst, units%p, scale)
}

func appendTime(dst []byte, ms int64) []byte {
	dst = append(dst, '"')
	dst = time.UnixMilli(ms).In(KST).AppendFormat(dst, "2006-01-02T15:04:05-07:00")
	return append(dst, '"')
}

// appendPadded appends n (≥ 0) with at least width digits.
func appendPadded(dst []byte, n int64, width int) []byte {
	var b [20]byte
	s := strconv.AppendInt(b[:0], n, 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

func floorMod(a, m int64) int64 {
	r := a % m
	if r < 0 {
		r += m
	}
	return r
}

// Write writes a whole stream to w and returns its counts.
func Write(w io.Writer, cfg Config) (Stats, error) {
	g, err := New(cfg)
	if err != nil {
		return Stats{}, err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var line []byte
	for !g.Done() {
		line, _ = g.Next(line[:0])
		if _, err := bw.Write(line); err != nil {
			return g.Stats(), fmt.Errorf("articlegen: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return g.Stats(), fmt.Errorf("articlegen: %w", err)
	}
	return g.Stats(), nil
}

// WriteFile writes a whole stream to the file at path (created or
// truncated) and returns its counts.
func WriteFile(path string, cfg Config) (Stats, error) {
	f, err := os.Create(path)
	if err != nil {
		return Stats{}, fmt.Errorf("articlegen: %w", err)
	}
	st, err := Write(f, cfg)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("articlegen: %w", cerr)
	}
	return st, err
}

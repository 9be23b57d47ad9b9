// Package articlebase is a hand-written Go loop that computes the rows of
// the first article's pipeline (examples/article/pipeline.yaml) from a
// file of JSON order events (internal/articlegen), with plain maps and
// slices and no engine code: the practical limit `tidemark bench article
// --vs-baseline` compares the engine with, as internal/nexbase is for the
// Nexmark queries.
//
// Per line, in file order, the loop:
//
//   - reads the object's members with a scanner for flat JSON objects
//     (strings unescaped, numbers and literals as written); a line that is
//     not such an object, or lacks a required field, is quarantined;
//   - parses paid_at and produced_at with time.Parse (RFC 3339, offset
//     required) and amount as an exact decimal, rounded half away from zero
//     to hundredths (round(amount, 2));
//   - checks the contract's rules (produced_at ≥ paid_at, amount ≥ 0,
//     paid_at at most 24 h after produced_at);
//   - deduplicates by event_id (a 64-bit xxHash of the id), comparing a
//     payload hash over every member but produced_at (the contract's
//     delivery metadata): equal → duplicate, different → conflict; ids
//     expire 24 h of event time after their event time, swept every 6 h of
//     watermark;
//   - keeps the watermark, the largest paid_at of the records accepted so
//     far (filtered ones included) minus 2 minutes, judging lateness
//     against the watermark before the record;
//   - drops events whose type is not ORDER_PAID;
//   - adds the event to its 1-minute window (epoch-aligned; +09:00 is a
//     whole number of minutes) and key (store_id, currency): distinct
//     order ids as 64-bit xxHashes in a set, the rounded amount, the count.
//
// Rows follow emit mode update with a 3-minute allowed lateness: a row
// (is_final false) when the watermark reaches a window's end, a row at
// once for each late event accepted into it, and a final row (is_final
// true) when the watermark reaches end + 3 m; a window whose firing and
// closing coincide gives one final row. Versions count 1, 2, 3 … per
// window and key. Events whose window has closed are too late (counted).
// At the end of the input the watermark is +∞.
package articlebase

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// The pipeline's constants (examples/article/pipeline.yaml).
const (
	windowMs         = 60_000           // window.size 1m
	outOfOrdernessMs = 120_000          // event_time.out_of_orderness 2m
	latenessMs       = 180_000          // allowed_lateness 3m
	ttlMs            = 24 * 3600 * 1000 // dedup.ttl 24h
	sweepMs          = ttlMs / 4        // ids are swept every quarter of the ttl
	maxFutureMs      = 24 * 3600 * 1000 // rule not_in_future
	inf              = int64(1<<63 - 1) // the watermark at the end of the input
	minW             = int64(-1 << 63)  // the watermark before the first record
	paidType         = "ORDER_PAID"     // the filter
	maxLine          = 1 << 20          // longest line read whole
)

// Row is a result row. Its strings are valid only during the emit call.
type Row struct {
	Start, End  int64 // window bounds, ms since the epoch, End exclusive
	Store       string
	Currency    string
	Orders      int64 // count_distinct(order_id)
	Revenue     int64 // sum(round(amount, 2)) in hundredths
	Events      int64 // count()
	Version     int64
	IsFinal     bool
	WatermarkAt int64 // ms since the epoch; math.MaxInt64 at the end of the input
}

// Stats counts a run's records by fate and its rows.
type Stats struct {
	Events      int64 // lines read
	Quarantined int64
	Duplicates  int64
	Conflicts   int64
	Filtered    int64
	OnTime      int64
	Late        int64 // late, accepted
	TooLate     int64
	Rows        int64
}

// acc is one window and key's state.
type acc struct {
	store, currency string
	orders          map[uint64]struct{}
	revenue, events int64
	version         int64
}

// window is an open window: its keys in order of first arrival.
type window struct {
	start int64
	fired bool
	keys  map[string]*acc
	order []*acc
}

// seen is a remembered event id.
type seen struct {
	payload uint64
	ts      int64
}

type loop struct {
	emit    func(*Row)
	st      Stats
	ids     map[uint64]seen
	wins    []*window // open windows by start
	free    []*window
	maxT    int64
	wm      int64
	nextSwp int64
	out     Row
	keyBuf  []byte
	payload []byte
	m       members
	esc     []byte
}

// Run computes the pipeline's rows over the JSON lines of the file at
// path, calling emit (if not nil) with each row, and returns the counts.
// It stops with ctx's error when ctx is cancelled (checked every 4,096
// lines).
func Run(ctx context.Context, path string, emit func(*Row)) (Stats, error) {
	f, err := os.Open(path)
	if err != nil {
		return Stats{}, fmt.Errorf("articlebase: %w", err)
	}
	defer f.Close()
	return RunReader(ctx, f, emit)
}

// RunReader is Run over the lines of r.
func RunReader(ctx context.Context, r io.Reader, emit func(*Row)) (Stats, error) {
	l := &loop{emit: emit, ids: make(map[uint64]seen), maxT: minW, wm: minW, nextSwp: minW}
	br := bufio.NewReaderSize(r, 1<<20)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			l.line(bytes.TrimRight(line, "\r\n"))
			if l.st.Events&4095 == 0 {
				if err := ctx.Err(); err != nil {
					return l.st, err
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return l.st, fmt.Errorf("articlebase: %w", err)
		}
	}
	l.advance(inf)
	return l.st, nil
}

// members are a line's values: strings unescaped, others as written.
type members struct {
	eventID, eventType, version, orderID, storeID, amount, currency, paidAt, producedAt []byte
	has                                                                                 uint16
}

const (
	hEventID = 1 << iota
	hEventType
	hVersion
	hOrderID
	hStoreID
	hAmount
	hCurrency
	hPaidAt
	hProducedAt
	hRequired = hEventID | hEventType | hOrderID | hStoreID | hAmount | hCurrency | hPaidAt
)

func (l *loop) line(b []byte) {
	l.st.Events++
	if !l.parse(b) || l.m.has&hRequired != hRequired {
		l.st.Quarantined++
		return
	}
	m := &l.m
	paid, err := time.Parse(time.RFC3339, unsafeString(m.paidAt))
	if err != nil {
		l.st.Quarantined++
		return
	}
	t := paid.UnixMilli()
	var produced int64
	if m.has&hProducedAt != 0 {
		p, err := time.Parse(time.RFC3339, unsafeString(m.producedAt))
		if err != nil {
			l.st.Quarantined++
			return
		}
		produced = p.UnixMilli()
		// Rules not_in_future and produced_after_paid.
		if t-produced > maxFutureMs || produced < t {
			l.st.Quarantined++
			return
		}
	}
	cents, ok := roundCents(m.amount)
	if !ok || m.amount[0] == '-' {
		l.st.Quarantined++ // amount_not_negative, or not a number
		return
	}
	// Dedup: the id, and the payload without produced_at.
	id := xxhash.Sum64(m.eventID)
	p := l.payload[:0]
	for _, v := range [...][]byte{m.eventID, m.eventType, m.version, m.orderID, m.storeID, m.amount, m.currency, m.paidAt} {
		p = append(p, byte(len(v)), byte(len(v)>>8))
		p = append(p, v...)
	}
	l.payload = p
	ph := xxhash.Sum64(p)
	if s, ok := l.ids[id]; ok {
		if s.payload == ph {
			l.st.Duplicates++
		} else {
			l.st.Conflicts++
		}
		return
	}
	l.ids[id] = seen{payload: ph, ts: t}
	wm := l.wm // lateness is judged before the record moves the watermark
	if string(m.eventType) != paidType {
		l.st.Filtered++
	} else {
		l.add(m, t, cents, wm)
	}
	if t > l.maxT {
		l.maxT = t
		l.advance(t - outOfOrdernessMs)
	}
}

// add puts an ORDER_PAID event into its window.
func (l *loop) add(m *members, t, cents, wm int64) {
	start := floorDiv(t, windowMs)
	end := start + windowMs
	if end+latenessMs <= wm {
		l.st.TooLate++
		return
	}
	late := end <= wm
	if late {
		l.st.Late++
	} else {
		l.st.OnTime++
	}
	w := l.window(start)
	if late {
		w.fired = true // a window a late event opens has had its on-time firing
	}
	l.keyBuf = append(append(append(l.keyBuf[:0], m.storeID...), 0), m.currency...)
	a := w.keys[string(l.keyBuf)]
	if a == nil {
		a = &acc{store: string(m.storeID), currency: string(m.currency), orders: map[uint64]struct{}{}}
		w.keys[string(l.keyBuf)] = a
		w.order = append(w.order, a)
	}
	a.orders[xxhash.Sum64(m.orderID)] = struct{}{}
	a.revenue += cents
	a.events++
	if late {
		l.row(w, a, false, wm)
	}
}

// window returns the open window starting at start, opening it.
func (l *loop) window(start int64) *window {
	i := len(l.wins)
	for i > 0 && l.wins[i-1].start >= start {
		i--
	}
	if i < len(l.wins) && l.wins[i].start == start {
		return l.wins[i]
	}
	var w *window
	if n := len(l.free); n > 0 {
		w, l.free = l.free[n-1], l.free[:n-1]
	} else {
		w = &window{keys: map[string]*acc{}}
	}
	w.start, w.fired = start, false
	l.wins = append(l.wins, nil)
	copy(l.wins[i+1:], l.wins[i:])
	l.wins[i] = w
	return w
}

// advance moves the watermark to wm: due windows fire (a row per key)
// and closed ones emit their final rows and are freed, in order of end;
// ids are swept.
func (l *loop) advance(wm int64) {
	if wm <= l.wm {
		return
	}
	l.wm = wm
	keep := l.wins[:0]
	for i, w := range l.wins {
		end := w.start + windowMs
		if end > wm {
			keep = append(keep, l.wins[i:]...)
			break
		}
		if end+latenessMs <= wm {
			for _, a := range w.order {
				l.row(w, a, true, wm)
			}
			clear(w.keys)
			w.order = w.order[:0]
			l.free = append(l.free, w)
			continue
		}
		if !w.fired {
			for _, a := range w.order {
				l.row(w, a, false, wm)
			}
			w.fired = true
		}
		keep = append(keep, w)
	}
	l.wins = keep
	if wm != inf && wm >= l.nextSwp {
		if l.nextSwp != minW {
			for id, s := range l.ids {
				if s.ts+ttlMs <= wm {
					delete(l.ids, id)
				}
			}
		}
		l.nextSwp = floorDiv(wm, sweepMs) + sweepMs
	}
}

func (l *loop) row(w *window, a *acc, final bool, wm int64) {
	a.version++
	l.out = Row{Start: w.start, End: w.start + windowMs, Store: a.store, Currency: a.currency,
		Orders: int64(len(a.orders)), Revenue: a.revenue, Events: a.events, Version: a.version, IsFinal: final, WatermarkAt: wm}
	l.st.Rows++
	if l.emit != nil {
		l.emit(&l.out)
	}
}

// parse reads a flat JSON object's members into l.m.
func (l *loop) parse(b []byte) bool {
	l.m = members{}
	l.esc = l.esc[:0]
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipWS(b, i+1) == len(b)
	}
	for {
		key, j, ok := l.str(b, i)
		if !ok {
			return false
		}
		i = skipWS(b, j)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipWS(b, i+1)
		if i >= len(b) {
			return false
		}
		var v []byte
		if b[i] == '"' {
			if v, i, ok = l.str(b, i); !ok {
				return false
			}
		} else {
			j := i
			for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ' ' && b[j] != '\t' {
				j++
			}
			if j == i || b[i] == '{' || b[i] == '[' {
				return false
			}
			v, i = b[i:j], j
			if string(v) == "null" {
				v = nil
			}
		}
		l.set(key, v)
		i = skipWS(b, i)
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			return skipWS(b, i+1) == len(b)
		}
		if b[i] != ',' {
			return false
		}
		i = skipWS(b, i+1)
	}
}

func (l *loop) set(key, v []byte) {
	m := &l.m
	if v == nil {
		return
	}
	switch string(key) {
	case "event_id":
		m.eventID, m.has = v, m.has|hEventID
	case "event_type":
		m.eventType, m.has = v, m.has|hEventType
	case "event_version":
		m.version, m.has = v, m.has|hVersion
	case "order_id":
		m.orderID, m.has = v, m.has|hOrderID
	case "store_id":
		m.storeID, m.has = v, m.has|hStoreID
	case "amount":
		m.amount, m.has = v, m.has|hAmount
	case "currency":
		m.currency, m.has = v, m.has|hCurrency
	case "paid_at":
		m.paidAt, m.has = v, m.has|hPaidAt
	case "produced_at":
		m.producedAt, m.has = v, m.has|hProducedAt
	}
}

// str reads the JSON string at b[i] and returns its unescaped bytes (the
// input's, or l.esc's when it has escapes) and the index after it.
func (l *loop) str(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	i++
	start := i
	for i < len(b) && b[i] != '"' && b[i] != '\\' {
		i++
	}
	if i >= len(b) {
		return nil, i, false
	}
	if b[i] == '"' {
		return b[start:i], i + 1, true
	}
	e0 := len(l.esc)
	l.esc = append(l.esc, b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return l.esc[e0:len(l.esc):len(l.esc)], i + 1, true
		case c == '\\' && i+1 < len(b):
			switch e := b[i+1]; e {
			case 'n':
				l.esc = append(l.esc, '\n')
			case 't':
				l.esc = append(l.esc, '\t')
			case 'r':
				l.esc = append(l.esc, '\r')
			case 'b':
				l.esc = append(l.esc, '\b')
			case 'f':
				l.esc = append(l.esc, '\f')
			case 'u':
				if i+6 > len(b) {
					return nil, i, false
				}
				var r rune
				for _, h := range b[i+2 : i+6] {
					r <<= 4
					switch {
					case h >= '0' && h <= '9':
						r |= rune(h - '0')
					case h|0x20 >= 'a' && h|0x20 <= 'f':
						r |= rune(h|0x20-'a') + 10
					default:
						return nil, i, false
					}
				}
				l.esc = utf8.AppendRune(l.esc, r)
				i += 6
				continue
			default:
				l.esc = append(l.esc, e)
			}
			i += 2
		default:
			l.esc = append(l.esc, c)
			i++
		}
	}
	return nil, i, false
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// roundCents parses a decimal literal ([-]digits[.digits]) and rounds it
// half away from zero to hundredths.
func roundCents(s []byte) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	var whole int64
	i := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		whole = whole*10 + int64(s[i]-'0')
		if whole > 1<<53 {
			return 0, false
		}
	}
	if i == 0 {
		return 0, false
	}
	cents := whole * 100
	if i < len(s) {
		if s[i] != '.' || i+1 == len(s) {
			return 0, false
		}
		frac := s[i+1:]
		for k, c := range frac {
			if c < '0' || c > '9' {
				return 0, false
			}
			switch k {
			case 0:
				cents += 10 * int64(c-'0')
			case 1:
				cents += int64(c - '0')
			case 2:
				if c >= '5' {
					cents++
				}
			}
		}
	}
	if neg {
		cents = -cents
	}
	return cents, true
}

// unsafeString views b as a string for time.Parse, which keeps it only
// in the error the loop drops.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// floorDiv rounds t down to a multiple of m (m > 0), also for negative t.
func floorDiv(t, m int64) int64 {
	q := t / m
	if t%m < 0 {
		q--
	}
	return q * m
}

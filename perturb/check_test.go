package perturb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"time"
)

// got is one delivery with its bytes kept.
type got struct {
	Delivery
	JSON []byte
}

// run feeds events to a simulator in order, taking due deliveries after
// every Add, and returns every delivery. With batch it adds everything
// before taking any.
func run(o Options, events []Event, batch bool) ([]got, Stats, error) {
	s, err := New(o)
	if err != nil {
		return nil, Stats{}, err
	}
	var out []got
	take := func() {
		for d, ok := s.Next(); ok; d, ok = s.Next() {
			b := bytes.Clone(d.JSON)
			d.JSON = nil
			out = append(out, got{d, b})
		}
	}
	for _, ev := range events {
		if err := s.Add(ev); err != nil {
			return nil, Stats{}, err
		}
		if !batch {
			take()
		}
	}
	s.Close()
	take()
	return out, s.Stats(), nil
}

// disorder measures how far event times lie behind the largest before.
func disorder(events []Event) time.Duration {
	var h, d int64
	seen := false
	for _, ev := range events {
		switch et := ev.EventTime; {
		case et == NoTime:
		case !seen || et > h:
			h, seen = et, true
		default:
			d = max(d, h-et)
		}
	}
	return time.Duration(d) * time.Millisecond
}

// check verifies the simulator's invariants over the deliveries of
// events, independently of how they were computed.
func check(o Options, events []Event, ds []got) error {
	o = o.withDefaults()
	maxDelay := o.MaxDelay.Milliseconds()
	offDelay := o.OfflineDelay.Milliseconds()
	first := map[int64]*got{}
	copies := map[[2]int64]int{}
	for i := range ds {
		d := &ds[i]
		if d.Seq < 0 || d.Seq >= int64(len(events)) {
			return fmt.Errorf("delivery %d: seq %d out of range", i, d.Seq)
		}
		if i > 0 {
			p := &ds[i-1]
			if p.Arrival > d.Arrival || p.Arrival == d.Arrival && (p.Seq > d.Seq || p.Seq == d.Seq && p.Kind >= d.Kind) {
				return fmt.Errorf("delivery %d (%d, %d, %s) after (%d, %d, %s): not in (arrival, seq, kind) order", i, d.Arrival, d.Seq, d.Kind, p.Arrival, p.Seq, p.Kind)
			}
		}
		if !json.Valid(d.JSON) {
			return fmt.Errorf("delivery %d: invalid JSON %s", i, d.JSON)
		}
		if err := checkFields(o, d); err != nil {
			return fmt.Errorf("delivery %d: %w", i, err)
		}
		ev := &events[d.Seq]
		if d.EventTime != ev.EventTime {
			return fmt.Errorf("delivery %d: event time %d, input %d", i, d.EventTime, ev.EventTime)
		}
		if d.Kind == First {
			if first[d.Seq] != nil {
				return fmt.Errorf("record %d delivered twice as first", d.Seq)
			}
			first[d.Seq] = d
			continue
		}
		copies[[2]int64{d.Seq, int64(d.Kind)}]++
	}
	if len(first) != len(events) {
		return fmt.Errorf("%d records delivered, %d added", len(first), len(events))
	}
	for seq, f := range first {
		ev := &events[seq]
		key, hasKey := eventKey(o, ev)
		want := int(seq % int64(o.Partitions))
		if hasKey {
			want = int(FNV1a(key) % uint32(o.Partitions))
		}
		if f.Partition != want {
			return fmt.Errorf("record %d: partition %d, want %d", seq, f.Partition, want)
		}
		if ev.EventTime == NoTime {
			if f.Offline || f.Straggler {
				return fmt.Errorf("record %d without event time is offline or a straggler", seq)
			}
			continue
		}
		lag := f.Arrival - ev.EventTime
		bound := maxDelay
		if f.Offline {
			bound += offDelay
		}
		if lag < 0 || lag > bound {
			return fmt.Errorf("record %d: arrival − event time = %d ms, outside [0, %d]", seq, lag, bound)
		}
		if !f.Offline && !f.Straggler && o.Distribution == Uniform && lag > o.Delay.Milliseconds() {
			return fmt.Errorf("record %d: usual delay %d ms above delay", seq, lag)
		}
		if want := outputOf(o, ev.JSON, f); !bytes.Equal(f.JSON, want) {
			return fmt.Errorf("record %d: output\n%s\nwant\n%s", seq, f.JSON, want)
		}
	}
	for k, n := range copies {
		if n != 1 {
			return fmt.Errorf("record %d: %d copies of kind %s", k[0], n, Kind(k[1]))
		}
	}
	for i := range ds {
		d := &ds[i]
		if d.Kind == First {
			continue
		}
		f := first[d.Seq]
		if events[d.Seq].EventTime == NoTime {
			return fmt.Errorf("record %d without event time has a copy", d.Seq)
		}
		if d.Arrival < f.Arrival || d.Arrival-f.Arrival > maxDelay {
			return fmt.Errorf("record %d: %s at %d, first at %d", d.Seq, d.Kind, d.Arrival, f.Arrival)
		}
		if d.Partition != f.Partition || d.Offline != f.Offline || d.Straggler != f.Straggler {
			return fmt.Errorf("record %d: %s on another partition or with other flags", d.Seq, d.Kind)
		}
		switch d.Kind {
		case Redelivery:
			if a, b := withoutArrival(o, d.JSON), withoutArrival(o, f.JSON); !bytes.Equal(a, b) {
				return fmt.Errorf("record %d: redelivery differs beyond the arrival:\n%s\n%s", d.Seq, a, b)
			}
		case Conflict:
			if err := checkConflict(o, f.JSON, d.JSON); err != nil {
				return fmt.Errorf("record %d: %w", d.Seq, err)
			}
		}
	}
	return checkOffline(o, events, first)
}

// eventKey is the partition key of ev, if any.
func eventKey(o Options, ev *Event) ([]byte, bool) {
	if ev.HasKey {
		return []byte(ev.Key), true
	}
	if o.PartitionBy != "" {
		return AppendFieldText(nil, ev.JSON, o.PartitionBy)
	}
	return nil, false
}

// checkFields checks the arrival and partition members of a delivery,
// decoding it with encoding/json.
func checkFields(o Options, d *got) error {
	var m map[string]any
	if err := json.Unmarshal(d.JSON, &m); err != nil {
		return err
	}
	at, ok := m[o.ArrivalField].(string)
	if !ok {
		return fmt.Errorf("no %s string in %s", o.ArrivalField, d.JSON)
	}
	tm, err := time.Parse(time.RFC3339, at)
	if err != nil || tm.UnixMilli() != d.Arrival || !strings.Contains(at, ".") {
		return fmt.Errorf("%s %q is not the arrival %d with milliseconds (%v)", o.ArrivalField, at, d.Arrival, err)
	}
	if _, off := tm.Zone(); true {
		_, want := time.UnixMilli(d.Arrival).In(o.Zone).Zone()
		if off != want {
			return fmt.Errorf("%s %q: offset %d, want %d", o.ArrivalField, at, off, want)
		}
	}
	if o.PartitionField == NoField {
		return nil
	}
	if p, _ := m[o.PartitionField].(string); p != fmt.Sprintf("p%d", d.Partition) {
		return fmt.Errorf("%s %q, want p%d", o.PartitionField, p, d.Partition)
	}
	return nil
}

// outputOf is the expected first delivery of obj, built naively: the
// object with its arrival and partition members set (replaced when
// present, else appended).
func outputOf(o Options, obj []byte, d *got) []byte {
	at := `"` + time.UnixMilli(d.Arrival).In(o.Zone).Format("2006-01-02T15:04:05.000Z07:00") + `"`
	part := fmt.Sprintf(`"p%d"`, d.Partition)
	out := obj
	var add []string
	set := func(name, val string) {
		if s, e, ok := Lookup(out, name); ok && !strings.Contains(name, ".") {
			out = append(append(append([]byte(nil), out[:s]...), val...), out[e:]...)
			return
		}
		add = append(add, strings.TrimSpace(string(mustJSON(name)))+":"+val)
	}
	set(o.ArrivalField, at)
	if o.PartitionField != NoField {
		set(o.PartitionField, part)
	}
	if len(add) == 0 {
		return out
	}
	// Insert after the last member (before the closing brace and any
	// white space before it).
	end := bytes.LastIndexByte(out, '}')
	tail := end
	for tail > 0 && strings.ContainsRune(" \t\r\n", rune(out[tail-1])) {
		tail--
	}
	sep := ","
	if out[tail-1] == '{' {
		sep = ""
	}
	res := append([]byte(nil), out[:tail]...)
	res = append(res, sep+strings.Join(add, ",")...)
	return append(res, out[tail:]...)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// withoutArrival replaces the arrival member's value with 0.
func withoutArrival(o Options, b []byte) []byte {
	s, e, ok := Lookup(b, o.ArrivalField)
	if !ok {
		return b
	}
	return append(append(append([]byte(nil), b[:s]...), '0'), b[e:]...)
}

// checkConflict checks that c differs from f only in the conflict field,
// by exactly one (same digits after the point) or by "-x".
func checkConflict(o Options, f, c []byte) error {
	f, c = withoutArrival(o, f), withoutArrival(o, c)
	fv, fs, fe := valueAt(f, o.ConflictField)
	cv, cs, ce := valueAt(c, o.ConflictField)
	if fv == nil || cv == nil {
		return fmt.Errorf("conflict field %s missing", o.ConflictField)
	}
	// Everything else byte-identical (arrival aside).
	a := append(append(append([]byte(nil), f[:fs]...), 'V'), f[fe:]...)
	b := append(append(append([]byte(nil), c[:cs]...), 'V'), c[ce:]...)
	if !bytes.Equal(a, b) {
		return fmt.Errorf("conflict differs beyond %s:\n%s\n%s", o.ConflictField, f, c)
	}
	num := func(v []byte) (*big.Rat, int, bool) {
		s := string(v)
		if o.ConflictChange == AsNumber {
			s = strings.Trim(s, `"`)
		}
		r, ok := new(big.Rat).SetString(s)
		mant, _, _ := strings.Cut(strings.ToLower(s), "e")
		_, frac, _ := strings.Cut(mant, ".")
		return r, len(frac), ok
	}
	if o.ConflictChange == AsString || o.ConflictChange == ByJSONType && fv[0] == '"' {
		x := string(fv) // a number or boolean as its text
		if fv[0] == '"' {
			json.Unmarshal(fv, &x)
		}
		var y string
		if err := json.Unmarshal(cv, &y); err != nil || y != x+"-x" {
			return fmt.Errorf("conflict %s: %s → %s", o.ConflictField, fv, cv)
		}
		return nil
	}
	x, xs, ok1 := num(fv)
	y, ys, ok2 := num(cv)
	if !ok1 || !ok2 {
		return fmt.Errorf("conflict %s: %s → %s is not numeric", o.ConflictField, fv, cv)
	}
	if d := new(big.Rat).Sub(y, x); d.Cmp(big.NewRat(1, 1)) != 0 || ys < xs {
		return fmt.Errorf("conflict %s: %s → %s", o.ConflictField, fv, cv)
	}
	return nil
}

func valueAt(b []byte, field string) ([]byte, int, int) {
	s, e, ok := Lookup(b, field)
	if !ok {
		return nil, 0, 0
	}
	return b[s:e], s, e
}

// checkOffline checks the offline bursts: per device, the offline records
// share one arrival, their event times span less than OfflineDelay, and
// no other record of the device lies between them.
func checkOffline(o Options, events []Event, first map[int64]*got) error {
	type burst struct {
		lo, hi, at int64
		n          int
	}
	bursts := map[string]*burst{}
	for seq, f := range first {
		if !f.Offline {
			continue
		}
		key, ok := eventKey(o, &events[seq])
		if !ok {
			return fmt.Errorf("record %d offline without a key", seq)
		}
		et := events[seq].EventTime
		b := bursts[string(key)]
		if b == nil {
			bursts[string(key)] = &burst{lo: et, hi: et, at: f.Arrival, n: 1}
			continue
		}
		if b.at != f.Arrival {
			return fmt.Errorf("device %q: offline records arrive at %d and %d", key, b.at, f.Arrival)
		}
		b.lo, b.hi, b.n = min(b.lo, et), max(b.hi, et), b.n+1
	}
	for key, b := range bursts {
		if b.hi-b.lo >= o.OfflineDelay.Milliseconds() {
			return fmt.Errorf("device %q: burst spans %d ms", key, b.hi-b.lo)
		}
		if b.at < b.hi {
			return fmt.Errorf("device %q: burst arrives before its last event", key)
		}
	}
	for seq, f := range first {
		if f.Offline || events[seq].EventTime == NoTime {
			continue
		}
		key, ok := eventKey(o, &events[seq])
		if !ok {
			continue
		}
		if b := bursts[string(key)]; b != nil && events[seq].EventTime >= b.lo && events[seq].EventTime <= b.hi {
			return fmt.Errorf("device %q: record %d inside the burst's window is not offline", key, seq)
		}
	}
	return nil
}

// sameDeliveries reports the first difference between two runs.
func sameDeliveries(a, b []got) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d and %d deliveries", len(a), len(b))
	}
	for i := range a {
		if !reflect.DeepEqual(a[i].Delivery, b[i].Delivery) || !bytes.Equal(a[i].JSON, b[i].JSON) {
			return fmt.Errorf("delivery %d: %s vs %s", i, a[i].JSON, b[i].JSON)
		}
	}
	return nil
}

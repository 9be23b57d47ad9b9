package perturb

import (
	"errors"
	"time"
)

// ErrNotObject is returned by Simulator.Add for an event that is not one
// valid JSON object.
var ErrNotObject = errors.New("not a JSON object")

// Event is one input record.
type Event struct {
	// JSON is the record as one JSON object. Add copies it.
	JSON []byte
	// EventTime is the record's event time in ms since the Unix epoch, or
	// NoTime when it has none (it is then delivered once, at the horizon).
	EventTime int64
	// Key is the record's partition key (the device), used when HasKey is
	// set; otherwise Options.PartitionBy, if set, names the field whose
	// text is the key.
	Key    string
	HasKey bool
}

// Delivery is one delivery of a record.
type Delivery struct {
	// JSON is the record with the arrival field (and the partition field)
	// set: a member already present is overwritten in place, else the
	// member is added at the end of the object. Every other byte is the
	// input's. Valid until the next call to Next.
	JSON []byte
	// Seq is the record's 0-based position in input order.
	Seq int64
	// EventTime is the record's event time (NoTime when it had none).
	EventTime int64
	// Arrival is when the delivery arrives (ms).
	Arrival int64
	// Partition is the index of the partition ("p" + index in JSON).
	Partition int
	// Kind says whether this is the first delivery, a redelivered copy
	// or a conflicting copy.
	Kind Kind
	// Straggler and Offline describe the record's first delivery (copies
	// carry them too).
	Straggler bool
	Offline   bool
}

// Stats counts what a Simulator did.
type Stats struct {
	Records      int64 // events added
	NoTime       int64 // events without an event time
	Deliveries   int64 // deliveries returned by Next
	Redeliveries int64 // redelivered copies scheduled
	Conflicts    int64 // conflicting copies scheduled
	// ConflictsSkipped counts records chosen for a conflict whose field
	// could not be changed (missing, null, not a number or a string).
	ConflictsSkipped int64
	Stragglers       int64 // records whose delay was drawn from [0, MaxDelay]
	OfflineBursts    int64 // devices that went offline
	OfflineRecords   int64 // records held in an offline burst
	// MaxDelay is the largest arrival − event time over the deliveries
	// scheduled (copies included), in ms.
	MaxDelay int64
	// MaxHeld is the largest number of deliveries held at once: the
	// memory bound in records.
	MaxHeld int
	// Unordered counts deliveries that left after a delivery with a later
	// arrival: 0 unless the input broke Options.Disorder.
	Unordered int64
}

// Simulator turns events into a seeded arrival order with recorded arrival
// times: a pure, single-threaded state machine (no clock, no IO). Feed
// events with Add in input order, take due deliveries with Next, and
// call Close at the end of the input to drain the rest. See the package
// documentation for the model and the memory bound.
type Simulator struct {
	o     Options
	sch   *Scheduler
	q     Queue[*held]
	names []string
	key   []byte
	free  []*held
	last  *held // returned by the last Next, recycled by the next
	out   []byte
	prev  int64 // arrival of the last delivery returned
	any   bool  // a delivery was returned
	stats Stats
}

// held is one delivery waiting in the queue; it owns its bytes.
type held struct {
	obj       []byte
	et        int64
	partition int
	straggler bool
	offline   bool
}

// arrivalLayout writes arrival times: RFC 3339 with milliseconds.
const arrivalLayout = "2006-01-02T15:04:05.000Z07:00"

// New returns a simulator for o, or *OptionError values (joined) when o is
// invalid.
func New(o Options) (*Simulator, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	sch, err := NewScheduler(o)
	if err != nil {
		return nil, err
	}
	s := &Simulator{o: o, sch: sch, names: sch.PartitionNames()}
	s.q.SetDisorder(o.Disorder.Milliseconds())
	return s, nil
}

// Add schedules an event's deliveries. It returns ErrNotObject, and
// schedules nothing, when ev.JSON is not one valid JSON object.
func (s *Simulator) Add(ev Event) error {
	if !Valid(ev.JSON) {
		return ErrNotObject
	}
	hasKey := ev.HasKey
	s.key = s.key[:0]
	switch {
	case hasKey:
		s.key = append(s.key, ev.Key...)
	case s.o.PartitionBy != "":
		s.key, hasKey = appendFieldText(s.key, ev.JSON, s.o.PartitionBy)
	}
	et := ev.EventTime
	sc := s.sch.Next(et, s.key, hasKey)
	s.stats.Records++
	if et == NoTime {
		s.stats.NoTime++
		s.q.PushAtHorizon(sc.Seq, s.hold(ev.JSON, et, &sc))
		s.stats.MaxHeld = max(s.stats.MaxHeld, s.q.Len())
		return nil
	}
	s.q.Observe(et)
	if sc.Straggler {
		s.stats.Stragglers++
	}
	if sc.Offline {
		s.stats.OfflineRecords++
	}
	s.stats.OfflineBursts = int64(s.sch.OfflineBursts())
	s.push(sc.Arrival, et, &sc, First, ev.JSON)
	if sc.Redeliver {
		s.stats.Redeliveries++
		s.push(sc.RedeliverAt, et, &sc, Redelivery, ev.JSON)
	}
	if sc.Conflict {
		h := s.hold(nil, et, &sc)
		var ok bool
		if h.obj, ok = appendChanged(h.obj, ev.JSON, s.o.ConflictField, s.o.ConflictChange); ok {
			s.stats.Conflicts++
			s.stats.MaxDelay = max(s.stats.MaxDelay, sc.ConflictAt-et)
			s.q.Push(sc.ConflictAt, sc.Seq, Conflict, h)
		} else {
			s.stats.ConflictsSkipped++
			s.free = append(s.free, h)
		}
	}
	s.stats.MaxHeld = max(s.stats.MaxHeld, s.q.Len())
	return nil
}

func (s *Simulator) push(arrival, et int64, sc *Schedule, kind Kind, obj []byte) {
	s.stats.MaxDelay = max(s.stats.MaxDelay, arrival-et)
	s.q.Push(arrival, sc.Seq, kind, s.hold(obj, et, sc))
}

// hold returns a recycled held delivery holding a copy of obj.
func (s *Simulator) hold(obj []byte, et int64, sc *Schedule) *held {
	var h *held
	if n := len(s.free); n > 0 {
		h = s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
	} else {
		h = &held{}
	}
	h.obj = append(h.obj[:0], obj...)
	h.et, h.partition, h.straggler, h.offline = et, sc.Partition, sc.Straggler, sc.Offline
	return h
}

// Close marks the end of the input: Next then returns every held
// delivery.
func (s *Simulator) Close() { s.q.Close() }

// Next returns the next due delivery in (arrival, input order, kind)
// order, or false when none is due yet (before Close: add more events;
// after Close: the simulation is over). Delivery.JSON is valid until the
// next call.
func (s *Simulator) Next() (Delivery, bool) {
	if s.last != nil {
		s.free = append(s.free, s.last)
		s.last = nil
	}
	if !s.q.Due() {
		return Delivery{}, false
	}
	arrival, seq, kind, h := s.q.Pop()
	s.last = h
	if s.any && arrival < s.prev {
		s.stats.Unordered++
	}
	s.prev, s.any = max(s.prev, arrival), true
	s.stats.Deliveries++
	s.out = s.appendOutput(s.out[:0], h.obj, arrival, h.partition)
	return Delivery{
		JSON: s.out, Seq: seq, EventTime: h.et, Arrival: arrival, Partition: h.partition,
		Kind: kind, Straggler: h.straggler, Offline: h.offline,
	}, true
}

// Held returns the number of deliveries held.
func (s *Simulator) Held() int { return s.q.Len() }

// Stats returns the counts so far.
func (s *Simulator) Stats() Stats { return s.stats }

// PartitionNames returns the partition names, "p0" … "pN-1".
func (s *Simulator) PartitionNames() []string { return s.names }

// appendOutput appends obj with the arrival and partition members set.
func (s *Simulator) appendOutput(dst, obj []byte, arrival int64, partition int) []byte {
	open := skipWS(obj, 0) // a valid object (checked by Add)
	withPart := s.o.PartitionField != NoField
	var sawArr, sawPart bool
	o := objScanner{b: obj, i: open + 1, depth: 1}
	from, tail := 0, open+1 // tail: after the last member
	for {
		m, ok := o.next()
		if !ok {
			break
		}
		tail = m.valEnd
		key := obj[m.keyStart:m.keyEnd]
		switch {
		case keyIs(key, s.o.ArrivalField):
			dst = append(dst, obj[from:m.valStart]...)
			dst = s.appendArrival(dst, arrival)
			sawArr = true
		case withPart && keyIs(key, s.o.PartitionField):
			dst = append(dst, obj[from:m.valStart]...)
			dst = s.appendPartition(dst, partition)
			sawPart = true
		default:
			continue
		}
		from = m.valEnd
	}
	dst = append(dst, obj[from:tail]...)
	empty := o.n == 0
	if !sawArr {
		dst = appendKey(dst, s.o.ArrivalField, empty)
		dst = s.appendArrival(dst, arrival)
		empty = false
	}
	if withPart && !sawPart {
		dst = appendKey(dst, s.o.PartitionField, empty)
		dst = s.appendPartition(dst, partition)
	}
	return append(dst, obj[tail:]...)
}

func appendKey(dst []byte, name string, first bool) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = appendJSONString(dst, name)
	return append(dst, ':')
}

func (s *Simulator) appendArrival(dst []byte, ms int64) []byte {
	dst = append(dst, '"')
	dst = time.UnixMilli(ms).In(s.o.Zone).AppendFormat(dst, arrivalLayout)
	return append(dst, '"')
}

func (s *Simulator) appendPartition(dst []byte, p int) []byte {
	dst = append(dst, '"')
	dst = append(dst, s.names[p]...)
	return append(dst, '"')
}

// appendJSONString appends s as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

package perturb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// NoTime marks an event without an event time (its time field missing or
// unparsable): it is delivered once, at the horizon (see Queue).
const NoTime = int64(math.MinInt64)

// The second words of the PCG seeds: the first is Options.Seed. Conflicts
// draw from a stream of their own, so that turning them on leaves every
// other delivery where it was.
const (
	transportStream = 0x7469_6465_6d61_726b // "tidemark"
	conflictStream  = 0x636f_6e66_6c69_6374 // "conflict"
)

// Schedule is what a Scheduler decided for one record.
type Schedule struct {
	// Seq is the record's 0-based position in input order.
	Seq int64
	// Partition is the index of the record's partition.
	Partition int
	// Arrival is the first delivery's arrival time (ms), or NoTime for a
	// record without an event time, which the caller places at the
	// horizon (Queue.PushAtHorizon).
	Arrival int64
	// Straggler: the delay was drawn from [0, MaxDelay].
	Straggler bool
	// Offline: the record belongs to an offline burst; Arrival is the
	// burst's arrival.
	Offline bool
	// Redeliver: a byte-identical copy arrives at RedeliverAt.
	Redeliver   bool
	RedeliverAt int64
	// Conflict: a copy with the conflict field changed arrives at
	// ConflictAt, if the caller can change the field.
	Conflict   bool
	ConflictAt int64
}

// Scheduler decides, record by record in input order, when each record
// and its copies arrive and on which partition. It is the transport model
// shared by the Simulator and the file source's replay. It is
// deterministic: the same options and the same records (event times and
// keys) in the same order give the same schedules. It is pure (no clock,
// no IO) and not safe for concurrent use.
//
// For every record, with or without an event time, it draws from the
// transport generator exactly four values: whether the record straggles,
// its delay, whether it is redelivered, and the redelivery's extra delay;
// with ConflictFraction > 0, two more from the conflict generator: whether
// it conflicts and the conflicting copy's extra delay. A record's draws
// therefore never depend on another record's validity or key.
type Scheduler struct {
	rng       *rand.Rand
	pcg       *rand.PCG  // rng's source, for State
	crng      *rand.Rand // nil without conflicts
	cpcg      *rand.PCG
	seed      int64
	dist      Distribution
	delay     int64 // ms
	maxDelay  int64 // ms
	straggler float64
	redeliver float64
	conflict  float64
	parts     int
	offFrac   float64
	offDelay  int64            // ms
	offline   map[string]int64 // offline device → window start (ms)
	seq       int64
}

// NewScheduler returns a scheduler for o (defaults filled in). It returns
// *OptionError values (joined) for invalid scheduling options; the
// Simulator's output options (fields, zone) are not checked.
func NewScheduler(o Options) (*Scheduler, error) {
	o = o.withDefaults()
	if errs := o.validateSchedule(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	pcg := rand.NewPCG(uint64(o.Seed), transportStream)
	s := &Scheduler{
		rng:       rand.New(pcg),
		pcg:       pcg,
		seed:      o.Seed,
		dist:      o.Distribution,
		delay:     o.Delay.Milliseconds(),
		maxDelay:  o.MaxDelay.Milliseconds(),
		straggler: o.StragglerFraction,
		redeliver: o.RedeliverFraction,
		conflict:  o.ConflictFraction,
		parts:     o.Partitions,
		offFrac:   o.OfflineFraction,
		offDelay:  o.OfflineDelay.Milliseconds(),
	}
	if s.conflict > 0 {
		s.cpcg = rand.NewPCG(uint64(o.Seed), conflictStream)
		s.crng = rand.New(s.cpcg)
	}
	if s.offFrac > 0 {
		s.offline = map[string]int64{}
	}
	return s, nil
}

// PartitionNames returns "p0" … "pN-1".
func (s *Scheduler) PartitionNames() []string {
	names := make([]string, s.parts)
	for i := range names {
		names[i] = "p" + strconv.Itoa(i)
	}
	return names
}

// OfflineBursts returns how many devices have gone offline so far (each
// once, with at least its first event in the burst).
func (s *Scheduler) OfflineBursts() int { return len(s.offline) }

// Next schedules the next record: its event time (ms, or NoTime) and its
// partition key (hasKey false for none). key is not retained.
func (s *Scheduler) Next(et int64, key []byte, hasKey bool) Schedule {
	seq := s.seq
	s.seq++
	straggle := s.rng.Float64() < s.straggler
	var d int64
	switch {
	case straggle:
		d = s.rng.Int64N(s.maxDelay + 1)
	case s.dist == Exponential:
		d = s.expDelay(s.rng.Float64())
	default:
		d = s.rng.Int64N(s.delay + 1)
	}
	again := s.rng.Float64() < s.redeliver
	extra := s.rng.Int64N(s.maxDelay + 1)
	var conflict bool
	var cextra int64
	if s.crng != nil {
		conflict = s.crng.Float64() < s.conflict
		cextra = s.crng.Int64N(s.maxDelay + 1)
	}

	sc := Schedule{Seq: seq, Arrival: NoTime}
	if hasKey {
		sc.Partition = int(FNV1a(key) % uint32(s.parts))
	} else {
		sc.Partition = int(seq % int64(s.parts))
	}
	if et == NoTime {
		return sc
	}
	sc.Arrival = addSat(et, d)
	sc.Straggler = straggle
	if hasKey && s.offFrac > 0 {
		if at, ok := s.offlineArrival(et, key); ok {
			sc.Arrival, sc.Offline, sc.Straggler = at, true, false
		}
	}
	if again {
		sc.Redeliver, sc.RedeliverAt = true, addSat(sc.Arrival, extra)
	}
	if conflict {
		sc.Conflict, sc.ConflictAt = true, addSat(sc.Arrival, cextra)
	}
	return sc
}

// AppendState appends the scheduler's state (the records scheduled, the
// generators' states, the offline devices) to dst: with SetState on a
// scheduler built with the same options, the records after it get the
// same schedules as they would from this one.
func (s *Scheduler) AppendState(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, stateVersion)
	dst = binary.AppendVarint(dst, s.seq)
	dst = appendPCG(dst, s.pcg)
	dst = binary.AppendUvarint(dst, boolByte(s.cpcg != nil))
	if s.cpcg != nil {
		dst = appendPCG(dst, s.cpcg)
	}
	keys := make([]string, 0, len(s.offline))
	for k := range s.offline {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = binary.AppendUvarint(dst, uint64(len(keys)))
	for _, k := range keys {
		dst = binary.AppendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
		dst = binary.AppendVarint(dst, s.offline[k])
	}
	return dst
}

// stateVersion is the format of AppendState.
const stateVersion = 1

// ErrState is returned by SetState for a state that does not parse or
// does not fit the scheduler's options.
var ErrState = errors.New("perturb: invalid scheduler state")

// SetState restores a state AppendState wrote, on a scheduler built with
// the same options. It returns an error wrapping ErrState when b does
// not parse or was written with conflicts on and this scheduler has them
// off (or the reverse).
func (s *Scheduler) SetState(b []byte) error {
	bad := func(what string) error { return fmt.Errorf("%w: %s", ErrState, what) }
	v, n := binary.Uvarint(b)
	if n <= 0 || v != stateVersion {
		return bad(fmt.Sprintf("format version %d, this build reads %d", v, stateVersion))
	}
	b = b[n:]
	seq, n := binary.Varint(b)
	if n <= 0 || seq < 0 {
		return bad("record count")
	}
	b = b[n:]
	var err error
	if b, err = readPCG(b, s.pcg); err != nil {
		return bad(err.Error())
	}
	c, n := binary.Uvarint(b)
	if n <= 0 || c > 1 || (c == 1) != (s.cpcg != nil) {
		return bad("the conflict generator does not match conflict_fraction")
	}
	b = b[n:]
	if c == 1 {
		if b, err = readPCG(b, s.cpcg); err != nil {
			return bad(err.Error())
		}
	}
	k, n := binary.Uvarint(b)
	if n <= 0 || k > uint64(len(b)) {
		return bad("offline devices")
	}
	b = b[n:]
	if k > 0 && s.offline == nil {
		return bad("offline devices without offline bursts")
	}
	clear(s.offline)
	for range k {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return bad("offline device key")
		}
		key := string(b[n : n+int(l)])
		b = b[n+int(l):]
		at, n := binary.Varint(b)
		if n <= 0 {
			return bad("offline window")
		}
		b = b[n:]
		s.offline[key] = at
	}
	if len(b) != 0 {
		return bad(fmt.Sprintf("%d bytes after the state", len(b)))
	}
	s.seq = seq
	return nil
}

func appendPCG(dst []byte, p *rand.PCG) []byte {
	st, _ := p.MarshalBinary() // cannot fail
	dst = binary.AppendUvarint(dst, uint64(len(st)))
	return append(dst, st...)
}

func readPCG(b []byte, p *rand.PCG) ([]byte, error) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, errors.New("generator state")
	}
	if err := p.UnmarshalBinary(b[n : n+int(l)]); err != nil {
		return nil, err
	}
	return b[n+int(l):], nil
}

func boolByte(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// expDelay turns a uniform u in [0, 1) into an exponential delay with mean
// delay, rounded to whole ms and capped at maxDelay.
func (s *Scheduler) expDelay(u float64) int64 {
	d := math.Round(-float64(s.delay) * math.Log(1-u))
	if !(d < float64(s.maxDelay)) { // NaN too
		return s.maxDelay
	}
	return int64(d)
}

// offlineArrival returns the arrival of an event of key at et when key is
// an offline device and et lies in its offline window.
//
// Whether a device goes offline depends only on the seed and its key: a
// hash of both, as a number in [0, 1), below OfflineFraction. Its window
// is placed at its first event read: it starts a hash-chosen part of
// OfflineDelay before that event, so it always holds that event. Its
// events in [start, start + OfflineDelay) arrive together at the window's
// end plus one transport delay for the burst (also hash-chosen).
func (s *Scheduler) offlineArrival(et int64, key []byte) (int64, bool) {
	h := keyHash(s.seed, key)
	if unit(h) >= s.offFrac {
		return 0, false
	}
	start, ok := s.offline[string(key)]
	if !ok {
		back := min(int64(unit(mix(h+1))*float64(s.offDelay)), max(s.offDelay-1, 0))
		start = subSat(et, back)
		s.offline[string(key)] = start
	}
	if et < start || uint64(et)-uint64(start) >= uint64(s.offDelay) {
		return 0, false
	}
	u := unit(mix(h + 2))
	var b int64
	if s.dist == Exponential {
		b = s.expDelay(u)
	} else {
		b = min(int64(u*float64(s.delay+1)), s.delay)
	}
	return addSat(addSat(start, s.offDelay), b), true
}

// keyHash hashes the seed and a key: FNV-1a (64-bit) of the seed's eight
// little-endian bytes and the key, then mixed.
func keyHash(seed int64, key []byte) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	for _, c := range key {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return mix(h)
}

// mix is splitmix64's finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// unit maps x to [0, 1) exactly (53 bits).
func unit(x uint64) float64 { return float64(x>>11) / (1 << 53) }

// FNV1a is the 32-bit FNV-1a hash of b: a partition key's hash.
func FNV1a(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

// addSat returns a+b (b ≥ 0), saturating at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// subSat returns a-b (b ≥ 0), saturating above NoTime.
func subSat(a, b int64) int64 {
	if a < math.MinInt64+1+b {
		return math.MinInt64 + 1
	}
	return a - b
}

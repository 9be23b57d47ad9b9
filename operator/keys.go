package operator

import (
	"slices"

	"encoding/binary"
	"github.com/tidemark/tidemark/keygroup"
	"math"
	"unsafe"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/u64map"
)

// decodeKey turns an encoded key back into values; string values are
// substrings of enc (which the key table owns), so they cost no copy.
func decodeKey(enc string, fields []row.Field) []row.Value {
	vals := make([]row.Value, len(fields))
	decodeKeyInto(vals, enc, fields)
	return vals
}

// decodeKeyInto decodes encoded key enc into vals (len(fields) values).
func decodeKeyInto(vals []row.Value, enc string, fields []row.Field) {
	p := 0
	for i, f := range fields {
		tag := enc[p]
		p++
		switch tag {
		case 0:
			vals[i] = row.Null
		case 1:
			v := int64(binary.BigEndian.Uint64([]byte(enc[p : p+8])))
			p += 8
			vals[i] = row.Value{Kind: f.Kind, I: v}
		case 2, 3:
			n, w := binary.Uvarint([]byte(enc[p:min(len(enc), p+binary.MaxVarintLen64)]))
			p += w
			s := enc[p : p+int(n)]
			p += int(n)
			if tag == 2 {
				vals[i] = row.Str(s)
			} else {
				d, err := row.ParseDecimal([]byte(s))
				if err != nil {
					vals[i] = row.Null
				} else {
					vals[i] = row.Dec(d)
				}
			}
		}
	}
}

// AppendKeyValue appends the encoding of one key value v, the same bytes
// AppendKey writes for a field holding v (a null, an int-like value, a
// string, a decimal): so a key computed by an expression (a join's
// computed key) meets the same key read from a field.
func AppendKeyValue(dst []byte, v row.Value) []byte {
	switch {
	case v.IsNull():
		return append(dst, 0)
	case v.Kind == row.KindString:
		dst = append(dst, 2)
		dst = binary.AppendUvarint(dst, uint64(len(v.S)))
		return append(dst, v.S...)
	case v.Kind == row.KindDecimal:
		s := v.D.String()
		dst = append(dst, 3)
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		return append(dst, s...)
	default:
		dst = append(dst, 1)
		return binary.BigEndian.AppendUint64(dst, uint64(v.I))
	}
}

// AppendKey appends the encoding of the group key of r made of fields,
// field after field: a kind tag and the value (null 0x00; int, bool, time
// 0x01 + 8 bytes big endian; string 0x02 + uvarint length + bytes; decimal
// 0x03 + length + trimmed text, so 2.0 and 2.00 are one key). A key's key
// group is keygroup.OfKey of its encoding; a runner routing records to the
// task that owns their key group encodes the key the same way.
//
// The fields are written in one loop, without a call per field: an int,
// bool or time field takes one append of its nine bytes. For a key of
// eight columns (Nexmark q9's; BenchmarkWideKey) the window operator's
// per-row key path takes 30 % fewer instructions than with a call per
// field.
func AppendKey(dst []byte, r *row.Row, fields []row.Field) []byte {
	for i := range fields {
		f := &fields[i]
		if r.IsNull(f.Index) {
			dst = append(dst, 0)
			continue
		}
		switch f.Kind {
		case row.KindString:
			s := r.S[f.Slot]
			dst = append(dst, 2)
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			dst = append(dst, s...)
		case row.KindDecimal:
			t := r.D[f.Slot].String()
			dst = append(dst, 3)
			dst = binary.AppendUvarint(dst, uint64(len(t)))
			dst = append(dst, t...)
		default:
			v := uint64(r.I[f.Slot])
			dst = append(dst, 1, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
		}
	}
	return dst
}

// keyEntry is one distinct group key.
type keyEntry struct {
	// enc is the encoded key (map key). Its values are decoded when a row
	// needs them (keyTable.values, Operator.rowKey), not kept per key: a
	// key table of 600,000 one-int keys held 88 bytes more per key.
	enc    string
	refs   int32  // (window, key) instances holding the key, and its closed-session memory
	idle   bool   // refs == 0 and not yet freed (see keyTable.sweep)
	listed bool   // scratch of turnedIdle's compaction
	group  uint16 // key group
	// keyExtra holds the fields of session windows and unsliced sliding
	// windows (keyTable.extra), nil in other operators: a key entry of a
	// tumbling or sliced operator is 32 bytes, not 96.
	*keyExtra
}

// keyExtra is the part of a key entry that session windows and unsliced
// sliding windows use.
type keyExtra struct {
	sessions []*session // open sessions of this key, by start (session windows)
	// one backs sessions while the key has at most one open session (see
	// reserveSessions): the common case then reads its session's pointer
	// from this struct, which the lookup has just loaded, instead of from
	// an array of its own elsewhere in the heap — one cache miss fewer per
	// event of a key whose state is not in cache (Nexmark q11).
	one [1]*session
	// closedEnd is the largest end of the key's closed sessions while
	// closedHeld (session windows): an event at or before it would merge
	// into a closed session and is too late (sessions.go, rememberClosed).
	// The memory holds one of refs.
	closedEnd  int64
	maxVer     uint32 // highest version a dropped session of this key reached
	closedHeld bool
	// panes are the key's entries in open sliding-window panes (paneStore
	// multi), found by a short scan instead of a map lookup per pane.
	panes []paneRef
}

// reserveSessions makes room for n more open sessions, backing the list
// by the inline array one while it holds at most one.
func (x *keyExtra) reserveSessions(n int) {
	switch {
	case cap(x.sessions) == 0 && n <= 1:
		x.sessions = x.one[:0]
	case cap(x.sessions)-len(x.sessions) < n:
		x.sessions = append(make([]*session, 0, len(x.sessions)+max(n, len(x.sessions))), x.sessions...)
	}
}

// version returns the highest version a dropped session of the key
// reached (0 without keyExtra).
func (e *keyEntry) version() uint32 {
	if e.keyExtra == nil {
		return 0
	}
	return e.maxVer
}

// open returns the key's open sessions (nil without keyExtra).
func (e *keyEntry) open() []*session {
	if e.keyExtra == nil {
		return nil
	}
	return e.sessions
}

// held reports whether the key holds a closed session's memory
// (closedHeld; false without keyExtra).
func (e *keyEntry) held() bool { return e.keyExtra != nil && e.closedHeld }

// paneRef locates a key's entry in the pane ending at end (a pane's end
// names it: windows of one start may differ in end, cumulate windows).
type paneRef struct {
	end int64
	idx int32
}

// keyTable interns group keys to dense ids. A key no window holds is idle:
// it is kept (a stable key set, such as stores, re-enters every window and
// should not be re-interned each time) and freed by sweep once idle keys
// outnumber live ones, so memory stays within twice the live keys.
type keyTable struct {
	ids map[string]uint32
	// ints holds instead of ids the keys of one int, bool or time field
	// that is not null (a 9-byte encoding: tag 1 and the value), by
	// value: a table of 64-bit keys (u64map) hashes and compares without
	// touching the key's bytes (Nexmark's auction and bidder ids).
	ints   u64map.Map[uint32]
	intKey bool // the key is one int, bool or time field: ints is used
	// extra gives every key entry its keyExtra (session windows, unsliced
	// sliding windows).
	extra  bool
	ents   chunkVec[keyEntry]
	free   []uint32
	fields []row.Field
	groups int
	idle   int // keys with refs == 0 still in ids
	// encBytes is the bytes of the encoded keys in ids (bytes, perKey).
	encBytes int64

	// perGroup sweeps each key group on its own (session windows): an idle
	// key still holds the version its next session continues from, so
	// whether it is freed must depend on its key group's history alone,
	// not on which other key groups share the operator (a task).
	perGroup  bool
	idleIn    []int32    // per key group: idle keys
	liveIn    []int32    // per key group: keys with refs > 0
	idleList  [][]uint32 // per key group: keys that turned idle since its last sweep (some live again)
	pending   []int      // key groups due for a sweep, in the order they came due
	isPending []bool
}

func newKeyTable(fields []row.Field, groups int) *keyTable {
	k := &keyTable{ids: map[string]uint32{}, fields: fields, groups: groups}
	if len(fields) == 1 && fields[0].Kind != row.KindString && fields[0].Kind != row.KindDecimal {
		k.intKey = true
	}
	return k
}

// ent returns key id's entry (id < ents.len()).
func (k *keyTable) ent(id uint32) *keyEntry { return k.ents.at(int(id)) }

// intOf reports whether enc is an int key's encoding held in ints, and
// its value.
func (k *keyTable) intOf(enc string) (uint64, bool) {
	if !k.intKey || len(enc) != 9 || enc[0] != 1 {
		return 0, false
	}
	return binary.BigEndian.Uint64([]byte(enc[1:])), true
}

// get returns the id of encoded key enc.
func (k *keyTable) get(enc string) (uint32, bool) {
	if v, ok := k.intOf(enc); ok {
		return k.ints.Get(v)
	}
	id, ok := k.ids[enc]
	return id, ok
}

// set records id as encoded key enc's.
func (k *keyTable) set(enc string, id uint32) {
	if v, ok := k.intOf(enc); ok {
		k.ints.Put(v, id)
		return
	}
	k.ids[enc] = id
	k.encBytes += int64(len(enc))
}

// del forgets encoded key enc.
func (k *keyTable) del(enc string) {
	if v, ok := k.intOf(enc); ok {
		k.ints.Delete(v)
		return
	}
	delete(k.ids, enc)
	k.encBytes -= int64(len(enc))
}

// values returns a new copy of key id's values (for errors and reports).
func (k *keyTable) values(id uint32) []row.Value { return decodeKey(k.ent(id).enc, k.fields) }

// count returns the number of keys held.
func (k *keyTable) count() int { return len(k.ids) + k.ints.Len() }

// groupFloor is the number of idle keys a key group may hold before a
// sweep frees them (when they also outnumber its live keys): the 1024 of
// the whole-table sweep spread over the key groups.
func (k *keyTable) groupFloor() int32 { return int32(max(1, 1024/max(k.groups, 1))) }

// initGroups sizes the per-key-group counters (perGroup).
func (k *keyTable) initGroups() {
	k.idleIn = make([]int32, k.groups)
	k.liveIn = make([]int32, k.groups)
	k.idleList = make([][]uint32, k.groups)
	k.isPending = make([]bool, k.groups)
	k.pending = k.pending[:0]
}

// lookup returns the id of an encoded key if it is known.
func (k *keyTable) lookup(enc []byte) (uint32, bool) {
	if k.intKey && len(enc) == 9 && enc[0] == 1 {
		return k.ints.Get(binary.BigEndian.Uint64(enc[1:]))
	}
	id, ok := k.ids[string(enc)] // no allocation: the compiler optimizes map[string(b)]
	return id, ok
}

// intern returns the id of an encoded key, adding it when new.
func (k *keyTable) intern(enc []byte) uint32 {
	if id, ok := k.lookup(enc); ok {
		return id
	}
	s := string(enc)
	e := keyEntry{enc: s}
	if k.extra {
		e.keyExtra = &keyExtra{}
	}
	if k.groups > 0 {
		e.group = uint16(keygroup.OfKey(enc, k.groups))
	}
	if k.perGroup {
		if k.idleIn == nil {
			k.initGroups()
		}
		k.liveIn[e.group]++ // about to be referenced
	}
	var id uint32
	if n := len(k.free); n > 0 {
		id = k.free[n-1]
		k.free = k.free[:n-1]
		*k.ent(id) = e
	} else {
		if k.ents.len() >= math.MaxUint32 {
			panic("tidemark: more than 2^32 live keys") // invariant: state larger than memory long before
		}
		id = uint32(k.ents.len())
		k.ents.add(e)
	}
	k.set(s, id)
	return id
}

// ref and unref count the (window, key) instances holding a key; a key
// whose count drops to zero turns idle.
func (k *keyTable) ref(id uint32) {
	e := k.ent(id)
	if e.idle {
		e.idle = false
		k.idle--
		if k.perGroup {
			k.idleIn[e.group]--
			k.liveIn[e.group]++
		}
	}
	e.refs++
}

func (k *keyTable) unref(id uint32) {
	e := k.ent(id)
	e.refs--
	if e.refs == 0 {
		e.idle = true
		k.idle++
		if k.perGroup {
			k.turnedIdle(id, e.group)
		}
	}
}

// turnedIdle counts key id of group g as idle and schedules the group's
// sweep when its idle keys exceed the floor and its live keys.
func (k *keyTable) turnedIdle(id uint32, g uint16) {
	k.idleIn[g]++
	k.liveIn[g]--
	l := append(k.idleList[g], id)
	if len(l) > 4*int(k.idleIn[g]+k.liveIn[g])+64 {
		// Keys flapping between idle and live: keep each idle key once.
		n := 0
		for _, x := range l {
			if e := k.ent(x); e.idle && e.group == g && !e.listed {
				e.listed = true
				l[n] = x
				n++
			}
		}
		l = l[:n]
		for _, x := range l {
			k.ent(x).listed = false
		}
	}
	k.idleList[g] = l
	if !k.isPending[g] && k.idleIn[g] > k.groupFloor() && k.idleIn[g] > k.liveIn[g] {
		k.isPending[g] = true
		k.pending = append(k.pending, int(g))
	}
}

// sweep frees idle keys when they outnumber live ones. Freed ids are reused
// in ascending order, so the table evolves the same way in every run. With
// perGroup it frees the idle keys of each key group due for a sweep,
// calling changed for it (its state changed: the keys and their versions
// are gone).
func (k *keyTable) sweep(changed func(g int)) {
	if k.perGroup {
		k.sweepGroups(changed)
		return
	}
	if k.idle <= 1024 || k.idle <= k.count()-k.idle {
		return
	}
	for id := range uint32(k.ents.len()) {
		e := k.ent(id)
		if !e.idle {
			continue
		}
		k.del(e.enc)
		*e = keyEntry{}
		k.free = append(k.free, uint32(id))
	}
	// Reuse low ids first.
	for i, j := 0, len(k.free)-1; i < j; i, j = i+1, j-1 {
		k.free[i], k.free[j] = k.free[j], k.free[i]
	}
	k.idle = 0
}

// sweepGroups frees the idle keys of the key groups due for a sweep, in
// ascending group order.
func (k *keyTable) sweepGroups(changed func(g int)) {
	if len(k.pending) == 0 {
		return
	}
	slices.Sort(k.pending)
	first := len(k.free)
	for _, g := range k.pending {
		k.isPending[g] = false
		for _, id := range k.idleList[g] {
			e := k.ent(id)
			if !e.idle || int(e.group) != g || !k.holds(id) {
				continue // live again, or listed twice and freed already
			}
			k.del(e.enc)
			*e = keyEntry{}
			k.free = append(k.free, id)
			k.idle--
			k.idleIn[g]--
		}
		k.idleList[g] = k.idleList[g][:0]
		changed(g)
	}
	k.pending = k.pending[:0]
	// Reuse low ids first (the free list is a stack).
	nf := k.free[first:]
	slices.Sort(nf)
	slices.Reverse(nf)
}

// live returns the number of keys held by at least one window.
func (k *keyTable) live() int { return k.count() - k.idle }

// bytes estimates the key table's heap bytes (in constant time: the
// encoded keys' bytes are counted as keys come and go).
func (k *keyTable) bytes() int64 {
	n := k.encBytes*2 + int64(len(k.ids))*48     // enc in map and entry, map overhead
	n += int64(k.ints.Len())*16 + k.ints.Bytes() // the entry's 9-byte encoding, the table's cells
	per := int64(unsafe.Sizeof(keyEntry{}))      // 32 bytes on amd64; values decoded per row, not kept
	if k.extra {
		per += int64(unsafe.Sizeof(keyExtra{})) // 72 bytes: session windows, unsliced sliding windows
	}
	n += int64(k.ents.len()) * per

	return n
}

// perKey estimates a key's share of the key table's bytes (bytes over
// the keys held; defaultKeyBytes when it holds none): what a pane or
// slice entry of a key not held elsewhere costs beside its own bytes.
func (k *keyTable) perKey() int {
	n := k.count()
	if n == 0 {
		return defaultKeyBytes
	}
	return int(k.bytes() / int64(n))
}

// defaultKeyBytes is perKey of an empty key table: a short key's entry,
// its string and its map entry.
const defaultKeyBytes = 64

// KeyState is one group key's share of an operator's state.
type KeyState struct {
	Key     string // the key's values as text, joined with "|"
	Entries int    // (window, key) instances holding it
	Bytes   int64  // estimated heap bytes: its instances' entries and accumulators, and the key
}

// TopKeys returns up to n keys holding the most (window, key) instances,
// most first, ties by key text: the hot keys. It walks every key: call it
// for reports, not per record.
func (o *Operator) TopKeys(n int) []KeyState {
	if n <= 0 {
		return nil
	}
	per := int64(entryBytes) + int64(o.slots.slotBytes())
	var top []KeyState
	less := func(a, b KeyState) bool { // a ranks below b
		if a.Entries != b.Entries {
			return a.Entries < b.Entries
		}
		return a.Key > b.Key
	}
	for i := range uint32(o.keys.ents.len()) {
		e := o.keys.ent(i)
		if e.refs <= 0 {
			continue
		}
		ks := KeyState{Entries: int(e.refs)}
		if len(top) == n && !less(top[n-1], ks) {
			continue
		}
		var b []byte
		for j, v := range decodeKey(e.enc, o.keys.fields) {
			if j > 0 {
				b = append(b, '|')
			}
			b = v.AppendText(b, nil)
		}
		ks.Key = string(b)
		ks.Bytes = int64(e.refs)*per + int64(len(e.enc))
		if len(top) == n && !less(top[n-1], ks) {
			continue
		}
		// Insert in order (n is small).
		pos := len(top)
		for pos > 0 && less(top[pos-1], ks) {
			pos--
		}
		top = append(top, KeyState{})
		copy(top[pos+1:], top[pos:])
		top[pos] = ks
		if len(top) > n {
			top = top[:n]
		}
	}
	return top
}

// dropPane removes key id's reference to the pane ending at end (a
// closing pane; usually the key's oldest).
func (k *keyTable) dropPane(id uint32, end int64) {
	e := k.ent(id)
	for i, r := range e.panes {
		if r.end == end {
			e.panes = append(e.panes[:i], e.panes[i+1:]...)
			return
		}
	}
}

// rebuildGroups recomputes the per-key-group counters and idle lists from
// the keys' reference counts (after a restore). Idle keys are listed in id
// order.
func (k *keyTable) rebuildGroups() {
	if !k.perGroup || k.groups <= 0 {
		return
	}
	k.initGroups()
	for id := range uint32(k.ents.len()) {
		e := k.ent(id)
		if !k.holds(uint32(id)) {
			continue
		}
		switch {
		case e.refs > 0:
			k.liveIn[e.group]++
		case e.idle:
			k.idleIn[e.group]++
			k.idleList[e.group] = append(k.idleList[e.group], uint32(id))
		}
	}
	for g := range k.idleIn {
		if k.idleIn[g] > k.groupFloor() && k.idleIn[g] > k.liveIn[g] {
			k.isPending[g] = true
			k.pending = append(k.pending, g)
		}
	}
}

// holds reports whether id is a key's id (not a freed one). A key without
// fields encodes to "", so an entry's encoding alone cannot tell.
func (k *keyTable) holds(id uint32) bool {
	x, ok := k.get(k.ent(id).enc)
	return ok && x == id
}

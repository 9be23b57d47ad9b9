package operator

import (
	"sort"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/window"
)

// session is one session window of one key.
type session struct {
	inst
	w     window.Window // [first event, last event + gap)
	fired bool
	dead  bool
	// fireArmed and closeArmed: a fire (close) timer of the session is
	// in the heap. It may be for an end the session has since grown
	// past: when it comes due it is pushed again for the current end
	// (schedule), so the heap holds at most one timer of each kind per
	// session instead of one per growth.
	fireArmed, closeArmed bool
	seq                   uint64 // creation order, for deterministic ordering
}

// timer kinds: at equal times a fire precedes a close, and a close the
// end of a key's closed-session memory.
const (
	timerFire   = 0
	timerClose  = 1
	timerForget = 2 // key's closed-session memory may end (no session; s nil)
)

// timer is one entry of the timer heap: 32 bytes (kind after the 8-byte
// fields, where it shares a word with key; 40 with kind second), so that
// a heap of a session's fire and close timers for every open session —
// q11 closes all of its sessions at the end of the input — touches a
// fifth fewer cache lines per sift.
type timer struct {
	at   int64
	ord  uint64 // the session's seq; canonical: key group << 48 | seq
	s    *session
	key  uint32 // timerForget: the key
	kind uint8
}

// timerHeap is a binary min-heap of timers by (at, kind, ord), with typed
// push and pop (container/heap's take an interface value: an allocation
// per push).
type timerHeap []timer

func (h timerHeap) less(i, j int) bool {
	a, b := &h[i], &h[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.ord < b.ord
}

// push adds t.
func (h *timerHeap) push(t timer) {
	*h = append(*h, t)
	q := *h
	for j := len(q) - 1; j > 0; {
		i := (j - 1) / 2
		if !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

// pop removes and returns the least timer (h not empty).
func (h *timerHeap) pop() timer {
	q := *h
	n := len(q) - 1
	t := q[0]
	q[0] = q[n]
	q[n] = timer{} // drop the session pointer
	q = q[:n]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if k := j + 1; k < n && q.less(k, j) {
			j = k
		}
		if !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	*h = q
	return t
}

// sessionStore holds the session timers; the sessions themselves hang off
// their key's entry, sorted by start.
type sessionStore struct {
	timers timerHeap
	seq    uint64
	live   int
	keys   *keyTable
}

// all returns the live sessions ordered by (end, start, creation), with
// OrderGroup by (end, start, key group, creation), with OrderBirth by
// (end, start, birth).
func (ss *sessionStore) all(order Order) []*session {
	var out []*session
	if ss.keys == nil {
		return nil
	}
	for i := range uint32(ss.keys.ents.len()) {
		out = append(out, ss.keys.ent(i).open()...)
	}
	if order == OrderBirth {
		sort.Slice(out, func(i, j int) bool {
			a, b := out[i], out[j]
			if a.w != b.w {
				return sessionLess(a, b)
			}
			return a.birth < b.birth
		})
		return out
	}
	if order == OrderGroup {
		keys := ss.keys
		sort.Slice(out, func(i, j int) bool {
			a, b := out[i], out[j]
			if a.w != b.w {
				return sessionLess(a, b)
			}
			if ga, gb := keys.ent(a.key).group, keys.ent(b.key).group; ga != gb {
				return ga < gb
			}
			return a.seq < b.seq
		})
		return out
	}
	sort.Slice(out, func(i, j int) bool { return sessionLess(out[i], out[j]) })
	return out
}

func sessionLess(a, b *session) bool {
	if a.w.End != b.w.End {
		return a.w.End < b.w.End
	}
	if a.w.Start != b.w.Start {
		return a.w.Start < b.w.Start
	}
	return a.seq < b.seq
}

func (o *Operator) schedule(s *session) {
	ord := s.seq
	switch o.cfg.Order {
	case OrderGroup:
		ord |= uint64(s.group) << 48
	case OrderBirth:
		ord = s.birth
	}
	if !s.fired && !s.fireArmed {
		o.sess.timers.push(timer{at: s.w.End, kind: timerFire, ord: ord, s: s})
		s.fireArmed = true
	}
	if !s.closeArmed {
		o.sess.timers.push(timer{at: s.w.End + o.lateness, kind: timerClose, ord: ord, s: s})
		s.closeArmed = true
	}
}

// Closed sessions (docs/semantics.md, "Session windows of one key never
// overlap"). Once a session of key k has closed, an event of k that would
// merge into it is too late, like any event whose windows have closed,
// rather than the start of a second session overlapping the closed one.
// Sessions of one key are disjoint and close in the order of their ends,
// so every session of k ending at or before the largest closed end E(k)
// is closed, and every open one starts after E(k): an event at t ≤ E(k)
// either touches a closed session (its proto-window [t, t+gap) reaches
// back to one) or falls into a gap between closed sessions, where its
// own window has closed too and only a bridge to an open session could
// save it — but every such bridge passes the last closed session first.
// So "too late for key k" is exactly t ≤ E(k), and the operator keeps the
// single number E(k) per key.
//
// E(k) is kept while k has an open session (which a late event could
// extend back to the closed ones) and until the watermark passes E(k) +
// 2·gap + allowed lateness: by then no event at or before E(k) has an
// open window of its own (that needs E(k) + gap + lateness), and no new
// session can start within a gap of E(k) and be reached from it (a
// session started after that watermark starts after E(k) + gap). Only a
// chain of late events, each too late on its own and saved by merging
// into the previous one, could still reach a forgotten E(k).

// forgetAt is when a key's closed-session memory ending at end may go.
func (o *Operator) forgetAt(end int64) int64 { return end + 2*o.cfg.Gap + o.lateness }

// rememberClosed records that a session of key id ending at end closed,
// and schedules the end of the memory.
func (o *Operator) rememberClosed(id uint32, end int64) {
	ke := o.keys.ent(id)
	if !ke.closedHeld {
		ke.closedHeld, ke.closedEnd = true, end
		o.keys.ref(id)
		ke = o.keys.ent(id)
	} else {
		ke.closedEnd = max(ke.closedEnd, end)
	}
	o.markChanged(int(ke.group))
	o.scheduleForget(id)
}

// scheduleForget pushes the timer that ends key id's closed-session
// memory.
func (o *Operator) scheduleForget(id uint32) {
	ke := o.keys.ent(id)
	o.sess.timers.push(timer{at: o.forgetAt(ke.closedEnd), kind: timerForget, ord: uint64(ke.group) << 48, key: id})
}

// restoreForget schedules, after a restore, the end of key id's
// closed-session memory as the running operator had it: a timer for a
// memory not yet due; none for one that came due while the key had an
// open session (its close or drop schedules again).
func (o *Operator) restoreForget(id uint32) {
	ke := o.keys.ent(id)
	if o.forgetAt(ke.closedEnd) > o.wm || len(ke.sessions) == 0 {
		o.scheduleForget(id)
	}
}

// forget ends key id's closed-session memory when it is due and the key
// has no open session; it reports whether it did.
func (o *Operator) forget(id uint32) bool {
	ke := o.keys.ent(id)
	if !ke.closedHeld || len(ke.sessions) > 0 || o.forgetAt(ke.closedEnd) > o.wm {
		return false
	}
	ke.closedHeld, ke.closedEnd = false, 0
	o.markChanged(int(ke.group))
	o.keys.unref(id)
	return true
}

// firstReaching returns the index of the first session of list (a key's
// open sessions: disjoint, by start, so their ends grow too) whose end is
// at or after t, or len(list). A short list is scanned from its end — an
// event mostly reaches the key's last session, one comparison for a key
// with one session — and a longer one searched by halves.
func firstReaching(list []*session, t int64) int {
	if len(list) > 8 {
		return sort.Search(len(list), func(i int) bool { return list[i].w.End >= t })
	}
	lo := len(list)
	for lo > 0 && list[lo-1].w.End >= t {
		lo--
	}
	return lo
}

// closedBefore reports whether an event of key id at ts would merge into
// one of the key's closed sessions (ts ≤ E(k)).
func (o *Operator) closedBefore(id uint32, ts int64) bool {
	ke := o.keys.ent(id)
	return ke.closedHeld && ts <= ke.closedEnd
}

func (o *Operator) processSession(r *row.Row, ts int64, weight int) (Outcome, error) {
	id, known := o.keys.lookup(o.keyBuf)
	if weight < 0 {
		if !known {
			return RetractMissing, nil
		}
		for _, s := range o.keys.ent(id).open() {
			if !s.w.Contains(ts) {
				continue
			}
			if o.closed(s.w.End) {
				// Closed under a smaller allowed lateness than the
				// snapshot's (a restore): its close timer fires at the
				// next advance.
				return RetractTooLate, nil
			}
			if err := o.slots.check(s.slot, r, -1); err != nil {
				return OnTime, &RejectError{Err: err, Window: s.w, Key: o.keys.values(id)}
			}
			o.markChanged(int(o.keys.ent(id).group))
			if err := o.slots.apply(s.slot, r, -1); err != nil {
				return OnTime, err
			}
			s.rows--
			s.dirty = true
			late := s.fired
			if s.rows <= 0 {
				o.emitDelete(&s.inst)
				o.dropSession(s)
				if !o.forget(id) && o.keys.ent(id).held() && len(o.keys.ent(id).open()) == 0 {
					o.scheduleForget(id) // its last session is gone: the memory may end on time
				}
			} else if s.fired {
				o.emit(&s.inst, s.w, fireLate)
			}
			if late {
				return LateAccepted, nil
			}
			return OnTime, nil
		}
		if o.closedBefore(id, ts) {
			return RetractTooLate, nil
		}
		return RetractMissing, nil
	}
	if known && o.closedBefore(id, ts) {
		return TooLate, nil
	}

	proto := window.Window{Start: ts, End: ts + o.cfg.Gap}
	var list []*session
	if known {
		list = o.keys.ent(id).open()
	}
	// Sessions of a key are disjoint and sorted by start; the ones that
	// intersect (or touch) the proto-window form a run [lo, hi).
	lo := firstReaching(list, proto.Start)
	hi := lo
	for hi < len(list) && list[hi].w.Start <= proto.End {
		hi++
	}
	if lo == hi {
		if o.closed(proto.End) {
			return TooLate, nil
		}
		if !known {
			id = o.keys.intern(o.keyBuf)
		}
		o.markChanged(int(o.keys.ent(id).group))
		// A new session continues the key's versions, so that no row it
		// emits can look older than a row a dropped session of the key
		// emitted (or deleted) under the same window start.
		s := &session{inst: inst{key: id, slot: o.slots.alloc(), version: o.keys.ent(id).maxVer, group: o.keys.ent(id).group, birth: o.step}, w: proto, fired: o.firedAt(proto.End), seq: o.sess.seq}
		o.sess.seq++
		o.sess.live++
		o.keys.ref(id)
		ke := o.keys.ent(id)
		ke.reserveSessions(1)
		ke.sessions = append(ke.sessions, nil)
		copy(ke.sessions[lo+1:], ke.sessions[lo:])
		ke.sessions[lo] = s
		if err := o.slots.apply(s.slot, r, 1); err != nil {
			return OnTime, err
		}
		s.rows, s.dirty = 1, true
		o.schedule(s)
		if s.fired {
			o.emit(&s.inst, s.w, fireLate)
			return LateAccepted, nil
		}
		return OnTime, nil
	}

	if o.closed(list[lo].w.End) {
		// A session closed under a smaller allowed lateness than the
		// snapshot's (a restore), not yet dropped: the earliest of the run
		// (ends grow with starts) is the one that can be.
		return TooLate, nil
	}
	if len(o.slots.chk) > 0 {
		if err := o.checkSessions(r, list[lo:hi]); err != nil {
			return OnTime, &RejectError{Err: err, Window: proto, Key: o.keys.values(id)}
		}
	}
	o.markChanged(int(o.keys.ent(id).group))
	// The event's proto-window and the run's sessions merge into the
	// first of them; mostly the run is that one session (an event
	// extending its key's session), so the others are visited only when
	// there are others.
	target := list[lo]
	merged := window.Window{Start: min(proto.Start, target.w.Start), End: max(proto.End, target.w.End)}
	wasFired := target.fired
	maxVer := target.version
	if hi-lo > 1 {
		for _, s := range list[lo+1 : hi] {
			merged.Start = min(merged.Start, s.w.Start)
			merged.End = max(merged.End, s.w.End)
			wasFired = wasFired || s.fired
		}
		// Absorb the other sessions: their live rows are withdrawn, their
		// state merges into the target.
		for _, s := range list[lo+1 : hi] {
			o.emitDelete(&s.inst)
			if err := o.slots.merge(target.slot, s.slot); err != nil {
				return OnTime, err
			}
			target.rows += s.rows
			maxVer = max(maxVer, s.version)
			o.slots.release(s.slot)
			s.slot, s.dead = -1, true
			o.keys.ent(id).refs--
			o.sess.live--
		}
		ke := o.keys.ent(id)
		n := copy(ke.sessions[lo+1:], ke.sessions[hi:])
		clear(ke.sessions[lo+1+n:])
		ke.sessions = ke.sessions[:lo+1+n]
		target.dirty = true
	}
	// A row is identified downstream by (window_start, key): when the start
	// moves, the old row is withdrawn and the merged session emits anew.
	if target.emitted && target.emitW.Start != merged.Start {
		o.emitDelete(&target.inst)
	}
	target.version = max(target.version, maxVer)
	grew := merged != target.w
	target.w = merged
	if err := o.slots.apply(target.slot, r, 1); err != nil {
		return OnTime, err
	}
	target.rows++
	target.dirty = true
	target.fired = o.firedAt(merged.End)
	if grew {
		o.schedule(target)
	}
	if target.fired {
		o.emit(&target.inst, target.w, fireLate)
	}
	if wasFired {
		return LateAccepted, nil
	}
	return OnTime, nil
}

// checkSessions refuses a record whose merge with the sessions it joins
// would make an aggregate fail: it tries the merge and the add on a scratch
// slot.
func (o *Operator) checkSessions(r *row.Row, join []*session) error {
	if len(join) == 1 {
		return o.slots.check(join[0].slot, r, 1)
	}
	tmp := o.slots.alloc()
	defer o.slots.release(tmp)
	for _, s := range join {
		for _, c := range o.slots.chk {
			if err := c.CheckMerge(tmp, s.slot); err != nil {
				return err
			}
		}
		if err := o.slots.merge(tmp, s.slot); err != nil {
			return err
		}
	}
	return o.slots.check(tmp, r, 1)
}

// dropSession removes a session and releases its slot and key reference.
func (o *Operator) dropSession(s *session) {
	ke := o.keys.ent(s.key)
	o.markChanged(int(ke.group))
	ke.maxVer = max(ke.maxVer, s.version)
	for i, x := range ke.sessions {
		if x == s {
			copy(ke.sessions[i:], ke.sessions[i+1:])
			ke.sessions[len(ke.sessions)-1] = nil
			ke.sessions = ke.sessions[:len(ke.sessions)-1]
			break
		}
	}
	o.slots.release(s.slot)
	s.slot, s.dead = -1, true
	o.sess.live--
	o.keys.unref(s.key)
}

// advanceSessions fires and closes the sessions whose timers the
// watermark has passed, and returns true when it stopped because limit
// rows are pending (call again to go on).
func (o *Operator) advanceSessions(limit int) bool {
	h := &o.sess.timers
	for len(*h) > 0 && (*h)[0].at <= o.wm {
		if len(o.out) >= limit {
			return true
		}
		t := h.pop()
		if t.kind == timerForget {
			// Stale when the memory grew (a later close pushed a later
			// timer) or ended; kept while the key has an open session
			// (its close or drop schedules again).
			if int(t.key) < o.keys.ents.len() && o.keys.ent(t.key).held() && t.at == o.forgetAt(o.keys.ent(t.key).closedEnd) {
				o.forget(t.key)
			}
			continue
		}
		s := t.s
		if s.dead {
			continue
		}
		o.ordA, o.ordB, o.ordC = t.at, int64(t.kind), s.birth
		switch t.kind {
		case timerFire:
			s.fireArmed = false
			if t.at != s.w.End || s.fired {
				// Stale: the session grew (or fired late). Armed again
				// for its end, which comes at its place in the heap's
				// order as a timer pushed when it grew would.
				o.schedule(s)
				continue
			}
			s.fired = true
			o.markChanged(int(s.group))
			if !o.closed(s.w.End) {
				o.emit(&s.inst, s.w, fireOnTime)
			}
		case timerClose:
			s.closeArmed = false
			if t.at != s.w.End+o.lateness {
				o.schedule(s) // stale: armed again for the grown end
				continue
			}
			s.fired = true
			o.emit(&s.inst, s.w, fireClose)
			o.rememberClosed(s.key, s.w.End) // before the drop: the key stays held
			o.dropSession(s)
		}
	}
	return false
}

func (o *Operator) earlySessions() {
	for _, s := range o.sess.all(o.cfg.Order) {
		if !s.fired && s.dirty {
			o.ordA, o.ordB, o.ordC = s.w.End, s.w.Start, s.birth
			o.markChanged(int(s.group))
			o.emit(&s.inst, s.w, fireEarly)
		}
	}
}

package file

// The replayer's min-heap of held deliveries, ordered by (arrival,
// sequence, first delivery before redelivery). Written out rather than
// through container/heap to keep entries typed.

// less orders deliveries by arrival, then sequence, first delivery first.
func less(a, b *entry) bool {
	if a.arrival != b.arrival {
		return a.arrival < b.arrival
	}
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	return !a.redelivery && b.redelivery
}

func (rp *replayer) push(e *entry) {
	h := append(rp.heap, e)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	rp.heap = h
}

func (rp *replayer) pop() *entry {
	h := rp.heap
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = nil
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	rp.heap = h
	return top
}

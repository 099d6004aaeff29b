package pagecache

// The kernel's two-list page cache LRU (mm/swap.c, mm/vmscan.c, Linux
// 5.x-6.x without MGLRU), kept by both policies: it is "lru"'s eviction
// order and "tinylfu"'s fallback.
//
//   - A new page goes to the head of the inactive list
//     (folio_add_lru).
//   - folio_mark_accessed: the first access sets PG_referenced; a second
//     access of an inactive page moves it to the head of the active list
//     and clears PG_referenced.
//   - Reclaim first refills the inactive list while inactive_is_low:
//     active-tail pages move to the inactive head (shrink_active_list
//     deactivates unmapped file pages whatever their referenced bit, and
//     leaves PG_referenced as it is). inactive_is_low is the kernel's rule
//     for the file LRU: inactive * ratio < active with ratio =
//     int_sqrt(10 * size_in_GiB), 1 below 1 GiB (so 1:1 for small caches,
//     3:1 active:inactive at 1 GiB, 10:1 at 10 GiB).
//   - Then it scans the inactive tail: an evictable page is evicted
//     (an unmapped clean file page is reclaimed even if PG_referenced is
//     set: folio_check_references returns FOLIOREF_RECLAIM_CLEAN); a
//     dirty, writeback or locked page is rotated back to the inactive head
//     (shrink_folio_list's keep path), counting a rotation.
//   - If the whole inactive list is pinned, reclaim deactivates active-tail
//     pages one by one and evicts the first evictable one.
//
// Simplifications: reclaim frees exactly one page when Add needs one,
// where the kernel reclaims batches of SWAP_CLUSTER_MAX to keep free pages
// between watermarks; there are no shadow entries (workingset refault
// activation), no mapped pages and no MGLRU. Every step is deterministic.
type lru struct {
	inactive, active lruList

	activations, deactivations, rotations, scanned uint64
}

// lruList is a circular doubly linked list of pages through their
// lruPrev/lruNext fields, around a sentinel; head is the most recently
// added end, tail (head.lruPrev) the next to reclaim.
type lruList struct {
	head Page
	n    int
}

func (l *lru) init() {
	l.inactive.init()
	l.active.init()
}

func (l *lruList) init() { l.head.lruPrev, l.head.lruNext = &l.head, &l.head }

func (l *lruList) pushFront(p *Page) {
	p.lruPrev, p.lruNext = &l.head, l.head.lruNext
	l.head.lruNext.lruPrev = p
	l.head.lruNext = p
	l.n++
}

func (l *lruList) unlink(p *Page) {
	p.lruPrev.lruNext, p.lruNext.lruPrev = p.lruNext, p.lruPrev
	p.lruPrev, p.lruNext = nil, nil
	l.n--
}

// tail returns the least recently added page, or nil.
func (l *lruList) tail() *Page {
	if l.n == 0 {
		return nil
	}
	return l.head.lruPrev
}

// list returns the list p is on.
func (l *lru) list(p *Page) *lruList {
	if p.flags&flagActive != 0 {
		return &l.active
	}
	return &l.inactive
}

// add puts a new page at the inactive head.
func (l *lru) add(p *Page) {
	p.flags &^= flagActive | flagReferenced
	l.inactive.pushFront(p)
}

// remove takes p off its list.
func (l *lru) remove(p *Page) {
	l.list(p).unlink(p)
}

// accessed is folio_mark_accessed.
func (l *lru) accessed(p *Page) {
	switch {
	case p.flags&flagReferenced == 0:
		p.flags |= flagReferenced
	case p.flags&flagActive == 0:
		l.inactive.unlink(p)
		p.flags = (p.flags | flagActive) &^ flagReferenced
		l.active.pushFront(p)
		l.activations++
	}
}

// deactivate moves the active page p to the inactive head.
func (l *lru) deactivate(p *Page) {
	l.active.unlink(p)
	p.flags &^= flagActive
	l.inactive.pushFront(p)
	l.deactivations++
}

// inactiveIsLow is the kernel's inactive_is_low for the file LRU.
func (l *lru) inactiveIsLow() bool {
	const pagesPerGiB = 1 << (30 - 12)
	ratio := 1
	if gb := (l.inactive.n + l.active.n) / pagesPerGiB; gb > 0 {
		ratio = isqrt(10 * gb)
	}
	return l.inactive.n*ratio < l.active.n
}

// isqrt is the kernel's int_sqrt: floor(sqrt(x)) for x >= 0.
func isqrt(x int) int {
	r := 0
	for b := 1 << 30; b > 0; b >>= 1 {
		if t := r + b; t*t <= x {
			r = t
		}
	}
	return r
}

// victim returns the page reclaim takes, or nil if no page on the lists is
// evictable. It refills and rotates the lists as it goes.
func (l *lru) victim() *Page {
	for l.inactiveIsLow() {
		l.deactivate(l.active.tail())
	}
	for i := l.inactive.n; i > 0; i-- {
		p := l.inactive.tail()
		l.scanned++
		if p.flags&pinned == 0 {
			return p
		}
		l.inactive.unlink(p)
		l.inactive.pushFront(p)
		l.rotations++
	}
	for l.active.n > 0 {
		p := l.active.tail()
		l.deactivate(p)
		if p.flags&pinned == 0 {
			return p
		}
	}
	return nil
}

package pagecache

import (
	"fmt"

	"github.com/dgraph-io/ristretto/v2"
)

// tinyLFU is the "tinylfu" policy. ristretto (v2) is the frequency and
// admission oracle: every page is offered to it (Set) when added, every
// access is recorded (Get), and its TinyLFU admission filter and sampled
// LFU eviction, with MaxCost = LimitPages and cost 1 per page, decide which
// pages it keeps. The pages it evicts or refuses are "out": eviction takes
// the oldest evictable out page first, and only when none is evictable
// falls back to the LRU order (both policies keep the LRU lists). An
// access to an out page offers it to ristretto again.
//
// The cache's own index stays authoritative: ristretto only ranks pages,
// so its decisions can never push the cache over its limit or drop a
// dirty, writeback or locked page (an out page is evicted only once it is
// evictable).
//
// Concurrency: ristretto applies Sets on its own goroutine and calls
// OnEvict/OnReject there. This type calls Wait right after every Set and
// touches the callbacks' slices only after Wait returns, so the callbacks
// run while the simulation goroutine is blocked in Wait and the channel
// handshake inside Wait orders their writes before our reads. ristretto
// records Gets in lossy striped buffers applied by another goroutine, so
// frequencies, and therefore decisions, depend on scheduling: this policy
// is not deterministic.
type tinyLFU struct {
	rc    *ristretto.Cache[uint64, *Page]
	seed  uint64
	limit int

	// Written by ristretto's callbacks during Wait; drained after it.
	cbEvicted, cbRejected []*Page

	out    outList
	closed bool

	admitted, rejected, policyEvicted, readmissions, preferred, fallback uint64
}

// tinyLFUBufferItems is ristretto's BufferItems: how many Gets it batches
// (per P) before handing them to its policy goroutine, which drops a batch
// that arrives while three are pending. One simulation goroutine records
// accesses in bursts, and with ristretto's usual 64 about half the batches
// were dropped in our tests; 256 drops few and delays frequencies by a few
// hundred accesses.
const tinyLFUBufferItems = 256

// outList is a circular doubly linked list of out pages through their
// outPrev/outNext fields; head.outNext is the oldest.
type outList struct {
	head Page
	n    int
}

func newTinyLFU(limit int, seed uint64) (*tinyLFU, error) {
	t := &tinyLFU{seed: seed, limit: limit}
	t.out.head.outPrev, t.out.head.outNext = &t.out.head, &t.out.head
	rc, err := ristretto.NewCache(&ristretto.Config[uint64, *Page]{
		NumCounters:        int64(max(10*limit, 64)),
		MaxCost:            int64(limit),
		BufferItems:        tinyLFUBufferItems,
		IgnoreInternalCost: true,
		KeyToHash:          func(k uint64) (uint64, uint64) { return k, 0 },
		OnEvict:            func(it *ristretto.Item[*Page]) { t.cbEvicted = append(t.cbEvicted, it.Value) },
		OnReject:           func(it *ristretto.Item[*Page]) { t.cbRejected = append(t.cbRejected, it.Value) },
	})
	if err != nil {
		return nil, fmt.Errorf("pagecache: tinylfu: %w", err)
	}
	t.rc = rc
	return t, nil
}

// key maps (inode, index) to ristretto's 64-bit key (splitmix64 of both,
// mixed with the seed). A collision only blurs ristretto's ranking.
func (t *tinyLFU) key(ino InodeID, idx int64) uint64 {
	return splitmix(splitmix(uint64(ino)^t.seed) ^ uint64(idx))
}

// splitmix is splitmix64's output function.
func splitmix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// offer Sets p in ristretto, applies the outcome to the pages ristretto
// evicted to make room, and reports whether ristretto refused p. p must
// not be out; the caller puts a refused p out (a page being added is not
// resident yet, so offer cannot).
func (t *tinyLFU) offer(p *Page) (refused bool) {
	if t.closed {
		return true
	}
	// Keep ristretto exactly full when the cache is: its capacity is the
	// pages it may hold, those not out (p, if out, still counts), so a
	// new or readmitted page must win against a sampled victim.
	t.rc.UpdateMaxCost(int64(max(1, t.limit-t.out.n)))
	if !t.rc.Set(p.key, p, 1) {
		t.rejected++ // dropped by a full buffer: treat as refused
		return true
	}
	t.rc.Wait()
	for _, q := range t.cbRejected {
		t.rejected++
		if q == p {
			refused = true
			continue
		}
		t.setOut(q)
	}
	for _, q := range t.cbEvicted {
		t.policyEvicted++
		t.setOut(q)
	}
	if !refused {
		t.admitted++
	}
	clear(t.cbRejected)
	clear(t.cbEvicted)
	t.cbRejected, t.cbEvicted = t.cbRejected[:0], t.cbEvicted[:0]
	return refused
}

// setOut appends the page ristretto dropped to the out list, unless it is
// no longer resident or already out.
func (t *tinyLFU) setOut(p *Page) {
	if p == nil || p.in == nil || p.out {
		return
	}
	p.out = true
	h := &t.out.head
	p.outPrev, p.outNext = h.outPrev, h
	h.outPrev.outNext = p
	h.outPrev = p
	t.out.n++
}

// clearOut takes p off the out list.
func (t *tinyLFU) clearOut(p *Page) {
	p.outPrev.outNext, p.outNext.outPrev = p.outNext, p.outPrev
	p.outPrev, p.outNext = nil, nil
	p.out = false
	t.out.n--
}

// adding offers a page Add is about to insert, before Add evicts to make
// room, so that when ristretto is full its admission filter weighs the
// new page against its sampled victims. It reports whether ristretto
// refused the page; Add then calls refusedNew once the page is resident.
func (t *tinyLFU) adding(p *Page) (refused bool) {
	p.key = t.key(p.ino, p.index)
	return t.offer(p)
}

// refusedNew puts a page ristretto refused out, once it is resident.
func (t *tinyLFU) refusedNew(p *Page) { t.setOut(p) }

// accessed records an access; an out page is offered again.
func (t *tinyLFU) accessed(p *Page) {
	if t.closed {
		return
	}
	t.rc.Get(p.key)
	if p.out {
		t.readmissions++
		refused := t.offer(p) // while p still counts as out
		if !refused {
			t.clearOut(p)
		}
	}
}

// removed forgets a page that left the cache.
func (t *tinyLFU) removed(p *Page) {
	if p.out {
		t.clearOut(p)
		return
	}
	if !t.closed {
		t.rc.Del(p.key)
	}
}

// victim returns the oldest evictable out page, or nil. Pinned out pages
// it passes are rotated to the back, as the LRU rotates pinned pages.
func (t *tinyLFU) victim() *Page {
	for i := t.out.n; i > 0; i-- {
		p := t.out.head.outNext
		if p.flags&pinned == 0 {
			t.preferred++
			return p
		}
		t.clearOut(p)
		t.setOut(p)
	}
	return nil
}

// close stops ristretto. Pages stay where they are; later offers count as
// refusals.
func (t *tinyLFU) close() {
	if t.closed {
		return
	}
	t.closed = true
	t.rc.Close() // Clear calls OnEvict for every item, on this goroutine
	clear(t.cbEvicted)
	t.cbEvicted = nil
}

func (t *tinyLFU) stats() TinyLFUStats {
	return TinyLFUStats{
		Admitted: t.admitted, Rejected: t.rejected, PolicyEvicted: t.policyEvicted,
		Readmissions: t.readmissions, Preferred: t.preferred, Fallback: t.fallback,
		Out: t.out.n,
	}
}

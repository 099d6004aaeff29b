package pagecache

import (
	"errors"
	"fmt"

	"github.com/google/btree"
)

// ErrNoMemory is returned by Cache.Add when the cache is at its limit and
// no page can be evicted, because every page is dirty, under writeback or
// locked. The caller waits for writeback (or an unlock) and retries, as a
// task in direct reclaim would.
var ErrNoMemory = errors.New("pagecache: out of memory: every page is dirty, under writeback or locked")

// ErrExist is returned by Cache.Add when the page is already in the cache
// (the kernel's -EEXIST from filemap_add_folio): another task added it
// first; look it up instead.
var ErrExist = errors.New("pagecache: page already in the cache")

// The eviction policies Options.Policy names.
const (
	// PolicyLRU is the kernel's deterministic two-list (active/inactive)
	// LRU. It is the default.
	PolicyLRU = "lru"
	// PolicyTinyLFU lets ristretto's TinyLFU choose which clean pages to
	// keep. It is not deterministic.
	PolicyTinyLFU = "tinylfu"
)

// MaxIndex bounds page indexes: every page's index is below it (Add
// rejects MaxIndex itself), so Range(ino, 0, MaxIndex, fn), whose range is
// half-open, walks a whole file.
const MaxIndex = int64(1<<63 - 1)

// Options configure a Cache.
type Options struct {
	// LimitPages is the capacity in pages (the simulated RAM available to
	// the page cache); it must be positive. The cache never holds more.
	LimitPages int

	// Policy is the eviction policy: PolicyLRU ("lru", also when empty) or
	// PolicyTinyLFU ("tinylfu"). With "tinylfu" the cache runs ristretto's
	// goroutines (call Close) and eviction is NOT deterministic: ristretto
	// buffers, batches and may drop access records depending on goroutine
	// scheduling, so two runs with the same Seed may evict different
	// pages. The hard guarantees (limit, never evicting dirty, writeback or
	// locked pages) hold for both policies.
	Policy string

	// Seed perturbs the keys "tinylfu" hands ristretto. "lru" ignores it:
	// it is deterministic whatever the seed.
	Seed uint64

	// OnEvict, if set, is called synchronously from Add for each page
	// eviction takes, after the page has left the cache (it is detached).
	// It must not call back into the Cache.
	OnEvict func(*Page)
}

// Cache is the page cache: every resident page of every inode, with a
// per-inode index ordered by page index, per-inode tag indexes, counters
// and an eviction policy. Create one with New; the zero value is not
// usable. A Cache is not safe for concurrent use (DESIGN.md section 2: one
// simulation, one goroutine).
type Cache struct {
	limit   int
	policy  string
	onEvict func(*Page)

	inodes map[InodeID]*inode // looked up only, never ranged over
	free   *btree.FreeListG[ref]

	pages, dirty, writeback, pinned int

	dirtied, written, adds, evictions, noMemory, lookups, hits uint64

	lru lru
	tl  *tinyLFU // nil unless Policy is "tinylfu"
}

// ref is an entry of an inode's index trees.
type ref struct {
	idx int64
	p   *Page
}

func refLess(a, b ref) bool { return a.idx < b.idx }

// btreeDegree is the degree of the per-inode B-trees.
const btreeDegree = 16

// inode holds one file's pages: all of them and, for the tagged lookups,
// the dirty, writeback and towrite ones.
type inode struct {
	pages, dirty, writeback, towrite *btree.BTreeG[ref]
}

// Tag selects the pages a tagged lookup returns, as the kernel's xarray
// marks do.
type Tag int

const (
	// TagDirty selects dirty pages (PAGECACHE_TAG_DIRTY).
	TagDirty Tag = iota + 1
	// TagWriteback selects pages under writeback (PAGECACHE_TAG_WRITEBACK).
	TagWriteback
	// TagToWrite selects pages tagged by TagForWriteback
	// (PAGECACHE_TAG_TOWRITE).
	TagToWrite
)

// String returns the kernel's name for the tag.
func (t Tag) String() string {
	switch t {
	case TagDirty:
		return "dirty"
	case TagWriteback:
		return "writeback"
	case TagToWrite:
		return "towrite"
	}
	return fmt.Sprintf("Tag(%d)", int(t))
}

// New returns an empty cache. It fails if LimitPages is not positive or
// Policy is not one of PolicyLRU, PolicyTinyLFU or empty.
func New(opt Options) (*Cache, error) {
	if opt.LimitPages <= 0 {
		return nil, fmt.Errorf("pagecache: LimitPages must be positive, got %d", opt.LimitPages)
	}
	c := &Cache{
		limit:   opt.LimitPages,
		policy:  opt.Policy,
		onEvict: opt.OnEvict,
		inodes:  make(map[InodeID]*inode),
		free:    btree.NewFreeListG[ref](btree.DefaultFreeListSize),
	}
	c.lru.init()
	switch opt.Policy {
	case "", PolicyLRU:
		c.policy = PolicyLRU
	case PolicyTinyLFU:
		tl, err := newTinyLFU(opt.LimitPages, opt.Seed)
		if err != nil {
			return nil, err
		}
		c.tl = tl
	default:
		return nil, fmt.Errorf("pagecache: unknown policy %q (want %q or %q)", opt.Policy, PolicyLRU, PolicyTinyLFU)
	}
	return c, nil
}

// Close releases the eviction policy's resources: it stops ristretto's
// goroutines for "tinylfu" and does nothing for "lru". Close must be the
// last call on the Cache; calling it again does nothing.
func (c *Cache) Close() {
	if c.tl != nil {
		c.tl.close()
	}
}

// Policy returns the eviction policy in use ("lru" or "tinylfu").
func (c *Cache) Policy() string { return c.policy }

// Limit returns the capacity in pages (Options.LimitPages).
func (c *Cache) Limit() int { return c.limit }

// Pages returns the number of resident pages; never more than Limit.
func (c *Cache) Pages() int { return c.pages }

// Dirty returns the number of dirty pages (NR_FILE_DIRTY).
func (c *Cache) Dirty() int { return c.dirty }

// Writeback returns the number of pages under writeback (NR_WRITEBACK).
func (c *Cache) Writeback() int { return c.writeback }

// Dirtied returns how many times a clean page was dirtied since New
// (NR_DIRTIED): the writeback code's dirty rate.
func (c *Cache) Dirtied() uint64 { return c.dirtied }

// Written returns how many page writebacks completed since New
// (NR_WRITTEN).
func (c *Cache) Written() uint64 { return c.written }

// Evictions returns the number of pages evicted since New (pages Remove
// took do not count).
func (c *Cache) Evictions() uint64 { return c.evictions }

// Evictable returns the number of resident pages eviction could take now:
// clean, not under writeback and not locked.
func (c *Cache) Evictable() int { return c.pages - c.pinned }

// InodePages returns the number of resident pages of ino.
func (c *Cache) InodePages(ino InodeID) int {
	if in := c.inodes[ino]; in != nil {
		return in.pages.Len()
	}
	return 0
}

// InodeDirtyPages returns the number of dirty pages of ino.
func (c *Cache) InodeDirtyPages(ino InodeID) int {
	if in := c.inodes[ino]; in != nil {
		return in.dirty.Len()
	}
	return 0
}

// InodeWritebackPages returns the number of pages of ino under writeback.
func (c *Cache) InodeWritebackPages(ino InodeID) int {
	if in := c.inodes[ino]; in != nil {
		return in.writeback.Len()
	}
	return 0
}

// Peek returns the resident page (ino, idx), or nil, without recording an
// access.
func (c *Cache) Peek(ino InodeID, idx int64) *Page {
	in := c.inodes[ino]
	if in == nil {
		return nil
	}
	r, ok := in.pages.Get(ref{idx: idx})
	if !ok {
		return nil
	}
	return r.p
}

// Find returns the resident page (ino, idx), or nil, and records an access
// to it (MarkAccessed). It counts in Stats' Lookups and Hits.
func (c *Cache) Find(ino InodeID, idx int64) *Page {
	c.lookups++
	p := c.Peek(ino, idx)
	if p != nil {
		c.hits++
		c.MarkAccessed(p)
	}
	return p
}

// MarkAccessed records an access to the resident page p
// (folio_mark_accessed): with "lru" the first access sets PG_referenced
// and the second moves the page to the active list; with "tinylfu" it also
// counts the access in ristretto's frequency sketch.
func (c *Cache) MarkAccessed(p *Page) {
	p.mustResident("MarkAccessed")
	c.lru.accessed(p)
	if c.tl != nil {
		c.tl.accessed(p)
	}
}

// Add creates page (ino, idx) and returns it locked, not uptodate and
// clean, on the inactive list, as add_to_page_cache_lru does; the caller
// fills it (SetStamp, SetUptodate) and unlocks it. If the cache is at its
// limit, Add first evicts one page the policy chooses among those that are
// clean, unlocked and not under writeback; if there is none it returns
// ErrNoMemory and changes nothing. If the page exists it returns ErrExist.
// A negative idx, or one of MaxIndex, is a model bug and panics.
func (c *Cache) Add(ino InodeID, idx int64) (*Page, error) {
	if idx < 0 {
		panic(fmt.Sprintf("pagecache: Add(ino %d, index %d): negative index", ino, idx))
	}
	if idx == MaxIndex {
		// Fix (tests): Range's to is exclusive, so a page at MaxIndex
		// would be resident but missed by Range(ino, 0, MaxIndex, fn).
		panic(fmt.Sprintf("pagecache: Add(ino %d, index %d): index must be below MaxIndex", ino, idx))
	}
	if in := c.inodes[ino]; in != nil {
		if _, ok := in.pages.Get(ref{idx: idx}); ok {
			return nil, ErrExist
		}
	}
	full := c.pages >= c.limit
	if full && c.pages-c.pinned <= 0 {
		c.noMemory++
		return nil, ErrNoMemory
	}
	p := &Page{ino: ino, index: idx, flags: flagLocked, c: c}
	refused := false
	if c.tl != nil {
		refused = c.tl.adding(p)
	}
	if full {
		c.evict(c.victim())
	}
	in := c.inodes[ino] // after eviction, which may have dropped it
	if in == nil {
		in = &inode{
			pages:     btree.NewWithFreeListG(btreeDegree, refLess, c.free),
			dirty:     btree.NewWithFreeListG(btreeDegree, refLess, c.free),
			writeback: btree.NewWithFreeListG(btreeDegree, refLess, c.free),
			towrite:   btree.NewWithFreeListG(btreeDegree, refLess, c.free),
		}
		c.inodes[ino] = in
	}
	p.in = in
	in.pages.ReplaceOrInsert(ref{idx, p})
	c.pages++
	c.pinned++ // locked
	c.adds++
	c.lru.add(p)
	if refused {
		c.tl.refusedNew(p)
	}
	return p, nil
}

// Remove takes p out of the cache (delete_from_page_cache, as truncation
// does). p must be resident, locked, clean (CancelDirty first) and not
// under writeback (wait for EndWriteback first); it stays locked and
// detached, and the caller unlocks it. Removal is not an eviction.
func (c *Cache) Remove(p *Page) {
	p.mustResident("Remove")
	switch {
	case p.c != c:
		p.bug("Remove", "page belongs to another cache")
	case p.flags&flagLocked == 0:
		p.bug("Remove", "page is not locked")
	case p.flags&flagDirty != 0:
		p.bug("Remove", "page is dirty (CancelDirty or write it back first)")
	case p.flags&flagWriteback != 0:
		p.bug("Remove", "page is under writeback (wait for EndWriteback)")
	}
	c.detach(p)
}

// victim returns the page the policy evicts next. Some page must be
// evictable.
func (c *Cache) victim() *Page {
	if c.tl != nil {
		if p := c.tl.victim(); p != nil {
			return p
		}
		c.tl.fallback++
	}
	p := c.lru.victim()
	if p == nil {
		panic(fmt.Sprintf("pagecache: internal error: %d pages, %d pinned, but no evictable page on the LRU lists", c.pages, c.pinned))
	}
	return p
}

// evict detaches the evictable page p and reports it.
func (c *Cache) evict(p *Page) {
	if !p.Evictable() {
		panic(fmt.Sprintf("pagecache: internal error: evicting %v", p))
	}
	c.detach(p)
	c.evictions++
	if c.onEvict != nil {
		c.onEvict(p)
	}
}

// detach takes the resident page p out of every index, list and counter.
func (c *Cache) detach(p *Page) {
	in := p.in
	in.pages.Delete(ref{idx: p.index})
	if p.flags&flagToWrite != 0 {
		in.towrite.Delete(ref{idx: p.index})
		p.flags &^= flagToWrite
	}
	// Dirty and writeback pages are never detached (Remove and evict
	// check), so those indexes and counters need no change.
	if p.flags&pinned != 0 {
		c.pinned--
	}
	c.lru.remove(p)
	if c.tl != nil {
		c.tl.removed(p)
	}
	c.pages--
	p.in = nil
	if in.pages.Len() == 0 {
		delete(c.inodes, p.ino)
	}
}

// walkBatch is how many pages a walk collects before calling fn, so fn may
// change the indexes the walk reads.
const walkBatch = 16

// Range calls fn for each resident page of ino with index in [from, to),
// in index order, until fn returns false. fn may change the pages' state,
// Remove pages or Add pages: Range visits only pages that are still
// resident when their turn comes, and may or may not visit pages added
// behind the current position.
func (c *Cache) Range(ino InodeID, from, to int64, fn func(*Page) bool) {
	c.walk(ino, from, to, 0, fn)
}

// RangeTagged is Range restricted to pages carrying tag (the kernel's
// tagged lookup, as write_cache_pages uses): it visits the pages that
// carry the tag when their turn comes, in index order, and costs time in
// proportion to the tagged pages, not to all the inode's pages.
func (c *Cache) RangeTagged(ino InodeID, from, to int64, tag Tag, fn func(*Page) bool) {
	switch tag {
	case TagDirty, TagWriteback, TagToWrite:
	default:
		panic(fmt.Sprintf("pagecache: RangeTagged: unknown tag %d", int(tag)))
	}
	c.walk(ino, from, to, tag, fn)
}

// TagForWriteback sets the towrite tag on every dirty page of ino with
// index in [from, to) and returns how many it tagged
// (tag_pages_for_writeback): a WB_SYNC_ALL writeback then walks TagToWrite,
// so pages dirtied after it started cannot livelock it. SetWriteback and
// removal clear the tag; like the kernel, nothing else does, so a tagged
// page may be clean by the time the walk reaches it.
func (c *Cache) TagForWriteback(ino InodeID, from, to int64) int {
	in := c.inodes[ino]
	if in == nil || from >= to {
		return 0
	}
	n := 0
	in.dirty.AscendRange(ref{idx: from}, ref{idx: to}, func(r ref) bool {
		if r.p.flags&flagToWrite == 0 {
			r.p.setFlags(r.p.flags | flagToWrite)
			n++
		}
		return true
	})
	return n
}

// walk implements Range (tag 0) and RangeTagged.
func (c *Cache) walk(ino InodeID, from, to int64, tag Tag, fn func(*Page) bool) {
	var batch [walkBatch]*Page
	var want pageFlags
	switch tag {
	case TagDirty:
		want = flagDirty
	case TagWriteback:
		want = flagWriteback
	case TagToWrite:
		want = flagToWrite
	}
	for from < to {
		in := c.inodes[ino]
		if in == nil {
			return
		}
		t := in.pages
		switch tag {
		case TagDirty:
			t = in.dirty
		case TagWriteback:
			t = in.writeback
		case TagToWrite:
			t = in.towrite
		}
		n := 0
		t.AscendRange(ref{idx: from}, ref{idx: to}, func(r ref) bool {
			batch[n] = r.p
			n++
			return n < walkBatch
		})
		for _, p := range batch[:n] {
			if p.in == nil || p.flags&want != want {
				continue // removed, or lost the tag, since collected
			}
			if !fn(p) {
				return
			}
		}
		if n < walkBatch || batch[n-1].index == MaxIndex {
			return
		}
		from = batch[n-1].index + 1
	}
}

// Stats are the cache's counters and its policy's, as Cache.Stats returns
// them. Counts of pages (int) are current; counts of events (uint64) are
// totals since New.
type Stats struct {
	// Policy is "lru" or "tinylfu".
	Policy string
	// Limit, Pages, Dirty, Writeback and Evictable are as the methods of
	// the same names return.
	Limit, Pages, Dirty, Writeback, Evictable int
	// Dirtied and Written are NR_DIRTIED and NR_WRITTEN.
	Dirtied, Written uint64
	// Adds counts pages Add created; Evictions, pages eviction took.
	Adds, Evictions uint64
	// NoMemory counts Adds that failed with ErrNoMemory.
	NoMemory uint64
	// Lookups counts Find calls; Hits, those that found the page.
	Lookups, Hits uint64
	// Active and Inactive are the LRU list lengths (both policies keep
	// the lists).
	Active, Inactive int
	// Activations counts inactive pages a second access moved to the
	// active list.
	Activations uint64
	// Deactivations counts active pages moved to the inactive list (the
	// inactive_is_low refill, or reclaim when every inactive page was
	// pinned).
	Deactivations uint64
	// Rotations counts pinned pages reclaim moved from the inactive tail
	// back to its head.
	Rotations uint64
	// Scanned counts inactive-tail pages reclaim examined.
	Scanned uint64
	// TinyLFU holds the "tinylfu" policy's counters.
	TinyLFU TinyLFUStats
}

// TinyLFUStats are the "tinylfu" policy's counters (zero for "lru").
type TinyLFUStats struct {
	// Admitted counts new or readmitted pages ristretto accepted.
	Admitted uint64
	// Rejected counts pages ristretto's admission filter refused.
	Rejected uint64
	// PolicyEvicted counts pages ristretto chose as victims (they leave
	// the cache when Add next needs room and they are evictable).
	PolicyEvicted uint64
	// Readmissions counts accesses to a page ristretto had dropped, which
	// offer it to ristretto again.
	Readmissions uint64
	// Preferred counts evictions of pages ristretto had dropped.
	Preferred uint64
	// Fallback counts evictions for which no page ristretto had dropped
	// was evictable, so the LRU order chose.
	Fallback uint64
	// Out is the number of resident pages ristretto has dropped.
	Out int
}

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() Stats {
	s := Stats{
		Policy: c.policy, Limit: c.limit, Pages: c.pages,
		Dirty: c.dirty, Writeback: c.writeback, Evictable: c.pages - c.pinned,
		Dirtied: c.dirtied, Written: c.written,
		Adds: c.adds, Evictions: c.evictions, NoMemory: c.noMemory,
		Lookups: c.lookups, Hits: c.hits,
		Active: c.lru.active.n, Inactive: c.lru.inactive.n,
		Activations: c.lru.activations, Deactivations: c.lru.deactivations,
		Rotations: c.lru.rotations, Scanned: c.lru.scanned,
	}
	if c.tl != nil {
		s.TinyLFU = c.tl.stats()
	}
	return s
}

package pagecache

import (
	"fmt"

	"github.com/blksim/blksim/blockdev"
)

// PageSize is the size of a page in bytes (4 KiB, PAGE_SIZE on x86-64 and
// arm64 with 4K pages). Page indexes are file offsets divided by PageSize.
const PageSize = 4096

// SectorsPerPage is the number of 512-byte sectors in a page: the
// granularity of a page's stamps.
const SectorsPerPage = PageSize / blockdev.SectorSize

// InodeID identifies a file (an inode) within one Cache.
type InodeID uint64

// pageFlags are the page's flag bits.
type pageFlags uint16

const (
	flagUptodate pageFlags = 1 << iota
	flagDirty
	flagWriteback
	flagLocked
	flagReferenced
	flagActive
	flagReadahead
	flagToWrite
)

// pinned are the flags that make a page unevictable.
const pinned = flagDirty | flagWriteback | flagLocked

// Page is one page of one file in the cache. Its fields are read through
// accessors; its state changes only through the methods below, which keep
// the cache's counters and indexes in step, so a Page is always created by
// Cache.Add, never as a literal.
//
// A Page is resident from Add until Remove or eviction; after that it is
// detached: its accessors keep working (like a page the kernel still holds
// a reference to after truncation), Lock, TryLock and Unlock still work,
// and every other state change panics. Eviction may detach any resident
// page that is not locked, dirty or under writeback during any Add, so a
// caller that must keep a page resident across Adds locks it.
//
// Private is the filesystem's field (the kernel's page->private), e.g. the
// block allocated to the page; the cache never reads or changes it.
type Page struct {
	// Private belongs to the filesystem.
	Private uint64

	ino   InodeID
	index int64
	flags pageFlags

	stamp   blockdev.Stamp
	sectors *[SectorsPerPage]blockdev.Stamp // nil while every sector has stamp

	c  *Cache
	in *inode // nil once detached

	// LRU lists (both policies).
	lruPrev, lruNext *Page
	// TinyLFU: pages ristretto evicted or rejected, oldest first.
	outPrev, outNext *Page
	out              bool
	key              uint64 // ristretto key
}

// Inode returns the inode the page belongs to.
func (p *Page) Inode() InodeID { return p.ino }

// Index returns the page's offset in the file in pages.
func (p *Page) Index() int64 { return p.index }

// Pos returns the page's offset in the file in bytes.
func (p *Page) Pos() int64 { return p.index * PageSize }

// Resident reports whether the page is still in the cache (it has not been
// removed or evicted).
func (p *Page) Resident() bool { return p.in != nil }

// IsUptodate reports PG_uptodate: the page holds the file's current data.
func (p *Page) IsUptodate() bool { return p.flags&flagUptodate != 0 }

// IsDirty reports PG_dirty: the page holds data newer than the disk's.
func (p *Page) IsDirty() bool { return p.flags&flagDirty != 0 }

// IsWriteback reports PG_writeback: a write of the page is in flight.
func (p *Page) IsWriteback() bool { return p.flags&flagWriteback != 0 }

// IsLocked reports PG_locked.
func (p *Page) IsLocked() bool { return p.flags&flagLocked != 0 }

// IsReferenced reports PG_referenced: the page was accessed once since it
// was added or last activated (mark_page_accessed's first step).
func (p *Page) IsReferenced() bool { return p.flags&flagReferenced != 0 }

// IsActive reports PG_active: the page is on the active LRU list.
func (p *Page) IsActive() bool { return p.flags&flagActive != 0 }

// IsReadahead reports PG_readahead: the page carries the async readahead
// marker (see Readahead.Async).
func (p *Page) IsReadahead() bool { return p.flags&flagReadahead != 0 }

// IsToWrite reports PAGECACHE_TAG_TOWRITE (see Cache.TagForWriteback).
func (p *Page) IsToWrite() bool { return p.flags&flagToWrite != 0 }

// Evictable reports whether eviction may take the page now: it is
// resident, clean, not under writeback and not locked.
func (p *Page) Evictable() bool { return p.in != nil && p.flags&pinned == 0 }

// Stamp returns the stamp of the data the page holds: the stamp of all its
// sectors when they carry one (always, unless SetSectorStamps wrote part
// of the page), else the stamp of its first sector. The zero Stamp means
// never written.
func (p *Page) Stamp() blockdev.Stamp {
	if p.sectors != nil {
		return p.sectors[0]
	}
	return p.stamp
}

// SectorStamp returns the stamp of sector i (0 <= i < SectorsPerPage) of
// the page.
func (p *Page) SectorStamp(i int) blockdev.Stamp {
	if i < 0 || i >= SectorsPerPage {
		panic(fmt.Sprintf("pagecache: SectorStamp(%d) of %v: sector out of range", i, p))
	}
	if p.sectors != nil {
		return p.sectors[i]
	}
	return p.stamp
}

// UniformStamp reports whether every sector of the page carries the same
// stamp (the one Stamp returns).
func (p *Page) UniformStamp() bool { return p.sectors == nil }

// String describes the page for messages: inode, index and flags.
func (p *Page) String() string {
	f := ""
	for _, x := range []struct {
		bit  pageFlags
		name string
	}{
		{flagUptodate, "U"}, {flagDirty, "D"}, {flagWriteback, "W"}, {flagLocked, "L"},
		{flagReferenced, "r"}, {flagActive, "a"}, {flagReadahead, "R"}, {flagToWrite, "T"},
	} {
		if p.flags&x.bit != 0 {
			f += x.name
		}
	}
	d := ""
	if p.in == nil {
		d = " detached"
	}
	return fmt.Sprintf("page(ino %d, index %d, [%s]%s)", p.ino, p.index, f, d)
}

// bug panics with a model-bug message about p.
func (p *Page) bug(op, rule string) {
	panic(fmt.Sprintf("pagecache: %s on %v: %s", op, p, rule))
}

// mustResident panics unless p is resident.
func (p *Page) mustResident(op string) {
	if p.in == nil {
		p.bug(op, "page is not in the cache (removed or evicted)")
	}
}

// setFlags changes p's flags and keeps the cache's counters and tag
// indexes in step. p must be resident.
func (p *Page) setFlags(nf pageFlags) {
	of := p.flags
	p.flags = nf
	c, in := p.c, p.in
	ch := of ^ nf
	if ch&flagDirty != 0 {
		if nf&flagDirty != 0 {
			c.dirty++
			c.dirtied++
			in.dirty.ReplaceOrInsert(ref{p.index, p})
		} else {
			c.dirty--
			in.dirty.Delete(ref{p.index, nil})
		}
	}
	if ch&flagWriteback != 0 {
		if nf&flagWriteback != 0 {
			c.writeback++
			in.writeback.ReplaceOrInsert(ref{p.index, p})
		} else {
			c.writeback--
			c.written++
			in.writeback.Delete(ref{p.index, nil})
		}
	}
	if ch&flagToWrite != 0 {
		if nf&flagToWrite != 0 {
			in.towrite.ReplaceOrInsert(ref{p.index, p})
		} else {
			in.towrite.Delete(ref{p.index, nil})
		}
	}
	if wasPinned, isPinned := of&pinned != 0, nf&pinned != 0; wasPinned != isPinned {
		if isPinned {
			c.pinned++
		} else {
			c.pinned--
		}
	}
}

// Lock sets PG_locked. The page must not be locked: this package has no
// wait queues, so a simulated task that finds a page locked waits on its
// own (the filesystem's) queue until Unlock, and uses TryLock to test.
// Locking a detached page is allowed (the kernel locks a page and then
// checks whether truncation removed it: see Resident). A locked page is
// never evicted.
func (p *Page) Lock() {
	if !p.TryLock() {
		p.bug("Lock", "page is already locked (use TryLock and wait)")
	}
}

// TryLock sets PG_locked if the page is not locked and reports whether it
// did (trylock_page).
func (p *Page) TryLock() bool {
	if p.flags&flagLocked != 0 {
		return false
	}
	if p.in == nil {
		p.flags |= flagLocked
		return true
	}
	p.setFlags(p.flags | flagLocked)
	return true
}

// Unlock clears PG_locked (unlock_page). The page must be locked; it may
// be detached.
func (p *Page) Unlock() {
	if p.flags&flagLocked == 0 {
		p.bug("Unlock", "page is not locked")
	}
	if p.in == nil {
		p.flags &^= flagLocked
		return
	}
	p.setFlags(p.flags &^ flagLocked)
}

// SetUptodate sets PG_uptodate: the page now holds the file's data (a read
// completed, or a write covered the whole page). The page must be resident
// and locked, as in the kernel's read completion and write_end paths.
func (p *Page) SetUptodate() {
	p.mustResident("SetUptodate")
	if p.flags&flagLocked == 0 {
		p.bug("SetUptodate", "page is not locked")
	}
	p.setFlags(p.flags | flagUptodate)
}

// ClearUptodate clears PG_uptodate (a failed read). The page must be
// resident, locked and clean.
func (p *Page) ClearUptodate() {
	p.mustResident("ClearUptodate")
	if p.flags&flagLocked == 0 {
		p.bug("ClearUptodate", "page is not locked")
	}
	if p.flags&flagDirty != 0 {
		p.bug("ClearUptodate", "page is dirty")
	}
	p.setFlags(p.flags &^ flagUptodate)
}

// SetStamp records that all of the page's data now carries stamp s (a
// whole-page write or a read from disk). The page must be resident and
// locked: writers and readers fill a page under its lock.
func (p *Page) SetStamp(s blockdev.Stamp) {
	p.mustResident("SetStamp")
	if p.flags&flagLocked == 0 {
		p.bug("SetStamp", "page is not locked")
	}
	p.stamp, p.sectors = s, nil
}

// SetSectorStamps records that sectors [first, first+n) of the page now
// carry stamp s (a write of part of the page). The page must be resident
// and locked, and the range must lie within the page.
func (p *Page) SetSectorStamps(first, n int, s blockdev.Stamp) {
	p.mustResident("SetSectorStamps")
	if p.flags&flagLocked == 0 {
		p.bug("SetSectorStamps", "page is not locked")
	}
	if first < 0 || n < 0 || first+n > SectorsPerPage {
		p.bug("SetSectorStamps", fmt.Sprintf("sectors [%d, %d) outside the page", first, first+n))
	}
	if first == 0 && n == SectorsPerPage {
		p.stamp, p.sectors = s, nil
		return
	}
	if n == 0 {
		return
	}
	if p.sectors == nil {
		a := new([SectorsPerPage]blockdev.Stamp)
		for i := range a {
			a[i] = p.stamp
		}
		p.sectors = a
	}
	for i := first; i < first+n; i++ {
		p.sectors[i] = s
	}
	for _, x := range p.sectors[1:] {
		if x != p.sectors[0] {
			return
		}
	}
	p.stamp, p.sectors = p.sectors[0], nil
}

// SetDirty sets PG_dirty (folio_mark_dirty) and reports whether the page
// was newly dirtied; a newly dirtied page counts in Cache.Dirty,
// Cache.InodeDirtyPages and Cache.Dirtied and gets the dirty tag. The page
// must be resident, locked (write_end holds the page lock) and uptodate:
// dirtying data that was never read or written would lose the rest of the
// page. A page under writeback may be redirtied.
func (p *Page) SetDirty() bool {
	p.mustResident("SetDirty")
	if p.flags&flagLocked == 0 {
		p.bug("SetDirty", "page is not locked")
	}
	if p.flags&flagUptodate == 0 {
		p.bug("SetDirty", "page is not uptodate")
	}
	if p.flags&flagDirty != 0 {
		return false
	}
	p.setFlags(p.flags | flagDirty)
	return true
}

// ClearDirtyForIO clears PG_dirty before the page is written
// (clear_page_dirty_for_io) and reports whether it was dirty; the page
// leaves the dirty counters and the dirty tag. The page must be resident
// and locked. The caller then calls SetWriteback and submits the write,
// or SetDirty again if it cannot write the page now
// (redirty_page_for_writepage).
func (p *Page) ClearDirtyForIO() bool {
	p.mustResident("ClearDirtyForIO")
	if p.flags&flagLocked == 0 {
		p.bug("ClearDirtyForIO", "page is not locked")
	}
	if p.flags&flagDirty == 0 {
		return false
	}
	p.setFlags(p.flags &^ flagDirty)
	return true
}

// CancelDirty clears PG_dirty without writing the page (cancel_dirty_page:
// truncation, hole punching) and reports whether it was dirty. The page
// must be resident and locked. Like the kernel's account_page_cleaned it
// leaves Cache.Dirtied and the towrite tag alone.
func (p *Page) CancelDirty() bool {
	p.mustResident("CancelDirty")
	if p.flags&flagLocked == 0 {
		p.bug("CancelDirty", "page is not locked")
	}
	if p.flags&flagDirty == 0 {
		return false
	}
	p.setFlags(p.flags &^ flagDirty)
	return true
}

// SetWriteback sets PG_writeback (set_page_writeback): the page's write
// is being submitted. It counts in Cache.Writeback, gets the writeback tag
// and loses the towrite tag. The page must be resident, locked, clean
// (call ClearDirtyForIO first) and not already under writeback (wait for
// EndWriteback first, as write_cache_pages does for WB_SYNC_ALL).
func (p *Page) SetWriteback() {
	p.mustResident("SetWriteback")
	switch {
	case p.flags&flagLocked == 0:
		p.bug("SetWriteback", "page is not locked")
	case p.flags&flagDirty != 0:
		p.bug("SetWriteback", "page is still dirty (call ClearDirtyForIO first)")
	case p.flags&flagWriteback != 0:
		p.bug("SetWriteback", "page is already under writeback")
	}
	p.setFlags((p.flags | flagWriteback) &^ flagToWrite)
}

// EndWriteback clears PG_writeback when the page's write completed
// (end_page_writeback); it counts in Cache.Written. The page must be
// resident and under writeback; it need not be locked (completions run
// without the page lock).
func (p *Page) EndWriteback() {
	p.mustResident("EndWriteback")
	if p.flags&flagWriteback == 0 {
		p.bug("EndWriteback", "page is not under writeback")
	}
	p.setFlags(p.flags &^ flagWriteback)
}

// SetReadahead sets PG_readahead, the async readahead marker, on a page
// that readahead just added (the one at Window.Marker). The page must be
// resident.
func (p *Page) SetReadahead() {
	p.mustResident("SetReadahead")
	p.flags |= flagReadahead
}

// TestClearReadahead clears PG_readahead and reports whether it was set:
// a reader that finds the marker calls Readahead.Async.
func (p *Page) TestClearReadahead() bool {
	had := p.flags&flagReadahead != 0
	p.flags &^= flagReadahead
	return had
}

// MarkAccessed records an access to the page (folio_mark_accessed): see
// Cache.MarkAccessed.
func (p *Page) MarkAccessed() {
	p.mustResident("MarkAccessed")
	p.c.MarkAccessed(p)
}

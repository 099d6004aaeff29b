package fsmodel

import (
	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/pagecache"
	"github.com/blksim/blksim/sim"
)

// This file models what a reader sees when it copies a page while a
// buffered write is copying into it. The kernel takes no page (folio)
// lock for reads of uptodate pages, so a read that is not serialized
// against writes by the inode lock (ext4 and f2fs buffered reads always;
// xfs without the iolock in reads) may copy a page half-written: the
// sectors the writer has already copied come out new, the others old. A
// write's copy of a page is taken to progress sector by sector at a
// constant rate over its CPU time, and so is a read's; a sector reads new
// when the writer copied it before the reader got to it. With equal copy
// rates a reader that starts behind a writer stays behind it (all new) and
// one that starts ahead stays ahead (all old), so a single-page write only
// tears a read whose copy rate differs from the writer's; writes of
// several pages tear across pages.

// pageCopy is one write's copy into a page (or a DAX block of the same
// size): the sectors [first, first+n) receive stamp between start and end;
// old holds the page's stamps before.
type pageCopy struct {
	start, end sim.Time
	first, n   int
	stamp      blockdev.Stamp
	old        [pagecache.SectorsPerPage]blockdev.Stamp
}

// maxCopies bounds the copies kept; older ones are dropped first when the
// bound is reached (they ended long before any read in progress began).
const maxCopies = 4096

// copyLog keeps the recent write copies into pages, keyed by K (a page
// cache page, or a DAX device block), for what unserialized readers see.
type copyLog[K comparable] struct {
	copies map[K]*pageCopy
	free   []*pageCopy
}

// begin records that a write of stamp s to sectors [first, first+n) of
// the page k copies from start for d; old returns the page's stamp of a
// sector before the copy.
func (l *copyLog[K]) begin(k K, start, d sim.Time, first, n int, s blockdev.Stamp, old func(i int) blockdev.Stamp) {
	if l.copies == nil {
		l.copies = make(map[K]*pageCopy)
	}
	c := l.copies[k]
	if c == nil {
		if len(l.copies) >= maxCopies {
			l.prune(start)
		}
		if n := len(l.free); n > 0 {
			c = l.free[n-1]
			l.free = l.free[:n-1]
		} else {
			c = &pageCopy{}
		}
		l.copies[k] = c
	}
	c.start, c.end, c.first, c.n, c.stamp = start, start+d, first, n, s
	for i := range c.old {
		c.old[i] = old(i)
	}
}

// prune drops the copies that ended before now minus a margin far longer
// than any page copy, keeping them for reuse. If none is that old it
// drops them all: no read takes a millisecond per page. (The order in
// which the map is walked decides nothing.)
func (l *copyLog[K]) prune(now sim.Time) {
	const margin = sim.Time(1_000_000) // 1 ms
	n := len(l.copies)
	for k, c := range l.copies {
		if c.end+margin < now {
			delete(l.copies, k)
			l.free = append(l.free, c)
		}
	}
	if len(l.copies) == n {
		for k, c := range l.copies {
			delete(l.copies, k)
			l.free = append(l.free, c)
		}
	}
}

// overlapping returns the recorded write copy into k that overlaps a read
// copying it between r0 and r1, or nil.
func (l *copyLog[K]) overlapping(k K, r0, r1 sim.Time) *pageCopy {
	if len(l.copies) == 0 {
		return nil
	}
	c := l.copies[k]
	if c == nil || c.end <= r0 || c.start >= r1 {
		return nil
	}
	return c
}

// endedAfter returns the latest recorded write copy into k if it ended
// after r0, or nil. (A DAX write stores its stamps when its copy starts,
// so a copy that starts after a read ended still decides what the read
// saw: the old stamps.)
func (l *copyLog[K]) endedAfter(k K, r0 sim.Time) *pageCopy {
	if len(l.copies) == 0 {
		return nil
	}
	c := l.copies[k]
	if c == nil || c.end <= r0 {
		return nil
	}
	return c
}

// beginCopy records a buffered write's copy into p (see copyLog.begin).
// Nothing is recorded when buffered reads hold the inode lock shared:
// they never overlap a write's copy, which holds it exclusive.
func (b *buffered) beginCopy(p *pagecache.Page, start sim.Time, d sim.Time, first, n int, s blockdev.Stamp) {
	if b.opt.ReadLockShared {
		return
	}
	b.copies.begin(p, start, d, first, n, s, p.SectorStamp)
}

// seenStamp returns what a reader copying sector i of a page between r0
// and r1 (its copy of the page's sectors [rfirst, rfirst+rn)) read there;
// c is the overlapping write copy (nil if none) and cur the sector's
// stamp now.
func seenStamp(c *pageCopy, cur blockdev.Stamp, i int, r0, r1 sim.Time, rfirst, rn int) blockdev.Stamp {
	if c == nil || i < c.first || i >= c.first+c.n {
		return cur
	}
	// The writer finished sector i at tw, the reader read it at tr.
	tw := c.start + (c.end-c.start)*sim.Time(i-c.first+1)/sim.Time(c.n)
	tr := r0 + (r1-r0)*sim.Time(2*(i-rfirst)+1)/sim.Time(2*rn)
	if tw <= tr {
		return c.stamp
	}
	return c.old[i]
}

// appendSector appends one sector's stamp to *data, extending the last
// run when it continues it.
func appendSector(data *[]blockdev.StampRun, sec int64, st blockdev.Stamp) {
	if k := len(*data) - 1; k >= 0 && (*data)[k].Stamp == st && (*data)[k].Sector+(*data)[k].Sectors == sec {
		(*data)[k].Sectors++
		return
	}
	*data = append(*data, blockdev.StampRun{Sector: sec, Sectors: 1, Stamp: st})
}

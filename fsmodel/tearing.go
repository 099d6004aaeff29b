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

// pageCopy is one write's copy into a page: the sectors [first, first+n)
// receive stamp between start and end; old holds the page's stamps before.
type pageCopy struct {
	start, end sim.Time
	first, n   int
	stamp      blockdev.Stamp
	old        [pagecache.SectorsPerPage]blockdev.Stamp
}

// maxCopies bounds the copies kept; older ones are dropped first when the
// bound is reached (they ended long before any read in progress began).
const maxCopies = 4096

// beginCopy records that a write of stamp s to sectors [first, first+n)
// of p copies from start for d, before the page's stamps change. Nothing
// is recorded when buffered reads hold the inode lock shared: they never
// overlap a write's copy, which holds it exclusive.
func (b *buffered) beginCopy(p *pagecache.Page, start sim.Time, d sim.Time, first, n int, s blockdev.Stamp) {
	if b.opt.ReadLockShared {
		return
	}
	if b.copies == nil {
		b.copies = make(map[*pagecache.Page]*pageCopy)
	}
	c := b.copies[p]
	if c == nil {
		if len(b.copies) >= maxCopies {
			b.pruneCopies(start)
		}
		if k := len(b.freeCopies); k > 0 {
			c = b.freeCopies[k-1]
			b.freeCopies = b.freeCopies[:k-1]
		} else {
			c = &pageCopy{}
		}
		b.copies[p] = c
	}
	c.start, c.end, c.first, c.n, c.stamp = start, start+d, first, n, s
	for i := range c.old {
		c.old[i] = p.SectorStamp(i)
	}
}

// pruneCopies drops the copies that ended before now minus a margin far
// longer than any page copy, keeping them for reuse. If none is that old
// it drops them all: no read takes a millisecond per page. (The order in
// which the map is walked decides nothing.)
func (b *buffered) pruneCopies(now sim.Time) {
	const margin = sim.Time(1_000_000) // 1 ms
	n := len(b.copies)
	for p, c := range b.copies {
		if c.end+margin < now {
			delete(b.copies, p)
			b.freeCopies = append(b.freeCopies, c)
		}
	}
	if len(b.copies) == n {
		for p, c := range b.copies {
			delete(b.copies, p)
			b.freeCopies = append(b.freeCopies, c)
		}
	}
}

// copyOf returns the recorded write copy into p that overlaps a read
// copying it between r0 and r1, or nil.
func (b *buffered) copyOf(p *pagecache.Page, r0, r1 sim.Time) *pageCopy {
	if len(b.copies) == 0 {
		return nil
	}
	c := b.copies[p]
	if c == nil || c.end <= r0 || c.start >= r1 {
		return nil
	}
	return c
}

// seenStamp returns what a reader copying sector i of p between r0 and r1
// (its copy of the page's sectors [rfirst, rfirst+rn)) read there; c is
// copyOf(p, r0, r1).
func seenStamp(c *pageCopy, p *pagecache.Page, i int, r0, r1 sim.Time, rfirst, rn int) blockdev.Stamp {
	if c == nil || i < c.first || i >= c.first+c.n {
		return p.SectorStamp(i)
	}
	// The writer finished sector i at tw, the reader read it at tr.
	tw := c.start + (c.end-c.start)*sim.Time(i-c.first+1)/sim.Time(c.n)
	tr := r0 + (r1-r0)*sim.Time(2*(i-rfirst)+1)/sim.Time(2*rn)
	if tw <= tr {
		return c.stamp
	}
	return c.old[i]
}

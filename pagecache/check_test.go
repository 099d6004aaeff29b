package pagecache

import (
	"fmt"
	"testing"

	"github.com/google/btree"
	"github.com/stretchr/testify/require"
)

// check verifies every internal invariant of c: counts, tag indexes
// against flags, LRU and out lists against the index, and the limit.
func (c *Cache) check() error {
	if c.pages > c.limit {
		return fmt.Errorf("%d pages over the limit %d", c.pages, c.limit)
	}
	pages, dirty, wb, pinnedN := 0, 0, 0, 0
	resident := map[*Page]bool{}
	for ino, in := range c.inodes { // test code: order does not matter
		if in.pages.Len() == 0 {
			return fmt.Errorf("inode %d kept with no pages", ino)
		}
		var err error
		prev := int64(-1)
		in.pages.Ascend(func(r ref) bool {
			p := r.p
			switch {
			case p.index != r.idx || p.ino != ino || p.in != in || p.c != c:
				err = fmt.Errorf("index entry %d of inode %d holds %v", r.idx, ino, p)
			case r.idx <= prev:
				err = fmt.Errorf("inode %d index out of order at %d", ino, r.idx)
			}
			prev = r.idx
			resident[p] = true
			pages++
			if p.IsDirty() {
				dirty++
				if _, ok := in.dirty.Get(ref{idx: p.index}); !ok {
					err = fmt.Errorf("%v missing from the dirty index", p)
				}
			}
			if p.IsWriteback() {
				wb++
				if _, ok := in.writeback.Get(ref{idx: p.index}); !ok {
					err = fmt.Errorf("%v missing from the writeback index", p)
				}
			}
			if p.IsToWrite() {
				if _, ok := in.towrite.Get(ref{idx: p.index}); !ok {
					err = fmt.Errorf("%v missing from the towrite index", p)
				}
			}
			if p.flags&pinned != 0 {
				pinnedN++
			}
			return err == nil
		})
		if err != nil {
			return err
		}
		for _, x := range []struct {
			t    *btree.BTreeG[ref]
			flag pageFlags
			name string
		}{{in.dirty, flagDirty, "dirty"}, {in.writeback, flagWriteback, "writeback"}, {in.towrite, flagToWrite, "towrite"}} {
			x.t.Ascend(func(r ref) bool {
				if r.p.flags&x.flag == 0 || r.p.in != in {
					err = fmt.Errorf("%s index holds %v", x.name, r.p)
				}
				return err == nil
			})
			if err != nil {
				return err
			}
		}
	}
	switch {
	case pages != c.pages:
		return fmt.Errorf("Pages() = %d, index holds %d", c.pages, pages)
	case dirty != c.dirty:
		return fmt.Errorf("Dirty() = %d, index holds %d dirty pages", c.dirty, dirty)
	case wb != c.writeback:
		return fmt.Errorf("Writeback() = %d, index holds %d", c.writeback, wb)
	case pinnedN != c.pinned:
		return fmt.Errorf("pinned = %d, index holds %d", c.pinned, pinnedN)
	}
	seen := 0
	for _, l := range []*lruList{&c.lru.inactive, &c.lru.active} {
		n := 0
		for p := l.head.lruNext; p != &l.head; p = p.lruNext {
			if !resident[p] {
				return fmt.Errorf("LRU list holds non-resident %v", p)
			}
			if (l == &c.lru.active) != p.IsActive() {
				return fmt.Errorf("%v on the wrong LRU list", p)
			}
			if p.lruNext.lruPrev != p {
				return fmt.Errorf("broken LRU links at %v", p)
			}
			n++
		}
		if n != l.n {
			return fmt.Errorf("LRU list length %d, counted %d", l.n, n)
		}
		seen += n
	}
	if seen != pages {
		return fmt.Errorf("LRU lists hold %d pages, index %d", seen, pages)
	}
	if t := c.tl; t != nil {
		n := 0
		for p := t.out.head.outNext; p != &t.out.head; p = p.outNext {
			if !resident[p] || !p.out {
				return fmt.Errorf("out list holds %v (out %v)", p, p.out)
			}
			n++
		}
		if n != t.out.n {
			return fmt.Errorf("out list length %d, counted %d", t.out.n, n)
		}
	}
	return nil
}

// mustCheck fails the test if c breaks an invariant.
func mustCheck(t testing.TB, c *Cache) {
	t.Helper()
	require.NoError(t, c.check())
}

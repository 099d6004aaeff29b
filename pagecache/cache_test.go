package pagecache

import (
	"fmt"
	"slices"
	"testing"

	"github.com/blksim/blksim/blockdev"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var policies = []string{PolicyLRU, PolicyTinyLFU}

// newCache returns a cache closed at the end of the test.
func newCache(t testing.TB, opt Options) *Cache {
	t.Helper()
	c, err := New(opt)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// addReady adds page (ino, idx) and leaves it uptodate and unlocked, as a
// completed read would.
func addReady(t testing.TB, c *Cache, ino InodeID, idx int64) *Page {
	t.Helper()
	p, err := c.Add(ino, idx)
	require.NoError(t, err)
	p.SetStamp(blockdev.Stamp{Writer: 1, Seq: uint64(idx)})
	p.SetUptodate()
	p.Unlock()
	return p
}

// dirty locks p, marks it dirty and unlocks it, as a buffered write does.
func dirty(p *Page) bool {
	p.Lock()
	defer p.Unlock()
	return p.SetDirty()
}

// startWriteback does what write_cache_pages does to one dirty page.
func startWriteback(p *Page) {
	p.Lock()
	p.ClearDirtyForIO()
	p.SetWriteback()
	p.Unlock()
}

// panicMsg returns the value f panics with, as a string, or "".
func panicMsg(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		opt     Options
		policy  string
		wantErr string
	}{
		{"default policy is lru", Options{LimitPages: 8}, PolicyLRU, ""},
		{"lru", Options{LimitPages: 8, Policy: "lru"}, PolicyLRU, ""},
		{"tinylfu", Options{LimitPages: 8, Policy: "tinylfu", Seed: 7}, PolicyTinyLFU, ""},
		{"zero limit", Options{}, "", "LimitPages must be positive"},
		{"negative limit", Options{LimitPages: -1}, "", "LimitPages must be positive"},
		{"unknown policy", Options{LimitPages: 8, Policy: "arc"}, "", `unknown policy "arc"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.opt)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.Nil(t, c)
				return
			}
			require.NoError(t, err)
			defer c.Close()
			assert.Equal(t, tt.policy, c.Policy())
			assert.Equal(t, tt.opt.LimitPages, c.Limit())
			assert.Zero(t, c.Pages())
			c.Close() // twice is fine
		})
	}
}

func TestAddFindPeek(t *testing.T) {
	for _, policy := range policies {
		t.Run(policy, func(t *testing.T) {
			c := newCache(t, Options{LimitPages: 16, Policy: policy})
			p, err := c.Add(3, 10)
			require.NoError(t, err)
			assert.Equal(t, InodeID(3), p.Inode())
			assert.Equal(t, int64(10), p.Index())
			assert.Equal(t, int64(10*PageSize), p.Pos())
			assert.True(t, p.IsLocked(), "Add returns the page locked")
			assert.False(t, p.IsUptodate())
			assert.False(t, p.IsDirty())
			assert.False(t, p.IsWriteback())
			assert.False(t, p.Evictable(), "locked")
			assert.True(t, p.Resident())
			assert.Equal(t, 1, c.Pages())
			assert.Equal(t, 1, c.InodePages(3))

			_, err = c.Add(3, 10)
			assert.ErrorIs(t, err, ErrExist)
			assert.Equal(t, 1, c.Pages())

			assert.Same(t, p, c.Peek(3, 10))
			assert.False(t, p.IsReferenced(), "Peek records no access")
			assert.Nil(t, c.Peek(3, 11))
			assert.Nil(t, c.Peek(4, 10))

			assert.Same(t, p, c.Find(3, 10))
			assert.True(t, p.IsReferenced(), "Find records an access")
			assert.Nil(t, c.Find(3, 11))
			s := c.Stats()
			assert.Equal(t, uint64(2), s.Lookups)
			assert.Equal(t, uint64(1), s.Hits)
			assert.Equal(t, uint64(1), s.Adds)

			assert.Contains(t, panicMsg(func() { _, _ = c.Add(1, -1) }), "negative index")
			// Range(ino, 0, MaxIndex) walks a whole file, so no page may
			// sit at MaxIndex itself; the index just below is the last.
			assert.Contains(t, panicMsg(func() { _, _ = c.Add(4, MaxIndex) }), "below MaxIndex")
			last, err := c.Add(4, MaxIndex-1)
			require.NoError(t, err)
			var seen []*Page
			c.Range(4, 0, MaxIndex, func(p *Page) bool { seen = append(seen, p); return true })
			assert.Equal(t, []*Page{last}, seen)
			last.Unlock()
			mustCheck(t, c)
		})
	}
}

func TestDirtyWritebackCounters(t *testing.T) {
	c := newCache(t, Options{LimitPages: 16})
	p := addReady(t, c, 1, 0)
	q := addReady(t, c, 1, 1)
	r := addReady(t, c, 2, 0)

	assert.True(t, dirty(p), "newly dirtied")
	assert.False(t, dirty(p), "already dirty")
	assert.True(t, dirty(r))
	assert.Equal(t, 2, c.Dirty())
	assert.Equal(t, 1, c.InodeDirtyPages(1))
	assert.Equal(t, 1, c.InodeDirtyPages(2))
	assert.Equal(t, 0, c.InodeDirtyPages(9))
	assert.Equal(t, uint64(2), c.Dirtied())
	assert.Equal(t, 1, c.Evictable(), "only q is clean and unlocked")
	_ = q

	startWriteback(p)
	assert.False(t, p.IsDirty())
	assert.True(t, p.IsWriteback())
	assert.Equal(t, 1, c.Dirty())
	assert.Equal(t, 1, c.Writeback())
	assert.Equal(t, 1, c.InodeWritebackPages(1))
	assert.Equal(t, 0, c.InodeDirtyPages(1))

	// Redirtied while under writeback: both.
	assert.True(t, dirty(p))
	assert.True(t, p.IsDirty() && p.IsWriteback())
	assert.Equal(t, 2, c.Dirty())
	assert.Equal(t, uint64(3), c.Dirtied())

	p.EndWriteback()
	assert.Equal(t, 0, c.Writeback())
	assert.Equal(t, uint64(1), c.Written())
	assert.True(t, p.IsDirty())

	// A page the filesystem cannot write now is redirtied.
	p.Lock()
	assert.True(t, p.ClearDirtyForIO())
	assert.False(t, p.ClearDirtyForIO(), "already clean")
	assert.True(t, p.SetDirty())
	assert.True(t, p.CancelDirty())
	assert.False(t, p.CancelDirty())
	p.Unlock()
	assert.Equal(t, 1, c.Dirty())
	assert.Equal(t, uint64(4), c.Dirtied(), "CancelDirty leaves NR_DIRTIED alone")
	mustCheck(t, c)
}

func TestInvalidTransitionsPanic(t *testing.T) {
	tests := []struct {
		name string
		do   func(c *Cache, p *Page) // p is resident, uptodate, clean, unlocked
		want string
	}{
		{"Lock a locked page", func(c *Cache, p *Page) { p.Lock(); p.Lock() }, "already locked"},
		{"Unlock an unlocked page", func(c *Cache, p *Page) { p.Unlock() }, "not locked"},
		{"SetUptodate unlocked", func(c *Cache, p *Page) { p.SetUptodate() }, "not locked"},
		{"ClearUptodate a dirty page", func(c *Cache, p *Page) { p.Lock(); p.SetDirty(); p.ClearUptodate() }, "dirty"},
		{"SetStamp unlocked", func(c *Cache, p *Page) { p.SetStamp(blockdev.Stamp{Writer: 1}) }, "not locked"},
		{"SetSectorStamps out of the page", func(c *Cache, p *Page) { p.Lock(); p.SetSectorStamps(6, 3, blockdev.Stamp{}) }, "outside the page"},
		{"SectorStamp out of range", func(c *Cache, p *Page) { p.SectorStamp(SectorsPerPage) }, "out of range"},
		{"SetDirty unlocked", func(c *Cache, p *Page) { p.SetDirty() }, "not locked"},
		{"SetDirty not uptodate", func(c *Cache, p *Page) {
			q, _ := c.Add(p.Inode(), p.Index()+1)
			q.SetDirty()
		}, "not uptodate"},
		{"ClearDirtyForIO unlocked", func(c *Cache, p *Page) { p.ClearDirtyForIO() }, "not locked"},
		{"CancelDirty unlocked", func(c *Cache, p *Page) { p.CancelDirty() }, "not locked"},
		{"SetWriteback unlocked", func(c *Cache, p *Page) { p.SetWriteback() }, "not locked"},
		{"SetWriteback dirty", func(c *Cache, p *Page) { p.Lock(); p.SetDirty(); p.SetWriteback() }, "still dirty"},
		{"SetWriteback twice", func(c *Cache, p *Page) { p.Lock(); p.SetWriteback(); p.SetWriteback() }, "already under writeback"},
		{"EndWriteback not under writeback", func(c *Cache, p *Page) { p.EndWriteback() }, "not under writeback"},
		{"Remove unlocked", func(c *Cache, p *Page) { c.Remove(p) }, "not locked"},
		{"Remove dirty", func(c *Cache, p *Page) { p.Lock(); p.SetDirty(); c.Remove(p) }, "dirty"},
		{"Remove under writeback", func(c *Cache, p *Page) { p.Lock(); p.SetWriteback(); c.Remove(p) }, "under writeback"},
		{"Remove twice", func(c *Cache, p *Page) { p.Lock(); c.Remove(p); c.Remove(p) }, "not in the cache"},
		{"Remove from another cache", func(c *Cache, p *Page) {
			o := newCache(t, Options{LimitPages: 1})
			p.Lock()
			o.Remove(p)
		}, "another cache"},
		{"SetDirty detached", func(c *Cache, p *Page) { p.Lock(); c.Remove(p); p.SetDirty() }, "not in the cache"},
		{"MarkAccessed detached", func(c *Cache, p *Page) { p.Lock(); c.Remove(p); c.MarkAccessed(p) }, "not in the cache"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(t, Options{LimitPages: 8})
			p := addReady(t, c, 1, 4)
			msg := panicMsg(func() { tt.do(c, p) })
			require.NotEmpty(t, msg, "must panic")
			assert.Contains(t, msg, tt.want)
			assert.Contains(t, msg, "pagecache: ")
			assert.Contains(t, msg, "ino 1, index", "the message names the page")
		})
	}
	c := newCache(t, Options{LimitPages: 8})
	assert.Contains(t, panicMsg(func() { c.RangeTagged(1, 0, 9, Tag(9), nil) }), "unknown tag")
}

func TestRemove(t *testing.T) {
	for _, policy := range policies {
		t.Run(policy, func(t *testing.T) {
			var evicted []*Page
			c := newCache(t, Options{LimitPages: 4, Policy: policy, OnEvict: func(p *Page) { evicted = append(evicted, p) }})
			p := addReady(t, c, 1, 0)
			q := addReady(t, c, 1, 1)
			dirty(q)
			startWriteback(q)

			// Truncation: lock, wait for writeback, cancel dirty, remove.
			p.Lock()
			c.Remove(p)
			assert.False(t, p.Resident())
			assert.True(t, p.IsLocked(), "Remove leaves the page locked")
			assert.True(t, p.IsUptodate(), "a detached page keeps its data")
			p.Unlock()
			assert.True(t, p.TryLock(), "a detached page can still be locked")
			p.Unlock()
			assert.Nil(t, c.Peek(1, 0))
			assert.Equal(t, 1, c.Pages())

			q.Lock()
			assert.Contains(t, panicMsg(func() { c.Remove(q) }), "under writeback")
			q.EndWriteback()
			dirty := q.SetDirty()
			assert.True(t, dirty)
			assert.Contains(t, panicMsg(func() { c.Remove(q) }), "dirty")
			q.CancelDirty()
			c.Remove(q)
			q.Unlock()
			assert.Zero(t, c.Pages())
			assert.Zero(t, c.InodePages(1))
			assert.Zero(t, c.Dirty())
			assert.Zero(t, c.Evictions(), "removal is not eviction")
			assert.Empty(t, evicted)

			// The index can hold the same page again.
			r := addReady(t, c, 1, 0)
			assert.NotSame(t, p, r)
			mustCheck(t, c)
		})
	}
}

func TestErrNoMemory(t *testing.T) {
	pins := []struct {
		name string
		pin  func(t *testing.T, p *Page) // p is uptodate and unlocked
	}{
		{"locked", func(t *testing.T, p *Page) { p.Lock() }},
		{"dirty", func(t *testing.T, p *Page) { dirty(p) }},
		{"writeback", func(t *testing.T, p *Page) { dirty(p); startWriteback(p) }},
	}
	for _, policy := range policies {
		for _, pin := range pins {
			t.Run(policy+"/"+pin.name, func(t *testing.T) {
				var evicted []*Page
				c := newCache(t, Options{LimitPages: 4, Policy: policy, OnEvict: func(p *Page) { evicted = append(evicted, p) }})
				var pages []*Page
				for i := range int64(4) {
					p := addReady(t, c, 1, i)
					c.Find(1, i) // accessed, so tinylfu has frequencies too
					pin.pin(t, p)
					pages = append(pages, p)
				}
				require.Zero(t, c.Evictable())
				for range 3 {
					p, err := c.Add(2, 0)
					assert.ErrorIs(t, err, ErrNoMemory)
					assert.Nil(t, p)
				}
				assert.Nil(t, c.Peek(2, 0), "a failed Add creates nothing")
				assert.Equal(t, 4, c.Pages())
				assert.Equal(t, uint64(3), c.Stats().NoMemory)
				assert.Empty(t, evicted)
				mustCheck(t, c)

				// Unpin one page: exactly that one goes.
				p := pages[2]
				switch pin.name {
				case "locked":
					p.Unlock()
				case "dirty":
					startWriteback(p)
					p.EndWriteback()
				case "writeback":
					p.EndWriteback()
				}
				n, err := c.Add(2, 0)
				require.NoError(t, err)
				assert.Equal(t, []*Page{p}, evicted)
				assert.False(t, p.Resident())
				assert.Same(t, n, c.Peek(2, 0))
				assert.Equal(t, 4, c.Pages())
				assert.Equal(t, uint64(1), c.Evictions())
				// The new page is locked: full again.
				_, err = c.Add(2, 1)
				assert.ErrorIs(t, err, ErrNoMemory)
				mustCheck(t, c)
			})
		}
	}
}

// dirtyIndexes returns the indexes RangeTagged visits.
func tagged(c *Cache, ino InodeID, from, to int64, tag Tag) []int64 {
	var got []int64
	c.RangeTagged(ino, from, to, tag, func(p *Page) bool {
		got = append(got, p.Index())
		return true
	})
	return got
}

func TestRangeTagged(t *testing.T) {
	c := newCache(t, Options{LimitPages: 1000})
	var want []int64
	for i := range int64(200) {
		p := addReady(t, c, 7, i)
		if i%7 == 3 || i == 199 || (i >= 40 && i < 60) {
			dirty(p)
			want = append(want, i)
		}
	}
	addReady(t, c, 8, 3) // another inode, clean
	dirty(addReady(t, c, 9, 3))

	tests := []struct {
		name     string
		from, to int64
		want     []int64
	}{
		{"all", 0, MaxIndex, want},
		{"sub range", 41, 45, []int64{41, 42, 43, 44}},
		{"half open", 45, 46, []int64{45}},
		{"empty range", 50, 50, nil},
		{"reversed range", 60, 40, nil},
		{"past the end", 200, MaxIndex, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tagged(c, 7, tt.from, tt.to, TagDirty))
		})
	}
	assert.Equal(t, len(want), c.InodeDirtyPages(7))
	assert.Nil(t, tagged(c, 8, 0, MaxIndex, TagDirty), "clean inode")
	assert.Nil(t, tagged(c, 99, 0, MaxIndex, TagDirty), "unknown inode")
	assert.Equal(t, []int64{3}, tagged(c, 9, 0, MaxIndex, TagDirty))

	t.Run("stop early", func(t *testing.T) {
		var got []int64
		c.RangeTagged(7, 0, MaxIndex, TagDirty, func(p *Page) bool {
			got = append(got, p.Index())
			return len(got) < 20
		})
		assert.Equal(t, want[:20], got)
	})

	t.Run("write_cache_pages", func(t *testing.T) {
		// Start writeback of every dirty page from inside the walk, as
		// write_cache_pages does: each visited exactly once, in order.
		var got []int64
		c.RangeTagged(7, 0, MaxIndex, TagDirty, func(p *Page) bool {
			got = append(got, p.Index())
			startWriteback(p)
			return true
		})
		assert.Equal(t, want, got)
		assert.Zero(t, c.InodeDirtyPages(7))
		assert.Equal(t, want, tagged(c, 7, 0, MaxIndex, TagWriteback))
		assert.Equal(t, len(want), c.InodeWritebackPages(7))
		c.RangeTagged(7, 0, MaxIndex, TagWriteback, func(p *Page) bool {
			p.EndWriteback()
			return true
		})
		assert.Zero(t, c.Writeback())
		assert.Equal(t, 1, c.Dirty(), "inode 9's page")
	})
	mustCheck(t, c)
}

func TestRangeModification(t *testing.T) {
	c := newCache(t, Options{LimitPages: 1000})
	for i := range int64(100) {
		addReady(t, c, 1, i)
	}
	t.Run("range visits all pages in order", func(t *testing.T) {
		var got []int64
		c.Range(1, 0, MaxIndex, func(p *Page) bool {
			got = append(got, p.Index())
			return true
		})
		require.Len(t, got, 100)
		assert.True(t, slices.IsSorted(got))
	})
	t.Run("removing later pages skips them", func(t *testing.T) {
		var got []int64
		c.Range(1, 0, 40, func(p *Page) bool {
			got = append(got, p.Index())
			if p.Index()%2 == 0 { // remove the next page
				if q := c.Peek(1, p.Index()+1); q != nil {
					q.Lock()
					c.Remove(q)
					q.Unlock()
				}
			}
			return true
		})
		var want []int64
		for i := int64(0); i < 40; i += 2 {
			want = append(want, i)
		}
		assert.Equal(t, want, got)
	})
	t.Run("truncate", func(t *testing.T) {
		n := 0
		c.Range(1, 0, MaxIndex, func(p *Page) bool {
			p.Lock()
			c.Remove(p)
			p.Unlock()
			n++
			return true
		})
		assert.Equal(t, 80, n)
		assert.Zero(t, c.Pages())
		assert.Zero(t, c.InodePages(1))
	})
	mustCheck(t, c)
}

func TestTagForWriteback(t *testing.T) {
	c := newCache(t, Options{LimitPages: 100})
	for i := range int64(10) {
		p := addReady(t, c, 1, i)
		if i%2 == 0 {
			dirty(p)
		}
	}
	assert.Equal(t, 3, c.TagForWriteback(1, 0, 5), "pages 0, 2, 4")
	assert.Equal(t, 2, c.TagForWriteback(1, 0, MaxIndex), "6 and 8; the rest already tagged")
	assert.Zero(t, c.TagForWriteback(2, 0, MaxIndex))
	assert.Zero(t, c.TagForWriteback(1, 5, 5))

	// A WB_SYNC_ALL walk: pages dirtied during the walk are not tagged,
	// so they cannot livelock it.
	var got []int64
	c.RangeTagged(1, 0, MaxIndex, TagToWrite, func(p *Page) bool {
		got = append(got, p.Index())
		dirty(c.Peek(1, p.Index()+1))
		startWriteback(p)
		assert.False(t, p.IsToWrite(), "SetWriteback clears towrite")
		return true
	})
	assert.Equal(t, []int64{0, 2, 4, 6, 8}, got)
	assert.Equal(t, []int64{1, 3, 5, 7, 9}, tagged(c, 1, 0, MaxIndex, TagDirty))
	assert.Nil(t, tagged(c, 1, 0, MaxIndex, TagToWrite))

	// CancelDirty leaves the tag (the walk skips clean pages); Remove
	// drops it.
	assert.Equal(t, 5, c.TagForWriteback(1, 0, MaxIndex))
	p := c.Peek(1, 3)
	p.Lock()
	p.CancelDirty()
	assert.True(t, p.IsToWrite())
	c.Remove(p)
	p.Unlock()
	assert.Equal(t, []int64{1, 5, 7, 9}, tagged(c, 1, 0, MaxIndex, TagToWrite))
	mustCheck(t, c)
}

func TestStamps(t *testing.T) {
	c := newCache(t, Options{LimitPages: 4})
	p, err := c.Add(1, 0)
	require.NoError(t, err)
	assert.Equal(t, blockdev.Stamp{}, p.Stamp(), "never written")
	a, b := blockdev.Stamp{Writer: 1, Seq: 1}, blockdev.Stamp{Writer: 2, Seq: 9}
	p.SetStamp(a)
	assert.Equal(t, a, p.Stamp())
	assert.True(t, p.UniformStamp())

	p.SetSectorStamps(2, 3, b) // a 1536-byte write at offset 1024
	assert.False(t, p.UniformStamp())
	for i, want := range []blockdev.Stamp{a, a, b, b, b, a, a, a} {
		assert.Equal(t, want, p.SectorStamp(i), "sector %d", i)
	}
	assert.Equal(t, a, p.Stamp(), "first sector's")

	p.SetSectorStamps(0, 2, b)
	p.SetSectorStamps(5, 3, b)
	assert.True(t, p.UniformStamp(), "covered piecewise: uniform again")
	assert.Equal(t, b, p.Stamp())
	p.SetSectorStamps(0, 0, a)
	assert.Equal(t, b, p.Stamp())
	p.SetSectorStamps(0, SectorsPerPage, a)
	assert.Equal(t, a, p.Stamp())
	assert.True(t, p.UniformStamp())

	p.Private = 12345
	p.Unlock()
	assert.Equal(t, uint64(12345), c.Peek(1, 0).Private)
}

func TestPageString(t *testing.T) {
	c := newCache(t, Options{LimitPages: 4})
	p := addReady(t, c, 5, 9)
	dirty(p)
	assert.Equal(t, "page(ino 5, index 9, [UD])", p.String())
	p.Lock()
	p.CancelDirty()
	c.Remove(p)
	assert.Equal(t, "page(ino 5, index 9, [UL] detached)", p.String())
	assert.Equal(t, "dirty", TagDirty.String())
	assert.Equal(t, "towrite", TagToWrite.String())
	assert.Equal(t, "writeback", TagWriteback.String())
	assert.Equal(t, "Tag(0)", Tag(0).String())
}

func TestReadaheadMarkerFlag(t *testing.T) {
	c := newCache(t, Options{LimitPages: 4})
	p, err := c.Add(1, 0)
	require.NoError(t, err)
	assert.False(t, p.TestClearReadahead())
	p.SetReadahead()
	assert.True(t, p.IsReadahead())
	assert.True(t, p.TestClearReadahead())
	assert.False(t, p.IsReadahead())
}

package pagecache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/blksim/blksim/blockdev"
	"github.com/stretchr/testify/require"
)

// shadow is what a property test believes is resident.
type shadow struct {
	live []*Page
	pos  map[*Page]int
}

func (s *shadow) add(p *Page) {
	s.pos[p] = len(s.live)
	s.live = append(s.live, p)
}

func (s *shadow) del(p *Page) {
	i, ok := s.pos[p]
	if !ok {
		panic(fmt.Sprintf("shadow: %v not live", p))
	}
	last := s.live[len(s.live)-1]
	s.live[i] = last
	s.pos[last] = i
	s.live = s.live[:len(s.live)-1]
	delete(s.pos, p)
}

// pick returns a random live page that satisfies ok, or nil.
func (s *shadow) pick(rng *rand.Rand, ok func(*Page) bool) *Page {
	if len(s.live) == 0 {
		return nil
	}
	start := rng.IntN(len(s.live))
	for k := range s.live {
		if p := s.live[(start+k)%len(s.live)]; ok(p) {
			return p
		}
	}
	return nil
}

// runRandomOps drives a cache with a random operation sequence and checks,
// after every step, every invariant plus: the limit holds, nothing dirty,
// under writeback or locked is evicted, ErrNoMemory only when nothing is
// evictable, the resident set is exactly the one expected, and the tagged
// lookups return exactly the tagged pages in order. It returns the
// evictions, as "ino/index" strings.
func runRandomOps(t *testing.T, policy string, seed uint64, steps int) []string {
	rng := rand.New(rand.NewPCG(seed, 0x9a9e))
	limit := 1 + rng.IntN(48)
	inodes := 1 + rng.IntN(4)
	span := int64(1 + rng.IntN(3*limit))
	sh := &shadow{pos: map[*Page]int{}}
	var evictions []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("policy %s seed %d (limit %d): %s", policy, seed, limit, fmt.Sprintf(format, args...))
	}
	c, err := New(Options{LimitPages: limit, Policy: policy, Seed: seed, OnEvict: func(p *Page) {
		if p.IsDirty() || p.IsWriteback() || p.IsLocked() {
			fail("evicted a pinned page %v", p)
		}
		if p.Resident() {
			fail("OnEvict of resident %v", p)
		}
		sh.del(p)
		evictions = append(evictions, fmt.Sprintf("%d/%d", p.Inode(), p.Index()))
	}})
	require.NoError(t, err)
	defer c.Close()

	for step := range steps {
		op := rng.IntN(100)
		switch {
		case op < 30: // add, filled or left locked
			ino, idx := InodeID(rng.IntN(inodes)), rng.Int64N(span)
			evictable, pages, existed := c.Evictable(), c.Pages(), c.Peek(ino, idx) != nil
			p, err := c.Add(ino, idx)
			switch {
			case existed:
				if !errors.Is(err, ErrExist) {
					fail("step %d: Add of an existing page: %v", step, err)
				}
			case errors.Is(err, ErrNoMemory):
				if evictable != 0 || pages != limit {
					fail("step %d: ErrNoMemory with %d/%d pages, %d evictable", step, pages, limit, evictable)
				}
				if c.Pages() != pages || c.Peek(ino, idx) != nil {
					fail("step %d: a failed Add changed the cache", step)
				}
			case err != nil:
				fail("step %d: Add: %v", step, err)
			default:
				sh.add(p)
				if rng.IntN(4) != 0 {
					p.SetStamp(blockdev.Stamp{Writer: 1, Seq: uint64(step)})
					p.SetUptodate()
					p.Unlock()
				}
			}
		case op < 45: // lookups
			ino, idx := InodeID(rng.IntN(inodes)), rng.Int64N(span)
			p := c.Find(ino, idx)
			want := sh.pick(rng, func(q *Page) bool { return q.Inode() == ino && q.Index() == idx })
			if p != want {
				fail("step %d: Find(%d, %d) = %v, want %v", step, ino, idx, p, want)
			}
		case op < 55: // unlock, filling a page left locked by Add
			if p := sh.pick(rng, (*Page).IsLocked); p != nil {
				if !p.IsUptodate() {
					p.SetUptodate()
				}
				p.Unlock()
			}
		case op < 60: // lock
			if p := sh.pick(rng, func(p *Page) bool { return !p.IsLocked() }); p != nil {
				p.Lock()
			}
		case op < 75: // buffered write
			if p := sh.pick(rng, func(p *Page) bool { return !p.IsLocked() && p.IsUptodate() }); p != nil {
				p.Lock()
				p.SetStamp(blockdev.Stamp{Writer: 2, Seq: uint64(step)})
				p.SetDirty()
				p.MarkAccessed()
				p.Unlock()
			}
		case op < 83: // writepages: start writeback of one inode's dirty pages
			ino := InodeID(rng.IntN(inodes))
			n := rng.IntN(8)
			if rng.IntN(2) == 0 {
				c.TagForWriteback(ino, 0, MaxIndex)
			}
			c.RangeTagged(ino, rng.Int64N(span), MaxIndex, TagDirty, func(p *Page) bool {
				if n == 0 {
					return false
				}
				n--
				if p.IsWriteback() || !p.TryLock() {
					return true
				}
				p.ClearDirtyForIO()
				p.SetWriteback()
				p.Unlock()
				return true
			})
		case op < 91: // writeback completion
			if p := sh.pick(rng, (*Page).IsWriteback); p != nil {
				p.EndWriteback()
			}
		case op < 96: // truncate one page
			if p := sh.pick(rng, func(p *Page) bool { return !p.IsLocked() && !p.IsWriteback() }); p != nil {
				p.Lock()
				p.CancelDirty()
				c.Remove(p)
				sh.del(p)
				p.Unlock()
			}
		default: // tagged and plain lookups against the shadow
			ino := InodeID(rng.IntN(inodes))
			from, to := rng.Int64N(span+1), rng.Int64N(span+1)
			for _, x := range []struct {
				tag Tag
				has func(*Page) bool
			}{
				{0, func(*Page) bool { return true }},
				{TagDirty, (*Page).IsDirty},
				{TagWriteback, (*Page).IsWriteback},
				{TagToWrite, (*Page).IsToWrite},
			} {
				var want []int64
				for _, p := range sh.live {
					if p.Inode() == ino && p.Index() >= from && p.Index() < to && x.has(p) {
						want = append(want, p.Index())
					}
				}
				slices.Sort(want)
				var got []int64
				visit := func(p *Page) bool { got = append(got, p.Index()); return true }
				if x.tag == 0 {
					c.Range(ino, from, to, visit)
				} else {
					c.RangeTagged(ino, from, to, x.tag, visit)
				}
				if !slices.Equal(got, want) {
					fail("step %d: walk %v of inode %d [%d, %d) = %v, want %v", step, x.tag, ino, from, to, got, want)
				}
			}
			var dirty int
			for _, p := range sh.live {
				if p.Inode() == ino && p.IsDirty() {
					dirty++
				}
			}
			if c.InodeDirtyPages(ino) != dirty {
				fail("step %d: InodeDirtyPages(%d) = %d, want %d", step, ino, c.InodeDirtyPages(ino), dirty)
			}
		}

		if err := c.check(); err != nil {
			fail("step %d: %v", step, err)
		}
		if c.Pages() != len(sh.live) {
			fail("step %d: %d pages, expected %d", step, c.Pages(), len(sh.live))
		}
		for _, p := range sh.live {
			if !p.Resident() || c.Peek(p.Inode(), p.Index()) != p {
				fail("step %d: %v lost", step, p)
			}
		}
	}
	st := c.Stats()
	noMemory.add(policy, st)
	return evictions
}

// statTotals sums the stats of many runs, to show what they exercised.
type statTotals map[string]*Stats

func (m statTotals) add(policy string, s Stats) {
	t := m[policy]
	if t == nil {
		t = &Stats{}
		m[policy] = t
	}
	t.NoMemory += s.NoMemory
	t.Evictions += s.Evictions
	t.Rotations += s.Rotations
	t.Activations += s.Activations
	t.Deactivations += s.Deactivations
	t.TinyLFU.Admitted += s.TinyLFU.Admitted
	t.TinyLFU.Rejected += s.TinyLFU.Rejected
	t.TinyLFU.PolicyEvicted += s.TinyLFU.PolicyEvicted
	t.TinyLFU.Preferred += s.TinyLFU.Preferred
	t.TinyLFU.Fallback += s.TinyLFU.Fallback
	t.TinyLFU.Readmissions += s.TinyLFU.Readmissions
}

var noMemory = statTotals{}

// TestRandomOperations is the property test: see runRandomOps.
func TestRandomOperations(t *testing.T) {
	seeds := map[string]int{PolicyLRU: 400, PolicyTinyLFU: 60}
	steps := 1500
	if testing.Short() {
		seeds = map[string]int{PolicyLRU: 40, PolicyTinyLFU: 8}
	}
	for _, policy := range policies {
		t.Run(policy, func(t *testing.T) {
			evicted := 0
			for seed := range uint64(seeds[policy]) {
				evicted += len(runRandomOps(t, policy, seed, steps))
			}
			st := noMemory[policy]
			require.Positive(t, evicted, "the sequences must exercise eviction")
			require.Positive(t, st.NoMemory, "and ErrNoMemory")
			require.Positive(t, st.Rotations)
			if policy == PolicyTinyLFU && !raceEnabled {
				require.Positive(t, st.TinyLFU.Preferred, "ristretto's choices must be used")
				require.Positive(t, st.TinyLFU.Fallback)
				require.Positive(t, st.TinyLFU.Readmissions)
			}
			t.Logf("%d evictions; totals %+v", evicted, *st)
		})
	}
}

// TestLRUDeterministic: the same operations evict the same pages.
func TestLRUDeterministic(t *testing.T) {
	for seed := range uint64(20) {
		a := runRandomOps(t, PolicyLRU, seed, 1000)
		b := runRandomOps(t, PolicyLRU, seed, 1000)
		require.Equal(t, a, b, "seed %d", seed)
	}
}

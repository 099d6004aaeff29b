package pagecache

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hotAndScan reads a hot set of pages while scanning pages read once (two
// hot reads per scanned page), and returns the hot set's hit ratio over
// the second half and the cache's stats.
func hotAndScan(t *testing.T, policy string, limit, hot, scan int) (float64, Stats) {
	c := newCache(t, Options{LimitPages: limit, Policy: policy})
	rng := rand.New(rand.NewPCG(1, 2))
	read := func(ino InodeID, i int64) bool {
		if c.Find(ino, i) != nil {
			return true
		}
		p, err := c.Add(ino, i)
		require.NoError(t, err)
		p.SetUptodate()
		p.Unlock()
		c.MarkAccessed(p)
		return false
	}
	hits, reads := 0, 0
	for i := range int64(scan) {
		read(2, i)
		for range 2 {
			hit := read(1, rng.Int64N(int64(hot)))
			if i >= int64(scan/2) {
				reads++
				if hit {
					hits++
				}
			}
		}
	}
	mustCheck(t, c)
	return float64(hits) / float64(reads), c.Stats()
}

func TestTinyLFUDecides(t *testing.T) {
	const limit, hot, scan = 256, 192, 4000
	lru, _ := hotAndScan(t, PolicyLRU, limit, hot, scan)
	for range 3 {
		ratio, s := hotAndScan(t, PolicyTinyLFU, limit, hot, scan)
		// Not deterministic: log the outcome, assert only that
		// ristretto's decisions were taken.
		t.Logf("hot hit ratio: tinylfu %.2f, lru %.2f; %+v", ratio, lru, s.TinyLFU)
		assert.Equal(t, s.Adds-uint64(limit), s.Evictions)
		assert.Positive(t, ratio)
		if raceEnabled {
			continue // ristretto sees (almost) no accesses: see raceEnabled
		}
		assert.Positive(t, s.TinyLFU.Rejected, "pages read once are refused")
		assert.Positive(t, s.TinyLFU.PolicyEvicted)
		assert.Positive(t, s.TinyLFU.Preferred, "ristretto's choices are evicted")
		assert.Greater(t, s.TinyLFU.Preferred, s.TinyLFU.Fallback)
	}
}

func TestTinyLFUNeverEvictsPinned(t *testing.T) {
	// Hot pages ristretto wants to keep are clean; the pages it refuses
	// are dirty: they stay, and the clean hot pages go.
	var evicted []*Page
	c := newCache(t, Options{LimitPages: 32, Policy: PolicyTinyLFU, OnEvict: func(p *Page) { evicted = append(evicted, p) }})
	for i := range int64(16) {
		addReady(t, c, 1, i)
		for range 50 {
			c.Find(1, i)
		}
	}
	var pinnedPages []*Page
	for i := range int64(200) {
		p, err := c.Add(2, i)
		if err != nil {
			require.ErrorIs(t, err, ErrNoMemory)
			require.Zero(t, c.Evictable())
			break
		}
		p.SetUptodate()
		p.SetDirty()
		p.Unlock()
		pinnedPages = append(pinnedPages, p)
	}
	assert.Len(t, pinnedPages, 32, "every clean page made room")
	for _, p := range evicted {
		assert.Equal(t, InodeID(1), p.Inode())
	}
	for _, p := range pinnedPages {
		assert.True(t, p.Resident())
	}
	assert.Equal(t, 32, c.Pages())
	mustCheck(t, c)
}

func TestTinyLFUClose(t *testing.T) {
	c, err := New(Options{LimitPages: 8, Policy: PolicyTinyLFU})
	require.NoError(t, err)
	for i := range int64(20) {
		addReady(t, c, 1, i)
	}
	c.Close()
	c.Close()
	// goleak (TestMain) checks ristretto's goroutines are gone.
}

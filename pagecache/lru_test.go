package pagecache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// evictLog returns a cache that records the (inode 1) indexes it evicts.
func evictLog(t *testing.T, limit int) (*Cache, *[]int64) {
	var log []int64
	c := newCache(t, Options{LimitPages: limit, OnEvict: func(p *Page) {
		assert.False(t, p.Resident(), "OnEvict sees a detached page")
		log = append(log, p.Index())
	}})
	return c, &log
}

func TestLRUSecondAccessActivates(t *testing.T) {
	c := newCache(t, Options{LimitPages: 4})
	p := addReady(t, c, 1, 0)
	assert.False(t, p.IsReferenced() || p.IsActive(), "new pages start inactive, unreferenced")

	c.Peek(1, 0)
	assert.False(t, p.IsReferenced(), "Peek is not an access")
	c.Find(1, 0)
	assert.True(t, p.IsReferenced())
	assert.False(t, p.IsActive(), "one access only references")
	c.Find(1, 0)
	assert.True(t, p.IsActive(), "the second access activates")
	assert.False(t, p.IsReferenced(), "activation clears PG_referenced")
	p.MarkAccessed()
	assert.True(t, p.IsActive() && p.IsReferenced())
	p.MarkAccessed()
	assert.True(t, p.IsActive() && p.IsReferenced(), "no change once active and referenced")
	s := c.Stats()
	assert.Equal(t, uint64(1), s.Activations)
	assert.Equal(t, 1, s.Active)
	assert.Equal(t, 0, s.Inactive)
	mustCheck(t, c)
}

func TestLRUShrinkOrder(t *testing.T) {
	c, log := evictLog(t, 4)
	for i := range int64(10) {
		addReady(t, c, 1, i)
		c.Find(1, i) // one access only references: still inactive
	}
	assert.Equal(t, []int64{0, 1, 2, 3, 4, 5}, *log, "the inactive list is FIFO")
	assert.Equal(t, uint64(6), c.Evictions())
	assert.Equal(t, 4, c.Pages())
}

func TestLRUActivePagesSurvive(t *testing.T) {
	c, log := evictLog(t, 4)
	for i := range int64(4) {
		addReady(t, c, 1, i)
	}
	c.Find(1, 0)
	c.Find(1, 0) // active: [0]; inactive: 3 2 1 (head to tail)
	for i := int64(4); i < 8; i++ {
		addReady(t, c, 1, i)
	}
	assert.Equal(t, []int64{1, 2, 3, 4}, *log, "inactive tail first; 0 is active")
	// Resident: 0 (active), 7 6 5 (inactive). Activate 5 and 6: active
	// 6 5 0, inactive 7: inactive_is_low (1 < 3), so reclaim first
	// deactivates the active tail (0) to the inactive head.
	for _, i := range []int64{5, 5, 6, 6} {
		c.Find(1, i)
	}
	addReady(t, c, 1, 8)
	assert.Equal(t, []int64{1, 2, 3, 4, 7}, *log)
	assert.False(t, c.Peek(1, 0).IsActive(), "deactivated")
	assert.Equal(t, uint64(1), c.Stats().Deactivations)
	addReady(t, c, 1, 9)
	assert.Equal(t, []int64{1, 2, 3, 4, 7, 0}, *log, "then it is the inactive tail")
	assert.True(t, c.Peek(1, 5).IsActive() && c.Peek(1, 6).IsActive())
	mustCheck(t, c)
}

func TestLRURotatesPinnedPages(t *testing.T) {
	c, log := evictLog(t, 4)
	for i := range int64(4) {
		addReady(t, c, 1, i)
	}
	p := c.Peek(1, 0)
	dirty(p) // the inactive tail, now unevictable
	addReady(t, c, 1, 4)
	assert.Equal(t, []int64{1}, *log, "dirty 0 rotated to the head, 1 evicted")
	s := c.Stats()
	assert.Equal(t, uint64(1), s.Rotations)
	assert.Equal(t, uint64(2), s.Scanned)
	for i := int64(5); i < 8; i++ {
		addReady(t, c, 1, i)
	}
	assert.Equal(t, []int64{1, 2, 3, 4}, *log, "0 reached the tail again at the 4th Add and was rotated again")
	assert.Equal(t, uint64(2), c.Stats().Rotations)
	assert.True(t, p.Resident() && p.IsDirty())

	// Once written back it is the next victim at the tail.
	startWriteback(p)
	addReady(t, c, 1, 8)
	assert.Equal(t, []int64{1, 2, 3, 4, 5}, *log, "writeback pages rotate too")
	p.EndWriteback()
	addReady(t, c, 1, 9)
	addReady(t, c, 1, 10)
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 0}, *log)
	mustCheck(t, c)
}

func TestLRUDeactivatesWhenInactiveAllPinned(t *testing.T) {
	c, log := evictLog(t, 3)
	for i := range int64(3) {
		addReady(t, c, 1, i)
	}
	c.Find(1, 0)
	c.Find(1, 0) // active: 0
	dirty(c.Peek(1, 1))
	c.Peek(1, 2).Lock()
	addReady(t, c, 1, 3)
	assert.Equal(t, []int64{0}, *log, "the active page is the only evictable one")
	s := c.Stats()
	assert.Equal(t, uint64(2), s.Rotations)
	assert.Equal(t, uint64(1), s.Deactivations)
	mustCheck(t, c)
}

func TestInactiveIsLow(t *testing.T) {
	const gib = 1 << 18 // pages
	tests := []struct {
		name             string
		inactive, active int
		low              bool
	}{
		{"empty", 0, 0, false},
		{"small, balanced", 10, 10, false},
		{"small, 1:1 ratio", 9, 10, true},
		{"1 GiB, ratio 3, at it", gib / 4, 3 * gib / 4, false},
		{"1 GiB, ratio 3, below", gib/4 - 1, 3*gib/4 + 1, true},
		{"10 GiB, ratio 10, at it", 10*gib/11 + 1, 100 * gib / 11, false},
		{"10 GiB, ratio 10, below", 10*gib/11 - 100, 100*gib/11 + 100, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l lru
			l.inactive.n, l.active.n = tt.inactive, tt.active
			assert.Equal(t, tt.low, l.inactiveIsLow())
		})
	}
	for x, want := range map[int]int{0: 0, 1: 1, 3: 1, 4: 2, 10: 3, 99: 9, 100: 10, 1 << 40: 1 << 20} {
		require.Equal(t, want, isqrt(x), "isqrt(%d)", x)
	}
}

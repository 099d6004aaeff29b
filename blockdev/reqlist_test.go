package blockdev

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
)

// TestRequestListBatching follows __get_request and freed_request on a
// list of 4: below the limit anyone allocates; the allocation that fills
// it makes its process a batcher, which may go on to 3/2 of the limit
// while others are refused; freeing clears the full mark only once the
// count is below the limit again; a batcher's allowance lapses 20 ms
// after it was granted unless untouched.
func TestRequestListBatching(t *testing.T) {
	const a, b, sync = 1, 2, 1
	l := newRequestList(4)
	var now sim.Time
	for i := range 3 {
		require.True(t, l.tryGet(sync, a, now, false), "allocation %d below the limit", i+1)
	}
	assert.False(t, l.batching(a, now))
	require.True(t, l.tryGet(sync, a, now, false), "the allocation that fills the list")
	assert.True(t, l.full[sync])
	assert.True(t, l.batching(a, now))
	assert.False(t, l.tryGet(sync, b, now, false), "another process, list full")
	assert.True(t, l.tryGet(sync, b, now, true), "exempt by the scheduler (ELV_MQUEUE_MUST)")
	assert.True(t, l.tryGet(sync, a, now, false), "the batcher past the limit")
	assert.False(t, l.tryGet(sync, a, now, false), "at 3/2 of the limit even a batcher waits")
	assert.Equal(t, 6, l.count[sync])
	assert.Equal(t, 0, l.count[0], "async requests have their own list")

	l.put(sync)
	l.put(sync)
	assert.True(t, l.full[sync], "4 allocated: still full")
	l.put(sync)
	assert.False(t, l.full[sync], "3 allocated: room again")
	require.True(t, l.tryGet(sync, b, now, false), "b fills the list and becomes a batcher")
	assert.True(t, l.batching(b, now))

	now += sim.Time(21 * time.Millisecond)
	assert.False(t, l.batching(a, now), "a's used allowance lapsed after 20 ms")
	l.setBatching(a, now)
	now += sim.Time(time.Second)
	assert.True(t, l.batching(a, now), "an untouched allowance holds however long")
	assert.Equal(t, batchRequests, l.batch[a].left)
}

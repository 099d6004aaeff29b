package fsmodel

import (
	"testing"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/writeback"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNodeIndex(t *testing.T) {
	for _, tc := range []struct {
		page int64
		node int
	}{
		{0, 0}, {922, 0}, {923, 1}, {923 + 1017, 1}, {923 + 1018, 2}, {8191, 8},
	} {
		assert.Equal(t, tc.node, nodeIndex(tc.page), "page %d", tc.page)
	}
}

// An f2fs fsync writes the file's dirty direct nodes (the inode block and
// the direct nodes of the pages written back) after its data, out of
// place at the warm node log, apart from the data blocks, as one
// REQ_SYNC request when they are contiguous. An fsync with nothing new
// writes none; one after an overwrite rewrites the inode and the one
// direct node that changed, to new blocks. ext4 (delayed allocation)
// keeps no nodes.
func TestF2FSFsyncWritesDirectNodes(t *testing.T) {
	s := newBufStack(t, AllocLog, true, writeback.F2FSv419, 1<<16)
	f, err := s.fs.Create("a")
	require.NoError(t, err)
	const pages = 4096 // 16 MiB: the inode and 4 direct nodes
	var nodesAfter [3][]int64
	var writes [3]uint64
	s.e.Go("w", func(tk *sim.Task) {
		require.NoError(t, f.BufferedWrite(tk, 0, pages*BlockSize, blockdev.Stamp{Writer: 1, Seq: 1}))
		for i := range 3 {
			if i == 2 {
				// A page in direct node 2's range.
				require.NoError(t, f.BufferedWrite(tk, (923+1018+5)*BlockSize, BlockSize, blockdev.Stamp{Writer: 1, Seq: 2}))
			}
			require.NoError(t, f.Fsync(tk))
			nodesAfter[i] = append([]int64(nil), f.NodeBlocks()...)
			writes[i] = s.q.Stats().IOs[blockdev.OpWrite]
		}
	})
	require.NoError(t, s.e.Run(-1))
	first := nodesAfter[0]
	require.Len(t, first, 5)
	for k, blk := range first {
		assert.Equal(t, first[0]+int64(k), blk, "node %d follows the one before", k)
		for _, e := range f.BlockExtents() {
			assert.False(t, blk >= e.Physical/BlockSize && blk < (e.Physical+e.Length)/BlockSize, "node %d at block %d inside data extent %+v", k, blk, e)
		}
	}
	sizes := s.q.Stats().DispatchedSizes[blockdev.OpWrite]
	assert.Equal(t, uint64(1), sizes[5*BlockSize], "the five nodes go out as one request: %v", sizes)
	assert.Equal(t, writes[0], writes[1], "an fsync with nothing dirty writes nothing")
	assert.Equal(t, first, nodesAfter[1])
	third := nodesAfter[2]
	for k := range third {
		if k == 0 || k == 2 {
			assert.NotEqual(t, first[k], third[k], "node %d moved", k)
			assert.Greater(t, third[k], first[4], "node %d rewritten at the log's head", k)
		} else {
			assert.Equal(t, first[k], third[k], "node %d untouched", k)
		}
	}
	// The data page moved out of place too: 1 data + 1 node request (the
	// inode and node 2 are adjacent in the log).
	assert.Equal(t, writes[1]+2, writes[2])

	ext4 := newBufStack(t, AllocDelayed, false, 0, 1<<10)
	g, err := ext4.fs.Create("b")
	require.NoError(t, err)
	ext4.e.Go("w", func(tk *sim.Task) {
		require.NoError(t, g.BufferedWrite(tk, 0, 1<<20, blockdev.Stamp{Writer: 1, Seq: 1}))
		require.NoError(t, g.Fsync(tk))
	})
	require.NoError(t, ext4.e.Run(-1))
	assert.Nil(t, g.NodeBlocks())
	assert.Equal(t, uint64(2), ext4.q.Stats().IOs[blockdev.OpWrite], "ext4 writes its data alone")
}

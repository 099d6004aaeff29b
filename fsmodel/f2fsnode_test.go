package fsmodel

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

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
// REQ_SYNC request when they are contiguous. Then, step by step:
//   - an fsync with nothing new writes nothing;
//   - an fsync of 1 dirty page (at most min_fsync_blocks, 8) updates it
//     in place: its node stays, the inode block (times) is rewritten;
//   - an fsync of 16 dirty pages writes them at the log's head: their
//     direct node moves, and the inode;
//   - an fdatasync of 16 dirty pages updates them in place and, the size
//     unchanged, writes no node at all.
//
// ext4 (delayed allocation) keeps no nodes.
func TestF2FSFsyncWritesDirectNodes(t *testing.T) {
	s := newBufStack(t, AllocLog, true, writeback.F2FSv419, 1<<16)
	f, err := s.fs.Create("a")
	require.NoError(t, err)
	const pages = 4096             // 16 MiB: the inode and 4 direct nodes
	node2 := int64(923 + 1018 + 5) // a page in direct node 2's range
	steps := []struct {
		name     string
		pages    int64 // overwritten before the sync, from node2
		datasync bool
		moved    []int  // nodes rewritten
		requests uint64 // write requests
		inPlace  bool   // the overwritten pages kept their blocks
	}{
		{"nothing new", 0, false, nil, 0, true},
		{"fsync of 1 page", 1, false, []int{0}, 2, true},
		{"fsync of 16 pages", 16, false, []int{0, 2}, 2, false},
		{"fdatasync of 16 pages", 16, true, nil, 1, true},
	}
	var first []int64
	type after struct {
		nodes  []int64
		blocks []int64
		writes uint64
	}
	results := make([]after, len(steps))
	s.e.Go("w", func(tk *sim.Task) {
		require.NoError(t, f.BufferedWrite(tk, 0, pages*BlockSize, blockdev.Stamp{Writer: 1, Seq: 1}))
		require.NoError(t, f.Fsync(tk))
		first = append([]int64(nil), f.NodeBlocks()...)
		prev := after{first, append([]int64(nil), f.Blocks()...), s.q.Stats().IOs[blockdev.OpWrite]}
		for i, st := range steps {
			if st.pages > 0 {
				require.NoError(t, f.BufferedWrite(tk, node2*BlockSize, st.pages*BlockSize, blockdev.Stamp{Writer: 1, Seq: uint64(2 + i)}))
			}
			if st.datasync {
				require.NoError(t, f.Fdatasync(tk))
			} else {
				require.NoError(t, f.Fsync(tk))
			}
			cur := after{append([]int64(nil), f.NodeBlocks()...), append([]int64(nil), f.Blocks()...), s.q.Stats().IOs[blockdev.OpWrite]}
			results[i] = after{cur.nodes, cur.blocks, cur.writes - prev.writes}
			for k := range cur.nodes {
				assert.Equal(t, slices.Contains(st.moved, k), cur.nodes[k] != prev.nodes[k], "%s: node %d moved", st.name, k)
			}
			for p := node2; p < node2+st.pages; p++ {
				assert.Equal(t, st.inPlace, cur.blocks[p] == prev.blocks[p], "%s: page %d in place", st.name, p)
			}
			prev = cur
		}
	})
	require.NoError(t, s.e.Run(-1))
	require.Len(t, first, 5)
	for k, blk := range first {
		assert.Equal(t, first[0]+int64(k), blk, "node %d follows the one before", k)
		for _, e := range f.BlockExtents() {
			assert.False(t, blk >= e.Physical/BlockSize && blk < (e.Physical+e.Length)/BlockSize, "node %d at block %d inside data extent %+v", k, blk, e)
		}
	}
	assert.Equal(t, uint64(1), s.q.Stats().DispatchedSizes[blockdev.OpWrite][5*BlockSize], "the five nodes go out as one request")
	for i, st := range steps {
		assert.Equal(t, st.requests, results[i].writes, "%s: write requests", st.name)
	}

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

// blockOwners checks fs's space: every block (data, node or freed) has
// one owner and lies on the device, and allocations and reservations fit.
func blockOwners(fs *FS) []string {
	capBlocks := fs.q.Device().Capacity() / BlockSize
	owner := map[int64]string{}
	var errs []string
	own := func(b int64, who string) {
		if b >= capBlocks {
			errs = append(errs, fmt.Sprintf("%s at block %d, past the device (%d blocks)", who, b, capBlocks))
		}
		if o, ok := owner[b]; ok {
			errs = append(errs, fmt.Sprintf("block %d held by %s and %s", b, o, who))
		}
		owner[b] = who
	}
	for _, f := range fs.order {
		for i, b := range f.blocks {
			if b >= 0 {
				own(b, fmt.Sprintf("%s page %d", f.name, i))
			}
		}
		for k, n := range f.nodes {
			if n.blk >= 0 {
				own(n.blk, fmt.Sprintf("%s node %d", f.name, k))
			}
		}
	}
	for _, b := range fs.freed {
		own(b, "the freed list")
	}
	if fs.allocated+fs.reserved > capBlocks {
		errs = append(errs, fmt.Sprintf("allocated %d + reserved %d > %d blocks", fs.allocated, fs.reserved, capBlocks))
	}
	return errs
}

// A write that makes a new direct node while an fsync of the same file
// is writing its nodes grows the file's node list under the fsync: the
// fsync must still leave every node it wrote clean at its new block,
// with its reservation taken once. At every moment the write may come,
// the final fsync leaves all nodes clean, each block one owner, and the
// space accounted exactly (pages + nodes).
func TestF2FSNodeListGrowsDuringFsync(t *testing.T) {
	pages := int64(923 + 2*1018 + 10) // the inode and direct nodes 1-3
	for delay := range 40 {
		s := newBufStack(t, AllocLog, true, writeback.F2FSv419, 1<<18)
		f, err := s.fs.Create("a")
		require.NoError(t, err)
		s.e.Go("sync", func(tk *sim.Task) {
			require.NoError(t, f.BufferedWrite(tk, 0, pages*BlockSize, blockdev.Stamp{Writer: 1, Seq: 1}))
			require.NoError(t, f.Fsync(tk))
		})
		s.e.Go("grow", func(tk *sim.Task) {
			for len(f.nodes) < 4 || !f.nodes[0].writeback {
				tk.Sleep(50 * time.Nanosecond)
			}
			tk.Sleep(time.Duration(delay) * 100 * time.Nanosecond)
			// A page in direct node 4's range: a fifth node.
			require.NoError(t, f.BufferedWrite(tk, (923+3*1018+5)*BlockSize, BlockSize, blockdev.Stamp{Writer: 2, Seq: 1}))
		})
		require.NoError(t, s.e.Run(-1))
		s.e.Go("last", func(tk *sim.Task) { require.NoError(t, f.Fsync(tk)) })
		require.NoError(t, s.e.Run(-1))
		errs := blockOwners(s.fs)
		for k, n := range f.nodes {
			if n.reserved || n.dirty || n.writeback || n.blk < 0 {
				errs = append(errs, fmt.Sprintf("node %d after the last fsync: %+v", k, n))
			}
		}
		if want := pages + 1 + 5; s.fs.allocated != want || s.fs.reserved != 0 {
			errs = append(errs, fmt.Sprintf("allocated %d, reserved %d: want %d and 0", s.fs.allocated, s.fs.reserved, want))
		}
		require.Empty(t, errs, "write %d00 ns after the fsync's first node", delay)
	}
}

// Random overwrites, extensions, fsyncs and fdatasyncs of three files by
// three tasks on a 4 MiB f2fs, past full (a write that finds no block
// fails with ENOSPC): after every operation each
// block has one owner and the space adds up; at the end every page
// written and synced reads back with its last stamp.
func TestF2FSSpaceUnderRandomSyncs(t *testing.T) {
	nospaceTotal := 0
	for seed := range 12 {
		pol := writeback.Default{Serializer: writeback.F2FSSerialize{Rule: writeback.F2FSv419}}
		s := newBufStackOn(t, 4<<20, AllocLog, true, pol, 1<<10)
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		var files []*File
		for i := range 3 {
			f, err := s.fs.Create(fmt.Sprintf("f%d", i))
			require.NoError(t, err)
			files = append(files, f)
		}
		last := map[*File]map[int64]uint64{}
		seq := uint64(0)
		var bad []string
		nospace := 0
		for w, f := range files {
			last[f] = map[int64]uint64{}
			s.e.Go(fmt.Sprintf("w%d", w), func(tk *sim.Task) {
				for range 60 {
					switch op := rng.IntN(10); {
					case op < 7:
						page, n := rng.Int64N(700), 1+rng.Int64N(32)
						seq++
						st := blockdev.Stamp{Writer: uint32(w + 1), Seq: seq}
						if err := f.BufferedWrite(tk, page*BlockSize, n*BlockSize, st); err == nil {
							for p := page; p < page+n; p++ {
								last[f][p] = st.Seq
							}
						} else if errors.Is(err, ErrNoSpace) {
							// Written up to the page that found no
							// block: those pages are not checked.
							nospace++
							for p := page; p < page+n; p++ {
								delete(last[f], p)
							}
						} else {
							bad = append(bad, err.Error())
						}
					case op < 9:
						if err := f.Fsync(tk); err != nil {
							bad = append(bad, err.Error())
						}
					default:
						if err := f.Fdatasync(tk); err != nil {
							bad = append(bad, err.Error())
						}
					}
					bad = append(bad, blockOwners(s.fs)...)
				}
				require.NoError(t, f.Fsync(tk))
			})
		}
		require.NoError(t, s.e.Run(-1))
		require.Empty(t, bad, "seed %d", seed)
		nospaceTotal += nospace
		for _, f := range files {
			f.Invalidate()
		}
		s.e.Go("check", func(tk *sim.Task) {
			for _, f := range files {
				var data []blockdev.StampRun
				require.NoError(t, f.BufferedRead(tk, 0, f.Size(), &data))
				for p, want := range last[f] {
					got := stampAt(data, p*pagecacheSectors)
					assert.Equal(t, want, got.Seq, "seed %d: %s page %d", seed, f.name, p)
				}
			}
		})
		require.NoError(t, s.e.Run(-1))
	}
	assert.Positive(t, nospaceTotal, "the device filled up")
}

const pagecacheSectors = BlockSize / blockdev.SectorSize

// stampAt is the stamp a read found at sector sec.
func stampAt(runs []blockdev.StampRun, sec int64) blockdev.Stamp {
	for _, r := range runs {
		if sec >= r.Sector && sec < r.Sector+r.Sectors {
			return r.Stamp
		}
	}
	return blockdev.Stamp{}
}

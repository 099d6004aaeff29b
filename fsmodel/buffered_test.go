package fsmodel

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/pagecache"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/writeback"
)

// bufStack is a filesystem with buffered IO on a memory device whose
// queue records dispatched request sizes.
type bufStack struct {
	e   *sim.Engine
	q   *blockdev.Queue
	dev *blockdev.MemDevice
	fs  *FS
}

func newBufStack(t *testing.T, alloc Allocator, mutex bool, rule writeback.F2FSRule, cachePages int) *bufStack {
	t.Helper()
	pol := writeback.Default{}
	if alloc == AllocLog {
		// as the stack builds f2fs: v4.18's sync-request rule without
		// the mutex, the asked rule with it
		if !mutex {
			rule = writeback.F2FSv418
		}
		pol.Serializer = writeback.F2FSSerialize{Rule: rule}
	}
	return newBufStackPolicy(t, alloc, mutex, pol, cachePages)
}

// newBufStackPolicy is newBufStack with writeback policy pol.
func newBufStackPolicy(t *testing.T, alloc Allocator, mutex bool, pol writeback.Policy, cachePages int) *bufStack {
	t.Helper()
	return newBufStackOn(t, 4<<30, alloc, mutex, pol, cachePages)
}

// newBufStackOn is newBufStackPolicy on a device of capBytes.
func newBufStackOn(t *testing.T, capBytes int64, alloc Allocator, mutex bool, pol writeback.Policy, cachePages int) *bufStack {
	t.Helper()
	e := sim.New(sim.Options{Seed: 1, Host: sim.Host{CPUs: 8, WakeLatency: 2 * time.Microsecond}})
	dev := blockdev.NewMemDevice(e, blockdev.MemParams{Capacity: capBytes, LogicalBlockSize: 4096, MaxHWSectorsKB: 512, QueueDepth: 32, Latency: 50 * time.Microsecond, MBps: 800})
	q, err := blockdev.NewQueue(e, dev, blockdev.QueueOptions{})
	require.NoError(t, err)
	fsys, err := New(e, q, Options{Policy: Ext4{}, Name: "t", Costs: Costs{Syscall: time.Microsecond}})
	require.NoError(t, err)
	cache, err := pagecache.New(pagecache.Options{LimitPages: cachePages})
	require.NoError(t, err)
	require.NoError(t, fsys.EnableBuffered(BufferedOptions{Cache: cache, Policy: pol, AvailablePages: int64(cachePages),
		Alloc: alloc, WritepagesMutex: mutex, CopyPerPage: time.Microsecond, WritePage: time.Microsecond}))
	t.Cleanup(func() { _ = fsys.Close(); _ = e.Close(); cache.Close() })
	return &bufStack{e: e, q: q, dev: dev, fs: fsys}
}

// Writes reach the device with the right stamps after fsync, and read back
// through the cache (after dropping it) with those stamps, including a
// partial-page overwrite.
func TestBufferedWriteFsyncReadBack(t *testing.T) {
	s := newBufStack(t, AllocDelayed, false, 0, 4096)
	f, err := s.fs.Create("a")
	require.NoError(t, err)
	s.e.Go("w", func(tk *sim.Task) {
		require.NoError(t, f.BufferedWrite(tk, 0, 1<<20, blockdev.Stamp{Writer: 1, Seq: 1}))
		require.NoError(t, f.BufferedWrite(tk, 8192+512, 1024, blockdev.Stamp{Writer: 1, Seq: 2}))
		require.NoError(t, f.Fsync(tk))
	})
	require.NoError(t, s.e.Run(-1))
	assert.Equal(t, int64(0), s.fs.Writeback().DirtyPages())
	assert.Equal(t, 0, s.fs.Cache().InodeWritebackPages(f.ino()))
	require.Positive(t, f.Invalidate())
	var data []blockdev.StampRun
	s.e.Go("r", func(tk *sim.Task) { require.NoError(t, f.BufferedRead(tk, 0, 1<<20, &data)) })
	require.NoError(t, s.e.Run(-1))
	want := []blockdev.StampRun{
		{Sector: 0, Sectors: 17, Stamp: blockdev.Stamp{Writer: 1, Seq: 1}},
		{Sector: 17, Sectors: 2, Stamp: blockdev.Stamp{Writer: 1, Seq: 2}},
		{Sector: 19, Sectors: 2048 - 19, Stamp: blockdev.Stamp{Writer: 1, Seq: 1}},
	}
	assert.Equal(t, want, data)
	// delayed allocation: one contiguous extent
	assert.Len(t, f.BlockExtents(), 1)
}

// eachMutex runs f as subtests without and with f2fs's writepages mutex.
func eachMutex(t *testing.T, f func(t *testing.T, mutex bool)) {
	for _, mutex := range []bool{false, true} {
		t.Run(mutexName(mutex), func(t *testing.T) { f(t, mutex) })
	}
}

func mutexName(mutex bool) string {
	if mutex {
		return "with mutex"
	}
	return "without mutex"
}

// interleave has nFiles tasks each write its own file in 512 KiB writes
// and fsync it, all at once (tiotest's write phase), then returns the
// files.
func interleave(t *testing.T, s *bufStack, nFiles int, fileSize int64) []*File {
	files := make([]*File, nFiles)
	for i := range files {
		f, err := s.fs.Create(fmt.Sprintf("f%d", i))
		require.NoError(t, err)
		files[i] = f
		s.e.Go(fmt.Sprintf("w%d", i), func(tk *sim.Task) {
			for off := int64(0); off < fileSize; off += 512 << 10 {
				require.NoError(t, f.BufferedWrite(tk, off, 512<<10, blockdev.Stamp{Writer: uint32(i + 1), Seq: uint64(off)}))
			}
			require.NoError(t, f.Fsync(tk))
		})
	}
	require.NoError(t, s.e.Run(-1))
	return files
}

// EXPERIMENTS.md section 3, in miniature: without the writepages mutex,
// concurrent fsyncs interleave f2fs's per-page allocations, so files end
// up in many small extents; with it each file's dirty range is allocated
// as one run. Write bios stay large either way (the merged write bio is
// appended whenever the next block is adjacent, whichever inode it is
// for). The cache is large enough that no background writeback starts
// before the fsyncs (see TestF2FSMixedSyncModesSplitWrites for what it
// does when it has).
func TestF2FSWritepagesMutexKeepsFilesContiguous(t *testing.T) {
	eachMutex(t, func(t *testing.T, mutex bool) {
		s := newBufStack(t, AllocLog, mutex, writeback.F2FSv419, 1<<18)
		files := interleave(t, s, 8, 4<<20)
		var extents int
		for _, f := range files {
			extents += len(f.BlockExtents())
		}
		st := s.q.Stats()
		big := st.DispatchedSizes[blockdev.OpWrite][512<<10]
		t.Logf("%s: %d extents for %d files; write requests %v", mutexName(mutex), extents, len(files), st.DispatchedSizes[blockdev.OpWrite])
		if mutex {
			assert.LessOrEqual(t, extents, 2*len(files))
		} else {
			assert.Greater(t, extents, 20*len(files))
		}
		assert.Greater(t, float64(big*(512<<10)), 0.7*float64(st.Sectors[blockdev.OpWrite]*512), "write requests mostly 512 KiB")
	})
}

// f2fs's merged write bio takes a page only when its op flags match the
// bio's, and WB_SYNC_ALL writeback is REQ_SYNC while the flusher's is
// not. Here background writeback (the dirty data pass a tenth of the
// small cache) is inside file 0 when the eight fsyncs start:
//   - before v4.18 (no sync-request rule, no mutex) the flusher keeps
//     going and its pages land between the fsyncs', cutting the merged
//     bio at every switch;
//   - v4.18 makes it stop after its current page once an fsync is in
//     progress, and skip inodes while one is: the bios stay whole;
//   - v4.19's mutex keeps them whole too.
func TestF2FSMixedSyncModesSplitWrites(t *testing.T) {
	for _, tc := range []struct {
		name       string
		serializer writeback.Serializer
		mutex      bool
		split      bool
	}{
		{"v4.17: no sync-request rule", nil, false, true},
		{"v4.18: skip and yield", writeback.F2FSSerialize{Rule: writeback.F2FSv418}, false, false},
		{"v4.19: mutex", writeback.F2FSSerialize{Rule: writeback.F2FSv419}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newBufStackPolicy(t, AllocLog, tc.mutex, writeback.Default{Serializer: tc.serializer}, 1<<16)
			interleave(t, s, 8, 4<<20)
			st := s.q.Stats()
			// Bytes rather than requests: the fsyncs' node writes are
			// small requests of their own in every case.
			var small, total uint64
			for size, n := range st.DispatchedSizes[blockdev.OpWrite] {
				total += uint64(size) * n
				if size < 64<<10 {
					small += uint64(size) * n
				}
			}
			t.Logf("%s: write requests %v", tc.name, st.DispatchedSizes[blockdev.OpWrite])
			if tc.split {
				assert.Greater(t, float64(small), 0.5*float64(total))
			} else {
				assert.Less(t, float64(small), 0.01*float64(total))
			}
		})
	}
}

// The read half of EXPERIMENTS.md section 3: reading the files back
// sequentially in 512 KiB reads after the cache is dropped, readahead
// builds one bio per physically contiguous run: 4 KiB bios for the
// interleaved files, large ones for the contiguous files.
func TestF2FSInterleavedFilesReadAs4KiB(t *testing.T) {
	eachMutex(t, func(t *testing.T, mutex bool) {
		s := newBufStack(t, AllocLog, mutex, writeback.F2FSv419, 1<<16)
		files := interleave(t, s, 8, 4<<20)
		for _, f := range files {
			f.Invalidate()
		}
		before := s.q.Stats().DispatchedSizes[blockdev.OpRead]
		beforeN := map[int64]uint64{}
		for k, v := range before {
			beforeN[k] = v
		}
		for i, f := range files {
			s.e.Go(fmt.Sprintf("r%d", i), func(tk *sim.Task) {
				var data []blockdev.StampRun
				for off := int64(0); off < 4<<20; off += 512 << 10 {
					data = data[:0]
					require.NoError(t, f.BufferedRead(tk, off, 512<<10, &data))
					require.Len(t, data, 1, "one write stamped the whole 512 KiB")
					assert.Equal(t, blockdev.Stamp{Writer: uint32(i + 1), Seq: uint64(off)}, data[0].Stamp)
				}
			})
		}
		require.NoError(t, s.e.Run(-1))
		sizes := map[int64]uint64{}
		var total, small uint64
		for k, v := range s.q.Stats().DispatchedSizes[blockdev.OpRead] {
			n := v - beforeN[k]
			if n == 0 {
				continue
			}
			sizes[k] = n
			total += n
			if k <= 8<<10 {
				small += n
			}
		}
		t.Logf("%s: read requests %v", mutexName(mutex), sizes)
		if mutex {
			assert.Less(t, float64(small), 0.1*float64(total))
		} else {
			assert.Greater(t, float64(small), 0.85*float64(total))
		}
	})
}

// Background (WB_SYNC_NONE) writepages skips pages that are dirty again
// while still under writeback, moves on past them, and ends; a later
// fsync writes them.
func TestWritepagesSkipsRedirtiedPagesUnderWriteback(t *testing.T) {
	s := newBufStack(t, AllocDelayed, false, 0, 4096)
	f, err := s.fs.Create("a")
	require.NoError(t, err)
	wb := s.fs.Writeback()
	s.e.Go("w", func(tk *sim.Task) {
		require.NoError(t, f.BufferedWrite(tk, 0, 256<<10, blockdev.Stamp{Writer: 1, Seq: 1}))
		require.NoError(t, wb.Sync(tk, f, writeback.SyncNone)) // IO started, not waited for
		require.Positive(t, s.fs.Cache().InodeWritebackPages(f.ino()))
		require.NoError(t, f.BufferedWrite(tk, 0, 256<<10, blockdev.Stamp{Writer: 1, Seq: 2}))
		require.NoError(t, wb.Sync(tk, f, writeback.SyncNone)) // must skip, not spin
		require.NoError(t, f.Fsync(tk))
	})
	require.NoError(t, s.e.Run(-1))
	require.Positive(t, f.Invalidate())
	var data []blockdev.StampRun
	s.e.Go("r", func(tk *sim.Task) { require.NoError(t, f.BufferedRead(tk, 0, 256<<10, &data)) })
	require.NoError(t, s.e.Run(-1))
	assert.Equal(t, []blockdev.StampRun{{Sector: 0, Sectors: 512, Stamp: blockdev.Stamp{Writer: 1, Seq: 2}}}, data)
}

// writtenFile creates file "a" on s, writes its first size bytes (stamp
// writer 1, sequence 1), fsyncs it and drops it from the page cache, so
// that reads of it go to the device.
func writtenFile(t *testing.T, s *bufStack, size int64) *File {
	t.Helper()
	f, err := s.fs.Create("a")
	require.NoError(t, err)
	s.e.Go("w", func(tk *sim.Task) {
		require.NoError(t, f.BufferedWrite(tk, 0, size, blockdev.Stamp{Writer: 1, Seq: 1}))
		require.NoError(t, f.Fsync(tk))
	})
	require.NoError(t, s.e.Run(-1))
	require.Positive(t, f.Invalidate())
	return f
}

// Delayed allocation never gives one block to two pages: a file larger
// than its allocation window (8 MiB by default) continues in a new window
// instead of reusing the blocks of the first, also when its pages are
// written out of order, and the data read back are the data written.
func TestDelayedAllocNoBlockReuseAcrossWindows(t *testing.T) {
	for _, name := range []string{"sequential", "out of order"} {
		t.Run(name, func(t *testing.T) {
			s := newBufStack(t, AllocDelayed, false, 0, 1<<16)
			f, err := s.fs.Create("a")
			require.NoError(t, err)
			const size = 20 << 20 // 2.5 windows
			s.e.Go("w", func(tk *sim.Task) {
				if name == "out of order" {
					// page 1 before page 0: page 0's goal would be taken
					require.NoError(t, f.BufferedWrite(tk, 4096, 4096, blockdev.Stamp{Writer: 1, Seq: 1}))
					require.NoError(t, f.Fsync(tk))
				}
				require.NoError(t, f.BufferedWrite(tk, 0, size, blockdev.Stamp{Writer: 1, Seq: 2}))
				require.NoError(t, f.Fsync(tk))
			})
			require.NoError(t, s.e.Run(-1))
			seen := map[int64]int64{}
			for _, e := range f.BlockExtents() {
				for b := e.Physical; b < e.Physical+e.Length; b += BlockSize {
					if prev, ok := seen[b]; ok {
						t.Fatalf("device block %d holds file offsets %d and %d", b/BlockSize, prev, e.Logical+b-e.Physical)
					}
					seen[b] = e.Logical + b - e.Physical
				}
			}
			assert.Len(t, seen, size/BlockSize)
			require.Positive(t, f.Invalidate())
			var data []blockdev.StampRun
			s.e.Go("r", func(tk *sim.Task) { require.NoError(t, f.BufferedRead(tk, 0, size, &data)) })
			require.NoError(t, s.e.Run(-1))
			assert.Equal(t, []blockdev.StampRun{{Sector: 0, Sectors: size / 512, Stamp: blockdev.Stamp{Writer: 1, Seq: 2}}}, data)
		})
	}
}

// Readahead's io_pages is the queue's max_sectors_kb, not the device's
// max_hw_sectors_kb (the kernel sets bdi->io_pages from max_sectors, and
// queue_max_sectors_store resets it when max_sectors_kb is written): a
// 1 MiB read() with read_ahead_kb 128 on a queue capped at 128 KiB reads
// ahead in 128 KiB windows, not in windows of the device's 512 KiB.
func TestReadaheadIOPagesFollowMaxSectorsKB(t *testing.T) {
	e := sim.New(sim.Options{Seed: 1, Host: sim.Host{CPUs: 8, WakeLatency: 2 * time.Microsecond}})
	dev := blockdev.NewMemDevice(e, blockdev.MemParams{Capacity: 1 << 30, LogicalBlockSize: 4096, MaxHWSectorsKB: 512, QueueDepth: 32, Latency: 50 * time.Microsecond, MBps: 800})
	q, err := blockdev.NewQueue(e, dev, blockdev.QueueOptions{MaxSectorsKB: 128})
	require.NoError(t, err)
	assert.Equal(t, 128, q.MaxSectorsKB())
	fsys, err := New(e, q, Options{Policy: Ext4{}, Name: "t", Costs: Costs{Syscall: time.Microsecond}})
	require.NoError(t, err)
	cache, err := pagecache.New(pagecache.Options{LimitPages: 1 << 14})
	require.NoError(t, err)
	require.NoError(t, fsys.EnableBuffered(BufferedOptions{Cache: cache, AvailablePages: 1 << 14, CopyPerPage: time.Microsecond}))
	t.Cleanup(func() { _ = fsys.Close(); _ = e.Close(); cache.Close() })
	f, err := fsys.Create("a")
	require.NoError(t, err)
	e.Go("w", func(tk *sim.Task) {
		require.NoError(t, f.BufferedWrite(tk, 0, 4<<20, blockdev.Stamp{Writer: 1, Seq: 1}))
		require.NoError(t, f.Fsync(tk))
	})
	require.NoError(t, e.Run(-1))
	require.Positive(t, f.Invalidate())
	e.Go("r", func(tk *sim.Task) {
		for off := int64(0); off < 4<<20; off += 1 << 20 {
			require.NoError(t, f.BufferedRead(tk, off, 1<<20, nil))
		}
	})
	require.NoError(t, e.Run(-1))
	assert.Equal(t, map[int64]uint64{128 << 10: 32}, q.Stats().QueuedSizes[blockdev.OpRead])
}

// A sequential buffered reader that does not start at offset 0 gets
// readahead from its second read on: filemap_read records where each read
// ended (ra->prev_pos), and ondemand_readahead treats a miss in that page
// or the next as sequential (initial_readahead). Only the first read is a
// lone 4 KiB bio.
func TestReadaheadSequentialFromMidFile(t *testing.T) {
	s := newBufStack(t, AllocDelayed, false, 0, 1<<14)
	f := writtenFile(t, s, 4<<20)
	s.e.Go("r", func(tk *sim.Task) {
		for off := int64(2 << 20); off < 3<<20; off += 4096 {
			require.NoError(t, f.BufferedRead(tk, off, 4096, nil))
		}
	})
	require.NoError(t, s.e.Run(-1))
	got := s.q.Stats().QueuedSizes[blockdev.OpRead]
	assert.Equal(t, uint64(1), got[4<<10], "only the first read is a lone page: %v", got)
	assert.Equal(t, uint64(1), got[16<<10], "initial window of 4 pages: %v", got)
	assert.GreaterOrEqual(t, got[128<<10], uint64(7), "ramped up to read_ahead_kb: %v", got)
}

// Each Handle keeps its own readahead state (file_ra_state is per struct
// file): two readers of one file, each reading its own half sequentially
// 4 KiB at a time and taking turns, both ramp up to 128 KiB windows.
// Through the File's own state they would keep resetting each other's
// window.
func TestHandlesReadAheadIndependently(t *testing.T) {
	const half = 2 << 20
	s := newBufStack(t, AllocDelayed, false, 0, 1<<14)
	f := writtenFile(t, s, 2*half)
	h := []*Handle{f.OpenHandle(), f.OpenHandle()}
	require.Same(t, f, h[0].File())
	s.e.Go("r", func(tk *sim.Task) {
		for off := int64(0); off < half; off += 4096 {
			for i, hd := range h {
				require.NoError(t, hd.BufferedRead(tk, int64(i)*half+off, 4096, nil))
			}
		}
	})
	require.NoError(t, s.e.Run(-1))
	got := s.q.Stats().QueuedSizes[blockdev.OpRead]
	var bytes int64
	for size, n := range got {
		bytes += size * int64(n)
	}
	assert.Equal(t, int64(2*half), bytes, "each page read once: %v", got)
	assert.GreaterOrEqual(t, got[128<<10], uint64(28), "both ramp up to 128 KiB windows: %v", got)
}

// queuedRahead records, per direction, the REQ_RAHEAD flag of every bio
// the queue traced as queued (Q).
type queuedRahead map[blockdev.Op][]bool

func (q queuedRahead) Trace(ev *blockdev.TraceEvent) {
	if ev.Action == blockdev.TraceQueue {
		q[ev.Op] = append(q[ev.Op], ev.Rahead)
	}
}

// Buffered reads go to the device as readahead bios (mpage_readahead's
// REQ_RAHEAD, blkparse's "RA"), the page the reader waits for included;
// writeback bios do not carry the flag.
func TestReadaheadBiosCarryRahead(t *testing.T) {
	s := newBufStack(t, AllocDelayed, false, 0, 1<<14)
	got := queuedRahead{}
	s.q.SetTracer(got)
	f := writtenFile(t, s, 256<<10)
	s.e.Go("r", func(tk *sim.Task) { require.NoError(t, f.BufferedRead(tk, 0, 256<<10, nil)) })
	require.NoError(t, s.e.Run(-1))
	require.NotEmpty(t, got[blockdev.OpRead])
	require.NotEmpty(t, got[blockdev.OpWrite])
	assert.NotContains(t, got[blockdev.OpRead], false, "every read bio is readahead")
	assert.NotContains(t, got[blockdev.OpWrite], true, "no writeback bio is readahead")
}

// A buffered write is throttled (balance_dirty_pages) with the inode lock
// still held: generic_perform_write and iomap_write_iter call
// balance_dirty_pages_ratelimited in their page loop, inside the
// inode_lock that ext4_buffered_write_iter, xfs_file_buffered_write and
// f2fs_file_write_iter hold across it. A second writer of the same file
// therefore waits for the first one's pause to end.
func TestBufferedWriteThrottledUnderInodeLock(t *testing.T) {
	s := newBufStack(t, AllocDelayed, false, 0, 1024)
	f, err := s.fs.Create("a")
	require.NoError(t, err)
	var aDone, bDone sim.Time
	s.e.Go("a", func(tk *sim.Task) {
		require.NoError(t, f.BufferedWrite(tk, 0, 4<<20, blockdev.Stamp{Writer: 1, Seq: 1}))
		aDone = tk.Now()
	})
	s.e.Go("b", func(tk *sim.Task) {
		tk.Sleep(100 * time.Microsecond)
		require.NoError(t, f.BufferedWrite(tk, 8<<20, 4096, blockdev.Stamp{Writer: 2, Seq: 1}))
		bDone = tk.Now()
	})
	require.NoError(t, s.e.Run(-1))
	st := s.fs.Writeback().Stats()
	require.Positive(t, st.Pauses, "the big write is throttled")
	assert.GreaterOrEqual(t, bDone, aDone, "b's write waits for i_rwsem until a's throttled write returns")
	assert.GreaterOrEqual(t, f.Inode().Lock.Stats().Write.HoldMax, st.PauseMax, "the pause is part of a's hold")
}

// LayOut leaves a file as fio's layout does: its blocks in one run, its
// pages cached clean; dropped, its reads go to the device. It refuses a
// file with blocks, one that does not fit, and f2fs once its log started.
func TestLayOut(t *testing.T) {
	s := newBufStack(t, AllocDelayed, false, 0, 1024)
	f, err := s.fs.Create("a")
	require.NoError(t, err)
	require.NoError(t, f.LayOut(1<<20+1))
	assert.Equal(t, int64(1<<20+1), f.Size())
	blocks := f.Blocks()
	require.Len(t, blocks, 257, "rounded up to the block")
	for i, b := range blocks {
		assert.Equal(t, blocks[0]+int64(i), b, "one run")
	}
	assert.Equal(t, 257, s.fs.buf.cache.InodePages(f.ino()), "cached as the layout's writes leave it")
	assert.Zero(t, s.fs.buf.cache.Dirty())

	// Cached: a read does no IO. Dropped: it reads the blocks.
	read := func() uint64 {
		before := s.q.Stats().IOs[0]
		s.e.Go("r", func(tk *sim.Task) { require.NoError(t, f.BufferedRead(tk, 0, 1<<20, nil)) })
		require.NoError(t, s.e.Run(-1))
		return s.q.Stats().IOs[0] - before
	}
	assert.Zero(t, read())
	f.Invalidate()
	assert.NotZero(t, read())

	assert.ErrorIs(t, f.LayOut(4096), syscall.EEXIST)
	g, err := s.fs.Create("big")
	require.NoError(t, err)
	assert.ErrorIs(t, g.LayOut(8<<30), ErrNoSpace)
	assert.ErrorIs(t, g.LayOut(0), syscall.EINVAL)

	l := newBufStack(t, AllocLog, false, 0, 1024)
	h, err := l.fs.Create("h")
	require.NoError(t, err)
	l.e.Go("w", func(tk *sim.Task) {
		require.NoError(t, h.BufferedWrite(tk, 0, 4096, blockdev.Stamp{Writer: 1, Seq: 1}))
		require.NoError(t, h.Fsync(tk))
	})
	require.NoError(t, l.e.Run(-1))
	k, err := l.fs.Create("k")
	require.NoError(t, err)
	assert.ErrorIs(t, k.LayOut(4096), syscall.EINVAL, "the log has started")
}

// Preallocate (fio's fallocate before a write job) gives the file one run
// of unwritten blocks: a read of a page not written yet does no IO and
// sees zeros, a partial write of one reads nothing either, and writeback
// writes into the file's own blocks, which then read back the data. On
// f2fs it only sizes the file.
func TestPreallocate(t *testing.T) {
	s := newBufStack(t, AllocDelayed, false, 0, 1024)
	f, err := s.fs.Create("a")
	require.NoError(t, err)
	require.NoError(t, f.Preallocate(1<<20))
	blocks := append([]int64(nil), f.Blocks()...)
	require.Len(t, blocks, 256)
	for i, b := range blocks {
		assert.Equal(t, blocks[0]+int64(i), b, "one run")
	}
	assert.Zero(t, s.fs.buf.cache.InodePages(f.ino()), "nothing cached")
	reads := func() uint64 { return s.q.Stats().IOs[blockdev.OpRead] }
	s.e.Go("w", func(tk *sim.Task) {
		var data []blockdev.StampRun
		require.NoError(t, f.BufferedRead(tk, 0, 64<<10, &data))
		assert.Zero(t, reads(), "unwritten blocks are not read")
		for _, r := range data {
			assert.Equal(t, blockdev.Stamp{}, r.Stamp)
		}
		require.NoError(t, f.BufferedWrite(tk, 128<<10+512, 1024, blockdev.Stamp{Writer: 1, Seq: 1}))
		assert.Zero(t, reads(), "a partial write of an unwritten page reads nothing")
		require.NoError(t, f.Fsync(tk))
	})
	require.NoError(t, s.e.Run(-1))
	assert.Equal(t, blocks, f.Blocks(), "written in place")
	f.Invalidate()
	s.e.Go("r", func(tk *sim.Task) {
		var data []blockdev.StampRun
		require.NoError(t, f.BufferedRead(tk, 128<<10, 4096, &data))
		assert.Equal(t, uint64(1), reads(), "the written page is read from its block")
		assert.Equal(t, blockdev.Stamp{Writer: 1, Seq: 1}, stampAt(data, (128<<10+512)/blockdev.SectorSize))
		assert.Equal(t, blockdev.Stamp{}, stampAt(data, 128<<10/blockdev.SectorSize))
	})
	require.NoError(t, s.e.Run(-1))

	l := newBufStack(t, AllocLog, false, 0, 1024)
	g, err := l.fs.Create("g")
	require.NoError(t, err)
	require.NoError(t, g.Preallocate(1<<20))
	assert.Empty(t, g.Blocks())
	assert.Equal(t, int64(1<<20), g.Size())
}

// One write() larger than the page cache completes: the pages it dirtied
// first are written back to make room for the rest (it waited forever
// once, its inode not yet on the dirty list).
func TestWriteLargerThanTheCache(t *testing.T) {
	s := newBufStackOn(t, 1<<30, AllocDelayed, false, writeback.Default{}, 256)
	f, err := s.fs.Create("big")
	require.NoError(t, err)
	var werr error
	done := false
	s.e.Go("w", func(tk *sim.Task) {
		werr = f.BufferedWrite(tk, 0, 4<<20, blockdev.Stamp{Writer: 1, Seq: 1})
		done = true
	})
	require.NoError(t, s.e.Run(-1))
	require.True(t, done, "the write returned")
	require.NoError(t, werr)
	assert.Equal(t, int64(4<<20), f.Size())
}

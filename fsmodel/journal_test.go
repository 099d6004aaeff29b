package fsmodel

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/pagecache"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/writeback"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// journalStack is a filesystem with a journal and buffered IO on a memory
// device; jreqs records the requests dispatched into the journal.
type journalStack struct {
	e   *sim.Engine
	q   *blockdev.Queue
	fs  *FS
	log *journalTrace
}

// journalTrace records issued requests: in the journal as "J+blocks",
// "C" for a flush, data as "D+blocks", with the write's flags.
type journalTrace struct {
	fs   *FS
	reqs []string
}

func (l *journalTrace) Trace(ev *blockdev.TraceEvent) {
	if ev.Action != blockdev.TraceIssue || ev.Op != blockdev.OpWrite {
		return
	}
	switch {
	case ev.Bytes == 0:
		l.reqs = append(l.reqs, "flush")
	case l.fs.journal.inJournal(ev.Sector * blockdev.SectorSize / BlockSize):
		l.reqs = append(l.reqs, fmt.Sprintf("J%d", ev.Bytes/BlockSize))
	default:
		l.reqs = append(l.reqs, fmt.Sprintf("D%d", ev.Bytes/BlockSize))
	}
}

func newJournalStack(t *testing.T, kind JournalKind, capBytes int64, mkDev func(*sim.Engine) blockdev.Device, fault blockdev.Injector) *journalStack {
	t.Helper()
	e := sim.New(sim.Options{Seed: 1, Host: sim.Host{CPUs: 8, WakeLatency: 2 * time.Microsecond}})
	var dev blockdev.Device
	if mkDev != nil {
		dev = mkDev(e)
	} else {
		dev = blockdev.NewMemDevice(e, blockdev.MemParams{Capacity: capBytes, LogicalBlockSize: 4096, MaxHWSectorsKB: 512, QueueDepth: 32, Latency: 50 * time.Microsecond, MBps: 800})
	}
	if fault != nil {
		dev = blockdev.NewFaultDevice(e, dev, fault)
	}
	q, err := blockdev.NewQueue(e, dev, blockdev.QueueOptions{})
	require.NoError(t, err)
	fsys, err := New(e, q, Options{Policy: Ext4{}, Name: "t", Costs: Costs{Syscall: time.Microsecond}, Journal: JournalOptions{Kind: kind}})
	require.NoError(t, err)
	cache, err := pagecache.New(pagecache.Options{LimitPages: 8192})
	require.NoError(t, err)
	lim := writeback.Limits{DirtyRatio: 20, DirtyBackgroundRatio: 10, DirtyExpire: 30 * time.Second, DirtyWriteback: 5 * time.Second}
	require.NoError(t, fsys.EnableBuffered(BufferedOptions{Cache: cache, Policy: writeback.Default{}, AvailablePages: 8192, Limits: lim,
		Alloc: AllocDelayed, CopyPerPage: time.Microsecond, WritePage: time.Microsecond, AllocWindow: 8 << 20}))
	t.Cleanup(func() { _ = fsys.Close(); _ = e.Close(); cache.Close() })
	log := &journalTrace{fs: fsys}
	q.SetTracer(log)
	return &journalStack{e: e, q: q, fs: fsys, log: log}
}

// run runs fn as a task and the engine until nothing is left.
func (s *journalStack) run(t *testing.T, fn func(tk *sim.Task)) {
	t.Helper()
	s.e.Go("fio", fn)
	require.NoError(t, s.e.Run(-1))
}

// mke2fs's journal size by filesystem size, and the journal in the middle.
func TestJournalSizeAndPlace(t *testing.T) {
	for _, tc := range []struct {
		capBytes, blocks, start int64
	}{
		{64 << 20, 1024, 8192 - 0},
		{1 << 30, 8192, 131072},
		{100 << 30, 131072, 13107200},
		{4 << 40, 262144, 536870912},
	} {
		s := newJournalStack(t, JBD2, tc.capBytes, nil, nil)
		st := s.fs.JournalStats()
		assert.Equal(t, tc.blocks, st.Length, "%d bytes", tc.capBytes)
		assert.Equal(t, tc.start, st.Start, "%d bytes", tc.capBytes)
		assert.Equal(t, tc.capBytes-tc.blocks*BlockSize, s.fs.DataCapacity())
	}
	s := newJournalStack(t, XFSLog, 100<<30, nil, nil)
	assert.Equal(t, int64(64<<20/BlockSize), s.fs.JournalStats().Length, "mkfs.xfs's 64 MiB floor")
	s = newJournalStack(t, XFSLog, 1<<40, nil, nil)
	assert.Equal(t, int64(512<<20/BlockSize), s.fs.JournalStats().Length, "fs/2048")
	_, err := New(s.e, s.q, Options{Policy: Ext4{}, Journal: JournalOptions{Kind: JBD2, Bytes: 1 << 40}})
	assert.ErrorIs(t, err, syscall.EINVAL)
}

// fsync of appended data: the data, then descriptor, inode, bitmap and
// group descriptor blocks in one request, then the commit block.
// fdatasync after an overwrite of allocated blocks has only the file's
// times to commit, which it does not; fsync does; a second fsync in the
// same tick finds nothing to commit.
func TestJBD2FsyncCommits(t *testing.T) {
	s := newJournalStack(t, JBD2, 1<<30, nil, nil)
	f, err := s.fs.Create("a")
	require.NoError(t, err)
	var steps [][]string
	mark := func() { steps = append(steps, s.log.reqs); s.log.reqs = nil }
	s.run(t, func(tk *sim.Task) {
		require.NoError(t, f.BufferedWrite(tk, 0, 64<<10, blockdev.Stamp{Writer: 1, Seq: 1}))
		require.NoError(t, f.Fsync(tk))
		mark()
		tk.Sleep(10 * time.Millisecond) // a new tick
		require.NoError(t, f.BufferedWrite(tk, 0, 4096, blockdev.Stamp{Writer: 1, Seq: 2}))
		require.NoError(t, f.Fdatasync(tk))
		mark()
		require.NoError(t, f.Fsync(tk))
		mark()
		require.NoError(t, f.BufferedWrite(tk, 4096, 4096, blockdev.Stamp{Writer: 1, Seq: 3}))
		require.NoError(t, f.Fsync(tk))
		mark()
	})
	assert.Equal(t, [][]string{
		{"D16", "J4", "J1"}, // descriptor + inode, bitmap, group descriptor; commit
		{"D1"},              // times only: no commit (a flush, none here)
		{"J2", "J1"},        // descriptor + inode; commit
		{"D1"},              // same tick: nothing new to commit
	}, steps)
	assert.Equal(t, JournalStats{Kind: JBD2, Commits: 2, Blocks: 5 + 3, Start: 131072, Length: 8192}, s.fs.JournalStats())
}

// Concurrent fsyncs share commits: one commit at a time, and every fsync
// that arrives while it is written joins the next.
func TestJBD2ConcurrentFsyncsShareCommits(t *testing.T) {
	s := newJournalStack(t, JBD2, 1<<30, nil, nil)
	const n = 16
	for i := range n {
		f, err := s.fs.Create(fmt.Sprintf("f%d", i))
		require.NoError(t, err)
		s.e.Go(fmt.Sprintf("w%d", i), func(tk *sim.Task) {
			require.NoError(t, f.BufferedWrite(tk, 0, 4096, blockdev.Stamp{Writer: uint32(i + 1), Seq: 1}))
			require.NoError(t, f.Fsync(tk))
		})
	}
	require.NoError(t, s.e.Run(-1))
	st := s.fs.JournalStats()
	// All wrote in one tick: one transaction, one commit of a descriptor,
	// two inode table blocks (inodes 1-15 and 16), a bitmap, a group
	// descriptor and the commit block.
	assert.Equal(t, int64(1), st.Commits)
	assert.Equal(t, int64(6), st.Blocks)

	// Staggered over a disk's slow commits: an fsync that comes while a
	// commit runs waits for it, then shares the next one.
	s = newJournalStack(t, JBD2, 1<<30, testHDD, nil)
	s.fs.SetJournalTimer(false)
	for i := range n {
		f, err := s.fs.Open(fmt.Sprintf("f%d", i), 1<<20)
		require.NoError(t, err)
		s.e.Go(fmt.Sprintf("w%d", i), func(tk *sim.Task) {
			tk.Sleep(time.Duration(i) * time.Millisecond)
			require.NoError(t, f.DirectWrite(tk, 0, 4096, blockdev.Stamp{Writer: uint32(i + 1), Seq: 1}))
			require.NoError(t, f.Fsync(tk))
		})
	}
	require.NoError(t, s.e.Run(-1))
	st = s.fs.JournalStats()
	assert.Greater(t, st.Commits, int64(1))
	assert.LessOrEqual(t, st.Commits, int64(n/3), "each commit carries several fsyncs")
}

// A change nothing syncs is committed by the transaction's timer (commit=5s
// for jbd2, the log worker's 30 s for xfs).
func TestJournalTimerCommits(t *testing.T) {
	for _, tc := range []struct {
		kind         JournalKind
		first, after time.Duration // the change, and its commit
	}{
		{JBD2, 0, 5 * time.Second},
		{JBD2, 20 * time.Second, 25 * time.Second}, // 5 s after the transaction starts
		{XFSLog, 0, 30 * time.Second},
		{XFSLog, 20 * time.Second, 30 * time.Second}, // the worker's next run
	} {
		t.Run(fmt.Sprint(tc.kind, "/", tc.first), func(t *testing.T) {
			s := newJournalStack(t, tc.kind, 1<<30, nil, nil)
			f, err := s.fs.Open("a", 1<<20)
			require.NoError(t, err)
			s.run(t, func(tk *sim.Task) {
				tk.Sleep(tc.first)
				require.NoError(t, f.DirectWrite(tk, 0, 4096, blockdev.Stamp{Writer: 1, Seq: 1}))
			})
			assert.Equal(t, int64(1), s.fs.JournalStats().Commits)
			assert.GreaterOrEqual(t, time.Duration(s.e.Now()), tc.after)
			assert.Less(t, time.Duration(s.e.Now()), tc.after+time.Second)
		})
	}
}

// xfs: fsync of changed times forces the log as one log record with
// PREFLUSH and FUA; fdatasync leaves times alone.
func TestXFSLogForce(t *testing.T) {
	s := newJournalStack(t, XFSLog, 1<<30, nil, nil)
	f, err := s.fs.Open("a", 1<<20)
	require.NoError(t, err)
	var flags []string
	s.q.SetTracer(tracerFunc(func(ev *blockdev.TraceEvent) {
		if ev.Action == blockdev.TraceQueue && ev.Op == blockdev.OpWrite {
			flags = append(flags, fmt.Sprintf("%v%v%v %d", ev.Flush, ev.FUA, ev.Meta, ev.Bytes))
		}
	}))
	s.run(t, func(tk *sim.Task) {
		require.NoError(t, f.DirectWrite(tk, 0, 4096, blockdev.Stamp{Writer: 1, Seq: 1}))
		require.NoError(t, f.Fdatasync(tk))
		require.NoError(t, f.Fsync(tk))
		require.NoError(t, f.Fsync(tk))
	})
	// The memory device has no volatile cache: the queue drops the
	// flags before tracing Q, so the log write is a plain REQ_META write.
	assert.Equal(t, []string{"falsefalsefalse 4096", "falsefalsetrue 4096"}, flags)
	assert.Equal(t, int64(1), s.fs.JournalStats().Commits)
}

type tracerFunc func(ev *blockdev.TraceEvent)

func (f tracerFunc) Trace(ev *blockdev.TraceEvent) { f(ev) }

// Files are laid out around the journal: a preallocated file that would
// cross it gets two extents, and writeback's allocation windows stop at
// it; no file block lies in it.
func TestAllocationSkipsTheJournal(t *testing.T) {
	s := newJournalStack(t, JBD2, 64<<20, nil, nil)
	js := s.fs.JournalStats()
	a, err := s.fs.Open("a", 30<<20)
	require.NoError(t, err)
	b, err := s.fs.Open("b", 8<<20) // crosses the middle
	require.NoError(t, err)
	ext := b.Extents().Extents()
	require.Len(t, ext, 2)
	assert.Equal(t, js.Start*BlockSize, ext[0].Physical+ext[0].Length)
	assert.Equal(t, (js.Start+js.Length)*BlockSize, ext[1].Physical)
	_, err = s.fs.Open("c", 24<<20)
	assert.ErrorIs(t, err, ErrNoSpace, "64 MiB less 4 MiB of journal")
	_ = a

	s = newJournalStack(t, JBD2, 64<<20, nil, nil)
	_, err = s.fs.Open("pad", 12<<10) // so that a window straddles the journal's start
	require.NoError(t, err)
	c, err := s.fs.Create("c")
	require.NoError(t, err)
	var werr, serr error
	s.run(t, func(tk *sim.Task) {
		werr = c.BufferedWrite(tk, 0, 56<<20, blockdev.Stamp{Writer: 1, Seq: 1})
		serr = c.Fsync(tk)
	})
	require.NoError(t, werr)
	require.NoError(t, serr)
	require.Len(t, c.Blocks(), 56<<20/BlockSize)
	for _, blk := range c.Blocks() {
		require.False(t, s.fs.journal.inJournal(blk), "block %d", blk)
		require.GreaterOrEqual(t, blk, int64(0))
	}
	assert.Len(t, c.BlockExtents(), 2, "one run on each side of the journal")
	assert.Equal(t, int64(3), c.Blocks()[0])
}

// A failed journal write aborts the journal: the fsync waiting for the
// commit, and every later one, fail.
func TestJournalWriteErrorAborts(t *testing.T) {
	var s *journalStack
	fail := blockdev.InjectorFunc(func(r *blockdev.Request) error {
		if s.fs.journal.inJournal(r.Sector * blockdev.SectorSize / BlockSize) {
			return &blockdev.InjectedError{Errno: syscall.EIO}
		}
		return nil
	})
	s = newJournalStack(t, JBD2, 1<<30, nil, fail)
	f, err := s.fs.Open("a", 1<<20)
	require.NoError(t, err)
	var errs []error
	s.run(t, func(tk *sim.Task) {
		require.NoError(t, f.DirectWrite(tk, 0, 4096, blockdev.Stamp{Writer: 1, Seq: 1}))
		errs = append(errs, f.Fsync(tk))
		errs = append(errs, f.Fsync(tk))
	})
	require.Len(t, errs, 2)
	for _, err := range errs {
		assert.ErrorIs(t, err, syscall.EIO)
		assert.ErrorContains(t, err, "journal aborted")
	}
	assert.True(t, errors.Is(errs[0], blockdev.ErrInjected))
	// The second fsync wrote nothing: the aborted journal is done.
	assert.Equal(t, int64(1), s.fs.JournalStats().Commits)
	assert.Equal(t, []string{"D1", "J2"}, s.log.reqs, "the data, then the one failed commit's metadata write")
}

// testHDD is a 1 GB disk with a write cache, for the flush paths.
func testHDD(e *sim.Engine) blockdev.Device {
	d, err := blockdev.NewHDD(e, blockdev.HDDParams{Name: "sda", Capacity: 1 << 30, LogicalBlockSize: 512, MaxHWSectorsKB: 1024,
		QueueDepth: 32, NCQ: true, RPM: 7200, TrackToTrack: time.Millisecond, AverageSeek: 8 * time.Millisecond, FullStroke: 16 * time.Millisecond,
		OuterMBps: 200, InnerMBps: 100, HostMBps: 550, WriteCache: true, WriteCacheSize: 8 << 20})
	if err != nil {
		panic(err)
	}
	return d
}

// emptyFlushes counts the empty REQ_PREFLUSH bios queued (fsync's own
// cache flushes, not those of a commit).
type emptyFlushes struct {
	n       int
	journal *journalTrace
}

func (c *emptyFlushes) Trace(ev *blockdev.TraceEvent) {
	if ev.Action == blockdev.TraceQueue && ev.Flush && ev.Bytes == 0 {
		c.n++
	}
	c.journal.Trace(ev)
}

// jbd2_trans_will_send_data_barrier: an fsync whose transaction is being
// committed relies on the commit block's flush only if that block has not
// been sent yet; once it has, the fsync flushes the cache itself.
func TestJBD2FsyncDuringCommitFlushesItself(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sent     bool // wait until the commit block is out
		ownFlush int
	}{{"while the metadata is written", false, 0}, {"after the commit block was sent", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newJournalStack(t, JBD2, 1<<30, testHDD, nil)
			count := &emptyFlushes{journal: s.log}
			s.q.SetTracer(count)
			a, err := s.fs.Open("a", 1<<20)
			require.NoError(t, err)
			b, err := s.fs.Open("b", 1<<20)
			require.NoError(t, err)
			var errA, errB error
			s.e.Go("a", func(tk *sim.Task) {
				require.NoError(t, a.DirectWrite(tk, 0, 4096, blockdev.Stamp{Writer: 1, Seq: 1}))
				require.NoError(t, b.DirectWrite(tk, 0, 4096, blockdev.Stamp{Writer: 1, Seq: 2}))
				errA = a.Fsync(tk) // commits the transaction holding both
			})
			s.e.Go("b", func(tk *sim.Task) {
				j := s.fs.journal
				for i := 0; i < 10000 && (j.committing == nil || j.committing.flushSent != tc.sent); i++ {
					tk.Sleep(5 * time.Microsecond)
				}
				require.NotNil(t, j.committing, "the fsync runs during the commit")
				errB = b.Fsync(tk)
			})
			require.NoError(t, s.e.Run(-1))
			require.NoError(t, errA)
			require.NoError(t, errB)
			assert.Equal(t, int64(1), s.fs.JournalStats().Commits)
			assert.Equal(t, tc.ownFlush, count.n, "fsync's own empty flushes")
		})
	}
}

// data=ordered: a commit waits for the data of the files whose blocks it
// allocated, as far as it was under writeback when the commit started;
// without it (dioread_nolock) the commit does not wait.
func TestJBD2OrderedCommitWaitsForData(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		t.Run(fmt.Sprint("ordered=", ordered), func(t *testing.T) {
			s := newJournalStack(t, JBD2, 1<<30, nil, nil)
			s.fs.journal.opt.Ordered = ordered
			a, err := s.fs.Open("a", 1<<20)
			require.NoError(t, err)
			b, err := s.fs.Create("b")
			require.NoError(t, err)
			var endedAtSync, startedAtSync int64
			s.e.Go("b", func(tk *sim.Task) {
				require.NoError(t, b.BufferedWrite(tk, 0, 16<<20, blockdev.Stamp{Writer: 1, Seq: 1}))
			})
			s.e.Go("a", func(tk *sim.Task) {
				for b.wbStarted < 16<<20/4096 {
					tk.Sleep(100 * time.Microsecond) // b's writeback is all submitted
				}
				require.NoError(t, a.DirectWrite(tk, 0, 4096, blockdev.Stamp{Writer: 2, Seq: 1}))
				require.NoError(t, a.Fsync(tk)) // the transaction that allocated b's blocks
				startedAtSync, endedAtSync = b.wbStarted, b.wbEnded
			})
			require.NoError(t, s.e.Run(-1))
			if ordered {
				assert.Equal(t, startedAtSync, endedAtSync, "a's commit waited for b's data")
			} else {
				assert.Less(t, endedAtSync, startedAtSync, "a's commit did not wait")
			}
		})
	}
}

// A failed writeback makes fsync return its error at once, as
// file_write_and_wait_range's failure does: no commit and no flush.
func TestFsyncAfterWritebackErrorReturnsAtOnce(t *testing.T) {
	var s *journalStack
	fail := blockdev.InjectorFunc(func(r *blockdev.Request) error {
		if r.Bytes > 0 && !s.fs.journal.inJournal(r.Sector*blockdev.SectorSize/BlockSize) {
			return &blockdev.InjectedError{Errno: syscall.EIO}
		}
		return nil
	})
	s = newJournalStack(t, JBD2, 1<<30, testHDD, fail)
	s.fs.SetJournalTimer(false) // no later commit of the allocation
	count := &emptyFlushes{journal: s.log}
	s.q.SetTracer(count)
	f, err := s.fs.Create("a")
	require.NoError(t, err)
	var serr error
	s.run(t, func(tk *sim.Task) {
		require.NoError(t, f.BufferedWrite(tk, 0, 64<<10, blockdev.Stamp{Writer: 1, Seq: 1}))
		serr = f.Fsync(tk)
	})
	assert.ErrorIs(t, serr, syscall.EIO)
	assert.Zero(t, s.fs.JournalStats().Commits)
	assert.Zero(t, count.n)
	assert.Zero(t, s.q.Stats().Flushes)
}

// xfs on a disk with a write cache: the log write carries PREFLUSH, FUA
// and META (blkparse's FWFSM); a checkpoint larger than an iclog is
// several log writes, the last with the flags.
func TestXFSLogWritesOnACachedDisk(t *testing.T) {
	s := newJournalStack(t, XFSLog, 1<<30, testHDD, nil)
	var queued []string
	s.q.SetTracer(tracerFunc(func(ev *blockdev.TraceEvent) {
		if ev.Action == blockdev.TraceQueue && ev.Meta {
			queued = append(queued, fmt.Sprintf("flush=%v fua=%v %d", ev.Flush, ev.FUA, ev.Bytes))
		}
	}))
	var files []*File
	for i := range 200 {
		f, err := s.fs.Open(fmt.Sprint("f", i), 64<<10)
		require.NoError(t, err)
		files = append(files, f)
	}
	s.run(t, func(tk *sim.Task) {
		require.NoError(t, files[0].DirectWrite(tk, 0, 4096, blockdev.Stamp{Writer: 1, Seq: 1}))
		require.NoError(t, files[0].Fsync(tk))
		for _, f := range files {
			require.NoError(t, f.DirectWrite(tk, 0, 4096, blockdev.Stamp{Writer: 1, Seq: 2}))
		}
		require.NoError(t, files[0].Fsync(tk))
	})
	assert.Equal(t, []string{
		"flush=true fua=true 1024",
		"flush=false fua=false 32768",
		"flush=true fua=true 19968", // 200 inode items of 256 bytes, in two iclogs
	}, queued)
}

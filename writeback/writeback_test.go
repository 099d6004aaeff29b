package writeback_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/writeback"
)

const (
	us = time.Microsecond
	ms = time.Millisecond
	s  = time.Second
)

// pageLimits returns default limits with byte thresholds of bg and dirty
// pages.
func pageLimits(bg, dirty int64) writeback.Limits {
	l := writeback.DefaultLimits()
	l.DirtyBackgroundBytes = bg * writeback.PageSize
	l.DirtyBytes = dirty * writeback.PageSize
	return l
}

// Periodic (kupdate) writeback wakes every dirty_writeback interval and
// writes only the inodes dirtied at least dirty_expire ago.
func TestPeriodicWritesOnlyExpiredInodes(t *testing.T) {
	h := writeback.NewHarness(t, writeback.HarnessOptions{AvailablePages: 1 << 20})
	a, b := h.File("a"), h.File("b")
	h.Writer("wa", a, writeback.WriterOptions{Pages: 64})
	h.Writer("wb", b, writeback.WriterOptions{Start: 20 * s, Pages: 64})

	h.RunUntil(30*s - 1)
	assert.Empty(t, h.IOs(), "nothing has expired before 30 s")
	assert.Equal(t, int64(128), h.Writeback().DirtyPages())

	h.RunUntil(31 * s)
	assert.Equal(t, int64(64), a.Written(), "a, dirtied at 0, expired at 30 s")
	assert.Zero(t, b.Written(), "b, dirtied at 20 s, has not expired")
	for _, io := range h.IOs() {
		assert.Equal(t, writeback.ReasonPeriodic, io.Reason)
		assert.Equal(t, writeback.SyncNone, io.SyncMode)
		assert.InDelta(t, float64(30*s), float64(io.At), float64(ms), "at the 30 s wake-up")
	}

	h.Run()
	assert.Equal(t, int64(64), b.Written())
	ios := h.IOs()
	last := ios[len(ios)-1]
	assert.Equal(t, "b", last.File)
	assert.InDelta(t, float64(50*s), float64(last.At), float64(ms), "b expires at 50 s")
	st := h.Stats()
	assert.Equal(t, int64(128), st.Written[writeback.ReasonPeriodic])
	assert.Zero(t, st.Written[writeback.ReasonBackground])
	assert.Empty(t, h.Writeback().DirtyInodes())
}

// Periodic writeback is off when dirty_writeback is 0: nothing is written
// without pressure, and the engine goes idle.
func TestPeriodicOff(t *testing.T) {
	l := writeback.DefaultLimits()
	l.DirtyWriteback = 0
	h := writeback.NewHarness(t, writeback.HarnessOptions{AvailablePages: 1 << 20, Limits: l})
	a := h.File("a")
	h.Writer("wa", a, writeback.WriterOptions{Pages: 64})
	h.Run()
	assert.Empty(t, h.IOs())
	assert.Equal(t, int64(64), a.DirtyPages())
	assert.Less(t, h.Now(), time.Second)
}

// Background writeback starts when dirty pages exceed the background
// threshold, writes oldest-dirtied inodes first, and stops once they are
// back at or below it.
func TestBackgroundStartsAboveAndStopsBelow(t *testing.T) {
	h := writeback.NewHarness(t, writeback.HarnessOptions{
		AvailablePages: 10000, // background 998, dirty 1999 pages
		Policy:         writeback.Default{ChunkPages: 64},
	})
	wb := h.Writeback()
	bg, _ := wb.Thresholds()
	require.Equal(t, int64(998), bg)
	a, b, c := h.File("a"), h.File("b"), h.File("c")
	h.Writer("wa", a, writeback.WriterOptions{Pages: 600})
	h.Writer("wb", b, writeback.WriterOptions{Start: ms, Pages: 300})

	h.RunUntil(s)
	assert.Empty(t, h.IOs(), "900 dirty pages are below the background threshold")
	assert.Equal(t, int64(900), wb.DirtyPages())

	h.Writer("wc", c, writeback.WriterOptions{Start: 2 * s, Pages: 300})
	h.RunUntil(3 * s)
	ios := h.IOs()
	require.NotEmpty(t, ios)
	assert.Equal(t, "a", ios[0].File, "the oldest inode first")
	for _, io := range ios {
		assert.Equal(t, writeback.ReasonBackground, io.Reason)
		assert.NotEqual(t, "c", io.File, "the newest inode is not reached")
		assert.GreaterOrEqual(t, io.At, 2*s)
	}
	assert.LessOrEqual(t, wb.DirtyPages(), bg, "stopped at or below the background threshold")
	assert.Greater(t, wb.DirtyPages(), bg-64, "and within a chunk of it")
	st := h.Stats()
	assert.Equal(t, 1200-wb.DirtyPages(), st.Written[writeback.ReasonBackground])
	assert.Positive(t, st.Passes[writeback.ReasonBackground])
	assert.Zero(t, st.Pauses, "never above the freerun ceiling")
}

// WB_SYNC_NONE writepages stops when nr_to_write runs out; WB_SYNC_ALL
// writes every dirty page whatever the budget.
func TestSyncNoneHonoursNrToWrite(t *testing.T) {
	run := func(mode writeback.SyncMode) (*writeback.Harness, *writeback.FakeFile) {
		h := writeback.NewHarness(t, writeback.HarnessOptions{
			AvailablePages: 1 << 20, Limits: pageLimits(500, 5000),
			Policy: budgetPolicy{pages: 100, mode: mode},
		})
		f := h.File("f")
		h.Writer("w", f, writeback.WriterOptions{Pages: 1000, Chunk: 1000})
		h.RunUntil(s)
		return h, f
	}

	h, f := run(writeback.SyncNone)
	st := h.Stats()
	assert.Equal(t, int64(5), st.Calls[writeback.ReasonBackground], "100 pages a call until 500 are left")
	assert.Equal(t, int64(500), st.Written[writeback.ReasonBackground])
	assert.Equal(t, int64(500), f.DirtyPages())
	assert.Equal(t, []int64{100 * 4096, 100 * 4096, 100 * 4096, 100 * 4096, 100 * 4096}, h.IOSizes())

	h, f = run(writeback.SyncAll)
	st = h.Stats()
	assert.Equal(t, int64(1), st.Calls[writeback.ReasonBackground])
	assert.Equal(t, int64(1000), st.Written[writeback.ReasonBackground], "nr_to_write went to -900")
	assert.Zero(t, f.DirtyPages())
	for _, io := range h.IOs() {
		assert.Equal(t, writeback.SyncAll, io.SyncMode)
	}
}

// budgetPolicy writes the oldest inode with a fixed budget and mode while
// over the background threshold.
type budgetPolicy struct {
	writeback.Default
	pages int64
	mode  writeback.SyncMode
}

func (budgetPolicy) Name() string { return "budget" }

func (p budgetPolicy) Pick(pi writeback.PassInfo) []writeback.Work {
	if pi.Reason != writeback.ReasonBackground || pi.Dirty <= pi.Background || len(pi.Inodes) == 0 {
		return nil
	}
	return []writeback.Work{{Inode: pi.Inodes[0].Inode, Pages: p.pages, SyncMode: p.mode, RangeCyclic: true}}
}

// fsync (WB_SYNC_ALL) writes every dirty page of the file in bios of up
// to 512 KiB and returns only when their IO has completed; the file
// leaves the dirty list.
func TestFsyncWritesEverythingAndWaits(t *testing.T) {
	h := writeback.NewHarness(t, writeback.HarnessOptions{AvailablePages: 1 << 20})
	f, g := h.File("f"), h.File("g")
	h.Writer("wg", g, writeback.WriterOptions{Pages: 8})
	var returned time.Duration
	h.Go("w", 0, func(tk *sim.Task) {
		h.Write(tk, f, 0, 512)
		require.NoError(t, h.Fsync(tk, f))
		returned = time.Duration(tk.Now())
		assert.Zero(t, f.DirtyPages())
		assert.Zero(t, f.WritebackPages())
	})
	h.RunUntil(s)
	assert.Equal(t, []int64{512 << 10, 512 << 10, 512 << 10, 512 << 10}, h.IOSizes())
	for _, io := range h.IOs() {
		assert.Equal(t, writeback.SyncAll, io.SyncMode)
		assert.Equal(t, writeback.ReasonFsync, io.Reason)
		assert.Equal(t, "w", io.Task, "on the caller's task")
		assert.GreaterOrEqual(t, returned, io.Done, "fsync returns after the IO completes")
	}
	assert.Equal(t, []writeback.Extent{{Page: 0, Block: 0, Pages: 512}}, f.Extents())
	dirty := h.Writeback().DirtyInodes()
	require.Len(t, dirty, 1, "f left the dirty list, g did not")
	assert.Equal(t, uint64(g.ID()), dirty[0].Inode.ID())
	assert.Equal(t, int64(512), h.Stats().Written[writeback.ReasonFsync])
	assert.Contains(t, h.Stats().String(), "written background=0 periodic=0 sync=0 fsync=512 passes=0 calls=1 ")
}

// sync_file_range(WRITE) is Sync with SyncNone: it starts the IO and does
// not wait.
func TestSyncNoneDoesNotWait(t *testing.T) {
	h := writeback.NewHarness(t, writeback.HarnessOptions{AvailablePages: 1 << 20})
	f := h.File("f")
	h.Go("w", 0, func(tk *sim.Task) {
		h.Write(tk, f, 0, 256)
		require.NoError(t, h.Writeback().Sync(tk, f, writeback.SyncNone))
		assert.Zero(t, f.DirtyPages())
		assert.Equal(t, int64(256), f.WritebackPages(), "still in flight")
	})
	h.RunUntil(s)
	assert.Zero(t, f.WritebackPages())
}

// SyncFS writes every dirty inode WB_SYNC_ALL on the flusher and waits
// for the IO, including IO started before it.
func TestSyncFS(t *testing.T) {
	h := writeback.NewHarness(t, writeback.HarnessOptions{AvailablePages: 1 << 20})
	a, b, c := h.File("a"), h.File("b"), h.File("c")
	h.Writer("wa", a, writeback.WriterOptions{Pages: 200})
	h.Writer("wb", b, writeback.WriterOptions{Pages: 100})
	h.Writer("wc", c, writeback.WriterOptions{Pages: 1000, Chunk: 1000})
	h.Go("sync", 2*ms, func(tk *sim.Task) {
		wb := h.Writeback()
		require.NoError(t, wb.Sync(tk, c, writeback.SyncNone))
		require.Equal(t, int64(1000), wb.WritebackPages(), "c's IO is in flight")
		require.NoError(t, wb.SyncFS(tk))
		assert.Zero(t, wb.DirtyPages()+wb.WritebackPages(), "and SyncFS waited for it too")
	})
	h.RunUntil(s)
	st := h.Stats()
	assert.Equal(t, int64(300), st.Written[writeback.ReasonSync])
	assert.Equal(t, int64(1), st.Passes[writeback.ReasonSync])
	for _, io := range h.IOs() {
		if io.File == "c" {
			continue
		}
		assert.Equal(t, "flush-harness", io.Task)
		assert.Equal(t, writeback.SyncAll, io.SyncMode)
		assert.Equal(t, writeback.ReasonSync, io.Reason)
	}
}

// Concurrent fsyncs interleave their allocations without a writepages
// mutex; f2fs's v4.19 rule serializes them so each file is one extent;
// the merged rule serializes WB_SYNC_ALL only from 512 dirty pages.
func TestF2FSSerializeLayout(t *testing.T) {
	run := func(p writeback.Policy, pages int64) (a, b *writeback.FakeFile, h *writeback.Harness) {
		h = writeback.NewHarness(t, writeback.HarnessOptions{AvailablePages: 1 << 20, Policy: p})
		a, b = h.File("a"), h.File("b")
		h.Writer("wa", a, writeback.WriterOptions{Pages: pages, Chunk: pages, Fsync: true})
		h.Writer("wb", b, writeback.WriterOptions{Pages: pages, Chunk: pages, Fsync: true})
		h.Run()
		return a, b, h
	}
	v419 := writeback.Default{Serializer: writeback.F2FSSerialize{}}
	merged := writeback.Default{Serializer: writeback.F2FSSerialize{Rule: writeback.F2FSMerged}}

	a, b, h := run(writeback.Default{}, 256)
	assert.Greater(t, len(a.Extents()), 100, "no mutex: interleaved block by block")
	assert.Greater(t, len(b.Extents()), 100)
	assert.Equal(t, int64(4096), h.IOSizes()[0], "runs of one block")

	a, b, h = run(v419, 256)
	assert.Len(t, a.Extents(), 1)
	assert.Len(t, b.Extents(), 1)
	assert.Equal(t, int64(2), h.Stats().Serialized)
	assert.Equal(t, []int64{512 << 10, 512 << 10, 512 << 10, 512 << 10}, h.IOSizes())

	a, _, _ = run(merged, 256)
	assert.Greater(t, len(a.Extents()), 100, "merged rule: 256 < 512 dirty pages, no mutex")
	a, b, _ = run(merged, 600)
	assert.Len(t, a.Extents(), 1, "merged rule: 600 >= 512 dirty pages")
	assert.Len(t, b.Extents(), 1)
}

// f2fs's skip: while an fsync (WB_SYNC_ALL) runs, flusher writepages
// (WB_SYNC_NONE) skips inodes instead of racing it page by page, which
// splits both calls' bios into single pages ("to avoid splitting IOs due
// to mixed WB_SYNC_ALL and WB_SYNC_NONE"); skipped inodes stay dirty and
// are written later.
func TestF2FSSkipDuringFsync(t *testing.T) {
	run := func(p writeback.Policy) (*writeback.Harness, *writeback.FakeFile, *writeback.FakeFile) {
		h := writeback.NewHarness(t, writeback.HarnessOptions{
			AvailablePages: 1 << 20, Limits: pageLimits(2100, 10000), Policy: p,
			PageCost: 10 * us,
		})
		a, b := h.File("a"), h.File("b")
		h.Writer("wa", a, writeback.WriterOptions{Pages: 2000, Chunk: 2000})
		h.Go("fsync", 5*ms, func(tk *sim.Task) { require.NoError(t, h.Fsync(tk, a)) })
		// Pushes dirty pages over the background threshold mid-fsync.
		h.Writer("wb", b, writeback.WriterOptions{Start: 6 * ms, Pages: 300, Chunk: 300})
		h.RunUntil(s)
		return h, a, b
	}
	small := func(h *writeback.Harness) (n int) {
		for _, sz := range h.IOSizes() {
			if sz == writeback.PageSize {
				n++
			}
		}
		return n
	}

	h, _, _ := run(writeback.Default{})
	assert.Greater(t, small(h), 1000, "the flusher and the fsync alternate on a's pages: 4 KiB bios")
	assert.Positive(t, h.Stats().Written[writeback.ReasonBackground])
	assert.Zero(t, h.Stats().Skips)

	h, a, b := run(writeback.Default{Serializer: writeback.F2FSSerialize{}})
	st := h.Stats()
	assert.Positive(t, st.Skips)
	assert.Positive(t, st.SkippedPages)
	assert.Zero(t, st.Written[writeback.ReasonBackground])
	assert.Equal(t, int64(2000), st.Written[writeback.ReasonFsync])
	assert.LessOrEqual(t, small(h), 1)
	assert.Len(t, a.Extents(), 1)
	assert.Equal(t, int64(300), b.DirtyPages())
	h.Run()
	assert.Zero(t, b.DirtyPages(), "written later")
}

// Runs are deterministic: the same scenario gives the same IOs and
// statistics.
func TestDeterminism(t *testing.T) {
	scenario := func() ([]writeback.IO, writeback.Stats, time.Duration) {
		h := writeback.NewHarness(t, writeback.HarnessOptions{
			AvailablePages: 8192, Seed: 7,
			Policy: writeback.Default{Serializer: writeback.F2FSSerialize{Rule: writeback.F2FSMerged}},
		})
		for i, name := range []string{"a", "b", "c", "d"} {
			f := h.File(name)
			h.Writer("w"+name, f, writeback.WriterOptions{
				Start: time.Duration(i) * ms, Pages: 1500, Chunk: 64, Think: 100 * us, Fsync: i%2 == 0,
			})
		}
		h.Run()
		return h.IOs(), h.Stats(), h.Now()
	}
	ios1, st1, end1 := scenario()
	ios2, st2, end2 := scenario()
	require.NotEmpty(t, ios1)
	assert.Positive(t, st1.Pauses, "the scenario throttles")
	assert.Equal(t, ios1, ios2)
	assert.Equal(t, st1, st2)
	assert.Equal(t, end1, end2)
}

// Close stops the flusher: it exits when it next runs, and later syncs
// fail with ErrClosed.
func TestClose(t *testing.T) {
	h := writeback.NewHarness(t, writeback.HarnessOptions{AvailablePages: 1 << 20})
	f := h.File("f")
	h.Writer("w", f, writeback.WriterOptions{Pages: 10})
	h.RunUntil(ms)
	wb := h.Writeback()
	require.NoError(t, wb.Close())
	require.NoError(t, wb.Close(), "idempotent")
	h.Run()
	assert.Zero(t, h.Engine().Tasks(), "the flusher has exited")
	assert.Less(t, h.Now(), 6*s, "the periodic timer is void")
	h.Go("late", 0, func(tk *sim.Task) {
		assert.ErrorIs(t, wb.Sync(tk, f, writeback.SyncAll), writeback.ErrClosed)
		assert.ErrorIs(t, wb.SyncFS(tk), writeback.ErrClosed)
	})
	h.Run()
}

// A policy that never writes an inode leaves the periodic timer running
// forever; the harness's Run reports it instead of hanging.
func TestHarnessRunLimit(t *testing.T) {
	ft := &fakeTB{TB: t}
	h := writeback.NewHarness(ft, writeback.HarnessOptions{Policy: lazy{}, RunLimit: time.Minute})
	h.Writer("w", h.File("f"), writeback.WriterOptions{Pages: 8})
	func() {
		defer func() { _ = recover() }()
		h.Run()
	}()
	assert.Contains(t, ft.msg, `still busy after 1m0s of simulated time; dirty files [f] (does the policy "lazy" (writeback_test.lazy) leave them dirty?)`)
	assert.LessOrEqual(t, h.Now(), time.Minute)
}

// lazy never writes.
type lazy struct{ writeback.Default }

func (lazy) Name() string                             { return "lazy" }
func (lazy) Pick(writeback.PassInfo) []writeback.Work { return nil }

// fakeTB records Fatal instead of failing the test.
type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	panic("fatal")
}

// A deadlocked test fails instead of running on: here an fsync stuck
// forever while announced as a WB_SYNC_ALL writer makes f2fs's rule skip
// the dirty file in every flusher pass, so the periodic timer would be
// re-armed forever (Run would report it only at RunLimit, as a policy
// leaving files dirty; RunUntil would run to its end). Without a timer
// (dirty_writeback 0) the engine drains and Run reports the blocked task.
func TestHarnessDeadlock(t *testing.T) {
	noPeriodic := writeback.DefaultLimits()
	noPeriodic.DirtyWriteback = 0
	tests := []struct {
		name   string
		limits writeback.Limits
		run    func(h *writeback.Harness)
		want   string
	}{
		{
			name: "Run", run: (*writeback.Harness).Run,
			want: `writeback harness: tasks blocked or throttled at the dirty limit with no IO since 1ms, only the flusher's timer left; dirty files [b] (a deadlock in the test, or does the policy "default[f2fs-v4.19]" (writeback.Default) leave them dirty?): stuck-fsync`,
		},
		{
			name: "RunUntil", run: func(h *writeback.Harness) { h.RunUntil(2 * time.Hour) },
			want: `writeback harness: tasks blocked or throttled at the dirty limit with no IO since 1ms, only the flusher's timer left; dirty files [b] (a deadlock in the test, or does the policy "default[f2fs-v4.19]" (writeback.Default) leave them dirty?): stuck-fsync`,
		},
		{
			name: "Run without periodic writeback", limits: noPeriodic, run: (*writeback.Harness).Run,
			want: `writeback harness: 1 unfinished tasks blocked forever at 1ms; dirty files [b] (a deadlock in the test, or in the policy "default[f2fs-v4.19]" (writeback.Default)?)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := &fakeTB{TB: t}
			h := writeback.NewHarness(ft, writeback.HarnessOptions{
				Policy: writeback.Default{Serializer: writeback.F2FSSerialize{}}, Limits: tt.limits,
			})
			a, b := h.File("a"), h.File("b")
			h.Writer("w", b, writeback.WriterOptions{Pages: 8})
			h.Go("stuck-fsync", ms, func(tk *sim.Task) {
				h.Writeback().BeginWritepages(a, &writeback.Control{SyncMode: writeback.SyncAll})
				var never sim.Completion
				never.Wait(tk)
			})
			func() {
				defer func() { _ = recover() }()
				tt.run(h)
			}()
			assert.Equal(t, tt.want, ft.msg)
			assert.Equal(t, int64(8), b.DirtyPages(), "the flusher skipped b")
			assert.Less(t, h.Now(), 2*time.Minute)
		})
	}
}

// skipSync is a broken lock rule: it skips every WB_SYNC_ALL call, so
// fsync returns with its pages dirty.
type skipSync struct{ writeback.Default }

func (skipSync) Serialize(q writeback.LockQuery) writeback.LockDecision {
	if q.Control.SyncMode == writeback.SyncAll {
		return writeback.LockSkip
	}
	return writeback.LockNone
}

// The harness checks fsync's contract: a policy that lets fsync return
// with pages that were dirty when it was called fails the test, through
// Harness.Fsync and through a Writer's fsync alike. Pages dirtied again
// after the call may stay dirty.
func TestHarnessFsyncLeavesDirtyPages(t *testing.T) {
	for _, viaWriter := range []bool{false, true} {
		t.Run(fmt.Sprint("writer=", viaWriter), func(t *testing.T) {
			ft := &fakeTB{TB: t}
			h := writeback.NewHarness(ft, writeback.HarnessOptions{Policy: skipSync{}})
			f := h.File("f")
			if viaWriter {
				h.Writer("app", f, writeback.WriterOptions{Pages: 8, Fsync: true})
			} else {
				h.Go("app", 0, func(tk *sim.Task) {
					h.Write(tk, f, 0, 8)
					assert.NoError(t, h.Fsync(tk, f), "the error is the test's, at the end of the run")
				})
			}
			func() {
				defer func() { _ = recover() }()
				h.Run()
			}()
			assert.Regexp(t, `^writeback harness: app: fsync of f returned at [0-9.]+µs with 8 pages still dirty that were dirty when it was called \(the first: page 0\); WB_SYNC_ALL writeback must write them \(policy "default" \(writeback_test.skipSync\)\)$`, ft.msg)
		})
	}

	// The kernel's rule: pages dirtied after the call are not fsync's.
	h := writeback.NewHarness(t, writeback.HarnessOptions{})
	f := h.File("f")
	h.Go("app", 0, func(tk *sim.Task) {
		h.Write(tk, f, 0, 64)
		require.NoError(t, h.Fsync(tk, f))
		assert.Equal(t, int64(4), f.DirtyPages(), "only the pages dirtied again during the fsync")
	})
	h.Go("rewriter", 0, func(tk *sim.Task) {
		tk.Sleep(100 * time.Microsecond) // during the fsync's IO
		h.Write(tk, f, 0, 4)
	})
	h.Run()
	assert.Equal(t, int64(64+4), f.Written(), "the rewritten pages went out again")
}

// Negative pages fail the test with a message saying so, not with an
// index out of range inside a task: at once from Writer, and when Run
// returns from a Write inside a task.
func TestHarnessNegativePages(t *testing.T) {
	for _, tc := range []struct {
		name string
		use  func(h *writeback.Harness, f *writeback.FakeFile)
		want string
	}{
		{"Writer", func(h *writeback.Harness, f *writeback.FakeFile) {
			h.Writer("w", f, writeback.WriterOptions{Page: -3, Pages: 8})
		}, "writeback harness: writer w: Page -3 and Pages 8 must not be negative"},
		{"Write", func(h *writeback.Harness, f *writeback.FakeFile) {
			h.Go("w", 0, func(tk *sim.Task) { h.Write(tk, f, 0, -1) })
			h.Run()
		}, "writeback harness: w: write of pages [0, 0+-1) of f: a page and a count must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeTB{TB: t}
			h := writeback.NewHarness(ft, writeback.HarnessOptions{})
			f := h.File("f")
			func() {
				defer func() { _ = recover() }()
				tc.use(h, f)
			}()
			assert.Equal(t, tc.want, ft.msg)
			assert.Zero(t, f.DirtyPages())
		})
	}
}

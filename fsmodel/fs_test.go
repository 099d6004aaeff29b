package fsmodel

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
)

const us = time.Microsecond

// testCosts make the path timelines easy to follow: a call enters at
// +1us (half the syscall), submits after DIOSetup+BioSubmit (2us) and
// finishes 3us (DIOComplete) after its bios complete.
var testCosts = Costs{Syscall: 2 * us, DIOSetup: 1 * us, BioSubmit: 1 * us, DIOComplete: 3 * us}

// env is a filesystem on a memory device on a bare engine with 4 CPUs
// (enough that the tests' tasks never queue for one).
type env struct {
	e   *sim.Engine
	mem *blockdev.MemDevice
	q   *blockdev.Queue
	fs  *FS
}

func newEnv(t *testing.T, policy LockPolicy, mp blockdev.MemParams) *env {
	t.Helper()
	e := sim.New(sim.Options{Seed: 1, Host: sim.Host{CPUs: 4}})
	t.Cleanup(func() { _ = e.Close() })
	if mp.Capacity == 0 {
		mp.Capacity = 64 * MiB
	}
	mem := blockdev.NewMemDevice(e, mp)
	q, err := blockdev.NewQueue(e, mem, blockdev.QueueOptions{})
	require.NoError(t, err)
	fs, err := New(e, q, Options{Policy: policy, Costs: testCosts, Name: "ext4"})
	require.NoError(t, err)
	return &env{e: e, mem: mem, q: q, fs: fs}
}

// spawn starts a task at simulated time at.
func (v *env) spawn(name string, at time.Duration, fn func(t *sim.Task)) {
	v.e.Go(name, func(tk *sim.Task) {
		tk.Sleep(at)
		fn(tk)
	})
}

// probe runs fn at simulated time at, from a handler.
func (v *env) probe(at time.Duration, fn func()) { v.e.AfterFunc(at, fn) }

func (v *env) run(t *testing.T) {
	t.Helper()
	require.NoError(t, v.e.Run(-1))
}

// fixedPolicy returns the same span for every read and every write, so
// each span's path can be tested on its own.
type fixedPolicy struct{ read, write LockSpan }

func (p fixedPolicy) Name() string                { return "fixed" }
func (p fixedPolicy) DIORead(IORequest) LockSpan  { return p.read }
func (p fixedPolicy) DIOWrite(IORequest) LockSpan { return p.write }

// lockState is what a probe sees of the inode lock.
type lockState struct {
	Readers  int
	Writer   string
	DIOCount int
}

func stateOf(in *Inode) lockState {
	s := lockState{Readers: in.Lock.Readers(), DIOCount: in.dioCount}
	if w := in.Lock.Writer(); w != nil {
		s.Writer = w.Name()
	}
	return s
}

// One DIO on a MemDevice with 100us latency, issued at 0: it enters at
// 1us, submits at 3us, its bio completes at 103us, and the call returns
// at 106us. Probes look at the inode lock at 2us (submitting), 50us
// (device working), 104.5us (finishing) and 106.5us (returned).
func TestDIOLockSpans(t *testing.T) {
	free := lockState{}
	shared := lockState{Readers: 1}
	excl := lockState{Writer: "io"}
	for _, tc := range []struct {
		name       string
		op         blockdev.Op
		span       LockSpan
		states     [4]lockState // at 2us, 50us, 104.5us, 106.5us
		acq        uint64       // acquisitions in the span's mode
		hold       time.Duration
		sharedMode bool
	}{
		// No inode lock: the in-flight DIO count pins the inode across
		// the IO and the completion work.
		{"none", blockdev.OpRead, SpanNone,
			[4]lockState{{DIOCount: 1}, {DIOCount: 1}, {DIOCount: 1}, free}, 0, 0, false},
		// Shared from before submission until the IO completed and was
		// finished: 1us .. 106us.
		{"shared across io", blockdev.OpRead, SpanSharedIO,
			[4]lockState{shared, shared, shared, free}, 1, 105 * us, true},
		{"shared across io (write)", blockdev.OpWrite, SpanSharedIO,
			[4]lockState{shared, shared, shared, free}, 1, 105 * us, true},
		// Exclusive for the whole call, device time included.
		{"exclusive across io", blockdev.OpWrite, SpanExclusiveIO,
			[4]lockState{excl, excl, excl, free}, 1, 105 * us, false},
		// Exclusive while mapping and submitting (1us .. 3us), then the
		// task waits for the device with no lock held.
		{"exclusive submit", blockdev.OpRead, SpanExclusiveSubmit,
			[4]lockState{excl, free, free, free}, 1, 2 * us, false},
		// Exclusive to submit, dropped across the IO (the DIO count
		// pins the inode), re-taken exclusive at 103us for the
		// completion work until 106us.
		{"exclusive relock", blockdev.OpWrite, SpanExclusiveRelock,
			[4]lockState{{Writer: "io", DIOCount: 1}, {DIOCount: 1}, excl, free}, 2, 2*us + 3*us, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t, fixedPolicy{read: tc.span, write: tc.span}, blockdev.MemParams{Latency: 100 * us})
			f, err := v.fs.Open("f", MiB)
			require.NoError(t, err)
			in := f.Inode()
			var got [4]lockState
			for i, at := range []time.Duration{2 * us, 50 * us, 104*us + 500, 106*us + 500} {
				v.probe(at, func() { got[i] = stateOf(in) })
			}
			var ret time.Duration
			v.spawn("io", 0, func(tk *sim.Task) {
				if tc.op == blockdev.OpRead {
					assert.NoError(t, f.DirectRead(tk, 64*KiB, 4*KiB, nil))
				} else {
					assert.NoError(t, f.DirectWrite(tk, 64*KiB, 4*KiB, blockdev.Stamp{Writer: 1, Seq: 1}))
				}
				ret = time.Duration(tk.Now())
			})
			v.run(t)
			assert.Equal(t, 106*us, ret, "return time")
			assert.Equal(t, tc.states, got, "lock at 2us, 50us, 104.5us, 106.5us")
			st := in.Lock.Stats()
			mode, other := st.Write, st.Read
			if tc.sharedMode {
				mode, other = st.Read, st.Write
			}
			assert.Equal(t, tc.acq, mode.Acquisitions)
			assert.Equal(t, tc.hold, mode.HoldTotal)
			assert.Zero(t, other.Acquisitions)
			assert.Zero(t, mode.Contentions)
			assert.Equal(t, 0, in.dioCount)
		})
	}
}

// Two IOs of the same span issued together: the span decides whether the
// second overlaps the first's device time.
func TestDIOSpansAndConcurrency(t *testing.T) {
	for _, tc := range []struct {
		name string
		span LockSpan
		// return times of the first and second IO
		want [2]time.Duration
		// lock state at 50us, while the first IO's bio is in the device
		mid lockState
	}{
		// Both hold the lock shared across their IOs, in parallel.
		{"shared across io", SpanSharedIO, [2]time.Duration{106 * us, 106 * us}, lockState{Readers: 2}},
		// The second waits for the first's whole IO: it gets the lock at
		// 106us, submits at 108us and finishes at 211us.
		{"exclusive across io", SpanExclusiveIO, [2]time.Duration{106 * us, 211 * us}, lockState{Writer: "a"}},
		// The second only waits for the first's submission (until 3us):
		// submits at 5us, returns at 108us.
		{"exclusive submit", SpanExclusiveSubmit, [2]time.Duration{106 * us, 108 * us}, lockState{}},
		// Both submit under the lock, run in parallel, and re-take it one
		// after the other: the first holds it 103..106us, the second
		// gets it at 106us and returns at 109us.
		{"exclusive relock", SpanExclusiveRelock, [2]time.Duration{106 * us, 109 * us}, lockState{DIOCount: 2}},
		{"none", SpanNone, [2]time.Duration{106 * us, 106 * us}, lockState{DIOCount: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t, fixedPolicy{read: tc.span, write: tc.span}, blockdev.MemParams{Latency: 100 * us})
			f, err := v.fs.Open("f", MiB)
			require.NoError(t, err)
			var mid lockState
			v.probe(50*us, func() { mid = stateOf(f.Inode()) })
			var got [2]time.Duration
			for i, name := range []string{"a", "b"} {
				v.spawn(name, 0, func(tk *sim.Task) {
					assert.NoError(t, f.DirectWrite(tk, int64(i)*4*KiB, 4*KiB, blockdev.Stamp{Writer: uint32(i + 1), Seq: 1}))
					got[i] = time.Duration(tk.Now())
				})
			}
			v.run(t)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.mid, mid)
		})
	}
}

// The w/ collapse in miniature (EXPERIMENTS.md sections 1 and 2): a
// reader holds the lock shared across its device read; a writer waits for
// it; a later reader queues behind the waiting writer although the lock
// is reader-owned, and then waits for the writer's whole device write.
func TestDIOReaderQueuesBehindWaitingWriter(t *testing.T) {
	v := newEnv(t, Ext4{ParallelDIOReads: true}, blockdev.MemParams{Latency: 100 * us})
	f, err := v.fs.Open("f", MiB)
	require.NoError(t, err)
	ret := map[string]time.Duration{}
	io := func(name string, at time.Duration, write bool) {
		v.spawn(name, at, func(tk *sim.Task) {
			if write {
				assert.NoError(t, f.DirectWrite(tk, 0, 4*KiB, blockdev.Stamp{Writer: 9, Seq: 1}))
			} else {
				assert.NoError(t, f.DirectRead(tk, 8*KiB, 4*KiB, nil))
			}
			ret[name] = time.Duration(tk.Now())
		})
	}
	io("r1", 0, false)
	io("w", 10*us, true)
	io("r2", 20*us, false)
	var mid lockState
	var waiters int
	v.probe(50*us, func() { mid = stateOf(f.Inode()); waiters = f.Inode().Lock.Waiters() })
	v.run(t)
	assert.Equal(t, lockState{Readers: 1}, mid)
	assert.Equal(t, 2, waiters, "the writer and the second reader sleep")
	// r1: 106us. w gets the lock at 106, submits at 108, bio done 208,
	// returns 211. r2 gets it at 211, submits 213, done 313, returns 316.
	assert.Equal(t, map[string]time.Duration{"r1": 106 * us, "w": 211 * us, "r2": 316 * us}, ret)
}

func TestDIOMisaligned(t *testing.T) {
	for _, tc := range []struct {
		lbs    int
		off, n int64
	}{
		{512, 100, 4096},
		{512, 0, 1000},
		{512, 4096, 0},
		{4096, 512, 4096},
		{4096, 0, 512},
		{4096, 8192, 4096 + 512},
	} {
		for _, op := range []blockdev.Op{blockdev.OpRead, blockdev.OpWrite} {
			t.Run(fmt.Sprintf("lbs%d/%s/%d+%d", tc.lbs, op, tc.off, tc.n), func(t *testing.T) {
				v := newEnv(t, Ext4{}, blockdev.MemParams{LogicalBlockSize: tc.lbs, Latency: 10 * us})
				f, err := v.fs.Open("data", MiB)
				require.NoError(t, err)
				var ioErr error
				v.spawn("io", 0, func(tk *sim.Task) {
					if op == blockdev.OpRead {
						ioErr = f.DirectRead(tk, tc.off, tc.n, nil)
					} else {
						ioErr = f.DirectWrite(tk, tc.off, tc.n, blockdev.Stamp{Writer: 1, Seq: 1})
					}
				})
				v.run(t)
				require.ErrorIs(t, ioErr, syscall.EINVAL)
				var ae *blockdev.AlignmentError
				require.ErrorAs(t, ioErr, &ae)
				msg := ioErr.Error()
				assert.Contains(t, msg, "data")
				assert.Contains(t, msg, fmt.Sprintf("offset %d", tc.off))
				if tc.n > 0 {
					assert.Contains(t, msg, fmt.Sprintf("aligned to %d bytes", tc.lbs))
				} else {
					assert.Contains(t, msg, "an IO needs a positive length")
				}
				assert.Zero(t, v.q.Stats().IOs, "nothing reaches the device")
				st := f.Inode().Lock.Stats()
				assert.Zero(t, st.Read.Acquisitions+st.Write.Acquisitions, "the lock is not taken")
			})
		}
	}
}

func TestDIOBeyondEOF(t *testing.T) {
	const size = MiB
	for _, tc := range []struct {
		name   string
		off, n int64
		ok     bool
	}{
		{"last block", size - 4*KiB, 4 * KiB, true},
		{"whole file", 0, size, true},
		{"crossing EOF", size - 4*KiB, 8 * KiB, false},
		{"at EOF", size, 4 * KiB, false},
		{"negative offset", -4 * KiB, 4 * KiB, false},
		{"offset+length overflows", 1 << 62, 1 << 62, false},
	} {
		for _, op := range []blockdev.Op{blockdev.OpRead, blockdev.OpWrite} {
			t.Run(tc.name+"/"+op.String(), func(t *testing.T) {
				v := newEnv(t, Ext4{}, blockdev.MemParams{Latency: 10 * us})
				f, err := v.fs.Open("f", size)
				require.NoError(t, err)
				returned := false
				var ioErr error
				v.spawn("io", 0, func(tk *sim.Task) {
					if op == blockdev.OpRead {
						ioErr = f.DirectRead(tk, tc.off, tc.n, nil)
					} else {
						ioErr = f.DirectWrite(tk, tc.off, tc.n, blockdev.Stamp{Writer: 1, Seq: 1})
					}
					returned = true
				})
				v.run(t)
				require.True(t, returned, "the call returned")
				if tc.ok {
					assert.NoError(t, ioErr)
					return
				}
				assert.ErrorIs(t, ioErr, ErrBeyondEOF)
				assert.ErrorIs(t, ioErr, syscall.EINVAL)
				assert.Zero(t, v.q.Stats().IOs)
			})
		}
	}
}

// An IO that reaches the device and fails there returns the device's
// error (EIO), and the lock is released.
func TestDIODeviceErrorReturned(t *testing.T) {
	v := newEnv(t, Ext4{ParallelDIOReads: true}, blockdev.MemParams{Latency: 10 * us})
	f, err := v.fs.Open("f", MiB)
	require.NoError(t, err)
	// Shrink nothing: make the file's extent point past the device end.
	f.ext.exts[0].Physical = v.mem.Capacity() - 4*KiB
	var ioErr error
	v.spawn("io", 0, func(tk *sim.Task) { ioErr = f.DirectRead(tk, 0, 8*KiB, nil) })
	v.run(t)
	assert.ErrorIs(t, ioErr, syscall.EIO)
	assert.ErrorContains(t, ioErr, "f read at 0+8192")
	assert.Equal(t, lockState{}, stateOf(f.Inode()))
}

func TestOpen(t *testing.T) {
	v := newEnv(t, Ext4{}, blockdev.MemParams{Capacity: MiB})
	a, err := v.fs.Open("a", 600*KiB)
	require.NoError(t, err)
	assert.Equal(t, "a", a.Name())
	assert.Equal(t, 600*KiB, a.Size())
	assert.Equal(t, []Extent{{Logical: 0, Physical: 0, Length: 600 * KiB}}, a.Extents().Extents())

	again, err := v.fs.Open("a", 600*KiB)
	require.NoError(t, err)
	assert.Same(t, a, again, "opening twice returns the same file")
	smaller, err := v.fs.Open("a", 4*KiB)
	require.NoError(t, err)
	assert.Same(t, a, smaller)
	assert.Equal(t, 600*KiB, smaller.Size(), "a smaller size does not truncate")

	_, err = v.fs.Open("a", 600*KiB+1)
	assert.ErrorIs(t, err, ErrExists)
	assert.ErrorContains(t, err, `"a"`)

	// 1 MiB device: 600 KiB used, 424 KiB free.
	_, err = v.fs.Open("b", 600*KiB)
	assert.ErrorIs(t, err, ErrNoSpace)
	assert.ErrorIs(t, err, syscall.ENOSPC)
	assert.ErrorContains(t, err, `"b"`)

	// Sizes round up to the block size: 5000 bytes take 8 KiB.
	c, err := v.fs.Open("c", 5000)
	require.NoError(t, err)
	assert.Equal(t, int64(5000), c.Size())
	assert.Equal(t, []Extent{{Logical: 0, Physical: 600 * KiB, Length: 8 * KiB}}, c.Extents().Extents())
	d, err := v.fs.Open("d", 416*KiB)
	require.NoError(t, err, "exactly the rest of the device")
	assert.Equal(t, 608*KiB, d.Extents().Extents()[0].Physical)
	_, err = v.fs.Open("e", 1)
	assert.ErrorIs(t, err, syscall.ENOSPC, "the device is full")

	for _, size := range []int64{0, -4096} {
		_, err = v.fs.Open("z", size)
		assert.ErrorIs(t, err, syscall.EINVAL)
	}

	_, err = New(v.e, v.q, Options{})
	assert.ErrorContains(t, err, "policy")
}

// queuedFlags records, per direction, the REQ_SYNC flag of every bio the
// queue traced as queued (Q).
type queuedFlags map[blockdev.Op][]bool

func (q queuedFlags) Trace(ev *blockdev.TraceEvent) {
	if ev.Action == blockdev.TraceQueue {
		q[ev.Op] = append(q[ev.Op], ev.Sync)
	}
}

// Direct-IO bios carry REQ_SYNC on writes only, as the kernel builds them
// (fs/direct-io.c: REQ_OP_WRITE with REQ_SYNC | REQ_IDLE, a bare
// REQ_OP_READ), so blkparse shows a direct read "R" and a direct write
// "WS".
func TestDIOSyncFlagOnWritesOnly(t *testing.T) {
	v := newEnv(t, Ext4{}, blockdev.MemParams{Latency: 10 * us})
	got := queuedFlags{}
	v.q.SetTracer(got)
	f, err := v.fs.Open("f", MiB)
	require.NoError(t, err)
	v.spawn("io", 0, func(tk *sim.Task) {
		assert.NoError(t, f.DirectWrite(tk, 0, 8*KiB, blockdev.Stamp{Writer: 1, Seq: 1}))
		assert.NoError(t, f.DirectRead(tk, 0, 8*KiB, nil))
	})
	v.run(t)
	assert.Equal(t, queuedFlags{blockdev.OpWrite: {true}, blockdev.OpRead: {false}}, got)
}

package fsmodel

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
)

// aioWaiter is an IOCB handler that records completions and wakes a task
// waiting for all of them.
type aioWaiter struct {
	done int
	want int
	at   []time.Duration
	errs []error
	wq   sim.WaitQueue
}

func (w *aioWaiter) AIODone(cb *IOCB) {
	w.done++
	w.at = append(w.at, time.Duration(cb.Completed))
	w.errs = append(w.errs, cb.Err)
	if w.done >= w.want {
		w.wq.WakeAll()
	}
}

// waitAll sleeps t until n IOs have completed.
func (w *aioWaiter) waitAll(t *sim.Task, n int) {
	w.want = n
	for w.done < n {
		w.wq.Wait(t)
	}
}

// One AIO on a MemDevice with 100us latency, submitted at 0: the lock is
// taken at 0, the bio submitted at 2us (DIOSetup + BioSubmit) and the lock
// dropped then; the device completes it at 102us with no lock held. Probes
// look at 1us (submitting), 50us (device working) and 103us (completed).
func TestAIOLockSpansCollapseToSubmission(t *testing.T) {
	shared := lockState{Readers: 1, DIOCount: 1}
	excl := lockState{Writer: "io", DIOCount: 1}
	inFlight := lockState{DIOCount: 1}
	for _, tc := range []struct {
		name       string
		op         blockdev.Op
		span       LockSpan
		submitting lockState
		sharedMode bool
		acq        uint64
	}{
		{"none", blockdev.OpRead, SpanNone, inFlight, false, 0},
		{"shared across io", blockdev.OpRead, SpanSharedIO, shared, true, 1},
		{"exclusive across io", blockdev.OpWrite, SpanExclusiveIO, excl, false, 1},
		{"exclusive submit", blockdev.OpRead, SpanExclusiveSubmit, excl, false, 1},
		{"exclusive relock", blockdev.OpWrite, SpanExclusiveRelock, excl, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t, fixedPolicy{read: tc.span, write: tc.span}, blockdev.MemParams{Latency: 100 * us})
			f, err := v.fs.Open("f", MiB)
			require.NoError(t, err)
			in := f.Inode()
			var got [3]lockState
			for i, at := range []time.Duration{1 * us, 50 * us, 103 * us} {
				v.probe(at, func() { got[i] = stateOf(in) })
			}
			w := &aioWaiter{}
			cb := &IOCB{Handler: w}
			var ret time.Duration
			v.spawn("io", 0, func(tk *sim.Task) {
				require.NoError(t, f.DirectAIO(tk, tc.op, 64*KiB, 4*KiB, blockdev.Stamp{Writer: 1, Seq: 1}, cb))
				ret = time.Duration(tk.Now())
				assert.True(t, cb.InFlight())
				w.waitAll(tk, 1)
			})
			v.run(t)
			assert.Equal(t, 2*us, ret, "DirectAIO returns after submission")
			assert.Equal(t, [3]lockState{tc.submitting, inFlight, {}}, got, "lock at 1us, 50us, 103us")
			assert.Equal(t, []time.Duration{102 * us}, w.at)
			assert.Equal(t, []error{nil}, w.errs)
			assert.False(t, cb.InFlight())
			st := in.Lock.Stats()
			mode, other := st.Write, st.Read
			if tc.sharedMode {
				mode, other = st.Read, st.Write
			}
			assert.Equal(t, tc.acq, mode.Acquisitions)
			assert.Equal(t, time.Duration(tc.acq)*2*us, mode.HoldTotal, "held only while submitting")
			assert.Zero(t, other.Acquisitions)
		})
	}
}

// The difference AIO makes to the w/ collapse: a writer arriving while a
// shared AIO read is on the device takes the lock at once, where it waits
// for the whole device read of a synchronous one.
func TestAIOReadDoesNotBlockWriterForDeviceTime(t *testing.T) {
	for _, async := range []bool{false, true} {
		name := "sync read"
		if async {
			name = "async read"
		}
		t.Run(name, func(t *testing.T) {
			v := newEnv(t, Ext4{ParallelDIOReads: true}, blockdev.MemParams{Latency: 100 * us})
			f, err := v.fs.Open("f", MiB)
			require.NoError(t, err)
			w := &aioWaiter{}
			v.spawn("r", 0, func(tk *sim.Task) {
				if async {
					require.NoError(t, f.DirectAIO(tk, blockdev.OpRead, 8*KiB, 4*KiB, blockdev.Stamp{}, &IOCB{Handler: w}))
					w.waitAll(tk, 1)
					return
				}
				require.NoError(t, f.DirectRead(tk, 8*KiB, 4*KiB, nil))
			})
			var wret time.Duration
			v.spawn("w", 10*us, func(tk *sim.Task) {
				require.NoError(t, f.DirectWrite(tk, 0, 4*KiB, blockdev.Stamp{Writer: 2, Seq: 1}))
				wret = time.Duration(tk.Now())
			})
			v.run(t)
			st := f.Inode().Lock.Stats()
			if async {
				// The writer enters at 11us, finds the lock free, submits at
				// 13us, its bio ends at 113us and it returns at 116us.
				assert.Equal(t, 116*us, wret)
				assert.Zero(t, st.Write.Contentions)
				return
			}
			// It waits for the reader's whole IO (until 106us): 211us.
			assert.Equal(t, 211*us, wret)
			assert.Equal(t, uint64(1), st.Write.Contentions)
		})
	}
}

// IOs submitted in one batch go through one plug: 64 sequential 4 KiB
// writes merge into requests of max_sectors_kb; submitted one at a time,
// each is its own request.
func TestAIOBatchMergesInPlug(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch bool
		want  map[int64]uint64
	}{
		{"one batch", true, map[int64]uint64{128 * KiB: 2}},
		{"no batch", false, map[int64]uint64{4 * KiB: 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.New(sim.Options{Seed: 1, Host: sim.Host{CPUs: 4}})
			t.Cleanup(func() { _ = e.Close() })
			mem := blockdev.NewMemDevice(e, blockdev.MemParams{Capacity: 64 * MiB, Latency: 100 * us})
			q, err := blockdev.NewQueue(e, mem, blockdev.QueueOptions{MaxSectorsKB: 128})
			require.NoError(t, err)
			fs, err := New(e, q, Options{Policy: Ext4{ParallelDIOReads: true}, Costs: testCosts, Name: "ext4"})
			require.NoError(t, err)
			f, err := fs.Open("f", MiB)
			require.NoError(t, err)
			w := &aioWaiter{}
			cbs := make([]IOCB, 64)
			e.Go("io", func(tk *sim.Task) {
				var b *Batch
				if tc.batch {
					b = fs.StartBatch(tk)
				}
				for i := range cbs {
					cbs[i].Handler = w
					require.NoError(t, f.DirectAIO(tk, blockdev.OpWrite, int64(i)*4*KiB, 4*KiB, blockdev.Stamp{Writer: 1, Seq: uint64(i + 1)}, &cbs[i]))
				}
				if b != nil {
					b.Finish()
				}
				w.waitAll(tk, len(cbs))
			})
			require.NoError(t, e.Run(-1))
			st := q.Stats()
			assert.Equal(t, tc.want, st.DispatchedSizes[blockdev.OpWrite])
			assert.Equal(t, map[int64]uint64{4 * KiB: 64}, st.QueuedSizes[blockdev.OpWrite])
			// Every block holds its own write.
			for i := range cbs {
				got := mem.Stamps().Read(nil, int64(i)*8, 8)
				require.Len(t, got, 1)
				assert.Equal(t, blockdev.Stamp{Writer: 1, Seq: uint64(i + 1)}, got[0].Stamp)
			}
		})
	}
}

// A batch's plug is flushed when its task sleeps: an IO that waits for the
// inode lock sends the bios batched before it to the device first.
func TestAIOBatchFlushesWhenTaskSleeps(t *testing.T) {
	v := newEnv(t, Ext4{ParallelDIOReads: true}, blockdev.MemParams{Latency: 100 * us})
	f, err := v.fs.Open("f", MiB)
	require.NoError(t, err)
	g, err := v.fs.Open("g", MiB)
	require.NoError(t, err)
	// A synchronous writer holds g's lock exclusive from 1us to 106us.
	v.spawn("holder", 0, func(tk *sim.Task) {
		require.NoError(t, g.DirectWrite(tk, 0, 4*KiB, blockdev.Stamp{Writer: 9, Seq: 1}))
	})
	w := &aioWaiter{}
	var cbs [2]IOCB
	v.spawn("io", 10*us, func(tk *sim.Task) {
		b := v.fs.StartBatch(tk)
		cbs[0].Handler, cbs[1].Handler = w, w
		require.NoError(t, f.DirectAIO(tk, blockdev.OpRead, 0, 4*KiB, blockdev.Stamp{}, &cbs[0]))
		// Sleeps on g's lock: f's read goes to the device at 12us.
		require.NoError(t, g.DirectAIO(tk, blockdev.OpRead, 0, 4*KiB, blockdev.Stamp{}, &cbs[1]))
		b.Finish()
		w.waitAll(tk, 2)
	})
	v.run(t)
	assert.Equal(t, 112*us, time.Duration(cbs[0].Completed))
	// g's read: lock granted at 106us, submitted at 108us, done at 208us.
	assert.Equal(t, 208*us, time.Duration(cbs[1].Completed))
}

func TestAIOErrors(t *testing.T) {
	t.Run("misaligned", func(t *testing.T) {
		v := newEnv(t, Ext4{ParallelDIOReads: true}, blockdev.MemParams{Latency: 10 * us})
		f, err := v.fs.Open("f", MiB)
		require.NoError(t, err)
		w := &aioWaiter{}
		cb := &IOCB{Handler: w}
		var errs []error
		v.spawn("io", 0, func(tk *sim.Task) {
			errs = append(errs, f.DirectAIO(tk, blockdev.OpRead, 100, 4*KiB, blockdev.Stamp{}, cb))
			errs = append(errs, f.DirectAIO(tk, blockdev.OpWrite, MiB-4*KiB, 8*KiB, blockdev.Stamp{}, cb))
		})
		v.run(t)
		require.Len(t, errs, 2)
		assert.ErrorIs(t, errs[0], syscall.EINVAL)
		assert.ErrorContains(t, errs[0], "f read")
		assert.ErrorIs(t, errs[1], ErrBeyondEOF)
		assert.Zero(t, w.done, "the handler is not called")
		assert.False(t, cb.InFlight())
		assert.Zero(t, v.q.Stats().IOs)
		st := f.Inode().Lock.Stats()
		assert.Zero(t, st.Read.Acquisitions+st.Write.Acquisitions)
	})
	t.Run("device error", func(t *testing.T) {
		v := newEnv(t, Ext4{ParallelDIOReads: true}, blockdev.MemParams{Latency: 10 * us})
		f, err := v.fs.Open("f", MiB)
		require.NoError(t, err)
		f.ext.exts[0].Physical = v.mem.Capacity() - 4*KiB
		w := &aioWaiter{}
		cb := &IOCB{Handler: w}
		v.spawn("io", 0, func(tk *sim.Task) {
			require.NoError(t, f.DirectAIO(tk, blockdev.OpRead, 0, 8*KiB, blockdev.Stamp{}, cb))
			w.waitAll(tk, 1)
		})
		v.run(t)
		assert.ErrorIs(t, cb.Err, syscall.EIO)
		assert.ErrorContains(t, cb.Err, "f read at 0+8192")
		assert.Equal(t, lockState{}, stateOf(f.Inode()))
	})
	t.Run("misuse", func(t *testing.T) {
		v := newEnv(t, Ext4{}, blockdev.MemParams{Latency: 10 * us})
		f, err := v.fs.Open("f", MiB)
		require.NoError(t, err)
		w := &aioWaiter{}
		cb := &IOCB{Handler: w}
		v.spawn("io", 0, func(tk *sim.Task) {
			assert.Panics(t, func() { _ = f.DirectAIO(tk, blockdev.OpRead, 0, 4*KiB, blockdev.Stamp{}, &IOCB{}) }, "no handler")
			require.NoError(t, f.DirectAIO(tk, blockdev.OpRead, 0, 4*KiB, blockdev.Stamp{}, cb))
			assert.Panics(t, func() { _ = f.DirectAIO(tk, blockdev.OpRead, 0, 4*KiB, blockdev.Stamp{}, cb) }, "in flight")
			b := v.fs.StartBatch(tk)
			assert.Panics(t, func() { v.fs.StartBatch(tk) }, "second batch")
			b.Finish()
			assert.Panics(t, b.Finish, "finished twice")
			w.waitAll(tk, 1)
		})
		v.run(t)
	})
}

// A read collects the stamps it found when asked, and an IOCB is reused
// without allocating.
func TestAIOCollectAndReuse(t *testing.T) {
	v := newEnv(t, Ext4{ParallelDIOReads: true}, blockdev.MemParams{Latency: 10 * us})
	f, err := v.fs.Open("f", MiB)
	require.NoError(t, err)
	w := &aioWaiter{at: make([]time.Duration, 0, 4096), errs: make([]error, 0, 4096)}
	cb := &IOCB{Handler: w, CollectData: true}
	const warm, measured = 100, 1000
	var before, after runtime.MemStats
	v.spawn("io", 0, func(tk *sim.Task) {
		s := blockdev.Stamp{Writer: 3, Seq: 7}
		require.NoError(t, f.DirectWrite(tk, 0, 8*KiB, s))
		require.NoError(t, f.DirectAIO(tk, blockdev.OpRead, 0, 8*KiB, blockdev.Stamp{}, cb))
		w.waitAll(tk, 1)
		require.Len(t, cb.Data, 1)
		assert.Equal(t, s, cb.Data[0].Stamp)
		assert.Equal(t, int64(16), cb.Data[0].Sectors)
		cb.CollectData = false
		for i := range warm + measured {
			if i == warm {
				runtime.ReadMemStats(&before)
			}
			require.NoError(t, f.DirectAIO(tk, blockdev.OpWrite, int64(i%64)*4*KiB, 4*KiB, s, cb))
			w.waitAll(tk, i+2)
		}
		runtime.ReadMemStats(&after)
	})
	v.run(t)
	assert.Less(t, after.Mallocs-before.Mallocs, uint64(measured/10), "allocations for %d IOs", measured)
}

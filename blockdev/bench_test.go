package blockdev

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
)

// closedLoop keeps len(bios) bios in flight: each completion submits the
// next IO from EndBio (a Handler-driven closed loop with no task), until
// limit IOs have been submitted. fill sets up the i-th IO.
type closedLoop struct {
	q     *Queue
	bios  []Bio
	fill  func(b *Bio, i int)
	onEnd func(b *Bio)

	submitted, completed, limit int
	err                         error
}

func (l *closedLoop) submit(b *Bio) {
	b.Reset()
	b.End = l
	l.fill(b, l.submitted)
	l.submitted++
	l.q.Submit(b)
}

// EndBio records the completion and submits the next IO.
func (l *closedLoop) EndBio(b *Bio) {
	l.completed++
	if b.Err != nil && l.err == nil {
		l.err = b.Err
	}
	if l.onEnd != nil {
		l.onEnd(b)
	}
	if l.submitted < l.limit {
		l.submit(b)
	}
}

// run performs n more IOs and runs the engine until they are done.
func (l *closedLoop) run(tb testing.TB, e *sim.Engine, n int) {
	l.limit = l.submitted + n
	for i := range l.bios {
		if l.submitted < l.limit {
			l.submit(&l.bios[i])
		}
	}
	run(tb, e)
}

// newRandom4kLoop returns a closed loop of depth 32 doing random 4 KiB
// reads (collecting their stamps) and writes (unique stamps) over the
// first 8 MiB of a Queue+NVMe on a bare engine, after a warm-up that has
// written every block once and reached steady state.
func newRandom4kLoop(tb testing.TB) (*sim.Engine, *closedLoop) {
	return newRandom4kLoopOn(tb, testNVMeParams(), 0)
}

// newRandom4kLoopOn is newRandom4kLoop on a device of p, every
// flushEvery-th IO after the warm-up a cache flush (0: none).
func newRandom4kLoopOn(tb testing.TB, p NVMeParams, flushEvery int) (*sim.Engine, *closedLoop) {
	e := newEngine(tb)
	p.WriteBuffer = 4 * MiB
	_, q := newTestNVMe(tb, e, p)
	const blocks = int(8 * MiB / 4096)
	rng := e.NewRand(1)
	l := &closedLoop{q: q, bios: make([]Bio, 32)}
	l.fill = func(b *Bio, i int) {
		if i < blocks {
			b.Op, b.Sector, b.Bytes, b.Stamp = OpWrite, int64(i)*8, 4096, Stamp{Writer: 1, Seq: uint64(i + 1)}
			return
		}
		if flushEvery > 0 && i%flushEvery == 0 {
			b.Op, b.Flush, b.Sync = OpWrite, true, true
			return
		}
		b.Sector, b.Bytes = rng.Int64N(int64(blocks))*8, 4096
		if rng.IntN(2) == 0 {
			b.Op, b.CollectData = OpRead, true
		} else {
			b.Op, b.Stamp = OpWrite, Stamp{Writer: 1, Seq: uint64(i + 1)}
		}
	}
	l.run(tb, e, blocks+20000)
	require.NoError(tb, l.err)
	return e, l
}

// BenchmarkQueueNVMe4k measures one random 4 KiB IO (half reads, half
// writes) submitted and completed through Queue+NVMe: bio checks, request
// and tag allocation, device phases, stamp transfer, completion.
func BenchmarkQueueNVMe4k(b *testing.B) {
	e, l := newRandom4kLoop(b)
	b.ReportAllocs()
	b.ResetTimer()
	l.run(b, e, b.N)
	b.StopTimer()
	if l.err != nil {
		b.Fatal(l.err)
	}
	b.ReportMetric(float64(time.Duration(e.Now()))/float64(l.completed), "sim-ns/op")
}

// The block layer and the NVMe model allocate nothing per IO in steady
// state: a batch of 1000 random 4 KiB reads and writes makes no
// allocation at all.
func TestQueueNVMeNoAllocsPerIO(t *testing.T) {
	e, l := newRandom4kLoop(t)
	allocs := testing.AllocsPerRun(20, func() { l.run(t, e, 1000) })
	require.Zero(t, allocs, "allocations per 1000 IOs")
	require.NoError(t, l.err)
}

// Cache flushes allocate nothing per IO either, on a queued (nvme) and a
// non-queued (sata-ssd) flush.
func TestQueueFlashFlushNoAllocsPerIO(t *testing.T) {
	for _, kind := range []string{"nvme", "sata-ssd"} {
		t.Run(kind, func(t *testing.T) {
			p := testNVMeParams()
			p.Kind, p.VolatileCache, p.QueueDepth, p.HostMBps = kind, true, 32, 512
			e, l := newRandom4kLoopOn(t, p, 16)
			allocs := testing.AllocsPerRun(20, func() { l.run(t, e, 1000) })
			require.Zero(t, allocs, "allocations per 1000 IOs")
			require.NoError(t, l.err)
		})
	}
}

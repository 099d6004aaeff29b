package blockdev

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blksim/blksim/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rwbsLog records trace events as "ACTION RWBS SECTOR+N", with blkparse's
// rwbs letters (F for PREFLUSH before the direction, F for FUA after it).
type rwbsLog struct{ lines []string }

func (l *rwbsLog) Trace(ev *TraceEvent) {
	if ev.Action == TracePlug || ev.Action == TraceUnplug || ev.Action == TraceUnplugTimer {
		return
	}
	var b strings.Builder
	if ev.Flush {
		b.WriteByte('F')
	}
	switch {
	case ev.Op == OpWrite:
		b.WriteByte('W')
	case ev.Bytes > 0:
		b.WriteByte('R')
	default:
		b.WriteByte('N') // blkparse: neither a write nor any bytes
	}
	if ev.FUA {
		b.WriteByte('F')
	}
	if ev.Sync {
		b.WriteByte('S')
	}
	if ev.Meta {
		b.WriteByte('M')
	}
	l.lines = append(l.lines, fmt.Sprintf("%s %s %d+%d", ev.Action.Letter(), b.String(), ev.Sector, ev.Bytes/SectorSize))
}

// noFUA is a device that does not advertise FUA.
type noFUA struct{ Device }

func (d noFUA) Limits() Limits {
	l := d.Device.Limits()
	l.FUA = false
	return l
}

// cachedHDD builds the test disk from p with its write cache on and a
// queue on it; with fua it has NCQ (libata gives FUA to NCQ drives),
// without it the queue sees a disk that does not advertise FUA.
func cachedHDD(t *testing.T, e *sim.Engine, p HDDParams, fua bool, opt QueueOptions) (*HDD, *Queue) {
	t.Helper()
	p.WriteCache = true
	if fua {
		p.NCQ = true
	}
	d, err := NewHDD(e, p)
	require.NoError(t, err)
	var dev Device = d
	if !fua {
		dev = noFUA{d}
	}
	q, err := NewQueue(e, dev, opt)
	require.NoError(t, err)
	return d, q
}

// Mechanism (blk-flush): a PREFLUSH|FUA write on a disk with a write
// cache is a flush, then the write with FUA (written through to the
// platter); on a disk without FUA, a flush, the write, then a flush, the
// bio completing with the last. The write bypasses the scheduler and is
// never merged; the flushes count as flushes, the write as one write.
func TestPreflushFUAWriteSequence(t *testing.T) {
	for _, fua := range []bool{true, false} {
		for _, sched := range []string{SchedNone, SchedMQDeadline, SchedCFQ} {
			t.Run(fmt.Sprintf("fua=%v/%s", fua, sched), func(t *testing.T) {
				e := newEngine(t)
				d, q := cachedHDD(t, e, testHDDParams(), fua, QueueOptions{Scheduler: sched})
				tr := &rwbsLog{}
				q.SetTracer(tr)
				w := latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 0, Bytes: 64 * KiB, Stamp: Stamp{1, 1}})
				// Adjacent to the first write: it would merge if allowed.
				c := latencyOf(t, e, q, 10*us, &Bio{Op: OpWrite, Sector: 128, Bytes: 4 * KiB, Stamp: Stamp{2, 1},
					Sync: true, Flush: true, FUA: true})
				plain := latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Flush: true, Sync: true})
				run(t, e)
				assert.Greater(t, c(), plain()-10*us, "the commit write ends after a flush of its own")
				assert.Greater(t, c(), w())
				st := q.Stats()
				assert.Equal(t, [2]uint64{0, 2}, st.IOs)
				assert.Equal(t, map[int64]uint64{64 * KiB: 1, 4 * KiB: 1}, st.DispatchedSizes[OpWrite], "never merged")
				got := strings.Join(tr.lines, "\n")
				assert.Contains(t, got, "Q FWFS 128+8\nG FWFS 128+8", "queued with both flags")
				data := "D WS 128+8" // PREFLUSH and FUA stripped as blk_insert_flush does
				if fua {
					data = "D WFS 128+8" // PREFLUSH stripped, FUA kept
				}
				iData := strings.Index(got, data)
				require.GreaterOrEqual(t, iData, 0, got)
				// The write is issued only after its preflush completed.
				require.GreaterOrEqual(t, strings.LastIndex(got[:iData], "C FN 0+0"), 0, got)
				if fua {
					assert.Equal(t, uint64(2), st.Flushes, "the empty flush and the preflush")
					assert.Equal(t, uint64(1), d.Destages, "the FUA write skipped the cache")
					assert.NotContains(t, got[iData:], "D FN")
				} else {
					assert.Equal(t, uint64(3), st.Flushes, "the empty flush, a preflush and a postflush")
					assert.Equal(t, uint64(2), d.Destages, "the data written under the postflush is destaged too")
					assert.Contains(t, got[iData:], "C WS 128+8\nD FN 0+0")
				}
				assert.Equal(t, Stamp{2, 1}, d.Stamps().Read(nil, 128, 8)[0].Stamp)
			})
		}
	}
}

// A FUA write without PREFLUSH goes straight to the hardware queue: to a
// disk that honours FUA with the flag (no flush at all), else followed by
// a flush; no flush goes before it.
func TestFUAWriteIsFollowedByAFlush(t *testing.T) {
	for _, fua := range []bool{true, false} {
		e := newEngine(t)
		d, q := cachedHDD(t, e, testHDDParams(), fua, QueueOptions{})
		tr := &rwbsLog{}
		q.SetTracer(tr)
		latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 64, Bytes: 4 * KiB, Sync: true, FUA: true, Meta: true})
		run(t, e)
		if fua {
			assert.Equal(t, []string{"Q WFSM 64+8", "G WFSM 64+8", "D WFSM 64+8", "C WFSM 64+8"}, tr.lines)
			assert.Zero(t, q.Stats().Flushes)
			assert.Zero(t, d.Destages, "written through, not destaged")
			continue
		}
		assert.Equal(t, []string{"Q WFSM 64+8", "G WFSM 64+8", "D WSM 64+8", "C WSM 64+8", "D FN 0+0", "C FN 0+0"}, tr.lines)
		assert.Equal(t, uint64(1), q.Stats().Flushes)
	}
}

// Without a volatile cache the flags are dropped before the bio is
// queued: an ordinary write, which merges, and no flush.
func TestFlushFlagsDroppedWithoutACache(t *testing.T) {
	p := testHDDParams()
	p.WriteCache = false
	e := newEngine(t)
	_, q := newTestHDD(t, e, p)
	tr := &rwbsLog{}
	q.SetTracer(tr)
	log := newBioLog(e)
	e.Go("writer", func(tk *sim.Task) {
		plug := q.StartPlug(tk, Issuer{})
		plug.Submit(&Bio{Op: OpWrite, Sector: 0, Bytes: 4 * KiB, Sync: true, End: log})
		plug.Submit(&Bio{Op: OpWrite, Sector: 8, Bytes: 4 * KiB, Sync: true, Flush: true, FUA: true, End: log})
		plug.Finish()
	})
	run(t, e)
	assert.Zero(t, q.Stats().Flushes)
	assert.Equal(t, map[int64]uint64{8 * KiB: 1}, q.Stats().DispatchedSizes[OpWrite], "merged as any write")
	assert.NotContains(t, strings.Join(tr.lines, "\n"), "F")
}

// A failed preflush fails its write, which is never issued.
func TestFailedPreflushFailsTheWrite(t *testing.T) {
	p := testHDDParams()
	p.WriteCache = true
	e := newEngine(t)
	d, err := NewHDD(e, p)
	require.NoError(t, err)
	fd := NewFaultDevice(e, d, InjectorFunc(func(r *Request) error {
		if r.Flush {
			return &InjectedError{Errno: syscall.EIO}
		}
		return nil
	}))
	q, err := NewQueue(e, fd, QueueOptions{})
	require.NoError(t, err)
	log := newBioLog(e)
	b := &Bio{Op: OpWrite, Sector: 64, Bytes: 4 * KiB, Stamp: Stamp{3, 1}, Sync: true, Flush: true, FUA: true}
	log.submitAt(q, 0, b)
	run(t, e)
	require.Len(t, log.ends[b], 1)
	assert.ErrorIs(t, log.ends[b][0].Err, syscall.EIO)
	assert.Zero(t, q.Stats().DispatchedSizes[OpWrite][4*KiB], "the data never went out")
	assert.Zero(t, q.Stats().InFlight)
	assert.NotEqual(t, Stamp{3, 1}, d.Stamps().Read(nil, 64, 8)[0].Stamp, "the data never reached the disk")
}

// blk-flush keeps one flush request in flight: flushes sent while it is
// on the disk wait and share the next one. Each empty flush is traced
// Q and G as "FWS" and completes as a sync write of no bytes ("C WS");
// the flush requests themselves are REQ_OP_FLUSH, blkparse's "FN".
func TestConcurrentFlushesShareOne(t *testing.T) {
	p := testHDDParams()
	p.WriteCache = true
	e := newEngine(t)
	_, q := newTestHDD(t, e, p)
	tr := &rwbsLog{}
	q.SetTracer(tr)
	latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 0, Bytes: 64 * KiB, Stamp: Stamp{1, 1}})
	var ends []func() time.Duration
	for i := range 8 {
		ends = append(ends, latencyOf(t, e, q, time.Duration(10+i)*us, &Bio{Op: OpWrite, Flush: true, Sync: true}))
	}
	run(t, e)
	assert.Equal(t, uint64(2), q.Stats().Flushes)
	first := 10*us + ends[0]()
	second := 11*us + ends[1]()
	assert.GreaterOrEqual(t, second, first, "after the first (at once here: nothing new to destage)")
	for i := 2; i < 8; i++ {
		assert.Equal(t, second, time.Duration(10+i)*us+ends[i](), "flush %d shares the second flush request", i)
	}
	got := strings.Join(tr.lines, "\n")
	assert.Equal(t, 8, strings.Count(got, "Q FWS 0+0"))
	assert.Equal(t, 8, strings.Count(got, "C WS 0+0"))
	assert.Equal(t, 2, strings.Count(got, "D FN 0+0"))
	assert.Zero(t, q.Stats().InFlight)
}

// A flush waits while a flush-sequence write is in flight (up to
// FLUSH_PENDING_TIMEOUT) so that it shares that write's postflush.
func TestFlushWaitsForAFUAWriteInFlight(t *testing.T) {
	e := newEngine(t)
	_, q := cachedHDD(t, e, testHDDParams(), false, QueueOptions{})
	w := latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 64, Bytes: 4 * KiB, Sync: true, FUA: true})
	f := latencyOf(t, e, q, 1*us, &Bio{Op: OpWrite, Flush: true, Sync: true})
	run(t, e)
	assert.Equal(t, uint64(1), q.Stats().Flushes, "one flush for both")
	assert.Equal(t, w(), 1*us+f())
}

// A flush sequence's write goes to the head of the hardware queue's list
// (blk_flush_queue_rq), ahead of requests already waiting for a tag, and
// so does a flush request (blk_mq_insert_request).
func TestFlushSequenceWriteGoesFirst(t *testing.T) {
	p := testHDDParams()
	p.NCQ, p.QueueDepth = false, 1
	e := newEngine(t)
	_, q := cachedHDD(t, e, p, false, QueueOptions{})
	tr := &rwbsLog{}
	q.SetTracer(tr)
	for i := range 3 {
		latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: int64(i) * 1024, Bytes: 4 * KiB})
	}
	latencyOf(t, e, q, 1*us, &Bio{Op: OpWrite, Sector: 8192, Bytes: 4 * KiB, Sync: true, FUA: true})
	run(t, e)
	var issued []string
	for _, l := range tr.lines {
		if strings.HasPrefix(l, "D ") {
			issued = append(issued, l)
		}
	}
	// Its postflush too: flush requests go first as well.
	assert.Equal(t, []string{"D W 0+8", "D WS 8192+8", "D FN 0+0", "D W 1024+8", "D W 2048+8"}, issued)
}

// A FUA write that fails ends with its error: no postflush is sent for it
// and the error is not lost.
func TestFailedFUAWriteKeepsItsError(t *testing.T) {
	p := testHDDParams()
	p.WriteCache = true
	e := newEngine(t)
	d, err := NewHDD(e, p)
	require.NoError(t, err)
	fd := NewFaultDevice(e, d, InjectorFunc(func(r *Request) error {
		if r.Bytes > 0 {
			return &InjectedError{Errno: syscall.EIO}
		}
		return nil
	}))
	q, err := NewQueue(e, fd, QueueOptions{})
	require.NoError(t, err)
	log := newBioLog(e)
	b := &Bio{Op: OpWrite, Sector: 64, Bytes: 4 * KiB, Sync: true, FUA: true}
	log.submitAt(q, 0, b)
	run(t, e)
	require.Len(t, log.ends[b], 1)
	assert.ErrorIs(t, log.ends[b][0].Err, syscall.EIO)
	assert.Zero(t, q.Stats().Flushes)
	assert.Zero(t, q.Stats().InFlight)
}

// A flush held back while a flush-sequence write is in flight goes out
// when that write completes, even when the write needs no flush after it
// (a PREFLUSH|FUA write on a disk that honours FUA).
func TestHeldFlushGoesWhenTheWriteCompletes(t *testing.T) {
	e := newEngine(t)
	_, q := cachedHDD(t, e, testHDDParams(), true, QueueOptions{})
	w := latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 64, Bytes: 4 * KiB, Sync: true, Flush: true, FUA: true})
	// Sent once the write is on the disk (the preflush of an idle
	// cache ends at once).
	f := latencyOf(t, e, q, 2*us, &Bio{Op: OpWrite, Flush: true, Sync: true})
	run(t, e)
	assert.GreaterOrEqual(t, 2*us+f(), w(), "held until the write completed")
	assert.Equal(t, uint64(2), q.Stats().Flushes, "the preflush and the held flush")
}

// Each hardware queue has its own flush queue: flushes sent from CPUs of
// different hardware queues do not share a flush request.
func TestFlushQueuePerHardwareQueue(t *testing.T) {
	p := testNVMeParams()
	p.VolatileCache = true
	e := newEngine(t)
	d, err := NewNVMe(e, p)
	require.NoError(t, err)
	q, err := NewQueue(e, d, QueueOptions{HWQueues: 2})
	require.NoError(t, err)
	latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 0, Bytes: 4096, Stamp: Stamp{1, 1}})
	for i := range 4 {
		latencyOf(t, e, q, time.Duration(10+i)*us, &Bio{Op: OpWrite, Flush: true, Sync: true, Issuer: Issuer{CPU: i % 2}})
	}
	run(t, e)
	// Per hardware queue: the first flush, then one shared by the second.
	assert.Equal(t, uint64(4), q.Stats().Flushes)
}

// The flush request's time in diskstats counts from its kick, not from
// when its first waiter was queued (blk_rq_init at blk_kick_flush).
func TestFlushTicksCountFromTheKick(t *testing.T) {
	e := newEngine(t)
	_, q := cachedHDD(t, e, testHDDParams(), false, QueueOptions{})
	latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 0, Bytes: 64 * KiB, Stamp: Stamp{1, 1}})
	f1 := latencyOf(t, e, q, 10*us, &Bio{Op: OpWrite, Flush: true, Sync: true})
	f2 := latencyOf(t, e, q, 20*us, &Bio{Op: OpWrite, Flush: true, Sync: true})
	run(t, e)
	st := q.Stats()
	require.Equal(t, uint64(2), st.Flushes)
	second := (20*us + f2()) - (10*us + f1()) // from the first's end to the second's
	assert.Equal(t, f1()+second, st.FlushTicks)
}

// libata gives FUA only to NCQ drives: a cached disk without NCQ gets a
// flush after a FUA write instead.
func TestHDDFUAOnlyWithNCQ(t *testing.T) {
	for _, ncq := range []bool{true, false} {
		p := testHDDParams()
		p.WriteCache, p.NCQ, p.QueueDepth = true, ncq, 0
		d, err := NewHDD(newEngine(t), p)
		require.NoError(t, err)
		assert.Equal(t, ncq, d.Limits().FUA, "ncq=%v", ncq)
	}
}

// Without a volatile cache a PREFLUSH|FUA write is an ordinary write:
// one larger than a request is split, not refused.
func TestLargeFUAWriteWithoutACacheIsSplit(t *testing.T) {
	p := testHDDParams()
	e := newEngine(t)
	_, q := newTestHDD(t, e, p)
	log := newBioLog(e)
	b := &Bio{Op: OpWrite, Sector: 0, Bytes: 2048 * KiB, Sync: true, Flush: true, FUA: true}
	log.submitAt(q, 0, b)
	run(t, e)
	require.Len(t, log.ends[b], 1)
	require.NoError(t, log.ends[b][0].Err)
	assert.Equal(t, uint64(1), q.Stats().Splits)
}

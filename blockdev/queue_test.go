package blockdev

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
)

// newMemQueue returns a queue on a recorded memory device.
func newMemQueue(t *testing.T, e *sim.Engine, p MemParams, opt QueueOptions) (*Queue, *recDev, *MemDevice) {
	t.Helper()
	if p.Capacity == 0 {
		p.Capacity = 64 * MiB
	}
	mem := NewMemDevice(e, p)
	rd := newRecDev(e, mem)
	q, err := NewQueue(e, rd, opt)
	require.NoError(t, err)
	return q, rd, mem
}

// A bio larger than the request size limit is split into ceil(n/max)
// requests that tile it; the parent completes once, with the last piece.
func TestQueueSplitsToMaxRequestSize(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxHW, opt int // KiB
		op         Op
		bytes      int64
		requests   int
	}{
		{"4k fits", 128, 0, OpRead, 4 * KiB, 1},
		{"exactly max", 128, 0, OpWrite, 128 * KiB, 1},
		{"max plus a sector", 128, 0, OpWrite, 128*KiB + 512, 2},
		{"1MiB by 128k", 128, 0, OpRead, MiB, 8},
		{"1MiB+4k by 128k", 128, 0, OpWrite, MiB + 4*KiB, 9},
		{"1MiB by max_sectors_kb 64", 1024, 64, OpRead, MiB, 16},
		{"1MiB fits 1024k", 1024, 0, OpWrite, MiB, 1},
	} {
		// 256 segments: the size limit, not max_segments, splits here.
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			q, rd, _ := newMemQueue(t, e, MemParams{MaxHWSectorsKB: tc.maxHW, Latency: 10 * us, MBps: 1000}, QueueOptions{MaxSectorsKB: tc.opt, MaxSegments: 256})
			log := newBioLog(e)
			const start = 2048 + 8 // not chunk aligned
			b := &Bio{Op: tc.op, Sector: start, Bytes: tc.bytes, Stamp: Stamp{Writer: 1, Seq: 1}}
			log.submit(q, b)
			require.Empty(t, log.ends[b], "EndBio inside Submit")
			run(t, e)

			maxReq := int64(tc.maxHW) * KiB
			if tc.opt > 0 {
				maxReq = int64(tc.opt) * KiB
			}
			require.Len(t, rd.dispatched, tc.requests)
			pos := int64(start)
			for _, d := range rd.dispatched {
				assert.Equal(t, tc.op, d.Op)
				assert.Equal(t, pos, d.Sector, "pieces tile the bio in order")
				assert.LessOrEqual(t, d.Bytes, maxReq)
				pos += d.Bytes / SectorSize
			}
			assert.Equal(t, start+tc.bytes/SectorSize, pos)

			st := q.Stats()
			wantSplits := uint64(0)
			if tc.requests > 1 {
				wantSplits = 1
			}
			assert.Equal(t, wantSplits, st.Splits)
			assert.Equal(t, uint64(tc.requests), st.IOs[tc.op])
			assert.Equal(t, uint64(tc.bytes/SectorSize), st.Sectors[tc.op])
			assert.Zero(t, st.IOs[1-tc.op])
			assert.Zero(t, st.InFlight)

			ends := log.ends[b]
			require.Len(t, ends, 1, "the parent completes exactly once")
			assert.NoError(t, ends[0].Err)
			assert.False(t, ends[0].InSubmit)
			assert.Equal(t, rd.completedAt[len(rd.completedAt)-1], ends[0].At, "the parent completes with its last piece")
		})
	}
}

// When the pieces of a split read complete out of order, the parent's
// stamps are still sorted by sector and complete, and it ends once, after
// the last piece.
func TestQueueSplitReadStampsSorted(t *testing.T) {
	e := newEngine(t)
	dev := &reverseDev{e: e, store: NewStampMap()}
	rd := newRecDev(e, dev)
	q, err := NewQueue(e, rd, QueueOptions{})
	require.NoError(t, err)
	log := newBioLog(e)

	// 16 writes of 64 KiB with distinct stamps cover [0, 1 MiB).
	var want []Stamp
	for i := range int64(16) {
		s := Stamp{Writer: 7, Seq: uint64(i + 1)}
		log.submit(q, &Bio{Op: OpWrite, Sector: i * 128, Bytes: 64 * KiB, Stamp: s})
		want = append(want, fill(128, s)...)
	}
	run(t, e)
	rd.completedAt = nil

	b := &Bio{Op: OpRead, Sector: 0, Bytes: MiB, CollectData: true}
	log.submit(q, b)
	run(t, e)
	require.Len(t, rd.completedAt, 8)
	for i := 1; i < len(rd.completedAt); i++ {
		require.Less(t, rd.completedAt[i-1], rd.completedAt[i])
	}
	ends := log.ends[b]
	require.Len(t, ends, 1)
	assert.Equal(t, rd.completedAt[7], ends[0].At)
	assert.IsIncreasing(t, sectorsOf(ends[0].Data))
	assert.Equal(t, want, expand(t, 0, ends[0].Data))
	assert.Equal(t, want, expand(t, 0, b.Data))
}

func sectorsOf(runs []StampRun) []int64 {
	out := make([]int64, len(runs))
	for i, r := range runs {
		out[i] = r.Sector
	}
	return out
}

// Misaligned bios fail with an *AlignmentError that matches EINVAL and
// names offset, length and alignment; they never reach the device and end
// once, outside Submit.
func TestQueueMisalignedBio(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lbs    int
		sector int64
		bytes  int64
		why    string // what the message says is wrong
	}{
		{"100 bytes", 512, 8, 100, "not aligned to 512 bytes"},
		{"513 bytes", 512, 0, 513, "not aligned to 512 bytes"},
		{"zero length", 512, 0, 0, "an IO needs a positive length"},
		{"negative length", 512, 0, -512, "an IO needs a positive length"},
		{"negative sector", 512, -1, 4096, "negative offset"},
		{"512 bytes on 4k device", 4096, 0, 512, "not aligned to 4096 bytes"},
		{"offset 512 on 4k device", 4096, 1, 4096, "not aligned to 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			q, rd, _ := newMemQueue(t, e, MemParams{LogicalBlockSize: tc.lbs, Latency: us}, QueueOptions{})
			log := newBioLog(e)
			b := &Bio{Op: OpWrite, Sector: tc.sector, Bytes: tc.bytes, Stamp: Stamp{Writer: 1, Seq: 1}}
			log.submit(q, b)
			run(t, e)
			ends := log.ends[b]
			require.Len(t, ends, 1)
			assert.False(t, ends[0].InSubmit, "EndBio ran inside Submit")
			err := ends[0].Err
			require.ErrorIs(t, err, syscall.EINVAL)
			var ae *AlignmentError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, int64(tc.lbs), ae.Align)
			assert.Contains(t, err.Error(), fmt.Sprintf("offset %d", tc.sector*SectorSize))
			assert.Contains(t, err.Error(), fmt.Sprintf("length %d", tc.bytes))
			assert.Contains(t, err.Error(), tc.why)
			assert.Empty(t, rd.dispatched)
			assert.Zero(t, q.Stats().IOs)
		})
	}
}

// A bio that ends beyond the device fails with EIO (ErrOutOfRange).
func TestQueueBeyondCapacity(t *testing.T) {
	const capacity = 8 * MiB
	last := capacity / SectorSize
	for _, tc := range []struct {
		name   string
		sector int64
		bytes  int64
		ok     bool
	}{
		{"last block", last - 8, 4096, true},
		{"at end", last, 4096, false},
		{"crossing end", last - 8, 8192, false},
		{"split crossing end", last - 1024, MiB, false},
		{"far beyond", 1 << 40, 4096, false},
		{"overflowing offset", 1<<63/SectorSize - 4, 4096, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			q, rd, _ := newMemQueue(t, e, MemParams{Capacity: capacity, MaxHWSectorsKB: 128}, QueueOptions{})
			log := newBioLog(e)
			b := &Bio{Op: OpRead, Sector: tc.sector, Bytes: tc.bytes}
			log.submit(q, b)
			run(t, e)
			ends := log.ends[b]
			require.Len(t, ends, 1)
			assert.False(t, ends[0].InSubmit, "EndBio ran inside Submit")
			if tc.ok {
				assert.NoError(t, ends[0].Err)
				return
			}
			assert.ErrorIs(t, ends[0].Err, syscall.EIO)
			assert.ErrorIs(t, ends[0].Err, ErrOutOfRange)
			assert.Empty(t, rd.dispatched)
		})
	}
}

// A bio whose Op is neither OpRead nor OpWrite fails with EINVAL, from
// an event as every failure does, instead of panicking inside Submit.
func TestQueueBadOp(t *testing.T) {
	e := newEngine(t)
	q, rd, _ := newMemQueue(t, e, MemParams{}, QueueOptions{})
	log := newBioLog(e)
	b := &Bio{Op: OpWrite + 1, Sector: 0, Bytes: 4096}
	require.NotPanics(t, func() { log.submit(q, b) })
	run(t, e)
	ends := log.ends[b]
	require.Len(t, ends, 1)
	assert.False(t, ends[0].InSubmit, "EndBio ran inside Submit")
	assert.ErrorIs(t, ends[0].Err, syscall.EINVAL)
	assert.Empty(t, rd.dispatched)
	assert.Equal(t, "Op(2)", (OpWrite + 1).String())
}

func TestQueueCheckAlignment(t *testing.T) {
	for _, tc := range []struct {
		lbs         int
		off, length int64
		ok          bool
	}{
		{512, 0, 512, true},
		{512, 512, 4096, true},
		{512, 4096 + 512, 1536, true},
		{512, 100, 512, false},
		{512, 0, 100, false},
		{512, 0, 0, false},
		{512, 0, -512, false},
		{4096, 0, 4096, true},
		{4096, 8192, MiB, true},
		{4096, 512, 4096, false},
		{4096, 0, 512, false},
		{4096, 4096, 6144, false},
	} {
		t.Run(fmt.Sprintf("lbs%d/%d+%d", tc.lbs, tc.off, tc.length), func(t *testing.T) {
			e := newEngine(t)
			q, _, _ := newMemQueue(t, e, MemParams{LogicalBlockSize: tc.lbs}, QueueOptions{})
			err := q.CheckAlignment(tc.off, tc.length)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, syscall.EINVAL)
			var ae *AlignmentError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, AlignmentError{Offset: tc.off, Length: tc.length, Align: int64(tc.lbs)}, *ae)
			switch {
			case tc.length <= 0:
				assert.Contains(t, err.Error(), fmt.Sprintf("offset %d length %d: an IO needs a positive length", tc.off, tc.length))
				return
			}
			assert.Contains(t, err.Error(), fmt.Sprintf("offset %d length %d not aligned to %d bytes", tc.off, tc.length, tc.lbs))
		})
	}
}

// With N tags, the N+1th request waits in the queue and is dispatched,
// with the freed tag, when the first request completes.
func TestQueueTagsLimitInFlight(t *testing.T) {
	for _, tc := range []struct {
		name  string
		depth int
		opt   QueueOptions
	}{
		{"device depth 4", 4, QueueOptions{}},
		{"nr_requests 4", 256, QueueOptions{NrRequests: 4}},
		{"nr_requests above device depth", 4, QueueOptions{NrRequests: 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			q, rd, _ := newMemQueue(t, e, MemParams{QueueDepth: tc.depth, Latency: 100 * us}, tc.opt)
			log := newBioLog(e)
			var bios []*Bio
			for i := range int64(5) {
				b := &Bio{Op: OpRead, Sector: i * 8, Bytes: 4096}
				bios = append(bios, b)
				log.submitAt(q, time.Duration(i)*us, b)
			}
			at(e, 50*us, func() {
				st := q.Stats()
				assert.Equal(t, 5, st.InFlight, "waiting requests count as in flight")
				assert.Len(t, rd.dispatched, 4)
			})
			run(t, e)
			require.Len(t, rd.dispatched, 5)
			assert.Equal(t, 4, rd.maxOutstanding)
			var got []time.Duration
			tags := map[int]bool{}
			for i, d := range rd.dispatched {
				got = append(got, time.Duration(d.At))
				if i < 4 {
					assert.False(t, tags[d.Tag], "tag %d used twice", d.Tag)
					tags[d.Tag] = true
					assert.True(t, d.Tag >= 0 && d.Tag < 4, "tag %d out of range", d.Tag)
				}
			}
			assert.Equal(t, []time.Duration{0, us, 2 * us, 3 * us, 100 * us}, got)
			assert.Equal(t, rd.dispatched[0].Tag, rd.dispatched[4].Tag, "the waiting request gets the freed tag")
			assert.Equal(t, sim.Time(200*us), log.ends[bios[4]][0].At)
		})
	}
}

// A BioEnder may submit the next bio from EndBio (a closed loop); at full
// depth the completing request's tag must already be free.
func TestQueueResubmitFromEndBioAtFullDepth(t *testing.T) {
	e := newEngine(t)
	q, rd, _ := newMemQueue(t, e, MemParams{QueueDepth: 2, Latency: 10 * us}, QueueOptions{})
	l := &closedLoop{q: q, bios: make([]Bio, 2), fill: func(b *Bio, i int) {
		b.Op, b.Sector, b.Bytes = OpRead, int64(i%16)*8, 4096
	}}
	l.run(t, e, 20)
	assert.Equal(t, 20, l.completed)
	assert.NoError(t, l.err)
	assert.Equal(t, 2, rd.maxOutstanding)
	assert.Equal(t, sim.Time(100*us), e.Now(), "10 rounds of 2 requests, 10us each")
}

// IOTicks and TimeInQueue integrate the in-flight count over time, as in
// /proc/diskstats; Stats brings them up to Now.
func TestQueueDiskStatsIntegrate(t *testing.T) {
	e := newEngine(t)
	// One tag, 100us per request: A [0,100), B waits then [100,200),
	// idle [200,300), C [300,400).
	q, _, _ := newMemQueue(t, e, MemParams{QueueDepth: 1, Latency: 100 * us}, QueueOptions{})
	log := newBioLog(e)
	log.submitAt(q, 0, &Bio{Op: OpRead, Sector: 0, Bytes: 4096})
	log.submitAt(q, 0, &Bio{Op: OpWrite, Sector: 8, Bytes: 8192, Stamp: Stamp{1, 1}})
	log.submitAt(q, 300*us, &Bio{Op: OpRead, Sector: 16, Bytes: 4096})

	var mid DiskStats
	at(e, 150*us, func() { mid = q.Stats() })
	require.NoError(t, e.Run(sim.Time(500*us)))
	end := q.Stats()

	// At 150us: in flight 2 over [0,100), 1 over [100,150).
	assert.Equal(t, 1, mid.InFlight)
	assert.Equal(t, 150*us, mid.IOTicks)
	assert.Equal(t, 2*100*us+50*us, mid.TimeInQueue)
	assert.Equal(t, [2]uint64{1, 0}, mid.IOs)

	assert.Equal(t, 0, end.InFlight)
	assert.Equal(t, 300*us, end.IOTicks, "busy [0,200) and [300,400)")
	assert.Equal(t, 2*100*us+100*us+100*us, end.TimeInQueue)
	assert.Equal(t, [2]uint64{2, 1}, end.IOs)
	assert.Equal(t, [2]uint64{16, 16}, end.Sectors)
	assert.Equal(t, [2]time.Duration{100*us + 100*us, 200 * us}, end.Ticks, "queueing to completion: A 100, C 100; B 200")
	assert.Zero(t, end.Splits)
	assert.Zero(t, end.Merges)
}

func TestNewQueueOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       MemParams
		opt     QueueOptions
		errWant string
		maxReq  int64
		depth   int
	}{
		{"defaults", MemParams{}, QueueOptions{}, "", 1024 * KiB, 256},
		{"max_sectors_kb below hw", MemParams{MaxHWSectorsKB: 512}, QueueOptions{MaxSectorsKB: 128}, "", 128 * KiB, 256},
		{"max_sectors_kb equal hw", MemParams{MaxHWSectorsKB: 512}, QueueOptions{MaxSectorsKB: 512}, "", 512 * KiB, 256},
		{"max_sectors_kb above hw", MemParams{MaxHWSectorsKB: 128}, QueueOptions{MaxSectorsKB: 256}, "max_sectors_kb 256 exceeds max_hw_sectors_kb 128", 0, 0},
		{"max_sectors_kb not a multiple of 4k blocks", MemParams{LogicalBlockSize: 4096}, QueueOptions{MaxSectorsKB: 2}, "logical block size", 0, 0},
		{"max_hw_sectors_kb not a multiple of 4k blocks", MemParams{LogicalBlockSize: 4096, MaxHWSectorsKB: 6}, QueueOptions{}, "logical block size", 0, 0},
		{"odd logical block size", MemParams{LogicalBlockSize: 1000}, QueueOptions{}, "logical block size 1000", 0, 0},
		{"negative depth", MemParams{QueueDepth: -1}, QueueOptions{}, "queue depth", 0, 0},
		{"nr_requests caps depth", MemParams{QueueDepth: 64}, QueueOptions{NrRequests: 8}, "", 1024 * KiB, 8},
		{"nr_requests never raises depth", MemParams{QueueDepth: 64}, QueueOptions{NrRequests: 128}, "", 1024 * KiB, 64},
		{"negative max_sectors_kb", MemParams{}, QueueOptions{MaxSectorsKB: -1}, "max_sectors_kb -1 must not be negative", 0, 0},
		{"negative nr_requests", MemParams{}, QueueOptions{NrRequests: -8}, "nr_requests -8 must not be negative", 0, 0},
		{"negative max_segments", MemParams{}, QueueOptions{MaxSegments: -1}, "max_segments", 0, 0},
		{"negative max_segment_size", MemParams{}, QueueOptions{MaxSegmentSize: -1}, "max_segment_size", 0, 0},
		{"negative hw queues", MemParams{}, QueueOptions{HWQueues: -2}, "hw_queues", 0, 0},
		{"negative fifo_batch", MemParams{}, QueueOptions{Scheduler: SchedMQDeadline, Deadline: DeadlineOptions{FifoBatch: -1}}, "fifo_batch", 0, 0},
		{"negative quantum", MemParams{}, QueueOptions{Scheduler: SchedCFQ, CFQ: CFQOptions{Quantum: -1}}, "quantum", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			tc.p.Capacity = 64 * MiB
			q, err := NewQueue(e, NewMemDevice(e, tc.p), tc.opt)
			if tc.errWant != "" {
				require.ErrorContains(t, err, tc.errWant)
				require.ErrorContains(t, err, "ram0", "the error names the device")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.maxReq, q.maxReq)
			assert.Equal(t, tc.depth, q.depth)
			assert.Len(t, q.hwqs[0].tags, tc.depth)
		})
	}
}

// A failing device's errors reach every bio of the request (and the
// parent of split pieces) exactly once.
func TestQueueDeviceErrorReachesParent(t *testing.T) {
	e := newEngine(t)
	dev := &failDev{e: e, failSector: 256}
	q, err := NewQueue(e, dev, QueueOptions{})
	require.NoError(t, err)
	log := newBioLog(e)
	ok := &Bio{Op: OpRead, Sector: 1024, Bytes: 4096}
	split := &Bio{Op: OpWrite, Sector: 0, Bytes: MiB, Stamp: Stamp{1, 1}}
	log.submit(q, ok)
	log.submit(q, split)
	run(t, e)
	require.Len(t, log.ends[ok], 1)
	assert.NoError(t, log.ends[ok][0].Err)
	require.Len(t, log.ends[split], 1)
	assert.ErrorIs(t, log.ends[split][0].Err, syscall.EIO)
	assert.True(t, errors.Is(log.ends[split][0].Err, ErrIO))
	assert.Equal(t, uint64(9), q.Stats().IOs[OpWrite]+q.Stats().IOs[OpRead], "failed requests count as completed IOs")
}

// failDev fails the request starting at failSector with ErrIO.
type failDev struct {
	e          *sim.Engine
	c          Completer
	failSector int64
	slots      slotTable
}

func (d *failDev) Name() string    { return "fail0" }
func (d *failDev) Capacity() int64 { return 64 * MiB }
func (d *failDev) Limits() Limits {
	return Limits{LogicalBlockSize: 512, MaxHWSectorsKB: 128, QueueDepth: 32}
}
func (d *failDev) Attach(c Completer) { d.c = c }
func (d *failDev) Submit(r *Request)  { d.e.After(10*us, d, uint64(d.slots.put(r))) }
func (d *failDev) Fire(arg uint64) {
	r := d.slots.take(int(arg))
	if r.Sector == d.failSector {
		r.Err = ErrIO
	}
	d.c.CompleteRequest(r)
}

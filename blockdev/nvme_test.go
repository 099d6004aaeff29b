package blockdev

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
)

// latencyOf submits b at time when on an engine and returns its latency.
func latencyOf(t *testing.T, e *sim.Engine, q *Queue, when time.Duration, b *Bio) func() time.Duration {
	t.Helper()
	log := newBioLog(e)
	log.submitAt(q, when, b)
	return func() time.Duration {
		ends := log.ends[b]
		require.Len(t, ends, 1)
		require.NoError(t, ends[0].Err)
		return time.Duration(ends[0].At) - when
	}
}

// Mechanism: at idle a read pays the command overhead, the array read of
// its page (tR), the page data on the NAND channel and then on the host
// link; a write pays the command overhead and the link into the DRAM
// buffer only (programming happens later, off the IO's path).
func TestNVMeIdleLatency(t *testing.T) {
	p := testNVMeParams()
	for _, tc := range []struct {
		name   string
		op     Op
		sector int64
		bytes  int64
		want   time.Duration
	}{
		{"4k read", OpRead, 0, 4 * KiB,
			p.ReadOverhead + p.ReadTime + xfer(t, 4*KiB, 1024) + xfer(t, 4*KiB, 4096)}, // 5+50+4+1
		{"4k read inside a page", OpRead, 8*MiB/SectorSize + 16, 4 * KiB,
			p.ReadOverhead + p.ReadTime + xfer(t, 4*KiB, 1024) + xfer(t, 4*KiB, 4096)},
		{"16k read of one page", OpRead, 32, 16 * KiB,
			p.ReadOverhead + p.ReadTime + xfer(t, 16*KiB, 1024) + xfer(t, 16*KiB, 4096)}, // 5+50+16+4
		{"4k write", OpWrite, 0, 4 * KiB,
			p.WriteOverhead + xfer(t, 4*KiB, 4096)}, // 2+1
		{"32k write", OpWrite, 64, 32 * KiB,
			p.WriteOverhead + xfer(t, 32*KiB, 4096)}, // 2+8
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			_, q := newTestNVMe(t, e, p)
			lat := latencyOf(t, e, q, 10*us, &Bio{Op: tc.op, Sector: tc.sector, Bytes: tc.bytes, Stamp: Stamp{1, 1}})
			run(t, e)
			assert.Equal(t, tc.want, lat())
		})
	}
	assert.Equal(t, 60*us, p.ReadOverhead+p.ReadTime+xfer(t, 4*KiB, 1024)+xfer(t, 4*KiB, 4096))
}

// Mechanism: a die serves its work in arrival order and the model has no
// program suspend, so a read of a page on a die that is programming waits
// for the program to end; a read on another die does not.
func TestNVMeReadWaitsForProgramOnItsDie(t *testing.T) {
	p := testNVMeParams()
	unit := p.PageSize * int64(p.Planes) // 32 KiB
	for _, tc := range []struct {
		name   string
		sector int64 // of the 4k read at 100us
		want   time.Duration
	}{
		// The 32 KiB write at 0 arrives at 2us, crosses the link by
		// 10us and is then programmed on die 0 (the first in round
		// robin): channel 32us + tPROG 1ms, ending at 1042us. The read
		// arrives at 105us and starts on die 0 at 1042us.
		{"page 0 on the programming die", 0, 1042*us + p.ReadTime + xfer(t, 4*KiB, 1024) + xfer(t, 4*KiB, 4096) - 100*us},
		// Page 8 is on die 0 too (8 dies, pages striped).
		{"page 8 on the programming die", 8 * 16 * KiB / SectorSize, 1042*us + 55*us - 100*us},
		// Page 1 is on idle die 1: idle latency.
		{"page 1 on an idle die", 16 * KiB / SectorSize, 60 * us},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			d, q := newTestNVMe(t, e, p)
			wlat := latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 1024, Bytes: unit, Stamp: Stamp{1, 1}})
			rlat := latencyOf(t, e, q, 100*us, &Bio{Op: OpRead, Sector: tc.sector, Bytes: 4 * KiB})
			run(t, e)
			assert.Equal(t, uint64(1), d.Programs, "one full program unit, one program")
			assert.Equal(t, p.WriteOverhead+xfer(t, unit, 4096), wlat(), "the write completes from the buffer")
			assert.Equal(t, tc.want, rlat())
		})
	}
	// The same read after the program has ended is back to idle latency.
	e := newEngine(t)
	_, q := newTestNVMe(t, e, p)
	latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 1024, Bytes: unit, Stamp: Stamp{1, 1}})
	rlat := latencyOf(t, e, q, 1042*us, &Bio{Op: OpRead, Sector: 0, Bytes: 4 * KiB})
	run(t, e)
	assert.Equal(t, 60*us, rlat())
}

// Mechanism: a write completes once its data is in the DRAM buffer; the
// buffer frees a program unit only when its program ends, so once it is
// full writes wait for space and their throughput and latency become
// those of the dies' programs. With a buffer larger than the whole run,
// only the host link limits writes.
func TestNVMeWriteBufferFullWritesWaitForPrograms(t *testing.T) {
	base := testNVMeParams()
	unit := base.PageSize * int64(base.Planes) // 32 KiB
	dies := base.Channels * base.DiesPerChannel
	programBound := float64(int64(dies)*unit) / (xfer(t, unit, 1024) + base.ProgramTime).Seconds() // bytes/s
	linkBound := float64(base.HostMBps) * 1e6
	const n, depth = 2000, 16
	for _, tc := range []struct {
		name       string
		buffer     int64
		throughput float64
		minLat     time.Duration
		maxLat     time.Duration
	}{
		// 16 x 32 KiB in flight at 254 MB/s: about 2 ms each.
		{"buffer full", 256 * KiB, programBound, base.ProgramTime, 3 * base.ProgramTime},
		// 16 x 8us on the link.
		{"buffer never full", 128 * MiB, linkBound, 100 * us, 140 * us},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			p := base
			p.WriteBuffer = tc.buffer
			d, q := newTestNVMe(t, e, p)
			var ends []sim.Time
			var lats []time.Duration
			l := &closedLoop{q: q, bios: make([]Bio, depth),
				fill: func(b *Bio, i int) {
					b.Op, b.Sector, b.Bytes, b.Stamp = OpWrite, int64(i)*unit/SectorSize%(p.Capacity/SectorSize), unit, Stamp{1, uint64(i + 1)}
				},
				onEnd: func(b *Bio) {
					ends = append(ends, e.Now())
					lats = append(lats, time.Duration(e.Now()-b.Submitted))
				}}
			l.run(t, e, n)
			require.NoError(t, l.err)
			require.Len(t, ends, n)
			assert.Equal(t, p.WriteOverhead+xfer(t, unit, 4096), lats[0], "the first write only fills the buffer")
			// Steady state: the last three quarters of the run.
			from := n / 4
			span := time.Duration(ends[n-1] - ends[from])
			got := float64(int64(n-1-from)*unit) / span.Seconds()
			assert.InEpsilon(t, tc.throughput, got, 0.02, "write throughput, bytes/s")
			var sum time.Duration
			for _, l := range lats[from:] {
				sum += l
			}
			mean := sum / time.Duration(n-from)
			assert.GreaterOrEqual(t, mean, tc.minLat)
			assert.LessOrEqual(t, mean, tc.maxLat)
			assert.Equal(t, uint64(n), d.Programs, "every 32 KiB write is one program")
		})
	}
}

// Mechanism: ProgramQueue caps the programs issued to one die, so a read
// waits behind at most that many; with no cap a die gets every program
// of its share of the buffer at once and a read waits behind all of them.
func TestNVMeProgramQueueBoundsReadWait(t *testing.T) {
	base := testNVMeParams()
	base.WriteBuffer = 4 * MiB
	unit := base.PageSize * int64(base.Planes)
	prog := xfer(t, unit, 1024) + base.ProgramTime // 1032us on the die
	readTail := base.ReadTime + xfer(t, 4*KiB, 1024) + xfer(t, 4*KiB, 4096)
	for _, tc := range []struct {
		name         string
		programQueue int
		want         time.Duration
	}{
		// 128 units over 8 dies: die 0 has 16 programs queued from 10us
		// on (its first unit is in the buffer at 10us), ending at
		// 10us + 16*1032us; the read at 200us waits for all of them.
		{"no cap", 0, 10*us + 16*prog + readTail - 200*us},
		// Die 0 holds only its first program [10us, 1042us).
		{"program_queue 1", 1, 10*us + prog + readTail - 200*us},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			p := base
			p.ProgramQueue = tc.programQueue
			d, q := newTestNVMe(t, e, p)
			log := newBioLog(e)
			for i := range int64(128) {
				log.submit(q, &Bio{Op: OpWrite, Sector: 8192 + i*unit/SectorSize, Bytes: unit, Stamp: Stamp{1, uint64(i + 1)}})
			}
			rlat := latencyOf(t, e, q, 200*us, &Bio{Op: OpRead, Sector: 0, Bytes: 4 * KiB})
			run(t, e)
			assert.Equal(t, tc.want, rlat())
			if tc.programQueue > 0 {
				assert.LessOrEqual(t, rlat(), base.ReadOverhead+time.Duration(tc.programQueue)*prog+readTail, "at most program_queue programs ahead")
			}
			assert.Equal(t, uint64(128), d.Programs)
		})
	}
}

// Mechanism: pages are striped over the dies, so a read covering several
// pages reads them in parallel, one die each; it costs one page read when
// there are enough dies, not one per page.
func TestNVMeLargeReadSpreadsOverDies(t *testing.T) {
	base := testNVMeParams()
	page := base.ReadTime + xfer(t, 16*KiB, 1024) // 66us per full page on a die
	half := base.ReadTime + xfer(t, 8*KiB, 1024)  // 58us for half a page
	link := xfer(t, 128*KiB, 4096)                // 32us
	for _, tc := range []struct {
		name            string
		channels, perCh int
		offset          int64
		want            time.Duration
	}{
		{"8 pages on 8 dies", 4, 2, 0, base.ReadOverhead + page + link},                 // 103us
		{"8 pages on 4 dies", 2, 2, 0, base.ReadOverhead + 2*page + link},               // 169us
		{"8 pages on 1 die", 1, 1, 0, base.ReadOverhead + 8*page + link},                // 565us
		{"9 partial pages on 8 dies", 4, 2, 8 * KiB, base.ReadOverhead + 2*half + link}, // pages 0 and 8 share die 0
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			p := base
			p.Channels, p.DiesPerChannel = tc.channels, tc.perCh
			_, q := newTestNVMe(t, e, p)
			lat := latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: tc.offset / SectorSize, Bytes: 128 * KiB})
			run(t, e)
			assert.Equal(t, tc.want, lat())
		})
	}
}

func TestNVMeValidate(t *testing.T) {
	require.NoError(t, func() error { p := testNVMeParams(); return p.Validate() }())
	for _, tc := range []struct {
		name   string
		mod    func(p *NVMeParams)
		errHas string
	}{
		{"zero capacity", func(p *NVMeParams) { p.Capacity = 0 }, "capacity"},
		{"capacity not a multiple of 4k blocks", func(p *NVMeParams) { p.LogicalBlockSize = 4096; p.Capacity = 64*MiB + 512 }, "capacity"},
		{"zero logical block size", func(p *NVMeParams) { p.LogicalBlockSize = 0 }, "logical_block_size"},
		{"odd logical block size", func(p *NVMeParams) { p.LogicalBlockSize = 520 }, "logical_block_size must be 512 or 4096, not 520"},
		{"1k logical block size", func(p *NVMeParams) { p.LogicalBlockSize = 1024 }, "logical_block_size"},
		{"zero max_hw_sectors_kb", func(p *NVMeParams) { p.MaxHWSectorsKB = 0 }, "max_hw_sectors_kb"},
		{"max_hw_sectors_kb below a 4k block", func(p *NVMeParams) { p.LogicalBlockSize = 4096; p.MaxHWSectorsKB = 2 }, "max_hw_sectors_kb"},
		{"zero queue depth", func(p *NVMeParams) { p.QueueDepth = 0 }, "queue_depth"},
		{"zero channels", func(p *NVMeParams) { p.Channels = 0 }, "channels"},
		{"negative dies per channel", func(p *NVMeParams) { p.DiesPerChannel = -1 }, "dies_per_channel"},
		{"absurd die count", func(p *NVMeParams) { p.Channels, p.DiesPerChannel = 1<<30, 1<<30 }, "dies"},
		{"zero page size", func(p *NVMeParams) { p.PageSize = 0 }, "page_size"},
		{"page size not sector multiple", func(p *NVMeParams) { p.PageSize = 1000 }, "page_size"},
		{"zero planes", func(p *NVMeParams) { p.Planes = 0 }, "planes"},
		{"program unit overflows", func(p *NVMeParams) { p.PageSize, p.Planes = 1<<62, 4 }, "overflow"},
		{"negative read time", func(p *NVMeParams) { p.ReadTime = -1 }, "times"},
		{"negative write overhead", func(p *NVMeParams) { p.WriteOverhead = -us }, "times"},
		{"zero channel rate", func(p *NVMeParams) { p.ChannelMBps = 0 }, "channel_mbps"},
		{"NaN host rate", func(p *NVMeParams) { p.HostMBps = math.NaN() }, "host_mbps"},
		{"buffer smaller than max request", func(p *NVMeParams) { p.WriteBuffer = 64 * KiB }, "write_buffer"},
		{"buffer smaller than program unit", func(p *NVMeParams) { p.MaxHWSectorsKB = 4; p.WriteBuffer = 16 * KiB }, "write_buffer"},
		{"negative program queue", func(p *NVMeParams) { p.ProgramQueue = -1 }, "program_queue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testNVMeParams()
			tc.mod(&p)
			require.ErrorContains(t, p.Validate(), tc.errHas)
			_, err := NewNVMe(newEngine(t), p)
			require.ErrorContains(t, err, tc.errHas, "NewNVMe validates")
		})
	}
}

// Mechanism: writes of StreamMin bytes or more bypass the DRAM buffer:
// after the link, their program units queue at the dies round-robin and
// the write completes when its last unit's program has started (data in
// the die's page register); reads on those dies then wait for the
// programs. Smaller writes still complete from the buffer.
func TestNVMeStreamingWrites(t *testing.T) {
	base := testNVMeParams()
	base.StreamMin = 64 * KiB
	unit := base.PageSize * int64(base.Planes)
	for _, tc := range []struct {
		name     string
		bytes    int64
		want     time.Duration
		programs uint64 // issued by the time the write completes
		readLat  time.Duration
	}{
		// Buffered: 2us + 8us link; its one program (on die 0) starts
		// at 10us and ends at 1042us; the read at 100us waits for it.
		{"32k below stream_min", 32 * KiB, base.WriteOverhead + xfer(t, unit, 4096), 1,
			1042*us + 55*us - 100*us},
		// Streamed: 2us + 32us link, then 4 units on dies 0-3 each take
		// 32us on the channel before their program starts at 66us.
		{"128k streamed", 128 * KiB, base.WriteOverhead + xfer(t, 128*KiB, 4096) + xfer(t, unit, 1024), 4,
			66*us + base.ProgramTime + 55*us - 100*us},
		// 64k is exactly stream_min: 2 + 16 + 32.
		{"64k at stream_min", 64 * KiB, base.WriteOverhead + xfer(t, 64*KiB, 4096) + xfer(t, unit, 1024), 2,
			50*us + base.ProgramTime + 55*us - 100*us},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			d, q := newTestNVMe(t, e, base)
			var programsAtEnd uint64
			log := newBioLog(e)
			w := &Bio{Op: OpWrite, Sector: 4096, Bytes: tc.bytes, Stamp: Stamp{1, 1}}
			log.submit(q, w)
			rlat := latencyOf(t, e, q, 100*us, &Bio{Op: OpRead, Sector: 0, Bytes: 4 * KiB})
			at(e, 99*us, func() { programsAtEnd = d.Programs })
			run(t, e)
			require.Len(t, log.ends[w], 1)
			assert.Equal(t, tc.want, time.Duration(log.ends[w][0].At))
			assert.Equal(t, tc.programs, programsAtEnd)
			assert.Equal(t, tc.readLat, rlat(), "a read on die 0 waits for the program there")
		})
	}
}

// Mechanism: with a volatile write buffer, a flush programs the partly
// filled unit the writes before it left (padded) and completes when that
// program ends; an NVMe flush is a queued command, so a read sent
// behind it is served meanwhile, while a sata-ssd's FLUSH CACHE holds
// it until the flush is done. Without a volatile buffer (power-loss
// protection) the queue completes a flush at once.
func TestFlashFlushProgramsTheBuffer(t *testing.T) {
	// 4 KiB written: 2 us overhead, 8 us on a 512 MB/s host link; the
	// flush pads the 32 KiB unit, whose program takes 32 us on the
	// channel and 1 ms on the die.
	written := 10 * us
	programmed := written + 32*us + ms
	for _, tc := range []struct {
		kind      string
		readAfter bool // the read completes after the flush
	}{{"nvme", false}, {"sata-ssd", true}} {
		t.Run(tc.kind, func(t *testing.T) {
			p := testNVMeParams()
			p.Kind, p.VolatileCache, p.QueueDepth, p.HostMBps = tc.kind, true, 32, 512
			e := newEngine(t)
			_, q := newTestNVMe(t, e, p)
			w := latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 0, Bytes: 4096, Stamp: Stamp{1, 1}, Sync: true})
			f := latencyOf(t, e, q, written, &Bio{Op: OpWrite, Flush: true, Sync: true})
			r := latencyOf(t, e, q, written+10*us, &Bio{Op: OpRead, Sector: 32, Bytes: 4096}) // on another die than the program
			run(t, e)
			assert.Equal(t, written, w())
			assert.InDelta(t, float64(programmed-written), float64(f()), float64(5*us), "the flush waits for the padded program")
			assert.Equal(t, tc.readAfter, r()+written+10*us > programmed, "the read after the flush")
			assert.Equal(t, uint64(1), q.Stats().Flushes)
		})
	}
	p := testNVMeParams()
	e := newEngine(t)
	_, q := newTestNVMe(t, e, p)
	require.False(t, q.Limits().VolatileCache)
	f := latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Flush: true})
	run(t, e)
	assert.Zero(t, f())
}

// Mechanism: a flush waits for the programs of exactly the data written
// before it. Here the write before it is programmed on a die busy with
// reads, and a write sent after it is programmed at once on an idle die:
// the flush still ends no earlier than the first write's program.
func TestFlashFlushWaitsForTheDataBeforeIt(t *testing.T) {
	for _, kind := range []string{"nvme", "ufs"} {
		t.Run(kind, func(t *testing.T) {
			p := testNVMeParams()
			p.Kind, p.VolatileCache, p.QueueDepth = kind, true, 32
			e := newEngine(t)
			d, q := newTestNVMe(t, e, p)
			unit := p.PageSize * int64(p.Planes)
			for i := range 30 { // die 0 (pages 0, 8, 16 ...) reads for ~2 ms
				latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: int64(i) * 8 * p.PageSize / SectorSize, Bytes: 4096})
			}
			// Sent once the reads are queued at die 0, its program goes
			// behind them, ending when die 0 is next free.
			w1 := latencyOf(t, e, q, 20*us, &Bio{Op: OpWrite, Sector: 1 << 16, Bytes: unit, Stamp: Stamp{1, 1}}) // on die 0
			var w1Programmed sim.Time
			e.AfterFunc(200*us, func() { w1Programmed = d.dies[0] })
			f := latencyOf(t, e, q, 200*us, &Bio{Op: OpWrite, Flush: true, Sync: true})
			w2 := latencyOf(t, e, q, 210*us, &Bio{Op: OpWrite, Sector: 1 << 15, Bytes: unit, Stamp: Stamp{2, 1}}) // on die 1
			var w2Programmed sim.Time
			e.AfterFunc(300*us, func() { w2Programmed = d.dies[1] })
			run(t, e)
			require.Less(t, w2Programmed, w1Programmed, "the later write's program ends first")
			w2()
			require.Less(t, w1(), 200*us, "the first write completed before the flush")
			assert.GreaterOrEqual(t, sim.Time(200*us+f()), w1Programmed)
		})
	}
}

// A second flush sent while the first is on the device waits for the
// queue's next flush request (blk-flush keeps one in flight), which also
// covers a write completed before it is issued; flushes sent together
// share one.
func TestFlashFlushIgnoresLaterWrites(t *testing.T) {
	p := testNVMeParams()
	p.VolatileCache = true
	e := newEngine(t)
	_, q := newTestNVMe(t, e, p)
	latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 0, Bytes: 4096, Stamp: Stamp{1, 1}})
	f1 := latencyOf(t, e, q, 20*us, &Bio{Op: OpWrite, Flush: true, Sync: true})
	f2 := latencyOf(t, e, q, 21*us, &Bio{Op: OpWrite, Flush: true, Sync: true})
	f3 := latencyOf(t, e, q, 22*us, &Bio{Op: OpWrite, Flush: true, Sync: true})
	latencyOf(t, e, q, 30*us, &Bio{Op: OpWrite, Sector: 4096, Bytes: 4096, Stamp: Stamp{3, 1}})
	run(t, e)
	assert.Greater(t, 21*us+f2(), 20*us+f1(), "the second flush waits for the first")
	assert.Equal(t, 21*us+f2(), 22*us+f3(), "and shares the next flush request with the third")
	assert.Equal(t, uint64(2), q.Stats().Flushes)
}

// A write buffer that holds one maximal request: a partly filled program
// unit left by a small write would keep a maximal write out forever, so
// the controller programs it (padded) to make room.
func TestFlashPartialUnitMakesRoom(t *testing.T) {
	p := testNVMeParams()
	p.WriteBuffer = 128 * KiB // max_hw_sectors_kb's worth
	e := newEngine(t)
	_, q := newTestNVMe(t, e, p)
	latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 0, Bytes: 4096, Stamp: Stamp{1, 1}})
	big := latencyOf(t, e, q, 10*us, &Bio{Op: OpWrite, Sector: 1024, Bytes: 128 * KiB, Stamp: Stamp{2, 1}})
	run(t, e)
	assert.Greater(t, big(), p.ProgramTime, "it waited for the padded unit's program")
}

// A flash device with a volatile buffer honours FUA (the nvme driver
// sets it with a volatile write cache): a FUA write completes once its
// data is programmed (its partly filled unit padded), a plain one from
// the buffer; a later plain write is not held behind it.
func TestFlashFUAWriteWaitsForItsProgram(t *testing.T) {
	for _, kind := range []string{"nvme", "sata-ssd"} {
		p := testNVMeParams()
		p.VolatileCache, p.Kind = true, kind
		if kind == "sata-ssd" {
			p.QueueDepth, p.HostMBps = 32, 550
		}
		e := newEngine(t)
		_, q := newTestNVMe(t, e, p)
		require.True(t, q.Limits().FUA)
		fua := latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 0, Bytes: 4096, Stamp: Stamp{1, 1}, Sync: true, FUA: true})
		plain := latencyOf(t, e, q, 10*us, &Bio{Op: OpWrite, Sector: 4096, Bytes: 4096, Stamp: Stamp{2, 1}})
		run(t, e)
		assert.GreaterOrEqual(t, fua(), p.ProgramTime, kind)
		assert.Less(t, plain(), 100*us, "%s: not held", kind)
		assert.Zero(t, q.Stats().Flushes, kind)
	}
	p := testNVMeParams()
	e := newEngine(t)
	_, q := newTestNVMe(t, e, p)
	assert.False(t, q.Limits().FUA, "no volatile buffer: no FUA")
}

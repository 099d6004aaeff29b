package blockdev

import (
	"fmt"
	"math"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
)

// testHDDParams is a disk with round numbers: 6000 rpm (10 ms per
// revolution), a 2.5 ms track switch (a quarter turn of skew), and a
// sustained 80 MB/s everywhere, which is 100 MB/s under the head
// (80 * 12.5 / 10): one track holds 1,000,000 bytes and 4 KiB take
// 40.96 us. 1000 tracks. No read cache, FIFO, no write cache, no command
// overhead; the link moves 4 KiB in 10 us.
func testHDDParams() HDDParams {
	return HDDParams{
		Name:             "hddtest",
		Capacity:         1000 * 1000000,
		LogicalBlockSize: 512,
		MaxHWSectorsKB:   1024,
		QueueDepth:       32,
		RPM:              6000,
		TrackToTrack:     2500 * us,
		AverageSeek:      10 * ms,
		FullStroke:       20 * ms,
		OuterMBps:        80,
		InnerMBps:        80,
		HostMBps:         409.6,
		WriteCacheSize:   8 * MiB,
	}
}

const hddRev = 10 * ms

// hddXfer is the media time of n bytes on the test disk (100 MB/s under
// the head).
func hddXfer(n int64) time.Duration { return time.Duration(n * 10) }

// hddWait is the rotational wait on the test disk for the sector at
// angle a (revolutions), at time t.
func hddWait(a float64, t time.Duration) time.Duration {
	w := a - float64(t)/float64(hddRev)
	w -= math.Floor(w)
	return time.Duration(math.Round(w * float64(hddRev)))
}

func newTestHDD(t *testing.T, e *sim.Engine, p HDDParams) (*HDD, *Queue) {
	t.Helper()
	d, err := NewHDD(e, p)
	require.NoError(t, err)
	q, err := NewQueue(e, d, QueueOptions{})
	require.NoError(t, err)
	return d, q
}

// Mechanism: the platter angle is a function of simulated time and each
// sector has a fixed angle, so an idle read pays exactly the wait for its
// first sector to come under the head, then its media transfer; a read on
// the head's track pays no seek.
func TestHDDRotationalLatency(t *testing.T) {
	for _, tc := range []struct {
		name   string
		at     time.Duration
		sector int64
		want   time.Duration
	}{
		// Sector 0 is at angle 0, under the head at time 0.
		{"under the head", 0, 0, hddXfer(4096)},
		// Half a turn later it is half a turn away.
		{"half a turn later", 5 * ms, 0, 5*ms + hddXfer(4096)},
		// Byte 512,000 is at angle 0.512 of track 0.
		{"further along the track", 0, 1000, 5120*us + hddXfer(4096)},
		// Just passed: almost a whole turn.
		{"just missed", 1 * us, 0, hddRev - 1*us + hddXfer(4096)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			d, q := newTestHDD(t, e, testHDDParams())
			lat := latencyOf(t, e, q, tc.at, &Bio{Op: OpRead, Sector: tc.sector, Bytes: 4096})
			run(t, e)
			assert.Equal(t, tc.want, lat())
			assert.Zero(t, d.Seeks)
		})
	}
}

// Mechanism: a read that starts where the previous one ended, submitted
// as it completes, finds its first sector right under the head: no seek,
// no rotation. One that starts behind it waits almost a full turn.
func TestHDDBackToBackOnTheSameTrack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sector int64
		want   time.Duration // latency of the second read
	}{
		{"next sectors", 8, hddXfer(4096)},
		{"same sectors again", 0, hddRev - hddXfer(4096) + hddXfer(4096)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			_, q := newTestHDD(t, e, testHDDParams())
			first := hddXfer(4096)
			latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: 0, Bytes: 4096})
			lat := latencyOf(t, e, q, first, &Bio{Op: OpRead, Sector: tc.sector, Bytes: 4096})
			run(t, e)
			assert.Equal(t, tc.want, lat())
		})
	}
}

// Mechanism: a stream of reads queued back to back, each starting where
// the one before ended, never loses a turn however long it runs: the
// nanosecond rounding of each end time must not add up until a read finds
// its first sector just passed. Sequential reads at depth 4 and more keep
// the actuator busy (the read cache never gets to read ahead), so they run
// at the media rate, one transfer after another.
func TestHDDSequentialQueuedReadsLoseNoTurn(t *testing.T) {
	p := hdd7200(t)
	for _, depth := range []int{4, 32} {
		t.Run(fmt.Sprint("depth ", depth), func(t *testing.T) {
			e := newEngine(t)
			_, q := newTestHDD(t, e, p)
			next := int64(0)
			var worst time.Duration
			var first sim.Time // the first completion, after the first turn
			l := &closedLoop{q: q, bios: make([]Bio, depth),
				fill: func(b *Bio, i int) {
					b.Op, b.Sector, b.Bytes = OpRead, next, 4096
					next += 8
				},
				onEnd: func(b *Bio) {
					if first == 0 {
						first = e.Now()
					}
					if b.Sector >= int64(depth)*8 {
						worst = max(worst, time.Duration(e.Now()-b.Submitted))
					}
				}}
			const n = 16384 // 64 MiB
			l.run(t, e, n)
			require.NoError(t, l.err)
			mbps := float64((n-1)*4096) / time.Duration(e.Now()-first).Seconds() / 1e6
			assert.Less(t, worst, hddRevOf(p), "after the first, no read waits a turn")
			assert.InEpsilon(t, p.OuterMBps, mbps, 0.02, "the media rate at the start of the disk")
		})
	}
}

// Mechanism: moving to another track costs the seek over the distance,
// then the rotation from the angle the platter has reached; tracks are
// skewed by the track switch time, so a transfer that crosses a track
// boundary loses exactly that time and no rotation.
func TestHDDSeekThenRotate(t *testing.T) {
	e := newEngine(t)
	d, q := newTestHDD(t, e, testHDDParams())
	// Byte 5,000,192 is 192 bytes into track 5, whose first sector is
	// 5 * 0.25 turns of skew round: angle 0.250192.
	seek := d.SeekTime(5)
	lat := latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: 9766, Bytes: 4096})
	run(t, e)
	assert.Equal(t, seek+hddWait(0.250192, seek)+hddXfer(4096), lat())
	assert.Equal(t, uint64(1), d.Seeks)

	// 1 MiB from sector 0 crosses into track 1: media time plus one
	// track switch, no rotational wait.
	e = newEngine(t)
	_, q = newTestHDD(t, e, testHDDParams())
	lat = latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: 0, Bytes: MiB})
	run(t, e)
	assert.Equal(t, hddXfer(MiB)+2500*us, lat())
}

// Mechanism: the seek curve goes through track_to_track for one track and
// full_stroke for the whole stroke, grows as the square root of the
// distance for short seeks and linearly for long ones, and averages
// average_seek over random start and end positions.
func TestHDDSeekCurve(t *testing.T) {
	for _, p := range []HDDParams{testHDDParams(), hdd7200(t)} {
		e := newEngine(t)
		d, err := NewHDD(e, p)
		require.NoError(t, err)
		n := d.Tracks()
		last := int64(n)
		assert.Zero(t, d.SeekTime(0))
		assert.Equal(t, p.TrackToTrack, d.SeekTime(1))
		assert.Equal(t, p.TrackToTrack, d.SeekTime(-1))
		assert.InDelta(t, float64(p.FullStroke), float64(d.SeekTime(last)), float64(us))
		prev := time.Duration(0)
		for dist := int64(1); dist <= last; dist = dist*5/4 + 1 {
			s := d.SeekTime(dist)
			assert.Greater(t, s, prev, "seek grows with distance (%d tracks)", dist)
			prev = s
		}
		// Short seeks: t2t + a*(sqrt(d)-1), so (s(9)-t2t) = 2*(s(4)-t2t).
		assert.InDelta(t, 2*float64(d.SeekTime(4)-p.TrackToTrack), float64(d.SeekTime(9)-p.TrackToTrack), 2)
		// Long seeks are linear: equal steps, equal increments.
		a, b, c := d.SeekTime(last/2), d.SeekTime(3*last/4), d.SeekTime(last)
		assert.InDelta(t, float64(b-a), float64(c-b), float64(us))
		// The mean over uniform random start and end tracks.
		rng := e.NewRand(7)
		var sum time.Duration
		const k = 200000
		for range k {
			sum += d.SeekTime(rng.Int64N(last) - rng.Int64N(last))
		}
		assert.InEpsilon(t, float64(p.AverageSeek), float64(sum/k), 0.01)
	}
}

// Mechanism: media rates fall linearly with the LBA from outer_mbps to
// inner_mbps, and they are sustained rates: sequential reads run at them,
// track switches included.
func TestHDDZonedTransferRate(t *testing.T) {
	p := hdd7200(t)
	e := newEngine(t)
	d, err := NewHDD(e, p)
	require.NoError(t, err)
	onTrack := (8333333.33 + 1e6) / 8333333.33
	for _, tc := range []struct {
		name   string
		sector int64
		mbps   float64
	}{
		{"outer", 0, 200},
		{"middle", p.Capacity / SectorSize / 2, 150},
		{"inner", p.Capacity/SectorSize - 128, 100},
	} {
		// 64 KiB inside one track: the rate under the head.
		got := float64(64*KiB) / d.g.media(tc.sector, tc.sector+128) * 1e3
		assert.InEpsilon(t, tc.mbps*onTrack, got, 1e-4, tc.name)
	}
	// Sequential 512 KiB reads, one at a time, from the start of the
	// disk (the read cache keeps the head streaming): the outer rate.
	for _, tc := range []struct {
		name   string
		params HDDParams
		mbps   float64
	}{
		{"test disk", testHDDParams(), 80},
		{"hdd-7200 outer zone", p, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			tc.params.Readahead, tc.params.CacheSegments = MiB, 4
			_, q := newTestHDD(t, e, tc.params)
			var ends []sim.Time
			l := &closedLoop{q: q, bios: make([]Bio, 1),
				fill: func(b *Bio, i int) {
					b.Op, b.Sector, b.Bytes = OpRead, int64(i)*1024, 512*KiB
				},
				onEnd: func(*Bio) { ends = append(ends, e.Now()) }}
			l.run(t, e, 400)
			require.NoError(t, l.err)
			got := float64(399*512*KiB) / time.Duration(ends[399]-ends[0]).Seconds() / 1e6
			assert.InEpsilon(t, tc.mbps, got, 0.01)
		})
	}
}

// Mechanism: with NCQ the drive serves the queued request with the
// shortest positioning time (seek plus rotation) first; without, in
// arrival order. Two reads on the head's track, the far one queued first.
func TestHDDShortestPositioningTimeFirst(t *testing.T) {
	// The first read ends at 40.96 us with the platter at angle
	// 0.004096. A at byte 900,096 (angle 0.900096), B at byte 300,032
	// (angle 0.300032).
	first := hddXfer(4096)
	x := hddXfer(4096)
	for _, tc := range []struct {
		name string
		ncq  bool
		a, b time.Duration
	}{
		// B first: 0.295936 turns; then A: from 0.304128 to 0.900096.
		{"ncq", true, first + 2959360 + x + 5959680 + x, first + 2959360 + x},
		// A first: 0.896 turns; then B: from 0.904192 round to 0.300032.
		{"fifo", false, first + 8960*us + x, first + 8960*us + x + 3958400 + x},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			p := testHDDParams()
			p.NCQ = tc.ncq
			_, q := newTestHDD(t, e, p)
			latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: 0, Bytes: 4096})
			a := latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: 1758, Bytes: 4096})
			b := latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: 586, Bytes: 4096})
			run(t, e)
			assert.Equal(t, tc.a, a())
			assert.Equal(t, tc.b, b())
		})
	}
}

// Mechanism: SPTF against FIFO on random reads over the whole disk: at
// queue depth 1 there is nothing to reorder and a read costs the average
// seek plus half a turn; at depth 32 SPTF more than doubles the IOPS and
// FIFO does not.
func TestHDDRandomReadsByQueueDepth(t *testing.T) {
	p := hdd7200(t)
	iops := func(ncq bool, depth, n int) (float64, time.Duration) {
		e := newEngine(t)
		pp := p
		pp.NCQ = ncq
		_, q := newTestHDD(t, e, pp)
		rng := e.NewRand(3)
		var sum time.Duration
		l := &closedLoop{q: q, bios: make([]Bio, depth),
			fill: func(b *Bio, i int) {
				b.Op, b.Sector, b.Bytes = OpRead, rng.Int64N(p.Capacity/4096)*8, 4096
			},
			onEnd: func(b *Bio) { sum += time.Duration(e.Now() - b.Submitted) }}
		l.run(t, e, n)
		require.NoError(t, l.err)
		return float64(n) / time.Duration(e.Now()).Seconds(), sum / time.Duration(n)
	}
	_, lat1 := iops(true, 1, 3000)
	assert.InEpsilon(t, float64(p.AverageSeek+hddRevOf(p)/2), float64(lat1), 0.03, "QD1: average seek + half a turn")
	fifo32, _ := iops(false, 32, 3000)
	sptf32, _ := iops(true, 32, 3000)
	qd1 := float64(time.Second) / float64(lat1)
	assert.InEpsilon(t, qd1, fifo32, 0.05, "FIFO gains nothing from depth")
	assert.Greater(t, sptf32, 2*qd1, "SPTF at depth 32")
	t.Logf("hdd-7200 random 4k reads: QD1 %.0f IOPS (%.2f ms), QD32 FIFO %.0f, QD32 SPTF %.0f IOPS", qd1, lat1.Seconds()*1e3, fifo32, sptf32)
}

func hddRevOf(p HDDParams) time.Duration { return time.Duration(60e9 / float64(p.RPM)) }

// Mechanism: with the write cache a write completes when its data has
// crossed the link, and is destaged later as queued work that a later read
// waits behind; without it a write completes on the media.
func TestHDDWriteCache(t *testing.T) {
	p := testHDDParams()
	// Without: sector 0 is under the head at time 0.
	e := newEngine(t)
	_, q := newTestHDD(t, e, p)
	w := latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 0, Bytes: 64 * KiB, Stamp: Stamp{1, 1}})
	run(t, e)
	assert.Equal(t, hddXfer(64*KiB), w())

	p.WriteCache = true
	e = newEngine(t)
	d, q := newTestHDD(t, e, p)
	w = latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 0, Bytes: 64 * KiB, Stamp: Stamp{1, 1}})
	// Byte 1,024,000: track 1, angle 0.024 + 0.25.
	r := latencyOf(t, e, q, 200*us, &Bio{Op: OpRead, Sector: 2000, Bytes: 4096})
	run(t, e)
	link := 160 * us // 64 KiB at 409.6 MB/s
	assert.Equal(t, link, w(), "the write completes from the cache")
	// The destage starts at 160 us (angle 0.016), waits 0.984 turns and
	// transfers until 10655.36 us; the read then seeks one track and
	// waits from angle 0.315536 to 0.274.
	destaged := link + hddWait(0, link) + hddXfer(64*KiB)
	assert.Equal(t, 10655360*time.Nanosecond, destaged)
	seeked := destaged + 2500*us
	assert.Equal(t, seeked+hddWait(0.274, seeked)+hddXfer(4096)-200*us, r())
	assert.Equal(t, uint64(1), d.Destages)
}

// Mechanism: a full write cache holds new writes back until a destage
// frees space; adjacent cached writes are destaged as one.
func TestHDDWriteCacheFull(t *testing.T) {
	p := testHDDParams()
	p.WriteCache, p.WriteCacheSize, p.MaxHWSectorsKB = true, 128*KiB, 128
	e := newEngine(t)
	d, q := newTestHDD(t, e, p)
	lats := make([]func() time.Duration, 3)
	for i := range lats {
		lats[i] = latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: int64(i) * 128, Bytes: 64 * KiB, Stamp: Stamp{1, uint64(i + 1)}})
	}
	run(t, e)
	assert.Equal(t, 160*us, lats[0]())
	assert.Equal(t, 320*us, lats[1]())
	// The first two are one dirty run of 128 KiB; its destage starts at
	// 320 us and ends a turn-and-a-bit later; only then does the third
	// write get space.
	destaged := 320*us + hddWait(0, 320*us) + hddXfer(128*KiB)
	assert.Equal(t, destaged+160*us, lats[2]())
	assert.Equal(t, uint64(2), d.Destages)
}

// Mechanism: after a media read the head goes on reading into a cache
// segment; a read of the following data completes once the head has read
// it, at the link rate, without a new positioning.
func TestHDDReadahead(t *testing.T) {
	p := testHDDParams()
	p.Readahead, p.CacheSegments = 64*KiB, 2
	first := hddXfer(4096)
	link := 10 * us
	for _, tc := range []struct {
		name   string
		at     time.Duration
		sector int64
		bytes  int64
		want   time.Duration
		hit    bool
	}{
		// Submitted as the first ends: waits for the head to read it.
		{"next 4k right away", first, 8, 4096, hddXfer(4096) + link, true},
		// Later: already in the cache.
		{"next 4k later", 1 * ms, 8, 4096, link, true},
		{"the first 4k again", 1 * ms, 0, 4096, link, true},
		// The last 4 KiB of the look-ahead, right away.
		{"end of the look-ahead", first, 8 + 120, 4096, hddXfer(64*KiB) + link, true},
		// Past it: a media read (same track, a turn minus the sweep).
		{"past the look-ahead", 1 * ms, 8 + 128, 4096, hddWait(float64(68*KiB)/1e6, 1*ms) + hddXfer(4096), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			d, q := newTestHDD(t, e, p)
			latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: 0, Bytes: 4096})
			lat := latencyOf(t, e, q, tc.at, &Bio{Op: OpRead, Sector: tc.sector, Bytes: tc.bytes})
			run(t, e)
			assert.Equal(t, tc.want, lat())
			assert.Equal(t, tc.hit, d.CacheHits == 1)
		})
	}
	// A write to cached data drops the segment.
	e := newEngine(t)
	d, q := newTestHDD(t, e, p)
	latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: 0, Bytes: 4096})
	latencyOf(t, e, q, 1*ms, &Bio{Op: OpWrite, Sector: 16, Bytes: 4096, Stamp: Stamp{1, 1}})
	latencyOf(t, e, q, 50*ms, &Bio{Op: OpRead, Sector: 8, Bytes: 4096})
	run(t, e)
	assert.Zero(t, d.CacheHits)
}

// Mechanism: the command overhead delays every command before it is
// queued.
func TestHDDCommandOverhead(t *testing.T) {
	p := testHDDParams()
	p.CommandOverhead = 50 * us
	e := newEngine(t)
	_, q := newTestHDD(t, e, p)
	lat := latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: 0, Bytes: 4096})
	run(t, e)
	assert.Equal(t, 50*us+hddWait(0, 50*us)+hddXfer(4096), lat())
}

func TestHDDValidate(t *testing.T) {
	require.NoError(t, func() error { p := testHDDParams(); return p.Validate() }())
	for _, tc := range []struct {
		name   string
		mod    func(p *HDDParams)
		errHas string
	}{
		{"zero rpm", func(p *HDDParams) { p.RPM = 0 }, "rpm"},
		{"zero track to track", func(p *HDDParams) { p.TrackToTrack = 0 }, "track_to_track"},
		{"average below track to track", func(p *HDDParams) { p.AverageSeek = ms }, "average_seek"},
		{"full stroke below average", func(p *HDDParams) { p.FullStroke = 9 * ms }, "full_stroke"},
		{"average too close to full stroke", func(p *HDDParams) { p.AverageSeek = 19 * ms }, "out of reach"},
		{"average too close to track to track", func(p *HDDParams) { p.AverageSeek = 3 * ms }, "out of reach"},
		{"NaN outer rate", func(p *HDDParams) { p.OuterMBps = math.NaN() }, "outer_mbps"},
		{"inner above outer", func(p *HDDParams) { p.InnerMBps = 90 }, "inner_mbps"},
		{"zero link", func(p *HDDParams) { p.HostMBps = 0 }, "host_mbps"},
		{"deeper than NCQ", func(p *HDDParams) { p.QueueDepth = 33 }, "queue_depth"},
		{"cache below a request", func(p *HDDParams) { p.WriteCache, p.WriteCacheSize = true, 512*KiB }, "write_cache_size"},
		{"readahead without segments", func(p *HDDParams) { p.Readahead = MiB }, "cache_segments"},
		{"negative overhead", func(p *HDDParams) { p.CommandOverhead = -1 }, "command_overhead"},
		{"odd block size", func(p *HDDParams) { p.LogicalBlockSize = 520 }, "logical_block_size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testHDDParams()
			tc.mod(&p)
			require.ErrorContains(t, p.Validate(), tc.errHas)
			_, err := NewHDD(newEngine(t), p)
			require.ErrorContains(t, err, tc.errHas)
		})
	}
	// The queue depth defaults to NCQ's 32, or 1 without NCQ.
	for _, ncq := range []bool{true, false} {
		p := testHDDParams()
		p.QueueDepth, p.NCQ = 0, ncq
		d, err := NewHDD(newEngine(t), p)
		require.NoError(t, err)
		assert.Equal(t, map[bool]int{true: 32, false: 1}[ncq], d.Limits().QueueDepth)
	}
}

// hdd7200 returns the shipped hdd-7200 profile's parameters.
func hdd7200(t *testing.T) HDDParams {
	t.Helper()
	dev, err := NewFromProfile(newEngine(t), loadProfile(t, "hdd-7200"))
	require.NoError(t, err)
	return dev.(*HDD).Params()
}

// Mechanism: a flush (FLUSH CACHE, not an NCQ command) completes once the
// commands before it have completed and the write cache is destaged;
// commands arriving meanwhile wait behind it. It is counted as a flush,
// not a write, and never merged or sized. Without the write cache the
// queue completes it at once and it never reaches the disk.
func TestHDDFlushWaitsForTheCache(t *testing.T) {
	p := testHDDParams()
	p.WriteCache = true
	e := newEngine(t)
	d, q := newTestHDD(t, e, p)
	require.True(t, q.Limits().VolatileCache)
	w := latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 0, Bytes: 64 * KiB, Stamp: Stamp{1, 1}})
	f := latencyOf(t, e, q, 10*us, &Bio{Op: OpWrite, Flush: true, Sync: true})
	r := latencyOf(t, e, q, 20*us, &Bio{Op: OpRead, Sector: 0, Bytes: 4096})
	run(t, e)
	link := 160 * us
	assert.Equal(t, link, w(), "the write completes from the cache")
	destaged := link + hddWait(0, link) + hddXfer(64*KiB)
	assert.Equal(t, destaged-10*us, f(), "the flush ends with the destage")
	assert.Greater(t, r(), f(), "the read waited behind the flush")
	assert.Equal(t, uint64(1), d.Destages)
	st := q.Stats()
	assert.Equal(t, uint64(1), st.Flushes)
	assert.Equal(t, destaged-10*us, st.FlushTicks)
	assert.Equal(t, [2]uint64{1, 1}, st.IOs, "the flush is not a write")
	assert.Equal(t, map[int64]uint64{64 * KiB: 1}, st.DispatchedSizes[OpWrite])

	p.WriteCache = false
	e = newEngine(t)
	_, q = newTestHDD(t, e, p)
	require.False(t, q.Limits().VolatileCache)
	f = latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Flush: true})
	run(t, e)
	assert.Zero(t, f())
	assert.Zero(t, q.Stats().Flushes)
}

// A flush bio must be a write: an empty one, or one with data that fits
// in a request; an empty FUA bio without PREFLUSH means nothing.
func TestFlushBioMustBeEmptyWrite(t *testing.T) {
	p := testHDDParams()
	p.WriteCache = true
	for _, b := range []*Bio{{Op: OpRead, Flush: true}, {Op: OpRead, Flush: true, Bytes: 4096},
		{Op: OpRead, FUA: true, Bytes: 4096}, {Op: OpWrite, FUA: true},
		{Op: OpWrite, Flush: true, FUA: true, Bytes: 1024 * KiB}} {
		e := newEngine(t)
		_, q := newTestHDD(t, e, p)
		log := newBioLog(e)
		log.submitAt(q, 0, b)
		run(t, e)
		require.Len(t, log.ends[b], 1)
		assert.ErrorIs(t, log.ends[b][0].Err, syscall.EINVAL)
	}
}

// A flush bypasses the scheduler: it is issued from the hardware queue's
// list, before the scheduler's requests, under every scheduler; a write
// queued in the scheduler behind it waits for it on the disk.
func TestFlushBypassesTheScheduler(t *testing.T) {
	for _, sched := range []string{SchedNone, SchedMQDeadline, SchedCFQ} {
		t.Run(sched, func(t *testing.T) {
			p := testHDDParams()
			p.WriteCache = true
			e := newEngine(t)
			d, err := NewHDD(e, p)
			require.NoError(t, err)
			q, err := NewQueue(e, d, QueueOptions{Scheduler: sched})
			require.NoError(t, err)
			w := latencyOf(t, e, q, 0, &Bio{Op: OpWrite, Sector: 0, Bytes: 64 * KiB, Stamp: Stamp{1, 1}, Sync: true})
			f := latencyOf(t, e, q, 10*us, &Bio{Op: OpWrite, Flush: true, Sync: true})
			w2 := latencyOf(t, e, q, 20*us, &Bio{Op: OpWrite, Sector: 4096, Bytes: 4096, Stamp: Stamp{1, 2}, Sync: true})
			run(t, e)
			assert.Equal(t, 160*us, w())
			destaged := 160*us + hddWait(0, 160*us) + hddXfer(64*KiB)
			assert.Equal(t, destaged-10*us, f())
			assert.Greater(t, w2()+20*us, destaged, "the next write waited for the flush")
			assert.Equal(t, uint64(1), q.Stats().Flushes)
		})
	}
}

package workload

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/stack"
)

// newStackWith builds the default stack with --set style overrides.
func newStackWith(t *testing.T, seed uint64, sets ...string) *stack.Stack {
	t.Helper()
	cfg := stack.Default()
	for _, s := range sets {
		require.NoError(t, cfg.SetArg(s))
	}
	st, err := stack.Build(cfg, seed)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Engine.Close() })
	return st
}

// runOn parses src and runs it on st with the stack's application cost.
func runOn(t *testing.T, st *stack.Stack, src string) *Result {
	t.Helper()
	res, err := Run(st.Engine, st.FS, parseString(t, src), RunOptions{AppPerIO: st.AppPerIO})
	require.NoError(t, err)
	return res
}

// inFlightSampler records the queue's requests in flight every period
// from from until until (simulated time from now).
type inFlightSampler struct {
	q       *blockdev.Queue
	e       *sim.Engine
	period  time.Duration
	until   sim.Time
	samples []int
	// first and last are the queue's counters at the first and the last
	// sample, at times t0 and t1.
	first, last blockdev.DiskStats
	t0, t1      sim.Time
}

func sampleInFlight(st *stack.Stack, from, until, period time.Duration) *inFlightSampler {
	s := &inFlightSampler{q: st.Queue, e: st.Engine, period: period, until: st.Engine.Now() + sim.Time(until)}
	st.Engine.After(from, s, 0)
	return s
}

func (s *inFlightSampler) Fire(uint64) {
	ds := s.q.Stats()
	if len(s.samples) == 0 {
		s.first, s.t0 = ds, s.e.Now()
	}
	s.last, s.t1 = ds, s.e.Now()
	s.samples = append(s.samples, ds.InFlight)
	if s.e.Now()+sim.Time(s.period) <= s.until {
		s.e.After(s.period, s, 0)
	}
}

// queueSize is the disk's average queue size (iostat's aqu-sz) between
// the first and the last sample.
func (s *inFlightSampler) queueSize() float64 {
	return float64(s.last.TimeInQueue-s.first.TimeInQueue) / float64(s.t1-s.t0)
}

func (s *inFlightSampler) stats() (lo, hi int, mean float64) {
	lo = s.samples[0]
	sum := 0
	for _, n := range s.samples {
		lo, hi = min(lo, n), max(hi, n)
		sum += n
	}
	return lo, hi, float64(sum) / float64(len(s.samples))
}

// On a device far slower than the host (2 ms reads), an async job keeps
// iodepth IOs on the device: the queue holds iodepth requests nearly all
// the time and never more.
func TestAsyncKeepsIODepthInFlight(t *testing.T) {
	for _, engine := range []string{"libaio", "io_uring"} {
		for _, depth := range []int{8, 32} {
			t.Run(fmt.Sprintf("%s/iodepth=%d", engine, depth), func(t *testing.T) {
				st := newStackWith(t, 1, "device.read_time=2ms")
				smp := sampleInFlight(st, 5*time.Millisecond, 50*time.Millisecond, 10*time.Microsecond)
				res := runOn(t, st, fmt.Sprintf(`[j]
ioengine=%s
iodepth=%d
rw=randread
direct=1
size=1g
runtime=50ms
time_based
`, engine, depth))
				j := onlyJob(t, res)
				require.Zero(t, j.Error, j.ErrorMsg)
				lo, hi, mean := smp.stats()
				t.Logf("in flight: min %d max %d mean %.2f over %d samples, aqu-sz %.2f; %d IOs",
					lo, hi, mean, len(smp.samples), smp.queueSize(), j.Read.IOs)
				assert.Equal(t, depth, hi)
				assert.Greater(t, mean, float64(depth)-0.3)
				// The disk's own average queue size says the same: a
				// request is missing only while the task turns a
				// completion into the next IO (~15 us of 2 ms).
				assert.InDelta(t, float64(depth), smp.queueSize(), 0.3)
			})
		}
	}
}

// iodepth_low lets the queue drain to the low-water mark before fio fills
// it again; iodepth_batch_complete_min=0 with no maximum is fio's polling
// mode, which reaps after every IO and so keeps one IO in flight.
func TestAsyncDepthOptionsShapeTheQueue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      string
		loMax, hi int // largest allowed minimum, expected maximum
	}{
		{"iodepth_low", "iodepth=16\niodepth_low=4\n", 4, 16},
		{"full", "iodepth=16\n", 16, 16},
		{"polling", "iodepth=16\niodepth_batch_complete_min=0\n", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStackWith(t, 1, "device.read_time=2ms")
			smp := sampleInFlight(st, 5*time.Millisecond, 50*time.Millisecond, 10*time.Microsecond)
			res := runOn(t, st, "[j]\nioengine=libaio\nrw=randread\ndirect=1\nsize=1g\nruntime=50ms\ntime_based\n"+tc.opts)
			j := onlyJob(t, res)
			require.Zero(t, j.Error, j.ErrorMsg)
			lo, hi, mean := smp.stats()
			t.Logf("in flight: min %d max %d mean %.2f; %d IOs", lo, hi, mean, j.Read.IOs)
			assert.LessOrEqual(t, lo, tc.loMax)
			assert.Equal(t, tc.hi, hi)
		})
	}
}

// The acceptance check of the block-layer issue: sequential 4 KiB direct
// writes submitted 32 at a time with libaio iodepth=32 merge in the
// submitting task's plug into requests of max_sectors_kb. Submitted one
// at a time (fio's default iodepth_batch_submit=1), they are not merged.
func TestAsyncSequentialWritesMergeToMaxSectors(t *testing.T) {
	const size = 64 << 20
	for _, tc := range []struct {
		engine, batch string
		maxKB         int // 0: the P3600's 128
		want          map[int64]uint64
	}{
		{"libaio", "iodepth_batch_submit=32\niodepth_batch_complete_max=32\n", 0, map[int64]uint64{128 << 10: size / (128 << 10)}},
		{"io_uring", "iodepth_batch_submit=32\niodepth_batch_complete_max=32\n", 0, map[int64]uint64{128 << 10: size / (128 << 10)}},
		{"libaio", "iodepth_batch_submit=32\niodepth_batch_complete_min=32\n", 64, map[int64]uint64{64 << 10: size / (64 << 10)}},
		{"libaio", "", 0, map[int64]uint64{4 << 10: size / (4 << 10)}},
	} {
		t.Run(fmt.Sprintf("%s/max_sectors_kb=%d/%s", tc.engine, tc.maxKB, strings.ReplaceAll(tc.batch, "\n", ",")), func(t *testing.T) {
			st := newStackWith(t, 1, fmt.Sprintf("queue.max_sectors_kb=%d", tc.maxKB))
			res := runOn(t, st, fmt.Sprintf("[seq]\nioengine=%s\niodepth=32\nrw=write\nbs=4k\ndirect=1\nsize=%d\n%s", tc.engine, size, tc.batch))
			j := onlyJob(t, res)
			require.Zero(t, j.Error, j.ErrorMsg)
			assert.Equal(t, uint64(size), j.Write.Bytes)
			ds := st.Queue.Stats()
			assert.Equal(t, tc.want, ds.DispatchedSizes[blockdev.OpWrite])
			assert.Equal(t, map[int64]uint64{4 << 10: size / (4 << 10)}, ds.QueuedSizes[blockdev.OpWrite])
			t.Logf("%.0f MiB/s, write lat %.1f us", float64(j.Write.Bytes)/(float64(j.Runtime)/1e9)/(1<<20), j.Write.Lat.Mean()/1e3)
		})
	}
}

// fio's latencies for async engines: slat from preparing an IO to the
// return of the call that submitted it, clat from there to the return of
// the call that reaped it, lat = slat + clat for every IO. Sync engines
// have no slat.
func TestAsyncLatencies(t *testing.T) {
	for _, engine := range []string{"libaio", "io_uring", "psync"} {
		t.Run(engine, func(t *testing.T) {
			st := newStack(t, 1)
			res := runOn(t, st, "[j]\nioengine="+engine+"\niodepth=32\niodepth_batch_submit=8\nrw=randrw\ndirect=1\nsize=256m\nruntime=20ms\ntime_based\n")
			j := onlyJob(t, res)
			require.Zero(t, j.Error, j.ErrorMsg)
			for _, d := range []*DirStats{&j.Read, &j.Write} {
				require.NotZero(t, d.IOs)
				assert.Equal(t, d.IOs, d.Clat.Count())
				assert.Equal(t, d.IOs, d.Lat.Count())
				if engine == "psync" {
					assert.Zero(t, d.Slat.Count())
					assert.Equal(t, d.Clat.Mean(), d.Lat.Mean())
					continue
				}
				assert.Equal(t, d.IOs, d.Slat.Count())
				assert.InDelta(t, d.Lat.Mean(), d.Slat.Mean()+d.Clat.Mean(), 1, "lat = slat + clat")
				// Submitting costs a syscall and the direct-IO setup
				// (2 + 1.5 + 0.04 + 2 us); the first IO of a batch of 8
				// also waits for the other 7 to be prepared (1.5 us each).
				assert.GreaterOrEqual(t, d.Slat.Min(), int64(5540))
				assert.Greater(t, d.Slat.Max()-d.Slat.Min(), int64(7*1500))
				assert.Greater(t, d.Clat.Min(), int64(0))
			}
			t.Logf("read: slat %.2f clat %.2f lat %.2f us, %d IOs", j.Read.Slat.Mean()/1e3, j.Read.Clat.Mean()/1e3, j.Read.Lat.Mean()/1e3, j.Read.IOs)
		})
	}
}

// Random 4 KiB reads on the P3600: an async engine at iodepth=32 keeps
// the device's dies busy and reaches many times psync's QD1 IOPS;
// io_uring, which reaps without a system call, beats libaio.
func TestAsyncRandomReadIOPS(t *testing.T) {
	iops := map[string]float64{}
	for _, engine := range []string{"psync", "libaio", "io_uring"} {
		st := newStack(t, 1)
		res := runOn(t, st, "[j]\nioengine="+engine+"\niodepth=32\nrw=randread\nbs=4k\ndirect=1\nsize=10g\nruntime=50ms\ntime_based\n")
		j := onlyJob(t, res)
		require.Zero(t, j.Error, j.ErrorMsg)
		iops[engine] = float64(j.Read.IOs) / (float64(j.Runtime) / 1e9)
	}
	t.Logf("IOPS: %v", iops)
	assert.Greater(t, iops["libaio"], 8*iops["psync"])
	assert.Greater(t, iops["io_uring"], 1.15*iops["libaio"])
}

// Async jobs stop as sync jobs do: after size bytes, or at the runtime of
// a time-based job; ramp_time IOs are not counted.
func TestAsyncStopConditions(t *testing.T) {
	t.Run("size", func(t *testing.T) {
		res, _ := runJobs(t, 1, "[j]\nioengine=libaio\niodepth=16\niodepth_batch=5\nrw=randwrite\nbs=8k\ndirect=1\nsize=4m\n", RunOptions{})
		j := onlyJob(t, res)
		assert.Equal(t, uint64(4<<20), j.Write.Bytes)
		assert.Equal(t, uint64(512), j.Write.IOs)
		assert.Zero(t, j.Read.IOs)
	})
	t.Run("size with a mix", func(t *testing.T) {
		// norandommap: with the random map, fio ends a randrw job whose
		// directions have different block sizes early (randomMapOffset).
		res, _ := runJobs(t, 1, "[j]\nioengine=io_uring\niodepth=7\nrw=randrw\nbs=4k,16k\nnorandommap\ndirect=1\nsize=8m\n", RunOptions{})
		j := onlyJob(t, res)
		assert.GreaterOrEqual(t, j.Read.Bytes+j.Write.Bytes, uint64(8<<20))
		assert.Less(t, j.Read.Bytes+j.Write.Bytes, uint64(8<<20+16<<10))
	})
	t.Run("time based", func(t *testing.T) {
		res, _ := runJobs(t, 1, "[j]\nioengine=libaio\niodepth=32\nrw=randread\ndirect=1\nsize=64m\nruntime=30ms\nramp_time=5ms\ntime_based\n", RunOptions{})
		j := onlyJob(t, res)
		assert.GreaterOrEqual(t, j.Runtime, int64(30*time.Millisecond))
		assert.Less(t, j.Runtime, int64(31*time.Millisecond), "the IOs in flight at the deadline drain quickly")
		iops := float64(j.Read.IOs) / (float64(j.Runtime) / 1e9)
		assert.Greater(t, iops, 50000.0)
	})
}

func TestAsyncJobErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, option, msg string
	}{
		{"fdatasync libaio", "[j]\nioengine=libaio\niodepth=8\nsize=1m\nfdatasync=8\n", "fdatasync", "async engine"},
		{"fsync io_uring", "[j]\nioengine=io_uring\nbuffered=1\nsize=1m\nfsync=4\n", "fsync", "async engine"},
		{"libaio depth", "[j]\nioengine=libaio\niodepth=65537\ndirect=1\nsize=1m\n", "iodepth", "aio-max-nr"},
		{"io_uring depth", "[j]\nioengine=io_uring\niodepth=32769\ndirect=1\nsize=1m\n", "iodepth", "ring entries"},
		{"misaligned", "[j]\nioengine=libaio\nbs=1000\ndirect=1\nsize=1m\n", "bs", "EINVAL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStack(t, 1)
			_, err := Run(st.Engine, st.FS, parseString(t, tc.src), RunOptions{})
			require.ErrorIs(t, err, ErrJob)
			assert.ErrorContains(t, err, fmt.Sprintf("test.fio:%d: option %q", optionLine(tc.src, tc.option), tc.option))
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

// AIO holds the inode lock only while submitting: with ext4's parallel DIO
// reads (shared across the IO when synchronous) and DIO_LOCKING writes
// (exclusive across the IO) the longest hold is a submission, not a device
// read.
func TestAsyncLockHeldOnlyForSubmission(t *testing.T) {
	for _, engine := range []string{"psync", "libaio"} {
		t.Run(engine, func(t *testing.T) {
			st := newStack(t, 1)
			res := runOn(t, st, "[j]\nioengine="+engine+"\niodepth=16\nnumjobs=4\nfilename=shared\nrw=randrw\ndirect=1\nsize=64m\nruntime=20ms\ntime_based\n")
			for _, j := range allJobs(res) {
				require.Zero(t, j.Error, j.ErrorMsg)
			}
			ls := openExisting(t, st.FS, "shared").Inode().Lock.Stats()
			t.Logf("write hold max %v, read hold max %v", ls.Write.HoldMax, ls.Read.HoldMax)
			if engine == "psync" {
				assert.Greater(t, ls.Read.HoldMax, 70*time.Microsecond, "the P3600's read_time")
				return
			}
			assert.Less(t, ls.Write.HoldMax, 10*time.Microsecond)
			assert.Less(t, ls.Read.HoldMax, 10*time.Microsecond)
		})
	}
}

// Same seed, same results; another seed, other results.
func TestAsyncDeterministic(t *testing.T) {
	src := "[j]\nioengine=libaio\niodepth=24\niodepth_batch=4\niodepth_batch_complete_max=8\nnumjobs=3\nrw=randrw\ndirect=1\nsize=64m\nruntime=10ms\ntime_based\n"
	key := func(seed uint64) string {
		st := newStack(t, seed)
		res := runOn(t, st, src)
		var b strings.Builder
		for _, j := range allJobs(res) {
			fmt.Fprintln(&b, j.Read.IOs, j.Write.IOs, j.Read.Lat.Mean(), j.Write.Slat.Mean(), j.Write.Clat.Max(), j.Runtime)
		}
		fmt.Fprintln(&b, res.Engine.Events)
		return b.String()
	}
	a, b, c := key(5), key(5), key(6)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
}

// A JobSpec built in code gets fio's meaning for zero batching options
// (iodepth_batch_submit and iodepth_low 0 mean iodepth); a zero iodepth is
// an error.
func TestAsyncSpecBuiltInCode(t *testing.T) {
	spec := JobSpec{Name: "code", File: "code.go", Line: 7, RW: RWRandRead, BS: [2]int64{4096, 4096},
		Size: 1 << 20, NumJobs: 1, IOEngine: "io_uring", IODepth: 8, Direct: true,
		IODepthBatchCompleteMin: 1, RandSeed: DefaultRandSeed}
	st := newStack(t, 1)
	res, err := Run(st.Engine, st.FS, []JobSpec{spec}, RunOptions{})
	require.NoError(t, err)
	j := onlyJob(t, res)
	require.Zero(t, j.Error, j.ErrorMsg)
	assert.Equal(t, uint64(256), j.Read.IOs)

	spec.IODepth = 0
	st = newStack(t, 1)
	_, err = Run(st.Engine, st.FS, []JobSpec{spec}, RunOptions{})
	require.ErrorIs(t, err, ErrJob)
	assert.ErrorContains(t, err, `code.go:7: option "iodepth"`)
}

// libaio and io_uring on a buffered file: the kernel does the IO inside
// the submitting call, so each IO's completion is ready when io_submit
// returns and fio's lat is slat + clat.
func TestAsyncBufferedCompletesAtSubmit(t *testing.T) {
	for _, engine := range []string{"libaio", "io_uring"} {
		t.Run(engine, func(t *testing.T) {
			src := "[j]\nrw=write\nbs=4k\nsize=4m\niodepth=8\nfilename=f\nioengine=" + engine + "\n"
			specs, err := Parse("test.fio", strings.NewReader(src), nil)
			require.NoError(t, err)
			st, err := stack.Build(stack.Default(), 1)
			require.NoError(t, err)
			defer st.Close()
			res, err := Run(st.Engine, st.FS, specs, RunOptions{AppPerIO: st.AppPerIO})
			require.NoError(t, err)
			w := res.Groups[0].Jobs[0].Write
			require.Equal(t, uint64(1024), w.IOs)
			assert.InDelta(t, w.Lat.Mean(), w.Slat.Mean()+w.Clat.Mean(), 1)
			data := int64(st.Queue.Stats().Sectors[1]/8) - st.FS.JournalStats().Blocks
			assert.Equal(t, int64(1024), st.FS.Writeback().DirtyPages()+data, "every page dirtied or written")
		})
	}
}

// Every fio job opens the file itself, so two jobs reading one file
// sequentially, each its own half (offset_increment), each have their own
// readahead state (struct file's file_ra_state): both ramp up to
// read_ahead_kb (128 KiB) windows, with psync and with libaio alike. With
// one readahead state between them, each job's reads would look random
// to the other's and stay 4 KiB.
func TestSharedFileSequentialReadersEachReadAhead(t *testing.T) {
	const half = 32 << 20
	for _, engine := range []string{"psync", "libaio"} {
		t.Run(engine, func(t *testing.T) {
			st := newStackWith(t, 1, "pagecache.limit=256m")
			res := runOn(t, st, fmt.Sprintf(`[w]
filename=shared
rw=write
bs=1m
size=%d
direct=0
end_fsync=1

[r]
stonewall
filename=shared
ioengine=%s
rw=read
bs=4k
size=%d
offset_increment=%d
numjobs=2
direct=0
`, 2*half, engine, half, half))
			jobs := allJobs(res)
			require.Len(t, jobs, 3)
			for _, j := range jobs {
				require.Zero(t, j.Error, j.ErrorMsg)
			}
			reads := st.Queue.Stats().QueuedSizes[blockdev.OpRead]
			var bytes, big uint64
			for size, n := range reads {
				bytes += uint64(size) * n
				if size == 128<<10 {
					big += uint64(size) * n
				}
			}
			assert.Equal(t, uint64(2*half), bytes, "every byte read from the device once: %v", reads)
			assert.Greater(t, float64(big)/float64(bytes), 0.95, "read in 128 KiB windows: %v", reads)
		})
	}
}

// end_fsync=1 with an asynchronous engine: once the job's IO is done and
// nothing is in flight, each file is fsynced before the job ends, so the
// job's run time covers writing its 8 MiB to the device, where without
// end_fsync the job ends once its writes are in the page cache.
func TestAsyncEndFsyncWritesEverything(t *testing.T) {
	const size = 8 << 20
	for _, engine := range []string{"libaio", "io_uring"} {
		t.Run(engine, func(t *testing.T) {
			runtime := map[int]int64{}
			for _, fsync := range []int{0, 1} {
				st := newStackWith(t, 1, "pagecache.limit=256m")
				res := runOn(t, st, fmt.Sprintf("[w]\nioengine=%s\niodepth=8\nrw=write\nbs=64k\nsize=%d\ndirect=0\nend_fsync=%d\n", engine, size, fsync))
				j := onlyJob(t, res)
				require.Zero(t, j.Error, j.ErrorMsg)
				runtime[fsync] = j.Runtime
			}
			// 8 MiB at the P3600's write rate take milliseconds; the
			// copies into the page cache a fraction of that.
			assert.Greater(t, runtime[1], 2*runtime[0], "run time (ns) with and without end_fsync: %v", runtime)
		})
	}
}

// fio's get_next_buflen redraws until the size fits before the region's
// end (io_u_fits), so a sequential bsrange or bssplit job moves exactly
// size bytes (it moved 972 KiB of 1 MiB for bsrange=4k-64k when the size
// was drawn before the offset).
func TestRunSequentialVariableBSFillsRegion(t *testing.T) {
	for _, bs := range []string{"bsrange=4k-64k", "bssplit=4k/50:64k/50"} {
		t.Run(bs, func(t *testing.T) {
			jobs, _, _ := runSrc(t, "[j]\ndirect=1\nrw=read\nsize=1m\n"+bs+"\n")
			require.Len(t, jobs, 1)
			assert.Zero(t, jobs[0].Error, jobs[0].ErrorMsg)
			assert.Equal(t, uint64(1<<20), jobs[0].Read.Bytes)
		})
	}
}

// A bssplit entry whose share is 0 (fio gives "8k/100:4k/" the remaining
// 0%) is never drawn, but it sets the random map's unit: a block where
// only it would fit is passed over, never an empty IO (which failed the
// job with EINVAL for some seeds; fio would retry forever).
func TestRunBSSplitZeroShareNoEmptyIO(t *testing.T) {
	for seed := range uint64(16) {
		res, _ := runJobs(t, seed+1, "[j]\ndirect=1\nrw=randread\nsize=12k\nbssplit=8k/100:4k/\n", RunOptions{AppPerIO: time.Microsecond})
		j := onlyJob(t, res)
		assert.Zero(t, j.Error, "seed %d: %s", seed+1, j.ErrorMsg)
	}
}

// fio cuts every bssplit size down to a multiple of the smallest when
// that is a power of two (get_next_buflen: buflen &= ~(minbs-1)), so
// bssplit=4k/50:6k/50 issues only 4 KiB IOs.
func TestRunBSSplitSizesAlignedToSmallest(t *testing.T) {
	st := newStack(t, 1)
	res := runOn(t, st, "[j]\ndirect=1\nrw=randread\nsize=256k\nbssplit=4k/50:6k/50\n")
	j := onlyJob(t, res)
	require.Zero(t, j.Error, j.ErrorMsg)
	assert.Equal(t, uint64(256<<10), j.Read.Bytes)
	assert.Equal(t, uint64(64), j.Read.IOs, "every IO 4 KiB")
}

package workload

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for the options about statistics, clocks and buffer contents that
// blksim takes from the fio example corpus: gtod_reduce and the disable_*
// and *_percentiles options, exitall_on_error, clocksource and the buffer
// options that only change data contents.

func TestParseStatOptions(t *testing.T) {
	type flags struct{ lat, clat, slat, noPct bool }
	get := func(js JobSpec) flags {
		return flags{js.DisableLat, js.DisableClat, js.DisableSlat, js.NoClatPercentiles}
	}
	for _, tc := range []struct {
		name, src string
		want      flags
	}{
		{"defaults", "", flags{}},
		{"gtod_reduce", "gtod_reduce=1", flags{true, true, true, true}},
		{"gtod_reduce=0 leaves the rest", "disable_slat=1\ngtod_reduce=0", flags{slat: true}},
		{"later option wins", "gtod_reduce=1\nclat_percentiles=1\ndisable_clat=0", flags{lat: true, slat: true}},
		{"each", "disable_lat=1\ndisable_clat=1\nclat_percentiles=0", flags{lat: true, clat: true, noPct: true}},
		{"no-ops", "disable_bw=1\ndisable_bw_measurement=0\nlat_percentiles=0\nslat_percentiles=0\nclocksource=cpu\nbuffer_pattern=0xdeadbeef\nzero_buffers\nscramble_buffers=0", flags{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs := parseString(t, "[j]\n"+tc.src+"\n")
			assert.Equal(t, tc.want, get(jobs[0]))
		})
	}
	assert.True(t, parseString(t, "[j]\nexitall_on_error\n")[0].ExitAllOnError)

	for _, tc := range []struct {
		src  string
		kind error
		opt  string
		msg  string
	}{
		{"lat_percentiles=1", ErrNotModelled, "lat_percentiles", "completion latency percentiles only"},
		{"slat_percentiles=1", ErrNotModelled, "slat_percentiles", "completion latency percentiles only"},
		{"clocksource=tsc", ErrBadValue, "clocksource", "gettimeofday, clock_gettime or cpu"},
		{"gtod_reduce=2", ErrBadValue, "gtod_reduce", "0 or 1"},
		{"refill_buffers", ErrUnknownOption, "refill_buffers", "per-IO CPU cost"},
		{"buffer_compress_percentage=50", ErrUnknownOption, "buffer_compress_percentage", "per-IO CPU cost"},
		{"dedupe_percentage=50", ErrUnknownOption, "dedupe_percentage", "deduplicates"},
		{"cpus_allowed=0-1", ErrUnknownOption, "cpus_allowed", "CPU affinity"},
		{"numa_cpu_nodes=0", ErrUnknownOption, "numa_cpu_nodes", "NUMA"},
		{"prio=7", ErrUnknownOption, "prio", "IO priorities"},
		{"nice=5", ErrUnknownOption, "nice", "process priorities"},
		{"lockmem=1g", ErrUnknownOption, "lockmem", "page cache"},
	} {
		t.Run(tc.src, func(t *testing.T) {
			pe := requireOptionError(t, tc.src, tc.kind, tc.opt, tc.msg)
			assert.Equal(t, 2, pe.Line)
		})
	}
}

// TestRunStatOptions: gtod_reduce records no latencies (fio then prints
// none), the disable_* options each drop their own, and the IOs and bytes
// are counted all the same.
func TestRunStatOptions(t *testing.T) {
	const base = "rw=randread\nbs=4k\nsize=256k\ndirect=1\nioengine=libaio\niodepth=4\n"
	jobs, _, _ := runSrc(t, "[all]\n"+base+"[gtod]\n"+base+"gtod_reduce=1\n"+
		"[noslat]\n"+base+"disable_slat=1\n[nolat]\n"+base+"disable_lat=1\n[noclat]\n"+base+"disable_clat=1\n")
	require.Len(t, jobs, 5)
	counts := func(j JobResult) [4]uint64 {
		d := j.Read
		var dist uint64
		for _, n := range d.ClatDist.Usec {
			dist += n
		}
		for _, n := range d.ClatDist.Nsec {
			dist += n
		}
		for _, n := range d.ClatDist.Msec {
			dist += n
		}
		return [4]uint64{d.Slat.Count(), d.Clat.Count(), d.Lat.Count(), dist}
	}
	assert.Equal(t, [4]uint64{64, 64, 64, 64}, counts(jobs[0]))
	assert.Equal(t, [4]uint64{0, 0, 0, 0}, counts(jobs[1]))
	assert.True(t, jobs[1].NoClatPercentiles)
	assert.Equal(t, [4]uint64{0, 64, 64, 64}, counts(jobs[2]))
	assert.Equal(t, [4]uint64{64, 64, 0, 64}, counts(jobs[3]))
	assert.Equal(t, [4]uint64{64, 0, 64, 0}, counts(jobs[4]))
	for _, j := range jobs {
		assert.Equal(t, uint64(64), j.Read.IOs, j.Name)
		assert.Equal(t, uint64(256<<10), j.Read.Bytes, j.Name)
	}

	// The sync path too.
	jobs, _, _ = runSrc(t, "[g]\nrw=read\nbs=4k\nsize=64k\ndirect=1\ngtod_reduce=1\n")
	assert.Equal(t, [4]uint64{0, 0, 0, 0}, counts(jobs[0]))
	assert.Equal(t, uint64(16), jobs[0].Read.IOs)
}

// TestRunExitAllOnError: a job that ends with an error ends every other
// job, whatever its group; without the option the others run on.
func TestRunExitAllOnError(t *testing.T) {
	const long = "[long]\nnew_group\nrw=randread\nbs=4k\nsize=64m\nruntime=5s\ntime_based\ndirect=1\n"
	// Slower than its rate_min: fails after its first rate cycle (1s).
	const failing = "[slow]\nrw=read\nbs=4k\nsize=16m\nrate_min=100g\nruntime=8s\ntime_based\ndirect=1\n"
	jobs, _, _ := runSrc(t, failing+"exitall_on_error\n"+long)
	require.NotZero(t, jobs[0].Error, "the job must fail for this test")
	assert.InDelta(t, float64(jobs[0].Runtime), float64(jobs[1].Runtime), float64(time.Millisecond),
		"the other job ends when the failing one does")

	jobs, _, _ = runSrc(t, failing+long)
	require.NotZero(t, jobs[0].Error)
	assert.InDelta(t, float64(5*time.Second), float64(jobs[1].Runtime), float64(time.Millisecond), "without exitall_on_error it runs on")
}

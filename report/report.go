// Package report renders a [workload.Result] the way fio shows its results:
// fio's "normal" text layout ([WriteNormal]) and its --output-format=json
// layout ([WriteJSON]), each followed by blksim's own figures (the
// lockstat-style lock table, per-CPU utilisation and the engine's work),
// and fio's terse semicolon-separated lines ([WriteTerse], versions 2 to 5).
//
// Numbers are formatted with fio's rules (num2str with 4 significant
// figures, KiB/MiB with the decimal MB/s alternative in parentheses,
// nsec/usec/msec chosen by magnitude), so the output can be read, diffed and
// parsed like fio's. Where fio prints something blksim does not measure
// (bandwidth and IOPS samples, IO depth distributions), the line
// or field is left out rather than filled with invented values.
//
// It also renders the tables of "blksim compare" ([WriteCompare],
// [WriteCompareJSON]: runs reduced by [Summarize] to read and write
// bandwidth, IOPS and mean latency, side by side) and "blksim reproduce"
// ([WriteReproduce], [WriteReproduceJSON]: published figures beside
// simulated ones).
//
// Output is a function of the Result and the Options only: no clocks, no map
// iteration, no environment. Wall-clock figures, the one non-deterministic
// part of a Result, are dropped with [Options.OmitWall].
package report

import (
	"github.com/blksim/blksim/internal/latency"
	"github.com/blksim/blksim/workload"
)

// Options controls the parts of a report that do not follow from the
// simulated run alone. The zero value prints everything.
type Options struct {
	// OmitWall leaves out the wall-clock figures (wall seconds and simulated
	// IOs per wall second), making the output deterministic for a given
	// seed. Golden-file tests set it.
	OmitWall bool
	// Bins adds fio's json+ latency buckets ("bins": value in ns -> count)
	// to every clat_ns object of the JSON output, and to "sync" "lat_ns".
	Bins bool
	// TerseVersion is the version of fio's terse format WriteTerse writes,
	// 2 to 5; 0 means DefaultTerseVersion (3).
	TerseVersion int
	// Real, for a run on a real device, is its counters and verification
	// result, which the JSON output gives as "blksim"."real_device".
	Real *RealDevice
}

// RealDevice is what a real device saw in a run (realdev.Stats, as
// plain figures).
type RealDevice struct {
	Name, Backend                        string
	Reads, Writes, ReadBytes, WriteBytes uint64
	// Flushes counts the cache flushes (fdatasyncs of the target).
	Flushes uint64
	// Enters counts io_uring_enter calls that handed requests to the
	// kernel.
	Enters uint64
	// Errors counts failed requests; CorruptSectors the sectors read with
	// a damaged or misdirected header (FirstCorrupt, -1: none, and
	// FirstCorruptWhy the first); ForeignSectors those blksim never wrote
	// and StaleSectors those of an earlier run.
	Errors, CorruptSectors, ForeignSectors, StaleSectors uint64
	FirstCorrupt                                         int64
	FirstCorruptWhy                                      string
	// Interrupted reports a SIGINT; the results then cover the run up to
	// it.
	Interrupted bool
}

// fixedDate replaces the date fio prints in each job's header line: fio
// prints the current time, blksim prints ctime of the Unix epoch (in UTC), so
// that text output is reproducible and still has the shape of fio's. The
// JSON "timestamp" is 0 to match.
const fixedDate = "Thu Jan  1 00:00:00 1970"

// defaultPercentiles is fio's default percentile_list.
var defaultPercentiles = [...]float64{1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99}

// emptyDir is an all-zero direction, rendered for fio's trim direction.
var emptyDir workload.DirStats

// direction names one IO direction of a job as fio does.
type direction struct {
	name  string // "read": the per-job line and the JSON key
	stats *workload.DirStats
	// slot is the direction's index in the group's figures (groupRuns,
	// groupAgg): 0 for read and for a unified_rw_reporting=mixed job's
	// one direction, 1 for write.
	slot int
	// mixed marks the summed direction of unified_rw_reporting (fio's
	// "mixed"), and both that it follows the job's read and write ones
	// (unified_rw_reporting=both): it then does not count in the group's
	// figures, and takes its bandwidth share from the group's read
	// aggregate, as fio 3.33's show_mixed_ddir_status does.
	mixed, both bool
}

// Modes of fio's unified_rw_reporting (JobResult.UnifiedRW).
const (
	unifiedMixed = 1
	unifiedBoth  = 2
)

// directions returns the job's IO directions in fio's order: read and
// write; for unified_rw_reporting=mixed just their sum, named "mixed";
// for unified_rw_reporting=both read, write and then their sum.
func directions(j *workload.JobResult) []direction {
	rw := []direction{
		{name: "read", stats: &j.Read},
		{name: "write", stats: &j.Write, slot: 1},
	}
	switch j.UnifiedRW {
	case unifiedMixed:
		return []direction{{name: "mixed", stats: mixedStats(j), mixed: true}}
	case unifiedBoth:
		return append(rw, direction{name: "mixed", stats: mixedStats(j), mixed: true, both: true})
	}
	return rw
}

// mixedStats sums the job's read and write figures into one direction, as
// fio's sum_thread_stats does for unified_rw_reporting: counts and bytes
// add up, latency statistics and histograms merge as if recorded
// together, the bandwidth and IOPS sample statistics add up (fio's pure
// sum: minima, maxima, means and sample counts), and the runtime is the
// longer of the two directions' (each only if the job moved bytes in it).
func mixedStats(j *workload.JobResult) *workload.DirStats {
	m := new(workload.DirStats)
	var runtime int64
	for _, d := range []*workload.DirStats{&j.Read, &j.Write} {
		m.Merge(d)
		if d.Bytes != 0 {
			rt := d.Runtime
			if rt <= 0 {
				rt = j.Runtime
			}
			runtime = max(runtime, rt)
		}
	}
	m.Runtime = runtime
	return m
}

// runtimeMsec is the job's runtime in milliseconds as fio keeps it: the
// elapsed microseconds rounded up to a whole millisecond (backend.c
// update_runtime: (elapsed_us + 999) / 1000), so a run of any length
// under a millisecond counts as 1.
func runtimeMsec(j *workload.JobResult) uint64 {
	return nsToMsec(j.Runtime)
}

// jobRuntimeMsec is fio's total_run_time (JSON job_runtime): the job's
// runtime in whole milliseconds, cut, not rounded up (backend.c:
// mtime_since_now(&td->epoch)), summed over the jobs of a group_reporting
// result (stat.c sum_thread_stats), which CPUUsage.Runtime holds.
func jobRuntimeMsec(j *workload.JobResult) uint64 {
	ns := j.CPU.Runtime
	if ns <= 0 {
		ns = j.Runtime
	}
	return uint64(max(ns, 0) / 1e6)
}

// nsToMsec is a runtime in ns as fio keeps it: whole us, rounded up to
// msec.
func nsToMsec(ns int64) uint64 {
	if ns <= 0 {
		return 0
	}
	return uint64((ns/1e3 + 999) / 1e3)
}

// dirRuntimeMsec is fio's per-direction runtime (ts.runtime[ddir]): the
// direction's runtime (DirStats.Runtime, or the job's if that is not set)
// if the job moved bytes in that direction, else 0 (no line for the
// direction).
func dirRuntimeMsec(j *workload.JobResult, d *workload.DirStats) uint64 {
	if d.Bytes == 0 {
		return 0
	}
	if d.Runtime > 0 {
		return nsToMsec(d.Runtime)
	}
	return runtimeMsec(j)
}

// jobPercentiles is the job's percentile list and the decimals they are
// printed with: its percentile_list, or fio's default list with 2.
func jobPercentiles(j *workload.JobResult) ([]float64, int) {
	if j.Percentiles != nil {
		return j.Percentiles, j.PercentilePrecision
	}
	return defaultPercentiles[:], 2
}

// percentiles returns the percentiles ps of h, in nanoseconds.
func percentiles(h *latency.Histogram, ps []float64) []uint64 {
	v := make([]uint64, len(ps))
	for i, p := range ps {
		v[i] = uint64(h.Percentile(p))
	}
	return v
}

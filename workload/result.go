package workload

import (
	"math"
	"math/bits"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/fsmodel"
	"github.com/blksim/blksim/internal/latency"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/writeback"
)

// DirStats holds one job's figures for one IO direction (read or write).
// All times are simulated nanoseconds.
type DirStats struct {
	// IOs is the number of IOs that completed without error.
	IOs uint64
	// Issued is the number of IOs issued (fio's total_io_u: JSON
	// "total_ios", the "issued rwts" line, and the IOPS fio reports),
	// failed ones included.
	Issued uint64
	// Bytes is the number of bytes transferred (fio's io_bytes).
	Bytes uint64
	// Runtime is fio's runtime of the direction (ts.runtime[ddir]), in
	// simulated ns: the job's runtime in the phases that count for it
	// (backend.c update_runtime). An IO phase counts for the directions
	// of the job's rw=, a verify phase for reads; so a write job with
	// verify has a write runtime, its writes, and a read runtime, its
	// verify phases (only the last phase's reads of verify_backlog),
	// adding up to the job's. A group_reporting result has the longest of
	// its jobs'. 0 in a result that does not set it stands for the job's
	// Runtime.
	Runtime int64
	// Slat is the submission latency (zero samples for sync engines, as fio
	// shows none for them).
	Slat latency.Histogram
	// Clat is the completion latency: for sync engines the whole syscall.
	Clat latency.Histogram
	// Lat is the total latency, slat + clat: what the application saw.
	Lat latency.Histogram
	// ClatDist counts the same completion latencies as Clat in fio's
	// latency-distribution buckets (the terse output's latency fields).
	ClatDist LatencyDist
	// BW and IOPS are fio's bandwidth (KiB/s) and IOPS samples of the
	// direction (its bw_stat and iops_stat, the "bw (  KiB/s)" and "iops"
	// lines): one per bwavgtime (iopsavgtime) interval of the job's run,
	// counted from its start (after ramp_time), in which IOs of the
	// direction completed, each the interval's bytes (IOs) times 1000 over
	// its length in ms, cut to an integer (and to KiB). Reads a verify
	// phase does to check data are not counted, nor an interval that
	// ended after the job last issued IO, as fio samples neither. With
	// write_bw_log (write_iops_log) and log_avg_msec the interval is
	// log_avg_msec unless bwavgtime (iopsavgtime) is given; without
	// log_avg_msec fio samples per IO instead, and so does blksim: each
	// IO whose latency is recorded, verify reads included, is a sample,
	// its bytes times 10^6 over its completion latency in ns (an IOPS
	// sample is 1).
	BW, IOPS RateSamples
}

// RateSamples summarise a series of rate samples as fio's io_stat does:
// their number, smallest and largest value, and the running mean and sum
// of squared deviations (Welford's method, add_stat_sample). The zero
// value is empty and ready to use.
type RateSamples struct {
	N        uint64
	Min, Max uint64
	Mean, S  float64
}

// Add records the sample v.
func (r *RateSamples) Add(v uint64) {
	if r.N == 0 || v < r.Min {
		r.Min = v
	}
	r.Max = max(r.Max, v)
	delta := float64(v) - r.Mean
	if delta != 0 {
		r.Mean += delta / float64(r.N+1)
		r.S += delta * (float64(v) - r.Mean)
	}
	r.N++
}

// Stddev is the samples' sample standard deviation (0 for fewer than two).
func (r *RateSamples) Stddev() float64 {
	if r.N < 2 {
		return 0
	}
	return math.Sqrt(r.S / float64(r.N-1))
}

// Merge adds o to r as fio's group_reporting does for rates (stat.c
// sum_stat with pure_sum): the jobs' minima, maxima, means and sums of
// squares add up, as do their sample counts, so the result describes the
// group's combined rate.
func (r *RateSamples) Merge(o *RateSamples) {
	if o.N == 0 {
		return
	}
	if r.N == 0 {
		*r = *o
		return
	}
	r.Min += o.Min
	r.Max += o.Max
	r.N += o.N
	r.Mean += o.Mean
	r.S += o.S
}

// SyncStats are a job's fsync and fdatasync calls made for fsync=N or
// fdatasync=N (fio's sync io_us; end_fsync's is not counted, as fio does
// not): how many, and their latencies in ns, each from the call to its
// return.
type SyncStats struct {
	// IOs counts the calls that succeeded. IssuedFsync counts the fsync
	// calls issued and IssuedDatasync the fdatasync ones, failed ones
	// included:
	// fio 3.33 counts the first in total_io_u[DDIR_SYNC] (JSON "sync"
	// "total_ios") and the second one past that array's end, in
	// short_io_u[DDIR_READ] (the read direction's "short_ios", the first
	// "short=" figure of "issued rwts"), and its reports show them there.
	IOs            uint64
	IssuedFsync    uint64
	IssuedDatasync uint64
	Lat            latency.Histogram
}

// Merge adds o's figures to s.
func (s *SyncStats) Merge(o *SyncStats) {
	s.IOs += o.IOs
	s.IssuedFsync += o.IssuedFsync
	s.IssuedDatasync += o.IssuedDatasync
	s.Lat.Merge(&o.Lat)
}

// Merge adds o's figures to d.
func (d *DirStats) Merge(o *DirStats) {
	d.IOs += o.IOs
	d.Issued += o.Issued
	d.Bytes += o.Bytes
	d.Runtime = max(d.Runtime, o.Runtime)
	d.Slat.Merge(&o.Slat)
	d.Clat.Merge(&o.Clat)
	d.Lat.Merge(&o.Lat)
	d.ClatDist.Merge(&o.ClatDist)
	d.BW.Merge(&o.BW)
	d.IOPS.Merge(&o.IOPS)
}

// LatencyDist counts latencies in fio's distribution buckets (fio's
// io_u_lat_n, io_u_lat_u and io_u_lat_m, filled by io_u_mark_latency), the
// figures behind fio's "lat (usec)" lines and the latency percentages of
// its terse output. Each array has one bucket per range, the value first
// cut to whole units:
//
//	Nsec (under 1 us, in ns) and Usec (1 us to under 1 ms, in whole us):
//	    0-1, 2-3, 4-9, 10-19, 20-49, 50-99, 100-249, 250-499, 500-749, 750-999
//	Msec (1 ms and more, in whole ms): the same ten, then 1000-1999, 2000+
//
// The zero value is empty and ready to use.
type LatencyDist struct {
	// Nsec counts latencies under 1 us.
	Nsec [10]uint64
	// Usec counts latencies from 1 us to under 1 ms.
	Usec [10]uint64
	// Msec counts latencies of 1 ms and more.
	Msec [12]uint64
}

// Record counts one latency of ns nanoseconds; negative values count as 0.
func (l *LatencyDist) Record(ns int64) {
	switch {
	case ns < 1000:
		l.Nsec[latDistIndex(max(ns, 0))]++
	case ns < 1000000:
		l.Usec[latDistIndex(ns/1000)]++
	default:
		l.Msec[latDistIndex(ns/1000000)]++
	}
}

// latDistIndex is fio's bucket for v whole units (io_u_mark_lat_*): one of
// the ten ranges up to 999, 10 for 1000-1999 and 11 above.
func latDistIndex(v int64) int {
	for i, hi := range [...]int64{1, 3, 9, 19, 49, 99, 249, 499, 749, 999, 1999} {
		if v <= hi {
			return i
		}
	}
	return 11
}

// Merge adds o's counts to l.
func (l *LatencyDist) Merge(o *LatencyDist) {
	for i := range l.Nsec {
		l.Nsec[i] += o.Nsec[i]
	}
	for i := range l.Usec {
		l.Usec[i] += o.Usec[i]
	}
	for i := range l.Msec {
		l.Msec[i] += o.Msec[i]
	}
}

// IODepthDist is fio's accounting of a job's queue depths (io_u_map,
// io_u_submit and io_u_complete, with total_submit and total_complete):
// the figures behind its "IO depths", "submit" and "complete" lines and
// JSON "iodepth_level", "iodepth_submit" and "iodepth_complete".
//
// Level counts IOs (and fsync=N syncs) by how many IO units the job held
// when they were submitted (fio's cur_depth, io_u_mark_depth): 1, 2-3,
// 4-7, 8-15, 16-31, 32-63, 64 and more. fio counts units when its IO loop
// commits them (td_io_commit); units an asynchronous engine submits on
// its way to wait for completions are counted at the loop's next commit,
// at the depth of that moment, and those still uncounted when the job
// ends are not, so Level may sum to a little less than the IOs issued.
//
// Submit counts submitting calls by the IOs each submitted, Complete
// reaping calls by the IOs each reaped (0 for a call that reaped none),
// in the ranges 0, 1-4, 5-8, 9-16, 17-32, 33-64 and more
// (__io_u_mark_map); Submits and Completes count the calls. A sync
// engine's IO is one call of each.
//
// The zero value is empty and ready to use.
type IODepthDist struct {
	Level, Submit, Complete [7]uint64
	Submits, Completes      uint64
}

// markLevel counts n IOs submitted while the job held depth units.
func (d *IODepthDist) markLevel(depth, n int) {
	i := 0
	for lim := 2; i < 6 && depth >= lim; lim *= 2 {
		i++
	}
	d.Level[i] += uint64(n)
}

// callIndex is fio's __io_u_mark_map bucket for a call that moved n IOs.
func callIndex(n int) int {
	switch {
	case n <= 0:
		return 0
	case n <= 4:
		return 1
	case n <= 64:
		return bits.Len(uint(n-1)) - 1
	}
	return 6
}

// markSubmit counts a submitting call that submitted n IOs.
func (d *IODepthDist) markSubmit(n int) {
	d.Submit[callIndex(n)]++
	d.Submits++
}

// markComplete counts a reaping call that reaped n IOs.
func (d *IODepthDist) markComplete(n int) {
	d.Complete[callIndex(n)]++
	d.Completes++
}

// Merge adds o's counts to d.
func (d *IODepthDist) Merge(o *IODepthDist) {
	for i := range d.Level {
		d.Level[i] += o.Level[i]
		d.Submit[i] += o.Submit[i]
		d.Complete[i] += o.Complete[i]
	}
	d.Submits += o.Submits
	d.Completes += o.Completes
}

// JobResult is what one job (one clone of a numjobs= job) measured.
type JobResult struct {
	// Name is the job's section name.
	Name string
	// JobID is fio's 0-based job id across the whole run.
	JobID int
	// GroupID is the reporting group (fio's groupid).
	GroupID int
	// RW, BS, IOEngine and IODepth describe the job for the header line
	// ("name: (g=0): rw=randrw, bs=(R) 4096B-4096B, ... ioengine=psync, iodepth=1").
	RW       string
	BS       [2]int64 // read, write block sizes (the smallest, for a range or split)
	IOEngine string
	IODepth  int
	// BSMax is the largest read and write block size of a job with
	// bsrange or bssplit; 0 for a direction with one size (BS).
	BSMax [2]int64
	// Description is the job's description= text ("" if none).
	Description string
	// Thread is the job's thread option: fio runs it as a thread, not a
	// process (its "Starting N threads" line).
	Thread bool
	// Options are the options the job's section gave (JobSpec.Options):
	// fio's JSON "job options".
	Options []OptionValue
	// Jobs is how many jobs this result stands for: 1, or the number of
	// jobs merged into a group_reporting result.
	Jobs int
	// Read and Write are the per-direction figures.
	Read, Write DirStats
	// Sync holds the job's fsync=N and fdatasync=N calls.
	Sync SyncStats
	// Depths is the job's queue-depth accounting.
	Depths IODepthDist
	// Runtime is the job's measured runtime in simulated ns (ramp excluded).
	Runtime int64
	// Ended is when the job ended, in simulated ns from the run's start.
	Ended int64
	// NoClatPercentiles is the job's clat_percentiles=0 (or gtod_reduce=1):
	// its reports leave out the completion latency percentiles.
	NoClatPercentiles bool
	// UnifiedRW is the job's unified_rw_reporting (JobSpec.UnifiedRW); a
	// group_reporting result has its first job's, as fio's does.
	UnifiedRW int
	// Percentiles and PercentilePrecision are the job's percentile_list
	// (JobSpec.Percentiles; nil for fio's default list).
	Percentiles         []float64
	PercentilePrecision int
	// KBBase is the job's kb_base (JobSpec.KBBase): 1000 reports sizes
	// and bandwidths in SI units first, IEC ones second.
	KBBase int64
	// Error is the errno the job ended with (0 if none), and ErrorMsg its
	// text: for a failed IO or fsync fio's td_verror text, e.g.
	// "file:io_u.c:1876, func=io_u error, error=Input/output error".
	Error    int
	ErrorMsg string
	// SetupFailed says the job failed in fio's parent process while its
	// files were set up (a layout without room, a size fio cannot work
	// out): it never ran, so fio 3.33 prints on stderr why (ErrorLog's
	// first line) and its error line with pid 0 (ErrorLog's second), no
	// report block (as for any job that did no IO) and no logs; its JSON
	// and terse entries remain.
	SetupFailed bool
	// ErrorLog holds the lines fio prints on stderr about the job's IO
	// errors (io_u_log_error: "fio: io_u error on file F: Input/output
	// error: write offset=N, buflen=M"), in the order they happened.
	ErrorLog []string
	// ContinueOnError is the job's continue_on_error (not none): its
	// errors line (TotalErr, FirstError) is reported, as fio reports it.
	// TotalErr counts the IO errors of the types continue_on_error covers
	// (those the job went on after, and a fatal one it stopped at: fio's
	// update_error_count); FirstError is the first one's errno.
	ContinueOnError bool
	TotalErr        uint64
	FirstError      int
	// Integrity is what the atomicity oracle found in the job's reads
	// (summed over the jobs of a group_reporting result); its On is false
	// if the oracle did not watch the job's file.
	Integrity IntegrityStats
	// CPU is the job thread's CPU usage (fio's "cpu" line).
	CPU CPUUsage
}

// ReportedError is the error fio's reports show for the job
// (__show_run_stats: ts->error): the error it stopped with, or, for a job
// that went on past errors with continue_on_error, the first of them, so
// such a job shows err=5 although it ran to its end (and fio's exit
// status, from the job's own error, stays 0).
func (j *JobResult) ReportedError() (errno int, msg string) {
	if j.Error == 0 && j.ContinueOnError && j.FirstError != 0 {
		return j.FirstError, ioVerror(j.FirstError)
	}
	return j.Error, j.ErrorMsg
}

// CPUUsage is what fio reads from getrusage for a job's thread: CPU time in
// user and system mode and context switches, with the runtime fio divides
// them by. Page faults are not modelled (fio's majf and minf are 0).
type CPUUsage struct {
	// User is the CPU time of the application's own work (host.app_per_io,
	// thinktime_spin); Sys the CPU time of everything the kernel does for
	// the job (system calls, filesystem, block layer, completions, lock
	// spinning), over the job's whole life.
	User, Sys time.Duration
	// Ctx counts context switches: voluntary (the job slept) plus
	// involuntary (it waited for a CPU).
	Ctx uint64
	// Runtime is fio's total_run_time in ns: the job's Runtime, and the
	// sum of the merged jobs' runtimes for a group_reporting entry.
	Runtime int64
}

// Merge adds o's figures to c, as fio's sum_thread_stats does.
func (c *CPUUsage) Merge(o *CPUUsage) {
	c.User += o.User
	c.Sys += o.Sys
	c.Ctx += o.Ctx
	c.Runtime += o.Runtime
}

// Percent returns fio's usr and sys percentages: each time in whole
// milliseconds over the runtime in whole milliseconds (0 when the runtime
// is under 1 ms).
func (c *CPUUsage) Percent() (usr, sys float64) {
	runt := c.Runtime / 1e6
	if runt <= 0 {
		return 0, 0
	}
	return float64(c.User.Milliseconds()) * 100 / float64(runt), float64(c.Sys.Milliseconds()) * 100 / float64(runt)
}

// GroupResult is a reporting group: fio prints one "Run status group" block
// per group. When GroupReporting is true, Jobs holds a single merged entry
// named after the first job, whose Jobs field counts the jobs merged and
// whose Runtime is the longest of theirs, as fio reports them.
type GroupResult struct {
	GroupID        int
	GroupReporting bool
	Jobs           []JobResult
	// Members are the group's jobs as they ran, one per clone, when
	// group_reporting merged them into Jobs' one entry (nil otherwise):
	// fio describes each job at its start whatever the reporting.
	Members []JobResult
}

// AsRun returns the group's jobs as they ran: Members if group_reporting
// merged them, else Jobs.
func (g *GroupResult) AsRun() []JobResult {
	if g.Members != nil {
		return g.Members
	}
	return g.Jobs
}

// EngineFigures describes the engine's own work during a run.
type EngineFigures struct {
	// SimulatedIOs is the number of IOs the jobs completed.
	SimulatedIOs uint64
	// Events is the number of engine events dispatched.
	Events uint64
	// WallSeconds is the real time the simulation took.
	WallSeconds float64
	// SimulatedSeconds is the simulated time covered.
	SimulatedSeconds float64
	// ActiveSeconds is the simulated time from the start until the last
	// job ended or, if later, the device's last request completed: the
	// interval blksim's disk statistics and iostat rates cover, so that
	// they count every request the run caused, writeback the flusher did
	// after the jobs ended included (fio's disk statistics stop when its
	// jobs end). The engine may run on past it with nothing left to count:
	// a device writing back its cache, a scheduler's idle timer, the
	// flusher's next periodic wakeup.
	ActiveSeconds float64
	// JobsSeconds is the simulated time from the start until the last
	// job ended: how long fio itself would have run.
	JobsSeconds float64
}

// DiskResult is one device's block-layer figures for a run.
type DiskResult struct {
	// Name is the device name (nvme0n1).
	Name string
	// Scheduler is the queue's IO scheduler.
	Scheduler string
	// Stats are the queue's counters at the end of the run.
	Stats blockdev.DiskStats
	// Elapsed is the simulated time the counters' rates are over: the
	// run's active time (EngineFigures.ActiveSeconds).
	Elapsed time.Duration
}

// Result is everything one run produced, in a deterministic order.
type Result struct {
	// Groups in group id order.
	Groups []GroupResult
	// Locks holds the lockstat-style figures of every lock that was
	// acquired at least once, sorted by name.
	Locks []sim.LockStats
	// Engine holds the engine figures.
	Engine EngineFigures
	// Disks holds each device's figures, in stack order.
	Disks []DiskResult
	// Seed is the seed the run used.
	Seed uint64
	// CPUs holds each simulated CPU's user and system time over the run,
	// by CPU id (nil if the caller did not fill it), and SpinTime the time
	// tasks spent spinning on locks, which no simulated CPU accounts.
	CPUs     []sim.CPUStat
	SpinTime time.Duration
	// Integrity is the atomicity oracle's total over every job; its On is
	// false if the oracle watched no file.
	Integrity IntegrityStats
	// Writeback holds the page-cache writeback figures of a run that did
	// buffered IO (nil otherwise, or if the caller did not fill it).
	Writeback *WritebackResult
	// Journal holds the filesystem journal's figures of a run that
	// committed to it (nil otherwise, or if the caller did not fill it).
	Journal *fsmodel.JournalStats
	// Logs are the jobs' log files (write_bw_log, write_lat_log,
	// write_iops_log, write_hist_log), in the order fio 3.33 writes them:
	// the logs it writes as each job ends, in the order the jobs ended,
	// then the interval bandwidth and IOPS logs (those with log_avg_msec)
	// in job order. Logs with one Path (per_job_logs=0) make one file,
	// their text in this order. Run only records them; writing them is
	// the caller's.
	Logs []*IOLog
	// GlobalOptions are the run's [global] and command-line options
	// (JobSpec.GlobalOptions of its last job, which has them all but those
	// of a [global] section after every job): fio's JSON "global
	// options".
	GlobalOptions []OptionValue
}

// WritebackResult is the writeback domain's figures at the end of a run:
// what was written and why, how writers were throttled, and the
// thresholds and bandwidth estimate those rest on.
type WritebackResult struct {
	// Stats are the domain's counters (pages written and writepages
	// calls per reason, lock-rule decisions, throttle pauses).
	Stats writeback.Stats
	// Background and Limit are the dirty thresholds in pages
	// (dirty_background and dirty limit) at the end of the run.
	Background, Limit int64
	// Bandwidth is the write bandwidth estimate in pages per second
	// (the kernel's avg_write_bandwidth) at the end of the run.
	Bandwidth int64
}

package report

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/blksim/blksim/fsmodel"
	"github.com/blksim/blksim/internal/latency"
	"github.com/blksim/blksim/workload"
	"github.com/blksim/blksim/writeback"
)

// WriteNormal writes r in fio 3.x's "normal" text layout, followed by the
// lock table ([WriteLockStat]) and the engine line. It returns the first
// error from w. r is only read.
//
// The layout, in fio's order:
//
//   - one description line per job section, as fio prints when it starts
//     ("name: (g=0): rw=randread, bs=(R) 4096B-4096B, (W) 4096B-4096B,
//     (T) 4096B-4096B, ioengine=psync, iodepth=1"); numjobs clones
//     (consecutive results of the same name and group, or a
//     group_reporting result of several jobs) get fio's "..." line;
//   - the version line ("blksim", where fio prints fio-3.33) and
//     "Starting N processes" (threads and processes counted apart, as
//     fio's);
//   - a blank line, then every job's block, group after group: the header
//     "name: (groupid=G, jobs=N): err= 0: pid=ID: DATE", the "Description
//     :" line of a job with one, then for each direction that moved bytes
//     in at least 1 ms of runtime the "read:" or "write:" line (IOPS from
//     the IOs issued, bandwidth, amount and runtime; a write line ends
//     with fio 3.33's "; 0 zone resets"), the slat, clat and lat lines for
//     those with samples, the clat percentile block (fio's default
//     percentile list), and the "bw" and "iops" sample lines when it has
//     samples; then the latency distribution ("lat (usec)   : ..."), for a
//     job that made fsync=N or fdatasync=N calls the
//     "fsync/fdatasync/sync_file_range:" block (their "sync" latency line
//     and percentiles, as fio 3.25-3.33 print it), fio's "cpu" line (usr
//     and sys percent of the runtime, ctx; majf and minf are 0), the "IO
//     depths", "submit", "complete" and "issued rwts" lines, the "errors"
//     line with continue_on_error and the "latency" line;
//   - for each group, "Run status group G (all jobs):" and one line per
//     direction with the aggregate bandwidth (bytes over the longest
//     runtime), the per-job bandwidth range, the amount and the runtime
//     range;
//   - when the atomicity oracle ran (r.Integrity.On), a line per job it
//     watched, after the job's directions: "  integrity    :
//     torn_reads=T (pages=P), stale_reads=S (pages=Q)", and after the
//     run status groups the total "Integrity (all jobs): reads_checked=N,
//     torn_reads=..." (see workload.IntegrityStats);
//   - the lock table, if any lock was acquired, the per-CPU table
//     ([WriteCPUUtil]) if r.CPUs is set, and the engine line
//     "blksim engine: N simulated IOs, E events, W.WW s wall, S.SS s
//     simulated, X simulated IOs per wall second" (without the wall
//     figures when opt.OmitWall).
//
// Differences from fio, all deliberate: DATE is the fixed
// "Thu Jan  1 00:00:00 1970" and pid= is the job's JobID (simulated jobs have
// neither clocks nor processes); jobs= is JobResult.Jobs (at least 1); a
// job that failed before doing any IO still gets its header, so its error
// is visible (fio prints nothing); fio's "Laying out IO file" lines and
// its running status are not printed.
//
// After the groups, when r.Disks is set: fio's "Disk stats (read/write)"
// lines, an iostat -x style table and, per device, the request-size
// histogram (bios as queued, requests as dispatched) with merge and split
// counts. When r.Writeback is set, the writeback section: the dirty
// thresholds in pages and the write bandwidth estimate, pages written
// (and writepages calls) per reason, the lock rule's serialized and
// skipped calls when there were any, and the throttle pauses (count,
// those at the dirty limit, total and longest).
func WriteNormal(w io.Writer, r *workload.Result, opt Options) error {
	if err := WriteNormalHeader(w, r); err != nil {
		return err
	}
	return WriteNormalResults(w, r, opt)
}

// WriteNormalHeader writes the lines fio prints as it starts the jobs, the
// first part of [WriteNormal]: the job description lines, the version line,
// "Starting N processes" (with its notes) and the lines of jobs that
// failed. fio prints these before any other output when its formats
// include normal, so a combined run (normal,terse or normal,json) prints
// them first, then the terse lines or JSON, then [WriteNormalResults].
func WriteNormalHeader(w io.Writer, r *workload.Result) error {
	b := bufio.NewWriter(w)
	writeDescriptions(b, r)
	return b.Flush()
}

// WriteNormalResults writes the rest of [WriteNormal] after
// [WriteNormalHeader]: a blank line, the job blocks, the run status groups
// and everything after them.
func WriteNormalResults(w io.Writer, r *workload.Result, opt Options) error {
	b := bufio.NewWriter(w)
	b.WriteString("\n")
	for gi := range r.Groups {
		agg := groupAgg(&r.Groups[gi])
		for ji := range r.Groups[gi].Jobs {
			if !r.Groups[gi].Jobs[ji].SetupFailed {
				writeJobNormal(b, &r.Groups[gi].Jobs[ji], agg)
			}
		}
	}
	for gi := range r.Groups {
		writeGroupStatus(b, &r.Groups[gi])
	}
	if r.Integrity.On {
		fmt.Fprintf(b, "\nIntegrity (all jobs): reads_checked=%d, %s\n", r.Integrity.Reads, integrityFigures(&r.Integrity))
	}
	if len(r.Disks) > 0 {
		writeDiskStats(b, r.Disks)
		writeIostat(b, r.Disks)
		writeRequestSizes(b, r.Disks)
	}
	if r.Writeback != nil {
		writeWriteback(b, r.Writeback)
	}
	if r.Journal != nil {
		writeJournal(b, r.Journal)
	}
	if hasLockRows(r.Locks) {
		b.WriteString("\n")
		writeLockTable(b, r.Locks)
	}
	if len(r.CPUs) > 0 {
		b.WriteString("\n")
		writeCPUTable(b, r)
	}
	b.WriteString("\n")
	writeEngineLine(b, &r.Engine, opt)
	return b.Flush()
}

// writeDescriptions writes fio's job description lines.
func writeDescriptions(b *bufio.Writer, r *workload.Result) {
	clone := 0
	var prev *workload.JobResult
	for gi := range r.Groups {
		jobs := r.Groups[gi].AsRun()
		for ji := range jobs {
			j := &jobs[ji]
			if prev != nil && prev.Name == j.Name && prev.GroupID == j.GroupID {
				clone++
			} else {
				clone = 0
			}
			prev = j
			switch {
			case clone == 0:
				rlo, rhi := bsBounds(j, 0)
				wlo, whi := bsBounds(j, 1)
				// fio fills a missing trim block size with the last one
				// given, the write size.
				fmt.Fprintf(b, "%s: (g=%d): rw=%s, bs=(R) %s-%s, (W) %s-%s, (T) %s-%s, ioengine=%s, iodepth=%d\n",
					j.Name, j.GroupID, j.RW, rlo, rhi, wlo, whi, wlo, whi, j.IOEngine, j.IODepth)
				if j.Jobs > 1 {
					// A merged entry standing for its clones.
					b.WriteString("...\n")
				}
			case clone == 1:
				b.WriteString("...\n")
			}
		}
	}
	writeStarting(b, r)
}

// writeStarting writes the lines fio prints after the job lines: its
// version ("blksim" here, as in the terse output), how many threads and
// processes it starts, and, for each job of a synchronous engine with an
// iodepth above 1, its note that the depth is capped at 1.
func writeStarting(b *bufio.Writer, r *workload.Result) {
	var threads, procs, capped int
	for gi := range r.Groups {
		jobs := r.Groups[gi].AsRun()
		for ji := range jobs {
			j := &jobs[ji]
			if j.Thread {
				threads += max(j.Jobs, 1)
			} else {
				procs += max(j.Jobs, 1)
			}
			if j.IODepth > 1 && workload.SyncEngine(j.IOEngine) {
				capped += max(j.Jobs, 1)
			}
		}
	}
	b.WriteString(terseFioVersion + "\nStarting ")
	plural := func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return strconv.Itoa(n) + " " + many
	}
	if threads > 0 {
		b.WriteString(plural(threads, "thread", "threads"))
		if procs > 0 {
			b.WriteString(" and ")
		}
	}
	if procs > 0 || threads == 0 {
		b.WriteString(plural(procs, "process", "processes"))
	}
	b.WriteString("\n")
	for range capped {
		b.WriteString("note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1\n")
	}
	// fio's thread_main ends a failed job with this line on stdout, as
	// each job ends.
	var failed []*workload.JobResult
	for gi := range r.Groups {
		jobs := r.Groups[gi].AsRun()
		for ji := range jobs {
			if jobs[ji].Error != 0 {
				failed = append(failed, &jobs[ji])
			}
		}
	}
	slices.SortStableFunc(failed, func(a, b *workload.JobResult) int { return cmp.Compare(a.Ended, b.Ended) })
	for _, j := range failed {
		if !j.SetupFailed { // fio's parent prints those on stderr (ErrorLog)
			fmt.Fprintf(b, "fio: pid=%d, err=%d/%s\n", j.JobID, j.Error, j.ErrorMsg)
		}
	}
}

// bsBounds formats the smallest and largest block size of direction d
// (0 read, 1 write) as fio's description line does: the largest is
// JobResult.BSMax for a bsrange or bssplit job, else the one size BS.
func bsBounds(j *workload.JobResult, d int) (lo, hi string) {
	hiB := j.BS[d]
	if j.BSMax[d] > hiB {
		hiB = j.BSMax[d]
	}
	return num2str(uint64(max(j.BS[d], 0)), sigFigs, true, "B"), num2str(uint64(max(hiB, 0)), sigFigs, true, "B")
}

// writeJobNormal writes one job's block; agg is its group's aggregate
// bandwidth per direction (groupAgg).
func writeJobNormal(b *bufio.Writer, j *workload.JobResult, agg [2]uint64) {
	errno, msg := j.ReportedError()
	if j.Read.Bytes == 0 && j.Write.Bytes == 0 && issuedRW(j) == 0 && errno == 0 {
		return
	}
	if errno == 0 {
		fmt.Fprintf(b, "%s: (groupid=%d, jobs=%d): err=%2d: pid=%d: %s\n",
			j.Name, j.GroupID, max(j.Jobs, 1), errno, j.JobID, fixedDate)
	} else {
		fmt.Fprintf(b, "%s: (groupid=%d, jobs=%d): err=%2d (%s): pid=%d: %s\n",
			j.Name, j.GroupID, max(j.Jobs, 1), errno, msg, j.JobID, fixedDate)
	}
	if j.Description != "" {
		fmt.Fprintf(b, "  Description  : [%s]\n", j.Description)
	}
	for _, d := range directions(j) {
		if d.stats.Bytes != 0 {
			writeDirNormal(b, j, d, agg[d.slot])
		}
	}
	writeLatDist(b, j)
	if h := &j.Sync.Lat; h.Count() > 0 {
		// fio's show_ddir_status for DDIR_SYNC.
		b.WriteString("  fsync/fdatasync/sync_file_range:\n")
		b.WriteString(latLine("sync", uint64(h.Min()), uint64(h.Max()), h.Mean(), h.Stddev()))
		ps, prec := jobPercentiles(j)
		b.WriteString(percentileBlock("sync", ps, prec, percentiles(h, ps)))
	}
	b.WriteString(cpuLine(&j.CPU))
	writeDepths(b, j)
	if j.ContinueOnError {
		// fio's show_thread_status_normal, after the issued line.
		fmt.Fprintf(b, "     errors    : total=%d, first_error=%d/<%s>\n", j.TotalErr, j.FirstError, workload.Strerror(j.FirstError))
	}
	// fio's latency-target line: blksim has no latency_target, so the
	// target and window are 0 and the depth is the job's iodepth.
	fmt.Fprintf(b, "     latency   : target=0, window=0, percentile=100.00%%, depth=%d\n", max(j.IODepth, 1))
	if j.Integrity.On {
		fmt.Fprintf(b, "  integrity    : %s\n", integrityFigures(&j.Integrity))
	}
}

// writeLatDist writes the job's completion-latency distribution, fio's
// show_latencies: one "lat (unit)" line per unit with the buckets that
// are not empty, five to a line.
func writeLatDist(b *bufio.Writer, j *workload.JobResult) {
	dist := jobLatDist(j)
	total := issuedRW(j)
	for _, u := range latDistUnits(&dist) {
		n := 0
		for i, c := range u.counts {
			p := latPercent(c, total)
			if p <= 0 {
				continue
			}
			switch {
			case n%5 == 0 && n > 0:
				b.WriteString("\n")
				fallthrough
			case n == 0:
				fmt.Fprintf(b, "  lat (%s)   : ", u.unit)
			default:
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "%s=%3.2f%%", latDistLabels[i], p)
			n++
		}
		if n > 0 {
			b.WriteString("\n")
		}
	}
}

// latDistUnit is one unit's part of a latency distribution: the unit as
// fio's normal output names it, its JSON key and the bucket counts.
type latDistUnit struct {
	unit, key string
	counts    []uint64
}

// latDistUnits splits dist by unit, nanoseconds first.
func latDistUnits(dist *workload.LatencyDist) [3]latDistUnit {
	return [3]latDistUnit{
		{"nsec", "latency_ns", dist.Nsec[:]},
		{"usec", "latency_us", dist.Usec[:]},
		{"msec", "latency_ms", dist.Msec[:]},
	}
}

// latDistLabels name fio's latency-distribution buckets by their upper
// bounds, in the bucket's unit.
var latDistLabels = [12]string{"2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"}

// jobLatDist is the job's completion latencies in fio's distribution
// buckets, reads and writes together (fio's io_u_lat_n/u/m).
func jobLatDist(j *workload.JobResult) workload.LatencyDist {
	var dist workload.LatencyDist
	dist.Merge(&j.Read.ClatDist)
	dist.Merge(&j.Write.ClatDist)
	return dist
}

// issuedRW is the number of reads and writes the job issued (fio's
// ddir_rw_sum(total_io_u)), what its distributions are percentages of.
func issuedRW(j *workload.JobResult) uint64 {
	return j.Read.Issued + j.Write.Issued
}

// depthPercents is fio's stat_calc_dist: each count as a percentage of
// total, at least 0.1 when not 0; all 0 when total is.
func depthPercents(counts *[7]uint64, total uint64) [7]float64 {
	var p [7]float64
	if total == 0 {
		return p
	}
	for i, n := range counts {
		p[i] = 100 * float64(n) / float64(total)
		if p[i] < 0.1 && n > 0 {
			p[i] = 0.1
		}
	}
	return p
}

// writeDepths writes the job's "IO depths", "submit", "complete" and
// "issued rwts" lines, as fio's show_thread_status_normal.
func writeDepths(b *bufio.Writer, j *workload.JobResult) {
	d := &j.Depths
	lines := []struct {
		head   string
		labels [7]string
		p      [7]float64
	}{
		{"  IO depths    : ", depthLevelLabels, depthPercents(&d.Level, issuedRW(j))},
		{"     submit    : ", depthCallLabels, depthPercents(&d.Submit, d.Submits)},
		{"     complete  : ", depthCallLabels, depthPercents(&d.Complete, d.Completes)},
	}
	for _, l := range lines {
		b.WriteString(l.head)
		for i, p := range l.p {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "%s=%3.1f%%", l.labels[i], p)
		}
		b.WriteString("\n")
	}
	reads, writes := j.Read.Issued, j.Write.Issued
	if j.UnifiedRW == unifiedMixed {
		// fio sums the directions' counts into the first.
		reads, writes = reads+writes, 0
	}
	fmt.Fprintf(b, "     issued rwts: total=%d,%d,0,%d short=%d,0,0,0 dropped=0,0,0,0\n",
		reads, writes, j.Sync.IssuedFsync, j.Sync.IssuedDatasync)
}

// depthLevelLabels and depthCallLabels name fio's depth buckets (the
// "IO depths" line, and the "submit" and "complete" lines).
var (
	depthLevelLabels = [7]string{"1", "2", "4", "8", "16", "32", ">=64"}
	depthCallLabels  = [7]string{"0", "4", "8", "16", "32", "64", ">=64"}
)

// integrityFigures formats the atomicity oracle's counts.
func integrityFigures(s *workload.IntegrityStats) string {
	return fmt.Sprintf("torn_reads=%d (pages=%d), stale_reads=%d (pages=%d)",
		s.TornReads, s.TornPages, s.StaleReads, s.StalePages)
}

// writeDirNormal writes one direction of a job, as fio's show_ddir_status;
// agg is the group's aggregate bandwidth in the direction.
func writeDirNormal(b *bufio.Writer, j *workload.JobResult, d direction, agg uint64) {
	runt := dirRuntimeMsec(j, d.stats)
	if runt == 0 {
		return
	}
	s := d.stats
	bw := 1000 * s.Bytes / runt
	iops := 1000 * s.Issued / runt
	bw1, bw2 := bwByBase(bw, j.KBBase)
	io1, _ := bytesByBase(s.Bytes, j.KBBase)
	// fio 3.33 ends every write line with its zoned-device count
	// (zbd_write_status); blksim's devices are not zoned.
	post := ""
	if d.stats == &j.Write {
		post = "; 0 zone resets"
	}
	iops1 := formatIOPS(iops)
	if d.both {
		// fio 3.33 formats the figures of unified_rw_reporting=both's
		// mixed line with no significant figures (its summed stats do
		// not get the job's sig_figs, nor unit_base), which leaves
		// "0" for each; the unit suffix is only the size's "B".
		iops1 = num2str(iops, 0, false, "")
		bw1 = num2str(bw, 0, j.KBBase != 1000, "")
		bw2 = num2str(bw, 0, j.KBBase == 1000, "")
		io1 = num2str(s.Bytes, 0, j.KBBase != 1000, "B")
	}
	fmt.Fprintf(b, "  %s: IOPS=%s, BW=%s (%s)(%s/%dmsec)%s\n",
		d.name, iops1, bw1, bw2, io1, runt, post)

	for _, l := range []struct {
		name string
		h    *latency.Histogram
	}{{"slat", &s.Slat}, {"clat", &s.Clat}, {" lat", &s.Lat}} {
		if l.h.Count() == 0 {
			continue
		}
		b.WriteString(latLine(l.name, uint64(l.h.Min()), uint64(l.h.Max()), l.h.Mean(), l.h.Stddev()))
	}
	if s.Clat.Count() > 0 && !j.NoClatPercentiles {
		ps, prec := jobPercentiles(j)
		b.WriteString(percentileBlock("clat", ps, prec, percentiles(&s.Clat, ps)))
	}
	if r := &s.BW; r.N > 0 {
		// KiB/s, or MiB/s above 1 GiB/s; min and max cut to integers.
		// With kb_base=1000 fio names the units kB and MB and switches
		// at 1000*1000 KiB/s (dividing by 1000), though the samples
		// stay in KiB/s.
		unit, big, kb := "KiB", "MiB", 1024.0
		if j.KBBase == 1000 {
			unit, big, kb = "kB", "MB", 1000
		}
		div := 1.0
		if r.Mean > kb*kb {
			unit, div = big, kb
		}
		fmt.Fprintf(b, "   bw (%5s/s): min=%5d, max=%5d, per=%3.2f%%, avg=%5.02f, stdev=%5.02f, samples=%d\n",
			unit, uint64(float64(r.Min)/div), uint64(float64(r.Max)/div), aggPercent(agg, r.Mean),
			r.Mean/div, r.Stddev()/div, r.N)
	}
	if r := &s.IOPS; r.N > 0 {
		fmt.Fprintf(b, "   iops        : min=%5d, max=%5d, avg=%5.02f, stdev=%5.02f, samples=%d\n",
			r.Min, r.Max, r.Mean, r.Stddev(), r.N)
	}
}

// aggPercent is fio's convert_agg_kbytes_percent: a job's mean bandwidth
// sample (KiB/s, cut to an integer) as a percentage of its group's
// aggregate bandwidth agg (bytes/s), at most 100; 100 when agg is 1 KiB/s
// or less.
func aggPercent(agg uint64, mean float64) float64 {
	if agg <= 1024 {
		return 100
	}
	return min(float64(int64(mean))*100/(float64(agg)/1024), 100)
}

// statusNames label the run status lines, right-aligned as fio's.
var statusNames = [2]string{"   READ", "  WRITE"}

// groupRun is fio's group_run_stats for one direction.
type groupRun struct {
	minRun, maxRun uint64 // msec
	minBW, maxBW   uint64 // bytes/s, per job
	ioBytes        uint64
}

// groupRuns is fio's group_run_stats of group g, per direction.
func groupRuns(g *workload.GroupResult) [2]groupRun {
	var runs [2]groupRun
	for ji := range g.Jobs {
		j := &g.Jobs[ji]
		for _, d := range directions(j) {
			runt := dirRuntimeMsec(j, d.stats)
			if runt == 0 || d.both {
				continue
			}
			gr := &runs[d.slot]
			bw := d.stats.Bytes * 1000 / runt
			if gr.maxRun == 0 {
				gr.minRun, gr.minBW = runt, bw
			}
			gr.minRun, gr.maxRun = min(gr.minRun, runt), max(gr.maxRun, runt)
			gr.minBW, gr.maxBW = min(gr.minBW, bw), max(gr.maxBW, bw)
			gr.ioBytes += d.stats.Bytes
		}
	}
	return runs
}

// agg is the group's aggregate bandwidth in bytes/s (fio's rs->agg): its
// bytes over its longest runtime; 0 without a runtime.
func (gr *groupRun) agg() uint64 {
	if gr.maxRun == 0 {
		return 0
	}
	return gr.ioBytes * 1000 / gr.maxRun
}

// groupAgg is group g's aggregate bandwidth per direction (groupRun.agg).
func groupAgg(g *workload.GroupResult) [2]uint64 {
	runs := groupRuns(g)
	return [2]uint64{runs[0].agg(), runs[1].agg()}
}

// writeGroupStatus writes a "Run status group" block, as fio's
// show_group_stats.
func writeGroupStatus(b *bufio.Writer, g *workload.GroupResult) {
	runs := groupRuns(g)
	fmt.Fprintf(b, "\nRun status group %d (all jobs):\n", g.GroupID)
	// fio's group takes the bitwise or of its jobs' unified_rw_reporting
	// modes (rs->unified_rw_rep |= ts->unified_rw_rep).
	mode := 0
	for ji := range g.Jobs {
		mode |= g.Jobs[ji].UnifiedRW
	}
	// fio's group status units follow the kb_base of the group's last
	// job (__show_run_stats sets rs->kb_base from each).
	kb := g.Jobs[len(g.Jobs)-1].KBBase
	var mixed groupRun
	var mixedAgg uint64
	for i, gr := range runs {
		if gr.maxRun == 0 {
			continue
		}
		name := statusNames[i]
		if mode == unifiedMixed {
			name = "  MIXED"
		}
		writeGroupLine(b, name, gr.agg(), &gr, kb)
		// fio's show_mixed_group_stats: the directions' bytes and
		// aggregates add up, the bandwidths and runtimes span both.
		if mixed.maxRun == 0 {
			mixed.minRun, mixed.minBW = gr.minRun, gr.minBW
		}
		mixed.minRun, mixed.maxRun = min(mixed.minRun, gr.minRun), max(mixed.maxRun, gr.maxRun)
		mixed.minBW, mixed.maxBW = min(mixed.minBW, gr.minBW), max(mixed.maxBW, gr.maxBW)
		mixed.ioBytes += gr.ioBytes
		mixedAgg += gr.agg()
	}
	if mode == unifiedBoth {
		if mixed.maxRun == 0 {
			// fio prints the line with its unset minima (all ones).
			mixed.minRun, mixed.minBW = math.MaxUint64, math.MaxUint64
		}
		writeGroupLine(b, "  MIXED", mixedAgg, &mixed, kb)
	}
}

// writeGroupLine writes one direction's line of a "Run status group"
// block, as fio's show_group_stats: name, the aggregate bandwidth agg and
// gr's figures, in the units of kb_base kb.
func writeGroupLine(b *bufio.Writer, name string, agg uint64, gr *groupRun, kb int64) {
	agg1, agg2 := bwByBase(agg, kb)
	min1, min2 := bwByBase(gr.minBW, kb)
	max1, max2 := bwByBase(gr.maxBW, kb)
	io1, io2 := bytesByBase(gr.ioBytes, kb)
	fmt.Fprintf(b, "%s: bw=%s (%s), %s-%s (%s-%s), io=%s (%s), run=%d-%dmsec\n",
		name, agg1, agg2, min1, max1, min2, max2,
		io1, io2, gr.minRun, gr.maxRun)
}

// writeEngineLine writes blksim's engine summary line.
func writeEngineLine(b *bufio.Writer, e *workload.EngineFigures, opt Options) {
	if opt.OmitWall {
		fmt.Fprintf(b, "blksim engine: %d simulated IOs, %d events, %.2f s simulated\n",
			e.SimulatedIOs, e.Events, e.SimulatedSeconds)
		return
	}
	fmt.Fprintf(b, "blksim engine: %d simulated IOs, %d events, %.2f s wall, %.2f s simulated, %.0f simulated IOs per wall second\n",
		e.SimulatedIOs, e.Events, e.WallSeconds, e.SimulatedSeconds, iosPerWallSecond(e))
}

// iosPerWallSecond is the simulation's speed, 0 when no wall time was
// recorded.
func iosPerWallSecond(e *workload.EngineFigures) float64 {
	if e.WallSeconds <= 0 {
		return 0
	}
	return float64(e.SimulatedIOs) / e.WallSeconds
}

// writeJournal writes the journal line of WriteNormal.
func writeJournal(b *bufio.Writer, j *fsmodel.JournalStats) {
	fmt.Fprintf(b, "\nJournal (%s): commits=%d, blocks written=%d (%d KiB), at %d MiB, %d MiB long\n",
		j.Kind, j.Commits, j.Blocks, j.Blocks*fsmodel.BlockSize>>10, j.Start*fsmodel.BlockSize>>20, j.Length*fsmodel.BlockSize>>20)
}

// writeWriteback writes the writeback section of WriteNormal.
func writeWriteback(b *bufio.Writer, w *workload.WritebackResult) {
	s := &w.Stats
	fmt.Fprintf(b, "\nWriteback: thresholds background=%d limit=%d pages, bandwidth estimate %.1f MiB/s\n",
		w.Background, w.Limit, float64(w.Bandwidth)*writeback.PageSize/(1<<20))
	var pages, calls []string
	for r := writeback.Reason(0); r < writeback.NumReasons; r++ {
		pages = append(pages, fmt.Sprintf("%s=%d", r, s.Written[r]))
		calls = append(calls, fmt.Sprintf("%s=%d", r, s.Calls[r]))
	}
	fmt.Fprintf(b, "  pages written: %s (writepages calls: %s)\n", strings.Join(pages, ", "), strings.Join(calls, ", "))
	if s.Serialized > 0 || s.Skips > 0 {
		fmt.Fprintf(b, "  lock rule: serialized=%d, skipped=%d (%d pages)\n", s.Serialized, s.Skips, s.SkippedPages)
	}
	if s.Errors > 0 {
		fmt.Fprintf(b, "  writepages errors=%d\n", s.Errors)
	}
	fmt.Fprintf(b, "  throttle: pauses=%d (%d at the limit), total=%.1f ms, longest=%.1f ms\n",
		s.Pauses, s.LimitPauses, float64(s.PauseTotal)/1e6, float64(s.PauseMax)/1e6)
}

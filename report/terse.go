package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/blksim/blksim/workload"
)

// DefaultTerseVersion is fio's default terse_version.
const DefaultTerseVersion = 3

// terseVersionOK reports whether fio has terse format version v.
func terseVersionOK(v int) bool { return v >= 2 && v <= 5 }

// terseVersion is opt's terse version, DefaultTerseVersion when unset.
func terseVersion(opt Options) int {
	if opt.TerseVersion == 0 {
		return DefaultTerseVersion
	}
	return opt.TerseVersion
}

// terseFioVersion stands where fio prints its version string (terse
// version 3 and later), as "fio version" does in the JSON output.
const terseFioVersion = "blksim"

// terseListLen is fio's FIO_IO_U_LIST_MAX_LEN: terse output always has
// this many percentile fields, the unused ones "0%=0".
const terseListLen = 20

// WriteTerse writes r in fio's terse, semicolon-separated format
// (--output-format=terse, --minimal), version opt.TerseVersion (2 to 5;
// 0 means 3, fio's default), as fio 3.33's show_thread_status_terse_all:
// one line per JobResult, groups in order, jobs that did no IO included.
// It returns an error for another version, or the first error from w.
//
// A line holds, separated by ';': the terse version and, from version 3
// on, the fio version (here "blksim"), the job name, group id and error;
// per direction (read and write, and trim from version 4 on and in
// version 2) the KiB moved, bandwidth in KiB/s, IOPS, runtime in msec,
// slat, clat and lat as min;max;mean;stddev in usec (integer division
// and %f), twenty clat percentiles as "P%=USEC" (fio's default seventeen
// then "0%=0"), then the bandwidth samples' min;max;agg%;mean;stddev
// (and in version 5 their count and the IOPS samples' figures); CPU use
// as the cpu line has it (usr%;sys%;ctx;majf;minf, page faults 0); the IO
// depth distribution (seven buckets);
// the latency distribution (ten usec buckets, the first with all the
// sub-microsecond latencies, and twelve msec buckets, each a percentage
// of all IOs); from version 3 on, per device of r.Disks, its name,
// read/write IOs, merges and ticks (msec), time in queue and
// utilisation; the description, if any (on a line of its own in version
// 2).
//
// Page faults, which blksim does not model, are 0. The bandwidth and
// IOPS sample fields, the IO depth and latency distributions are the
// job's (workload.DirStats.BW and IOPS, JobResult.Depths, ClatDist),
// computed as fio's stat.c does; a direction without samples has fio's
// zeros. A job that did no IO has a latency distribution whose first
// field is fio's "-nan%" (fio divides by zero there).
func WriteTerse(w io.Writer, r *workload.Result, opt Options) error {
	ver := terseVersion(opt)
	if !terseVersionOK(ver) {
		return fmt.Errorf("report: terse version %d: want 2, 3, 4 or 5", ver)
	}
	b := bufio.NewWriter(w)
	for gi := range r.Groups {
		agg := groupAgg(&r.Groups[gi])
		for ji := range r.Groups[gi].Jobs {
			writeJobTerse(b, &r.Groups[gi].Jobs[ji], agg, r.Disks, ver)
		}
	}
	return b.Flush()
}

// writeJobTerse writes one job's terse line; agg is its group's aggregate
// bandwidth per direction.
func writeJobTerse(b *bufio.Writer, j *workload.JobResult, agg [2]uint64, disks []workload.DiskResult, ver int) {
	errno, _ := j.ReportedError()
	if ver == 2 {
		fmt.Fprintf(b, "2;%s;%d;%d", j.Name, j.GroupID, errno)
	} else {
		fmt.Fprintf(b, "%d;%s;%s;%d;%d", ver, terseFioVersion, j.Name, j.GroupID, errno)
	}
	// unified_rw_reporting=mixed has only the mixed figures, in the
	// read fields; =both adds them after the trim fields.
	dirs := directions(j)
	for _, d := range dirs {
		if !d.both {
			writeDirTerse(b, j, d.stats, agg[d.slot], ver)
		}
	}
	if ver != 3 && j.UnifiedRW != unifiedMixed {
		writeDirTerse(b, j, &emptyDir, 0, ver)
	}
	for _, d := range dirs {
		if d.both {
			writeDirTerse(b, j, d.stats, agg[d.slot], ver)
		}
	}
	// CPU: usr, sys, context switches, major and minor faults (not
	// modelled: 0).
	usr, sys := j.CPU.Percent()
	fmt.Fprintf(b, ";%f%%;%f%%;%d;0;0", usr, sys, j.CPU.Ctx)

	total := issuedRW(j)
	for _, v := range depthPercents(&j.Depths.Level, total) {
		fmt.Fprintf(b, ";%3.1f%%", v)
	}
	dist := jobLatDist(j)
	var nsec uint64
	for _, n := range dist.Nsec {
		nsec += n
	}
	for i, n := range dist.Usec {
		p := latPercent(n, total)
		if i == 0 {
			// fio's stat_calc_lat_nu: the nsec buckets go into the
			// first usec one, a plain division (NaN without IOs).
			p += 100 * float64(nsec) / float64(total)
		}
		b.WriteString(";" + formatPercent(p))
	}
	for _, n := range dist.Msec {
		b.WriteString(";" + formatPercent(latPercent(n, total)))
	}
	if ver >= 3 {
		for i := range disks {
			d := &disks[i]
			s := &d.Stats
			fmt.Fprintf(b, ";%s;%d;%d;%d;%d;%d;%d;%d;%3.2f%%", d.Name, s.IOs[0], s.IOs[1],
				s.Merges[0], s.Merges[1], msec(s.Ticks[0]), msec(s.Ticks[1]), msec(s.TimeInQueue), utilPct(d))
		}
	}
	if j.Description != "" {
		if ver == 2 {
			b.WriteString("\n")
		}
		b.WriteString(";" + j.Description)
	}
	b.WriteString("\n")
}

// latPercent is fio's stat_calc_lat: n as a percentage of total, at least
// 0.01 when n is not 0; 0 when total is.
func latPercent(n, total uint64) float64 {
	if total == 0 {
		return 0
	}
	p := 100 * float64(n) / float64(total)
	if p < 0.01 && n > 0 {
		p = 0.01
	}
	return p
}

// formatPercent prints p as fio's "%3.2f%%", NaN as glibc's "-nan" (the
// NaN of x86's 0.0/0.0 has its sign bit set).
func formatPercent(p float64) string {
	if math.IsNaN(p) {
		return "-nan%"
	}
	return fmt.Sprintf("%3.2f%%", p)
}

// writeDirTerse writes one direction's fields, as fio's
// show_ddir_status_terse.
func writeDirTerse(b *bufio.Writer, j *workload.JobResult, d *workload.DirStats, agg uint64, ver int) {
	var bw, iops uint64
	runt := dirRuntimeMsec(j, d)
	if runt > 0 {
		bw = 1000 * d.Bytes / runt / 1024
		iops = 1000 * d.Issued / runt
	}
	fmt.Fprintf(b, ";%d;%d;%d;%d", d.Bytes>>10, bw, iops, runt)
	writeLatTerse(b, d.Slat.Count(), d.Slat.Min(), d.Slat.Max(), d.Slat.Mean(), d.Slat.Stddev())
	writeLatTerse(b, d.Clat.Count(), d.Clat.Min(), d.Clat.Max(), d.Clat.Mean(), d.Clat.Stddev())
	var vals []uint64
	ps, _ := jobPercentiles(j)
	if !j.NoClatPercentiles {
		vals = percentiles(&d.Clat, ps)
	}
	for i := range terseListLen {
		if i >= len(vals) {
			b.WriteString(";0%=0")
			continue
		}
		b.WriteString(";" + strconv.FormatFloat(ps[i], 'f', 6, 64) + "%=" + strconv.FormatUint(vals[i]/1000, 10))
	}
	writeLatTerse(b, d.Lat.Count(), d.Lat.Min(), d.Lat.Max(), d.Lat.Mean(), d.Lat.Stddev())
	// Bandwidth samples: min, max, percentage of the group's aggregate
	// (here with the aggregate cut to whole KiB/s), mean, stddev.
	bs := &d.BW
	if bs.N > 0 {
		p := 100.0
		if agg != 0 {
			p = min(bs.Mean*100/float64(agg/1024), 100)
		}
		fmt.Fprintf(b, ";%d;%d;%f%%;%f;%f", bs.Min, bs.Max, p, bs.Mean, bs.Stddev())
	} else {
		b.WriteString(";0;0;0.000000%;0.000000;0.000000")
	}
	if ver == 5 {
		// Their count, then the IOPS samples' min, max, mean, stddev and
		// count.
		fmt.Fprintf(b, ";%d", bs.N)
		io := &d.IOPS
		fmt.Fprintf(b, ";%d;%d;%f;%f;%d", io.Min, io.Max, io.Mean, io.Stddev(), io.N)
	}
}

// writeLatTerse writes min;max;mean;stddev of a latency in usec, as fio
// does (integer division for min and max), zeros without samples.
func writeLatTerse(b *bufio.Writer, n uint64, lo, hi int64, mean, dev float64) {
	if n == 0 {
		b.WriteString(";0;0;0.000000;0.000000")
		return
	}
	fmt.Fprintf(b, ";%d;%d;%f;%f", lo/1000, hi/1000, mean/1000, dev/1000)
}

package report

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/blksim/blksim/fsmodel"
	"github.com/blksim/blksim/internal/latency"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/workload"
	"github.com/blksim/blksim/writeback"
)

// WriteJSON writes r in the layout of fio's --output-format=json, with
// fio's field names and key order, followed by a top-level "blksim" object
// for what fio does not have. It returns the first error from w. r is only
// read. The output is valid JSON, indented as fio's ("key" : value, two
// spaces a level), with floats printed as fio's %f (six decimals).
//
// Top level: "fio version" ("blksim"), "timestamp" and "timestamp_ms" (0, to
// be deterministic), "time" (the fixed date of the normal output),
// "global options" (when the run had any: the [global]
// and command-line options, each name with its value as written, as fio
// 3.33's json_add_job_opts writes them: options without a value are left
// out, a job file's are in fio's parse order (filename last), a
// command-line job's start with its "name"), "jobs" (one object per
// JobResult, groups in order), "disk_util" (fio's per-device counters:
// "name", "read_ios", "write_ios", "read_merges", "write_merges", "read_ticks", "write_ticks", "in_queue" in
// msec, "util" in percent) when r.Disks is set, "blksim".
//
// Each job: "jobname", "groupid", "error", "eta" (0), "elapsed" (the
// run's simulated time in whole seconds, rounded up), "job options" (when its section
// gave any: those options, as "global options" are written), then
// "read", "write", "trim" and "sync", then "job_runtime" (msec). A direction
// has "io_bytes", "io_kbytes", "bw_bytes", "bw" (KiB/s), "iops" (float),
// "runtime" (msec), "total_ios" (IOs issued), "short_ios" (0, but for
// reads the fdatasync=N calls, where fio 3.33 counts them) and "drop_ios"
// (0), and the latency objects "slat_ns", "clat_ns" and "lat_ns" ("min",
// "max", "mean", "stddev", "N"; clat_ns also has "percentile" with fio's
// default list and keys such as "99.990000", when it has samples). Rates
// are computed as fio does, with integer division by the runtime in
// msec; they are 0 for a direction that moved no bytes or ran under 1 ms.
// "trim" is all zeros;
// "sync" has "total_ios" (the fsync=N calls) and "lat_ns" of the job's
// fsync=N and fdatasync=N calls (zero without them; "percentile" when it
// has samples and clat percentiles are on, and then with opt.Bins its json+
// "bins" too, as clat_ns has them). Then fio's CPU fields:
// "usr_cpu", "sys_cpu" (percent of the runtime), "ctx", and "majf" and
// "minf" (0: page faults are not modelled); the distributions
// "iodepth_level", "iodepth_submit", "iodepth_complete" (percent of IOs
// issued, of submitting calls, of reaping calls), "latency_ns",
// "latency_us" and "latency_ms" (completion latencies, percent of the
// reads and writes issued); "total_err" and "first_error" with
// continue_on_error; "latency_depth" (iodepth), "latency_target" and
// "latency_window" (0) and "latency_percentile" (100), as fio writes
// them without latency_target; "desc" when the job has a description.
// Each direction ends with fio's rate samples: "bw_min", "bw_max",
// "bw_agg" (the mean as a percentage of the group's aggregate
// bandwidth), "bw_mean", "bw_dev", "bw_samples" (KiB/s), and "iops_min",
// "iops_max", "iops_mean", "iops_stddev", "iops_samples" (all 0 without
// samples).
//
// "blksim": "seed"; "locks", one object per lock in r.Locks' order with
// "name", "kind", "read" and "write" ("acquisitions", "contentions",
// "wait_total_ns", "wait_max_ns", "wait_min_ns", "hold_total_ns",
// "hold_max_ns", "hold_min_ns", "spins", "spin_ns", "acq_bounces",
// "con_bounces") and "handoffs"; when r.CPUs is set, "cpus", per CPU
// "cpu" (its id), "usr_ns" and "sys_ns", and "spin_ns" (lock spinning,
// on no CPU);
// "real_device", only for a run on a real device (opt.Real): "name",
// "backend", "reads", "writes", "read_bytes", "write_bytes",
// "io_uring_enters", "errors", "corrupt_sectors" (with
// "first_corrupt_sector" and "first_corrupt_why" when non-zero),
// "foreign_sectors", "stale_sectors" and "interrupted";
// "integrity", only when the atomicity oracle ran (r.Integrity.On):
// "reads_checked", "torn_reads", "torn_pages", "stale_reads" and
// "stale_pages" for the whole run, and "jobs", one object per job (or
// group_reporting result) the oracle watched, with "jobname", "jobid",
// "groupid" and the same counts;
// "writeback", only when r.Writeback is set: "background_pages" and
// "limit_pages" (the dirty thresholds), "bandwidth_pages_per_second",
// "pages_written" and "writepages_calls" (reason -> count: "background",
// "periodic", "sync", "fsync"), "serialized", "skipped", "skipped_pages",
// "errors", "pauses", "limit_pauses", "pause_total_ns" and
// "pause_max_ns";
// "journal", only when the filesystem's journal committed (r.Journal):
// "kind" ("jbd2" or "xfs-log"), "commits", "blocks" (journal blocks
// written), "offset_bytes" and "size_bytes" (where it lies);
// "requests" for the first device: "read" and "write", each with "count",
// "bytes" and "sizes" (request bytes -> count) of dispatched requests, the
// same under "queued" for bios as they entered the queue, and "merges",
// plus "splits"; "devices", per device its iostat figures ("r/s" ...
// "%util", MiB and KiB units as in the normal output) and "requests"; and
// "engine" with "simulated_ios", "events", "simulated_seconds" and, unless
// opt.OmitWall, "wall_seconds" and "ios_per_wall_second".
func WriteJSON(w io.Writer, r *workload.Result, opt Options) error {
	root := new(jsonObject)
	root.add("fio version", "blksim")
	root.add("timestamp", 0)
	root.add("timestamp_ms", 0)
	root.add("time", fixedDate)
	if globals := optionsJSON(r.GlobalOptions); len(globals.keys) > 0 {
		root.add("global options", globals)
	}
	// fio's per-job "elapsed" is the run's time so far in whole seconds,
	// rounded up (eta.c calc_thread_status), when its jobs have ended:
	// here the simulated time until the last job ended, not the
	// writeback the engine simulates after it.
	elapsed := (uint64(r.Engine.JobsSeconds*1000) + 999) / 1000
	jobs := []any{}
	for gi := range r.Groups {
		agg := groupAgg(&r.Groups[gi])
		for ji := range r.Groups[gi].Jobs {
			jobs = append(jobs, jobJSON(&r.Groups[gi].Jobs[ji], agg, elapsed, opt.Bins))
		}
	}
	root.add("jobs", jobs)
	if len(r.Disks) > 0 {
		root.add("disk_util", diskUtilJSON(r.Disks))
	}
	root.add("blksim", blksimJSON(r, opt))

	b := bufio.NewWriter(w)
	writeJSONValue(b, root, 0)
	b.WriteString("\n")
	return b.Flush()
}

// optionsJSON is fio's "job options" or "global options" as fio 3.33
// writes them (json_add_job_opts): each option's name and value, in the
// order fio parsed them (workload.JobSpec.Options), except that options
// without a value (bare flags such as group_reporting) are left out.
func optionsJSON(opts []workload.OptionValue) *jsonObject {
	o := new(jsonObject)
	for _, v := range opts {
		if v.Value != "" {
			o.add(v.Name, v.Value)
		}
	}
	return o
}

// jobJSON is one entry of "jobs".
func jobJSON(j *workload.JobResult, agg [2]uint64, elapsed uint64, bins bool) *jsonObject {
	o := new(jsonObject)
	o.add("jobname", j.Name)
	o.add("groupid", j.GroupID)
	errno, _ := j.ReportedError()
	o.add("error", errno)
	o.add("eta", 0)
	o.add("elapsed", elapsed)
	if opts := optionsJSON(j.Options); len(opts.keys) > 0 {
		o.add("job options", opts)
	}

	dirs := directions(j)
	for _, d := range dirs {
		if !d.both {
			o.add(d.name, dirJSON(j, d, agg[d.slot], bins))
		}
	}
	// unified_rw_reporting=mixed leaves out trim and sync (fio's
	// add_ddir_status_json reports only the first direction); =both adds
	// the mixed direction after them.
	if j.UnifiedRW != unifiedMixed {
		o.add("trim", dirJSON(j, direction{stats: &emptyDir}, 0, false))
		sync := new(jsonObject)
		sync.add("total_ios", j.Sync.IssuedFsync)
		syncLat := latJSON(&j.Sync.Lat, clatPercentiles(j))
		if bins && !j.NoClatPercentiles {
			addBins(syncLat, &j.Sync.Lat)
		}
		sync.add("lat_ns", syncLat)
		o.add("sync", sync)
	}
	for _, d := range dirs {
		if d.both {
			o.add(d.name, dirJSON(j, d, agg[d.slot], bins))
		}
	}
	o.add("job_runtime", jobRuntimeMsec(j))
	usr, sys := j.CPU.Percent()
	o.add("usr_cpu", usr)
	o.add("sys_cpu", sys)
	o.add("ctx", j.CPU.Ctx)
	o.add("majf", 0)
	o.add("minf", 0)
	d := &j.Depths
	o.add("iodepth_level", percentsJSON(depthLevelLabels[:], depthPercents(&d.Level, issuedRW(j))))
	o.add("iodepth_submit", percentsJSON(depthCallLabels[:], depthPercents(&d.Submit, d.Submits)))
	o.add("iodepth_complete", percentsJSON(depthCallLabels[:], depthPercents(&d.Complete, d.Completes)))
	dist := jobLatDist(j)
	total := issuedRW(j)
	for _, u := range latDistUnits(&dist) {
		l := new(jsonObject)
		for i, n := range u.counts {
			l.add(latDistLabels[i], latPercent(n, total))
		}
		o.add(u.key, l)
	}
	if j.ContinueOnError {
		o.add("total_err", j.TotalErr)
		o.add("first_error", j.FirstError)
	}
	// fio's latency-target figures: no latency_target in blksim.
	o.add("latency_depth", max(j.IODepth, 1))
	o.add("latency_target", 0)
	o.add("latency_percentile", 100.0)
	o.add("latency_window", 0)
	if j.Description != "" {
		o.add("desc", j.Description)
	}
	return o
}

// percentsJSON is one of fio's depth-distribution objects: each bucket's
// label and percentage.
func percentsJSON(labels []string, p [7]float64) *jsonObject {
	o := new(jsonObject)
	for i, v := range p {
		o.add(labels[i], v)
	}
	return o
}

// dirJSON is one direction of a job, as fio's add_ddir_status_json.
func dirJSON(j *workload.JobResult, dir direction, agg uint64, bins bool) *jsonObject {
	d := dir.stats
	var bwBytes uint64
	var iops float64
	runt := dirRuntimeMsec(j, d)
	if runt > 0 {
		bwBytes = 1000 * d.Bytes / runt
		iops = 1000.0 * float64(d.Issued) / float64(runt)
	}
	o := new(jsonObject)
	o.add("io_bytes", d.Bytes)
	o.add("io_kbytes", d.Bytes>>10)
	o.add("bw_bytes", bwBytes)
	o.add("bw", bwBytes/1024)
	o.add("iops", iops)
	o.add("runtime", runt)
	o.add("total_ios", d.Issued)
	short := uint64(0)
	if d == &j.Read || dir.mixed {
		// fio 3.33 counts fdatasync=N calls here (see SyncStats), and
		// the mixed direction sums the read one's.
		short = j.Sync.IssuedDatasync
	}
	o.add("short_ios", short)
	o.add("drop_ios", 0)
	o.add("slat_ns", latJSON(&d.Slat, nil))
	clat := latJSON(&d.Clat, clatPercentiles(j))
	if bins && !j.NoClatPercentiles {
		addBins(clat, &d.Clat)
	}
	o.add("clat_ns", clat)
	o.add("lat_ns", latJSON(&d.Lat, nil))
	bw, bwAgg := &d.BW, 0.0
	if bw.N > 0 {
		bwAgg = aggPercent(agg, bw.Mean)
	}
	o.add("bw_min", bw.Min)
	o.add("bw_max", bw.Max)
	o.add("bw_agg", bwAgg)
	o.add("bw_mean", bw.Mean)
	o.add("bw_dev", bw.Stddev())
	o.add("bw_samples", bw.N)
	io := &d.IOPS
	o.add("iops_min", io.Min)
	o.add("iops_max", io.Max)
	o.add("iops_mean", io.Mean)
	o.add("iops_stddev", io.Stddev())
	o.add("iops_samples", io.N)
	return o
}

// addBins adds fio's json+ "bins" object to the latency object o: every
// non-empty bucket of h, by its value in ns. fio 3.33 adds them where it
// adds percentiles, so nothing is added when h has no samples.
func addBins(o *jsonObject, h *latency.Histogram) {
	if h.Count() == 0 {
		return
	}
	b := new(jsonObject)
	h.Buckets(func(v int64, n uint64) { b.add(strconv.FormatInt(v, 10), n) })
	o.add("bins", b)
}

// clatPercentiles is the job's percentile list for its completion (and
// sync) latencies, nil with clat_percentiles=0.
func clatPercentiles(j *workload.JobResult) []float64 {
	if j.NoClatPercentiles {
		return nil
	}
	ps, _ := jobPercentiles(j)
	return ps
}

// latJSON is a latency object, as fio's add_ddir_lat_json, with a
// "percentile" object for the percentiles ps when it has samples (nil ps:
// none, as fio adds them to clat only by default).
func latJSON(h *latency.Histogram, ps []float64) *jsonObject {
	o := new(jsonObject)
	o.add("min", h.Min())
	o.add("max", h.Max())
	o.add("mean", h.Mean())
	o.add("stddev", h.Stddev())
	o.add("N", h.Count())
	if ps != nil && h.Count() > 0 {
		p := new(jsonObject)
		for i, v := range percentiles(h, ps) {
			p.add(strconv.FormatFloat(ps[i], 'f', 6, 64), v)
		}
		o.add("percentile", p)
	}
	return o
}

// blksimJSON is the top-level "blksim" object.
func blksimJSON(r *workload.Result, opt Options) *jsonObject {
	o := new(jsonObject)
	o.add("seed", r.Seed)
	locks := []any{}
	for i := range r.Locks {
		l := &r.Locks[i]
		lo := new(jsonObject)
		lo.add("name", l.Name)
		lo.add("kind", l.Kind)
		lo.add("read", lockModeJSON(&l.Read))
		lo.add("write", lockModeJSON(&l.Write))
		lo.add("handoffs", l.Handoffs)
		locks = append(locks, lo)
	}
	o.add("locks", locks)
	if len(r.CPUs) > 0 {
		o.add("cpus", cpusJSON(r.CPUs))
		o.add("spin_ns", int64(r.SpinTime))
	}
	if len(r.Disks) > 0 {
		o.add("requests", requestsJSON(&r.Disks[0]))
		devs := []any{}
		for i := range r.Disks {
			devs = append(devs, iostatJSON(&r.Disks[i]))
		}
		o.add("devices", devs)
	}

	if r.Integrity.On {
		o.add("integrity", integrityJSON(r))
	}
	if r.Writeback != nil {
		o.add("writeback", writebackJSON(r.Writeback))
	}
	if j := r.Journal; j != nil {
		jo := new(jsonObject)
		jo.add("kind", j.Kind.String())
		jo.add("commits", j.Commits)
		jo.add("blocks", j.Blocks)
		jo.add("offset_bytes", j.Start*fsmodel.BlockSize)
		jo.add("size_bytes", j.Length*fsmodel.BlockSize)
		o.add("journal", jo)
	}
	if d := opt.Real; d != nil {
		o.add("real_device", realDeviceJSON(d))
	}

	e := &r.Engine
	eo := new(jsonObject)
	eo.add("simulated_ios", e.SimulatedIOs)
	eo.add("events", e.Events)
	eo.add("simulated_seconds", e.SimulatedSeconds)
	if !opt.OmitWall {
		eo.add("wall_seconds", e.WallSeconds)
		eo.add("ios_per_wall_second", iosPerWallSecond(e))
	}
	o.add("engine", eo)
	return o
}

// realDeviceJSON is "blksim"."real_device".
func realDeviceJSON(d *RealDevice) *jsonObject {
	o := new(jsonObject)
	o.add("name", d.Name)
	o.add("backend", d.Backend)
	o.add("reads", d.Reads)
	o.add("writes", d.Writes)
	o.add("read_bytes", d.ReadBytes)
	o.add("write_bytes", d.WriteBytes)
	o.add("flushes", d.Flushes)
	o.add("io_uring_enters", d.Enters)
	o.add("errors", d.Errors)
	o.add("corrupt_sectors", d.CorruptSectors)
	if d.CorruptSectors > 0 {
		o.add("first_corrupt_sector", d.FirstCorrupt)
		o.add("first_corrupt_why", d.FirstCorruptWhy)
	}
	o.add("foreign_sectors", d.ForeignSectors)
	o.add("stale_sectors", d.StaleSectors)
	o.add("interrupted", d.Interrupted)
	return o
}

// integrityJSON is "blksim"."integrity": the run's totals and one entry
// per job (or group_reporting result) the oracle watched.
func integrityJSON(r *workload.Result) *jsonObject {
	o := new(jsonObject)
	integrityCounts(o, &r.Integrity)
	jobs := []any{}
	for gi := range r.Groups {
		for ji := range r.Groups[gi].Jobs {
			j := &r.Groups[gi].Jobs[ji]
			if !j.Integrity.On {
				continue
			}
			jo := new(jsonObject)
			jo.add("jobname", j.Name)
			jo.add("jobid", j.JobID)
			jo.add("groupid", j.GroupID)
			integrityCounts(jo, &j.Integrity)
			jobs = append(jobs, jo)
		}
	}
	o.add("jobs", jobs)
	return o
}

// integrityCounts adds the oracle's counts to o.
func integrityCounts(o *jsonObject, s *workload.IntegrityStats) {
	o.add("reads_checked", s.Reads)
	o.add("torn_reads", s.TornReads)
	o.add("torn_pages", s.TornPages)
	o.add("stale_reads", s.StaleReads)
	o.add("stale_pages", s.StalePages)
}

// lockModeJSON is one mode of a lock; times in nanoseconds.
func lockModeJSON(m *sim.LockModeStats) *jsonObject {
	o := new(jsonObject)
	o.add("acquisitions", m.Acquisitions)
	o.add("contentions", m.Contentions)
	o.add("wait_total_ns", int64(m.WaitTotal))
	o.add("wait_max_ns", int64(m.WaitMax))
	o.add("wait_min_ns", int64(m.WaitMin))
	o.add("hold_total_ns", int64(m.HoldTotal))
	o.add("hold_max_ns", int64(m.HoldMax))
	o.add("hold_min_ns", int64(m.HoldMin))
	o.add("spins", m.Spins)
	o.add("spin_ns", int64(m.SpinTime))
	o.add("acq_bounces", m.AcqBounces)
	o.add("con_bounces", m.ConBounces)
	return o
}

// jsonObject is a JSON object that keeps its keys in insertion order. Values
// are string, int, int64, uint64, float64, *jsonObject or []any of those.
type jsonObject struct {
	keys []string
	vals []any
}

// add appends the pair key: v.
func (o *jsonObject) add(key string, v any) {
	o.keys = append(o.keys, key)
	o.vals = append(o.vals, v)
}

// writeJSONValue writes v as fio's json_print_value does, at indent level
// (the line v starts on is indented level*2 spaces; its members one level
// more). Empty objects and arrays are written "{}" and "[]"; non-finite
// floats, which JSON cannot hold, as 0.000000.
func writeJSONValue(b *bufio.Writer, v any, level int) {
	switch v := v.(type) {
	case string:
		writeJSONString(b, v)
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int:
		b.WriteString(strconv.Itoa(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case uint64:
		b.WriteString(strconv.FormatUint(v, 10))
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0
		}
		b.WriteString(strconv.FormatFloat(v, 'f', 6, 64))
	case *jsonObject:
		if len(v.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range v.keys {
			if i > 0 {
				b.WriteString(",\n")
			}
			indent(b, level+1)
			writeJSONString(b, k)
			b.WriteString(" : ")
			writeJSONValue(b, v.vals[i], level+1)
		}
		b.WriteString("\n")
		indent(b, level)
		b.WriteString("}")
	case []any:
		if len(v) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, e := range v {
			if i > 0 {
				b.WriteString(",\n")
			}
			indent(b, level+1)
			writeJSONValue(b, e, level+1)
		}
		b.WriteString("\n")
		indent(b, level)
		b.WriteString("]")
	default:
		panic("report: unsupported JSON value type")
	}
}

func indent(b *bufio.Writer, level int) {
	b.WriteString(strings.Repeat("  ", level))
}

// writeJSONString writes s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, everything
// else as is.
func writeJSONString(b *bufio.Writer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r) // utf8.RuneError for invalid bytes
		}
	}
	b.WriteByte('"')
}

// writebackJSON is "blksim"."writeback".
func writebackJSON(w *workload.WritebackResult) *jsonObject {
	s := &w.Stats
	o := new(jsonObject)
	o.add("background_pages", w.Background)
	o.add("limit_pages", w.Limit)
	o.add("bandwidth_pages_per_second", w.Bandwidth)
	pages, calls := new(jsonObject), new(jsonObject)
	for r := writeback.Reason(0); r < writeback.NumReasons; r++ {
		pages.add(r.String(), s.Written[r])
		calls.add(r.String(), s.Calls[r])
	}
	o.add("pages_written", pages)
	o.add("writepages_calls", calls)
	o.add("serialized", s.Serialized)
	o.add("skipped", s.Skips)
	o.add("skipped_pages", s.SkippedPages)
	o.add("errors", s.Errors)
	o.add("pauses", s.Pauses)
	o.add("limit_pauses", s.LimitPauses)
	o.add("pause_total_ns", int64(s.PauseTotal))
	o.add("pause_max_ns", int64(s.PauseMax))
	return o
}

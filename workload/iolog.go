package workload

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/internal/latency"
	"github.com/blksim/blksim/sim"
)

// This file holds fio's log files (write_bw_log, write_lat_log,
// write_iops_log, write_hist_log): which files a job writes, what it
// records in them while it runs, and their text. Facts about fio come
// from its HOWTO ("Log File Formats"), its stat.c and iolog.c, and fio
// 3.33's own logs.

// LogRequest is one of fio's write_*_log options.
type LogRequest struct {
	// Write is set when the job has the option.
	Write bool
	// Name is the option's value, the start of the log's file name; ""
	// (the option given bare or empty) stands for the job's name.
	Name string
}

// LogOptions are a job's log options. The zero value writes no logs.
type LogOptions struct {
	// BW, Lat, IOPS and Hist are write_bw_log, write_lat_log,
	// write_iops_log and write_hist_log.
	BW, Lat, IOPS, Hist LogRequest
	// AvgMsec is log_avg_msec: 0 logs every IO; otherwise each entry is
	// the average (MaxValue: log_max_value=1, the largest) of the
	// values of one direction over a window of this many milliseconds.
	AvgMsec int64
	// MaxValue is log_max_value.
	MaxValue bool
	// Offset and Prio are log_offset and log_prio: the entries' lines add
	// the IO's offset, and print its priority in hex.
	Offset, Prio bool
	// Shared is per_job_logs=0: the file names leave out the job number,
	// so that the jobs of one name write one file.
	Shared bool
	// HistMsec is log_hist_msec: how often the histogram log takes an
	// entry (0: never, and write_hist_log's file stays empty).
	// HistCoarseness is log_hist_coarseness, 0 to 6: each entry adds up
	// 2^HistCoarseness neighbouring bins.
	HistMsec       int64
	HistCoarseness int
}

// wanted reports whether the job writes a log.
func (o *LogOptions) wanted() bool {
	return o.BW.Write || o.Lat.Write || o.IOPS.Write || o.Hist.Write
}

// LogKind is the kind of a log file: what its values are.
type LogKind int

const (
	// LogBW is write_bw_log's NAME_bw: bandwidth in KiB/s (per IO, its
	// bytes times 10^6 over its completion latency in ns, as fio
	// computes it).
	LogBW LogKind = iota
	// LogLat is write_lat_log's NAME_lat: total latency in ns.
	LogLat
	// LogSlat is write_lat_log's NAME_slat: submission latency in ns
	// (empty for the sync engines, which have none).
	LogSlat
	// LogClat is write_lat_log's NAME_clat: completion latency in ns.
	LogClat
	// LogIOPS is write_iops_log's NAME_iops: IOs per second (1 per IO).
	LogIOPS
	// LogHist is write_hist_log's NAME_clat_hist: completion latency
	// histograms.
	LogHist
)

var logKindNames = [...]string{LogBW: "bw", LogLat: "lat", LogSlat: "slat", LogClat: "clat", LogIOPS: "iops", LogHist: "clat_hist"}

// String returns the kind's part of fio's file name: bw, lat, slat,
// clat, iops or clat_hist.
func (k LogKind) String() string {
	if k >= 0 && int(k) < len(logKindNames) {
		return logKindNames[k]
	}
	return fmt.Sprintf("LogKind(%d)", int(k))
}

// LogEntry is one line of a log other than a histogram log.
type LogEntry struct {
	// TimeMS is when the entry was taken, in whole milliseconds since the
	// job's start (after its ramp_time), truncated as fio's mtime_since.
	TimeMS uint64
	// Value is the latency, rate or count the log's kind says.
	Value uint64
	// Dir is fio's data direction: 0 read, 1 write (2, trim, is not
	// modelled; syncs are never logged).
	Dir uint8
	// BS and Offset are the IO's size and offset in its file; 0 in an
	// entry that averages a window (log_avg_msec) or is an interval's
	// rate.
	BS, Offset uint64
}

// HistBin is one bin of a histogram log entry with its count.
type HistBin struct {
	// Index is the bin in fio's latency bucket order, 0 to
	// latency.NumBuckets-1.
	Index int
	// Count is how many completions since the direction's last entry
	// fell in it.
	Count uint64
}

// HistEntry is one line of a histogram log.
type HistEntry struct {
	// TimeMS, Dir and BS are as LogEntry's (BS is the size of the IO
	// whose completion took the entry).
	TimeMS uint64
	Dir    uint8
	BS     uint64
	// Bins are the bins with a count, in increasing Index order; the
	// others are zero.
	Bins []HistBin
}

// IOLog is one log file of one job, as fio 3.33 writes it.
type IOLog struct {
	// Path is the file's name: NAME_KIND.N.log, N the job's number
	// (JobID+1, counting every job and clone of the run from 1), or
	// NAME_KIND.log with per_job_logs=0; relative to the current
	// directory unless NAME makes it absolute.
	Path string
	// Kind is what the log holds.
	Kind LogKind
	// JobID is the job's JobResult.JobID.
	JobID int
	// Offset and Prio are the job's log_offset and log_prio: which
	// columns the lines have.
	Offset, Prio bool
	// Coarseness is the job's log_hist_coarseness (histogram logs).
	Coarseness int
	// Entries are a non-histogram log's lines, in the order fio writes
	// them; Hist a histogram log's.
	Entries []LogEntry
	Hist    []HistEntry
}

// WriteTo writes the log's text to w, line for line as fio 3.33 writes
// it: "TIME, VALUE, DIR, BS, PRIO" per entry, with the offset before
// PRIO with log_offset=1 and PRIO in hex (0x0000) with log_prio=1 (blksim
// models no IO priorities: PRIO is always 0); a histogram log's lines are
// "TIME, DIR, BS, " and the counts of its bins, grouped by 2^coarseness.
func (l *IOLog) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	var line []byte
	if l.Kind == LogHist {
		stride := 1 << l.Coarseness
		for _, e := range l.Hist {
			line = fmt.Appendf(line[:0], "%d, %d, %d, ", e.TimeMS, e.Dir, e.BS)
			bin := 0
			for j := 0; j < latency.NumBuckets; j += stride {
				// fio's last group is the last stride bins.
				lo := min(j, latency.NumBuckets-stride)
				var sum uint64
				for bin < len(e.Bins) && e.Bins[bin].Index < lo {
					bin++
				}
				for k := bin; k < len(e.Bins) && e.Bins[k].Index < lo+stride; k++ {
					sum += e.Bins[k].Count
				}
				line = strconv.AppendUint(line, sum, 10)
				if j+stride < latency.NumBuckets {
					line = append(line, ", "...)
				} else {
					line = append(line, '\n')
				}
			}
			if _, err := bw.Write(line); err != nil {
				return cw.n, err
			}
		}
	} else {
		for _, e := range l.Entries {
			line = strconv.AppendUint(line[:0], e.TimeMS, 10)
			line = append(line, ", "...)
			line = strconv.AppendUint(line, e.Value, 10)
			line = append(line, ", "...)
			line = strconv.AppendUint(line, uint64(e.Dir), 10)
			line = append(line, ", "...)
			line = strconv.AppendUint(line, e.BS, 10)
			if l.Offset {
				line = append(line, ", "...)
				line = strconv.AppendUint(line, e.Offset, 10)
			}
			if l.Prio {
				line = append(line, ", 0x0000\n"...)
			} else {
				line = append(line, ", 0\n"...)
			}
			if _, err := bw.Write(line); err != nil {
				return cw.n, err
			}
		}
	}
	err := bw.Flush()
	return cw.n, err
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// logFileName is fio's gen_log_name: PREFIX_KIND.N.log, or PREFIX_KIND.log
// when the jobs share their logs (per_job_logs=0).
func logFileName(prefix string, kind LogKind, jobNumber int, shared bool) string {
	if shared {
		return fmt.Sprintf("%s_%s.log", prefix, kind)
	}
	return fmt.Sprintf("%s_%s.%d.log", prefix, kind, jobNumber)
}

// logPrefix is the start of a log's file name: the option's value, or
// the job's name if the value is empty (fio's make_log_name).
func (s *JobSpec) logPrefix(r LogRequest) string {
	if r.Name != "" {
		return r.Name
	}
	return s.Name
}

// plannedLog is a log file a job will write, with the option that asks
// for it.
type plannedLog struct {
	kind   LogKind
	option string
	path   string
}

// plannedLogs lists the log files the job numbered jobNumber (from 1)
// writes, in the order fio's add_job sets them up: write_lat_log's lat,
// slat and clat (each unless disable_lat, disable_slat, disable_clat),
// write_hist_log's, write_bw_log's and write_iops_log's.
func (s *JobSpec) plannedLogs(jobNumber int) []plannedLog {
	o := &s.Logs
	var out []plannedLog
	add := func(r LogRequest, option string, kind LogKind) {
		out = append(out, plannedLog{kind, option, logFileName(s.logPrefix(r), kind, jobNumber, o.Shared)})
	}
	if o.Lat.Write {
		if !s.DisableLat {
			add(o.Lat, "write_lat_log", LogLat)
		}
		if !s.DisableSlat {
			add(o.Lat, "write_lat_log", LogSlat)
		}
		if !s.DisableClat {
			add(o.Lat, "write_lat_log", LogClat)
		}
	}
	if o.Hist.Write {
		add(o.Hist, "write_hist_log", LogHist)
	}
	if o.BW.Write {
		add(o.BW, "write_bw_log", LogBW)
	}
	if o.IOPS.Write {
		add(o.IOPS, "write_iops_log", LogIOPS)
	}
	return out
}

// CheckLogFiles calls check with every log file path the jobs of specs
// will write (each once, in order), so that a caller can find a file
// that cannot be written before anything runs. The first error check
// returns comes back as an ErrJob error naming the option that asks for
// the file and where it was set.
func CheckLogFiles(specs []JobSpec, check func(path string) error) error {
	seen := map[string]bool{}
	id := 0
	for i := range specs {
		s := &specs[i]
		for c := 0; c < s.NumJobs; c++ {
			id++
			for _, p := range s.plannedLogs(id) {
				if seen[p.path] {
					continue
				}
				seen[p.path] = true
				if err := check(p.path); err != nil {
					return s.errorf(p.option, "log file %s: %v", p.path, err)
				}
			}
		}
	}
	return nil
}

// logRec records one log of a running job as fio's add_log_sample does.
type logRec struct {
	log *IOLog
	// avgMsec is the log's window (log_avg_msec), 0 for an entry per
	// value; maxValue picks the window's largest value over its mean.
	avgMsec  uint64
	maxValue bool
	// win are the values of the current window, per direction, and
	// last where each direction's window started (fio's avg_window and
	// avg_last).
	win  [2]RateSamples
	last [2]uint64
}

// add records value v of an IO in direction dir of bs bytes at offset
// off, at ms milliseconds into the job. Per IO it is an entry. In a
// window the value is kept, and once the direction's window is
// avgMsec long the direction's values become one entry at ms (fio 3.33
// closes each direction's window on its own) and the next window starts
// at the last multiple of avgMsec.
func (l *logRec) add(ms, v uint64, dir int, bs, off int64) {
	if l == nil {
		return
	}
	if l.avgMsec == 0 {
		l.log.Entries = append(l.log.Entries, LogEntry{TimeMS: ms, Value: v, Dir: uint8(dir), BS: uint64(bs), Offset: uint64(off)})
		return
	}
	l.win[dir].Add(v)
	if ms < l.last[dir] || ms-l.last[dir] < l.avgMsec {
		return
	}
	l.flush(dir, ms)
	l.last[dir] = ms - ms%l.avgMsec
}

// flush makes direction dir's window an entry at ms, if it has values.
func (l *logRec) flush(dir int, ms uint64) {
	w := &l.win[dir]
	if w.N > 0 {
		v := w.Max
		if !l.maxValue {
			v = uint64(w.Mean + 0.5)
		}
		l.log.Entries = append(l.log.Entries, LogEntry{TimeMS: ms, Value: v, Dir: uint8(dir)})
	}
	*w = RateSamples{}
}

// finish ends the log of a job that ended at ms: what its windows hold
// becomes entries, reads first (fio's finalize_logs).
func (l *logRec) finish(ms uint64) {
	if l == nil || l.avgMsec == 0 {
		return
	}
	for dir := range l.win {
		l.flush(dir, ms)
	}
}

// histRec records a job's completion latency histogram log as fio's
// add_clat_sample does with log_hist_msec.
type histRec struct {
	log  *IOLog
	msec uint64
	// noBins is clat_percentiles=0: fio keeps no latency buckets, and
	// its entries count nothing.
	noBins bool
	// counts are, per direction, the completions per bucket since the
	// direction's last entry (nil until one); last is the direction's
	// window start, 0 until a completion after the job's first
	// millisecond (fio's hist_last).
	counts [2][]uint64
	last   [2]uint64
}

// add records a completion latency of ns in direction dir, of an IO of
// bs bytes, at ms milliseconds into the job. Once the direction's
// window is msec long, an entry counts the completions since the last
// one, this one included, and the next window starts msec after the
// last one did.
func (h *histRec) add(ms uint64, ns int64, dir int, bs int64) {
	if h == nil || h.msec == 0 {
		return
	}
	if h.counts[dir] == nil {
		h.counts[dir] = make([]uint64, latency.NumBuckets)
	}
	if !h.noBins {
		h.counts[dir][latency.BucketIndex(ns)]++
	}
	if h.last[dir] == 0 {
		h.last[dir] = ms
	}
	window := ms - h.last[dir]
	if window < h.msec {
		return
	}
	e := HistEntry{TimeMS: ms, Dir: uint8(dir), BS: uint64(bs)}
	for i, c := range h.counts[dir] {
		if c != 0 {
			e.Bins = append(e.Bins, HistBin{Index: i, Count: c})
			h.counts[dir][i] = 0
		}
	}
	h.log.Hist = append(h.log.Hist, e)
	h.last[dir] = ms - (window - h.msec)
}

// jobLogs are the logs a running job records.
type jobLogs struct {
	bw, lat, slat, clat, iops *logRec
	hist                      *histRec
	// perIOBW and perIOIOPS are set when the bandwidth (IOPS) log takes
	// an entry per IO (write_*_log without log_avg_msec): fio then takes
	// the job's bandwidth (IOPS) samples per IO too, not per interval.
	perIOBW, perIOIOPS bool
	// all are the logs, in plannedLogs order.
	all []*IOLog
}

// newJobLogs sets up the logs of job number id+1 of spec s.
func newJobLogs(s *JobSpec, id int) *jobLogs {
	o := &s.Logs
	if !o.wanted() {
		return nil
	}
	l := &jobLogs{}
	for _, p := range s.plannedLogs(id + 1) {
		log := &IOLog{Path: p.path, Kind: p.kind, JobID: id, Offset: o.Offset, Prio: o.Prio, Coarseness: o.HistCoarseness}
		l.all = append(l.all, log)
		rec := &logRec{log: log, avgMsec: uint64(o.AvgMsec), maxValue: o.MaxValue}
		switch p.kind {
		case LogLat:
			l.lat = rec
		case LogSlat:
			l.slat = rec
		case LogClat:
			l.clat = rec
		case LogHist:
			l.hist = &histRec{log: log, msec: uint64(o.HistMsec), noBins: s.NoClatPercentiles}
		case LogBW:
			l.bw = rec
			l.perIOBW = o.AvgMsec == 0
		case LogIOPS:
			l.iops = rec
			l.perIOIOPS = o.AvgMsec == 0
		}
	}
	return l
}

// logMS is now in whole milliseconds since the job's statistics started
// (fio's epoch, which ramp_time moves to the ramp's end).
func (j *job) logMS(now sim.Time) uint64 {
	if now <= j.statsFrom {
		return 0
	}
	return uint64(now-j.statsFrom) / 1e6
}

// logDone records an IO of bs bytes at file offset off in direction dir
// that completed at now, with total latency lat and completion latency
// clat (ns), in the job's logs and, for a per-IO bandwidth or IOPS log,
// in d's rate samples, as fio's account_io_completion does: the lat
// entry, the clat entry and histogram, then per IO a bandwidth sample
// (unless disable_bw) and an IOPS sample (unless gtod_reduce, or every
// one of disable_clat, disable_slat and disable_bw, is set).
func (j *job) logDone(d *DirStats, dir blockdev.Op, bs, off, lat, clat int64, now sim.Time) {
	l := j.logs
	if l == nil {
		return
	}
	s := j.spec
	ms := j.logMS(now)
	di := int(dir)
	if !s.DisableLat {
		l.lat.add(ms, uint64(lat), di, bs, off)
	}
	if !s.DisableClat {
		l.clat.add(ms, uint64(clat), di, bs, off)
		l.hist.add(ms, clat, di, bs)
	}
	if l.perIOBW && !s.DisableBW {
		var rate uint64
		if clat > 0 {
			rate = uint64(bs) * 1000000 / uint64(clat)
		}
		d.BW.Add(rate)
		l.bw.add(ms, rate, di, bs, off)
	}
	if l.perIOIOPS && !(s.DisableClat && s.DisableSlat && s.DisableBW) {
		d.IOPS.Add(1)
		l.iops.add(ms, 1, di, bs, off)
	}
}

// logSubmitted records the submission latency slat (ns) of an IO of bs
// bytes at file offset off in direction dir, submitted at now, in the
// job's slat log.
func (j *job) logSubmitted(dir blockdev.Op, bs, off, slat int64, now sim.Time) {
	if j.logs == nil || j.spec.DisableSlat {
		return
	}
	j.logs.slat.add(j.logMS(now), uint64(slat), int(dir), bs, off)
}

// finishLogs ends the job's logs when it ends at now: the windows of its
// latency logs become entries, and its interval rate entries are put in
// time order (reads before writes at one time, as fio's helper takes
// them).
func (j *job) finishLogs(now sim.Time) {
	l := j.logs
	if l == nil {
		return
	}
	ms := j.logMS(now)
	for _, r := range []*logRec{l.lat, l.slat, l.clat} {
		r.finish(ms)
	}
	for _, r := range []*logRec{l.bw, l.iops} {
		if r == nil || l.perIO(r.log) {
			continue
		}
		slices.SortStableFunc(r.log.Entries, func(a, b LogEntry) int {
			return cmp.Or(cmp.Compare(a.TimeMS, b.TimeMS), cmp.Compare(a.Dir, b.Dir))
		})
	}
}

// perIO reports whether log takes an entry per value (fio's per-unit
// logs: every log but an interval bandwidth or IOPS log, whose entries
// are the job's rate samples). fio writes these when their job ends, and
// the others when the whole run ends.
func (l *jobLogs) perIO(log *IOLog) bool {
	switch log.Kind {
	case LogBW:
		return l.perIOBW
	case LogIOPS:
		return l.perIOIOPS
	}
	return true
}

// collectLogs returns the run's logs in the order fio writes them: those
// it writes when a job ends, job by job as the jobs ended, then the
// interval bandwidth and IOPS logs job by job. Logs that share a file
// (per_job_logs=0) go into it in this order.
func (r *runState) collectLogs() []*IOLog {
	var out []*IOLog
	for _, j := range r.endOrder {
		if j.logs == nil || j.res.SetupFailed {
			continue
		}
		for _, log := range j.logs.all {
			if j.logs.perIO(log) {
				out = append(out, log)
			}
		}
	}
	for _, j := range r.jobs {
		if j.logs == nil || j.res.SetupFailed {
			continue
		}
		for _, log := range j.logs.all {
			if !j.logs.perIO(log) {
				out = append(out, log)
			}
		}
	}
	return out
}

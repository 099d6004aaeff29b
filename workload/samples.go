package workload

import (
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
)

// defaultAvgTime is fio's default bwavgtime and iopsavgtime.
const defaultAvgTime = 500 * time.Millisecond

// rateSampler turns one direction's completions into fio's rate samples
// (stat.c __add_samples, which fio's helper thread runs every interval):
// the job's run is cut into intervals of avg from start, and each interval
// in which something completed gives one sample, its amount times 1000
// over the interval in ms (then over 1024 for KiB/s). An interval with
// nothing gives none. Counting completions into the current interval and
// closing it when one falls in a later interval gives the same samples
// without a timer event per interval.
//
// fio's helper takes the sample when the interval ends, and only while
// the job still runs a phase; so does the sampler. A closed interval is
// pending until the job shows it was still running at its end: by
// issuing an IO at or after it (before its deadline), or, at the end,
// by a run that ended after it. A runtime that ends on an interval's end
// loses that interval, as fio's helper, coming a moment later, does.
type rateSampler struct {
	start sim.Time
	avg   sim.Time
	kib   bool
	// deadline is the job's (-1 for none): IOs issued at or after it do
	// not show it was still running.
	deadline sim.Time
	cur      int64  // the interval being filled
	n        uint64 // bytes or IOs completed in it
	out      *RateSamples
	// log, if set, takes each sample as an entry of direction dir at
	// its interval's end (an interval bandwidth or IOPS log).
	log *IOLog
	dir uint8
	// pend is the rate of a closed interval waiting for the job to show
	// it still ran at pendEnd; hasPend says there is one.
	pend    uint64
	pendEnd sim.Time
	hasPend bool
}

// init starts the sampler at start with interval avg (0: fio's default),
// for a job with deadline (-1: none), recording into out.
func (s *rateSampler) init(start sim.Time, avg time.Duration, kib bool, deadline sim.Time, out *RateSamples) {
	if avg <= 0 {
		avg = defaultAvgTime
	}
	*s = rateSampler{start: start, avg: sim.Time(avg), kib: kib, deadline: deadline, out: out}
}

// add counts n completed at now.
func (s *rateSampler) add(now sim.Time, n uint64) {
	if s.out == nil || now < s.start {
		return
	}
	if k := int64((now - s.start) / s.avg); k != s.cur {
		s.close(now)
		s.cur = k
	}
	s.n += n
}

// issue notes that the job issued an IO at now: a pending interval that
// ended by then counts.
func (s *rateSampler) issue(now sim.Time) {
	if s.hasPend && now >= s.pendEnd && (s.deadline < 0 || now < s.deadline) {
		s.emit(s.pend, s.pendEnd)
		s.hasPend = false
	}
}

// emit takes sample v of the interval that ended at end.
func (s *rateSampler) emit(v uint64, end sim.Time) {
	s.out.Add(v)
	if s.log != nil {
		ms := uint64(end-s.start) / uint64(time.Millisecond)
		s.log.Entries = append(s.log.Entries, LogEntry{TimeMS: ms, Value: v, Dir: s.dir})
	}
}

// close ends the current interval at now, a completion in a later one:
// a pending interval counts if it ended before its deadline (the job was
// still completing IO after it), and the current one, if anything
// completed in it, becomes the pending sample.
func (s *rateSampler) close(now sim.Time) {
	if s.hasPend && s.pendEnd <= now && (s.deadline < 0 || s.pendEnd < s.deadline) {
		s.emit(s.pend, s.pendEnd)
	}
	s.hasPend = false
	if s.n == 0 {
		return
	}
	s.pend, s.pendEnd, s.hasPend = s.rate(), s.intervalEnd(), true
	s.n = 0
}

// rate is the current interval's sample.
func (s *rateSampler) rate() uint64 {
	r := s.n * 1000 / uint64(s.avg/sim.Time(time.Millisecond))
	if s.kib {
		r /= 1024
	}
	return r
}

// intervalEnd is when the current interval ends.
func (s *rateSampler) intervalEnd() sim.Time {
	return s.start + sim.Time(s.cur+1)*s.avg
}

// finish ends the sampling for a job whose run ended at end: the pending
// and the current interval count if they ended before it.
func (s *rateSampler) finish(end sim.Time) {
	if s.out == nil {
		return
	}
	if s.hasPend && s.pendEnd < end {
		s.emit(s.pend, s.pendEnd)
	}
	if s.n > 0 && s.intervalEnd() < end {
		s.emit(s.rate(), s.intervalEnd())
	}
	s.hasPend = false
	s.n = 0
	s.out = nil
}

// rateSamplers are a job's samplers: bandwidth and IOPS, per direction.
type rateSamplers [2]struct{ bw, iops rateSampler }

// startSamplers starts the job's samplers at from (when its statistics
// start). With a bandwidth (IOPS) log the samples are the log's entries
// too; with a per-IO one they are taken per IO instead (logDone). As in
// fio, log_avg_msec is the interval of a job with such a log when
// bwavgtime (iopsavgtime) is not given. The log's own window, the
// shorter of the two, is then never longer than the interval, so each
// sample closes one and is an entry, at the interval's end.
func (j *job) startSamplers(from sim.Time) {
	s := j.spec
	bwAvg, iopsAvg := s.BWAvgTime, s.IOPSAvgTime
	var bwLog, iopsLog *IOLog
	if l := j.logs; l != nil {
		avg := time.Duration(s.Logs.AvgMsec) * time.Millisecond
		if l.bw != nil && !l.perIOBW {
			bwLog = l.bw.log
			if bwAvg == 0 {
				bwAvg = avg
			}
		}
		if l.iops != nil && !l.perIOIOPS {
			iopsLog = l.iops.log
			if iopsAvg == 0 {
				iopsAvg = avg
			}
		}
	}
	for dir, d := range [2]*DirStats{&j.res.Read, &j.res.Write} {
		if l := j.logs; l == nil || !l.perIOBW {
			j.samplers[dir].bw.init(from, bwAvg, true, j.deadline, &d.BW)
			j.samplers[dir].bw.log, j.samplers[dir].bw.dir = bwLog, uint8(dir)
		}
		if l := j.logs; l == nil || !l.perIOIOPS {
			j.samplers[dir].iops.init(from, iopsAvg, false, j.deadline, &d.IOPS)
			j.samplers[dir].iops.log, j.samplers[dir].iops.dir = iopsLog, uint8(dir)
		}
	}
}

// sampleIssued notes that the job issued an IO at now.
func (j *job) sampleIssued(now sim.Time) {
	for i := range j.samplers {
		j.samplers[i].bw.issue(now)
		j.samplers[i].iops.issue(now)
	}
}

// sampleDone counts an IO of bs bytes in direction dir that completed at
// now in the job's rate samples (fio's this_io_bytes and this_io_blocks).
func (j *job) sampleDone(dir blockdev.Op, bs int64, now sim.Time) {
	i := 0
	if dir == blockdev.OpWrite {
		i = 1
	}
	j.samplers[i].bw.add(now, uint64(bs))
	j.samplers[i].iops.add(now, 1)
}

// finishSamplers ends the job's rate samples for a run that ended at end.
func (j *job) finishSamplers(end sim.Time) {
	for i := range j.samplers {
		j.samplers[i].bw.finish(end)
		j.samplers[i].iops.finish(end)
	}
}

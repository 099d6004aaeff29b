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
// the job still runs; a job whose runtime ends on an interval's end is
// done by the time the helper looks, so that interval gives none. Here an
// interval counts if the job issued an IO at or after its end: a closed
// interval waits (pending) until an IO is issued after its end, or is
// dropped at the end of the run.
type rateSampler struct {
	start sim.Time
	avg   sim.Time
	kib   bool
	cur   int64  // the interval being filled
	n     uint64 // bytes or IOs completed in it
	out   *RateSamples
	// pend is the rate of a closed interval waiting for an IO issued at
	// or after pendEnd; hasPend says there is one.
	pend    uint64
	pendEnd sim.Time
	hasPend bool
	// issued is when the job last issued an IO.
	issued sim.Time
}

// init starts the sampler at start with interval avg (0: fio's default),
// recording into out.
func (s *rateSampler) init(start sim.Time, avg time.Duration, kib bool, out *RateSamples) {
	if avg <= 0 {
		avg = defaultAvgTime
	}
	*s = rateSampler{start: start, avg: sim.Time(avg), kib: kib, out: out, issued: -1}
}

// add counts n completed at now.
func (s *rateSampler) add(now sim.Time, n uint64) {
	if s.out == nil || now < s.start {
		return
	}
	if k := int64((now - s.start) / s.avg); k != s.cur {
		s.close()
		s.cur = k
	}
	s.n += n
}

// issue notes that the job issued an IO at now.
func (s *rateSampler) issue(now sim.Time) {
	s.issued = now
	s.settle()
}

// settle records the pending interval if the job issued an IO at or
// after its end.
func (s *rateSampler) settle() {
	if s.hasPend && s.issued >= s.pendEnd {
		s.out.Add(s.pend)
		s.hasPend = false
	}
}

// close ends the current interval: if anything completed in it, its rate
// becomes the pending sample (one still pending that no IO confirmed is
// dropped).
func (s *rateSampler) close() {
	if s.n == 0 {
		return
	}
	s.settle()
	rate := s.n * 1000 / uint64(s.avg/sim.Time(time.Millisecond))
	if s.kib {
		rate /= 1024
	}
	s.pend, s.pendEnd, s.hasPend = rate, s.start+sim.Time(s.cur+1)*s.avg, true
	s.n = 0
	s.settle()
}

// finish ends the sampling: the pending and the current interval count
// if the job issued an IO at or after their ends.
func (s *rateSampler) finish() {
	if s.out == nil {
		return
	}
	s.close()
	s.settle()
	s.hasPend = false
	s.n = 0
	s.out = nil
}

// rateSamplers are a job's samplers: bandwidth and IOPS, per direction.
type rateSamplers [2]struct{ bw, iops rateSampler }

// start starts the job's samplers at from (when its statistics start).
func (j *job) startSamplers(from sim.Time) {
	s := j.spec
	for dir, d := range [2]*DirStats{&j.res.Read, &j.res.Write} {
		j.samplers[dir].bw.init(from, s.BWAvgTime, true, &d.BW)
		j.samplers[dir].iops.init(from, s.IOPSAvgTime, false, &d.IOPS)
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

// finishSamplers ends the job's rate samples.
func (j *job) finishSamplers() {
	for i := range j.samplers {
		j.samplers[i].bw.finish()
		j.samplers[i].iops.finish()
	}
}

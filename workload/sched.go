package workload

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
)

// This file holds when jobs start and end (stonewall, wait_for,
// startdelay, exitall) and how they pace themselves (rate, rate_iops,
// rate_process, rate_min, thinktime), after fio's backend.c and io_u.c.

// waitToStart blocks the job until it may start: the jobs before its
// stonewall and the jobs it waits for have ended, and its startdelay
// (counted from the start of the run, as fio counts it) has passed. It
// returns the time the job starts, and false if exitall ended the job
// before it started. A job with nothing to wait for starts at the run's
// start without touching the engine.
func (j *job) waitToStart(t *sim.Task) (sim.Time, bool) {
	r := j.r
	s := j.spec
	delay := s.StartDelay[0]
	if hi := s.StartDelay[1]; hi > delay {
		delay += time.Duration(randUpTo(j.aux, int64(hi-delay)))
	}
	if j.fence == 0 && len(j.waitFor) == 0 && delay == 0 {
		return r.start, !j.terminate && j.filesSetUp()
	}
	for {
		// Run the charged CPU time before looking: WaitQueue.Wait would
		// run it after, and a job ending meanwhile would be missed.
		t.Flush()
		if j.terminate || j.mayStart() {
			break
		}
		r.ended.Wait(t)
	}
	if until := r.start + sim.Time(delay); !j.terminate && t.Now()+sim.Time(t.Owed()) < until {
		j.sleepUntil(t, until)
	}
	if j.terminate || !j.filesSetUp() {
		return 0, false
	}
	return t.Now() + sim.Time(t.Owed()), true
}

// filesSetUp reports whether the job's file setup, which fio does as the job
// starts, let it run: a failed one (setupErr) is the job's error, before
// any IO.
func (j *job) filesSetUp() bool {
	if j.setupErr == "" {
		return true
	}
	j.res.Error, j.res.ErrorMsg = int(j.setupErrno), j.setupErr
	return false
}

// mayStart reports whether the jobs this one waits for have ended.
func (j *job) mayStart() bool {
	for _, o := range j.r.jobs[:j.fence] {
		if !o.ended {
			return false
		}
	}
	for _, o := range j.waitFor {
		if !o.ended {
			return false
		}
	}
	return true
}

// end marks the job ended, ends the jobs its exitall names, and wakes the
// jobs waiting to start.
func (j *job) end(t *sim.Task) {
	j.ended = true
	j.r.lastEnd = max(j.r.lastEnd, t.Now())
	if j.r.allEnded() {
		// The journal's later commit falls after fio's report.
		j.r.fsys.SetJournalTimer(false)
		if j.r.opt.EndWithJobs {
			_ = j.r.fsys.Close()
		}
	}
	j.res.Ended = int64(t.Now() - j.r.start)
	j.finishLogs(t.Now())
	j.r.endOrder = append(j.r.endOrder, j)
	ct := t.CPUTimes()
	j.res.CPU = CPUUsage{User: ct.User, Sys: ct.Sys, Ctx: ct.Voluntary + ct.Involuntary, Runtime: j.res.Runtime}
	if j.spec.ExitAllOnError && j.res.Error != 0 {
		// fio_terminate_threads(TERMINATE_ALL, TERMINATE_ALL).
		for _, o := range j.r.jobs {
			if o != j && !o.ended {
				o.stop()
			}
		}
	}
	if j.spec.ExitAll && j.started {
		// fio_terminate_threads(groupid, exit_what).
		for _, o := range j.r.jobs {
			if o == j || o.ended {
				continue
			}
			switch j.spec.ExitWhat {
			case "all":
				o.stop()
			case "stonewall":
				if o.started {
					o.stop()
				}
			default:
				if o.group == j.group {
					o.stop()
				}
			}
		}
	}
	j.r.ended.WakeAll()
}

// sleep sleeps for d, returning early if the job is told to terminate.
func (j *job) sleep(t *sim.Task, d time.Duration) {
	j.sleepUntil(t, t.Now()+sim.Time(t.Owed())+sim.Time(d))
}

// usecSleep is fio's usec_sleep (rate waits, thinktime): d is slept in
// nanosleep calls of at most about two seconds, and a job told to
// terminate notices only when the current one ends. fio asks nanosleep
// for one whole second plus d's fraction of a second (the whole seconds
// are capped at one, not the fraction), then, what is left being whole
// seconds less fio's timer granularity, for just under two seconds each.
func (j *job) usecSleep(t *sim.Task, d time.Duration) {
	for d > 0 && !j.terminate {
		chunk := fioSleepChunk(d)
		j.noWake = true
		j.sleep(t, chunk)
		j.noWake = false
		d -= chunk
	}
}

// fioSleepChunk is how much of d one of usec_sleep's nanosleep calls
// sleeps.
func fioSleepChunk(d time.Duration) time.Duration {
	switch frac := d % time.Second; {
	case d < time.Second:
		return d
	case frac != 0:
		return time.Second + frac
	}
	return min(d, 2*time.Second)
}

// sleepUntil sleeps until the engine's time is until, returning early if
// the job is told to terminate meanwhile. The job waits on its own queue
// and a timer wakes it, early by the host's wake latency so that it runs
// again at until; resuming costs the context switch, as any sleep.
func (j *job) sleepUntil(t *sim.Task, until sim.Time) {
	t.Flush()
	if j.terminate || t.Now() >= until {
		return
	}
	j.sleepGen++
	j.sleeping = true
	lat := sim.Time(t.Engine().Host().WakeLatency)
	j.r.e.At(max(until-lat, t.Now()), j, j.sleepGen)
	for j.sleeping {
		j.wake.Wait(t)
	}
}

// Fire is the timer of sleepUntil: it wakes the job unless a terminate
// already did (gen is then stale).
func (j *job) Fire(gen uint64) {
	if j.sleeping && gen == j.sleepGen {
		j.sleeping = false
		j.wake.WakeOne()
	}
}

// stop tells the job to terminate (fio's td->terminate), waking it if it
// sleeps.
func (j *job) stop() {
	j.terminate = true
	if j.sleeping && !j.noWake {
		j.sleeping = false
		j.wake.WakeOne()
	}
	if !j.started {
		// A job waiting to start looks at terminate when woken.
		j.r.ended.WakeAll()
	}
}

// rateState paces a job to rate= or rate_iops= (fio io_u.c rate_ddir,
// usec_for_io) and checks rate_min= (backend.c check_min_rate).
type rateState struct {
	on       bool
	checkMin bool
	start    sim.Time
	bps      [2]int64 // bytes per second per direction; 0: no limit
	issued   [2]int64 // bytes issued per direction
	next     [2]sim.Time
	poisson  [2]int64 // microseconds since start of the last IO (poisson)

	// rate_min: bytes and IOs done per direction and at the last sample.
	doneBytes, doneIOs [2]int64
	lastBytes, lastIOs [2]int64
	lastSample         [2]sim.Time
}

func (rs *rateState) init(s *JobSpec) {
	for d := range 2 {
		switch {
		case s.Rate[d] > 0:
			rs.bps[d] = s.Rate[d]
		case s.RateIOPS[d] > 0:
			rs.bps[d] = s.RateIOPS[d] * minBSDir(s, blockdev.Op(d))
		}
		if rs.bps[d] > 0 {
			rs.on = true
		}
		if s.RateMin[d] > 0 || s.RateIOPSMin[d] > 0 {
			rs.checkMin = true
		}
	}
}

// rateDir is fio's rate_ddir: it returns the direction of the next IO,
// switching to the other direction of a mixed job if that one is behind
// its rate, or sleeping (after waiting for the IOs in flight, unless
// io_submit_mode=offload) until one of them is due. ok is false if the
// runtime ran out or the job was told to terminate meanwhile.
func (j *job) rateDir(t *sim.Task, dir blockdev.Op) (blockdev.Op, bool) {
	s := j.spec
	rs := &j.rate
	now := t.Now() + sim.Time(t.Owed())
	if rs.next[dir] <= now {
		return dir, true
	}
	odir := 1 - dir
	mixed := s.RW.HasRead() && s.RW.HasWrite()
	oshare := s.RWMixRead
	if odir == blockdev.OpWrite {
		oshare = 100 - s.RWMixRead
	}
	var wait sim.Time
	switch {
	case mixed && oshare > 0 && rs.next[odir] <= now:
		return odir, true
	case mixed && oshare > 0 && rs.next[odir] < rs.next[dir]:
		wait = rs.next[odir] - now
		dir = odir
	default:
		wait = rs.next[dir] - now
	}
	if !s.SubmitOffload && j.quiesce != nil {
		j.quiesce()
		now = t.Now() + sim.Time(t.Owed())
		wait = max(rs.next[dir]-now, 0)
	}
	if j.deadline >= 0 && now+wait > j.deadline {
		if now > j.deadline {
			return dir, false
		}
		wait = j.deadline - now
	}
	j.usecSleep(t, time.Duration(wait))
	now = t.Now() + sim.Time(t.Owed())
	if j.deadline >= 0 && now > j.deadline || j.terminate {
		return dir, false
	}
	return dir, true
}

// rateIssue accounts an IO of bs bytes about to be issued in dir against
// its rate and sets when the next one is due (fio usec_for_io).
func (j *job) rateIssue(dir blockdev.Op, bs int64) {
	rs := &j.rate
	bps := rs.bps[dir]
	if bps == 0 {
		return
	}
	s := j.spec
	if s.RatePoisson {
		iops := bps / max(minBSDir(s, dir), 1)
		if iops > 0 {
			// fio: (1000000 / iops) * -logf(uniform), in microseconds.
			u := j.aux.Float64()
			gap := float64(1000000/iops) * -math.Log(1-u)
			rs.poisson[dir] += int64(gap)
		}
		rs.next[dir] = rs.start + sim.Time(rs.poisson[dir])*sim.Time(time.Microsecond)
		return
	}
	rs.issued[dir] += bs
	// bytes / bps seconds, exactly.
	hi, lo := bits.Mul64(uint64(rs.issued[dir]), uint64(time.Second))
	ns := uint64(math.MaxInt64)
	if hi < uint64(bps) {
		ns, _ = bits.Div64(hi, lo, uint64(bps))
	}
	rs.next[dir] = rs.start + sim.Time(min(ns, math.MaxInt64/2))
}

// thinkState counts IOs for thinktime (fio backend.c handle_thinktime).
type thinkState struct {
	on        bool
	start     sim.Time
	completed int64
	issued    int64
	last      int64
}

// afterIO runs what fio does after each IO when thinktime or rate_min is
// set: a stall every thinktime_blocks IOs (waiting first for the IOs in
// flight), and the rate_min check of each direction.
func (j *job) afterIO(t *sim.Task) stopReason {
	s := j.spec
	if j.think.on {
		n := j.think.completed
		if s.ThinkTimeIssue {
			n = j.think.issued
		}
		if n >= j.think.last+int64(max(s.ThinkTimeBlocks, 1)) {
			if j.quiesce != nil {
				j.quiesce()
			}
			j.thinkStall(t)
			j.think.last = n
			if s.ThinkTimeIssue {
				j.think.last = j.think.issued
			} else {
				j.think.last = j.think.completed
			}
		}
	}
	if j.rate.checkMin {
		now := t.Now() + sim.Time(t.Owed())
		if now >= j.statsFrom {
			for d := range 2 {
				if msg := j.checkMinRate(now, blockdev.Op(d)); msg != "" {
					j.fail(fmt.Errorf("%s: %w", msg, syscall.EIO))
					return stopFailed
				}
			}
		}
	}
	return running
}

// thinkStall spins for thinktime_spin and sleeps for the rest of
// thinktime, neither past the job's runtime.
func (j *job) thinkStall(t *sim.Task) {
	s := j.spec
	now := t.Now() + sim.Time(t.Owed())
	left := func(d time.Duration) time.Duration {
		if j.deadline < 0 {
			return d
		}
		return max(min(d, time.Duration(j.deadline-now)), 0)
	}
	spin := left(min(s.ThinkTimeSpin, s.ThinkTime))
	if spin > 0 {
		t.CPUUser(spin) // fio's thinktime_spin busy-loops in user space
	}
	now = t.Now() + sim.Time(t.Owed())
	if rest := left(s.ThinkTime - spin); rest > 0 {
		j.usecSleep(t, rest)
	}
}

// checkMinRate is fio's check_min_rate for one direction: after a settle
// time of 2s, every rate_cycle the bandwidth (or IOPS) since the last
// sample must be at least rate_min (or rate_iops_min). It returns the
// failure message, or "".
func (j *job) checkMinRate(now sim.Time, dir blockdev.Op) string {
	s := j.spec
	rs := &j.rate
	if s.RateMin[dir] == 0 && s.RateIOPSMin[dir] == 0 {
		return ""
	}
	if now-rs.start < sim.Time(2*time.Second) {
		return ""
	}
	cycle := s.RateCycle
	if cycle == 0 {
		cycle = time.Second
	}
	bytes, ios := rs.doneBytes[dir], rs.doneIOs[dir]
	// fio checks once a sample with some IO is taken: a direction that
	// does no IO is never checked.
	if rs.lastBytes[dir] != 0 || rs.lastIOs[dir] != 0 {
		spent := time.Duration(now - rs.lastSample[dir])
		if spent < cycle {
			return ""
		}
		ms := spent.Milliseconds()
		if s.Rate[dir] > 0 || s.RateMin[dir] > 0 {
			if bytes < rs.lastBytes[dir] {
				return fmt.Sprintf("rate_min=%dB/s not met, only transferred %dB", s.RateMin[dir], bytes)
			}
			rate := int64(0)
			if ms > 0 {
				rate = (bytes - rs.lastBytes[dir]) * 1000 / ms
			}
			if rate < s.RateMin[dir] {
				return fmt.Sprintf("rate_min=%dB/s not met, got %dB/s", s.RateMin[dir], rate)
			}
		} else {
			rate := int64(0)
			if ms > 0 {
				rate = (ios - rs.lastIOs[dir]) * 1000 / ms
			}
			if rate < s.RateIOPSMin[dir] {
				return fmt.Sprintf("rate_iops_min=%d not met, got %d IOPS", s.RateIOPSMin[dir], rate)
			}
		}
	}
	rs.lastBytes[dir], rs.lastIOs[dir] = bytes, ios
	rs.lastSample[dir] = now
	return ""
}

// randUpTo returns a uniform value in [0, n], n >= 0.
func randUpTo(rng *rand.Rand, n int64) int64 {
	if n == math.MaxInt64 {
		return rng.Int64()
	}
	return rng.Int64N(n + 1)
}

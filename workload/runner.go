package workload

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/fsmodel"
	"github.com/blksim/blksim/sim"
)

// RunOptions tune how jobs run on a stack.
type RunOptions struct {
	// AppPerIO is the CPU time the application spends between two IOs
	// (fio's own bookkeeping); it is not part of any latency.
	AppPerIO time.Duration
	// Interrupt, if set, is called once the jobs exist, with a function
	// that ends every job as exitall does: each finishes the IO it has in
	// flight and reports what it did. Call it on the engine goroutine (from
	// an event), e.g. when the wall clock is interrupted.
	Interrupt func(stopAll func())
	// NoIntegrity turns the atomicity oracle off. By default it watches
	// every file that some job reads and some job writes, and each job's
	// JobResult.Integrity counts the torn and stale reads it found (see
	// IntegrityStats). The oracle never changes the simulated run.
	NoIntegrity bool
	// EndWithJobs stops the filesystem's background work (the writeback
	// flusher, the journal's commit task) once every job has ended, so
	// the run ends with the jobs and the IO they have in flight: for a
	// wall-clock run, where the flusher's periodic writeback of what the
	// jobs left dirty would take real seconds. Those pages are not
	// written (the kernel would write them after fio exits). Off, the
	// run goes on until writeback has cleaned them.
	EndWithJobs bool

	// onIO, if set, is called when each read or write of a job ends
	// successfully (verify reads included), with the job's id, the file's
	// name and the IO's direction, file offset and length. Tests use it to
	// see where the IO went.
	onIO func(job int, file string, dir blockdev.Op, off, n int64)
}

// stallLimit is how long Run lets a run go on with only daemon work left
// (the writeback flusher's periodic timer, writers polling in
// balance_dirty_pages) while jobs are unfinished, before it reports a
// model deadlock (sim.Engine.SetStallLimit). Every legitimate wait of a
// job involves other events: device completions, its own timers
// (runtime, startdelay, thinktime, rate), other jobs. The longest
// stretch of daemon work alone a live job can see is a wait for periodic
// writeback to pick up an inode, dirty_expire plus dirty_writeback (35 s
// by default): the limit is an hour of simulated time, or twice that
// wait if it is longer. On the simulated clock a deadlocked run then
// costs some hundreds of idle flusher wake-ups; on a real device's wall
// clock it takes the hour.
func stallLimit(fsys *fsmodel.FS) time.Duration {
	limit := time.Hour
	if wb := fsys.Writeback(); wb != nil {
		l := wb.Limits()
		limit = max(limit, 2*(l.DirtyExpire+l.DirtyWriteback))
	}
	return limit
}

// deadlockError is a stall (sim.StallError) in the words of Run's other
// deadlock error.
type deadlockError struct{ stall *sim.StallError }

func (d deadlockError) Error() string {
	return fmt.Sprintf("workload: %d jobs blocked forever at %v (a model deadlock): %s",
		len(d.stall.Tasks), d.stall.Since, d.stall.TaskNames())
}

func (d deadlockError) Unwrap() error { return d.stall }

// Is makes a stall match ErrDeadlock.
func (d deadlockError) Is(target error) bool { return target == ErrDeadlock }

// ErrDeadlock is matched (errors.Is) by Run's error for jobs blocked
// forever, a model deadlock: whether the engine stalled past its stall
// limit (the error then also wraps the *sim.StallError) or ran out of
// events with tasks still blocked.
var ErrDeadlock = errors.New("model deadlock")

// runEngine runs e to the end with the stall limit, unless the caller set
// one, and reports jobs left blocked (a model deadlock) as an error.
func runEngine(e *sim.Engine, limit time.Duration) error {
	if e.StallLimit() == 0 {
		e.SetStallLimit(limit)
		defer e.SetStallLimit(0)
	}
	if err := e.Run(-1); err != nil {
		var stall *sim.StallError
		if errors.As(err, &stall) {
			return deadlockError{stall}
		}
		return err
	}
	if n := e.Tasks(); n != 0 {
		return fmt.Errorf("workload: %d jobs blocked forever at %v (a %w)", n, e.Now(), ErrDeadlock)
	}
	return nil
}

// ErrJob is wrapped by errors about a job that cannot run as specified.
var ErrJob = errors.New("job cannot run")

// runState is one Run call: the jobs and what they share.
type runState struct {
	e     *sim.Engine
	fsys  *fsmodel.FS
	opt   RunOptions
	jobs  []*job
	start sim.Time
	// lastEnd is when the last job to end so far ended.
	lastEnd sim.Time
	// ended is woken whenever a job ends, for jobs waiting to start.
	ended sim.WaitQueue
	// written maps the stamp of every write of a verifying job to where it
	// went, for jobs that verify what others wrote; nil if none does.
	written map[blockdev.Stamp]writeRec
	// zetas are the zipf normalisers computed so far.
	zetas map[zetaKey]float64
	// integ is the atomicity oracle (integrity.go); nil if no file is both
	// read and written by the run's jobs, or RunOptions turned it off.
	integ *oracle
	// endOrder are the jobs that have ended, in the order they ended.
	endOrder []*job
}

// stopReason says why a job's IO loop ended.
type stopReason int

const (
	running        stopReason = iota
	stopDone                  // the size, io_size or number_ios is done
	stopDeadline              // the runtime is over
	stopTerminated            // exitall ended the job
	stopFailed                // an IO or a check failed
)

// job is one clone of a JobSpec while it runs.
type job struct {
	r       *runState
	spec    *JobSpec
	id      int
	clone   int // fio's subjob number: which of the spec's numjobs clones
	group   int
	fence   int    // the job starts when jobs[0:fence] have ended (stonewall)
	waitFor []*job // and when these have ended (wait_for)
	// files are the job's files, in fio's file number order (one unless
	// nrfiles); cur is the one its next IO goes to (always files[0] for
	// a job with one file), and svc chooses it for a job with several.
	files []*jobFile
	cur   *jobFile
	svc   fileService
	rng   *rand.Rand
	// aux draws what the original runner did not draw (block sizes from
	// a range or split, distributions, delays, rate gaps), so that jobs
	// without those options draw exactly as before.
	aux *rand.Rand
	res JobResult
	// writesIssued counts the job's writes and issuedBytes its bytes per
	// direction since its ramp ended (fio's io_issues[DDIR_WRITE] and
	// io_issue_bytes, which loops do not reset), rampCounted whether the
	// ramp's end has reset them; syncFile is the file of the last write
	// (its sync's); lastWasSync is fio's last_was_sync (the last IO to
	// complete was a sync).
	writesIssued int
	issuedBytes  [2]int64
	rampCounted  bool
	syncFile     *jobFile
	lastWasSync  bool
	// filesExhausted is set when the loop's files are done; another
	// round over them may follow (io_size, fio's keep_running).
	filesExhausted bool
	// runEnd is when the job last stopped running a phase (at most its
	// deadline): its rate samples end there.
	runEnd sim.Time
	stamp  blockdev.Stamp
	// samplers take the job's rate samples.
	samplers rateSamplers
	// logs are the job's log files (nil if it writes none).
	logs *jobLogs

	// How much one loop does, and the unit random offsets are multiples
	// of without the random map (alignUnit).
	ioLimit int64
	unit    int64
	laidOut bool
	// mapUnit is, per direction, the unit of random offsets with the
	// random map (dirUnit).
	mapUnit [2]int64
	// zoneBytes is the bytes of IO in the current zone of a
	// zonemode=strided job (fio's td->zone_bytes).
	zoneBytes int64

	// Set when the job starts.
	statsFrom, deadline sim.Time
	// ramp holds what the job counts before statsFrom, for a job that
	// ends inside its ramp_time (endedInRamp).
	ramp rampTally
	// verifyTime is the time the job's verify phases took after
	// statsFrom (fio's read runtime of a write job), rampVerifyTime the
	// time they took before.
	verifyTime, rampVerifyTime sim.Time
	started, ended             bool
	terminate                  bool

	// Per loop (and on across io_size rounds): bytes and IOs counted
	// against the loop's limits; ios counts verify reads too, as fio's
	// number_ios does.
	bytes, ios int64
	// seqLeft counts down the IOs to the next random offset of
	// rw=randread:N. It starts at 0, so that the job's first IO takes a
	// random offset, and runs on across loops and io_size rounds (fio
	// 3.33 keeps one count per job, from 1).
	seqLeft int

	rate    rateState
	think   thinkState
	verify  *verifyState
	quiesce func() // waits for every IO in flight (async engines); nil for sync
	data    []blockdev.StampRun

	// setupErr is fio's error text of a file setup that fails the job
	// when it starts, setupErrno its errno: fallocate=keep without room
	// (ENOSPC), size=N% of a new file (EINVAL).
	setupErr   string
	setupErrno syscall.Errno
	// sleepUntil's state: the job's own wait queue, whether it sleeps,
	// and which timer may wake it; noWake while a terminate must not
	// wake it (usecSleep).
	wake     sim.WaitQueue
	sleeping bool
	noWake   bool
	sleepGen uint64
}

// Run runs jobs on fsys until every job has finished and returns their
// results (without lock or engine figures, which belong to the caller).
// Jobs start at the engine's current time, in file order as fio starts
// them: a stonewall job waits for every job before it, a wait_for job for
// the jobs it names, and startdelay counts from the start of the run. The
// same engine seed, stack and jobs give the same result. Jobs blocked
// forever (a model deadlock) end the run with an error matching
// ErrDeadlock; unless the caller set a stall limit on e, Run sets one (an
// hour) while it runs.
func Run(e *sim.Engine, fsys *fsmodel.FS, specs []JobSpec, opt RunOptions) (*Result, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("%w: no jobs", ErrJob)
	}
	r := &runState{e: e, fsys: fsys, opt: opt, start: e.Now()}
	lbs := int64(fsys.Queue().Limits().LogicalBlockSize)
	// Reporting groups and start fences as fio's add_job and run_threads
	// make them: a stonewall or new_group job starts a new group unless
	// the current one is empty; clones never do.
	group, groupJobs, fence := 0, 0, 0
	id := 0
	byName := map[string][]*job{}
	for i := range specs {
		s := &specs[i]
		if err := checkRunnable(s, lbs); err != nil {
			return nil, err
		}
		if (s.Stonewall || s.NewGroup) && groupJobs > 0 {
			group++
			groupJobs = 0
		}
		if s.Stonewall {
			fence = id
		}
		var waitFor []*job
		if s.WaitFor != "" && s.WaitFor != s.Name {
			waitFor = byName[s.WaitFor]
			if len(waitFor) == 0 {
				return nil, s.errorf("wait_for", "no job named %q before this one (fio: waitee job %s unknown)", s.WaitFor, s.WaitFor)
			}
		}
		for c := 0; c < s.NumJobs; c++ {
			j := &job{r: r, spec: s, id: id, clone: c, group: group, fence: fence, waitFor: waitFor}
			j.files = newJobFiles(s, c)
			j.cur = j.files[0]
			j.res = JobResult{Name: s.Name, JobID: id, GroupID: group, Jobs: 1, RW: s.RW.String(), BS: s.BS,
				IOEngine: s.IOEngine, IODepth: s.IODepth, Description: s.Description, Thread: s.Thread,
				NoClatPercentiles: s.NoClatPercentiles, UnifiedRW: s.UnifiedRW, ContinueOnError: s.ContinueOnError != 0,
				Percentiles: s.Percentiles, PercentilePrecision: s.PercentilePrecision,
				Options: s.Options, KBBase: s.KBBase}
			for d := range 2 {
				j.res.BS[d] = minBSDir(s, blockdev.Op(d))
				if hi := maxBSDir(s, blockdev.Op(d)); hi != j.res.BS[d] {
					j.res.BSMax[d] = hi
				}
			}
			// fio's randseed and the run's seed together pick the
			// stream; each job has its own. randrepeat=0 leaves randseed
			// out.
			seed := s.RandSeed
			if s.NoRandRepeat {
				seed = e.Seed() ^ 0x5bd1e9955bd1e995
			}
			j.rng = rand.New(rand.NewPCG(seed, e.Seed()*0x9e3779b97f4a7c15+uint64(id)+1))
			j.aux = rand.New(rand.NewPCG(seed^0xa0761d6478bd642f, e.Seed()*0xe7037ed1a0b428db+uint64(id)+1))
			if j.multi() {
				// fio's next_file_state: the file service's own stream.
				j.svc.rng = rand.New(rand.NewPCG(seed^0xe7037ed1a0b428db, e.Seed()*0x8ebc6af09c88c6e3+uint64(id)+1))
			}
			j.stamp.Writer = uint32(id + 1)
			j.logs = newJobLogs(s, id)
			r.jobs = append(r.jobs, j)
			byName[s.Name] = append(byName[s.Name], j)
			groupJobs++
			id++
		}
	}
	if err := r.layoutFiles(lbs); err != nil {
		return nil, err
	}
	for _, j := range r.jobs {
		j.setUp()
	}
	fsys.SetJournalTimer(true)
	if opt.Interrupt != nil {
		opt.Interrupt(func() {
			for _, j := range r.jobs {
				if !j.ended {
					j.stop()
				}
			}
		})
	}
	for _, j := range r.jobs {
		j := j
		name := fmt.Sprintf("fio:%s:%d", j.spec.Name, j.id)
		if asyncEngines[j.spec.IOEngine] {
			e.Go(name, func(t *sim.Task) { j.runAsync(t, fsys) })
			continue
		}
		e.Go(name, func(t *sim.Task) { j.run(t) })
	}
	if err := runEngine(e, stallLimit(fsys)); err != nil {
		return nil, err
	}
	res := &Result{GlobalOptions: specs[len(specs)-1].GlobalOptions} // the most: [global] sections between jobs add up
	var ios uint64
	for _, j := range r.jobs {
		ios += j.res.Read.IOs + j.res.Write.IOs
	}
	res.Groups = groupResults(r.jobs)
	res.Logs = r.collectLogs()
	for _, j := range r.jobs {
		res.Integrity.Merge(&j.res.Integrity)
	}
	active := max(r.lastEnd, r.fsys.Queue().LastCompletion(), r.start)
	res.Engine = EngineFigures{SimulatedIOs: ios, Events: e.Events(), SimulatedSeconds: float64(e.Now()-r.start) / 1e9,
		ActiveSeconds: float64(active-r.start) / 1e9, JobsSeconds: float64(max(r.lastEnd, r.start)-r.start) / 1e9}
	return res, nil
}

// allEnded reports whether every job of the run has ended.
func (r *runState) allEnded() bool {
	for _, j := range r.jobs {
		if !j.ended {
			return false
		}
	}
	return true
}

// errorf returns an ErrJob error naming an option and where it was set
// (the line of the job's section or of [global], or the command line),
// or, for an option the job does not set, the job's section header.
func (s *JobSpec) errorf(opt, format string, args ...any) error {
	file, line, key := s.File, s.Line, opt
	name := opt
	if o, ok := lookupOption(opt); ok {
		name = o.name // where is keyed by the table's name, not an alias
	}
	if pos, ok := s.where[name]; ok {
		file, line, key = pos.file, pos.line, pos.key
	}
	where := fmt.Sprintf("%s:%d", file, line)
	if line == 0 {
		where = file
	}
	return fmt.Errorf("%s: option %q: %w: %s", where, key, ErrJob, fmt.Sprintf(format, args...))
}

// Kernel limits on an asynchronous job's depth: fs.aio-max-nr's default
// and io_uring's IORING_MAX_ENTRIES.
const (
	maxAIODepth   = 65536
	maxURingDepth = 32768
)

// sizeUnit returns the unit s's IO sizes and offsets must be multiples of,
// and the reason, for error messages: for direct IO the device's logical
// block size lbs (the kernel fails the IO with EINVAL); for buffered IO,
// which the kernel takes at any size, blksim's 512-byte sector, the
// smallest piece its data stamps describe (a limit of the model).
func sizeUnit(s *JobSpec, lbs int64) (unit int64, why string) {
	if s.Direct {
		return lbs, fmt.Sprintf("not aligned to the device's %d-byte logical block size (direct IO fails with EINVAL)", lbs)
	}
	return blockdev.SectorSize, fmt.Sprintf("not a multiple of %d bytes: buffered IO in pieces smaller than a sector is not modelled (blksim keeps data per sector)", blockdev.SectorSize)
}

// checkRunnable rejects job specs this runner cannot honour; lbs is the
// device's logical block size, to which direct IO must be aligned. The
// checks that depend on the job's region are in layoutFiles.
func checkRunnable(s *JobSpec, lbs int64) error {
	at := func(opt, format string, args ...any) error { return s.errorf(opt, format, args...) }
	unit, why := sizeUnit(s, lbs)
	switch {
	case s.Size <= 0 && s.SizePercent == 0 && s.FileSize[1] == 0 && !s.FillDevice:
		return at("size", "size= is required (blksim has no existing files to size the job from)")
	case (s.Fsync > 0 || s.Fdatasync > 0) && !syncEngines[s.IOEngine]:
		opt := "fsync"
		if s.Fsync == 0 {
			opt = "fdatasync"
		}
		return at(opt, "%s=N with an async engine is not modelled (use psync; end_fsync=1 is)", opt)
	case strings.ContainsRune(s.Filename, ':'):
		return at("filename", "several files per job (colon-separated) are not modelled yet; use nrfiles= with filename_format=")
	case s.FillDevice && nrFiles(s) > 1:
		return at("nrfiles", "nrfiles=%d with fill_device is not modelled (fio grows every file until the device is full; blksim lays files out before the job)", s.NrFiles)
	case s.TimeBased && s.Runtime <= 0:
		return at("time_based", "time_based needs a runtime")
	case asyncEngines[s.IOEngine] && s.IODepth < 1:
		return at("iodepth", "iodepth %d: at least 1 is needed", s.IODepth)
	case s.IOEngine == "libaio" && s.IODepth > maxAIODepth:
		return at("iodepth", "iodepth %d exceeds the kernel's default aio-max-nr %d (io_setup fails with EAGAIN)", s.IODepth, maxAIODepth)
	case s.IOEngine == "io_uring" && s.IODepth > maxURingDepth:
		return at("iodepth", "iodepth %d exceeds io_uring's %d ring entries (io_uring_setup fails with EINVAL)", s.IODepth, maxURingDepth)
	case s.SeqAdd%unit != 0:
		return at("rw", "an offset step of %d bytes is %s", s.SeqAdd, why)
	}
	for dir := range 2 {
		if !usesDir(s, blockdev.Op(dir)) {
			continue
		}
		opt := "bs"
		switch {
		case s.BSSplit[dir] != nil:
			opt = "bssplit"
		case s.BSRange[dir][1] > 0:
			opt = "bsrange"
		}
		for _, bs := range blockSizes(s, blockdev.Op(dir)) {
			if bs%unit != 0 {
				return at(opt, "a block size of %d bytes is %s", bs, why)
			}
		}
		if ba := s.BlockAlign[dir]; ba != 0 && ba%unit != 0 {
			return at("blockalign", "an alignment of %d bytes is %s", ba, why)
		}
	}
	return nil
}

// usesDir reports whether s issues IO in direction d.
func usesDir(s *JobSpec, d blockdev.Op) bool {
	if d == blockdev.OpRead {
		return s.RW.HasRead() || verifies(s)
	}
	return s.RW.HasWrite()
}

// verifies reports whether s reads back what it writes.
func verifies(s *JobSpec) bool {
	return s.Verify != "" && s.RW.HasWrite() && (!s.NoDoVerify || s.VerifyBacklog > 0)
}

// blockSizes returns every block size s may use in direction d.
func blockSizes(s *JobSpec, d blockdev.Op) []int64 {
	if split := s.BSSplit[d]; split != nil {
		out := make([]int64, len(split))
		for i, e := range split {
			out[i] = e.BS
		}
		return out
	}
	if rg := s.BSRange[d]; rg[1] > 0 {
		return []int64{rg[0], rg[1]}
	}
	if d == blockdev.OpRead && !s.RW.HasRead() && verifies(s) {
		// The verify reads read back what was written.
		return blockSizes(s, blockdev.OpWrite)
	}
	return []int64{s.BS[d]}
}

// minBSDir and maxBSDir are the smallest and largest block size of s in
// direction d.
func minBSDir(s *JobSpec, d blockdev.Op) int64 {
	m := int64(0)
	for _, bs := range blockSizes(s, d) {
		if m == 0 || bs < m {
			m = bs
		}
	}
	return m
}

func maxBSDir(s *JobSpec, d blockdev.Op) int64 {
	m := int64(0)
	for _, bs := range blockSizes(s, d) {
		m = max(m, bs)
	}
	return m
}

// minBS is the smallest block size of the directions s issues.
func minBS(s *JobSpec) int64 {
	switch {
	case !s.RW.HasWrite():
		return minBSDir(s, blockdev.OpRead)
	case !s.RW.HasRead():
		return minBSDir(s, blockdev.OpWrite)
	}
	return min(minBSDir(s, blockdev.OpRead), minBSDir(s, blockdev.OpWrite))
}

// maxBS is the largest block size of the directions s issues.
func maxBS(s *JobSpec) int64 {
	m := int64(0)
	for d := range 2 {
		if usesDir(s, blockdev.Op(d)) {
			m = max(m, maxBSDir(s, blockdev.Op(d)))
		}
	}
	return m
}

// alignUnit is the unit random offsets of s are multiples of without the
// random map (norandommap, or a distribution): the smallest block
// alignment of the directions it issues (blockalign, or the direction's
// smallest block size). With the random map each direction uses its own
// smallest block size (dirUnit).
func alignUnit(s *JobSpec) int64 {
	if s.BlockAlign == [2]int64{} {
		return minBS(s)
	}
	u := int64(0)
	for d := range 2 {
		if !(d == 0 && s.RW.HasRead() || d == 1 && s.RW.HasWrite()) {
			continue
		}
		a := s.BlockAlign[d]
		if a == 0 {
			a = minBSDir(s, blockdev.Op(d))
		}
		if u == 0 || a < u {
			u = a
		}
	}
	return u
}

// layout computes the job's regions, one per file: where each starts in
// its file, how long it is, and how much one loop transfers (fio
// filesetup.c setup_files). Without filesize a region is the file's share
// of size (size is the files' total, divided between them) and starts at
// the offset, the file ending where the region does. With filesize the
// file is filesize bytes long and the region runs from the offset to the
// file's end; an offset past the end is rejected (fio fails the job).
func (j *job) layout(devCap int64) error {
	s := j.spec
	j.ensureFiles()
	unit := max(minBS(s), 1)
	var fileTotal int64
	for _, f := range j.files {
		fsz := s.FileSize[0]
		if hi := s.FileSize[1]; hi > fsz {
			// fio get_rand_file_size: a size in the range, a multiple of
			// the largest block size; each file draws its own.
			fsz += randUpTo(j.aux, hi-fsz)
			if m := maxBS(s); m > 0 && fsz >= m {
				fsz -= fsz % m
			}
		}
		base := fsz
		if base == 0 {
			base = devCap
		}
		off := s.Offset
		if s.OffsetPercent != 0 {
			off = mulDiv(base, int64(s.OffsetPercent), 100) / unit * unit
		}
		inc := s.OffsetIncrement
		if s.OffsetIncrementPercent != 0 {
			inc = mulDiv(base, int64(s.OffsetIncrementPercent), 100) / unit * unit
		}
		if inc != 0 && int64(j.clone) > (1<<62)/inc {
			return s.errorf("offset_increment", "offset %d * %d is beyond any device", inc, j.clone)
		}
		f.regionOff = off + inc*int64(j.clone)
		f.regionLen = fsz
		if fsz > 0 {
			if f.regionOff > fsz {
				opt := "offset"
				if inc != 0 && j.clone > 0 {
					opt = "offset_increment"
				}
				return s.errorf(opt, "file %q starts its IO at offset %d, past the end of the file (filesize %d); fio fails the job: you need to specify valid offset=", f.name, f.regionOff, fsz)
			}
			f.regionLen = fsz - f.regionOff
		}
		fileTotal += fsz
	}
	size := s.Size
	switch {
	case s.FillDevice:
		size = 0
	case s.SizePercent != 0 && fileTotal == 0:
		// fio setup_files: a percentage of a file that does not exist
		// yet, with no filesize to size it, leaves the job without a
		// size, and its setup fails; the job does no IO and its file
		// is not made.
		j.setupErrno = syscall.EINVAL
		j.setupErr = fmt.Sprintf("file:filesetup.c:%d, func=total_file_size, error=%s", fioTotalSizeLine, Strerror(int(syscall.EINVAL)))
		j.parentFailed(s.Name + ": you need to specify size=")
		return nil
	case s.SizePercent != 0:
		size = mulDiv(fileTotal, int64(s.SizePercent), 100) / unit * unit
	}
	if fileTotal == 0 {
		j.splitSize(size)
	}
	j.ioLimit = s.IOSize
	if j.ioLimit == 0 {
		// fio setup_files: size is at most the regions' total (with one
		// file too: filesize=1m with size=4m transfers 1 MiB).
		for _, f := range j.files {
			j.ioLimit += f.regionLen
		}
		if size > 0 && size < j.ioLimit {
			j.ioLimit = size
		}
	}
	return nil
}

// directValue is the direct option's value as a job file writes it.
func directValue(direct bool) string {
	if direct {
		return "1"
	}
	return "0"
}

// ensureFiles gives a job made without Run (in tests) its files.
func (j *job) ensureFiles() {
	if j.files == nil {
		j.files = newJobFiles(j.spec, j.clone)
	}
	if j.cur == nil {
		j.cur = j.files[0]
	}
}

// mulDiv returns a*b/c without overflowing for the sizes used here.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return 1<<63 - 1
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(min(q, 1<<63-1))
}

// layoutFiles computes every job's regions, sizes the files (a file shared
// by several jobs gets the largest size any of them asks for; a
// fill_device job's file takes the space the others leave), checks the
// regions and opens the files.
func (r *runState) layoutFiles(lbs int64) error {
	// Percentages are of the space files may hold (the device less any
	// journal).
	devCap := r.fsys.DataCapacity()
	type fileReq struct {
		size int64
		job  *job
		fill bool
	}
	sizes := map[string]*fileReq{}
	var order []string
	var visits []setupVisit // every job's setup of every file, in job order
	for _, j := range r.jobs {
		if err := j.layout(devCap); err != nil {
			return err
		}
		if j.setupErr != "" {
			continue // (no files)
		}
		for _, f := range j.files {
			need := f.regionOff + f.regionLen
			if j.spec.FillDevice {
				need = 0
			}
			if q, ok := sizes[f.name]; ok {
				// blksim keeps a direct-IO file (preallocated, an extent
				// map) and a buffered one (blocks allocated at writeback,
				// a page-cache index) apart and has no coherence between
				// them (the kernel's flush before a direct read and
				// invalidation after a direct write): refuse to mix them
				// on one file rather than hang or read stale data. On DAX
				// both kinds of IO take the same path.
				if q.job.spec.Direct != j.spec.Direct && !r.fsys.DAX() {
					return j.spec.errorf("direct", "file %q is also used by job %q with direct=%s: blksim does not model direct and buffered IO on one file", f.name, q.job.spec.Name, directValue(q.job.spec.Direct))
				}
				q.size = max(q.size, need)
				q.fill = q.fill || j.spec.FillDevice
			} else {
				sizes[f.name] = &fileReq{size: need, job: j, fill: j.spec.FillDevice}
				order = append(order, f.name)
			}
			visits = append(visits, setupVisit{j, f.name, need})
		}
	}
	// fill_device: the space the other files leave, in file order.
	alloc := func(n int64) int64 { return (n + fsmodel.BlockSize - 1) / fsmodel.BlockSize * fsmodel.BlockSize }
	var used int64
	for _, name := range order {
		if q := sizes[name]; !q.fill {
			used += alloc(q.size)
		}
	}
	for _, name := range order {
		q := sizes[name]
		if !q.fill {
			continue
		}
		free := r.fsys.DataCapacity() - used
		if free <= q.size {
			return q.job.spec.errorf("fill_device", "no space is left on the device for %q (ENOSPC)", name)
		}
		q.size = free / fsmodel.BlockSize * fsmodel.BlockSize
		used += q.size
	}
	for _, j := range r.jobs {
		s := j.spec
		if j.setupErr != "" {
			continue
		}
		if s.FillDevice {
			// (A fill_device job has one file.)
			f := j.files[0]
			f.regionLen = sizes[f.name].size - f.regionOff
			if m := maxBS(s); m > 0 {
				f.regionLen -= f.regionLen % m
			}
			if s.IOSize == 0 {
				j.ioLimit = f.regionLen
			}
		}
		if err := j.checkRegion(lbs); err != nil {
			return err
		}
	}
	// Replay the jobs' setups of the buffered files, with the room the
	// direct-IO (and DAX) files, always preallocated whole, leave.
	room := r.fsys.PreallocRoom()
	for _, name := range order {
		if q := sizes[name]; q.job.spec.Direct || r.fsys.DAX() {
			room -= alloc(q.size)
		}
	}
	setups := map[string]*fileSetup{}
	for _, name := range order {
		if q := sizes[name]; !q.job.spec.Direct && !r.fsys.DAX() {
			setups[name] = &fileSetup{size: -1}
		}
	}
	for _, v := range visits {
		if st := setups[v.file]; st != nil {
			room = st.visit(v, room)
		}
	}
	files := map[string]*fsmodel.File{}
	for _, name := range order {
		q := sizes[name]
		var f *fsmodel.File
		var err error
		if q.job.spec.Direct || r.fsys.DAX() {
			// DAX files are preallocated as direct-IO files are.
			f, err = r.fsys.Open(name, q.size)
			if errors.Is(err, fsmodel.ErrNoSpace) {
				// As in fio, a file that does not fit fails the jobs
				// that set it up; the others run.
				r.failNoSpace(name)
				continue
			}
		} else {
			f, err = r.fsys.Create(name)
			if err == nil {
				err = setups[name].apply(f, q.size)
			}
		}
		if err != nil {
			return q.job.spec.errorf("filename", "%v", err)
		}
		files[name] = f
	}
	for _, j := range r.jobs {
		for _, f := range j.files {
			f.file = files[f.name]
		}
	}
	if !r.opt.NoIntegrity {
		r.watchFiles()
	}
	return nil
}

// fileSetup follows fio's setup of a buffered file, job by job in job
// order across all files: a job whose setup finds the file shorter than
// it needs sets it up afresh (fio unlinks it first, freeing what it
// held), as the job's own options say; the last such job decides what
// the file is when the jobs start. A job that reads it lays it out
// (writes it whole, fsynced: extend_file's new_layout); one that only
// writes applies its fallocate=: native, posix and 1 preallocate it (a
// failure, only logged, leaves it short), truncate only sizes it, keep
// preallocates it without sizing it (a failure fails the job) and none
// (and a fill_device job, which skips fallocate) leave it empty, so that
// the next job finds it short.
type fileSetup struct {
	size  int64  // the file's size so far; -1: not set up
	held  int64  // the bytes its preallocation or layout holds
	how   string // "layout", "prealloc" or "" (no blocks)
	bytes int64  // the deciding job's size
}

// setupVisit is one job's setup of a file: the job, the file and the
// bytes the job needs.
type setupVisit struct {
	job  *job
	file string
	need int64
}

// visit replays v's setup of the file with room bytes free for
// preallocations, and returns the room left.
func (s *fileSetup) visit(v setupVisit, room int64) int64 {
	if s.size >= v.need {
		return room
	}
	room += s.held // unlinked
	s.held, s.how = 0, ""
	js := v.job.spec
	blocks := (v.need + fsmodel.BlockSize - 1) / fsmodel.BlockSize * fsmodel.BlockSize
	take := func(how string, size int64) {
		s.how, s.bytes, s.size, s.held = how, v.need, size, blocks
		room -= blocks
	}
	switch mode := js.Fallocate; {
	case js.RW.HasRead():
		// (A layout that does not fit fails the run when the file is
		// made.)
		take("layout", v.need)
	case js.FillDevice || mode == "none":
		s.size = 0
	case mode == "truncate":
		s.size = v.need
	case blocks <= room && mode == "keep":
		take("prealloc", 0)
	case mode == "keep":
		v.job.setupErrno = syscall.ENOSPC
		v.job.setupErr = fmt.Sprintf("file:filesetup.c:%d, func=fallocate, error=%s", fioFallocateLine, Strerror(int(syscall.ENOSPC)))
		s.size = 0
	case blocks <= room:
		take("prealloc", v.need)
	default:
		// What did fit stays allocated in the kernel; blksim's
		// preallocation is all or nothing: none here.
		s.size = room
	}
	return room
}

// apply sets up new buffered file f as the replayed setups left it,
// sized to size (the most any job uses).
func (s *fileSetup) apply(f *fsmodel.File, size int64) error {
	var err error
	switch s.how {
	case "layout":
		err = f.LayOut(s.bytes)
	case "prealloc":
		err = f.Preallocate(s.bytes)
	}
	if err != nil {
		return err
	}
	f.Extend(size)
	return nil
}

// failNoSpace fails, with ENOSPC, every job that uses the direct-IO (or
// DAX) file name, which does not fit on the device. fio 3.33 lays out the
// file of a job that reads it and fails the job at setup, where the
// layout's write fails ("file:filesetup.c:240, func=write"); a job that
// only writes it has its preallocation fail quietly and fails at the
// first write past the space the filesystem had ("file:io_u.c:1876,
// func=io_u error"). blksim fails either when it starts, with fio's
// error, without the writes fio makes before the space runs out.
func (r *runState) failNoSpace(name string) {
	for _, j := range r.jobs {
		if j.setupErr != "" || !slices.ContainsFunc(j.files, func(f *jobFile) bool { return f.name == name }) {
			continue
		}
		msg := Strerror(int(syscall.ENOSPC))
		j.setupErrno = syscall.ENOSPC
		if usesDir(j.spec, blockdev.OpRead) {
			j.setupErr = fmt.Sprintf("file:filesetup.c:%d, func=write, error=%s", fioLayoutWriteLine, msg)
			j.parentFailed("fio: ENOSPC on laying out file, stopping")
		} else {
			j.setupErr = fmt.Sprintf("file:io_u.c:%d, func=io_u error, error=%s", fioIOUErrorLine, msg)
		}
	}
}

// parentFailed marks j's setup error (setupErrno, setupErr) as one fio's
// parent process meets: why, then the error line with pid 0, on stderr.
func (j *job) parentFailed(why string) {
	j.res.SetupFailed = true
	j.res.ErrorLog = append(j.res.ErrorLog, why,
		fmt.Sprintf("fio: pid=0, err=%d/%s", int(j.setupErrno), j.setupErr))
}

// fioFallocateLine is the filesetup.c line fio 3.33 names when
// fallocate=keep fails (td_verror(td, errno, "fallocate")), and
// fioTotalSizeLine the one it names when a job has no size.
const (
	fioFallocateLine = 93
	fioTotalSizeLine = 1155
	// fioLayoutWriteLine is where fio 3.33's extend_file fails a job
	// whose layout write finds no space (td_verror(td, errno, "write")),
	// and fioIOUErrorLine where io_u.c fails a job on an IO's error.
	fioLayoutWriteLine = 240
	fioIOUErrorLine    = 1876
)

// watchFiles turns the atomicity oracle on for every file that some job
// reads and some job writes (verify reads count as reads), whichever of
// their files the jobs name it as.
func (r *runState) watchFiles() {
	type use struct{ read, write bool }
	uses := map[*fsmodel.File]*use{}
	for _, j := range r.jobs {
		if j.setupErr != "" {
			continue
		}
		for _, f := range j.files {
			u := uses[f.file]
			if u == nil {
				u = &use{}
				uses[f.file] = u
			}
			u.read = u.read || usesDir(j.spec, blockdev.OpRead)
			u.write = u.write || usesDir(j.spec, blockdev.OpWrite)
		}
	}
	hists := map[*fsmodel.File]*fileHistory{}
	for _, j := range r.jobs {
		if j.setupErr != "" {
			continue
		}
		for _, f := range j.files {
			if u := uses[f.file]; !u.read || !u.write {
				continue
			}
			if r.integ == nil {
				r.integ = newOracle(len(r.jobs))
			}
			h := hists[f.file]
			if h == nil {
				h = r.integ.watch()
				hists[f.file] = h
			}
			f.hist = h
			j.res.Integrity.On = true
		}
	}
}

// checkRegion rejects a region the job's IO does not fit.
func (j *job) checkRegion(lbs int64) error {
	s := j.spec
	unit, why := sizeUnit(s, lbs)
	for _, f := range j.files {
		switch {
		case f.regionLen <= 0 && s.FillDevice:
			return s.errorf("fill_device", "no space is left on the device past offset %d", f.regionOff)
		case f.regionLen <= 0 && s.FileSize[1] == 0 && s.Size == 0 && s.SizePercent == 0:
			return s.errorf("size", "size= is required (blksim has no existing files to size the job from)")
		case f.regionOff < 0:
			return s.errorf("offset", "offset %d is negative", f.regionOff)
		case f.regionOff%unit != 0:
			return s.errorf("offset", "an offset of %d bytes is %s", f.regionOff, why)
		case j.multi() && s.SeqAdd < 0 && f.regionLen%unit != 0:
			// Backward steps wrap to the region's end (fio does the same
			// and fails the IO with EINVAL).
			return s.errorf("rw", "backward steps wrap to the end of file %q, %d bytes long (nrfiles=%d), %s", f.name, f.regionLen, len(j.files), why)
		}
		for d := range 2 {
			if !usesDir(s, blockdev.Op(d)) {
				continue
			}
			// Fix (tests): the larger block size of a mixed job must fit
			// too; a random job panicked (Int64N of a negative limit) and
			// a sequential one failed every IO beyond the end of the file.
			bs := maxBSDir(s, blockdev.Op(d))
			switch {
			case f.regionLen >= bs:
			case j.multi() && s.FileSize[1] == 0:
				return s.errorf("nrfiles", "nrfiles=%d divides size into files of %d bytes (file %q), smaller than the block size %d", len(j.files), f.regionLen, f.name, bs)
			case s.FileSize[1] > 0 && f.regionOff > 0:
				return s.errorf("offset", "the %d bytes of file %q from offset %d to its end (filesize) are fewer than the block size %d", f.regionLen, f.name, f.regionOff, bs)
			case s.FileSize[1] > 0:
				return s.errorf("filesize", "size %d is smaller than the block size %d", f.regionLen, bs)
			default:
				return s.errorf("size", "size %d is smaller than the block size %d", f.regionLen, bs)
			}
			if s.Strided && min(s.ZoneRange, f.regionLen) < bs {
				return s.errorf("zonerange", "zones of %d bytes are smaller than the block size %d", min(s.ZoneRange, f.regionLen), bs)
			}
		}
		if s.Strided {
			// fio's zones run on to the file's end, past io_size; blksim
			// keeps a job's IO in its region, so every zone must fit.
			step := s.ZoneRange + s.ZoneSkip
			if last := (f.regionLen - 1) / step * step; last+s.ZoneRange > f.regionLen {
				return s.errorf("zonerange", "the zone at %d (zonerange=%d, zoneskip=%d) runs past the end of the job's %d bytes of file %q; zones past the region are not modelled by blksim", last, s.ZoneRange, s.ZoneSkip, f.regionLen, f.name)
			}
		}
	}
	return nil
}

// setUp prepares the job's generators once its regions are known; a job
// whose setup failed does no IO and needs none.
func (j *job) setUp() {
	s := j.spec
	if j.setupErr != "" {
		return
	}
	j.unit = alignUnit(s)
	j.laidOut = true
	for _, f := range j.files {
		for d := range 2 {
			f.dist[d] = newOffsetGen(s, blockdev.Op(d), j, f.regionLen)
		}
		if s.RandomGenerator == "lfsr" && s.RW.Random() {
			for d := range 2 {
				if f.dist[d] == nil {
					f.dist[d] = newLFSRGen(f.regionLen, j.unit, j.aux)
				}
			}
		}
		if s.RW.Random() && !s.NoRandomMap && (f.dist[0] == nil || f.dist[1] == nil) {
			// The random map is a bit per block: only jobs that use it.
			n := f.regionLen
			if s.Strided {
				// fio maps one zone (init_random_map).
				n = min(n, s.ZoneRange)
			}
			f.rmap.init(n / minBS(s))
		}
	}
	if j.multi() {
		if j.svc.rng == nil {
			j.svc.rng = rand.New(rand.NewPCG(uint64(j.id), 0x5eed))
		}
		j.svc.init(s, len(j.files), j.svc.rng)
	}
	j.rate.init(s)
	if s.Verify != "" {
		j.verify = newVerifyState(j)
	}
}

// ensureLayout gives a job made without Run (in tests) the region its
// spec describes.
func (j *job) ensureLayout() {
	if j.laidOut {
		return
	}
	j.laidOut = true
	j.ensureFiles()
	j.cur.regionLen = j.spec.Size
	j.ioLimit = j.spec.Size
	j.unit = alignUnit(j.spec)
}

// begin marks the job started at now.
func (j *job) begin(now sim.Time) {
	s := j.spec
	j.started = true
	j.statsFrom = now + sim.Time(s.RampTime)
	j.deadline = -1
	if s.Runtime > 0 {
		j.deadline = j.statsFrom + sim.Time(s.Runtime)
	}
	j.rate.start = now
	j.think.start = now
	j.think.on = s.ThinkTime > 0
	j.startSamplers(j.statsFrom)
}

// run is the job's simulated thread for a synchronous engine (runAsync is
// that of the asynchronous ones): wait for its turn, then fio's loops of
// IO and verify phases.
func (j *job) run(t *sim.Task) {
	start, ok := j.waitToStart(t)
	if ok {
		j.invalidate()
		j.begin(start)
		j.loops(t, j.syncPhase)
		j.setRuntime(t)
	}
	j.end(t)
}

// setRuntime sets the job's runtimes when its IO is done: the whole
// (fio's total_run_time) and each direction's (DirStats.Runtime: the IO
// phases count for the directions of rw=, the verify phases for reads,
// as fio's update_runtime counts them; verify_only's dry run, which
// takes no time, has no write runtime).
func (j *job) setRuntime(t *sim.Task) {
	t.Flush()
	s := j.spec
	from, verify := j.statsFrom, j.verifyTime
	if t.Now() < j.statsFrom {
		// Its IO ended inside the ramp: the runtimes count from its
		// start.
		j.endedInRamp()
		from, verify = j.statsFrom-sim.Time(s.RampTime), j.rampVerifyTime
	}
	if t.Now() <= from {
		return
	}
	total := int64(t.Now() - from)
	io := total - int64(verify)
	j.res.Runtime = total
	j.res.Read.Runtime = int64(verify)
	if s.RW.HasRead() {
		j.res.Read.Runtime += io
	}
	if s.RW.HasWrite() && !(s.VerifyOnly && j.verify != nil) {
		j.res.Write.Runtime = io
	}
}

// invalidate drops the cached pages of a buffered job's files, as fio
// does when it opens them (invalidate=1, the default): whatever the
// engine, the job's reads then start from the device. It first opens
// the job's description of each file, as fio opens them at the job's
// start: the description samples the file's writeback error then
// (errseq_sample), so an error another job's fsync sees later is still
// this job's fsync's to report.
func (j *job) invalidate() {
	if j.spec.Direct {
		return
	}
	for _, f := range j.files {
		f.reader()
	}
	if !j.spec.Invalidate {
		return
	}
	for _, f := range j.files {
		f.file.Invalidate()
	}
}

// endFsync ends an IO phase as fio's do_io does: with nothing in flight,
// unless the job failed, a job that writes and has end_fsync=1 fsyncs
// every file if its last IO was not a sync (fio's should_fsync). So it
// does at the end of every loop, also when the runtime ran out. These
// fsyncs are not counted in the job's Sync figures (fio does not account
// IO while it is fsyncing), but in its depth figures as fio counts its
// engine's calls: a sync engine's submit and reap, io_uring's unit,
// submit and reap (IORING_OP_FSYNC is queued), nothing for libaio (which
// fsyncs in the submitting call). A failed fsync is an IO error of the
// job and, unless continue_on_error covers it, fio says "end_fsync
// failed" and goes on to the next file.
func (j *job) endFsync(t *sim.Task) {
	s := j.spec
	if !s.EndFsync || !s.RW.HasWrite() || j.lastWasSync || j.res.Error != 0 {
		return
	}
	for _, f := range j.files {
		d := j.depthsAt(t.Now() + sim.Time(t.Owed()))
		switch {
		case syncEngines[s.IOEngine]:
			d.markSubmit(1)
			d.markComplete(1)
		case s.IOEngine == "io_uring":
			d.markLevel(1, 1)
			d.markSubmit(1)
			d.markComplete(1)
		}
		err := f.reader().Fsync(t)
		j.lastWasSync = true
		if err != nil && !j.ioFailed(err, "sync", f.name, 0, 0) {
			j.res.ErrorLog = append(j.res.ErrorLog, "fio: end_fsync failed for file "+f.name)
		}
	}
}

// countsAsIO reports whether an IO with check c counts in the job's size
// and rate samples (fio's this_io_bytes): every IO but a verify phase's
// reads and verify_backlog's.
func (j *job) countsAsIO(c verifyCheck) bool {
	return c == checkNone || c == checkWritten && !j.verify.inPhase
}

// dirStats is the job's figures for direction dir.
func (j *job) dirStats(dir blockdev.Op) *DirStats {
	if dir == blockdev.OpWrite {
		return &j.res.Write
	}
	return &j.res.Read
}

// rampTally is what a job counts during its ramp_time. fio counts a job's
// IOs, bytes and queue depths from its start and resets them when the
// ramp is over, but takes no latency or rate samples until then: a job
// that ends inside its ramp reports these counts and no latencies.
type rampTally struct {
	ios, issued, bytes   [2]uint64
	depths               IODepthDist
	syncs, fsync, dsyncs uint64
}

// depthsAt is where the job's queue depths at time at are counted: its
// result's once the ramp is over, the ramp's before.
func (j *job) depthsAt(at sim.Time) *IODepthDist {
	if at < j.statsFrom {
		return &j.ramp.depths
	}
	return &j.res.Depths
}

// countIssued counts an IO in direction dir issued at time at.
func (j *job) countIssued(dir blockdev.Op, at sim.Time) {
	if at < j.statsFrom {
		j.ramp.issued[dir]++
		return
	}
	j.dirStats(dir).Issued++
}

// countDone counts an IO of bs bytes in direction dir, issued at time
// at, that completed, and returns the direction's figures to take its
// latencies, or nil for an IO issued during the ramp.
func (j *job) countDone(dir blockdev.Op, bs int64, at sim.Time) *DirStats {
	if at < j.statsFrom {
		j.ramp.ios[dir]++
		j.ramp.bytes[dir] += uint64(bs)
		return nil
	}
	d := j.dirStats(dir)
	d.IOs++
	d.Bytes += uint64(bs)
	return d
}

// endedInRamp gives a job whose IO ended inside its ramp_time the counts
// of its ramp, as fio reports them (rampTally).
func (j *job) endedInRamp() {
	r := &j.ramp
	for d := range 2 {
		ds := j.dirStats(blockdev.Op(d))
		ds.IOs, ds.Issued, ds.Bytes = r.ios[d], r.issued[d], r.bytes[d]
	}
	j.res.Depths = r.depths
	j.res.Sync.IOs, j.res.Sync.IssuedFsync, j.res.Sync.IssuedDatasync = r.syncs, r.fsync, r.dsyncs
}

// loops runs the job's loops with phase, the engine's loop over the IOs
// of one phase: fio's thread_main (do_io, then do_verify, loops times, or
// until the runtime is over for a time_based job). A verify phase runs
// only after an IO phase that ended by reaching its size (fio does not
// verify when the runtime ran out).
func (j *job) loops(t *sim.Task, phase func(*sim.Task) stopReason) {
	s := j.spec
	defer func() { j.finishSamplers(j.runEnd) }()
	n := max(s.Loops, 1)
	round := false
	for l := 0; l < n || s.TimeBased || round; l++ {
		switch {
		case round:
			j.newRound()
		case l > 0:
			j.newLoop()
		}
		if !j.iteration(t, phase) {
			return
		}
		// Once its loops are done, fio goes over the files again while
		// the bytes the job moved (verify reads included) are short of
		// io_size by a block or more (keep_running): each round a loop.
		moved := int64(j.res.Read.Bytes + j.res.Write.Bytes)
		round = l >= n-1 && j.filesExhausted && s.IOSize > 0 && !s.TimeBased && s.IOSize-moved >= maxBS(s)
	}
}

// iteration runs one of fio's thread_main loops: the IO phase (or
// verify_only's dry run) and its end (do_io), then a verify phase if one
// is due (do_verify). It returns false when the job must stop.
func (j *job) iteration(t *sim.Task, phase func(*sim.Task) stopReason) bool {
	s := j.spec
	if j.verify != nil && s.VerifyOnly && s.RW.HasWrite() {
		if j.dryRun(); !j.verify.phaseDue() {
			return false
		}
	} else {
		stop := phase(t)
		if stop == stopDone {
			if stop = j.issueDueSync(t); stop == running {
				stop = stopDone
			}
		}
		j.markRunEnd(t)
		j.endFsync(t)
		if stop != stopDone || j.ios == 0 {
			// (A phase that did nothing would loop a time_based job
			// forever.)
			return false
		}
	}
	if j.verify == nil || !j.verify.phaseDue() {
		return true
	}
	j.verify.startPhase()
	began := t.Now() + sim.Time(t.Owed())
	from := max(began, j.statsFrom)
	stop := phase(t)
	j.markRunEnd(t)
	j.verify.endPhase()
	to := t.Now() + sim.Time(t.Owed())
	if to > from {
		j.verifyTime += to - from
	}
	j.rampVerifyTime += min(to, j.statsFrom) - min(began, j.statsFrom)
	return stop == stopDone
}

// markRunEnd notes that a phase of the job ended now (at its deadline if
// that came first): where its rate samples end.
func (j *job) markRunEnd(t *sim.Task) {
	j.runEnd = t.Now() + sim.Time(t.Owed())
	if j.deadline >= 0 {
		j.runEnd = min(j.runEnd, j.deadline)
	}
}

// newLoop resets what fio resets between loops: file positions, random
// maps and generators, which files are done (newRound), and the loop's
// counters.
func (j *job) newLoop() {
	j.newRound()
	j.bytes, j.ios = 0, 0
}

// newRound starts another round over the job's files: a loop of fio's
// whose bytes count on towards io_size, so the loop's counters stay.
func (j *job) newRound() {
	j.resetFiles()
	j.filesExhausted = false
	// fio's reset_io_counters: a loop that follows a sync may start with
	// it again (syncDue).
	j.lastWasSync = false
}

// checkStop returns why the current phase must end at now, or running.
func (j *job) checkStop(now sim.Time) stopReason {
	s := j.spec
	switch {
	case j.deadline >= 0 && now >= j.deadline:
		return stopDeadline
	case j.terminate:
		return stopTerminated
	case j.verify != nil && j.verify.inPhase:
		return running
	case (!s.TimeBased || s.Verify != "" && asyncEngines[s.IOEngine]) &&
		(j.bytes >= j.ioLimit || s.NumberIOs > 0 && j.ios >= s.NumberIOs):
		// A time_based job with verify and an asynchronous engine also
		// ends its IO phase here, to verify, and then loops until its
		// runtime is over (fio do_io counts the bytes of the IOs its
		// engine queues); with a synchronous engine fio 3.33 never gets
		// there, and writes until the runtime is over, unverified.
		return stopDone
	}
	return running
}

// ioReq is one IO a job issues.
type ioReq struct {
	// sync, if not "", makes this the sync of fsync=N ("sync") or
	// fdatasync=N ("datasync") on the job's last written file.
	sync  string
	dir   blockdev.Op
	file  *jobFile
	off   int64 // in the file's region
	bs    int64
	check verifyCheck
}

// next returns the job's next IO: a verify read, or a file, direction,
// block size and offset from the job's options. It may sleep to keep the
// job's rate; ok is false when the phase ends instead (its reason in
// *stop), or when the file to use cannot be opened yet (openfiles; *stop
// is then running and the caller tries again).
func (j *job) next(t *sim.Task, stop *stopReason) (io ioReq, ok bool) {
	if v := j.verify; v != nil {
		if v.inPhase {
			if io, ok = v.nextRead(); !ok {
				*stop = stopDone
			}
			return io, ok
		}
		if io, ok := v.nextBacklogRead(); ok {
			return io, true
		}
	}
	// fio picks a due sync after the backlog's verify reads, before the
	// file and direction of an IO, while the loop goes on.
	if d := j.syncDue(); d != "" && j.loopGoesOn() {
		return ioReq{sync: d}, true
	}
	if j.multi() {
		// fio chooses the file first (io_u.c get_io_u, set_io_u_file).
		if r := j.pickFile(); r != picked {
			*stop = pickStop(r)
			return io, false
		}
	}
	dir := j.pickDir()
	if j.rate.on {
		if dir, ok = j.rateDir(t, dir); !ok {
			*stop = j.checkStop(t.Now() + sim.Time(t.Owed()))
			if *stop == running {
				*stop = stopDeadline
			}
			return io, false
		}
	}
	var off, bs int64
	if j.multi() {
		var r pickResult
		if off, bs, r = j.nextFileOffset(dir); r != picked {
			*stop = pickStop(r)
			return io, false
		}
	} else if off, bs, ok = j.nextOffset(dir); !ok {
		*stop = stopDone
		return io, false
	}
	if j.rate.on {
		j.rateIssue(dir, bs)
	}
	io = ioReq{dir: dir, file: j.cur, off: off, bs: bs}
	if dir == blockdev.OpRead && j.verify != nil && j.verify.checkReads {
		io.check = checkWritten
	}
	return io, true
}

// syncPhase is fio's IO loop for a synchronous engine, over one phase.
func (j *job) syncPhase(t *sim.Task) stopReason {
	opt := j.r.opt
	for {
		now := t.Now() + sim.Time(t.Owed())
		if stop := j.checkStop(now); stop != running {
			return stop
		}
		var stop stopReason
		io, ok := j.next(t, &stop)
		if !ok {
			if stop == running {
				// openfiles: with nothing in flight, fio just tries again.
				continue
			}
			return stop
		}
		if io.sync != "" {
			if stop := j.periodicSync(t, io.sync); stop != running {
				return stop
			}
			continue
		}
		// Charged CPU time (the last call's syscall exit, fio's own work)
		// runs before this IO starts.
		begin := t.Now() + sim.Time(t.Owed())
		j.countIssued(io.dir, begin)
		j.markSyncEngineIO(begin)
		j.countWrite(io, begin)
		j.sampleIssued(begin)
		var err error
		f := io.file
		off := f.regionOff + io.off
		if io.dir == blockdev.OpRead {
			var data *[]blockdev.StampRun
			if io.check != checkNone || f.hist != nil {
				j.data = j.data[:0]
				data = &j.data
			}
			var rc uint64
			if f.hist != nil {
				rc = j.r.integ.readStart()
			}
			if j.spec.Direct {
				err = f.file.DirectRead(t, off, io.bs, data)
			} else {
				err = f.reader().BufferedRead(t, off, io.bs, data)
			}
			if err == nil && f.hist != nil {
				j.r.integ.checkRead(f.hist, rc, off/blockdev.SectorSize, j.data, &j.res.Integrity)
			}
		} else {
			j.stamp.Seq++
			if f.hist != nil {
				j.r.integ.writeStart(f.hist, j.stamp, off, io.bs)
			}
			if j.spec.Direct {
				err = f.file.DirectWrite(t, off, io.bs, j.stamp)
			} else {
				err = f.file.BufferedWrite(t, off, io.bs, j.stamp)
			}
			if f.hist != nil {
				j.r.integ.writeEnd(j.stamp, err == nil)
			}
		}
		end := t.Now() + sim.Time(t.Owed())
		j.lastWasSync = false
		if err != nil {
			if !j.ioFailed(err, ddirName(io.dir), f.name, off, io.bs) {
				return stopFailed
			}
			// A non-fatal error (continue_on_error): the IO was issued,
			// and is not accounted.
			if j.countsAsIO(io.check) {
				j.bytes += io.bs
				j.ios++
			}
			t.ChargeUser(opt.AppPerIO)
			continue
		}
		if h := opt.onIO; h != nil {
			h(j.id, f.name, io.dir, off, io.bs)
		}
		if d := j.countDone(io.dir, io.bs, begin); d != nil {
			lat := int64(end - begin)
			if !j.spec.DisableClat {
				d.Clat.Record(lat)
				d.ClatDist.Record(lat)
			}
			if !j.spec.DisableLat {
				d.Lat.Record(lat)
			}
			j.logDone(d, io.dir, io.bs, off, lat, lat, end)
		}
		j.ios++ // verify reads too: fio's number_ios counts them
		if j.countsAsIO(io.check) {
			j.bytes += io.bs
			j.sampleDone(io.dir, io.bs, end)
		}
		if !j.completed(io, j.stamp, j.data) {
			return stopFailed
		}
		t.ChargeUser(opt.AppPerIO)
		if (j.think.on || j.rate.checkMin) && (j.verify == nil || !j.verify.inPhase) {
			if stop := j.afterIO(t); stop != running {
				return stop
			}
		}
	}
}

// completed does the bookkeeping of a finished IO beyond statistics: the
// verify log of a write (with the stamp it wrote) and the check of a read
// (with the stamps it found). It returns false if the job must stop.
func (j *job) completed(io ioReq, stamp blockdev.Stamp, data []blockdev.StampRun) bool {
	j.think.completed++
	if j.rate.checkMin {
		j.rate.doneBytes[io.dir] += io.bs
		j.rate.doneIOs[io.dir]++
	}
	v := j.verify
	if v == nil {
		return true
	}
	if io.dir == blockdev.OpWrite {
		v.logWrite(io.file, io.file.regionOff+io.off, io.bs, stamp)
		return true
	}
	if io.check != checkNone {
		if msg := v.check(io, data); msg != "" {
			return j.verifyFailed(msg)
		}
	}
	return true
}

// fail records the job's first error.
func (j *job) fail(err error) {
	if j.res.Error != 0 {
		return
	}
	j.res.Error = errnoOf(err)
	j.res.ErrorMsg = err.Error()
}

// pickDir chooses the next IO's direction.
func (j *job) pickDir() blockdev.Op {
	s := j.spec
	switch {
	case !s.RW.HasWrite():
		return blockdev.OpRead
	case !s.RW.HasRead():
		return blockdev.OpWrite
	}
	if j.rng.IntN(100) < s.RWMixRead {
		return blockdev.OpRead
	}
	return blockdev.OpWrite
}

// pickBS chooses the next IO's block size in direction dir, with no
// limit on its length (pickBSIn).
func (j *job) pickBS(dir blockdev.Op) int64 {
	return j.pickBSIn(dir, math.MaxInt64)
}

// pickBSIn chooses the next IO's block size in direction dir for an IO
// with room bytes before its region's end, as fio's get_next_buflen does:
// a direction with one block size takes it as it is; otherwise the size is
// 0 when the smallest does not fit, and else sizes are drawn until one
// fits: from the bssplit table (a draw takes the first entry, from the one
// it lands on, that fits, or the last; cut down to a multiple of the
// smallest size when that is a power of two), or from the bsrange range (a
// multiple of its smallest size).
func (j *job) pickBSIn(dir blockdev.Op, room int64) int64 {
	s := j.spec
	split := s.BSSplit[dir]
	rg := s.BSRange[dir]
	switch {
	case split == nil && rg[1] == 0:
		return s.BS[dir]
	case split == nil && rg[0] == rg[1]:
		return rg[0]
	case split == nil && rg[0] > room, split != nil && !splitFits(split, room):
		return 0
	}
	for {
		var bs int64
		if split != nil {
			u := j.aux.IntN(100)
			perc := 0
			for _, e := range split {
				if e.Percent == 0 {
					continue
				}
				bs = e.BS
				perc += e.Percent
				if u < perc && bs <= room {
					break
				}
			}
			if bs == 0 {
				bs = split[len(split)-1].BS
			}
			// fio get_next_buflen: every size drawn is rounded down to a
			// multiple of the smallest size, a power of two or not
			// (bssplit=3k/50:8k/50 issues 3k and 6k IOs).
			if lo := minBSDir(s, dir); lo > 0 {
				bs -= bs % lo
			}
		} else {
			// fio: minbs + maxbs * uniform, down to a multiple of minbs, at
			// most maxbs.
			lo, hi := rg[0], rg[1]
			bs = lo + j.aux.Int64N(hi)
			bs -= bs % lo
			bs = min(bs, hi)
		}
		if bs <= room {
			return bs
		}
	}
}

// splitFits reports whether a draw from the bssplit table split can give
// a size of at most room.
func splitFits(split []BSSplitEntry, room int64) bool {
	drawn := false
	for _, e := range split {
		if e.Percent > 0 {
			drawn = true
			if e.BS <= room {
				return true
			}
		}
	}
	return !drawn && split[len(split)-1].BS <= room
}

// nextOffset returns the offset in the current file's region and the
// size of the next IO in direction dir (offsetIn, for a job with one
// file). As in fio, the file is done when its region is used up (the next
// sequential IO does not fit, or the random map is exhausted), and then
// ok is false and the phase ends (with another round over the file to
// come if io_size asks for it: filesDone). A time_based job's file starts
// over instead (fio io_u.c get_next_seq_offset and get_next_rand_block,
// for nr_files == 1).
func (j *job) nextOffset(dir blockdev.Op) (off, bs int64, ok bool) {
	j.ensureLayout()
	if j.spec.Strided {
		off, bs = j.stridedOffset(j.cur, dir)
		return off, bs, true
	}
	if off, bs, ok = j.offsetIn(j.cur, dir, !j.spec.TimeBased); ok {
		return off, bs, true
	}
	j.filesDone()
	return 0, 0, false
}

// stridedOffset is nextOffset for a zonemode=strided job, as fio's
// setup_strided_zone_mode and get_next_offset: once zonesize bytes have
// gone to the current zone, the next zone starts zonerange + zoneskip
// further on (at the region's start again past its end) and the
// direction's sequential position moves to it; a sequential position at
// the zone's end goes back to its start; and whenever the zone's bytes
// are a multiple of zonerange the file starts over within the zone
// (positions and random map). The offset and size are then offsetIn's
// over the zone, never used up. Unlike fio, whose zones run on to the
// file's end, the zones stay within the job's region (checkRegion).
func (j *job) stridedOffset(f *jobFile, dir blockdev.Op) (off, bs int64) {
	s := j.spec
	if j.zoneBytes >= s.ZoneSize {
		j.zoneBytes = 0
		f.zoneStart += s.ZoneRange + s.ZoneSkip
		if f.zoneStart >= f.regionLen {
			f.zoneStart = 0
		}
		f.seq[dir] = 0
	}
	if f.seq[dir] >= s.ZoneRange {
		f.seq[dir] = 0
	}
	if j.zoneBytes%s.ZoneRange == 0 {
		f.reset()
	}
	whole := f.regionLen
	f.regionLen = min(s.ZoneRange, whole-f.zoneStart)
	off, bs, _ = j.offsetIn(f, dir, false)
	f.regionLen = whole
	j.zoneBytes += bs
	return f.zoneStart + off, bs
}

// offsetIn returns the offset in f's region and the size of the next IO
// in direction dir: sequential per direction (with rw=MODE:N's holes or
// backward steps), or random over the region, aligned to the job's unit,
// from the job's distribution. A random job's rw=MODE:N and
// percentage_random make some IOs follow on from the previous one
// instead. The size is drawn by pickBS, except for a uniform random
// offset with the random map (randomMapOffset), which picks the offset
// first and then a size that fits, as fio does.
//
// With finite false a used-up region starts over (a sequential one wraps,
// a random map or lfsr starts a new pass) and ok is always true. With
// finite true (a job with several files) ok is false instead when the next
// sequential IO does not fit or, unless the job is time based or its file
// service non-uniform (where fio starts the file over), when the random
// map or lfsr pass is exhausted: fio's get_next_offset failing, which
// makes the file done.
func (j *job) offsetIn(f *jobFile, dir blockdev.Op, finite bool) (off, bs int64, ok bool) {
	s := j.spec
	if !s.RW.Random() {
		return j.seqOffset(f, dir, finite)
	}
	useMap := !s.NoRandomMap && f.dist[dir] == nil
	if !useMap {
		// The offset depends on the size: draw it first.
		bs = j.pickBS(dir)
	}
	random := true
	if s.SeqNr > 1 {
		j.seqLeft--
		if j.seqLeft <= 0 {
			j.seqLeft = s.SeqNr
		} else {
			random = false
		}
	}
	if random && s.PercentSequential[dir] > 0 {
		// fio should_do_random: v = rand_between(1, 100); v <= perc_rand.
		random = j.aux.IntN(100)+1 <= 100-s.PercentSequential[dir]
	}
	if useMap && !random {
		bs = j.pickBS(dir)
	}
	switch {
	case !random && s.RWSequencerIdentical:
		off = f.lastStart[dir]
		if off+bs > f.regionLen {
			off = 0
		}
	case !random:
		off, _ = j.nextSeq(f, dir, bs, false)
	case useMap:
		exhaust := finite && !s.TimeBased && !s.FileService.Kind.NonUniform()
		if off, bs, ok = j.randomMapOffset(f, dir, exhaust); !ok {
			return 0, 0, false
		}
		if s.SeqNr > 1 || s.PercentSequential[dir] > 0 {
			f.seq[dir] = off + bs
		}
	default:
		unit := j.unit
		blocks := (f.regionLen - bs) / unit
		exhaust := finite && !s.TimeBased && !s.FileService.Kind.NonUniform()
		var b int64
		switch g := f.dist[dir]; {
		case g != nil:
			lg, isLFSR := g.(*lfsrGen)
			if exhaust && isLFSR {
				if b, ok = lg.tryNext(blocks + 1); !ok {
					return 0, 0, false
				}
			} else {
				b = g.next(blocks + 1)
			}
		default: // norandommap
			b = j.rng.Int64N(blocks + 1)
		}
		off = b * unit
		if a := s.BlockAlign[dir]; a > unit {
			off -= off % a
		}
		if s.SeqNr > 1 || s.PercentSequential[dir] > 0 {
			f.seq[dir] = off + bs
		}
	}
	f.lastStart[dir] = off
	return off, bs, true
}

// randomMapOffset returns a uniform random offset in f's region for an IO
// in direction dir, and the IO's size, with fio's random map (io_u.c
// get_next_rand_offset, get_next_buflen and mark_random_map). The map has
// a bit per block of the job's smallest block size; the direction draws a
// block in units of its own smallest size (fio's ba) over the region,
// taking, when that bit is set, the next clear bit of the map (wrapping to
// its first). The size is then drawn to fit before the region's end, and
// the IO's blocks are marked up to the first one already marked, the IO
// cut to the blocks it marked: a pass covers the region exactly, and an
// IO that runs into visited blocks is shortened.
//
// As in fio, a direction whose smallest size is larger than the map's
// unit (randrw with bs=4k,16k) reads the map's bits as blocks of its own
// size, so its draws use only the map's first bits, and a clear bit found
// past them is an offset beyond the region: the file is done, as when the
// map is full. With exhaust false the map starts a new pass instead and
// ok is always true.
func (j *job) randomMapOffset(f *jobFile, dir blockdev.Op, exhaust bool) (off, bs int64, ok bool) {
	unit := j.dirUnit(dir)
	limit := f.regionLen / unit
	for {
		b, ok := f.rmap.pick(j.rng, limit)
		if ok && b < limit {
			off = b * unit
			bs = j.pickBSIn(dir, f.regionLen-off)
			if bs == 0 {
				// No size the job draws fits before the region's end
				// (a bssplit entry of 0% made the unit smaller than
				// any size drawn; fio would retry forever): the block
				// is used up, try another.
				f.rmap.mark(b, 1)
				continue
			}
			n := f.rmap.mark(b, (bs+unit-1)/unit)
			return off, min(bs, n*unit), true
		}
		if exhaust {
			return 0, 0, false
		}
		f.rmap.clear()
	}
}

// dirUnit returns the smallest block size of direction dir: the unit of
// its random offsets with the random map (fio's default blockalign).
func (j *job) dirUnit(dir blockdev.Op) int64 {
	if j.mapUnit[dir] == 0 {
		j.mapUnit[dir] = max(minBSDir(j.spec, dir), 1)
	}
	return j.mapUnit[dir]
}

// seqOffset is offsetIn for a sequential job: the next position (nextSeq,
// with room for the direction's smallest size), then a size drawn to fit
// before the region's end, as fio's get_next_buflen redraws until
// io_u_fits, so a job of several sizes moves exactly its region. With
// finite, ok is false when no size the job draws fits (the file is done);
// without, the region starts over.
func (j *job) seqOffset(f *jobFile, dir blockdev.Op, finite bool) (off, bs int64, ok bool) {
	for range 2 {
		if off, ok = j.nextSeq(f, dir, minBSDir(j.spec, dir), finite); !ok {
			return 0, 0, false
		}
		if bs = j.pickBSIn(dir, f.regionLen-off); bs > 0 {
			f.seq[dir] = off + bs
			return off, bs, true
		}
		// Only a bssplit entry of 0% fits what is left.
		if finite {
			return 0, 0, false
		}
		f.seq[dir] = f.regionLen // start over
	}
	return 0, 0, false
}

// nextSeq returns the next sequential offset in f for dir: the end of the
// direction's previous IO, plus rw=MODE:N's step (fio io_u.c
// get_next_seq_offset), wrapping at the region's end (to the end, for
// backward steps). An IO that does not fit before the region's end starts
// over at 0, or, with finite, fails (ok false); with finite, a previous IO
// that ended at the region's end fails too, before any hole is added.
func (j *job) nextSeq(f *jobFile, dir blockdev.Op, bs int64, finite bool) (off int64, ok bool) {
	pos := f.seq[dir]
	if finite && pos >= f.regionLen {
		// fio checks the end of the previous IO against the file's end
		// before it adds rw=MODE:N's hole: a hole from there does not
		// wrap, the file is done.
		return 0, false
	}
	if add := j.spec.SeqAdd; add != 0 && pos != 0 {
		pos += add
		if pos < 0 || pos >= f.regionLen {
			if add > 0 {
				pos = 0
			} else {
				pos = f.regionLen + add
			}
		}
	}
	if pos < 0 || pos+bs > f.regionLen {
		if finite {
			return 0, false
		}
		pos = 0
	}
	f.seq[dir] = pos + bs
	return pos, true
}

// errnoOf returns the errno inside err (EIO if none).
func errnoOf(err error) int {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return int(errno)
	}
	for _, e := range []syscall.Errno{syscall.EINVAL, syscall.EIO, syscall.ENOSPC} {
		if errors.Is(err, e) {
			return int(e)
		}
	}
	return int(syscall.EIO)
}

// randomMap is fio's random map (its axmap): a bitmap of the blocks
// already visited in this pass.
type randomMap struct {
	bits []uint64
	used int64
	n    int64
}

func (m *randomMap) init(n int64) {
	m.n = max(n, 1)
	m.bits = make([]uint64, (m.n+63)/64)
	m.used = 0
}

// clear starts a new pass.
func (m *randomMap) clear() {
	clear(m.bits)
	m.used = 0
}

// isSet reports whether block b is visited.
func (m *randomMap) isSet(b int64) bool {
	return m.bits[b/64]&(1<<(b%64)) != 0
}

// pick draws a block in [0, limit), or, when it is visited, returns the
// next free block after it in the whole map, wrapping to the first free
// one (fio's axmap_next_free, which can return a block at or above
// limit); false when every block is visited. It does not mark the block.
func (m *randomMap) pick(rng *rand.Rand, limit int64) (int64, bool) {
	if m.used >= m.n {
		return 0, false
	}
	b := rng.Int64N(min(limit, m.n))
	if !m.isSet(b) {
		return b, true
	}
	for i := b + 1; i < m.n; {
		if w := ^m.bits[i/64] >> (i % 64); w != 0 {
			if c := i + int64(bits.TrailingZeros64(w)); c < m.n {
				return c, true
			}
			break // the bits past the map's end
		}
		i += 64 - i%64
	}
	for i := int64(0); i < b; i += 64 {
		if w := ^m.bits[i/64]; w != 0 {
			return i + int64(bits.TrailingZeros64(w)), true
		}
	}
	return 0, false
}

// mark marks up to nr blocks from b, stopping at the first one already
// visited or at the map's end, and returns how many it marked (fio's
// axmap_set_nr, as fio 3.33 sets a run).
func (m *randomMap) mark(b, nr int64) int64 {
	n := int64(0)
	for ; n < nr && b+n < m.n && !m.isSet(b+n); n++ {
		m.bits[(b+n)/64] |= 1 << ((b + n) % 64)
	}
	m.used += n
	return n
}

// groupResults builds the reporting groups; group_reporting merges the
// jobs of a group into one entry named after the first.
func groupResults(jobs []*job) []GroupResult {
	var groups []GroupResult
	for _, j := range jobs {
		g := j.res.GroupID
		for len(groups) <= g {
			groups = append(groups, GroupResult{GroupID: len(groups)})
		}
		gr := &groups[g]
		if j.spec.GroupReporting {
			gr.GroupReporting = true
		}
		gr.Jobs = append(gr.Jobs, j.res)
	}
	for i := range groups {
		gr := &groups[i]
		if !gr.GroupReporting || len(gr.Jobs) < 2 {
			continue
		}
		gr.Members = gr.Jobs
		// fio's __show_run_stats takes the name, description and group
		// from the group's first job, and overwrites the option list,
		// percentile settings and latency depth with each job's in turn,
		// so the last job's are reported.
		merged := gr.Jobs[0]
		last := &gr.Jobs[len(gr.Jobs)-1]
		merged.Options, merged.IODepth = last.Options, last.IODepth
		merged.NoClatPercentiles, merged.Percentiles, merged.PercentilePrecision = last.NoClatPercentiles, last.Percentiles, last.PercentilePrecision
		merged.Jobs = len(gr.Jobs)
		merged.Read, merged.Write, merged.CPU, merged.Sync = DirStats{}, DirStats{}, CPUUsage{}, SyncStats{}
		merged.Depths = IODepthDist{}
		merged.Integrity = IntegrityStats{}
		merged.TotalErr, merged.FirstError, merged.ErrorLog = 0, 0, nil
		for k := range gr.Jobs {
			o := &gr.Jobs[k]
			merged.Read.Merge(&o.Read)
			merged.Write.Merge(&o.Write)
			merged.CPU.Merge(&o.CPU)
			merged.Integrity.Merge(&o.Integrity)
			merged.Sync.Merge(&o.Sync)
			merged.Depths.Merge(&o.Depths)
			merged.Runtime = max(merged.Runtime, o.Runtime)
			if merged.Error == 0 && o.Error != 0 {
				merged.Error, merged.ErrorMsg = o.Error, o.ErrorMsg
			}
			// fio's __show_run_stats: the counted errors add up, and
			// first_error is each job's in turn, so the last job's.
			merged.TotalErr += o.TotalErr
			merged.FirstError = o.FirstError
			merged.ErrorLog = append(merged.ErrorLog, o.ErrorLog...)
		}
		gr.Jobs = []JobResult{merged}
	}
	return groups
}

// countWrite counts an IO the loop issued at now, for fsync=N and
// fdatasync=N and for the loop's end: the writes (fio's
// io_issues[DDIR_WRITE]) and the bytes of each direction (fio's
// io_issue_bytes), which run on across loops and start over when the
// ramp ends. syncFile is the file of the last write.
func (j *job) countWrite(io ioReq, now sim.Time) {
	if !j.rampCounted && now >= j.statsFrom {
		j.rampCounted = true
		j.writesIssued = 0
		j.issuedBytes = [2]int64{}
	}
	if j.countsAsIO(io.check) {
		j.issuedBytes[io.dir] += io.bs
	}
	if io.dir == blockdev.OpWrite {
		j.writesIssued++
		j.syncFile = io.file
	}
}

// syncDue is the sync fsync=N or fdatasync=N makes the loop's next IO, as
// fio 3.33's get_rw_ddir decides it when it picks an IO: "sync" when the
// writes issued are a multiple of fsync=N, else "datasync" for
// fdatasync=N, unless the last IO to complete was a sync; "" for none.
// Reads do not change that, so a mixed job syncs again after a read
// while its write count stays a multiple of N, as fio does.
func (j *job) syncDue() string {
	s := j.spec
	n := j.writesIssued
	switch {
	case j.lastWasSync || n == 0 || j.syncFile == nil:
	case s.Fsync > 0 && n%s.Fsync == 0:
		return "sync"
	case s.Fdatasync > 0 && n%s.Fdatasync == 0:
		return "datasync"
	}
	return ""
}

// loopGoesOn reports whether fio's do_io would pick another IO after the
// phase's last one: number_ios is not reached, and the job is time_based
// or (io_issue_bytes_exceeded is false) the bytes issued, over all loops,
// of the job's directions are short of its size (or io_size) times its
// loops.
func (j *job) loopGoesOn() bool {
	s := j.spec
	if s.NumberIOs > 0 && j.ios >= s.NumberIOs {
		return false
	}
	if s.TimeBased {
		// do_io's loop runs on whatever was issued while time_based.
		return true
	}
	var b int64
	switch {
	case s.RW.HasRead() && s.RW.HasWrite():
		b = j.issuedBytes[0] + j.issuedBytes[1]
	case s.RW.HasWrite():
		b = j.issuedBytes[1]
	default:
		b = j.issuedBytes[0]
	}
	limit := s.Size
	if s.IOSize > 0 {
		limit = s.IOSize
	}
	return b < limit*int64(max(s.Loops, 1))
}

// issueDueSync ends an IO phase that ended by doing its files' size: if
// fio's do_io goes on (loopGoesOn), the sync due after the phase's last
// write is its next IO. It returns running unless the job must stop.
func (j *job) issueDueSync(t *sim.Task) stopReason {
	ddir := j.syncDue()
	if ddir == "" || !j.loopGoesOn() {
		return running
	}
	return j.periodicSync(t, ddir)
}

// periodicSync issues the sync fsync=N or fdatasync=N asks for (ddir:
// "sync" or "datasync"), one IO of the loop as fio's sync io_u: counted and timed
// in the job's Sync figures once the ramp is over, and an IO error of
// the job if it fails. It returns running unless the job must stop.
func (j *job) periodicSync(t *sim.Task, ddir string) stopReason {
	f := j.syncFile
	begin := t.Now() + sim.Time(t.Owed())
	account := begin >= j.statsFrom
	switch {
	case ddir == "datasync" && account:
		j.res.Sync.IssuedDatasync++
	case ddir == "datasync":
		j.ramp.dsyncs++
	case account:
		j.res.Sync.IssuedFsync++
	default:
		j.ramp.fsync++
	}
	j.markSyncEngineIO(begin)
	// Through the job's own open file description: each job learns of a
	// writeback error of the file once (errseq).
	sync := f.reader().Fsync
	if ddir == "datasync" {
		sync = f.reader().Fdatasync
	}
	err := sync(t)
	j.lastWasSync = true
	if err != nil {
		if !j.ioFailed(err, ddir, f.name, 0, 0) {
			return stopFailed
		}
		return running
	}
	if account {
		j.res.Sync.IOs++
		j.res.Sync.Lat.Record(int64(t.Now() + sim.Time(t.Owed()) - begin))
	} else {
		j.ramp.syncs++
	}
	t.ChargeUser(j.r.opt.AppPerIO)
	return running
}

// markSyncEngineIO counts an IO a synchronous engine issued at time at
// (an IO of the loop, or a sync of fsync=N) in the job's queue depths:
// one unit in use, one submitting and one reaping call of one IO (fio's
// td_io_queue for an engine without a commit hook).
func (j *job) markSyncEngineIO(at sim.Time) {
	d := j.depthsAt(at)
	d.markLevel(1, 1)
	d.markSubmit(1)
	d.markComplete(1)
}

package workload

import (
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/fsmodel"
	"github.com/blksim/blksim/sim"
)

// This file is fio's IO loop for the asynchronous engines libaio and
// io_uring (fio backend.c do_io, wait_for_completions; io_u.c
// io_u_queued_complete; ioengines.c td_io_queue, td_io_getevents; engines/
// libaio.c and io_uring.c), on top of the kernel side that the aioContext
// also holds: the completion ring of the job's AIO context or io_uring.
//
// One job is one task. It prepares IOs (fio's io_u) while it has free
// units, submits them iodepth_batch_submit at a time in one system call,
// and reaps completions when all iodepth units are in use: it waits for at
// least iodepth_batch_complete_min and takes up to
// iodepth_batch_complete_max, and repeats until no more than iodepth_low
// are in use. The latencies are fio's: slat from preparing an IO to the
// return of the call that submitted it, clat from there to the return of
// the call that reaped its completion, lat the sum.
//
// CPU costs, per system call: io_submit and io_uring_enter charge the
// host's syscall cost once per batch, and each IO in it the direct-IO
// submission costs (fsmodel.File.DirectAIO). libaio reaps with
// io_getevents, one syscall per reap; io_uring reaps from its completion
// queue in user space and enters the kernel only to wait. Each reaped IO
// costs the direct-IO completion time.
//
// Not modelled: io_uring's non-blocking first attempt (IOCB_NOWAIT) and
// its punting to io-wq workers when the inode lock is contended; both
// engines block in the submitting call, as io_submit does.

// aioPlugThreshold is the number of iocbs above which io_submit and
// io_uring_enter submit under one block plug (fs/aio.c AIO_PLUG_THRESHOLD,
// io_uring's IO_PLUG_THRESHOLD): smaller batches go through each direct
// IO's own plug.
const aioPlugThreshold = 2

// ioUnit is one of an asynchronous job's iodepth IO units (fio's io_u).
type ioUnit struct {
	cb    fsmodel.IOCB
	ctx   *aioContext
	dir   blockdev.Op
	file  *jobFile
	off   int64 // in the file
	bs    int64
	stamp blockdev.Stamp
	check verifyCheck
	start sim.Time // prepared (fio's start_time)
	issue sim.Time // the call that submitted it returned (fio's issue_time)
	// dropped marks a unit whose submission failed (commit).
	dropped bool
	// rc is what the atomicity oracle's readStart returned when a read
	// was submitted.
	rc uint64
}

// AIODone puts the completed unit on the completion ring.
func (u *ioUnit) AIODone(*fsmodel.IOCB) { u.ctx.completed(u) }

// unitRing is a FIFO of completed units with a fixed capacity.
type unitRing struct {
	buf  []*ioUnit
	head int
	n    int
}

func (r *unitRing) push(u *ioUnit) {
	r.buf[(r.head+r.n)%len(r.buf)] = u
	r.n++
}

func (r *unitRing) pop() *ioUnit {
	u := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return u
}

// aioContext is an asynchronous job's state: fio's io_u lists and counts,
// and the kernel's completion ring and the wait on it.
type aioContext struct {
	j      *job
	depths JobSpec // the job's spec with fio's depth fixups applied
	t      *sim.Task
	fs     *fsmodel.FS
	uring  bool
	costs  fsmodel.Costs

	free   []*ioUnit // fio's io_u_freelist
	queued []*ioUnit // prepared, not yet submitted (the engine's queue)
	// ioUQueued is fio's td->io_u_queued: units queued since the loop
	// last committed (td_io_commit). A submission made on the way to
	// reap (the engine's own commit) does not reset it, so the loop's
	// next commit counts those units in the depth figures too, and it
	// may then come with fewer than iodepth_batch_submit units queued.
	ioUQueued int
	ring      unitRing  // completed, not yet reaped
	reaped    []*ioUnit // scratch for one reap
	// curDepth counts units not on the free list (fio's cur_depth):
	// queued, in flight or completed and not yet reaped.
	curDepth int
	// need is the ring length the sleeping task waits for (0: it does
	// not wait).
	need   int
	wq     sim.WaitQueue
	failed bool
	// stop is set when reaping ends the phase without an IO error (a
	// verify_fatal check); app is fio's per-IO CPU time.
	stop stopReason
	app  time.Duration
}

func newAIOContext(j *job, t *sim.Task, fsys *fsmodel.FS) *aioContext {
	app := time.Duration(0)
	if j.r != nil {
		app = j.r.opt.AppPerIO
	}
	// The parser has applied fio's fixups; a JobSpec built in code may
	// not have (its zero batch sizes mean iodepth, as in fio).
	s := *j.spec
	fixupDepths(&s)
	a := &aioContext{j: j, depths: s, t: t, fs: fsys, uring: s.IOEngine == "io_uring", costs: fsys.Costs(), app: app}
	units := make([]ioUnit, s.IODepth)
	a.free = make([]*ioUnit, 0, s.IODepth)
	for i := len(units) - 1; i >= 0; i-- {
		u := &units[i]
		u.ctx = a
		u.cb.Handler = u
		a.free = append(a.free, u)
	}
	a.queued = make([]*ioUnit, 0, s.IODepth)
	a.reaped = make([]*ioUnit, 0, s.IODepth)
	a.ring.buf = make([]*ioUnit, s.IODepth)
	return a
}

// completed is the kernel's completion of u (aio_complete, or a CQE
// posted): it joins the ring, and the task is woken when the ring holds
// what it waits for.
func (a *aioContext) completed(u *ioUnit) {
	a.ring.push(u)
	if a.need > 0 && a.ring.n >= a.need {
		a.need = 0
		a.wq.WakeOne()
	}
}

// runAsync is the job's simulated thread for an asynchronous engine.
func (j *job) runAsync(t *sim.Task, fsys *fsmodel.FS) {
	start, ok := j.waitToStart(t)
	if ok {
		j.invalidate()
		j.begin(start)
		a := newAIOContext(j, t, fsys)
		j.quiesce = a.quiesce
		j.loops(t, a.phase)
		j.setRuntime(t)
	}
	j.end(t)
}

// phase is fio's IO loop for an asynchronous engine, over one phase of
// the job; it returns with nothing in flight.
func (a *aioContext) phase(t *sim.Task) stopReason {
	j := a.j
	d := &a.depths
	polling := d.IODepthBatchCompleteMin == 0 && d.IODepthBatchCompleteMax == 0
	stop := running
	for !a.failed {
		now := t.Now() + sim.Time(t.Owed())
		if stop = j.checkStop(now); stop != running {
			break
		}
		// get_io_u: a free unit, its file, direction, offset and data.
		io, ok := j.next(t, &stop)
		if !ok {
			if stop != running {
				break
			}
			// openfiles: the file to use cannot be opened yet. fio
			// reaps a completion if IO is in flight, and tries again.
			if a.curDepth > 0 || polling {
				a.waitForCompletions(false)
			}
			if a.failed || a.stop != running {
				break
			}
			continue
		}
		u := a.free[len(a.free)-1]
		a.free = a.free[:len(a.free)-1]
		a.curDepth++
		u.dir, u.bs, u.file, u.off, u.check = io.dir, io.bs, io.file, io.file.regionOff+io.off, io.check
		u.file.inflight++
		u.cb.CollectData = io.check != checkNone || u.file.hist != nil
		if u.dir == blockdev.OpWrite {
			j.stamp.Seq++
			u.stamp = j.stamp
		}
		t.ChargeUser(a.app)
		u.start = t.Now() + sim.Time(t.Owed())
		// td_io_queue: the engine queues it; a full batch is submitted.
		a.queued = append(a.queued, u)
		a.ioUQueued++
		j.sampleIssued(u.start)
		j.countIssued(u.dir, u.start)
		if j.countsAsIO(io.check) {
			j.bytes += u.bs
		}
		j.ios++ // verify reads too: fio's number_ios counts them
		j.think.issued++
		if a.ioUQueued >= d.IODepthBatchSubmit {
			a.tdCommit()
		}
		if a.failed {
			break
		}
		if full := len(a.free) == 0; full || polling {
			a.waitForCompletions(full)
		}
		if a.stop != running {
			break
		}
		if (j.think.on || j.rate.checkMin) && (j.verify == nil || !j.verify.inPhase) {
			if stop = j.afterIO(t); stop != running {
				break
			}
		}
	}
	// Reap everything still queued or in flight (fio does this after its
	// loop, also after an error).
	if a.curDepth > 0 {
		a.queuedComplete(a.curDepth)
	}
	switch {
	case a.failed:
		return stopFailed
	case a.stop != running:
		s := a.stop
		a.stop = running
		return s
	}
	return stop
}

// quiesce is fio's io_u_quiesce: submit what is queued, then reap until
// nothing is in flight.
func (a *aioContext) quiesce() {
	a.tdCommit()
	for a.curDepth > 0 {
		a.queuedComplete(1)
	}
}

// depthsNow is where the job's queue depths count now (job.depthsAt).
func (a *aioContext) depthsNow() *IODepthDist {
	return a.j.depthsAt(a.t.Now() + sim.Time(a.t.Owed()))
}

// tdCommit is fio's td_io_commit: count the units queued since the last
// one at the job's current depth (io_u_mark_depth), then submit what the
// engine holds.
func (a *aioContext) tdCommit() {
	if a.curDepth == 0 || a.ioUQueued == 0 {
		return
	}
	a.depthsNow().markLevel(a.curDepth, a.ioUQueued)
	a.ioUQueued = 0
	a.commit()
}

// commit submits the queued units in one system call (io_submit, or
// io_uring_enter), under one plug when there are more than
// aioPlugThreshold. An IO that cannot be submitted fails the job; it and
// the units after it go back to the free list.
func (a *aioContext) commit() {
	n := len(a.queued)
	if n == 0 {
		return
	}
	t := a.t
	sys := a.costs.Syscall
	t.Charge(sys / 2)
	var batch *fsmodel.Batch
	if n > aioPlugThreshold {
		batch = a.fs.StartBatch(t)
	}
	submitted, ok := 0, 0
	for _, u := range a.queued {
		var err error
		file, hist := u.file.file, u.file.hist
		if hist != nil {
			if u.dir == blockdev.OpRead {
				u.rc = a.j.r.integ.readStart()
			} else {
				a.j.r.integ.writeStart(hist, u.stamp, u.off, u.bs)
			}
		}
		switch {
		case !a.j.spec.Direct || a.fs.DAX():
			// Buffered and DAX IO completes inside the submitting call.
			err = a.bufferedSubmit(t, u)
		case u.dir == blockdev.OpRead:
			err = file.DirectAIO(t, blockdev.OpRead, u.off, u.bs, blockdev.Stamp{}, &u.cb)
		default:
			err = file.DirectAIO(t, blockdev.OpWrite, u.off, u.bs, u.stamp, &u.cb)
		}
		if err != nil {
			if hist != nil && u.dir == blockdev.OpWrite {
				a.j.r.integ.writeEnd(u.stamp, false)
			}
			submitted++
			if a.j.ioFailed(err, ddirName(u.dir), u.file.name, u.off, u.bs) {
				// continue_on_error: this one is over, the rest go on.
				u.dropped = true
				continue
			}
			a.failed = true
			u.dropped = true
			break
		}
		submitted++
		ok++
	}
	if batch != nil {
		batch.Finish()
	}
	t.Charge(sys - sys/2)
	if ok > 0 {
		// The engine's commit counts what the call submitted.
		a.depthsNow().markSubmit(ok)
	}
	issue := t.Now() + sim.Time(t.Owed())
	for i, u := range a.queued {
		if i < submitted && !u.dropped {
			u.issue = issue
			if u.start >= a.j.statsFrom {
				a.j.logSubmitted(u.dir, u.bs, u.off, int64(issue-u.start), issue)
			}
		} else {
			u.dropped = false
			a.put(u)
		}
		a.queued[i] = nil
	}
	a.queued = a.queued[:0]
}

// waitForCompletions is fio's wait_for_completions: reap at least
// iodepth_batch_complete_min (at least one when the queue is full or that
// option is 0), and while the queue was full keep reaping until no more
// than iodepth_low units are in use.
func (a *aioContext) waitForCompletions(full bool) {
	s := &a.depths
	minEvents := min(s.IODepthBatchCompleteMin, a.curDepth)
	if full && minEvents == 0 || s.IODepthBatchCompleteMin == 0 {
		minEvents = 1
	}
	for {
		a.queuedComplete(minEvents)
		if a.failed || !full || a.curDepth <= s.IODepthLow {
			return
		}
	}
}

// queuedComplete is fio's io_u_queued_complete and td_io_getevents: submit
// what is queued if it will wait, reap between minEvents and
// iodepth_batch_complete_max completions, and account them.
func (a *aioContext) queuedComplete(minEvents int) {
	s := &a.depths
	minEvents = min(minEvents, a.curDepth)
	if minEvents > 0 && len(a.queued) > 0 {
		a.commit()
		// A failed submission returned units: wait for no more than
		// can complete.
		minEvents = min(minEvents, a.curDepth)
	}
	maxEvents := min(s.IODepthBatchCompleteMax, a.curDepth)
	maxEvents = max(maxEvents, minEvents)
	if maxEvents == 0 {
		a.depthsNow().markComplete(0)
		return
	}
	if a.uring {
		a.getEventsURing(minEvents, maxEvents)
	} else {
		a.getEventsLibaio(minEvents, maxEvents)
	}
	t := a.t
	now := t.Now() + sim.Time(t.Owed())
	// td_io_getevents counts the call and what it reaped.
	a.j.depthsAt(now).markComplete(len(a.reaped))
	for i, u := range a.reaped {
		a.account(u, now)
		a.put(u)
		a.reaped[i] = nil
	}
	a.reaped = a.reaped[:0]
}

// getEventsLibaio is fio's libaio getevents: io_getevents(min, max) system
// calls until minEvents are reaped. With iodepth_batch_complete_min=0 the
// calls do not wait (fio then polls).
func (a *aioContext) getEventsLibaio(minEvents, maxEvents int) {
	t := a.t
	sys := a.costs.Syscall
	waitFor := minEvents
	if a.depths.IODepthBatchCompleteMin == 0 {
		waitFor = 0
	}
	for {
		t.Charge(sys / 2)
		a.wait(waitFor)
		r := a.take(maxEvents - len(a.reaped))
		t.Charge(sys - sys/2)
		waitFor = max(waitFor-r, 0)
		if len(a.reaped) >= minEvents {
			return
		}
	}
}

// getEventsURing is fio's io_uring getevents: reap the completion queue in
// user space, and enter the kernel (io_uring_enter with GETEVENTS) only to
// wait for the rest. With iodepth_batch_complete_min=0 the entries do not
// wait (fio then polls).
func (a *aioContext) getEventsURing(minEvents, maxEvents int) {
	t := a.t
	sys := a.costs.Syscall
	waitFor := minEvents
	if a.depths.IODepthBatchCompleteMin == 0 {
		waitFor = 0
	}
	for {
		t.Flush() // look at the ring when the task gets there
		r := a.take(maxEvents - len(a.reaped))
		waitFor = max(waitFor-r, 0)
		if len(a.reaped) >= minEvents {
			return
		}
		if r > 0 {
			continue
		}
		t.Charge(sys / 2)
		a.wait(waitFor)
		t.Charge(sys - sys/2)
	}
}

// wait runs t's charged CPU time, then sleeps until the ring holds at
// least n completions.
func (a *aioContext) wait(n int) {
	t := a.t
	t.Flush()
	for a.ring.n < n {
		a.need = n
		a.wq.Wait(t)
	}
}

// take moves up to n completions from the ring to the reaped list,
// charging each one's completion work, and returns how many it moved.
func (a *aioContext) take(n int) int {
	n = min(n, a.ring.n)
	for range n {
		a.reaped = append(a.reaped, a.ring.pop())
	}
	a.t.Charge(a.costs.DIOComplete * time.Duration(n))
	return n
}

// account records a reaped unit in the job's statistics at reap time now,
// or fails the job if the IO failed.
func (a *aioContext) account(u *ioUnit, now sim.Time) {
	j := a.j
	j.lastWasSync = false
	if hist := u.file.hist; hist != nil {
		switch {
		case u.dir == blockdev.OpWrite:
			j.r.integ.writeEnd(u.stamp, u.cb.Err == nil)
		case u.cb.Err == nil:
			j.r.integ.checkRead(hist, u.rc, u.off/blockdev.SectorSize, u.cb.Data, &j.res.Integrity)
		}
	}
	if u.cb.Err != nil {
		a.ioFailed(u, u.cb.Err)
		return
	}
	if h := j.r.opt.onIO; h != nil {
		h(j.id, u.file.name, u.dir, u.off, u.bs)
	}
	if d := j.countDone(u.dir, u.bs, u.start); d != nil {
		s := j.spec
		if !s.DisableSlat {
			d.Slat.Record(int64(u.issue - u.start))
		}
		if !s.DisableClat {
			d.Clat.Record(int64(now - u.issue))
			d.ClatDist.Record(int64(now - u.issue))
		}
		if !s.DisableLat {
			d.Lat.Record(int64(now - u.start))
		}
		j.logDone(d, u.dir, u.bs, u.off, int64(now-u.start), int64(now-u.issue), now)
	}
	if j.countsAsIO(u.check) {
		j.sampleDone(u.dir, u.bs, now)
	}
	io := ioReq{dir: u.dir, file: u.file, off: u.off - u.file.regionOff, bs: u.bs, check: u.check}
	if !j.completed(io, u.stamp, u.cb.Data) && a.stop == running {
		a.stop = stopFailed
	}
}

// ioFailed handles unit u's failed IO (job.ioFailed): the job stops
// issuing IO unless continue_on_error covers the error.
func (a *aioContext) ioFailed(u *ioUnit, err error) {
	if a.j.ioFailed(err, ddirName(u.dir), u.file.name, u.off, u.bs) {
		return
	}
	a.failed = true
}

// put returns a unit to the free list; its IO is over.
func (a *aioContext) put(u *ioUnit) {
	a.free = append(a.free, u)
	a.curDepth--
	a.j.ioEnded(u.file)
}

// bufferedSubmit is io_submit (or io_uring's submission) of an IO on a
// buffered file: Linux performs it synchronously inside the submitting
// call (the read or write goes through the page cache, blocking as it
// must), and its completion is ready when the call returns.
func (a *aioContext) bufferedSubmit(t *sim.Task, u *ioUnit) error {
	f := u.file.file
	var err error
	if u.dir == blockdev.OpRead {
		var data *[]blockdev.StampRun
		if u.cb.CollectData {
			u.cb.Data = u.cb.Data[:0]
			data = &u.cb.Data
		}
		err = u.file.reader().ReadIter(t, u.off, u.bs, data)
	} else {
		err = f.WriteIter(t, u.off, u.bs, u.stamp)
	}
	if err == nil {
		u.cb.Completed = t.Now()
		a.completed(u)
	}
	return err
}

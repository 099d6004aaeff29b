package sim

import (
	"iter"
	"runtime/debug"
	"time"
)

type taskState uint8

const (
	taskNew taskState = iota
	taskRunning
	taskBlocked
	taskDone
)

// stopSignal unwinds a task whose coroutine is being stopped by Close.
type stopSignal struct{}

// Task is a simulated thread: a sequential function that blocks only
// through engine primitives. A Task's methods may be called only from the
// task's own function (they block the task); its accessors may be called
// from anywhere on the engine goroutine.
type Task struct {
	e     *Engine
	name  string
	id    int
	state taskState
	// running is true while the task executes or burns CPU (spinning
	// included); false while it sleeps or waits for a CPU. Optimistic
	// spinners look at the owner's running flag.
	running  bool
	stopping bool
	// pending is set while a resume event is scheduled; a second one would
	// be a model bug.
	pending bool

	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool

	// CPU scheduling.
	cpu     int
	lastCPU int
	burst   time.Duration
	// owed is CPU time charged but not yet run (see Charge); owedUser is
	// the part of it charged as user time (ChargeUser).
	owed, owedUser time.Duration
	// usr and sys are the CPU time run in user and system mode (spinning
	// counts as system time); nvcsw and nivcsw count voluntary and
	// involuntary context switches.
	usr, sys      time.Duration
	nvcsw, nivcsw uint64

	// Intrusive wait-list links: a task waits on one thing at a time.
	prev, nextW *Task
	list        *taskList
	// Wait bookkeeping used by the lock primitives.
	waitWrite bool
	waitSince Time
	granted   bool
	woken     bool
	spinning  bool
	spinStart Time
	spinLock  *RWSem
	// spinSeq numbers spins, so that a spin-limit timer of an earlier
	// spin does nothing.
	spinSeq uint64

	held []heldLock

	sleepHook SleepHook
	daemon    bool
	// polling is SetPolling's: the task's own events are daemon work.
	polling bool
}

// SetDaemon marks the task as a service thread (a flusher, a kworker)
// that may sleep forever: Engine.Tasks does not count it, so a run whose
// workload tasks have all finished is complete, and its resumes from now
// on (wake-ups, CPU bursts) are daemon work that does not end a stall
// (see Engine.SetStallLimit). Close stops it as any other task.
func (t *Task) SetDaemon() {
	if !t.daemon && t.state != taskDone {
		t.e.live--
	}
	t.daemon = true
}

// SetPolling marks the task, while on is true, as polling for progress
// that other tasks or devices must make (balance_dirty_pages pausing
// until writeback catches up): its own events (timed sleeps, CPU bursts,
// wake-ups) are then daemon work, so a run whose only activity is such
// polling is stalled (see Engine.SetStallLimit). Events already
// scheduled keep their kind. It returns the previous setting, for
// restoring: defer t.SetPolling(t.SetPolling(true)).
func (t *Task) SetPolling(on bool) (was bool) {
	was, t.polling = t.polling, on
	return was
}

// SleepHook is told when a task is about to sleep (block other than for a
// CPU or an optimistic spin), or when it stops spinning on a lock and
// sleeps: then BeforeSleep runs from whatever task or handler ended the
// spin, so it must not block. A block plug uses it to flush its batch.
type SleepHook interface {
	BeforeSleep(t *Task)
}

// SetSleepHook installs h (nil removes it) and returns the previous hook.
func (t *Task) SetSleepHook(h SleepHook) SleepHook {
	old := t.sleepHook
	t.sleepHook = h
	return old
}

// LastCPU returns the CPU the task last ran a burst on (0 before any).
func (t *Task) LastCPU() int { return t.lastCPU }

type heldLock struct {
	l     *RWSem
	write bool
	at    Time
}

// Go creates a task named name that runs fn, starting at the current time
// (after events already scheduled for it). The name appears in panics and
// statistics. On a closed engine the task never runs (it is Done at once).
func (e *Engine) Go(name string, fn func(t *Task)) *Task {
	t := &Task{e: e, name: name, id: e.nextID, cpu: -1}
	e.nextID++
	seq := func(yield func(struct{}) bool) {
		t.yield = yield
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(stopSignal); ok {
					return
				}
				if e.err == nil {
					e.err = &TaskPanicError{Task: t.name, Time: e.now, Value: r, Stack: string(debug.Stack())}
				}
			}
		}()
		fn(t)
		t.Flush() // run CPU time charged at the very end
	}
	t.next, t.stop = iter.Pull(seq)
	if e.closed {
		// Fix (tests): iter.Pull has already created the coroutine's
		// goroutine; on a closed engine nothing would ever stop it.
		t.stop()
		t.state = taskDone
		return t
	}
	e.tasks = append(e.tasks, t)
	e.live++
	t.wake(0)
	return t
}

// Name returns the task's name.
func (t *Task) Name() string { return t.name }

// ID returns the task's creation index (0 for the first task).
func (t *Task) ID() int { return t.id }

// Engine returns the engine the task runs on.
func (t *Task) Engine() *Engine { return t.e }

// Now returns the engine's current time.
func (t *Task) Now() Time { return t.e.now }

// Running reports whether the task is executing or burning CPU (as opposed
// to sleeping or waiting for a CPU).
func (t *Task) Running() bool { return t.running }

// Fire resumes the task; the engine calls it for the task's own events.
func (t *Task) Fire(uint64) {
	if t.state == taskDone {
		return
	}
	t.pending = false
	e := t.e
	prev := e.current
	e.current = t
	t.state = taskRunning
	t.running = true
	_, ok := t.next()
	e.current = prev
	if !ok {
		t.state = taskDone
		t.running = false
		if e.closed {
			return // Close already counted and dropped it
		}
		if !t.daemon {
			e.live--
		}
		e.reap()
	}
}

// Done reports whether the task has ended: its function returned or
// panicked, or Close stopped it. A task created on a closed engine is done
// at once. It may be called from anywhere on the engine goroutine.
func (t *Task) Done() bool { return t.state == taskDone }

// reap drops finished tasks from the live list once enough accumulate.
func (e *Engine) reap() {
	if len(e.tasks) < 64 {
		return
	}
	live := e.tasks[:0]
	for _, t := range e.tasks {
		if t.state != taskDone {
			live = append(live, t)
		}
	}
	for i := len(live); i < len(e.tasks); i++ {
		e.tasks[i] = nil
	}
	e.tasks = live
}

// park suspends the task until something schedules it again. sleeping says
// whether the task leaves the CPU (it is then not running, and spinners on
// locks it owns give up).
func (t *Task) park(sleeping bool) {
	if sleeping && t.sleepHook != nil {
		// Like the kernel's sched_submit_work: work the task batched
		// (a block plug) is flushed before it sleeps.
		t.sleepHook.BeforeSleep(t)
	}
	if sleeping {
		t.nvcsw++
	}
	t.parkAs(sleeping)
}

// parkRunnable parks a task that is runnable but off CPU (waiting in the
// run queue): it is not running, but it does not sleep, so the sleep hook
// does not run.
func (t *Task) parkRunnable() { t.parkAs(true) }

func (t *Task) parkAs(offCPU bool) {
	if t.stopping {
		panic(stopSignal{})
	}
	if t.e.current != t {
		panic("sim: blocking call from outside the task's own function")
	}
	t.state = taskBlocked
	if offCPU {
		t.running = false
		t.ownerLeftCPU()
	}
	if !t.yield(struct{}{}) {
		t.stopping = true
		panic(stopSignal{})
	}
}

// ownerLeftCPU makes optimistic spinners on locks this task owns give up.
func (t *Task) ownerLeftCPU() {
	for i := range t.held {
		if h := &t.held[i]; h.write && h.l.spinners.n > 0 {
			h.l.ownerSleeps()
		}
	}
}

// wake schedules a parked task to run after d. A task that Close is
// stopping is never scheduled again (its next park unwinds it).
func (t *Task) wake(d time.Duration) {
	if t.stopping {
		return
	}
	if t.pending {
		panic("sim: task " + t.name + " woken twice")
	}
	t.pending = true
	t.e.schedule(t.e.after(d), t, 0, t.daemon || t.polling)
}

// Charge adds d of CPU time that the task will run at its next engine
// call: the next CPU call runs it in the same burst, and every other
// blocking or lock primitive runs it first. Charging lets consecutive CPU
// costs separated by pure bookkeeping cost one event instead of several;
// the task must not touch shared model state (queues, devices) between a
// Charge and its next engine call.
func (t *Task) Charge(d time.Duration) {
	if d > 0 {
		t.owed += d
	}
}

// ChargeUser is Charge for CPU time spent in user mode (the application's
// own work between system calls, fio's io_u handling): it runs the same
// way and counts as user time in CPUTimes and Engine.CPUStats. Everything
// charged with Charge or run with CPU is system time.
func (t *Task) ChargeUser(d time.Duration) {
	if d > 0 {
		t.owed += d
		t.owedUser += d
	}
}

// Owed returns the CPU time charged but not yet run (user and system).
func (t *Task) Owed() time.Duration { return t.owed }

// CPUTimes is a task's resource usage, as getrusage reports a thread's.
type CPUTimes struct {
	// User and Sys are the CPU time the task ran in user mode (ChargeUser,
	// CPUUser) and in system mode (CPU, Charge, and optimistic spinning
	// on locks).
	User, Sys time.Duration
	// Voluntary counts the times the task slept (blocked off CPU on a
	// lock, a wait queue, a completion, a semaphore or Sleep), the
	// kernel's nvcsw; Involuntary the times it waited in the run queue
	// because every CPU was busy (nivcsw).
	Voluntary, Involuntary uint64
}

// CPUTimes returns the task's CPU times and context switches so far (CPU
// time charged but not yet run is not included).
func (t *Task) CPUTimes() CPUTimes {
	return CPUTimes{User: t.usr, Sys: t.sys, Voluntary: t.nvcsw, Involuntary: t.nivcsw}
}

// Flush runs any charged CPU time now.
func (t *Task) Flush() {
	if t.owed > 0 {
		t.CPU(0)
	}
}

// Sleep blocks the task for d of simulated time without using a CPU (after
// running any charged CPU time).
func (t *Task) Sleep(d time.Duration) {
	t.Flush()
	if d <= 0 {
		return
	}
	t.wake(d)
	t.park(true)
}

// Yield lets every other event scheduled for the current time run first.
func (t *Task) Yield() {
	t.Flush()
	t.wake(0)
	t.park(false)
}

// CPU runs the task on one of the host's CPUs for d of simulated time,
// in system mode. If every CPU is busy the task waits in a FIFO run queue
// first (and is not running while it waits; that counts as an involuntary
// context switch). Charged CPU time runs in the same burst.
func (t *Task) CPU(d time.Duration) { t.burstFor(d, false) }

// CPUUser is CPU for CPU time in user mode (the application's work).
func (t *Task) CPUUser(d time.Duration) { t.burstFor(d, true) }

func (t *Task) burstFor(d time.Duration, user bool) {
	u := t.owedUser
	if user && d > 0 {
		u += d
	}
	d += t.owed
	t.owed, t.owedUser = 0, 0
	if d <= 0 {
		return
	}
	u = min(u, d)
	p := &t.e.cpus
	if id, ok := p.take(); ok {
		t.cpu = id
		t.wake(d)
		t.park(false)
	} else {
		t.burst = d
		p.runq.pushBack(t)
		t.nivcsw++
		t.parkRunnable()
	}
	p.user[t.cpu] += u
	p.release(t.cpu)
	t.usr += u
	t.sys += d - u
	t.lastCPU = t.cpu
	t.cpu = -1
}

// spun accounts d of optimistic spinning: system CPU time of the task.
func (t *Task) spun(d time.Duration) {
	t.sys += d
	t.e.spinTotal += d
}

// resumeAfterSleep charges the host's context-switch cost after a sleep;
// it runs with the task's next CPU burst.
func (t *Task) resumeAfterSleep() {
	t.Charge(t.e.host.ContextSwitch)
}

// cpuPool is the set of simulated CPUs and the run queue.
type cpuPool struct {
	e     *Engine
	free  []int // free CPU ids, lowest last popped first
	runq  taskList
	busy  []time.Duration
	user  []time.Duration // the user-mode part of busy, per CPU
	since []Time
}

func (p *cpuPool) init(e *Engine, n int) {
	p.e = e
	p.free = make([]int, 0, n)
	for i := n - 1; i >= 0; i-- {
		p.free = append(p.free, i)
	}
	p.busy = make([]time.Duration, n)
	p.user = make([]time.Duration, n)
	p.since = make([]Time, n)
}

func (p *cpuPool) take() (int, bool) {
	if len(p.free) == 0 {
		return 0, false
	}
	id := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	p.since[id] = p.e.now
	return id, true
}

func (p *cpuPool) release(id int) {
	p.busy[id] += time.Duration(p.e.now - p.since[id])
	if w := p.runq.popFront(); w != nil {
		w.cpu = id
		// Fix (tests): w burns CPU from now on, so it is running (spinners
		// on locks it owns may spin); it was marked not running while it
		// waited in the run queue.
		w.running = true
		p.since[id] = p.e.now
		w.wake(w.burst)
		return
	}
	p.free = append(p.free, id)
	// keep the lowest id on top so allocation is deterministic and compact
	for i := len(p.free) - 1; i > 0 && p.free[i] > p.free[i-1]; i-- {
		p.free[i], p.free[i-1] = p.free[i-1], p.free[i]
	}
}

// CPUBusy returns the simulated busy time of each CPU so far (bursts that
// are still running are counted up to Now).
func (e *Engine) CPUBusy() []time.Duration {
	out := make([]time.Duration, len(e.cpus.busy))
	copy(out, e.cpus.busy)
	for id := range out {
		inUse := true
		for _, f := range e.cpus.free {
			if f == id {
				inUse = false
				break
			}
		}
		if inUse {
			out[id] += time.Duration(e.now - e.cpus.since[id])
		}
	}
	return out
}

// CPUStat is one simulated CPU's busy time, split by mode.
type CPUStat struct {
	// User is time spent running user-mode bursts (CPUUser, ChargeUser),
	// Sys the rest of the CPU's busy time. A burst still running counts
	// as system time up to Now.
	User, Sys time.Duration
}

// CPUStats returns each CPU's user and system time so far, indexed by CPU
// id. Optimistic spinning is not in it (spinners do not occupy a
// simulated CPU); see SpinTime.
func (e *Engine) CPUStats() []CPUStat {
	busy := e.CPUBusy()
	out := make([]CPUStat, len(busy))
	for i, b := range busy {
		out[i] = CPUStat{User: e.cpus.user[i], Sys: b - e.cpus.user[i]}
	}
	return out
}

// SpinTime returns the simulated time tasks have spent spinning on locks
// (system CPU time of the spinners that no simulated CPU accounts).
func (e *Engine) SpinTime() time.Duration { return e.spinTotal }

// taskList is an intrusive FIFO of tasks (no allocation).
type taskList struct {
	head, tail *Task
	n          int
}

func (l *taskList) pushBack(t *Task) {
	if t.list != nil {
		panic("sim: task already on a wait list")
	}
	t.list = l
	t.prev = l.tail
	t.nextW = nil
	if l.tail != nil {
		l.tail.nextW = t
	} else {
		l.head = t
	}
	l.tail = t
	l.n++
}

func (l *taskList) remove(t *Task) {
	if t.list != l {
		panic("sim: task not on this list")
	}
	if t.prev != nil {
		t.prev.nextW = t.nextW
	} else {
		l.head = t.nextW
	}
	if t.nextW != nil {
		t.nextW.prev = t.prev
	} else {
		l.tail = t.prev
	}
	t.prev, t.nextW, t.list = nil, nil, nil
	l.n--
}

func (l *taskList) popFront() *Task {
	t := l.head
	if t != nil {
		l.remove(t)
	}
	return t
}

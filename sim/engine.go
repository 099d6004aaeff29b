package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Time is a point on the engine's clock in nanoseconds since the engine
// started. It is simulated time on the virtual clock.
type Time int64

// Duration converts t to a time.Duration measured from time zero.
func (t Time) Duration() time.Duration { return time.Duration(t) }

// String formats t as a duration since the start, e.g. "1.5ms".
func (t Time) String() string { return time.Duration(t).String() }

// Clock decides how the engine's time relates to real time. The engine asks
// the clock before it dispatches each event; model code never sees the clock.
//
// The virtual clock (VirtualClock) jumps straight to the next event. The
// wall clock (package sim/wallclock) blocks until real time reaches t; it is
// the only clock under which real devices may be used, and it also
// implements Inbox.
type Clock interface {
	// Advance is called with the time of the next event before the engine
	// dispatches it; it returns when the event may run.
	Advance(t Time)
}

// Inbox is a Clock through which events also arrive from outside the
// engine goroutine: the wall clock (package sim/wallclock), on which real
// device completions come back from worker goroutines. Run detects it with
// a type assertion; VirtualClock is not one, so the virtual engine's loop
// and output are unchanged.
//
// Contract (every method is called on the engine goroutine, from Run):
//   - Drain moves every delivery that has arrived into e's event heap,
//     with e.At at its arrival time, and returns how many it moved. A
//     delivery is a Handler and its argument, so it runs as an ordinary
//     event, in time order with the others.
//   - Wait blocks until the clock reaches t, returning true, or returns
//     false earlier as soon as a delivery has arrived. t < 0 means no
//     event is pending: wait for a delivery only (returning false).
//   - Outstanding reports how many deliveries the clock still expects
//     (real IO in flight). Run does not stop for an empty heap while it is
//     positive: it waits.
type Inbox interface {
	Clock
	Drain(e *Engine) int
	Wait(t Time) bool
	Outstanding() int
}

// VirtualClock is the deterministic clock: time jumps from event to event
// as fast as the host CPU allows.
type VirtualClock struct{}

// Advance returns at once.
func (VirtualClock) Advance(Time) {}

// Host holds the costs of the simulated host that the engine itself
// applies: CPUs, scheduling and lock handoff latencies. The zero value is
// one CPU with free scheduling.
type Host struct {
	// CPUs is the number of simulated CPUs that Task.CPU bursts run on
	// (at least 1).
	CPUs int
	// WakeLatency is the time from waking a sleeping task (a lock grant,
	// a completion, a wait queue wake) to the task running again.
	WakeLatency time.Duration
	// ContextSwitch is CPU time a task spends when it resumes after it
	// slept (switching in); it is charged (Task.Charge) and runs with the
	// task's next CPU burst or before its next primitive.
	ContextSwitch time.Duration
	// SpinHandoff is the time from a lock's release to an optimistically
	// spinning waiter taking it (its spin loop sees the store).
	SpinHandoff time.Duration
	// WakeStep is the waker's CPU time per additional task in a batch
	// wake of rwsem readers (try_to_wake_up and the IPI, issued one after
	// another by wake_up_q): the k-th reader woken (from 0) runs
	// WakeLatency + k*WakeStep after the release, and the releasing task
	// is charged (n-1)*WakeStep for n readers. Zero means a batch wakes
	// at once.
	WakeStep time.Duration
	// SpinIteration is the CPU time of one pass of a spin loop (owner
	// check, cpu_relax). A spinner notices a release at its next
	// iteration boundary, after SpinHandoff; 0 means it notices at once.
	// Spinning consumes the spinner's CPU time (system time) whatever it
	// is.
	SpinIteration time.Duration
	// CacheLine is the cost of moving a lock's cache line between CPUs:
	// an acquisition by a task whose last CPU differs from that of the
	// lock's previous owner is charged it (Task.Charge, before the hold
	// starts; for a contended acquisition it counts as wait time).
	CacheLine time.Duration
}

// Options configure a new engine.
type Options struct {
	// Seed seeds the engine's PCG random source.
	Seed uint64
	// Host gives the simulated host's CPUs and costs.
	Host Host
	// Clock is the clock to run on; nil means VirtualClock.
	Clock Clock
	// LockClasses replace the options NewRWSem is given for the rwsems of
	// a lock class (see LockClass), e.g. "i_rwsem": per-class spinning.
	// Nil or a missing class keeps the options given.
	LockClasses map[string]RWSemOptions
}

// ErrClosed is returned by Run on an engine that was closed.
var ErrClosed = errors.New("sim: engine closed")

// TaskPanicError reports a panic inside a simulated task: which task, at
// what simulated time, the panic value and the task's stack.
type TaskPanicError struct {
	Task  string
	Time  Time
	Value any
	Stack string
}

// Error names the task and the simulated time.
func (e *TaskPanicError) Error() string {
	return fmt.Sprintf("sim: task %q panicked at simulated time %v: %v", e.Task, e.Time, e.Value)
}

// HandlerPanicError reports a panic in a Handler (an event with no task):
// the simulated time, the panic value and the stack.
type HandlerPanicError struct {
	Time  Time
	Value any
	Stack string
}

// Error names the simulated time.
func (e *HandlerPanicError) Error() string {
	return fmt.Sprintf("sim: event handler panicked at simulated time %v: %v", e.Time, e.Value)
}

// Engine is the discrete-event simulator. Create one with New; its zero
// value is not usable. An Engine is not safe for concurrent use: everything
// runs on the goroutine that calls Run.
type Engine struct {
	now    Time
	seq    uint64
	events uint64
	heap   eventHeap
	clock  Clock
	host   Host
	seed   uint64
	rng    *rand.Rand

	cpus cpuPool

	tasks   []*Task
	live    int // unfinished tasks that are not daemons (Tasks)
	nextID  int
	current *Task
	err     error
	closed  bool

	locks       []lockStatser
	lockClasses map[string]RWSemOptions
	// spinTotal is the simulated time tasks spent spinning on locks.
	spinTotal time.Duration

	// nonDaemon counts the scheduled events that are not daemon work;
	// lastWork is the time the last of them fired. stallLimit is
	// SetStallLimit's (0: off).
	nonDaemon  int
	lastWork   Time
	stallLimit time.Duration
}

// New returns an engine at time zero.
func New(opt Options) *Engine {
	if opt.Host.CPUs < 1 {
		opt.Host.CPUs = 1
	}
	if opt.Clock == nil {
		opt.Clock = VirtualClock{}
	}
	e := &Engine{
		clock: opt.Clock,
		host:  opt.Host,
		seed:  opt.Seed,
		rng:   rand.New(rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15)),

		lockClasses: opt.LockClasses,
	}
	e.cpus.init(e, opt.Host.CPUs)
	return e
}

// Now returns the current time.
func (e *Engine) Now() Time { return e.now }

// Host returns the host costs the engine was created with.
func (e *Engine) Host() Host { return e.host }

// Rand returns the engine's seeded random source. Draws from it are
// deterministic for a given seed and order of calls.
func (e *Engine) Rand() *rand.Rand { return e.rng }

// NewRand returns an independent deterministic random source for stream,
// derived from the engine's seed; use one per job so that adding a job does
// not change the draws of the others.
func (e *Engine) NewRand(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(e.seed, stream*0x9e3779b97f4a7c15+1))
}

// Seed returns the seed the engine was created with.
func (e *Engine) Seed() uint64 { return e.seed }

// Events returns the number of events dispatched so far.
func (e *Engine) Events() uint64 { return e.events }

// At schedules h.Fire(arg) at time t (not before Now). Events at the same
// time fire in the order they were scheduled.
func (e *Engine) At(t Time, h Handler, arg uint64) {
	e.schedule(t, h, arg, false)
}

// After schedules h.Fire(arg) d after Now (at Now if d <= 0). A d so
// long that Now+d is past the end of the clock means the end of the
// clock (math.MaxInt64), which no other event follows.
func (e *Engine) After(d time.Duration, h Handler, arg uint64) {
	e.schedule(e.after(d), h, arg, false)
}

// after returns Now+d, saturated at the end of the clock: a huge d must
// not wrap around to a time in the past, which would fire at once.
func (e *Engine) after(d time.Duration) Time {
	if d > 0 && e.now > Time(math.MaxInt64)-Time(d) {
		return Time(math.MaxInt64)
	}
	return e.now + Time(d)
}

// AfterDaemon is After for daemon work: a service thread's timer that
// re-arms itself whether or not anything progresses (a flusher's periodic
// wake-up). The event fires exactly as After's would, in the same order,
// but it does not count as progress: once only daemon events (these and
// the resumes of daemon tasks, see Task.SetDaemon) are left while
// non-daemon tasks are unfinished, the run is stalled, and with a stall
// limit set Run stops (see SetStallLimit). A non-daemon task may wait for
// daemon work, but for less than the stall limit.
func (e *Engine) AfterDaemon(d time.Duration, h Handler, arg uint64) {
	e.schedule(e.after(d), h, arg, true)
}

// schedule pushes an event at t (not before Now), counting the events
// that are not daemon work.
func (e *Engine) schedule(t Time, h Handler, arg uint64, daemon bool) {
	if t < e.now {
		t = e.now
	}
	e.seq++
	if !daemon {
		e.nonDaemon++
	}
	e.heap.push(event{at: t, seq: e.seq, h: h, arg: arg, daemon: daemon})
}

// dispatch pops the next event, moves the clock to it and fires it.
func (e *Engine) dispatch() {
	ev := e.heap.pop()
	e.now = ev.at
	e.events++
	if !ev.daemon {
		e.nonDaemon--
		e.lastWork = ev.at
	}
	ev.h.Fire(ev.arg)
}

// SetStallLimit makes Run stop with a *StallError when the run has been
// stalled for d of simulated time: non-daemon tasks are unfinished but
// only daemon work is scheduled (AfterDaemon timers and daemon tasks'
// resumes; on an Inbox clock, no delivery is outstanding either). The
// stall starts when the last non-daemon event fires, and Run stops
// instead of firing a daemon event at or after start+d (the clock stays
// at the last event fired). Any non-daemon event ends a stall; with no
// non-daemon task unfinished there is none, so daemon work runs on.
// Detection only observes: it adds no events and changes no order. d <= 0
// (the default) turns detection off; a stalled run with daemon timers
// then runs forever.
func (e *Engine) SetStallLimit(d time.Duration) { e.stallLimit = max(d, 0) }

// StallLimit returns the limit SetStallLimit set (0: detection is off).
func (e *Engine) StallLimit() time.Duration { return e.stallLimit }

// StallError is Run's error for a stalled run (see SetStallLimit): the
// unfinished non-daemon tasks wait for something only they could cause,
// a model deadlock.
type StallError struct {
	// Time is Now when Run stopped; Since is when the stall started (the
	// last non-daemon event fired).
	Time, Since Time
	// Tasks are the names of the unfinished non-daemon tasks, sorted.
	Tasks []string
}

// maxStallNames bounds the task names StallError.Error lists.
const maxStallNames = 8

// Error counts the blocked tasks and names them (TaskNames), e.g. "sim:
// 2 tasks blocked since 12.5s with only daemon work left (a model
// deadlock): fio:a:0, fio:b:1".
func (e *StallError) Error() string {
	noun := "tasks"
	if len(e.Tasks) == 1 {
		noun = "task"
	}
	return fmt.Sprintf("sim: %d %s blocked since %v with only daemon work left (a model deadlock): %s",
		len(e.Tasks), noun, e.Since, e.TaskNames())
}

// TaskNames returns the first 8 of Tasks joined by ", ", followed by
// ", and N more" if there are more.
func (e *StallError) TaskNames() string {
	names := strings.Join(e.Tasks[:min(len(e.Tasks), maxStallNames)], ", ")
	if more := len(e.Tasks) - maxStallNames; more > 0 {
		names += fmt.Sprintf(", and %d more", more)
	}
	return names
}

// checkStall returns a *StallError if next, about to fire, is at or past
// the stall limit of a stalled run; outside says deliveries are still
// expected from outside the engine (which is then not stalled).
func (e *Engine) checkStall(next *event, outside bool) error {
	if e.stallLimit <= 0 || e.nonDaemon > 0 || outside || e.live == 0 {
		return nil
	}
	// As a difference: lastWork+limit could overflow a huge limit.
	if next.at-e.lastWork < Time(e.stallLimit) {
		return nil
	}
	return &StallError{Time: e.now, Since: e.lastWork, Tasks: e.liveNames()}
}

// liveNames returns the names of the unfinished non-daemon tasks, sorted.
func (e *Engine) liveNames() []string {
	var names []string
	for _, t := range e.tasks {
		if t.state != taskDone && !t.daemon {
			names = append(names, t.name)
		}
	}
	slices.Sort(names)
	return names
}

// funcHandler adapts a func to Handler; it allocates, so it is for set-up
// and rare events, not per-IO paths.
type funcHandler func()

func (f funcHandler) Fire(uint64) { f() }

// AfterFunc schedules fn to run d after Now. It allocates; per-IO paths
// should use After with a long-lived Handler.
func (e *Engine) AfterFunc(d time.Duration, fn func()) {
	e.After(d, funcHandler(fn), 0)
}

// Run dispatches events in time order until none is left, the next event
// is later than until (until < 0 means no limit), a task or handler
// panics, or the run has stalled past the stall limit (SetStallLimit). It
// returns the first panic as a *TaskPanicError or *HandlerPanicError, a
// stall as a *StallError (calling Run again returns it again), and
// ErrClosed after Close (also when a task or handler closes the engine
// during the run: Run then stops at once).
//
// A nil error does not mean every task finished: tasks blocked on a
// primitive that nothing will release leave no event behind, and Run
// returns when the rest is done. Tasks counts them (Task.Done tells
// which). Run must not be called from a task or handler.
func (e *Engine) Run(until Time) (err error) {
	if e.closed {
		return ErrClosed
	}
	defer func() {
		if r := recover(); r != nil {
			e.err = &HandlerPanicError{Time: e.now, Value: r, Stack: string(debug.Stack())}
			err = e.err
		}
	}()
	if in, ok := e.clock.(Inbox); ok {
		return e.runInbox(in, until)
	}
	for e.err == nil && !e.closed && e.heap.len() > 0 {
		if e.dropVoid() {
			continue
		}
		next := e.heap.peek()
		if until >= 0 && next.at > until {
			// Fix (tests): an until earlier than Now must not move the
			// clock backwards.
			if until > e.now {
				e.now = until
			}
			return nil
		}
		if err := e.checkStall(next, false); err != nil {
			return err
		}
		e.clock.Advance(next.at)
		e.dispatch()
	}
	return e.runEnd(until)
}

// runEnd is the end of Run's loops: the run's error, else ErrClosed if a
// task or handler closed the engine, else nil with the clock moved on to
// until.
func (e *Engine) runEnd(until Time) error {
	if e.err != nil {
		return e.err
	}
	if e.closed {
		return ErrClosed
	}
	if until >= 0 && e.now < until {
		e.now = until
	}
	return nil
}

// runInbox is Run's loop on an Inbox clock: before each event it moves
// the arrived deliveries into the heap, and with nothing scheduled it waits
// for the deliveries still outstanding instead of returning.
func (e *Engine) runInbox(in Inbox, until Time) error {
	for e.err == nil && !e.closed {
		in.Drain(e)
		if e.heap.len() == 0 {
			if in.Outstanding() <= 0 {
				break
			}
			in.Wait(-1)
			continue
		}
		if e.dropVoid() {
			continue
		}
		next := e.heap.peek()
		if until >= 0 && next.at > until {
			if until > e.now {
				e.now = until
			}
			return nil
		}
		if err := e.checkStall(next, in.Outstanding() > 0); err != nil {
			return err
		}
		if !in.Wait(next.at) {
			continue // a delivery arrived first
		}
		e.dispatch()
	}
	return e.runEnd(until)
}

// dropVoid drops the next event if its handler voids it (Voidable) and
// reports whether it did.
func (e *Engine) dropVoid() bool {
	next := e.heap.peek()
	v, ok := next.h.(Voidable)
	if !ok || !v.Void(next.arg) {
		return false
	}
	ev := e.heap.pop()
	if !ev.daemon {
		e.nonDaemon--
	}
	return true
}

// Pending reports how many events are scheduled.
func (e *Engine) Pending() int { return e.heap.len() }

// Close stops every task that has not finished, so that no coroutine (and
// no goroutine behind it) outlives the engine. Deferred functions in the
// tasks run; they must not block (a blocking call there unwinds the rest
// of the task). Close may be called from a task or handler: Run then
// returns ErrClosed after the calling task or handler returns, and a task
// that closed the engine ends at its next blocking call, or when its
// function returns. Close returns the first panic of the run (the error
// Run returned, or a panic in a deferred function Close ran), else nil.
// It is idempotent; later calls return nil.
func (e *Engine) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	for _, t := range e.tasks {
		if t.state == taskDone {
			continue
		}
		t.stopping = true
		if t == e.current {
			// The caller's own coroutine cannot be stopped from inside:
			// it unwinds at its next park (parkAs) or returns.
			continue
		}
		t.stop()
		t.state = taskDone
	}
	e.tasks = nil
	e.live = 0
	return e.err
}

// Tasks returns the number of tasks that have not finished, daemons (see
// Task.SetDaemon) excluded.
func (e *Engine) Tasks() int { return e.live }

func (e *Engine) registerLock(l lockStatser) { e.locks = append(e.locks, l) }

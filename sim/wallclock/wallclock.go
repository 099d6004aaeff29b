// Package wallclock is the engine's wall clock (DESIGN.md section 2): events
// fire at real times, and completions of real IO come back from other
// goroutines through one thread-safe inbox, to run as ordinary events on the
// engine goroutine. The model code is the same as on sim.VirtualClock.
//
// It lives outside package sim because it is the one place where the engine
// meets real time and other goroutines (time.Now, sync, channels), which
// the model-code rules forbid inside sim and the model packages.
package wallclock

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blksim/blksim/sim"
)

// Default polling; see Clock.Spin, Clock.IdleSpin and
// Clock.IdleSpinInFlight.
const (
	DefaultSpin             = 100 * time.Microsecond
	DefaultIdleSpin         = 200 * time.Microsecond
	DefaultIdleSpinInFlight = 1 << 20
)

// MaxPoll bounds one blocking Poll, so that an Interrupt (which cannot
// wake a thread blocked in the kernel) is seen within it.
const MaxPoll = 20 * time.Millisecond

// Poller is a device whose completions the engine goroutine collects
// itself, instead of a goroutine posting them: the wall clock lets it do
// the clock's idle waiting, so one thread submits, waits and reaps (as fio
// does) with no hand-off between threads. Every method is called on the
// engine goroutine, from the clock's Advance and Wait.
type Poller interface {
	// Flush hands the device the work queued since the last call
	// (requests submitted to the model but not yet to the kernel). The
	// clock calls it before the engine waits or sleeps, so requests
	// issued at one instant go to the kernel together.
	Flush()
	// InFlight reports how many of the clock's expected deliveries are
	// the poller's: IO outstanding that Poll can wait for.
	InFlight() int
	// Poll collects completions and posts each with Clock.Post. It first
	// checks for them without blocking for up to spin, then blocks until
	// at least one arrives or wait has passed (wait <= 0: do not block).
	Poll(spin, wait time.Duration)
}

// delivery is one inbox entry: a handler to fire at the time it arrived.
type delivery struct {
	h   sim.Handler
	arg uint64
	at  sim.Time
}

// Clock is a wall clock for one engine. It implements sim.Clock and
// sim.Inbox. Create one with New and pass it as sim.Options.Clock.
//
// Concurrency: Post and Interrupt may be called from any goroutine; every
// other method only from the engine goroutine (the one calling Engine.Run,
// including tasks and handlers it runs). The clock's time zero is the first
// time the engine waits on it, so set-up before Run is not counted.
type Clock struct {
	// Spin is how close to an event's time the engine stops sleeping and
	// polls instead (timers overshoot by tens of microseconds; polling
	// burns a CPU but is exact). Set before Run.
	Spin time.Duration
	// IdleSpin is how long the engine polls the inbox, with no event
	// scheduled, before it sleeps until a delivery wakes it. Set before Run.
	IdleSpin time.Duration
	// IdleSpinInFlight limits that polling to when at most this many
	// deliveries are outstanding (Expect'ed and not yet drained); the
	// default is no limit. Polling saves the wake-up of a sleeping engine
	// on each completion, but on a host with few CPUs the CPU it burns
	// may be what the kernel's completion work and the reaping goroutines
	// need. Set before Run.
	IdleSpinInFlight int

	base    time.Time
	started atomic.Bool
	startNs atomic.Int64 // nanoseconds from base to time zero

	mu    sync.Mutex
	inbox []delivery
	spare []delivery
	ready atomic.Bool // inbox may be non-empty, or an interrupt is pending

	sleeping atomic.Bool
	wake     chan struct{}

	interrupted atomic.Bool
	onInterrupt sim.Handler
	intArg      uint64
	intFired    bool

	expected int    // engine goroutine only
	poller   Poller // engine goroutine only
}

// SetPoller makes p do the clock's idle waiting while it has IO in flight
// (see Poller); nil removes it. There is at most one: SetPoller reports
// false, and changes nothing, if another is set. Engine goroutine only,
// not during Run.
func (c *Clock) SetPoller(p Poller) bool {
	if p != nil && c.poller != nil && c.poller != p {
		return false
	}
	c.poller = p
	return true
}

// New returns a wall clock with the default spin windows.
func New() *Clock {
	return &Clock{Spin: DefaultSpin, IdleSpin: DefaultIdleSpin, IdleSpinInFlight: DefaultIdleSpinInFlight,
		base: time.Now(), wake: make(chan struct{}, 1)}
}

// begin sets time zero on first use.
func (c *Clock) begin() {
	if !c.started.Load() {
		c.startNs.Store(int64(time.Since(c.base)))
		c.started.Store(true)
	}
}

// Now returns the real time since time zero (0 before the engine first
// waited). Safe from any goroutine.
func (c *Clock) Now() sim.Time {
	if !c.started.Load() {
		return 0
	}
	return sim.Time(int64(time.Since(c.base)) - c.startNs.Load())
}

// Expect announces one delivery that will arrive through Post (a real IO
// was started). Run does not end while expected deliveries are missing.
// Engine goroutine only.
func (c *Clock) Expect() { c.expected++ }

// Post puts h.Fire(arg) into the inbox, to run on the engine goroutine at
// the real time of the call (or at the engine's time, if that is later).
// Each Post answers one earlier Expect. Safe from any goroutine; it never
// blocks on the engine.
func (c *Clock) Post(h sim.Handler, arg uint64) {
	at := c.Now()
	c.mu.Lock()
	c.inbox = append(c.inbox, delivery{h: h, arg: arg, at: at})
	c.mu.Unlock()
	c.notify()
}

// notify marks the inbox ready and wakes a sleeping engine.
func (c *Clock) notify() {
	c.ready.Store(true)
	if c.sleeping.Load() {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// OnInterrupt sets the handler that runs, once, as an engine event when
// Interrupt is called (e.g. to stop the jobs issuing IO). Engine goroutine
// only, before Run.
func (c *Clock) OnInterrupt(h sim.Handler, arg uint64) { c.onInterrupt, c.intArg = h, arg }

// Interrupt asks the engine to run the OnInterrupt handler as soon as it
// can. Safe from any goroutine (a signal handler); repeated calls do
// nothing more.
func (c *Clock) Interrupt() {
	if c.interrupted.CompareAndSwap(false, true) {
		c.notify()
	}
}

// Interrupted reports whether Interrupt was called. Safe from any goroutine.
func (c *Clock) Interrupted() bool { return c.interrupted.Load() }

// Advance implements sim.Clock: it blocks until real time reaches t,
// leaving deliveries for Drain.
func (c *Clock) Advance(t sim.Time) {
	c.begin()
	if c.poller != nil && t > c.Now() {
		c.poller.Flush()
	}
	for {
		rem := time.Duration(t - c.Now())
		if rem <= 0 {
			return
		}
		if rem > c.Spin {
			time.Sleep(rem - c.Spin/2)
			continue
		}
		runtime.Gosched()
	}
}

// Drain implements sim.Inbox: it schedules every delivery that has
// arrived on e at its arrival time, and the interrupt handler if due.
func (c *Clock) Drain(e *sim.Engine) int {
	if !c.ready.Load() {
		return 0
	}
	c.mu.Lock()
	c.ready.Store(false)
	got := c.inbox
	c.inbox, c.spare = c.spare[:0], got
	c.mu.Unlock()
	for _, d := range got {
		e.At(d.at, d.h, d.arg)
	}
	c.expected -= len(got)
	clear(got)
	n := len(got)
	if c.interrupted.Load() && !c.intFired {
		c.intFired = true
		if c.onInterrupt != nil {
			e.At(c.Now(), c.onInterrupt, c.intArg)
			n++
		}
	}
	return n
}

// Outstanding implements sim.Inbox: deliveries announced by Expect that
// have not been drained yet.
func (c *Clock) Outstanding() int { return c.expected }

// Wait implements sim.Inbox: it returns true when real time reaches t, or
// false as soon as a delivery (or an interrupt) is ready; t < 0 waits for a
// delivery only.
func (c *Clock) Wait(t sim.Time) bool {
	c.begin()
	if c.poller != nil && (t < 0 || t > c.Now()) {
		c.poller.Flush()
	}
	idleSince := time.Now()
	for {
		if c.ready.Load() {
			return false
		}
		now := c.Now()
		if t >= 0 && now >= t {
			return true
		}
		if c.poller != nil && c.poller.InFlight() > 0 {
			c.poll(t, now, idleSince)
			continue
		}
		if t >= 0 && time.Duration(t-now) <= c.Spin ||
			t < 0 && c.expected <= c.IdleSpinInFlight && time.Since(idleSince) < c.IdleSpin {
			runtime.Gosched()
			continue
		}
		c.waitOnce(t)
	}
}

// poll lets the poller wait for completions until t (t < 0: no event
// pending), spinning first as Wait would, and waking Spin/2 before t.
func (c *Clock) poll(t, now sim.Time, idleSince time.Time) {
	var spin time.Duration
	if c.expected <= c.IdleSpinInFlight {
		spin = max(c.IdleSpin-time.Since(idleSince), 0)
	}
	wait := MaxPoll
	if c.expected > c.poller.InFlight() {
		// Others will post too, and cannot wake a poller blocked in
		// the kernel: block for short spells only.
		wait = c.Spin
	}
	if t >= 0 {
		rem := time.Duration(t - now)
		if rem <= c.Spin {
			spin, wait = rem, 0
		} else {
			// Spin and wait together end Spin/2 before t.
			spin = min(spin, rem-c.Spin/2)
			wait = min(wait, rem-c.Spin/2-spin)
		}
	}
	c.poller.Poll(spin, wait)
}

// waitOnce sleeps until Spin before t (t < 0: until woken) or a delivery.
func (c *Clock) waitOnce(t sim.Time) {
	c.sleeping.Store(true)
	defer c.sleeping.Store(false)
	if c.ready.Load() {
		return
	}
	if t < 0 {
		<-c.wake
		return
	}
	d := time.Duration(t-c.Now()) - c.Spin/2
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	select {
	case <-c.wake:
	case <-tm.C:
	}
	tm.Stop()
}

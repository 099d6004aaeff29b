package sim

import (
	"slices"
	"strings"
	"time"
)

// DefaultHandoffTimeout is how long the first waiter of an RWSem waits
// before it forbids lock stealing (the kernel's RWSEM_WAIT_TIMEOUT, 4 ms).
const DefaultHandoffTimeout = 4 * time.Millisecond

// maxWakeReaders caps a batch wake in WakeAnyReaders mode (the kernel's
// MAX_READERS_WAKEUP since 5.3).
const maxWakeReaders = 256

// RWSemOptions select the kernel behaviours an RWSem follows. The zero value
// is Linux 5.2 without optimistic spinning.
type RWSemOptions struct {
	// WriterSpin lets a writer spin instead of sleeping while the lock is
	// owned by a writer that is running.
	WriterSpin bool
	// ReaderSpin lets a reader spin while a running writer owns the lock
	// (the 2016 reader optimistic spinning RFC).
	ReaderSpin bool
	// HandoffTimeout is how long the first waiter waits before lock
	// stealing stops and the lock is handed to it; 0 means
	// DefaultHandoffTimeout, negative disables handoff.
	HandoffTimeout time.Duration
	// WakeAnyReaders wakes up to 256 readers from anywhere in the queue
	// when the head waiter is a reader (5.3 and later); false wakes only
	// the run of readers at the head (5.2).
	WakeAnyReaders bool
	// SpinLimit bounds one optimistic spin: a spinner that has not got
	// the lock after SpinLimit stops spinning and sleeps as a waiter. 0
	// means no bound (spinning ends only when the owner sleeps).
	SpinLimit time.Duration
	// WriterSpinReaders lets a writer that may spin (WriterSpin) also
	// spin on a lock owned by readers and take it when the last reader
	// leaves, and steal a free lock last owned by readers; a spin on
	// readers ends (the writer sleeps) after this long within one reader
	// phase, counted from when the writer starts spinning on it or from
	// when the phase begins, whichever is later. 0 means writers neither
	// spin on readers nor steal from them (Linux 4.8-5.2, where the
	// reader-owned mark stops them). Linux 5.3 spins 10 us plus 0.5 us
	// per reader, capped at 25 us (and then marks the lock nonspinnable
	// for every writer, which this model does not do).
	WriterSpinReaders time.Duration
}

// RWSem is a reader-writer semaphore with Linux semantics:
//
//   - A reader takes the lock at once only if no writer owns it and nobody
//     waits; otherwise it joins the FIFO queue, so new readers queue behind
//     a waiting writer even while readers own the lock.
//   - When the lock is released and the head waiters are readers, they are
//     granted the lock together and woken (wake latency applies).
//   - A writer takes the lock at once only if it is free and nobody waits.
//     With WriterSpin it may also take a free lock past sleeping waiters
//     (lock stealing from the spin path) when the last owner was a writer:
//     a lock last owned by readers stays marked reader-owned, which writers
//     do not spin on (Linux 4.x-5.2). Stealing stops once the first waiter
//     has waited longer than the handoff timeout; the lock is then handed to
//     that waiter on release.
//   - With ReaderSpin a reader takes a free lock past sleeping waiters
//     (the head writer may be waking), unless a handoff is due: the spin
//     path's unqueued trylock needs only no writer and no handoff.
//   - With WriterSpin (ReaderSpin) a writer (reader) spins while a running
//     writer owns the lock and takes it Host.SpinHandoff after release (plus
//     the rest of its current spin iteration, Host.SpinIteration);
//     spinners give up and sleep when the owner sleeps, or after
//     SpinLimit. A spin that ends in the lock is not a context switch;
//     one that ends in sleep is.
//   - Costs: a waiter that slept runs Host.WakeLatency after it is granted
//     (or woken) and pays Host.ContextSwitch; any acquisition on a CPU
//     other than the previous owner's (Task.LastCPU) pays Host.CacheLine.
//     Both are charged before the hold starts, so the lockstat wait time of
//     a contended acquisition includes the whole handoff: wake-to-run,
//     context switch and cache-line transfer.
//
// Spinning tasks consume CPU time (system time of the spinner, see
// Task.CPUTimes) but do not occupy a simulated CPU in this model. All
// methods must be called from tasks (the lock/unlock calls) on the engine
// goroutine.
type RWSem struct {
	e        *Engine
	name     string
	kind     string
	opt      RWSemOptions
	readers  int
	writer   *Task
	waiters  taskList
	spinners taskList
	stats    LockStats
	// readerOwned is the sticky "owned by readers" mark: set when readers
	// take the lock, cleared when a writer does.
	readerOwned bool
	// releases counts releases per mode ([0] read, [1] write) so that
	// HoldMin is set by the first release even when a later hold is
	// shorter or an earlier one was zero. Fix (tests): HoldMin == 0 used
	// to double as "unset", so a zero hold was overwritten by the next.
	releases [2]uint64
	// lastCPU is the CPU of the last task to take the lock (-1: none yet):
	// where the lock's cache line is.
	lastCPU int
	// readerPhases counts the times readers took the lock when it had no
	// owner: a writer's spin on readers is bounded per reader phase.
	readerPhases uint64
}

// NewRWSem creates an unlocked rwsem called name, registered for lock
// statistics. If the engine's Options.LockClasses has an entry for the
// name's class (LockClass), that entry replaces opt.
func NewRWSem(e *Engine, name string, opt RWSemOptions) *RWSem {
	if o, ok := e.lockClasses[LockClass(name)]; ok {
		opt = o
	}
	if opt.HandoffTimeout == 0 {
		opt.HandoffTimeout = DefaultHandoffTimeout
	}
	r := &RWSem{e: e, name: name, kind: "rwsem", opt: opt, lastCPU: -1}
	e.registerLock(r)
	return r
}

// LockClass returns the class of a lock called name: the lock kind without
// the filesystem before it and the instance after it, as lockstat groups
// locks by class. "ext4:i_rwsem:file0" and "xfs:i_rwsem:f" are class
// "i_rwsem", "f2fs:writepages" is "writepages", and a name without a colon
// is its own class.
func LockClass(name string) string {
	_, rest, ok := strings.Cut(name, ":")
	if !ok {
		return name
	}
	class, _, _ := strings.Cut(rest, ":")
	return class
}

// Options returns the options the lock follows (after its class's
// override).
func (r *RWSem) Options() RWSemOptions { return r.opt }

// Name returns the lock's name.
func (r *RWSem) Name() string { return r.name }

// Readers returns the number of readers holding the lock.
func (r *RWSem) Readers() int { return r.readers }

// Writer returns the task holding the lock exclusively, or nil.
func (r *RWSem) Writer() *Task { return r.writer }

// Waiters returns the number of sleeping waiters.
func (r *RWSem) Waiters() int { return r.waiters.n }

// handoffDue reports whether the first waiter has waited long enough to
// forbid stealing.
func (r *RWSem) handoffDue() bool {
	h := r.waiters.head
	return h != nil && r.opt.HandoffTimeout > 0 && r.e.now-h.waitSince >= Time(r.opt.HandoffTimeout)
}

// canSpinOn reports whether a waiter may spin now: a running writer owns
// the lock and no handoff is pending.
func (r *RWSem) canSpinOn() bool {
	return r.writer != nil && r.writer.running && !r.handoffDue()
}

// writerCanSpin reports whether a writer may spin now: on a running
// writer, or on readers when WriterSpinReaders allows it.
func (r *RWSem) writerCanSpin() bool {
	return r.canSpinOn() || r.opt.WriterSpinReaders > 0 && r.readers > 0 && !r.handoffDue()
}

// DownRead takes the lock shared, blocking t as needed.
func (r *RWSem) DownRead(t *Task) {
	t.Flush()
	start := r.e.now
	if r.writer == nil && r.waiters.n == 0 {
		if r.readers == 0 {
			r.readerPhases++
		}
		r.readers++
		r.readerOwned = true
		r.acquired(t, false, start, false)
		return
	}
	if r.opt.ReaderSpin && r.writer == nil && r.readers == 0 && !r.handoffDue() {
		// A free lock with sleeping waiters (the head is being woken):
		// the reader's spin path takes it past them, as the kernel's
		// rwsem_try_read_lock_unqueued does (no writer, no handoff).
		r.readerPhases++
		r.readers++
		r.readerOwned = true
		r.modeStats(false).Spins++
		r.acquired(t, false, start, true)
		return
	}
	t.waitWrite = false
	t.waitSince = start
	t.granted = false
	slept := false
	if r.opt.ReaderSpin && r.canSpinOn() {
		r.spin(t)
	} else {
		slept = true
		r.waiters.pushBack(t)
		t.park(true)
	}
	// Readers only resume once granted (spinners converted to sleepers
	// are granted by a later release).
	if !r.endSpin(t) {
		slept = true
	}
	if slept {
		t.resumeAfterSleep()
	}
	r.acquired(t, false, start, true)
}

// DownWrite takes the lock exclusively, blocking t as needed.
func (r *RWSem) DownWrite(t *Task) {
	t.Flush()
	start := r.e.now
	if r.writer == nil && r.readers == 0 && r.waiters.n == 0 {
		r.takeWrite(t)
		r.acquired(t, true, start, false)
		return
	}
	if r.opt.WriterSpin && r.writer == nil && r.readers == 0 && (!r.readerOwned || r.opt.WriterSpinReaders > 0) && !r.handoffDue() {
		// Steal the free lock from the spin path before sleeping waiters.
		r.takeWrite(t)
		t.granted = true
		r.modeStats(true).Spins++
		r.acquired(t, true, start, true)
		return
	}
	t.waitWrite = true
	t.waitSince = start
	t.granted = false
	t.woken = false
	slept := false
	if r.opt.WriterSpin && r.writerCanSpin() {
		r.spin(t)
	} else {
		r.waiters.pushBack(t)
		slept = true
		t.park(true)
	}
	for {
		if !r.endSpin(t) {
			slept = true
		}
		if t.granted {
			break
		}
		// Woken as the head writer: try to take the free lock.
		if r.writer == nil && r.readers == 0 && (!r.handoffDue() || r.waiters.head == t) {
			if t.list == &r.waiters {
				r.waiters.remove(t)
			}
			r.takeWrite(t)
			t.granted = true
			break
		}
		t.woken = false
		if t.list == nil {
			r.waiters.pushBack(t)
		}
		t.park(true)
	}
	if slept {
		t.resumeAfterSleep()
	}
	r.acquired(t, true, start, true)
}

// takeWrite makes t the owner.
func (r *RWSem) takeWrite(t *Task) {
	r.writer = t
	r.readerOwned = false
}

// spin parks t as an optimistic spinner.
func (r *RWSem) spin(t *Task) {
	t.spinning = true
	t.spinStart = r.e.now
	t.spinLock = r
	t.spinSeq++
	r.spinners.pushBack(t)
	if r.opt.SpinLimit > 0 {
		r.bindSpin(t, r.opt.SpinLimit, false)
	}
	if t.waitWrite && r.readers > 0 {
		r.bindReaderSpin(t)
	}
	t.park(false)
}

// bindReaderSpin ends writer t's spin WriterSpinReaders from now if the
// lock is then still in the same reader phase; a spin that outlasts the
// phase (the lock went to a writer meanwhile) is not bounded by it.
func (r *RWSem) bindReaderSpin(t *Task) { r.bindSpin(t, r.opt.WriterSpinReaders, true) }

// bindSpin ends t's current spin d from now unless it has ended by then
// (or, with samePhase, unless the lock has left the reader phase it is in
// now).
func (r *RWSem) bindSpin(t *Task, d time.Duration, samePhase bool) {
	seq, phase := t.spinSeq, r.readerPhases
	r.e.AfterFunc(d, func() {
		// Fix (DAX runs): a spinner granted the lock is off the list
		// but still spinning until it resumes; leave it be.
		if !t.spinning || t.spinLock != r || t.spinSeq != seq || t.list != &r.spinners {
			return
		}
		if samePhase && (r.readerPhases != phase || r.readers == 0) {
			return
		}
		r.spinners.remove(t)
		r.stopSpinning(t)
	})
}

// stopSpinning turns spinner s (off the spinner list) into a sleeping
// waiter. Giving up the spin is schedule() in the kernel, so the work s
// batched (its block plug) is flushed as for any sleep.
func (r *RWSem) stopSpinning(s *Task) {
	if s.sleepHook != nil {
		s.sleepHook.BeforeSleep(s)
	}
	s.spinning = false
	d := time.Duration(r.e.now - s.spinStart)
	r.modeStats(s.waitWrite).SpinTime += d
	s.spun(d)
	s.running = false
	s.nvcsw++
	r.waiters.pushBack(s)
}

// spinDelay is how long after a release spinner s takes the lock: the
// rest of its current spin iteration, then the handoff.
func (r *RWSem) spinDelay(s *Task) time.Duration {
	h := r.e.host
	d := h.SpinHandoff
	if it := h.SpinIteration; it > 0 {
		d += (it - time.Duration(r.e.now-s.spinStart)%it) % it
	}
	return d
}

// endSpin accounts spin time for t if it spun; it reports whether t got
// the lock while spinning.
func (r *RWSem) endSpin(t *Task) bool {
	if t.spinLock != r {
		return false
	}
	t.spinLock = nil
	if t.spinning { // granted while spinning
		t.spinning = false
		d := time.Duration(r.e.now - t.spinStart)
		r.modeStats(t.waitWrite).SpinTime += d
		r.modeStats(t.waitWrite).Spins++
		t.spun(d)
		return true
	}
	return false
}

// UpRead releases a shared hold.
func (r *RWSem) UpRead(t *Task) {
	t.Flush()
	if r.readers <= 0 {
		panic("sim: UpRead of rwsem " + r.name + " not held for read")
	}
	r.released(t, false)
	r.readers--
	if r.readers == 0 {
		t.Charge(r.unlocked())
	}
}

// UpWrite releases an exclusive hold.
func (r *RWSem) UpWrite(t *Task) {
	t.Flush()
	if r.writer != t {
		panic("sim: UpWrite of rwsem " + r.name + " by a task that does not own it")
	}
	r.released(t, true)
	r.writer = nil
	t.Charge(r.unlocked())
}

// unlocked passes a free lock on: to spinners first (they are on a CPU and
// win the cache line), unless a handoff is due; then to the head waiters.
// It returns the CPU time the releasing task spends waking a batch of
// readers (Host.WakeStep per reader after the first; the kernel's
// wake_up_q issues the wake-ups one after another).
func (r *RWSem) unlocked() time.Duration {
	host := r.e.host
	if r.spinners.n > 0 && !r.handoffDue() {
		s := r.spinners.head
		if s.waitWrite {
			r.spinners.remove(s)
			r.takeWrite(s)
			s.granted = true
			s.wake(r.spinDelay(s))
			return 0
		}
		// The head spinner is a reader: every spinning reader takes it.
		r.toReaders()
		return 0
	}
	head := r.waiters.head
	if head == nil {
		return 0
	}
	if head.waitWrite {
		if r.handoffDue() {
			r.waiters.remove(head)
			r.takeWrite(head)
			head.granted = true
			r.stats.Handoffs++
			if !head.woken {
				head.wake(host.WakeLatency)
			}
			head.woken = true
			r.ownerSleeps()
		} else if !head.woken {
			head.woken = true
			head.wake(host.WakeLatency)
		}
		return 0
	}
	n := 0
	// Fix (tests): the 256 cap belongs to the 5.3 wake-any mode; 5.2
	// wakes every reader of the head run (EXPERIMENTS.md §2: "all of
	// them are woken together").
	for w := head; w != nil && (n < maxWakeReaders || !r.opt.WakeAnyReaders); {
		next := w.nextW
		if w.waitWrite {
			if !r.opt.WakeAnyReaders {
				break
			}
		} else {
			r.waiters.remove(w)
			r.readers++
			r.readerOwned = true
			w.granted = true
			// The k-th reader of the batch is woken k steps after the
			// first.
			w.wake(host.WakeLatency + time.Duration(n)*host.WakeStep)
			n++
		}
		w = next
	}
	r.toReaders()
	if n > 1 {
		return time.Duration(n-1) * host.WakeStep
	}
	return 0
}

// toReaders passes the lock, on release, to readers: the spinning ones
// take it (their trylock needs only no writer and no handoff, and a grant
// to waiting readers has just served any handoff), joining the waiting
// readers already granted, if any; writers keep spinning for at most
// WriterSpinReaders, if allowed, else sleep.
func (r *RWSem) toReaders() {
	r.readerPhases++
	for s := r.spinners.head; s != nil; {
		next := s.nextW
		if !s.waitWrite {
			r.spinners.remove(s)
			r.readers++
			r.readerOwned = true
			s.granted = true
			s.wake(r.spinDelay(s))
		}
		s = next
	}
	if r.opt.WriterSpinReaders <= 0 || r.handoffDue() {
		r.ownerSleeps()
		return
	}
	for s := r.spinners.head; s != nil; s = s.nextW {
		r.bindReaderSpin(s)
	}
}

// ownerSleeps turns every spinner into a sleeping waiter, in spin order:
// the owner left the CPU (or the lock went to readers), so spinning is
// pointless.
func (r *RWSem) ownerSleeps() {
	for s := r.spinners.popFront(); s != nil; s = r.spinners.popFront() {
		r.stopSpinning(s)
	}
}

func (r *RWSem) modeStats(write bool) *LockModeStats {
	if write {
		return &r.stats.Write
	}
	return &r.stats.Read
}

// acquired records a grant once t runs again; contended says whether t
// had to spin or sleep first. It charges the cache-line transfer when t's
// CPU is not the previous owner's; the grant (end of the wait, start of
// the hold) is after the CPU time t owes by then: the context switch and
// that transfer.
func (r *RWSem) acquired(t *Task, write bool, start Time, contended bool) {
	m := r.modeStats(write)
	m.Acquisitions++
	if r.lastCPU >= 0 && r.lastCPU != t.lastCPU {
		m.AcqBounces++
		if contended {
			m.ConBounces++
		}
		t.Charge(r.e.host.CacheLine)
	}
	r.lastCPU = t.lastCPU
	grant := r.e.now + Time(t.owed)
	if wait := time.Duration(grant - start); contended {
		m.Contentions++
		m.WaitTotal += wait
		if wait > m.WaitMax {
			m.WaitMax = wait
		}
		if wait > 0 && (m.WaitMin == 0 || wait < m.WaitMin) {
			m.WaitMin = wait
		}
	}
	t.granted = false
	t.woken = false
	t.held = append(t.held, heldLock{l: r, write: write, at: grant})
}

// released records the hold time of t's hold.
func (r *RWSem) released(t *Task, write bool) {
	for i := len(t.held) - 1; i >= 0; i-- {
		h := t.held[i]
		if h.l == r && h.write == write {
			hold := time.Duration(r.e.now - h.at)
			m := r.modeStats(write)
			m.HoldTotal += hold
			if hold > m.HoldMax {
				m.HoldMax = hold
			}
			mode := 0
			if write {
				mode = 1
			}
			r.releases[mode]++
			if r.releases[mode] == 1 || hold < m.HoldMin {
				m.HoldMin = hold
			}
			t.held = slices.Delete(t.held, i, i+1)
			return
		}
	}
	panic("sim: release of " + r.name + " by task " + t.name + " that does not hold it")
}

// Stats returns the lock's lockstat figures.
func (r *RWSem) Stats() LockStats {
	s := r.stats
	s.Name = r.name
	s.Kind = r.kind
	return s
}

// Mutex is a sleeping lock with optional optimistic spinning while the
// owner runs, FIFO waiters, lock stealing and handoff after the handoff
// timeout, like the kernel's struct mutex.
type Mutex struct {
	rw RWSem
}

// NewMutex creates an unlocked mutex called name; spin enables optimistic
// spinning while the owner runs.
func NewMutex(e *Engine, name string, spin bool) *Mutex {
	m := &Mutex{rw: RWSem{e: e, name: name, kind: "mutex",
		opt: RWSemOptions{WriterSpin: spin, HandoffTimeout: DefaultHandoffTimeout}}}
	e.registerLock(&m.rw)
	return m
}

// Lock takes the mutex, blocking t as needed.
func (m *Mutex) Lock(t *Task) { m.rw.DownWrite(t) }

// Unlock releases the mutex; t must own it.
func (m *Mutex) Unlock(t *Task) { m.rw.UpWrite(t) }

// Owner returns the owning task or nil.
func (m *Mutex) Owner() *Task { return m.rw.writer }

// Stats returns the mutex's lockstat figures.
func (m *Mutex) Stats() LockStats { return m.rw.Stats() }

type lockStatser interface{ Stats() LockStats }

// LockStats returns the figures of every lock acquired at least once,
// sorted by name (ties in creation order).
func (e *Engine) LockStats() []LockStats {
	var out []LockStats
	for _, l := range e.locks {
		s := l.Stats()
		if s.Read.Acquisitions+s.Write.Acquisitions > 0 {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b LockStats) int { return strings.Compare(a.Name, b.Name) })
	return out
}

package sim

// WaitQueue is a FIFO of sleeping tasks, like the kernel's wait_queue_head.
// The zero value is an empty queue.
type WaitQueue struct {
	waiters taskList
}

// Wait puts t to sleep until a WakeOne or WakeAll reaches it. The task
// runs again the host's wake latency after the wake.
//
// Like the kernel's wait_event, Wait may return without a wake, and
// callers must re-check their condition in a loop: when t has CPU time
// charged (Task.Charge), Wait runs it and returns at once, because the
// condition the caller checked before that time passed may have changed
// meanwhile (a wake during the burst would otherwise be lost).
func (q *WaitQueue) Wait(t *Task) {
	if t.owed > 0 {
		t.Flush()
		return
	}
	q.waiters.pushBack(t)
	t.park(true)
	t.resumeAfterSleep()
}

// WakeOne wakes the longest-waiting task and reports whether there was one.
// It may be called from tasks and handlers.
func (q *WaitQueue) WakeOne() bool {
	w := q.waiters.popFront()
	if w == nil {
		return false
	}
	w.wake(w.e.host.WakeLatency)
	return true
}

// WakeAll wakes every waiting task in FIFO order and returns how many.
func (q *WaitQueue) WakeAll() int {
	n := 0
	for q.WakeOne() {
		n++
	}
	return n
}

// Len returns the number of waiting tasks.
func (q *WaitQueue) Len() int { return q.waiters.n }

// Completion is the kernel's struct completion: Complete releases one
// waiter (or is remembered if none waits), CompleteAll releases every
// present and future waiter until Reinit. The zero value is not done.
type Completion struct {
	done    int
	all     bool
	waiters taskList
}

// Wait blocks t until the completion is done, consuming one Complete.
func (c *Completion) Wait(t *Task) {
	t.Flush()
	if c.all {
		return
	}
	if c.done > 0 {
		c.done--
		return
	}
	c.waiters.pushBack(t)
	t.park(true)
	t.resumeAfterSleep()
}

// Complete releases one waiter, or lets the next Wait return at once.
// It may be called from tasks and handlers.
func (c *Completion) Complete() {
	if w := c.waiters.popFront(); w != nil {
		w.wake(w.e.host.WakeLatency)
		return
	}
	c.done++
}

// CompleteAll releases every waiter and makes later Waits return at once.
func (c *Completion) CompleteAll() {
	c.all = true
	for w := c.waiters.popFront(); w != nil; w = c.waiters.popFront() {
		w.wake(w.e.host.WakeLatency)
	}
}

// Reinit makes the completion not done again. No task may be waiting.
func (c *Completion) Reinit() {
	c.done = 0
	c.all = false
}

// Done reports whether a Wait would return at once.
func (c *Completion) Done() bool { return c.all || c.done > 0 }

// Semaphore is a counting semaphore with FIFO waiters: a Release hands the
// unit straight to the longest waiter, so late arrivals cannot overtake.
type Semaphore struct {
	count   int
	waiters taskList
}

// NewSemaphore returns a semaphore holding n units.
func NewSemaphore(n int) *Semaphore { return &Semaphore{count: n} }

// Acquire takes one unit, sleeping in FIFO order until one is available.
func (s *Semaphore) Acquire(t *Task) {
	t.Flush()
	if s.count > 0 && s.waiters.n == 0 {
		s.count--
		return
	}
	s.waiters.pushBack(t)
	t.park(true)
	t.resumeAfterSleep()
}

// TryAcquire takes a unit if one is free without waiting.
func (s *Semaphore) TryAcquire() bool {
	if s.count > 0 && s.waiters.n == 0 {
		s.count--
		return true
	}
	return false
}

// Release returns one unit, waking the longest waiter if any. It may be
// called from tasks and handlers.
func (s *Semaphore) Release() {
	if w := s.waiters.popFront(); w != nil {
		w.wake(w.e.host.WakeLatency)
		return
	}
	s.count++
}

// Available returns the number of free units.
func (s *Semaphore) Available() int { return s.count }

// Waiters returns the number of tasks waiting.
func (s *Semaphore) Waiters() int { return s.waiters.n }

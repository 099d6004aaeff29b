package sim_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/blksim/blksim/sim"
)

// TestHugeDurationsDoNotWrap: a delay so long that Now+d overflows is
// "never" (the far end of the clock), not a time in the past that fires
// at once.
func TestHugeDurationsDoNotWrap(t *testing.T) {
	e := newEngine(t, sim.Host{})
	var fired, woke bool
	e.AfterFunc(time.Second, func() {
		e.AfterFunc(math.MaxInt64, func() { fired = true })
		e.AfterDaemon(math.MaxInt64, sim.Handler(nil), 0) // never reached
	})
	e.Go("sleeper", func(t *sim.Task) {
		t.Sleep(time.Second)
		t.Sleep(math.MaxInt64)
		woke = true
	})
	require.NoError(t, e.Run(sim.Time(time.Hour)))
	assert.False(t, fired, "AfterFunc(MaxInt64) fired within an hour")
	assert.False(t, woke, "Sleep(MaxInt64) returned within an hour")
	assert.Equal(t, 3, e.Pending())
}

// TestCloseFromTask: Close called by a task stops the others, ends the
// calling task when it next blocks (its deferred functions run), stops
// Run and leaks no goroutine.
func TestCloseFromTask(t *testing.T) {
	goleak.VerifyNone(t)
	e := sim.New(sim.Options{})
	var closer *sim.Task
	var after, deferred, otherRan bool
	var closeErr error
	reached := false
	closer = e.Go("closer", func(tk *sim.Task) {
		defer func() { deferred = true }()
		tk.Sleep(time.Millisecond)
		closeErr = e.Close()
		after = true
		tk.Sleep(time.Millisecond) // unwinds: the engine is closed
		reached = true
	})
	e.Go("other", func(t *sim.Task) { t.Sleep(time.Second); otherRan = true })
	e.AfterFunc(2*time.Millisecond, func() { otherRan = true })
	assert.ErrorIs(t, e.Run(-1), sim.ErrClosed)
	assert.NoError(t, closeErr)
	assert.True(t, after)
	assert.False(t, reached, "a blocking call after Close unwinds the task")
	assert.True(t, deferred)
	assert.False(t, otherRan, "no event runs after Close")
	assert.True(t, closer.Done())
	assert.Zero(t, e.Tasks())
	require.NoError(t, e.Close())
	goleak.VerifyNone(t)
}

// TestCloseFromHandler: Close from an event handler stops Run at once.
func TestCloseFromHandler(t *testing.T) {
	goleak.VerifyNone(t)
	e := sim.New(sim.Options{})
	ran := false
	e.Go("sleeper", func(t *sim.Task) { t.Sleep(time.Hour) })
	e.AfterFunc(time.Millisecond, func() { _ = e.Close() })
	e.AfterFunc(2*time.Millisecond, func() { ran = true })
	assert.ErrorIs(t, e.Run(-1), sim.ErrClosed)
	assert.False(t, ran)
	goleak.VerifyNone(t)
}

// TestCloseWithBlockingDefer: a deferred function that blocks while Close
// stops its task is cut short, not reported as a model bug ("woken twice").
func TestCloseWithBlockingDefer(t *testing.T) {
	goleak.VerifyNone(t)
	e := sim.New(sim.Options{})
	e.Go("a", func(t *sim.Task) {
		defer t.Sleep(time.Second)
		t.Sleep(time.Hour)
	})
	require.NoError(t, e.Run(sim.Time(time.Second)))
	assert.NoError(t, e.Close())
	goleak.VerifyNone(t)
}

// TestTaskDone: Done tells a finished task from a blocked one.
func TestTaskDone(t *testing.T) {
	e := newEngine(t, sim.Host{})
	var wq sim.WaitQueue
	quick := e.Go("quick", func(t *sim.Task) { t.Sleep(time.Millisecond) })
	stuck := e.Go("stuck", func(t *sim.Task) { wq.Wait(t) })
	assert.False(t, quick.Done(), "not started yet")
	require.NoError(t, e.Run(-1))
	assert.True(t, quick.Done())
	assert.False(t, stuck.Done())
	assert.Equal(t, 1, e.Tasks(), "Run returned nil with a task blocked")
	require.NoError(t, e.Close())
	assert.True(t, stuck.Done())
}

// voidTimer is a timer that can be cancelled: events scheduled before the
// last cancel are void.
type voidTimer struct {
	gen   uint64
	fired []uint64
}

func (v *voidTimer) Fire(arg uint64)      { v.fired = append(v.fired, arg) }
func (v *voidTimer) Void(arg uint64) bool { return arg < v.gen }

// A voided event is dropped when it comes due: it does not fire, the
// clock does not move to it and it is not counted; others fire in order.
func TestVoidableEventsAreDropped(t *testing.T) {
	for _, daemon := range []bool{false, true} {
		e := newEngine(t, sim.Host{CPUs: 1})
		v := &voidTimer{}
		schedule := e.After
		if daemon {
			schedule = e.AfterDaemon
		}
		schedule(time.Second, v, 0)
		schedule(5*time.Second, v, 1)
		e.AfterFunc(2*time.Second, func() { v.gen = 2 }) // voids both
		schedule(3*time.Second, v, 2)
		require.NoError(t, e.Run(-1))
		assert.Equal(t, []uint64{0, 2}, v.fired)
		assert.Equal(t, sim.Time(3*time.Second), e.Now(), "the clock stops at the last event that fired")
		assert.Equal(t, uint64(3), e.Events(), "two timers and the func")
		assert.Zero(t, e.Pending())
	}
}

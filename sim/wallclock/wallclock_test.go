package wallclock

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/blksim/blksim/sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a Handler that notes the engine time and its goroutine's
// view of the args it fired with.
type recorder struct {
	e     *sim.Engine
	times []sim.Time
	args  []uint64
}

func (r *recorder) Fire(arg uint64) {
	r.times = append(r.times, r.e.Now())
	r.args = append(r.args, arg)
}

func TestEventsFireAtRealTime(t *testing.T) {
	c := New()
	e := sim.New(sim.Options{Clock: c})
	defer e.Close()
	r := &recorder{e: e}
	e.After(2*time.Millisecond, r, 1)
	e.After(5*time.Millisecond, r, 2)
	start := time.Now()
	require.NoError(t, e.Run(-1))
	took := time.Since(start)
	assert.Equal(t, []uint64{1, 2}, r.args)
	assert.Equal(t, []sim.Time{sim.Time(2 * time.Millisecond), sim.Time(5 * time.Millisecond)}, r.times)
	assert.GreaterOrEqual(t, took, 5*time.Millisecond)
	assert.GreaterOrEqual(t, c.Now(), sim.Time(5*time.Millisecond))
}

func TestTasksSleepOnRealTime(t *testing.T) {
	c := New()
	e := sim.New(sim.Options{Clock: c})
	defer e.Close()
	var woke sim.Time
	e.Go("sleeper", func(tk *sim.Task) {
		tk.Sleep(3 * time.Millisecond)
		woke = c.Now()
	})
	require.NoError(t, e.Run(-1))
	assert.GreaterOrEqual(t, woke, sim.Time(3*time.Millisecond))
	assert.Less(t, woke, sim.Time(50*time.Millisecond))
}

// TestRunWaitsForOutstandingDeliveries: with an empty heap, Run waits for
// an expected delivery instead of returning, and runs it on its goroutine
// at the real time it arrived.
func TestRunWaitsForOutstandingDeliveries(t *testing.T) {
	c := New()
	e := sim.New(sim.Options{Clock: c})
	defer e.Close()
	r := &recorder{e: e}
	var wg sync.WaitGroup
	e.AfterFunc(0, func() { postLater(c, &wg, r, 42, 3*time.Millisecond) })
	require.NoError(t, e.Run(-1))
	wg.Wait()
	require.Equal(t, []uint64{42}, r.args)
	assert.GreaterOrEqual(t, r.times[0], sim.Time(3*time.Millisecond))
	assert.Equal(t, 0, c.Outstanding())
}

// postLater expects one delivery and posts h.Fire(arg) from another
// goroutine after d (engine goroutine; wg counts the goroutine).
func postLater(c *Clock, wg *sync.WaitGroup, h sim.Handler, arg uint64, d time.Duration) {
	c.Expect()
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(d)
		c.Post(h, arg)
	}()
}

// TestManyPosters: completions from many goroutines at once all arrive,
// in an order consistent with time (run under -race).
func TestManyPosters(t *testing.T) {
	c := New()
	c.IdleSpin = 0 // exercise the sleeping path
	e := sim.New(sim.Options{Clock: c})
	defer e.Close()
	r := &recorder{e: e}
	const workers, each = 8, 200
	var wg sync.WaitGroup
	e.AfterFunc(0, func() {
		for w := range workers {
			for range each {
				c.Expect()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					c.Post(r, uint64(w*each+i))
					if i%50 == 0 {
						time.Sleep(100 * time.Microsecond)
					}
				}
			}()
		}
	})
	require.NoError(t, e.Run(-1))
	wg.Wait()
	require.Len(t, r.args, workers*each)
	seen := map[uint64]bool{}
	for i, a := range r.args {
		seen[a] = true
		if i > 0 {
			assert.GreaterOrEqual(t, r.times[i], r.times[i-1])
		}
	}
	assert.Len(t, seen, workers*each)
}

// TestDeliveryInterleavesWithTimers: a delivery that arrives before a
// pending timer runs before it.
func TestDeliveryInterleavesWithTimers(t *testing.T) {
	c := New()
	e := sim.New(sim.Options{Clock: c})
	defer e.Close()
	r := &recorder{e: e}
	done := make(chan struct{})
	e.After(20*time.Millisecond, r, 2)
	e.AfterFunc(0, func() {
		c.Expect()
		go func() {
			defer close(done)
			time.Sleep(2 * time.Millisecond)
			c.Post(r, 1)
		}()
	})
	require.NoError(t, e.Run(-1))
	<-done
	assert.Equal(t, []uint64{1, 2}, r.args)
	assert.Less(t, r.times[0], r.times[1])
}

func TestInterrupt(t *testing.T) {
	c := New()
	e := sim.New(sim.Options{Clock: c})
	defer e.Close()
	stopped := false
	var at sim.Time
	c.OnInterrupt(handlerFunc(func(uint64) { stopped = true; at = e.Now() }), 0)
	e.Go("loop", func(tk *sim.Task) {
		for !stopped {
			tk.Sleep(time.Millisecond)
		}
	})
	go func() {
		time.Sleep(5 * time.Millisecond)
		c.Interrupt()
		c.Interrupt()
	}()
	require.NoError(t, e.Run(-1))
	assert.True(t, c.Interrupted())
	assert.GreaterOrEqual(t, at, sim.Time(5*time.Millisecond))
}

type handlerFunc func(uint64)

func (f handlerFunc) Fire(a uint64) { f(a) }

func TestAdvance(t *testing.T) {
	c := New()
	start := time.Now()
	c.Advance(sim.Time(3 * time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 3*time.Millisecond)
	assert.GreaterOrEqual(t, c.Now(), sim.Time(3*time.Millisecond))
}

// TestIdleSpinInFlight: with more deliveries outstanding than
// IdleSpinInFlight, an idle wait sleeps at once instead of polling for
// IdleSpin (an hour here); with few enough it polls (it is not asleep when
// the delivery comes 300 ms later).
func TestIdleSpinInFlight(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inFlight  int
		wantSleep bool
	}{
		{"one in flight, limit 0: sleeps", 0, true},
		{"one in flight, limit 1: polls", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			c.IdleSpin = time.Hour
			c.IdleSpinInFlight = tc.inFlight
			c.Expect()
			slept := make(chan bool, 1)
			go func() {
				deadline := time.Now().Add(300 * time.Millisecond)
				asleep := false
				for !asleep && time.Now().Before(deadline) {
					asleep = c.sleeping.Load()
					time.Sleep(100 * time.Microsecond)
				}
				slept <- asleep
				c.Post(nopHandler{}, 0)
			}()
			assert.False(t, c.Wait(-1), "a delivery ends the wait")
			assert.Equal(t, tc.wantSleep, <-slept)
		})
	}
}

type nopHandler struct{}

func (nopHandler) Fire(uint64) {}

// fakePoller stands in for a device whose completions the engine goroutine
// collects: requests "complete" after lat, and Poll sleeps (rather than
// blocks in the kernel) until then.
type fakePoller struct {
	c        *Clock
	h        sim.Handler
	lat      time.Duration
	queued   []uint64    // submitted, not flushed
	inflight []uint64    // flushed
	due      []time.Time // completion times of inflight
	flushes  int
	polls    []time.Duration // the wait of each Poll
	spins    []time.Duration // and its spin
	others   []bool          // and whether others' deliveries were expected
}

func (p *fakePoller) submit(arg uint64) {
	p.c.Expect()
	p.queued = append(p.queued, arg)
}

func (p *fakePoller) Flush() {
	if len(p.queued) == 0 {
		return
	}
	p.flushes++
	for _, a := range p.queued {
		p.inflight = append(p.inflight, a)
		p.due = append(p.due, time.Now().Add(p.lat))
	}
	p.queued = p.queued[:0]
}

func (p *fakePoller) InFlight() int { return len(p.inflight) }

func (p *fakePoller) Poll(spin, wait time.Duration) {
	p.polls = append(p.polls, wait)
	p.spins = append(p.spins, spin)
	p.others = append(p.others, p.c.expected > len(p.inflight))
	if d := time.Until(p.due[0]); d > 0 {
		time.Sleep(min(d, spin+wait))
	}
	for len(p.inflight) > 0 && !time.Now().Before(p.due[0]) {
		p.c.Post(p.h, p.inflight[0])
		p.inflight, p.due = p.inflight[1:], p.due[1:]
	}
}

// newPolled returns an engine on a wall clock whose poller completes IO
// after lat, posting to r.
func newPolled(t *testing.T, lat time.Duration) (*sim.Engine, *recorder, *fakePoller) {
	c := New()
	e := sim.New(sim.Options{Clock: c})
	t.Cleanup(func() { e.Close() })
	r := &recorder{e: e}
	p := &fakePoller{c: c, h: r, lat: lat}
	c.SetPoller(p)
	return e, r, p
}

// With a Poller the clock flushes the requests of one instant together
// before it waits, lets the poller wait for their completions (never
// longer than MaxPoll at a time), and runs the completions the poller
// posts.
func TestPoller(t *testing.T) {
	e, r, p := newPolled(t, 2*time.Millisecond)
	c := p.c
	e.AfterFunc(0, func() {
		for i := range uint64(3) {
			p.submit(i)
		}
	})
	e.AfterFunc(0, func() { assert.Equal(t, 0, p.flushes, "not flushed while events are due") })
	require.NoError(t, e.Run(-1))
	assert.Equal(t, []uint64{0, 1, 2}, r.args)
	assert.Equal(t, 1, p.flushes, "one flush for the three requests")
	assert.GreaterOrEqual(t, r.times[0], sim.Time(2*time.Millisecond))
	require.NotEmpty(t, p.polls)
	for _, w := range p.polls {
		assert.LessOrEqual(t, w, MaxPoll)
	}
	assert.Equal(t, 0, c.Outstanding())
}

// A timer due before the poller's IO completes bounds its wait: the
// timer fires on time and the completion still arrives.
func TestPollerWaitEndsAtTimer(t *testing.T) {
	e, r, p := newPolled(t, 30*time.Millisecond)
	p.c.IdleSpin = time.Hour // the spin too must end before the timer
	e.AfterFunc(0, func() { p.submit(9) })
	e.After(5*time.Millisecond, r, 1)
	require.NoError(t, e.Run(-1))
	assert.Equal(t, []uint64{1, 9}, r.args)
	assert.GreaterOrEqual(t, r.times[0], sim.Time(5*time.Millisecond))
	assert.Less(t, r.times[0], sim.Time(25*time.Millisecond), "the timer did not wait for the IO")
	// The first Poll, before the timer, is bounded by it: spin and wait
	// together end Spin/2 before it.
	assert.LessOrEqual(t, p.spins[0]+p.polls[0], 5*time.Millisecond-p.c.Spin/2)
}

// A clock has at most one poller: a second is refused until the first is
// removed.
func TestOnePoller(t *testing.T) {
	c := New()
	a, b := &fakePoller{c: c}, &fakePoller{c: c}
	assert.True(t, c.SetPoller(a))
	assert.True(t, c.SetPoller(a), "setting the same poller again is allowed")
	assert.False(t, c.SetPoller(b))
	assert.True(t, c.SetPoller(nil))
	assert.True(t, c.SetPoller(b))
}

// While deliveries from others are expected too, the poller blocks only
// for short spells (Spin), since a post cannot wake it in the kernel; the
// other delivery still arrives and runs.
func TestPollerWithOtherPosters(t *testing.T) {
	e, r, p := newPolled(t, 20*time.Millisecond)
	c := p.c
	var wg sync.WaitGroup
	e.AfterFunc(0, func() {
		p.submit(1)
		postLater(c, &wg, r, 2, 2*time.Millisecond)
	})
	require.NoError(t, e.Run(-1))
	wg.Wait()
	assert.Equal(t, []uint64{2, 1}, r.args)
	n := 0
	for i, w := range p.polls {
		if p.others[i] {
			n++
			assert.LessOrEqual(t, w, c.Spin, "poll %d", i)
		}
	}
	assert.Positive(t, n, "some polls ran while the other delivery was due")
}

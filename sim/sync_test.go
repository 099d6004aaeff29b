package sim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
)

// TestWaitQueue: a woken task returns from Wait the wake latency after the
// wake; the context switch is charged to it (Owed) and runs with its next
// CPU burst, so every waiter's 2us burst after the wake takes 2us plus the
// context switch.
func TestWaitQueue(t *testing.T) {
	tests := []struct {
		name string
		host sim.Host
		hog  time.Duration // a task burning one CPU from time 0
		want []event
		busy time.Duration // total CPU busy time
	}{
		{
			name: "free scheduling",
			host: sim.Host{CPUs: 4},
			want: []event{
				{10 * us, "wakeOne=true"}, {10 * us, "w1 woke owed=0s"},
				{12 * us, "w1 ran"},
				{20 * us, "wakeAll=2"}, {20 * us, "w2 woke owed=0s"}, {20 * us, "w3 woke owed=0s"},
				{22 * us, "w2 ran"}, {22 * us, "w3 ran"},
				{30 * us, "wakeOne=false"},
			},
			busy: 3 * 2 * us,
		},
		{
			name: "wake latency and context switch after a sleep",
			host: sim.Host{CPUs: 4, WakeLatency: 5 * us, ContextSwitch: 1 * us},
			want: []event{
				{10 * us, "wakeOne=true"}, {15 * us, "w1 woke owed=1µs"},
				{18 * us, "w1 ran"}, // 1us context switch + 2us burst
				{20 * us, "wakeAll=2"}, {25 * us, "w2 woke owed=1µs"}, {25 * us, "w3 woke owed=1µs"},
				{28 * us, "w2 ran"}, {28 * us, "w3 ran"},
				{30 * us, "wakeOne=false"},
			},
			busy: 3 * (1*us + 2*us),
		},
		{
			// The context switch is CPU time: the woken tasks return from
			// Wait on time, but with the only CPU busy until 50us their
			// context switch and burst queue for it (FIFO).
			name: "context switch waits for a CPU",
			host: sim.Host{CPUs: 1, WakeLatency: 5 * us, ContextSwitch: 1 * us},
			hog:  50 * us,
			want: []event{
				{10 * us, "wakeOne=true"}, {15 * us, "w1 woke owed=1µs"},
				{20 * us, "wakeAll=2"}, {25 * us, "w2 woke owed=1µs"}, {25 * us, "w3 woke owed=1µs"},
				{30 * us, "wakeOne=false"},
				{50 * us, "hog done"},
				{53 * us, "w1 ran"}, {56 * us, "w2 ran"}, {59 * us, "w3 ran"},
			},
			busy: 50*us + 3*(1*us+2*us),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, tc.host)
			rec := &recorder{}
			var wq sim.WaitQueue
			if tc.hog > 0 {
				e.Go("hog", func(t *sim.Task) { t.CPU(tc.hog); rec.add(t, "done") })
			}
			var waiters []*sim.Task
			for i, name := range []string{"w1", "w2", "w3"} {
				waiters = append(waiters, spawn(e, name, time.Duration(i)*us, func(t *sim.Task) {
					wq.Wait(t)
					rec.add(t, fmt.Sprint("woke owed=", t.Owed()))
					t.CPU(2 * us)
					rec.add(t, "ran")
				}))
			}
			// Wakes come from handlers and from a task.
			e.AfterFunc(5*us, func() {
				assert.Equal(t, 3, wq.Len())
				for _, w := range waiters {
					assert.False(t, w.Running(), "a waiting task is not running")
				}
			})
			e.AfterFunc(10*us, func() { rec.addAt(e.Now(), fmt.Sprint("wakeOne=", wq.WakeOne())) })
			e.AfterFunc(20*us, func() { rec.addAt(e.Now(), fmt.Sprint("wakeAll=", wq.WakeAll())) })
			spawn(e, "waker", 30*us, func(t *sim.Task) { rec.addAt(t.Now(), fmt.Sprint("wakeOne=", wq.WakeOne())) })
			require.NoError(t, e.Run(-1))
			assert.Equal(t, tc.want, rec.evs)
			assert.Equal(t, tc.busy, sum(e.CPUBusy()), "the context switches are CPU time")
			assert.Zero(t, wq.Len())
			assert.Zero(t, e.Tasks())
		})
	}
}

// sum adds up per-CPU busy times.
func sum(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s
}

// TestCompletion: a Wait that sleeps returns the wake latency (5us) after
// the Complete and charges the context switch (1us), which runs with the
// task's next CPU burst; a Wait that does not sleep costs nothing.
func TestCompletion(t *testing.T) {
	host := sim.Host{CPUs: 4, WakeLatency: 5 * us, ContextSwitch: 1 * us}

	t.Run("complete before wait", func(t *testing.T) {
		e := newEngine(t, host)
		rec := &recorder{}
		var c sim.Completion
		assert.False(t, c.Done())
		c.Complete()
		c.Complete()
		assert.True(t, c.Done())
		spawn(e, "a", 10*us, func(t *sim.Task) {
			c.Wait(t) // consumes one Complete, no cost
			rec.add(t, fmt.Sprint("1 owed=", t.Owed()))
			c.Wait(t) // consumes the other
			rec.add(t, fmt.Sprint("2 owed=", t.Owed()))
			c.Wait(t) // blocks until the next Complete
			rec.add(t, fmt.Sprint("3 owed=", t.Owed()))
			t.CPU(1 * us) // runs the context switch too
			rec.add(t, "ran")
		})
		e.AfterFunc(30*us, c.Complete)
		require.NoError(t, e.Run(-1))
		assert.Equal(t, []event{
			{10 * us, "a 1 owed=0s"}, {10 * us, "a 2 owed=0s"},
			{35 * us, "a 3 owed=1µs"}, {37 * us, "a ran"},
		}, rec.evs)
		assert.False(t, c.Done())
		assert.Equal(t, 2*us, sum(e.CPUBusy()))
	})

	t.Run("complete wakes one waiter in FIFO order", func(t *testing.T) {
		e := newEngine(t, host)
		rec := &recorder{}
		var c sim.Completion
		for i, name := range []string{"a", "b"} {
			spawn(e, name, time.Duration(i)*us, func(t *sim.Task) {
				c.Wait(t)
				rec.add(t, "done")
				t.CPU(1 * us)
				rec.add(t, "ran")
			})
		}
		e.AfterFunc(10*us, c.Complete)
		e.AfterFunc(20*us, c.Complete)
		require.NoError(t, e.Run(-1))
		assert.Equal(t, []event{
			{15 * us, "a done"}, {17 * us, "a ran"},
			{25 * us, "b done"}, {27 * us, "b ran"},
		}, rec.evs)
		assert.Equal(t, 2*2*us, sum(e.CPUBusy()))
	})

	t.Run("complete all and reinit", func(t *testing.T) {
		e := newEngine(t, host)
		rec := &recorder{}
		var c sim.Completion
		for i, name := range []string{"a", "b", "c"} {
			spawn(e, name, time.Duration(i)*us, func(t *sim.Task) {
				c.Wait(t)
				rec.add(t, "done")
				t.Flush() // the context switch alone
				rec.add(t, "flushed")
			})
		}
		e.AfterFunc(10*us, c.CompleteAll)
		// Later waiters pass at once, repeatedly, until Reinit.
		spawn(e, "late", 20*us, func(t *sim.Task) {
			c.Wait(t)
			c.Wait(t)
			rec.add(t, fmt.Sprint("passed owed=", t.Owed()))
			c.Reinit()
			rec.add(t, fmt.Sprint("done=", c.Done()))
			c.Wait(t)
			rec.add(t, "after reinit")
			t.Flush()
			rec.add(t, "flushed")
		})
		e.AfterFunc(40*us, c.Complete)
		require.NoError(t, e.Run(-1))
		assert.Equal(t, []event{
			{15 * us, "a done"}, {15 * us, "b done"}, {15 * us, "c done"},
			{16 * us, "a flushed"}, {16 * us, "b flushed"}, {16 * us, "c flushed"},
			{20 * us, "late passed owed=0s"}, {20 * us, "late done=false"},
			{45 * us, "late after reinit"}, {46 * us, "late flushed"},
		}, rec.evs)
		assert.Equal(t, 4*us, sum(e.CPUBusy()))
	})
}

// TestSemaphore: a waiter granted a unit returns from Acquire the wake
// latency (5us) after the Release; its context switch (1us) runs before
// its Sleep, so it releases 1us + the hold after it acquired.
func TestSemaphore(t *testing.T) {
	e := newEngine(t, sim.Host{CPUs: 4, WakeLatency: 5 * us, ContextSwitch: 1 * us})
	rec := &recorder{}
	s := sim.NewSemaphore(2)
	assert.Equal(t, 2, s.Available())
	hold := func(d time.Duration) func(t *sim.Task) {
		return func(t *sim.Task) {
			s.Acquire(t)
			rec.add(t, "acquired")
			t.Sleep(d)
			rec.add(t, "release")
			s.Release()
		}
	}
	spawn(e, "h1", 0, hold(10*us))
	spawn(e, "h2", 0, hold(20*us))
	spawn(e, "w1", 1*us, hold(10*us))
	spawn(e, "w2", 2*us, hold(5*us))
	// At 12us h1 has released a unit (at 10us), but it was handed straight
	// to w1, which is still waking up: a late arrival cannot take it and
	// queues behind w2.
	spawn(e, "late", 12*us, func(t *sim.Task) {
		rec.add(t, fmt.Sprintf("avail=%d waiters=%d try=%v", s.Available(), s.Waiters(), s.TryAcquire()))
		hold(1 * us)(t)
	})
	require.NoError(t, e.Run(-1))
	assert.Equal(t, []event{
		{0, "h1 acquired"}, {0, "h2 acquired"},
		{10 * us, "h1 release"}, // -> w1, returns 5us later
		{12 * us, "late avail=0 waiters=1 try=false"},
		{15 * us, "w1 acquired"}, // context switch 15-16us, then sleeps
		{20 * us, "h2 release"},  // -> w2
		{25 * us, "w2 acquired"},
		{26 * us, "w1 release"}, // -> late
		{31 * us, "late acquired"},
		{31 * us, "w2 release"}, // nobody waits: the unit is free again
		{33 * us, "late release"},
	}, rec.evs)
	assert.Equal(t, 2, s.Available())
	assert.Zero(t, s.Waiters())
	assert.Equal(t, 3*us, sum(e.CPUBusy()), "three context switches")
}

// TestMutexHandoffCost compares the cost of passing a mutex to an
// optimistic spinner (a cache-line transfer) with passing it to a sleeper
// (wake latency, then a context switch that runs with the sleeper's next
// CPU burst, inside its hold).
func TestMutexHandoffCost(t *testing.T) {
	host := sim.Host{CPUs: 4, WakeLatency: 5 * us, ContextSwitch: 2 * us, SpinHandoff: 200 * ns}
	tests := []struct {
		name   string
		spin   bool
		owner  []string      // the owner's script from 0
		lock   time.Duration // when the waiter gets the lock
		unlock time.Duration // when the waiter releases it (after its 1us burst)
		busy   time.Duration // total CPU busy time
		stats  sim.LockModeStats
	}{
		{
			name: "spinner takes it a cache-line transfer after release",
			spin: true, owner: []string{"lock", "cpu 10us", "unlock"},
			lock: 10*us + 200*ns, unlock: 11*us + 200*ns,
			busy: 10*us + 1*us,
			stats: sim.LockModeStats{Acquisitions: 2, Contentions: 1,
				WaitTotal: 8200 * ns, WaitMax: 8200 * ns, WaitMin: 8200 * ns,
				HoldTotal: 11 * us, HoldMax: 10 * us, HoldMin: 1 * us,
				Spins: 1, SpinTime: 8200 * ns},
		},
		{
			// Wake latency and context switch are both wait time.
			name: "sleeper pays wake latency and context switch",
			spin: false, owner: []string{"lock", "cpu 10us", "unlock"},
			lock: 10*us + 5*us, unlock: 10*us + 5*us + 2*us + 1*us,
			busy: 10*us + 2*us + 1*us,
			stats: sim.LockModeStats{Acquisitions: 2, Contentions: 1,
				WaitTotal: 15 * us, WaitMax: 15 * us, WaitMin: 15 * us,
				HoldTotal: 11 * us, HoldMax: 10 * us, HoldMin: 1 * us},
		},
		{
			// The owner sleeps while holding: the spinner gives up at 3us.
			name: "spinner sleeps when the owner sleeps",
			spin: true, owner: []string{"lock", "cpu 3us", "sleep 2us", "cpu 5us", "unlock"},
			lock: 10*us + 5*us, unlock: 10*us + 5*us + 2*us + 1*us,
			busy: 8*us + 2*us + 1*us,
			stats: sim.LockModeStats{Acquisitions: 2, Contentions: 1,
				WaitTotal: 15 * us, WaitMax: 15 * us, WaitMin: 15 * us,
				HoldTotal: 11 * us, HoldMax: 10 * us, HoldMin: 1 * us,
				SpinTime: 1 * us},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, host)
			rec := &recorder{}
			mu := sim.NewMutex(e, "m", tc.spin)
			l := locks{mu: mu}
			script(t, e, l, rec, "owner", 0, tc.owner...)
			waiter := script(t, e, l, rec, "waiter", 2*us, "lock", "cpu 1us", "unlock")
			var spinning bool
			e.AfterFunc(2500*ns, func() { spinning = waiter.Running() })
			require.NoError(t, e.Run(-1))
			require.Equal(t, []event{
				{0, "owner lock"},
				{10 * us, "owner unlock"},
				{tc.lock, "waiter lock"},
				{tc.unlock, "waiter unlock"},
			}, rec.evs)
			st := mu.Stats()
			assert.Equal(t, "m", st.Name)
			assert.Equal(t, "mutex", st.Kind)
			assert.Equal(t, tc.stats, st.Write)
			assert.Zero(t, st.Read)
			assert.Nil(t, mu.Owner())
			assert.Equal(t, tc.spin, spinning, "a spinning waiter is running, a sleeping one is not")
			assert.Equal(t, tc.busy, sum(e.CPUBusy()))
		})
	}
}

func TestMutexOwnerAndMisuse(t *testing.T) {
	e := newEngine(t, sim.Host{})
	mu := sim.NewMutex(e, "m", false)
	var owner *sim.Task
	e.Go("a", func(t *sim.Task) {
		mu.Lock(t)
		owner = mu.Owner()
		t.Sleep(us)
		mu.Unlock(t)
	})
	e.Go("b", func(t *sim.Task) {
		t.Sleep(us / 2)
		mu.Unlock(t) // b does not own it
	})
	pe := errorsAs[*sim.TaskPanicError](t, e.Run(-1))
	assert.Equal(t, "b", pe.Task)
	assert.Contains(t, fmt.Sprint(pe.Value), "does not own")
	require.NotNil(t, owner)
	assert.Equal(t, "a", owner.Name())
}

// TestWaitQueueChargedTimeNoLostWake: a task that checks its condition
// with CPU time still charged, then calls Wait, must not miss a wake that
// arrives while that time runs: Wait runs the charged time and returns so
// the caller re-checks (the f2fs fsync that hung forever waiting for a
// page whose bio completed during its context-switch charge).
func TestWaitQueueChargedTimeNoLostWake(t *testing.T) {
	e := sim.New(sim.Options{Host: sim.Host{CPUs: 1}})
	defer e.Close()
	var q sim.WaitQueue
	done := false
	var woke sim.Time
	e.Go("waiter", func(task *sim.Task) {
		task.Charge(5 * us)
		for !done { // checked at 0, before the charged 5us run
			q.Wait(task)
		}
		woke = task.Now()
	})
	e.AfterFunc(2*us, func() { // during the charged burst
		done = true
		q.WakeAll()
	})
	require.NoError(t, e.Run(-1))
	assert.Zero(t, e.Tasks(), "the waiter must not sleep forever")
	assert.Equal(t, sim.Time(5*us), woke)
}

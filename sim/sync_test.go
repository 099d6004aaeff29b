package sim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
)

func TestWaitQueue(t *testing.T) {
	tests := []struct {
		name string
		host sim.Host
		hog  time.Duration // a task burning one CPU from time 0
		want []event
	}{
		{
			name: "free scheduling",
			host: sim.Host{CPUs: 4},
			want: []event{
				{10 * us, "wakeOne=true"}, {10 * us, "w1 woke"},
				{20 * us, "wakeAll=2"}, {20 * us, "w2 woke"}, {20 * us, "w3 woke"},
				{30 * us, "wakeOne=false"},
			},
		},
		{
			name: "wake latency and context switch after a sleep",
			host: sim.Host{CPUs: 4, WakeLatency: 5 * us, ContextSwitch: 1 * us},
			want: []event{
				{10 * us, "wakeOne=true"}, {16 * us, "w1 woke"},
				{20 * us, "wakeAll=2"}, {26 * us, "w2 woke"}, {26 * us, "w3 woke"},
				{30 * us, "wakeOne=false"},
			},
		},
		{
			// The context switch is CPU time: with the only CPU busy until
			// 50us, the woken tasks queue for it (FIFO) before they run.
			name: "context switch waits for a CPU",
			host: sim.Host{CPUs: 1, WakeLatency: 5 * us, ContextSwitch: 1 * us},
			hog:  50 * us,
			want: []event{
				{10 * us, "wakeOne=true"},
				{20 * us, "wakeAll=2"},
				{30 * us, "wakeOne=false"},
				{50 * us, "hog done"},
				{51 * us, "w1 woke"}, {52 * us, "w2 woke"}, {53 * us, "w3 woke"},
			},
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
					rec.add(t, "woke")
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
			assert.Zero(t, wq.Len())
			assert.Zero(t, e.Tasks())
		})
	}
}

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
			rec.add(t, "1")
			c.Wait(t) // consumes the other
			rec.add(t, "2")
			c.Wait(t) // blocks until the next Complete
			rec.add(t, "3")
		})
		e.AfterFunc(30*us, c.Complete)
		require.NoError(t, e.Run(-1))
		assert.Equal(t, []event{{10 * us, "a 1"}, {10 * us, "a 2"}, {36 * us, "a 3"}}, rec.evs)
		assert.False(t, c.Done())
	})

	t.Run("complete wakes one waiter in FIFO order", func(t *testing.T) {
		e := newEngine(t, host)
		rec := &recorder{}
		var c sim.Completion
		for i, name := range []string{"a", "b"} {
			spawn(e, name, time.Duration(i)*us, func(t *sim.Task) { c.Wait(t); rec.add(t, "done") })
		}
		e.AfterFunc(10*us, c.Complete)
		e.AfterFunc(20*us, c.Complete)
		require.NoError(t, e.Run(-1))
		assert.Equal(t, []event{{16 * us, "a done"}, {26 * us, "b done"}}, rec.evs)
	})

	t.Run("complete all and reinit", func(t *testing.T) {
		e := newEngine(t, host)
		rec := &recorder{}
		var c sim.Completion
		for i, name := range []string{"a", "b", "c"} {
			spawn(e, name, time.Duration(i)*us, func(t *sim.Task) { c.Wait(t); rec.add(t, "done") })
		}
		e.AfterFunc(10*us, c.CompleteAll)
		// Later waiters pass at once, repeatedly, until Reinit.
		spawn(e, "late", 20*us, func(t *sim.Task) {
			c.Wait(t)
			c.Wait(t)
			rec.add(t, "passed")
			c.Reinit()
			rec.add(t, fmt.Sprint("done=", c.Done()))
			c.Wait(t)
			rec.add(t, "after reinit")
		})
		e.AfterFunc(40*us, c.Complete)
		require.NoError(t, e.Run(-1))
		assert.Equal(t, []event{
			{16 * us, "a done"}, {16 * us, "b done"}, {16 * us, "c done"},
			{20 * us, "late passed"}, {20 * us, "late done=false"},
			{46 * us, "late after reinit"},
		}, rec.evs)
	})
}

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
		{10 * us, "h1 release"}, // -> w1, runs 5us + 1us later
		{12 * us, "late avail=0 waiters=1 try=false"},
		{16 * us, "w1 acquired"},
		{20 * us, "h2 release"}, // -> w2
		{26 * us, "w1 release"}, // -> late (w1's sleep was scheduled first)
		{26 * us, "w2 acquired"},
		{31 * us, "w2 release"}, // nobody waits: the unit is free again
		{32 * us, "late acquired"},
		{33 * us, "late release"},
	}, rec.evs)
	assert.Equal(t, 2, s.Available())
	assert.Zero(t, s.Waiters())
}

// TestMutexHandoffCost compares the cost of passing a mutex to an
// optimistic spinner (a cache-line transfer) with passing it to a sleeper
// (wake latency plus a context switch).
func TestMutexHandoffCost(t *testing.T) {
	host := sim.Host{CPUs: 4, WakeLatency: 5 * us, ContextSwitch: 2 * us, SpinHandoff: 200 * ns}
	tests := []struct {
		name  string
		spin  bool
		owner []string // the owner's script from 0
		got   time.Duration
		stats sim.LockModeStats
	}{
		{
			name: "spinner takes it a cache-line transfer after release",
			spin: true, owner: []string{"lock", "cpu 10us", "unlock"},
			got: 10*us + 200*ns,
			stats: sim.LockModeStats{Acquisitions: 2, Contentions: 1,
				WaitTotal: 8200 * ns, WaitMax: 8200 * ns, WaitMin: 8200 * ns,
				HoldTotal: 11 * us, HoldMax: 10 * us, HoldMin: 1 * us,
				Spins: 1, SpinTime: 8200 * ns},
		},
		{
			name: "sleeper pays wake latency and context switch",
			spin: false, owner: []string{"lock", "cpu 10us", "unlock"},
			got: 10*us + 5*us + 2*us,
			stats: sim.LockModeStats{Acquisitions: 2, Contentions: 1,
				WaitTotal: 13 * us, WaitMax: 13 * us, WaitMin: 13 * us,
				HoldTotal: 13 * us, HoldMax: 10 * us, HoldMin: 3 * us},
		},
		{
			// The owner sleeps while holding: the spinner gives up at 5us.
			name: "spinner sleeps when the owner sleeps",
			spin: true, owner: []string{"lock", "cpu 3us", "sleep 2us", "cpu 5us", "unlock"},
			got: 10*us + 5*us + 2*us,
			stats: sim.LockModeStats{Acquisitions: 2, Contentions: 1,
				WaitTotal: 13 * us, WaitMax: 13 * us, WaitMin: 13 * us,
				HoldTotal: 13 * us, HoldMax: 10 * us, HoldMin: 3 * us,
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
				{tc.got, "waiter lock"},
				{tc.got + 1*us, "waiter unlock"},
			}, rec.evs)
			st := mu.Stats()
			assert.Equal(t, "m", st.Name)
			assert.Equal(t, "mutex", st.Kind)
			assert.Equal(t, tc.stats, st.Write)
			assert.Zero(t, st.Read)
			assert.Nil(t, mu.Owner())
			assert.Equal(t, tc.spin, spinning, "a spinning waiter is running, a sleeping one is not")
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

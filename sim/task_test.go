package sim_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/blksim/blksim/sim"
)

func TestRunUntil(t *testing.T) {
	e := newEngine(t, sim.Host{})
	rec := &recorder{}
	e.AfterFunc(10*us, func() { rec.addAt(e.Now(), "a") })
	e.AfterFunc(30*us, func() { rec.addAt(e.Now(), "b") })

	require.NoError(t, e.Run(sim.Time(20*us)))
	assert.Equal(t, sim.Time(20*us), e.Now(), "Run(until) stops the clock at until")
	assert.Equal(t, 1, e.Pending())
	assert.Equal(t, uint64(1), e.Events())

	// An until in the past must not move the clock backwards.
	require.NoError(t, e.Run(sim.Time(5*us)))
	assert.Equal(t, sim.Time(20*us), e.Now())

	require.NoError(t, e.Run(-1))
	assert.Equal(t, sim.Time(30*us), e.Now())
	assert.Zero(t, e.Pending())
	assert.Equal(t, []event{{10 * us, "a"}, {30 * us, "b"}}, rec.evs)

	// With nothing pending, Run(until) still advances the clock to until.
	require.NoError(t, e.Run(sim.Time(50*us)))
	assert.Equal(t, sim.Time(50*us), e.Now())
}

func TestAtInThePastFiresNow(t *testing.T) {
	e := newEngine(t, sim.Host{})
	rec := &recorder{}
	e.AfterFunc(10*us, func() {
		e.At(0, handlerFunc(func(uint64) { rec.addAt(e.Now(), "late") }), 0)
	})
	require.NoError(t, e.Run(-1))
	assert.Equal(t, []event{{10 * us, "late"}}, rec.evs)
}

type handlerFunc func(uint64)

func (f handlerFunc) Fire(arg uint64) { f(arg) }

func TestRandIsSeeded(t *testing.T) {
	draws := func(seed uint64) (a, b, c []uint64) {
		e := sim.New(sim.Options{Seed: seed})
		defer e.Close()
		r1, r2, r3 := e.Rand(), e.NewRand(1), e.NewRand(2)
		for range 8 {
			a = append(a, r1.Uint64())
			b = append(b, r2.Uint64())
			c = append(c, r3.Uint64())
		}
		return a, b, c
	}
	a1, b1, c1 := draws(7)
	a2, b2, c2 := draws(7)
	assert.Equal(t, a1, a2)
	assert.Equal(t, b1, b2)
	assert.Equal(t, c1, c2)
	assert.NotEqual(t, b1, c1, "streams must be independent")
	a3, _, _ := draws(8)
	assert.NotEqual(t, a1, a3, "seed must matter")
}

func TestSleep(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want time.Duration
	}{
		{"zero returns at once", 0, 0},
		{"negative returns at once", -5 * us, 0},
		{"one nanosecond", 1, 1},
		{"10us", 10 * us, 10 * us},
		{"1s", time.Second, time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A non-zero wake latency must not apply to timed sleeps.
			e := newEngine(t, sim.Host{WakeLatency: 3 * us, ContextSwitch: 2 * us})
			rec := &recorder{}
			var sleeper *sim.Task
			sleeper = e.Go("s", func(t *sim.Task) {
				rec.add(t, "start")
				t.Sleep(tc.d)
				rec.add(t, "woke")
			})
			// Another task created at the same time runs after s has
			// either slept or (for d <= 0) finished without yielding.
			e.Go("o", func(t *sim.Task) {
				rec.add(t, fmt.Sprintf("running=%v", sleeper.Running()))
			})
			require.NoError(t, e.Run(-1))
			want := []event{{0, "s start"}, {tc.want, "s woke"}, {0, "o running=false"}}
			if tc.want > 0 {
				want = []event{{0, "s start"}, {0, "o running=false"}, {tc.want, "s woke"}}
			}
			assert.Equal(t, want, rec.evs)
			assert.Equal(t, sim.Time(tc.want), e.Now())
			assert.Zero(t, e.Tasks())
		})
	}
}

func TestYield(t *testing.T) {
	e := newEngine(t, sim.Host{WakeLatency: 5 * us})
	rec := &recorder{}
	var a *sim.Task
	e.AfterFunc(0, func() { rec.addAt(e.Now(), "handler") }) // scheduled before the tasks
	a = e.Go("a", func(t *sim.Task) {
		rec.add(t, "1")
		t.Yield()
		rec.add(t, "2")
		t.Yield()
		rec.add(t, "3")
	})
	e.Go("b", func(t *sim.Task) {
		rec.add(t, fmt.Sprintf("1 a.running=%v", a.Running()))
		t.Yield()
		rec.add(t, "2")
	})
	require.NoError(t, e.Run(-1))
	// Yield lets the other events of the current time run first, costs no
	// time and keeps the task running (it does not leave the CPU).
	assert.Equal(t, []event{
		{0, "handler"},
		{0, "a 1"},
		{0, "b 1 a.running=true"},
		{0, "a 2"},
		{0, "b 2"},
		{0, "a 3"},
	}, rec.evs)
}

func TestCPU(t *testing.T) {
	type burst struct {
		name string
		at   time.Duration
		d    time.Duration
	}
	tests := []struct {
		name   string
		cpus   int
		bursts []burst
		want   []event // "<task> done" events
		busy   []time.Duration
	}{
		{
			name: "one CPU serializes in FIFO order",
			cpus: 1,
			bursts: []burst{
				{"a", 0, 10 * us}, {"b", 0, 5 * us}, {"c", 1 * us, 1 * us}, {"d", 2 * us, 3 * us},
			},
			want: []event{{10 * us, "a done"}, {15 * us, "b done"}, {16 * us, "c done"}, {19 * us, "d done"}},
			busy: []time.Duration{19 * us},
		},
		{
			name: "two CPUs, third task queues for the first free one",
			cpus: 2,
			bursts: []burst{
				{"a", 0, 10 * us}, {"b", 0, 20 * us}, {"c", 0, 10 * us},
			},
			want: []event{{10 * us, "a done"}, {20 * us, "b done"}, {20 * us, "c done"}},
			busy: []time.Duration{20 * us, 20 * us},
		},
		{
			name: "enough CPUs: no queueing, idle CPUs stay idle",
			cpus: 4,
			bursts: []burst{
				{"a", 0, 10 * us}, {"b", 5 * us, 10 * us},
			},
			want: []event{{10 * us, "a done"}, {15 * us, "b done"}},
			busy: []time.Duration{10 * us, 10 * us, 0, 0},
		},
		{
			name: "zero burst needs no CPU",
			cpus: 1,
			bursts: []burst{
				{"a", 0, 10 * us}, {"b", 1 * us, 0},
			},
			want: []event{{1 * us, "b done"}, {10 * us, "a done"}},
			busy: []time.Duration{10 * us},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, sim.Host{CPUs: tc.cpus})
			rec := &recorder{}
			for _, b := range tc.bursts {
				spawn(e, b.name, b.at, func(t *sim.Task) {
					t.CPU(b.d)
					rec.add(t, "done")
				})
			}
			require.NoError(t, e.Run(-1))
			assert.Equal(t, tc.want, rec.evs)
			assert.Equal(t, tc.busy, e.CPUBusy())
		})
	}
}

// TestCPURunningState checks Running while a task computes, waits in the
// run queue, and computes after it got a CPU from the run queue; and that
// CPUBusy counts bursts in progress.
func TestCPURunningState(t *testing.T) {
	e := newEngine(t, sim.Host{CPUs: 1})
	a := e.Go("a", func(t *sim.Task) { t.CPU(10 * us) })
	b := e.Go("b", func(t *sim.Task) { t.CPU(10 * us) })
	type obs struct {
		at         time.Duration
		aRun, bRun bool
		busy       []time.Duration
	}
	var got []obs
	for _, at := range []time.Duration{5 * us, 15 * us, 25 * us} {
		e.AfterFunc(at, func() {
			got = append(got, obs{at, a.Running(), b.Running(), e.CPUBusy()})
		})
	}
	require.NoError(t, e.Run(-1))
	assert.Equal(t, []obs{
		{5 * us, true, false, []time.Duration{5 * us}},   // b waits for the CPU: not running
		{15 * us, false, true, []time.Duration{15 * us}}, // b got the CPU from the run queue: running
		{25 * us, false, false, []time.Duration{20 * us}},
	}, got)
}

// TestCharge: charged CPU time is owed until the task's next engine call;
// a CPU call runs it in the same burst (one event instead of two), Flush
// runs it alone, and every blocking or lock primitive runs it first.
func TestCharge(t *testing.T) {
	t.Run("owed merges into the next CPU burst", func(t *testing.T) {
		// run returns the engine's event count, the end time and the CPU
		// busy time of a task that does work.
		run := func(work func(t *sim.Task)) (uint64, sim.Time, []time.Duration) {
			e := newEngine(t, sim.Host{})
			e.Go("a", work)
			require.NoError(t, e.Run(-1))
			return e.Events(), e.Now(), e.CPUBusy()
		}
		var owed []time.Duration
		chargedAt := sim.Time(-1)
		charged, chargedEnd, chargedBusy := run(func(t *sim.Task) {
			owed = append(owed, t.Owed())
			t.Charge(1 * us)
			t.Charge(2 * us)
			t.Charge(0)       // ignored
			t.Charge(-5 * us) // ignored
			owed = append(owed, t.Owed())
			chargedAt = t.Now()
			t.CPU(2 * us)
			owed = append(owed, t.Owed())
		})
		split, splitEnd, splitBusy := run(func(t *sim.Task) {
			t.CPU(3 * us)
			t.CPU(2 * us)
		})
		assert.Equal(t, []time.Duration{0, 3 * us, 0}, owed)
		assert.Equal(t, sim.Time(0), chargedAt, "Charge takes no time by itself")
		assert.Equal(t, sim.Time(5*us), chargedEnd)
		assert.Equal(t, splitEnd, chargedEnd)
		assert.Equal(t, []time.Duration{5 * us}, chargedBusy)
		assert.Equal(t, splitBusy, chargedBusy)
		assert.Equal(t, split-1, charged, "the charged time runs in the same burst: one event fewer")
	})

	t.Run("flush runs it alone", func(t *testing.T) {
		e := newEngine(t, sim.Host{})
		var got []string
		e.Go("a", func(t *sim.Task) {
			note := func() { got = append(got, fmt.Sprintf("%v owed=%v events=%d", t.Now(), t.Owed(), e.Events())) }
			t.Flush() // nothing owed: no time, no event
			note()
			t.Charge(2 * us)
			note()
			t.Flush()
			note()
		})
		require.NoError(t, e.Run(-1))
		assert.Equal(t, []string{"0s owed=0s events=1", "0s owed=2µs events=1", "2µs owed=0s events=2"}, got)
		assert.Equal(t, []time.Duration{2 * us}, e.CPUBusy())
	})

	t.Run("primitives run it first", func(t *testing.T) {
		// Each case charges 3us at time 0, then calls op. probe observes
		// the object op acts on; at 1us, during the charged time, op must
		// not have acted yet.
		type env struct {
			e   *sim.Engine
			wq  *sim.WaitQueue
			c   *sim.Completion
			sem *sim.Semaphore
			rw  *sim.RWSem
			mu  *sim.Mutex
		}
		tests := []struct {
			name   string
			pre    func(x *env, t *sim.Task) // before the Charge
			op     func(x *env, t *sim.Task)
			probe  func(x *env, a *sim.Task) string
			before string        // probe at 1us
			after  string        // probe once op returned
			at     time.Duration // when op returned
		}{
			{
				name:  "Sleep",
				op:    func(x *env, t *sim.Task) { t.Sleep(1 * us) },
				probe: func(x *env, a *sim.Task) string { return fmt.Sprint("running=", a.Running()) },
				// The task is burning the charged time at 1us.
				before: "running=true", after: "running=true", at: 4 * us,
			},
			{
				name:   "Yield",
				op:     func(x *env, t *sim.Task) { t.Yield() },
				probe:  func(x *env, a *sim.Task) string { return fmt.Sprint("owed=", a.Owed()) },
				before: "owed=0s", after: "owed=0s", at: 3 * us,
			},
			{
				// A wake at 1us finds nobody waiting: the task only queues
				// after the charged time. The wake at 10us releases it.
				name: "WaitQueue.Wait",
				op: func(x *env, t *sim.Task) {
					// Wait returns once after running the charged time
					// (callers loop on their condition); the second call
					// sleeps until the wake.
					woken := false
					x.e.AfterFunc(10*us-time.Duration(t.Now()), func() { woken = true; x.wq.WakeOne() })
					for !woken {
						x.wq.Wait(t)
					}
				},
				probe: func(x *env, a *sim.Task) string {
					return fmt.Sprintf("len=%d woke=%v", x.wq.Len(), x.wq.WakeOne())
				},
				before: "len=0 woke=false", after: "len=0 woke=false", at: 10 * us,
			},
			{
				name:   "Completion.Wait",
				pre:    func(x *env, t *sim.Task) { x.c.Complete() },
				op:     func(x *env, t *sim.Task) { x.c.Wait(t) },
				probe:  func(x *env, a *sim.Task) string { return fmt.Sprint("done=", x.c.Done()) },
				before: "done=true", after: "done=false", at: 3 * us,
			},
			{
				name:   "Semaphore.Acquire",
				op:     func(x *env, t *sim.Task) { x.sem.Acquire(t) },
				probe:  func(x *env, a *sim.Task) string { return fmt.Sprint("available=", x.sem.Available()) },
				before: "available=1", after: "available=0", at: 3 * us,
			},
			{
				name:   "RWSem.DownRead",
				op:     func(x *env, t *sim.Task) { x.rw.DownRead(t) },
				probe:  func(x *env, a *sim.Task) string { return fmt.Sprint("readers=", x.rw.Readers()) },
				before: "readers=0", after: "readers=1", at: 3 * us,
			},
			{
				name:   "RWSem.UpRead",
				pre:    func(x *env, t *sim.Task) { x.rw.DownRead(t) },
				op:     func(x *env, t *sim.Task) { x.rw.UpRead(t) },
				probe:  func(x *env, a *sim.Task) string { return fmt.Sprint("readers=", x.rw.Readers()) },
				before: "readers=1", after: "readers=0", at: 3 * us,
			},
			{
				name:   "RWSem.DownWrite",
				op:     func(x *env, t *sim.Task) { x.rw.DownWrite(t) },
				probe:  func(x *env, a *sim.Task) string { return fmt.Sprint("writer=", x.rw.Writer() == a) },
				before: "writer=false", after: "writer=true", at: 3 * us,
			},
			{
				name:   "RWSem.UpWrite",
				pre:    func(x *env, t *sim.Task) { x.rw.DownWrite(t) },
				op:     func(x *env, t *sim.Task) { x.rw.UpWrite(t) },
				probe:  func(x *env, a *sim.Task) string { return fmt.Sprint("writer=", x.rw.Writer() == a) },
				before: "writer=true", after: "writer=false", at: 3 * us,
			},
			{
				name:   "Mutex.Lock",
				op:     func(x *env, t *sim.Task) { x.mu.Lock(t) },
				probe:  func(x *env, a *sim.Task) string { return fmt.Sprint("owner=", x.mu.Owner() == a) },
				before: "owner=false", after: "owner=true", at: 3 * us,
			},
			{
				name:   "Mutex.Unlock",
				pre:    func(x *env, t *sim.Task) { x.mu.Lock(t) },
				op:     func(x *env, t *sim.Task) { x.mu.Unlock(t) },
				probe:  func(x *env, a *sim.Task) string { return fmt.Sprint("owner=", x.mu.Owner() == a) },
				before: "owner=true", after: "owner=false", at: 3 * us,
			},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				e := newEngine(t, sim.Host{CPUs: 1})
				x := &env{e: e, wq: &sim.WaitQueue{}, c: &sim.Completion{}, sem: sim.NewSemaphore(1),
					rw: sim.NewRWSem(e, "rw", sim.RWSemOptions{}), mu: sim.NewMutex(e, "mu", false)}
				var before, after string
				var at sim.Time
				var owed time.Duration
				a := e.Go("a", func(t *sim.Task) {
					if tc.pre != nil {
						tc.pre(x, t)
					}
					t.Charge(3 * us)
					tc.op(x, t)
					at, owed = t.Now(), t.Owed()
					after = tc.probe(x, t)
				})
				e.AfterFunc(1*us, func() { before = tc.probe(x, a) })
				require.NoError(t, e.Run(-1))
				assert.Equal(t, tc.before, before, "op must not act during the charged time")
				assert.Equal(t, tc.after, after)
				assert.Equal(t, sim.Time(tc.at), at)
				assert.Zero(t, owed)
				assert.Equal(t, []time.Duration{3 * us}, e.CPUBusy(), "the charged time ran")
			})
		}
	})
}

func TestTaskAccessors(t *testing.T) {
	e := newEngine(t, sim.Host{})
	var seen []string
	a := e.Go("first", func(t *sim.Task) {
		seen = append(seen, fmt.Sprintf("%s/%d/%v", t.Name(), t.ID(), t.Engine() == e))
	})
	b := e.Go("second", func(t *sim.Task) {})
	assert.Equal(t, 0, a.ID())
	assert.Equal(t, 1, b.ID())
	assert.Equal(t, 2, e.Tasks())
	require.NoError(t, e.Run(-1))
	assert.Equal(t, []string{"first/0/true"}, seen)
	assert.Zero(t, e.Tasks())
}

func TestTaskPanic(t *testing.T) {
	e := newEngine(t, sim.Host{})
	rec := &recorder{}
	var wq sim.WaitQueue
	e.Go("waiter", func(t *sim.Task) { wq.Wait(t) }) // still blocked when Run returns
	spawn(e, "boom", 7*us, func(t *sim.Task) { panic("kaboom") })
	spawn(e, "later", 9*us, func(t *sim.Task) { rec.add(t, "ran") })

	err := e.Run(-1)
	var pe *sim.TaskPanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "boom", pe.Task)
	assert.Equal(t, sim.Time(7*us), pe.Time)
	assert.Equal(t, "kaboom", pe.Value)
	assert.Contains(t, pe.Stack, "sim_test.TestTaskPanic")
	assert.Contains(t, pe.Error(), `"boom"`)
	assert.Contains(t, pe.Error(), "7µs")
	assert.Empty(t, rec.evs, "no event after the panic may run")
	assert.Equal(t, sim.Time(7*us), e.Now())
	// The error sticks.
	assert.Same(t, pe, errorsAs[*sim.TaskPanicError](t, e.Run(-1)))
	assert.Equal(t, err, e.Close())
	assert.Zero(t, e.Tasks())
}

// TestTaskPanicBlockingOutsideOwnTask: blocking another task's methods is a
// model bug and is reported as a panic of the calling task.
func TestTaskPanicBlockingOutsideOwnTask(t *testing.T) {
	e := newEngine(t, sim.Host{})
	var wq sim.WaitQueue
	other := e.Go("other", func(t *sim.Task) { wq.Wait(t) })
	e.Go("culprit", func(t *sim.Task) { other.Yield() })
	pe := errorsAs[*sim.TaskPanicError](t, e.Run(-1))
	assert.Equal(t, "culprit", pe.Task)
	assert.Contains(t, fmt.Sprint(pe.Value), "outside the task's own function")
}

type panicky struct{}

func (panicky) Fire(uint64) { panic(errors.New("handler broke")) }

func TestHandlerPanic(t *testing.T) {
	e := newEngine(t, sim.Host{})
	rec := &recorder{}
	e.After(3*us, panicky{}, 0)
	e.AfterFunc(4*us, func() { rec.addAt(e.Now(), "later") })
	err := e.Run(-1)
	he := errorsAs[*sim.HandlerPanicError](t, err)
	assert.Equal(t, sim.Time(3*us), he.Time)
	assert.EqualError(t, he.Value.(error), "handler broke")
	assert.Contains(t, he.Stack, "panicky.Fire")
	assert.Contains(t, he.Error(), "3µs")
	assert.Empty(t, rec.evs)
	assert.Equal(t, err, e.Run(-1), "the error sticks")
}

func errorsAs[T error](t *testing.T, err error) T {
	t.Helper()
	var target T
	require.ErrorAs(t, err, &target)
	return target
}

// TestCloseStopsBlockedTasks creates tasks blocked forever in every kind of
// wait, and one never started, and checks that Close ends every coroutine
// (running deferred functions) without leaking goroutines.
func TestCloseStopsBlockedTasks(t *testing.T) {
	goleak.VerifyNone(t) // nothing left over from earlier tests
	e := sim.New(sim.Options{Host: sim.Host{CPUs: 1, WakeLatency: us}})
	var (
		wq       sim.WaitQueue
		c        sim.Completion
		deferred []string
	)
	sem := sim.NewSemaphore(0)
	mu := sim.NewMutex(e, "mu", true)
	rw := sim.NewRWSem(e, "rw", sim.RWSemOptions{ReaderSpin: true})
	blockers := map[string]func(t *sim.Task){
		"waitqueue":  func(t *sim.Task) { wq.Wait(t) },
		"completion": func(t *sim.Task) { c.Wait(t) },
		"semaphore":  func(t *sim.Task) { sem.Acquire(t) },
		"mutex-owner": func(t *sim.Task) {
			mu.Lock(t)
			rw.DownWrite(t)
			t.CPU(time.Hour) // holds the CPU and both locks
		},
		"mutex-spinner": func(t *sim.Task) { mu.Lock(t) },
		"rw-spinner":    func(t *sim.Task) { rw.DownRead(t) },
		"runqueue":      func(t *sim.Task) { t.CPU(us) },
		"sleeper":       func(t *sim.Task) { t.Sleep(2 * time.Hour) },
	}
	// Fixed creation order (map iteration is random).
	for _, name := range []string{"mutex-owner", "mutex-spinner", "rw-spinner", "runqueue", "waitqueue", "completion", "semaphore", "sleeper"} {
		fn := blockers[name]
		e.Go(name, func(t *sim.Task) {
			defer func() { deferred = append(deferred, t.Name()) }()
			fn(t)
		})
	}
	require.NoError(t, e.Run(sim.Time(time.Minute)))
	assert.Equal(t, 8, e.Tasks())
	assert.Equal(t, 1, wq.Len())
	assert.Equal(t, 1, sem.Waiters())
	e.Go("never-started", func(t *sim.Task) {})
	assert.Equal(t, 9, e.Tasks())

	require.NoError(t, e.Close())
	assert.Zero(t, e.Tasks())
	assert.ElementsMatch(t, []string{"mutex-owner", "mutex-spinner", "rw-spinner", "runqueue",
		"waitqueue", "completion", "semaphore", "sleeper"}, deferred)
	require.NoError(t, e.Close(), "Close is idempotent")
	assert.ErrorIs(t, e.Run(-1), sim.ErrClosed)
	goleak.VerifyNone(t)
}

// TestTasksAreReaped runs many short tasks; finished ones must not be kept
// alive, and none may leak.
func TestTasksAreReaped(t *testing.T) {
	e := newEngine(t, sim.Host{CPUs: 2})
	n := 0
	for i := range 500 {
		spawn(e, fmt.Sprint("t", i), time.Duration(i)*us, func(t *sim.Task) {
			t.CPU(3 * us)
			n++
		})
	}
	require.NoError(t, e.Run(-1))
	assert.Equal(t, 500, n)
	assert.Zero(t, e.Tasks())
}

// scenario runs a seeded, randomized workload over every primitive and
// returns its timeline and lock statistics.
func scenario(tb testing.TB, seed uint64) ([]event, []sim.LockStats) {
	e := sim.New(sim.Options{Seed: seed, Host: sim.Host{
		CPUs: 3, WakeLatency: 4 * us, ContextSwitch: 1500 * ns, SpinHandoff: 150 * ns,
	}})
	defer e.Close()
	rec := &recorder{}
	rw := sim.NewRWSem(e, "rw", sim.RWSemOptions{WriterSpin: true, ReaderSpin: true, HandoffTimeout: 200 * us})
	mu := sim.NewMutex(e, "mu", true)
	sem := sim.NewSemaphore(2)
	var wq sim.WaitQueue
	rng := e.Rand()
	rnd := func(max time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(max))) }
	for i := range 8 {
		spawn(e, fmt.Sprint("j", i), rnd(20*us), func(t *sim.Task) {
			for k := range 60 {
				switch rng.IntN(5) {
				case 0:
					rw.DownRead(t)
					rec.add(t, "R")
					t.CPU(rnd(10 * us))
					rw.UpRead(t)
				case 1:
					rw.DownWrite(t)
					rec.add(t, "W")
					t.CPU(rnd(10 * us))
					if rng.IntN(4) == 0 {
						t.Sleep(rnd(5 * us)) // owner leaves the CPU
					}
					rw.UpWrite(t)
				case 2:
					mu.Lock(t)
					rec.add(t, "M")
					t.CPU(rnd(3 * us))
					mu.Unlock(t)
				case 3:
					sem.Acquire(t)
					rec.add(t, "S")
					t.Sleep(rnd(8 * us))
					sem.Release()
				case 4:
					if k%2 == 0 && wq.Len() < 3 {
						rec.add(t, "wait")
						wq.Wait(t)
					} else {
						wq.WakeOne()
						t.Yield()
					}
				}
				t.Sleep(rnd(5 * us))
			}
			rec.add(t, "exit")
		})
	}
	// A ticker that keeps waking wait-queue sleepers.
	var tick func()
	tick = func() {
		wq.WakeAll()
		if e.Tasks() > 0 {
			e.AfterFunc(50*us, tick)
		}
	}
	e.AfterFunc(50*us, tick)
	if err := e.Run(-1); err != nil {
		tb.Fatal(err)
	}
	if e.Tasks() != 0 {
		tb.Fatalf("%d tasks did not finish", e.Tasks())
	}
	return rec.evs, e.LockStats()
}

func TestDeterminism(t *testing.T) {
	tl1, st1 := scenario(t, 42)
	tl2, st2 := scenario(t, 42)
	require.Greater(t, len(tl1), 400)
	require.Equal(t, tl1, tl2, "same seed, same timeline")
	require.Equal(t, st1, st2, "same seed, same lock statistics")
	require.Len(t, st1, 2)
	assert.Positive(t, st1[1].Write.Contentions, "the scenario must exercise contention")

	tl3, _ := scenario(t, 43)
	assert.NotEqual(t, tl1, tl3, "a different seed gives a different run")
}

// TestGoAfterClose: a task created on a closed engine never runs and must
// not leave its coroutine's goroutine behind.
func TestGoAfterClose(t *testing.T) {
	goleak.VerifyNone(t)
	e := sim.New(sim.Options{})
	require.NoError(t, e.Close())
	ran := false
	e.Go("late", func(t *sim.Task) { ran = true })
	assert.ErrorIs(t, e.Run(-1), sim.ErrClosed)
	require.NoError(t, e.Close())
	assert.False(t, ran)
	assert.Zero(t, e.Tasks())
	goleak.VerifyNone(t)
}

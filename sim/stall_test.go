package sim_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
)

const sec = time.Second

// flusher has the writeback flusher's shape: a daemon task woken by a
// daemon timer (AfterDaemon) that it re-arms every round, for rounds
// rounds (0: forever). Each round burns some CPU (daemon CPU events) and
// then calls onRound, if set, from the task.
type flusher struct {
	e       *sim.Engine
	period  time.Duration
	rounds  int
	onRound func(round int)
	wq      sim.WaitQueue
	woken   bool
	n       int
}

// Fire is the flusher's timer.
func (f *flusher) Fire(uint64) {
	f.woken = true
	f.wq.WakeOne()
}

func (f *flusher) start() {
	task := f.e.Go("flush", func(t *sim.Task) {
		for f.rounds == 0 || f.n < f.rounds {
			f.e.AfterDaemon(f.period, f, 0)
			for !f.woken {
				f.wq.Wait(t)
			}
			f.woken = false
			f.n++
			t.CPU(10 * us)
			if f.onRound != nil {
				f.onRound(f.n)
			}
		}
	})
	task.SetDaemon()
}

// ticker is a non-daemon timer (a device's completions, a job's own
// timer): every period until it has fired rounds times, then it runs
// last.
type ticker struct {
	e      *sim.Engine
	period time.Duration
	rounds int
	last   func()
	n      int
}

func (k *ticker) Fire(uint64) {
	if k.n++; k.n < k.rounds {
		k.e.After(k.period, k, 0)
		return
	}
	k.last()
}

// stallInbox is an Inbox clock on virtual time whose one delivery (Fire
// of h) arrives at the first Drain at or after at; none if h is nil.
type stallInbox struct {
	at   sim.Time
	h    sim.Handler
	sent bool
}

func (c *stallInbox) Advance(sim.Time) {}
func (c *stallInbox) Wait(t sim.Time) bool {
	return t >= 0
}
func (c *stallInbox) Outstanding() int {
	if c.h == nil || c.sent {
		return 0
	}
	return 1
}
func (c *stallInbox) Drain(e *sim.Engine) int {
	if c.Outstanding() == 0 || e.Now() < c.at {
		return 0
	}
	c.sent = true
	e.At(e.Now(), c.h, 0)
	return 1
}

// TestStallLimit: two tasks block at 1.5 s on a completion while a
// flusher ticks every 5 s (for 1000 rounds, standing in for forever).
// With a stall limit Run stops with a StallError, unless something
// completes the completion in time, a non-daemon timer keeps going (that
// is progress, however long), a delivery is outstanding, or no task is
// left and the flusher stops on its own.
func TestStallLimit(t *testing.T) {
	const limit = 60 * sec
	tests := []struct {
		name string
		// blockers block at 1.5 s on done; none when false.
		blockers bool
		// rounds bounds the flusher; wakeRound is the round
		// in which it completes done (0: never).
		rounds, wakeRound int
		// ticks is how many times a non-daemon timer fires every 5 s,
		// completing done at its last (0: no timer).
		ticks int
		// inbox runs on an Inbox clock; deliverAt is when its one
		// delivery, which completes done, arrives (0: none).
		inbox     bool
		deliverAt time.Duration
		wantStall bool
		// wantEnd is the clock at the end (the flusher's last event).
		wantEnd time.Duration
	}{
		// The flusher would stop after 1000 rounds (5000 s): without
		// detection, Run returns nil then instead of hanging.
		{name: "deadlock", blockers: true, rounds: 1000, wantStall: true},
		{name: "deadlock on an inbox clock", blockers: true, inbox: true, rounds: 1000, wantStall: true},
		{
			name: "daemon work wakes the tasks within the limit", blockers: true,
			// The 12th round (60 s) is the last before 1.5 s + 60 s.
			rounds: 15, wakeRound: 12,
			wantEnd: 75*sec + 150*us,
		},
		{
			name: "non-daemon timer keeps going past the limit", blockers: true,
			rounds: 40, ticks: 30, // done completed at 150 s
			wantEnd: 200*sec + 400*us,
		},
		{
			name: "outstanding delivery on an inbox clock", blockers: true, inbox: true,
			rounds: 40, deliverAt: 150 * sec,
			wantEnd: 200*sec + 400*us,
		},
		{name: "no live tasks: daemon work runs on", rounds: 30, wantEnd: 150*sec + 300*us},
		{
			name: "tasks finish, the flusher runs on", blockers: true,
			rounds: 30, wakeRound: 1,
			wantEnd: 150*sec + 300*us,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var clock *stallInbox
			opt := sim.Options{Seed: 1}
			if tt.inbox {
				clock = &stallInbox{}
				opt.Clock = clock
			}
			e := sim.New(opt)
			t.Cleanup(func() { _ = e.Close() })
			e.SetStallLimit(limit)
			assert.Equal(t, limit, e.StallLimit())

			var done sim.Completion
			if tt.blockers {
				// Created out of name order: the error sorts them.
				for _, name := range []string{"job:b", "job:a"} {
					spawn(e, name, 1500*ms, func(t *sim.Task) { done.Wait(t) })
				}
			}
			f := &flusher{e: e, period: 5 * sec, rounds: tt.rounds}
			if tt.wakeRound > 0 {
				f.onRound = func(n int) {
					if n == tt.wakeRound {
						done.CompleteAll()
					}
				}
			}
			f.start()
			if tt.ticks > 0 {
				e.After(5*sec, &ticker{e: e, period: 5 * sec, rounds: tt.ticks, last: done.CompleteAll}, 0)
			}
			if tt.deliverAt > 0 {
				clock.at, clock.h = sim.Time(tt.deliverAt), handlerFunc(func(uint64) { done.CompleteAll() })
			}

			err := e.Run(-1)
			if !tt.wantStall {
				require.NoError(t, err)
				assert.Zero(t, e.Tasks())
				assert.Zero(t, e.Pending())
				assert.Equal(t, tt.rounds, f.n, "the flusher ran every round")
				assert.Equal(t, sim.Time(tt.wantEnd), e.Now())
				return
			}
			var stall *sim.StallError
			require.ErrorAs(t, err, &stall)
			assert.Equal(t, []string{"job:a", "job:b"}, stall.Tasks)
			assert.Equal(t, sim.Time(1500*ms), stall.Since, "when the tasks blocked")
			assert.Equal(t, e.Now(), stall.Time, "the clock stays at the last event fired")
			// Rounds fire at k*5 s plus the CPU time of the rounds before:
			// the 12th (60 s) is the last before 61.5 s, the 13th is not run.
			assert.Equal(t, 12, f.n)
			assert.Equal(t, sim.Time(60*sec+120*us), e.Now(), "the 12th round's CPU burst ended")
			assert.Equal(t, 1, e.Pending(), "the 13th round's timer is left")
			assert.Equal(t, 2, e.Tasks())
			assert.EqualError(t, err, "sim: 2 tasks blocked since 1.5s with only daemon work left (a model deadlock): job:a, job:b")

			events := e.Events()
			require.ErrorAs(t, e.Run(-1), &stall, "Run again stops again")
			assert.Equal(t, events, e.Events(), "without firing anything")
		})
	}
}

// TestStallLimitOff: with no limit (or a limit set back to 0) a stalled
// run goes on; Run(until) returns at until.
func TestStallLimitOff(t *testing.T) {
	for _, limit := range []time.Duration{0, -sec} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			e := newEngine(t, sim.Host{})
			e.SetStallLimit(limit)
			assert.Zero(t, e.StallLimit())
			var done sim.Completion
			spawn(e, "job", 0, func(t *sim.Task) { done.Wait(t) })
			f := &flusher{e: e, period: 5 * sec}
			f.start()
			require.NoError(t, e.Run(sim.Time(time.Hour)))
			assert.Equal(t, 719, f.n, "an hour of 5 s rounds, each 10 µs late")
			assert.Equal(t, 1, e.Tasks())
		})
	}
}

// TestStallSetDaemonLate: a task that becomes a daemon while it waits
// leaves no non-daemon task, so its own daemon wake-ups are no stall; a
// task's resumes become daemon work from SetDaemon on.
func TestStallSetDaemonLate(t *testing.T) {
	e := newEngine(t, sim.Host{})
	e.SetStallLimit(10 * sec)
	var wq sim.WaitQueue
	w := spawn(e, "w", 0, func(t *sim.Task) { wq.Wait(t) })
	f := &flusher{e: e, period: 5 * sec, rounds: 6}
	f.onRound = func(n int) {
		if n == 1 {
			w.SetDaemon()
		}
	}
	f.start()
	require.NoError(t, e.Run(-1), "at 5 s only daemons are left")
	assert.Equal(t, 6, f.n)
	assert.Zero(t, e.Tasks())
}

// TestStallErrorMessage: the message counts the tasks and lists at most
// eight names.
func TestStallErrorMessage(t *testing.T) {
	many := make([]string, 11)
	for i := range many {
		many[i] = fmt.Sprintf("t%02d", i)
	}
	tests := []struct {
		name  string
		tasks []string
		want  string
	}{
		{"one", []string{"fio:a:0"}, "sim: 1 task blocked since 12.5s with only daemon work left (a model deadlock): fio:a:0"},
		{"eight", many[:8], "sim: 8 tasks blocked since 12.5s with only daemon work left (a model deadlock): t00, t01, t02, t03, t04, t05, t06, t07"},
		{"eleven", many, "sim: 11 tasks blocked since 12.5s with only daemon work left (a model deadlock): t00, t01, t02, t03, t04, t05, t06, t07, and 3 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := &sim.StallError{Time: sim.Time(80 * sec), Since: sim.Time(12500 * ms), Tasks: tt.tasks}
			assert.EqualError(t, err, tt.want)
		})
	}
}

// TestAfterDaemonOrder: daemon events fire in time and scheduling order
// with the others, as if scheduled with After.
func TestAfterDaemonOrder(t *testing.T) {
	e := newEngine(t, sim.Host{})
	var got []string
	mark := func(s string) sim.Handler { return handlerFunc(func(uint64) { got = append(got, s) }) }
	e.AfterDaemon(2*us, mark("d2"), 0)
	e.After(1*us, mark("n1"), 0)
	e.AfterDaemon(1*us, mark("d1"), 0)
	e.After(2*us, mark("n2"), 0)
	e.AfterDaemon(0, mark("d0"), 0)
	require.NoError(t, e.Run(-1))
	assert.Equal(t, []string{"d0", "n1", "d1", "d2", "n2"}, got)
	assert.Equal(t, uint64(5), e.Events())
}

// TestTasksCountsDaemons: Tasks leaves out daemons, whenever SetDaemon
// is called (twice, or after the task finished), and Close.
func TestTasksCountsDaemons(t *testing.T) {
	e := newEngine(t, sim.Host{})
	var wq sim.WaitQueue
	a := spawn(e, "a", 0, func(t *sim.Task) { wq.Wait(t) })
	spawn(e, "b", 0, func(t *sim.Task) { wq.Wait(t) })
	c := spawn(e, "c", 0, func(t *sim.Task) {})
	assert.Equal(t, 3, e.Tasks())
	a.SetDaemon()
	a.SetDaemon()
	assert.Equal(t, 2, e.Tasks())
	require.NoError(t, e.Run(-1))
	assert.Equal(t, 1, e.Tasks(), "c finished, a is a daemon")
	c.SetDaemon()
	assert.Equal(t, 1, e.Tasks())
	require.NoError(t, e.Close())
	assert.Zero(t, e.Tasks())
}

// TestStallHugeLimit: a limit near the largest duration ("practically
// never") does not overflow into an immediate stall.
func TestStallHugeLimit(t *testing.T) {
	e := newEngine(t, sim.Host{})
	e.SetStallLimit(time.Duration(math.MaxInt64))
	var done sim.Completion
	spawn(e, "job", ms, func(t *sim.Task) { done.Wait(t) })
	f := &flusher{e: e, period: 5 * sec, rounds: 5}
	f.start()
	require.NoError(t, e.Run(-1))
	assert.Equal(t, 5, f.n, "every round ran")
	assert.Equal(t, 1, e.Tasks())
}

// TestStallPolling: a task that polls for progress others must make
// (SetPolling: a throttled writer's pauses) while the only other task is
// blocked is stalled; the same loop without SetPolling is progress.
// Polling ends with the setting restored.
func TestStallPolling(t *testing.T) {
	for _, polling := range []bool{true, false} {
		t.Run(fmt.Sprint("polling=", polling), func(t *testing.T) {
			e := newEngine(t, sim.Host{ContextSwitch: us})
			e.SetStallLimit(10 * sec)
			var done sim.Completion
			spawn(e, "blocked", 0, func(t *sim.Task) { done.Wait(t) })
			loops := 0
			spawn(e, "poller", 0, func(t *sim.Task) {
				if polling {
					defer t.SetPolling(t.SetPolling(true))
				}
				// 1000 rounds of 100 ms stand in for forever.
				for ; loops < 1000; loops++ {
					t.CPU(us)
					t.Sleep(100 * ms)
				}
			})
			err := e.Run(-1)
			if !polling {
				require.NoError(t, err)
				assert.Equal(t, 1000, loops)
				assert.Equal(t, 1, e.Tasks(), "the blocked task is left")
				return
			}
			var stall *sim.StallError
			require.ErrorAs(t, err, &stall)
			assert.Equal(t, []string{"blocked", "poller"}, stall.Tasks)
			assert.Zero(t, stall.Since, "nothing but polling happened after the start")
			assert.Less(t, loops, 110, "stopped about 10 s in")
		})
	}
	// SetPolling returns the previous setting.
	e := newEngine(t, sim.Host{})
	spawn(e, "t", 0, func(tk *sim.Task) {
		assert.False(t, tk.SetPolling(true))
		assert.True(t, tk.SetPolling(false))
		assert.False(t, tk.SetPolling(false))
	})
	require.NoError(t, e.Run(-1))
}

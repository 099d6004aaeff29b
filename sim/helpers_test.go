package sim_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blksim/blksim/sim"
)

const (
	ns = time.Nanosecond
	us = time.Microsecond
	ms = time.Millisecond
)

// event is one (simulated time, what happened) tuple of a timeline.
type event struct {
	At   time.Duration
	What string
}

func (ev event) String() string { return fmt.Sprintf("%v %s", ev.At, ev.What) }

// recorder collects a timeline. It is only touched from the engine
// goroutine (tasks and handlers), so it needs no locking.
type recorder struct{ evs []event }

// add records "<task> <what>" at the task's current time.
func (r *recorder) add(t *sim.Task, what string) {
	r.evs = append(r.evs, event{time.Duration(t.Now()), t.Name() + " " + what})
}

// addAt records what at an explicit time (for handlers).
func (r *recorder) addAt(at sim.Time, what string) {
	r.evs = append(r.evs, event{time.Duration(at), what})
}

// String renders the timeline one event a line.
func (r *recorder) String() string {
	var b strings.Builder
	for _, ev := range r.evs {
		fmt.Fprintln(&b, ev)
	}
	return b.String()
}

// newEngine returns an engine that is closed when the test ends, so that
// no task coroutine outlives its test (TestMain checks for leaks).
func newEngine(tb testing.TB, h sim.Host) *sim.Engine {
	tb.Helper()
	e := sim.New(sim.Options{Seed: 1, Host: h})
	tb.Cleanup(func() { _ = e.Close() })
	return e
}

// spawn creates a task named name that starts at simulated time at (which
// must not be in the past) and then runs fn.
func spawn(e *sim.Engine, name string, at time.Duration, fn func(t *sim.Task)) *sim.Task {
	return e.Go(name, func(t *sim.Task) {
		t.Sleep(at - time.Duration(t.Now()))
		fn(t)
	})
}

// step is one parsed operation of a task script.
type step struct {
	op string
	d  time.Duration
}

// parseOps parses a task script: down_read, up_read, down_write,
// up_write, lock, unlock (the mutex), "cpu D", "sleep D" and yield.
func parseOps(ops []string) ([]step, error) {
	var steps []step
	for _, s := range ops {
		f := strings.Fields(s)
		if len(f) == 0 {
			return nil, fmt.Errorf("empty op")
		}
		st := step{op: f[0]}
		switch f[0] {
		case "down_read", "up_read", "down_write", "up_write", "lock", "unlock", "yield":
			if len(f) != 1 {
				return nil, fmt.Errorf("op %q takes no argument", s)
			}
		case "cpu", "sleep":
			if len(f) != 2 {
				return nil, fmt.Errorf("op %q wants one duration", s)
			}
			d, err := time.ParseDuration(f[1])
			if err != nil {
				return nil, fmt.Errorf("op %q: %w", s, err)
			}
			st.d = d
		default:
			return nil, fmt.Errorf("unknown op %q", s)
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// locks are what a script operates on.
type locks struct {
	sem *sim.RWSem
	mu  *sim.Mutex
}

// exec runs steps in t, recording every lock operation when it returns
// (an acquisition when the task holds the lock, a release at once).
func exec(t *sim.Task, l locks, rec *recorder, steps []step) {
	for _, s := range steps {
		switch s.op {
		case "down_read":
			l.sem.DownRead(t)
		case "up_read":
			l.sem.UpRead(t)
		case "down_write":
			l.sem.DownWrite(t)
		case "up_write":
			l.sem.UpWrite(t)
		case "lock":
			l.mu.Lock(t)
		case "unlock":
			l.mu.Unlock(t)
		case "cpu":
			t.CPU(s.d)
			continue
		case "sleep":
			t.Sleep(s.d)
			continue
		case "yield":
			t.Yield()
			continue
		}
		rec.add(t, s.op)
	}
}

// script spawns a task that runs ops against l from time at.
func script(tb testing.TB, e *sim.Engine, l locks, rec *recorder, name string, at time.Duration, ops ...string) *sim.Task {
	tb.Helper()
	steps, err := parseOps(ops)
	if err != nil {
		tb.Fatal(err)
	}
	return spawn(e, name, at, func(t *sim.Task) { exec(t, l, rec, steps) })
}

package sim_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
)

// rwHost is the host of the rwsem tests: plenty of CPUs, a 5us wake-to-run
// latency, a 200ns spin handoff and no context-switch cost, so that
// timelines show the lock costs alone.
var rwHost = sim.Host{CPUs: 8, WakeLatency: 5 * us, SpinHandoff: 200 * ns}

// taskScript is one task of a rwsem scenario.
type taskScript struct {
	name string
	at   time.Duration
	ops  []string
}

func ts(name string, at time.Duration, ops ...string) taskScript {
	return taskScript{name, at, ops}
}

// runRW runs the tasks against one rwsem and returns the timeline and the
// lock.
func runRW(t *testing.T, host sim.Host, opt sim.RWSemOptions, tasks ...taskScript) ([]event, *sim.RWSem) {
	t.Helper()
	e := newEngine(t, host)
	rec := &recorder{}
	sem := sim.NewRWSem(e, "sem", opt)
	for _, s := range tasks {
		script(t, e, locks{sem: sem}, rec, s.name, s.at, s.ops...)
	}
	require.NoError(t, e.Run(-1))
	require.Zero(t, e.Tasks(), "every task must finish")
	return rec.evs, sem
}

// Rule (a), EXPERIMENTS.md §2: "Reader fast path succeeds only if there is
// no writer, no waiter and no handoff. Otherwise the reader joins the FIFO
// wait queue, so new readers queue behind a waiting writer even while
// readers own the lock."
func TestRWSemReaderFastPathOnlyWithoutWaiters(t *testing.T) {
	tests := []struct {
		name  string
		tasks []taskScript
		want  []event
	}{
		{
			name: "readers share the lock when nobody waits",
			tasks: []taskScript{
				ts("r1", 0, "down_read", "cpu 100us", "up_read"),
				ts("r2", 20*us, "down_read", "cpu 10us", "up_read"),
			},
			want: []event{
				{0, "r1 down_read"},
				{20 * us, "r2 down_read"}, // fast path
				{30 * us, "r2 up_read"},
				{100 * us, "r1 up_read"},
			},
		},
		{
			name: "a reader queues behind a waiting writer while readers own the lock",
			tasks: []taskScript{
				ts("r1", 0, "down_read", "cpu 100us", "up_read"),
				ts("w1", 10*us, "down_write", "cpu 10us", "up_write"),
				ts("r2", 20*us, "down_read", "cpu 10us", "up_read"),
			},
			want: []event{
				{0, "r1 down_read"},
				{100 * us, "r1 up_read"},
				{105 * us, "w1 down_write"},
				{115 * us, "w1 up_write"},
				{120 * us, "r2 down_read"}, // not at 20us
				{130 * us, "r2 up_read"},
			},
		},
		{
			name: "a reader queues while a writer owns the lock",
			tasks: []taskScript{
				ts("w1", 0, "down_write", "cpu 10us", "up_write"),
				ts("r1", 5*us, "down_read", "up_read"),
			},
			want: []event{
				{0, "w1 down_write"},
				{10 * us, "w1 up_write"},
				{15 * us, "r1 down_read"},
				{15 * us, "r1 up_read"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, sem := runRW(t, rwHost, sim.RWSemOptions{}, tc.tasks...)
			assert.Equal(t, tc.want, got)
			assert.Zero(t, sem.Readers())
			assert.Nil(t, sem.Writer())
			assert.Zero(t, sem.Waiters())
		})
	}
}

// TestRWSemStateWhileReaderQueued checks the lock's accessors in the middle
// of rule (a)'s scenario.
func TestRWSemStateWhileReaderQueued(t *testing.T) {
	e := newEngine(t, rwHost)
	rec := &recorder{}
	sem := sim.NewRWSem(e, "sem", sim.RWSemOptions{})
	l := locks{sem: sem}
	script(t, e, l, rec, "r1", 0, "down_read", "cpu 100us", "up_read")
	script(t, e, l, rec, "w1", 10*us, "down_write", "cpu 10us", "up_write")
	script(t, e, l, rec, "r2", 20*us, "down_read", "cpu 10us", "up_read")
	var state []string
	probe := func() {
		w := "nil"
		if sem.Writer() != nil {
			w = sem.Writer().Name()
		}
		state = append(state, fmt.Sprintf("%v readers=%d writer=%s waiters=%d", e.Now(), sem.Readers(), w, sem.Waiters()))
	}
	for _, at := range []time.Duration{50 * us, 102 * us, 110 * us} {
		e.AfterFunc(at, probe)
	}
	require.NoError(t, e.Run(-1))
	assert.Equal(t, []string{
		"50µs readers=1 writer=nil waiters=2",
		"102µs readers=0 writer=nil waiters=2", // w1 is waking up, still queued
		"110µs readers=0 writer=w1 waiters=1",
	}, state)
}

// Rule (b), EXPERIMENTS.md §2: "When the lock is released to waiting
// readers at the head of the queue, all of them are woken together (since
// 5.3: up to 256 from anywhere in the queue)."
func TestRWSemReleaseWakesHeadReaders(t *testing.T) {
	tasks := []taskScript{
		ts("w0", 0, "down_write", "cpu 100us", "up_write"),
		ts("r1", 10*us, "down_read", "cpu 10us", "up_read"),
		ts("r2", 20*us, "down_read", "cpu 10us", "up_read"),
		ts("w1", 30*us, "down_write", "cpu 10us", "up_write"),
		ts("r3", 40*us, "down_read", "cpu 10us", "up_read"),
	}
	tests := []struct {
		name string
		opt  sim.RWSemOptions
		want []event
	}{
		{
			name: "5.2: the run of readers at the head, not readers behind a writer",
			want: []event{
				{0, "w0 down_write"},
				{100 * us, "w0 up_write"},
				{105 * us, "r1 down_read"}, // r1 and r2 together
				{105 * us, "r2 down_read"},
				{115 * us, "r1 up_read"},
				{115 * us, "r2 up_read"},
				{120 * us, "w1 down_write"},
				{130 * us, "w1 up_write"},
				{135 * us, "r3 down_read"}, // r3 waited behind w1
				{145 * us, "r3 up_read"},
			},
		},
		{
			name: "5.3 WakeAnyReaders: readers from anywhere in the queue",
			opt:  sim.RWSemOptions{WakeAnyReaders: true},
			want: []event{
				{0, "w0 down_write"},
				{100 * us, "w0 up_write"},
				{105 * us, "r1 down_read"},
				{105 * us, "r2 down_read"},
				{105 * us, "r3 down_read"}, // jumped over w1
				{115 * us, "r1 up_read"},
				{115 * us, "r2 up_read"},
				{115 * us, "r3 up_read"},
				{120 * us, "w1 down_write"},
				{130 * us, "w1 up_write"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := runRW(t, rwHost, tc.opt, tasks...)
			assert.Equal(t, tc.want, got)
		})
	}
}

// Rule (b), the batch size: in 5.2 every reader of the head run is woken
// ("all of them"); with WakeAnyReaders at most 256 are.
func TestRWSemReaderWakeBatch(t *testing.T) {
	const nReaders = 300
	tests := []struct {
		name     string
		opt      sim.RWSemOptions
		writerAt time.Duration // a writer queued among the readers; 0: none
		want     map[time.Duration]int
	}{
		{
			name: "5.2 wakes the whole head run of 300",
			want: map[time.Duration]int{105 * us: 300},
		},
		{
			name:     "5.3 wakes 256 from anywhere, the rest after the writer",
			opt:      sim.RWSemOptions{WakeAnyReaders: true},
			writerAt: 1*us + 1*ns, // behind the first reader, before the rest
			// 256 at 105us; their releases at 115us wake the writer
			// (120us, releases at 130us) and then the last 44.
			want: map[time.Duration]int{105 * us: 256, 135 * us: 44},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tasks := []taskScript{ts("w0", 0, "down_write", "cpu 100us", "up_write")}
			for i := range nReaders {
				tasks = append(tasks, ts(fmt.Sprint("r", i), us+time.Duration(2*i)*ns, "down_read", "cpu 10us", "up_read"))
			}
			if tc.writerAt > 0 {
				tasks = append(tasks, ts("w1", tc.writerAt, "down_write", "cpu 10us", "up_write"))
			}
			host := rwHost
			host.CPUs = 512 // no run-queue delays for the readers' bursts
			got, _ := runRW(t, host, tc.opt, tasks...)
			acquired := map[time.Duration]int{}
			for _, ev := range got {
				if strings.HasSuffix(ev.What, " down_read") {
					acquired[ev.At]++
				}
			}
			assert.Equal(t, tc.want, acquired)
		})
	}
}

// Rule (c), EXPERIMENTS.md §2: "Writers spin optimistically while the
// owner is a running writer (...), then sleep."
func TestRWSemWriterOptimisticSpinning(t *testing.T) {
	tests := []struct {
		name  string
		opt   sim.RWSemOptions
		owner []string
		want  []event
		stats sim.LockModeStats
	}{
		{
			name:  "spinner takes the lock a spin handoff after release",
			opt:   sim.RWSemOptions{WriterSpin: true},
			owner: []string{"down_write", "cpu 10us", "up_write"},
			want: []event{
				{0, "w1 down_write"},
				{10 * us, "w1 up_write"},
				{10*us + 200*ns, "w2 down_write"}, // SpinHandoff, not WakeLatency
				{11*us + 200*ns, "w2 up_write"},
			},
			stats: sim.LockModeStats{Acquisitions: 2, Contentions: 1,
				WaitTotal: 8200 * ns, WaitMax: 8200 * ns, WaitMin: 8200 * ns,
				HoldTotal: 11 * us, HoldMax: 10 * us, HoldMin: 1 * us,
				Spins: 1, SpinTime: 8200 * ns},
		},
		{
			name:  "without spinning the waiter sleeps",
			owner: []string{"down_write", "cpu 10us", "up_write"},
			want: []event{
				{0, "w1 down_write"},
				{10 * us, "w1 up_write"},
				{15 * us, "w2 down_write"},
				{16 * us, "w2 up_write"},
			},
			stats: sim.LockModeStats{Acquisitions: 2, Contentions: 1,
				WaitTotal: 13 * us, WaitMax: 13 * us, WaitMin: 13 * us,
				HoldTotal: 11 * us, HoldMax: 10 * us, HoldMin: 1 * us},
		},
		{
			// The owner calls Sleep at 5us while holding the lock: the
			// spinner stops spinning (3us spun, no spin acquisition) and
			// sleeps until the owner's release wakes it.
			name:  "spinner gives up and sleeps when the owner sleeps",
			opt:   sim.RWSemOptions{WriterSpin: true},
			owner: []string{"down_write", "cpu 5us", "sleep 20us", "cpu 5us", "up_write"},
			want: []event{
				{0, "w1 down_write"},
				{30 * us, "w1 up_write"},
				{35 * us, "w2 down_write"},
				{36 * us, "w2 up_write"},
			},
			stats: sim.LockModeStats{Acquisitions: 2, Contentions: 1,
				WaitTotal: 33 * us, WaitMax: 33 * us, WaitMin: 33 * us,
				HoldTotal: 31 * us, HoldMax: 30 * us, HoldMin: 1 * us,
				SpinTime: 3 * us},
		},
		{
			// The owner is asleep when w2 arrives: no spinning at all.
			name:  "no spinning on a sleeping owner",
			opt:   sim.RWSemOptions{WriterSpin: true},
			owner: []string{"down_write", "sleep 10us", "up_write"},
			want: []event{
				{0, "w1 down_write"},
				{10 * us, "w1 up_write"},
				{15 * us, "w2 down_write"},
				{16 * us, "w2 up_write"},
			},
			stats: sim.LockModeStats{Acquisitions: 2, Contentions: 1,
				WaitTotal: 13 * us, WaitMax: 13 * us, WaitMin: 13 * us,
				HoldTotal: 11 * us, HoldMax: 10 * us, HoldMin: 1 * us},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, sem := runRW(t, rwHost, tc.opt,
				taskScript{"w1", 0, tc.owner},
				ts("w2", 2*us, "down_write", "cpu 1us", "up_write"))
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.stats, sem.Stats().Write)
		})
	}
}

// Rule (c): the spinner is running while it spins and stops running when
// the owner sleeps; a later arrival spins again once the owner runs.
func TestRWSemSpinnerRunningState(t *testing.T) {
	e := newEngine(t, rwHost)
	rec := &recorder{}
	sem := sim.NewRWSem(e, "sem", sim.RWSemOptions{WriterSpin: true})
	l := locks{sem: sem}
	script(t, e, l, rec, "w1", 0, "down_write", "cpu 5us", "sleep 20us", "cpu 5us", "up_write")
	w2 := script(t, e, l, rec, "w2", 2*us, "down_write", "cpu 1us", "up_write")
	w3 := script(t, e, l, rec, "w3", 27*us, "down_write", "cpu 1us", "up_write")
	var obs []string
	for _, at := range []time.Duration{4 * us, 6 * us, 28 * us} {
		e.AfterFunc(at, func() {
			obs = append(obs, fmt.Sprintf("%v w2=%v w3=%v", e.Now(), w2.Running(), w3.Running()))
		})
	}
	require.NoError(t, e.Run(-1))
	assert.Equal(t, []string{
		"4µs w2=true w3=false",  // w2 spins (w3 has not started: asleep)
		"6µs w2=false w3=false", // the owner slept at 5us: w2 sleeps
		"28µs w2=false w3=true", // w3 arrived while the owner runs: spins
	}, obs)
	// w3 steals the lock from the sleeping w2 (spinners come first).
	assert.Equal(t, []event{
		{0, "w1 down_write"},
		{30 * us, "w1 up_write"},
		{30*us + 200*ns, "w3 down_write"},
		{31*us + 200*ns, "w3 up_write"},
		{36*us + 200*ns, "w2 down_write"},
		{37*us + 200*ns, "w2 up_write"},
	}, rec.evs)
	st := sem.Stats().Write
	assert.Equal(t, uint64(1), st.Spins)
	assert.Equal(t, 3*us+3*us+200*ns, st.SpinTime) // w2 3us, w3 3.2us
}

// Rule (d), EXPERIMENTS.md §2: lock stealing ("Handoff: when the first
// waiter has waited 4 ms it sets a handoff bit that stops lock stealing"
// implies that before then a new writer may take a free lock past the
// queue). In this model a writer steals from the optimistic-spin path
// (WriterSpin) when the last owner was a writer, as in Linux 5.2; a lock
// last owned by readers stays marked reader-owned and is not stolen.
//
// The owner holds the lock while sleeping so that w2 sleeps rather than
// spins; its release at 10us wakes w2, which runs at 15us. A writer
// arriving at 12us, while w2 is still waking up, steals the lock; w2 finds
// it taken and sleeps again.
func TestRWSemLockStealing(t *testing.T) {
	spin := sim.RWSemOptions{WriterSpin: true}
	w1 := ts("w1", 0, "down_write", "sleep 10us", "up_write")
	w2 := ts("w2", 1*us, "down_write", "cpu 10us", "up_write")
	tests := []struct {
		name  string
		opt   sim.RWSemOptions
		tasks []taskScript
		want  []event
		write sim.LockModeStats
	}{
		{
			name:  "a new writer steals from the waking head writer",
			opt:   spin,
			tasks: []taskScript{w1, w2, ts("w3", 12*us, "down_write", "cpu 10us", "up_write")},
			want: []event{
				{0, "w1 down_write"},
				{10 * us, "w1 up_write"}, // wakes w2, which runs at 15us
				{12 * us, "w3 down_write"},
				{22 * us, "w3 up_write"}, // w2 found the lock taken and slept again
				{27 * us, "w2 down_write"},
				{37 * us, "w2 up_write"},
			},
			// The steal is a (zero-wait) contention won on the spin path.
			write: sim.LockModeStats{Acquisitions: 3, Contentions: 2,
				WaitTotal: 26 * us, WaitMax: 26 * us, WaitMin: 26 * us,
				HoldTotal: 30 * us, HoldMax: 10 * us, HoldMin: 10 * us,
				Spins: 1},
		},
		{
			name:  "without writer spinning a new writer queues",
			tasks: []taskScript{w1, w2, ts("w3", 12*us, "down_write", "cpu 10us", "up_write")},
			want: []event{
				{0, "w1 down_write"},
				{10 * us, "w1 up_write"},
				{15 * us, "w2 down_write"},
				{25 * us, "w2 up_write"},
				{30 * us, "w3 down_write"},
				{40 * us, "w3 up_write"},
			},
			write: sim.LockModeStats{Acquisitions: 3, Contentions: 2,
				WaitTotal: 14*us + 18*us, WaitMax: 18 * us, WaitMin: 14 * us,
				HoldTotal: 30 * us, HoldMax: 10 * us, HoldMin: 10 * us},
		},
		{
			name:  "a lock last owned by readers is not stolen",
			opt:   spin,
			tasks: []taskScript{ts("r1", 0, "down_read", "sleep 10us", "up_read"), w2, ts("w3", 12*us, "down_write", "cpu 10us", "up_write")},
			want: []event{
				{0, "r1 down_read"},
				{10 * us, "r1 up_read"},
				{15 * us, "w2 down_write"},
				{25 * us, "w2 up_write"},
				{30 * us, "w3 down_write"},
				{40 * us, "w3 up_write"},
			},
			write: sim.LockModeStats{Acquisitions: 2, Contentions: 2,
				WaitTotal: 14*us + 18*us, WaitMax: 18 * us, WaitMin: 14 * us,
				HoldTotal: 20 * us, HoldMax: 10 * us, HoldMin: 10 * us},
		},
		{
			name:  "a new reader does not steal",
			opt:   spin,
			tasks: []taskScript{w1, w2, ts("r1", 12*us, "down_read", "cpu 10us", "up_read")},
			want: []event{
				{0, "w1 down_write"},
				{10 * us, "w1 up_write"},
				{15 * us, "w2 down_write"},
				{25 * us, "w2 up_write"},
				{30 * us, "r1 down_read"},
				{40 * us, "r1 up_read"},
			},
			write: sim.LockModeStats{Acquisitions: 2, Contentions: 1,
				WaitTotal: 14 * us, WaitMax: 14 * us, WaitMin: 14 * us,
				HoldTotal: 20 * us, HoldMax: 10 * us, HoldMin: 10 * us},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, sem := runRW(t, rwHost, tc.opt, tc.tasks...)
			assert.Equal(t, tc.want, got)
			st := sem.Stats()
			assert.Equal(t, tc.write, st.Write)
			assert.Zero(t, st.Handoffs)
		})
	}
}

// Rule (d), EXPERIMENTS.md §2: "Handoff: when the first waiter has waited
// 4 ms it sets a handoff bit that stops lock stealing."
//
// w1 takes the lock for 10us (sleeping while it holds it, so that w2 does
// not spin), pauses 1us and takes it again, over and over: each release
// wakes w2 (queued since 3us), but w1 steals the lock back (spin path)
// before w2 has woken up. The release at 4003us is the first one at which
// w2 has waited 4ms (exactly; the one at 3992us is 11us short): the lock is
// handed to w2, w1 cannot steal it at 4004us, and w2 holds it at 4008us.
func TestRWSemHandoff(t *testing.T) {
	tests := []struct {
		name     string
		timeout  time.Duration
		w2Got    time.Duration
		before   int    // w1's acquisitions before w2's
		steals   uint64 // all but w1's first
		handoffs uint64
	}{
		{"default 4ms timeout", 0, 4008 * us, 364, 363, 1},
		{"explicit 4ms", 4 * ms, 4008 * us, 364, 363, 1},
		// w1 loops while Now < 5ms: last acquisition at 4994us, release at
		// 5004us wakes w2 for 5009us.
		{"handoff disabled: w2 starves until w1 stops", -1, 5009 * us, 455, 454, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host := sim.Host{CPUs: 2, WakeLatency: 5 * us}
			e := newEngine(t, host)
			sem := sim.NewRWSem(e, "sem", sim.RWSemOptions{WriterSpin: true, HandoffTimeout: tc.timeout})
			var w1Got []time.Duration
			var w2Got time.Duration
			e.Go("w1", func(t *sim.Task) {
				for t.Now() < sim.Time(5*ms) {
					sem.DownWrite(t)
					w1Got = append(w1Got, time.Duration(t.Now()))
					t.Sleep(10 * us)
					sem.UpWrite(t)
					t.CPU(1 * us)
				}
			})
			spawn(e, "w2", 3*us, func(t *sim.Task) {
				sem.DownWrite(t)
				w2Got = time.Duration(t.Now())
				t.CPU(10 * us)
				sem.UpWrite(t)
			})
			require.NoError(t, e.Run(-1))
			assert.Equal(t, tc.w2Got, w2Got)
			before := 0
			for _, at := range w1Got {
				if at < w2Got {
					before++
				}
			}
			assert.Equal(t, tc.before, before)
			st := sem.Stats()
			assert.Equal(t, tc.handoffs, st.Handoffs)
			assert.Equal(t, tc.steals, st.Write.Spins, "w1's steals")
			assert.Equal(t, tc.w2Got-3*us, st.Write.WaitMax, "w2's wait is the longest")
			if tc.handoffs > 0 {
				// After the handoff w1 waits for w2 (released at 4018us)
				// and runs again 5us later.
				assert.Contains(t, w1Got, 4023*us)
			}
		})
	}
}

// Rule (e), EXPERIMENTS.md §2: "Reader optimistic spinning (section 5):
// readers also spin while a running writer owns the lock, instead of
// sleeping and being woken." All spinning readers get the lock together.
func TestRWSemReaderOptimisticSpinning(t *testing.T) {
	tests := []struct {
		name  string
		opt   sim.RWSemOptions
		owner []string
		want  []event
		read  sim.LockModeStats
	}{
		{
			name:  "spinning readers take the lock together on release",
			opt:   sim.RWSemOptions{ReaderSpin: true},
			owner: []string{"down_write", "cpu 10us", "up_write"},
			want: []event{
				{0, "w down_write"},
				{10 * us, "w up_write"},
				{10*us + 200*ns, "r1 down_read"},
				{10*us + 200*ns, "r2 down_read"},
				{11*us + 200*ns, "r1 up_read"},
				{11*us + 200*ns, "r2 up_read"},
			},
			read: sim.LockModeStats{Acquisitions: 2, Contentions: 2,
				WaitTotal: 8200*ns + 6200*ns, WaitMax: 8200 * ns, WaitMin: 6200 * ns,
				HoldTotal: 2 * us, HoldMax: 1 * us, HoldMin: 1 * us,
				Spins: 2, SpinTime: 8200*ns + 6200*ns},
		},
		{
			name:  "without reader spinning they sleep and are woken",
			owner: []string{"down_write", "cpu 10us", "up_write"},
			want: []event{
				{0, "w down_write"},
				{10 * us, "w up_write"},
				{15 * us, "r1 down_read"},
				{15 * us, "r2 down_read"},
				{16 * us, "r1 up_read"},
				{16 * us, "r2 up_read"},
			},
			read: sim.LockModeStats{Acquisitions: 2, Contentions: 2,
				WaitTotal: 13*us + 11*us, WaitMax: 13 * us, WaitMin: 11 * us,
				HoldTotal: 2 * us, HoldMax: 1 * us, HoldMin: 1 * us},
		},
		{
			name:  "readers do not spin on a sleeping writer",
			opt:   sim.RWSemOptions{ReaderSpin: true},
			owner: []string{"down_write", "sleep 10us", "up_write"},
			want: []event{
				{0, "w down_write"},
				{10 * us, "w up_write"},
				{15 * us, "r1 down_read"},
				{15 * us, "r2 down_read"},
				{16 * us, "r1 up_read"},
				{16 * us, "r2 up_read"},
			},
			read: sim.LockModeStats{Acquisitions: 2, Contentions: 2,
				WaitTotal: 13*us + 11*us, WaitMax: 13 * us, WaitMin: 11 * us,
				HoldTotal: 2 * us, HoldMax: 1 * us, HoldMin: 1 * us},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, sem := runRW(t, rwHost, tc.opt,
				taskScript{"w", 0, tc.owner},
				ts("r1", 2*us, "down_read", "cpu 1us", "up_read"),
				ts("r2", 4*us, "down_read", "cpu 1us", "up_read"))
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.read, sem.Stats().Read)
		})
	}
}

// Rules (c) and (e) together: readers and a writer spin on a running
// writer; the first spinner is a reader, so the spinning readers get the
// lock and the spinning writer, which cannot spin on readers in this model,
// sleeps until they release.
func TestRWSemMixedSpinners(t *testing.T) {
	got, sem := runRW(t, rwHost, sim.RWSemOptions{ReaderSpin: true, WriterSpin: true},
		ts("w1", 0, "down_write", "cpu 10us", "up_write"),
		ts("r1", 2*us, "down_read", "cpu 5us", "up_read"),
		ts("w2", 4*us, "down_write", "cpu 1us", "up_write"),
		ts("r2", 6*us, "down_read", "cpu 5us", "up_read"))
	assert.Equal(t, []event{
		{0, "w1 down_write"},
		{10 * us, "w1 up_write"},
		{10*us + 200*ns, "r1 down_read"},
		{10*us + 200*ns, "r2 down_read"},
		{15*us + 200*ns, "r1 up_read"},
		{15*us + 200*ns, "r2 up_read"},
		{20*us + 200*ns, "w2 down_write"},
		{21*us + 200*ns, "w2 up_write"},
	}, got)
	st := sem.Stats()
	assert.Equal(t, uint64(2), st.Read.Spins)
	assert.Zero(t, st.Write.Spins)
	assert.Equal(t, 6*us, st.Write.SpinTime, "w2 spun from 4us to 10us")
}

// TestLockStats checks every lockstat figure against a hand-computed
// timeline (wake latency 5us; the 1us context switch after a sleep is
// charged and runs with the next CPU burst or before the release, so it
// counts in the hold but not in the wait):
//
//	 0us  w1 takes the lock (fast path); releases at 10us       hold 10
//	 2us  r1 queues; 4us r2 queues; 6us w2 queues behind them
//	10us  r1 and r2 granted; run at 15us (waits 13 and 11)
//	20us  r1 releases (hold 15..20 = 1+4); 36us r2 releases (hold 1+20)
//	30us  r3 queues behind the waiting w2 (rule (a))
//	36us  w2 woken; takes the lock at 41us (wait 35); releases at 45us (hold 1+3)
//	45us  r3 granted; runs at 50us (wait 20); releases at 51us, after its
//	      context switch (hold 1)
func TestLockStats(t *testing.T) {
	e := newEngine(t, sim.Host{CPUs: 4, WakeLatency: 5 * us, ContextSwitch: 1 * us})
	rec := &recorder{}
	sem := sim.NewRWSem(e, "inode:i_rwsem", sim.RWSemOptions{})
	sim.NewRWSem(e, "a-unused", sim.RWSemOptions{})
	mu := sim.NewMutex(e, "b-mutex", false)
	l := locks{sem: sem, mu: mu}
	script(t, e, l, rec, "w1", 0, "down_write", "cpu 10us", "up_write")
	script(t, e, l, rec, "r1", 2*us, "down_read", "cpu 4us", "up_read")
	script(t, e, l, rec, "r2", 4*us, "down_read", "cpu 20us", "up_read")
	script(t, e, l, rec, "w2", 6*us, "down_write", "cpu 3us", "up_write")
	script(t, e, l, rec, "r3", 30*us, "down_read", "up_read")
	script(t, e, l, rec, "m", 100*us, "lock", "cpu 2us", "unlock")
	require.NoError(t, e.Run(-1))
	assert.Equal(t, []event{
		{0, "w1 down_write"},
		{10 * us, "w1 up_write"},
		{15 * us, "r1 down_read"}, // the context switch runs with the burst
		{15 * us, "r2 down_read"},
		{20 * us, "r1 up_read"},
		{36 * us, "r2 up_read"},
		{41 * us, "w2 down_write"},
		{45 * us, "w2 up_write"},
		{50 * us, "r3 down_read"},
		{51 * us, "r3 up_read"}, // up_read runs the context switch first
		{100 * us, "m lock"},
		{102 * us, "m unlock"},
	}, rec.evs)

	want := sim.LockStats{
		Name: "inode:i_rwsem",
		Kind: "rwsem",
		// The waiters' context switch (1us) after the wake is wait
		// time, not hold time: the hold starts once it has run.
		Read: sim.LockModeStats{
			Acquisitions: 3, Contentions: 3,
			WaitTotal: 47 * us, WaitMax: 21 * us, WaitMin: 12 * us,
			HoldTotal: 24 * us, HoldMax: 20 * us, HoldMin: 0,
		},
		Write: sim.LockModeStats{
			Acquisitions: 2, Contentions: 1,
			WaitTotal: 36 * us, WaitMax: 36 * us, WaitMin: 36 * us,
			HoldTotal: 13 * us, HoldMax: 10 * us, HoldMin: 3 * us,
		},
	}
	assert.Equal(t, want, sem.Stats())
	all := e.LockStats()
	require.Len(t, all, 2, "a lock never acquired is left out")
	assert.Equal(t, "b-mutex", all[0].Name, "sorted by name")
	assert.Equal(t, "mutex", all[0].Kind)
	assert.Equal(t, sim.LockModeStats{Acquisitions: 1, HoldTotal: 2 * us, HoldMax: 2 * us, HoldMin: 2 * us}, all[0].Write)
	assert.Equal(t, want, all[1])
	// Bursts: w1 10, r1 1+4, r2 1+20, w2 1+3, r3 1, m 2.
	assert.Equal(t, 43*us, sum(e.CPUBusy()), "every context switch is CPU time")
}

// TestLockStatsZeroHold: HoldMin is the smallest hold, even when that hold
// took no simulated time and was not the last one.
func TestLockStatsZeroHold(t *testing.T) {
	_, sem := runRW(t, rwHost, sim.RWSemOptions{},
		ts("w", 0, "down_write", "up_write", "down_write", "cpu 5us", "up_write",
			"down_read", "cpu 3us", "up_read", "down_read", "up_read"))
	st := sem.Stats()
	assert.Equal(t, sim.LockModeStats{Acquisitions: 2, HoldTotal: 5 * us, HoldMax: 5 * us, HoldMin: 0}, st.Write)
	assert.Equal(t, sim.LockModeStats{Acquisitions: 2, HoldTotal: 3 * us, HoldMax: 3 * us, HoldMin: 0}, st.Read)
}

func TestRWSemMisuse(t *testing.T) {
	tests := []struct {
		name string
		ops  []string
		msg  string
	}{
		{"up_read not held", []string{"up_read"}, "not held for read"},
		{"up_write not held", []string{"up_write"}, "does not own"},
		{"up_read while holding for write", []string{"down_write", "up_read"}, "not held for read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, rwHost)
			sem := sim.NewRWSem(e, "sem", sim.RWSemOptions{})
			script(t, e, locks{sem: sem}, &recorder{}, "bad", us, tc.ops...)
			pe := errorsAs[*sim.TaskPanicError](t, e.Run(-1))
			assert.Equal(t, "bad", pe.Task)
			assert.Equal(t, sim.Time(us), pe.Time)
			assert.Contains(t, fmt.Sprint(pe.Value), tc.msg)
		})
	}
}

// TestLockStatsHandoffCost: the handoff a sleeping waiter pays (wake-to-run
// latency, context switch, cache-line transfer) is its lockstat wait time,
// not its hold time: raising any of them raises the contended lock's wait
// per contention by that amount and leaves the holds alone. Four rounds,
// 100us apart: a holder takes the lock for 10us; a waiter runs 1us on
// another CPU, then asks for the lock and sleeps until the release.
func TestLockStatsHandoffCost(t *testing.T) {
	base := sim.Host{CPUs: 8, WakeLatency: 3 * us, ContextSwitch: 1 * us}
	run := func(h sim.Host) sim.LockModeStats {
		var tasks []taskScript
		for i := range 4 {
			at := time.Duration(i) * 100 * us
			tasks = append(tasks,
				ts(fmt.Sprintf("h%d", i), at, "down_write", "cpu 10us", "up_write"),
				ts(fmt.Sprintf("w%d", i), at+us, "cpu 1us", "down_write", "cpu 1us", "up_write"))
		}
		_, sem := runRW(t, h, sim.RWSemOptions{HandoffTimeout: -1}, tasks...)
		return sem.Stats().Write
	}
	perContention := func(m sim.LockModeStats) time.Duration {
		require.Equal(t, uint64(4), m.Contentions)
		return m.WaitTotal / time.Duration(m.Contentions)
	}
	ref := run(base)
	assert.Equal(t, 8*us+3*us+1*us, perContention(ref), "the rest of the hold, then wake and context switch")
	tests := []struct {
		name  string
		host  func(h *sim.Host)
		delta time.Duration // of the total wait of the 4 contentions
	}{
		{"wake +5us", func(h *sim.Host) { h.WakeLatency += 5 * us }, 4 * 5 * us},
		{"context switch +2us", func(h *sim.Host) { h.ContextSwitch += 2 * us }, 4 * 2 * us},
		// The waiters' 4 transfers, and those of the holders of rounds
		// 2-4 (the lock was last on the waiter's CPU), which start their
		// holds and so their releases 150ns later.
		{"cache line 150ns", func(h *sim.Host) { h.CacheLine = 150 * ns }, (4 + 3) * 150 * ns},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := base
			tc.host(&h)
			got := run(h)
			assert.Equal(t, ref.WaitTotal+tc.delta, got.WaitTotal)
			assert.Equal(t, ref.HoldTotal, got.HoldTotal, "holds are the critical sections alone")
			assert.Equal(t, ref.HoldMax, got.HoldMax)
			assert.Equal(t, uint64(7), got.AcqBounces, "each round's acquisitions are on CPUs 0 and 1; the first has no previous owner")
			assert.Equal(t, uint64(4), got.ConBounces)
		})
	}
}

// TestCPUTimes: CPU time is system time unless charged as user time;
// sleeps are voluntary and run-queue waits involuntary context switches;
// each CPU's busy time is split the same way.
func TestCPUTimes(t *testing.T) {
	e := newEngine(t, sim.Host{CPUs: 1, WakeLatency: us, ContextSwitch: 500 * ns})
	var a, b *sim.Task
	a = e.Go("a", func(t *sim.Task) {
		t.ChargeUser(2 * us)
		t.CPU(3 * us) // one burst: 2us user, 3us system
		t.Sleep(10 * us)
		t.CPUUser(4 * us)
	})
	b = e.Go("b", func(t *sim.Task) {
		t.CPU(1 * us) // waits for a's first burst: involuntary
	})
	require.NoError(t, e.Run(-1))
	assert.Equal(t, sim.CPUTimes{User: 6 * us, Sys: 3 * us, Voluntary: 1}, a.CPUTimes())
	assert.Equal(t, sim.CPUTimes{Sys: 1 * us, Involuntary: 1}, b.CPUTimes())
	assert.Equal(t, []sim.CPUStat{{User: 6 * us, Sys: 4 * us}}, e.CPUStats())
	assert.Zero(t, e.SpinTime())
}

func TestLockClass(t *testing.T) {
	for name, want := range map[string]string{
		"ext4:i_rwsem:file0": "i_rwsem",
		"xfs:i_rwsem:a:b":    "i_rwsem",
		"f2fs:writepages":    "writepages",
		"sem":                "sem",
	} {
		assert.Equal(t, want, sim.LockClass(name), name)
	}
	e := sim.New(sim.Options{LockClasses: map[string]sim.RWSemOptions{"i_rwsem": {ReaderSpin: true}}})
	defer e.Close()
	assert.True(t, sim.NewRWSem(e, "ext4:i_rwsem:f", sim.RWSemOptions{WriterSpin: true}).Options().ReaderSpin)
	assert.False(t, sim.NewRWSem(e, "ext4:i_rwsem:f", sim.RWSemOptions{WriterSpin: true}).Options().WriterSpin, "the class's options replace the given ones")
	assert.True(t, sim.NewRWSem(e, "ext4:other:f", sim.RWSemOptions{WriterSpin: true}).Options().WriterSpin)
}

// hookCount counts BeforeSleep calls and when they came.
type hookCount struct {
	e  *sim.Engine
	at []time.Duration
}

func (h *hookCount) BeforeSleep(*sim.Task) { h.at = append(h.at, time.Duration(h.e.Now())) }

// A spinner that gives up when the owner sleeps goes to sleep itself
// (schedule() in the kernel), so its sleep hook runs then, as for any
// sleep: the work it batched (a block plug) is not held while it waits.
// w2 spins from 2us; the owner sleeps at 5us, ending the spin: w2's hook
// runs at 5us, and again at no other time (its later wait ends in the
// lock without another sleep).
func TestRWSemSpinnerGivingUpRunsSleepHook(t *testing.T) {
	e := newEngine(t, rwHost)
	sem := sim.NewRWSem(e, "sem", sim.RWSemOptions{WriterSpin: true})
	hook := &hookCount{e: e}
	spawn(e, "w1", 0, func(t *sim.Task) {
		sem.DownWrite(t)
		t.CPU(5 * us)
		t.Sleep(20 * us)
		sem.UpWrite(t)
	})
	spawn(e, "w2", 2*us, func(t *sim.Task) {
		t.SetSleepHook(hook)
		sem.DownWrite(t)
		t.SetSleepHook(nil)
		sem.UpWrite(t)
	})
	require.NoError(t, e.Run(-1))
	assert.Equal(t, []time.Duration{5 * us}, hook.at)
}

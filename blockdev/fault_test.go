package blockdev

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
)

// failedOf submits reqs (op, sector, sectors) to a memory device wrapped
// by a FaultDevice with inj, one at a time, and returns the indexes of
// those that failed.
func failedOf(t *testing.T, inj Injector, reqs []Request) []int {
	t.Helper()
	e := newEngine(t)
	d := NewFaultDevice(e, NewMemDevice(e, MemParams{Capacity: 64 * MiB}), inj)
	c := &countCompleter{}
	d.Attach(c)
	var failed []int
	for i := range reqs {
		r := reqs[i]
		d.Submit(&r)
		run(t, e)
		if r.Err != nil {
			failed = append(failed, i)
		}
	}
	assert.Equal(t, len(reqs), c.n, "every request completes once")
	return failed
}

type countCompleter struct{ n int }

func (c *countCompleter) CompleteRequest(*Request) { c.n++ }

func TestInjectorPredicates(t *testing.T) {
	w := func(sector int64) Request { return Request{Op: OpWrite, Sector: sector, Bytes: 4096} }
	rd := func(sector int64) Request { return Request{Op: OpRead, Sector: sector, Bytes: 4096} }
	mixed := []Request{w(0), rd(0), w(8), rd(8), w(16), rd(16), w(1000), rd(1000), w(24), w(32)}
	tests := []struct {
		name string
		rule *Rule
		want []int
	}{
		{"nil When fails all", &Rule{}, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"writes", &Rule{When: OnOp(OpWrite)}, []int{0, 2, 4, 6, 8, 9}},
		{"reads", &Rule{When: OnOp(OpRead)}, []int{1, 3, 5, 7}},
		{"sector range overlaps", &Rule{When: InSectors(10, 17)}, []int{2, 3, 4, 5}},
		{"writes after the first two writes", &Rule{When: And(OnOp(OpWrite), After(2))}, []int{4, 6, 8, 9}},
		{"every 2nd write", &Rule{When: And(OnOp(OpWrite), Every(2))}, []int{2, 6, 9}},
		{"after 1 then every 2nd", &Rule{When: And(OnOp(OpWrite), After(1), Every(2))}, []int{4, 8}},
		{"capped at 3", &Rule{When: OnOp(OpWrite), Limit: 3}, []int{0, 2, 4}},
		{"reads in range or sector 1000", &Rule{When: And(OnOp(OpRead), Or(InSectors(0, 8), InSectors(1000, 1001)))}, []int{1, 7}},
		{"not writes", &Rule{When: Not(OnOp(OpWrite))}, []int{1, 3, 5, 7}},
		{"probability 0", &Rule{When: Randomly(0, nil)}, nil},
		{"probability 1", &Rule{When: Randomly(1, nil)}, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, failedOf(t, tt.rule, mixed))
			assert.Equal(t, int64(len(tt.want)), tt.rule.Injected())
		})
	}
}

// TestInjectorDeterministic: the same engine seed gives the same faults, a
// different one others.
func TestInjectorDeterministic(t *testing.T) {
	var reqs []Request
	for i := range 200 {
		reqs = append(reqs, Request{Op: Op(i % 2), Sector: int64(i) * 8, Bytes: 4096})
	}
	faults := func(seed uint64) []int {
		e := sim.New(sim.Options{Seed: seed})
		defer e.Close()
		return failedOf(t, &Rule{When: Randomly(0.3, e.NewRand(7))}, reqs)
	}
	a, b, c := faults(1), faults(1), faults(2)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
	assert.InDelta(t, 60, len(a), 25, "about 30%% of 200 fail")
}

// TestFaultDeviceThroughQueue: a failed write stores nothing, a failed
// read returns nothing; both end their bios with the injected errno
// after the latency, show it in the trace's C event, and count in the
// queue's stats as the kernel counts failed IO.
func TestFaultDeviceThroughQueue(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC, syscall.ETIMEDOUT} {
		t.Run(errno.Error(), func(t *testing.T) {
			e := newEngine(t)
			mem := NewMemDevice(e, MemParams{Capacity: 64 * MiB, Latency: 10 * us})
			rule := &Rule{When: InSectors(100, 108), Err: &InjectedError{Errno: errno}}
			fd := NewFaultDevice(e, mem, rule)
			fd.Latency = 30 * ms
			q, err := NewQueue(e, fd, QueueOptions{})
			require.NoError(t, err)
			var evs []TraceEvent
			q.SetTracer(tracerFunc(func(ev *TraceEvent) { evs = append(evs, *ev) }))
			l := newBioLog(e)
			old, nw := Stamp{Writer: 1, Seq: 1}, Stamp{Writer: 2, Seq: 1}
			l.submit(q, &Bio{Op: OpWrite, Sector: 96, Bytes: 4096, Stamp: old}) // 96..103: overlaps
			run(t, e)
			mem.Stamps().Write(96, 16, old)
			bad := &Bio{Op: OpWrite, Sector: 104, Bytes: 4096, Stamp: nw}
			good := &Bio{Op: OpWrite, Sector: 112, Bytes: 4096, Stamp: nw}
			rbad := &Bio{Op: OpRead, Sector: 100, Bytes: 512, CollectData: true}
			l.submit(q, bad)
			l.submit(q, good)
			run(t, e)
			l.submit(q, rbad)
			start := e.Now()
			run(t, e)

			for _, b := range []*Bio{bad, rbad} {
				require.Len(t, l.ends[b], 1)
				end := l.ends[b][0]
				assert.ErrorIs(t, end.Err, errno)
				assert.ErrorIs(t, end.Err, ErrInjected)
				assert.Equal(t, int(errno), ErrnoOf(end.Err))
				assert.Empty(t, end.Data, "a failed read returns no stamps")
			}
			assert.Equal(t, start+sim.Time(30*ms), l.ends[rbad][0].At, "an injected failure completes after the latency")
			require.Len(t, l.ends[good], 1)
			assert.NoError(t, l.ends[good][0].Err)
			assert.Equal(t, []StampRun{{Sector: 96, Sectors: 16, Stamp: old}, {Sector: 112, Sectors: 8, Stamp: nw}},
				mem.Stamps().Read(nil, 96, 24), "the failed write left its sectors' old stamps")

			var errs []int
			for _, ev := range evs {
				if ev.Action == TraceComplete {
					errs = append(errs, ev.Error)
				}
			}
			assert.Equal(t, []int{int(errno), 0, int(errno), int(errno)}, errs, "C events carry the errno (write 96; write 112, served at once; write 104 after the latency; read 100)")
			st := q.Stats()
			assert.Equal(t, [2]uint64{1, 3}, st.IOs, "failed requests count as IOs")
			assert.Equal(t, [2]uint64{1, 24}, st.Sectors, "and their sectors")
			assert.Equal(t, [2]uint64{1, 2}, fd.Injected())
			assert.Equal(t, int64(3), rule.Injected())
		})
	}
}

type tracerFunc func(ev *TraceEvent)

func (f tracerFunc) Trace(ev *TraceEvent) { f(ev) }

func TestFaultDeviceForwards(t *testing.T) {
	e := newEngine(t)
	mem := NewMemDevice(e, MemParams{Name: "ram7", Capacity: 8 * MiB, QueueDepth: 12})
	fd := NewFaultDevice(e, mem, nil)
	assert.Equal(t, "ram7", fd.Name())
	assert.Equal(t, int64(8*MiB), fd.Capacity())
	assert.Equal(t, mem.Limits(), fd.Limits())
	assert.Same(t, mem.Stamps(), fd.Stamps())
	assert.Equal(t, Device(mem), fd.Unwrap())
	assert.Nil(t, NewFaultDevice(e, &reverseDev{e: e}, nil).Stamps(), "a delegate without stamps")
	assert.True(t, errors.Is(&InjectedError{Errno: syscall.EIO}, syscall.EIO))
	assert.False(t, errors.Is(&InjectedError{Errno: syscall.EIO}, syscall.ENOSPC))
	assert.Equal(t, int(syscall.EIO), ErrnoOf(ErrIO))
	assert.Equal(t, int(syscall.EIO), ErrnoOf(errors.New("no errno")))
	assert.Equal(t, "and(op=write, sectors=0-8, after=2, every=3, probability=0.5)",
		And(OnOp(OpWrite), InSectors(0, 8), After(2), Every(3), Randomly(0.5, nil)).String())
}

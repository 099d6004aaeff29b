package sim

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func cmpEvent(a, b event) int {
	if c := cmp.Compare(a.at, b.at); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

func drain(h *eventHeap) []event {
	var out []event
	for h.len() > 0 {
		out = append(out, h.pop())
	}
	return out
}

func TestHeapOrdersByTimeThenSeq(t *testing.T) {
	tests := []struct {
		name string
		in   []event
	}{
		{"empty", nil},
		{"one", []event{{at: 5, seq: 1}}},
		{"times descending", []event{{at: 30, seq: 1}, {at: 20, seq: 2}, {at: 10, seq: 3}}},
		{"seq breaks ties", []event{{at: 10, seq: 3}, {at: 10, seq: 1}, {at: 10, seq: 2}}},
		{"time beats seq", []event{{at: 20, seq: 1}, {at: 10, seq: 9}, {at: 10, seq: 2}, {at: 0, seq: 7}}},
		{"duplicates of time", []event{{at: 1, seq: 4}, {at: 0, seq: 5}, {at: 1, seq: 2}, {at: 0, seq: 1}, {at: 1, seq: 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h eventHeap
			for _, ev := range tc.in {
				h.push(ev)
			}
			require.Equal(t, len(tc.in), h.len())
			want := slices.Clone(tc.in)
			slices.SortFunc(want, cmpEvent)
			got := drain(&h)
			if len(want) == 0 {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, want, got)
		})
	}
}

// TestEngineFIFOAmongEqualTimes schedules many events for the same time
// (interleaved with other times) and checks they fire in scheduling order.
func TestEngineFIFOAmongEqualTimes(t *testing.T) {
	e := New(Options{})
	var got []uint64
	h := recordArg{out: &got}
	const n = 200
	times := make([]Time, n)
	for i := uint64(0); i < n; i++ {
		times[i] = 100
		if i%3 == 0 {
			times[i] = Time(50 + i%7) // earlier events mixed in
		}
		e.At(times[i], h, i)
	}
	// The expected order is a stable sort of the scheduling order by time.
	want := make([]uint64, n)
	for i := range want {
		want[i] = uint64(i)
	}
	slices.SortStableFunc(want, func(a, b uint64) int { return cmp.Compare(times[a], times[b]) })
	require.NoError(t, e.Run(-1))
	assert.Equal(t, want, got, "events at equal times must fire in FIFO order")
	assert.Equal(t, Time(100), e.Now())
	assert.Equal(t, uint64(n), e.Events())
}

type recordArg struct{ out *[]uint64 }

func (r recordArg) Fire(arg uint64) { *r.out = append(*r.out, arg) }

// TestHeapRandomAgainstReference interleaves random pushes and pops and
// compares every pop with a sorted reference slice.
func TestHeapRandomAgainstReference(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 42} {
		rng := rand.New(rand.NewPCG(seed, seed))
		var h eventHeap
		var ref []event
		var seq uint64
		for i := 0; i < 20000; i++ {
			if h.len() == 0 || rng.IntN(100) < 55 {
				seq++
				// A small time range forces many equal times.
				ev := event{at: Time(rng.IntN(64)), seq: seq, arg: seq}
				h.push(ev)
				i, _ := slices.BinarySearchFunc(ref, ev, cmpEvent)
				ref = slices.Insert(ref, i, ev)
				continue
			}
			want := ref[0]
			ref = ref[1:]
			require.Equal(t, want.at, h.peek().at)
			got := h.pop()
			require.Equal(t, want, got, "seed %d step %d", seed, i)
			require.Equal(t, len(ref), h.len())
		}
		got := drain(&h)
		if len(ref) == 0 {
			require.Empty(t, got)
		} else {
			require.Equal(t, ref, got)
		}
	}
}

type nopHandler struct{}

func (nopHandler) Fire(uint64) {}

func TestHeapSteadyStateZeroAllocs(t *testing.T) {
	var h eventHeap
	for i := 0; i < 1024; i++ {
		h.push(event{at: Time(i), seq: uint64(i), h: nopHandler{}})
	}
	seq := uint64(1024)
	allocs := testing.AllocsPerRun(10000, func() {
		ev := h.pop()
		seq++
		ev.at += 1000
		ev.seq = seq
		h.push(ev)
	})
	assert.Zero(t, allocs, "heap push+pop must not allocate in steady state")
}

// TestEngineDispatchZeroAllocs checks the whole At + dispatch path with a
// long-lived Handler.
func TestEngineDispatchZeroAllocs(t *testing.T) {
	e := New(Options{})
	h := &reschedule{e: e}
	// Warm up: grow the heap's backing array.
	for i := 0; i < 64; i++ {
		e.After(Time(i).Duration(), h, 0)
	}
	require.NoError(t, e.Run(-1))
	allocs := testing.AllocsPerRun(1000, func() {
		h.left = 10
		e.After(1, h, 0)
		if err := e.Run(-1); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
	assert.Zero(t, e.Pending())
}

// reschedule re-schedules itself left times.
type reschedule struct {
	e    *Engine
	left int
}

func (r *reschedule) Fire(uint64) {
	if r.left > 0 {
		r.left--
		r.e.After(1, r, 0)
	}
}

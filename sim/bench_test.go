package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// selfScheduler re-schedules itself until it has fired n times.
type selfScheduler struct {
	e    *Engine
	left int
}

func (s *selfScheduler) Fire(uint64) {
	if s.left > 0 {
		s.left--
		s.e.After(1, s, 0)
	}
}

// BenchmarkEventDispatch measures one callback event: schedule plus
// dispatch. It must not allocate.
func BenchmarkEventDispatch(b *testing.B) {
	e := New(Options{})
	defer e.Close()
	h := &selfScheduler{e: e, left: b.N}
	b.ReportAllocs()
	b.ResetTimer()
	e.After(1, h, 0)
	if err := e.Run(-1); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHeapPushPop measures one pop and one push with n events pending.
func BenchmarkHeapPushPop(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("pending=%dk", n/1000), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			var h eventHeap
			seq := uint64(0)
			for range n {
				seq++
				h.push(event{at: Time(rng.Int64N(1_000_000)), seq: seq})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ev := h.pop()
				seq++
				ev.at += Time(rng.Int64N(1_000_000))
				ev.seq = seq
				h.push(ev)
			}
		})
	}
}

// BenchmarkTaskSwitch measures one Sleep: an event plus one iter.Pull
// round trip into the task and back.
func BenchmarkTaskSwitch(b *testing.B) {
	e := New(Options{})
	defer e.Close()
	e.Go("sleeper", func(t *Task) {
		for range b.N {
			t.Sleep(1)
		}
	})
	b.ReportAllocs()
	b.ResetTimer()
	if err := e.Run(-1); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLockHandoff measures one handoff of a sleeping mutex between
// two tasks that ping-pong it: each takes the lock, yields while holding
// it (so the other blocks on it), releases and yields again (so the woken
// waiter takes it before the releaser can steal it back).
func BenchmarkLockHandoff(b *testing.B) {
	e := New(Options{})
	defer e.Close()
	m := NewMutex(e, "m", false)
	body := func(t *Task) {
		for range (b.N + 1) / 2 {
			m.Lock(t)
			t.Yield()
			m.Unlock(t)
			t.Yield()
		}
	}
	e.Go("ping", body)
	e.Go("pong", body)
	b.ReportAllocs()
	b.ResetTimer()
	if err := e.Run(-1); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if st := m.Stats().Write; st.Acquisitions != uint64(2*((b.N+1)/2)) || (b.N > 2 && st.Contentions < st.Acquisitions/2) {
		b.Fatalf("no ping-pong: %+v", st)
	}
}

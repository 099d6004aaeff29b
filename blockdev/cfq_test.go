package blockdev

import (
	"cmp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestCFQScaledSlice checks cfq_scaled_cfqq_slice: in low_latency mode a
// sync slice shrinks so that the busy queues' slices fit the target
// latency, but not below twice slice_idle; the busy-queue average moves
// three quarters of the way to a higher count and a quarter of the way to
// a lower one at each slice.
func TestCFQScaledSlice(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name      string
		idle      time.Duration // SliceIdle (-1: off)
		noLowLat  bool
		busy      int // busy queues besides the active one
		prevAvg   int
		idleQueue bool          // the active queue has nothing queued (all in flight)
		async     bool          // the active queue is the async queue
		sync      time.Duration // SliceSync (0: 100ms)
		wantSlice time.Duration
		wantAvg   int
	}{
		{name: "two queues fit the target", idle: 8 * ms, busy: 1, wantSlice: 100 * ms, wantAvg: 2},
		{name: "three queues fit exactly", idle: -1, busy: 2, prevAvg: 3, wantSlice: 100 * ms, wantAvg: 3},
		{name: "four queues share 300ms", idle: -1, busy: 3, prevAvg: 4, wantSlice: 75 * ms, wantAvg: 4},
		{name: "six queues share 300ms", idle: -1, busy: 5, prevAvg: 6, wantSlice: 50 * ms, wantAvg: 6},
		{name: "average rises by three quarters", idle: -1, busy: 31, wantSlice: 12500 * time.Microsecond, wantAvg: 24},
		{name: "32 queues, no idling", idle: -1, busy: 31, prevAvg: 32, wantSlice: 9375 * time.Microsecond, wantAvg: 32},
		{name: "32 queues, floor of twice slice_idle", idle: 8 * ms, busy: 31, prevAvg: 32, wantSlice: 16 * ms, wantAvg: 32},
		{name: "average decays by a quarter", idle: -1, busy: 1, prevAvg: 32, wantSlice: 12 * ms, wantAvg: 25},
		{name: "low_latency off", idle: 8 * ms, noLowLat: true, busy: 31, prevAvg: 32, wantSlice: 100 * ms, wantAvg: 32},
		{name: "active queue counts with all its requests in flight", idle: -1, busy: 3, prevAvg: 3, idleQueue: true, wantSlice: 75 * ms, wantAvg: 4},
		{name: "slice_idle set, floor below the scaled slice", idle: 2 * ms, busy: 5, prevAvg: 6, wantSlice: 50 * ms, wantAvg: 6},
		{name: "async slice scales, floor scaled too", idle: 8 * ms, async: true, busy: 31, prevAvg: 32, wantSlice: 6400 * time.Microsecond, wantAvg: 32},
		{name: "minute-long slices do not overflow", idle: -1, sync: 40 * time.Second, busy: 31, prevAvg: 32, wantSlice: 9375 * time.Microsecond, wantAvg: 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sync := cmp.Or(tc.sync, 100*ms)
			active := &cfqQueue{sync: !tc.async}
			if !tc.idleQueue {
				active.sorted = []*Request{{}}
			}
			c := &cfq{
				opt: CFQOptions{
					SliceSync: sync, SliceAsync: 40 * ms, SliceIdle: tc.idle,
					TargetLatency: 300 * ms, NoLowLatency: tc.noLowLat,
				},
				active:  active,
				rr:      make([]*cfqQueue, tc.busy),
				busyAvg: tc.prevAvg,
			}
			assert.Equal(t, tc.wantSlice, c.scaledSlice())
			assert.Equal(t, tc.wantAvg, c.busyAvg)
		})
	}
}

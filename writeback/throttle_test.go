package writeback_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/writeback"
)

// throttleHarness has background 100, dirty limit 400 pages: freerun
// ceiling 250, setpoint 325.
func throttleHarness(t *testing.T, opt writeback.HarnessOptions) *writeback.Harness {
	opt.AvailablePages = 1 << 20
	opt.Limits = pageLimits(100, 400)
	return writeback.NewHarness(t, opt)
}

// No pause at or below the freerun ceiling; background writeback is
// kicked above the background threshold all the same.
func TestThrottleNoPauseUnderFreerun(t *testing.T) {
	h := throttleHarness(t, writeback.HarnessOptions{})
	f := h.File("f")
	h.Writer("w", f, writeback.WriterOptions{Pages: 250, Chunk: 50})
	h.RunUntil(s)
	st := h.Stats()
	assert.Zero(t, st.Pauses)
	assert.Positive(t, st.Written[writeback.ReasonBackground])
}

// Between the freerun ceiling and the limit the pause grows with the
// overshoot (2x the bandwidth rate at the ceiling, 1x at the setpoint,
// towards 0 at the limit) up to wb_max_pause; at the limit the writer
// pauses that long and must pause again. Here 400 dirty pages take 16 ms
// to write at the initial 100 MiB/s estimate, so wb_max_pause is one
// jiffy (4 ms).
func TestThrottlePauseCurve(t *testing.T) {
	h := throttleHarness(t, writeback.HarnessOptions{})
	wb := h.Writeback()
	require.Equal(t, int64(25600), wb.Bandwidth())

	p, lim := wb.PauseFor(64, 250)
	assert.Zero(t, p, "at the freerun ceiling")
	assert.False(t, lim)
	p, _ = wb.PauseFor(64, 251)
	assert.InDelta(t, float64(1250*us), float64(p), float64(50*us), "about twice the bandwidth: 64/51200 s")
	p, _ = wb.PauseFor(64, 325)
	assert.Equal(t, 2500*us, p, "the setpoint: 64 pages at 25600 pages/s")

	prev := time.Duration(0)
	for d := int64(251); d < 400; d++ {
		p, lim := wb.PauseFor(64, d)
		assert.False(t, lim)
		assert.GreaterOrEqual(t, p, prev, "dirty %d", d)
		assert.Positive(t, p)
		assert.LessOrEqual(t, p, 4*ms)
		prev = p
	}
	p, lim = wb.PauseFor(64, 400)
	assert.Equal(t, 4*ms, p)
	assert.True(t, lim, "at the limit")
	p, lim = wb.PauseFor(1<<20, 251)
	assert.Equal(t, 4*ms, p, "capped")
	assert.False(t, lim)
}

// wb_max_pause: no pause outlasts about an eighth of the time the
// bandwidth estimate needs to write the dirty pages (dirty / (1 +
// bw/32) jiffies of 4 ms, plus one), and none MaxPause. At the initial
// 25600 pages/s, 801 pages a jiffy.
func TestThrottleMaxPauseScalesWithDirtyPages(t *testing.T) {
	for _, tc := range []struct {
		limit int64
		want  time.Duration
	}{
		{400, 4 * ms},               // 0 + 1 jiffies
		{8010, 44 * ms},             // 10 + 1
		{24030, 124 * ms},           // 30 + 1
		{40000, writeback.MaxPause}, // 49 + 1 = 200 ms
		{1 << 20, writeback.MaxPause},
	} {
		opt := writeback.HarnessOptions{AvailablePages: 1 << 22, Limits: pageLimits(tc.limit/4, tc.limit)}
		wb := writeback.NewHarness(t, opt).Writeback()
		p, lim := wb.PauseFor(64, tc.limit)
		assert.True(t, lim)
		assert.Equal(t, tc.want, p, "limit %d pages", tc.limit)
	}
}

// A writer above the freerun ceiling but under the limit takes one
// bounded pause per call.
func TestThrottlePausesBetweenFreerunAndLimit(t *testing.T) {
	h := writeback.NewHarness(t, writeback.HarnessOptions{AvailablePages: 1 << 20, Limits: pageLimits(10000, 40000)})
	f := h.File("f")
	want, _ := h.Writeback().PauseFor(35000, 35000)
	h.Writer("w", f, writeback.WriterOptions{Pages: 35000, Chunk: 35000})
	h.RunUntil(s)
	st := h.Stats()
	assert.Equal(t, int64(1), st.Pauses)
	assert.Equal(t, want, st.PauseMax)
	assert.Greater(t, st.PauseMax, 10*ms)
	assert.Less(t, st.PauseMax, writeback.MaxPause, "wb_max_pause: 35000 pages a little under 200 ms")
	assert.Zero(t, st.LimitPauses)
}

// A writer at the dirty limit pauses (wb_max_pause at a time) until
// writeback completions bring dirty+writeback pages under the limit.
func TestThrottleBlocksAtLimitUntilWritebackProgresses(t *testing.T) {
	// 2 ms a page: the first 128-page IO completes at about 256 ms.
	h := throttleHarness(t, writeback.HarnessOptions{PageIOTime: 2 * ms, IOLatency: -1})
	wb := h.Writeback()
	f := h.File("f")
	var returned time.Duration
	var atReturn int64
	h.Go("w", 0, func(tk *sim.Task) {
		h.Write(tk, f, 0, 500)
		returned = time.Duration(tk.Now())
		atReturn = wb.DirtyPages() + wb.WritebackPages()
	})
	h.RunUntil(2 * s)
	ios := h.IOs()
	require.NotEmpty(t, ios)
	assert.Equal(t, writeback.ReasonBackground, ios[0].Reason, "the throttled writer kicked background writeback")
	assert.GreaterOrEqual(t, returned, ios[0].Done, "blocked until an IO completed")
	assert.Less(t, atReturn, int64(400), "released under the limit")
	st := h.Stats()
	assert.GreaterOrEqual(t, st.LimitPauses, int64(256/4-1), "pauses of one jiffy through 256 ms of writeback")
	assert.Equal(t, 4*ms, st.PauseMax, "wb_max_pause at the initial estimate")
	assert.Equal(t, st.PauseTotal, returned-500*us, "the writer spent its time after the copy pausing")
}

// With little dirty memory the pauses stay short enough that the device
// does not run dry while the writer sleeps: 8192 pages written 32 at a
// time through a 4096-page dirtyable memory at 100 us a page take about
// the device's 0.82 s. (With 200 ms pauses the device would idle most of
// every pause.)
func TestThrottleSmallMemoryKeepsDeviceBusy(t *testing.T) {
	h := writeback.NewHarness(t, writeback.HarnessOptions{AvailablePages: 4096, PageIOTime: 100 * us, IOLatency: -1})
	f := h.File("f")
	done := writeInChunks(h, f, 8192)
	h.RunUntil(10 * s)
	require.Positive(t, *done)
	assert.Positive(t, h.Stats().Pauses)
	assert.LessOrEqual(t, h.Stats().PauseMax, 40*ms)
	assert.Less(t, *done, 1100*ms, "the writer kept pace with the device")
}

// The bandwidth estimate follows the device (10 us a page: 100000 pages/s)
// once writeback has run for a few averaging periods, and a throttled
// writer cannot outrun the device.
func TestBandwidthEstimate(t *testing.T) {
	h := throttleHarness(t, writeback.HarnessOptions{PageIOTime: 10 * us, IOLatency: -1, CopyCost: -1, PageCost: -1})
	f := h.File("f")
	done := writeInChunks(h, f, 1_000_000)
	h.RunUntil(20 * s)
	assert.InEpsilon(t, 100000, h.Writeback().Bandwidth(), 0.05)
	assert.InDelta(t, float64(10*s), float64(*done), float64(100*ms), "paced at the device's rate")
	assert.Positive(t, h.Stats().Pauses)
}

// writeInChunks starts a task writing pages pages of f, 32 per write()
// call, and returns where it records when it finished.
func writeInChunks(h *writeback.Harness, f *writeback.FakeFile, pages int64) *time.Duration {
	var done time.Duration
	h.Go("w", 0, func(tk *sim.Task) {
		for p := int64(0); p < pages; p += 32 {
			h.Write(tk, f, p, 32)
		}
		done = time.Duration(tk.Now())
	})
	return &done
}

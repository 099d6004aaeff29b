package realdev

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
)

// measureSim measures l on a fresh simulated device built by mk.
func measureSim(t *testing.T, mk func(e *sim.Engine) blockdev.Device, l Load, dur time.Duration) Measured {
	t.Helper()
	e := sim.New(sim.Options{Seed: 1})
	defer e.Close()
	got, err := NewMeasurer(e, mk(e), 64<<20).Measure(l, dur)
	require.NoError(t, err)
	return got
}

// measureFitLoads measures every load calibrate fits on devices built by mk.
func measureFitLoads(t *testing.T, mk func(e *sim.Engine) blockdev.Device) map[Load]Measured {
	t.Helper()
	meas := map[Load]Measured{}
	for _, l := range FitLoads(1 << 20) {
		meas[l] = measureSim(t, mk, l, 50*time.Millisecond)
	}
	return meas
}

func flatBase() blockdev.FlatParams {
	p := blockdev.DefaultFlatParams()
	p.Capacity = 128 << 20
	return p
}

// Fitted to measurements of a flat device, FitFlat finds its parameters
// again.
func TestFitFlatRecoversAFlatDevice(t *testing.T) {
	truth := flatBase()
	truth.Name = "vda"
	truth.ReadLatency, truth.WriteLatency = 41*time.Microsecond, 55*time.Microsecond
	truth.ReadMBps, truth.WriteMBps = 1750, 2100
	var err error
	truth.ReadSpeedup, err = blockdev.ParseSpeedup("2:1.5, 4:1.9, 8:2.6, 16:3.3, 32:4.2")
	require.NoError(t, err)
	truth.WriteSpeedup, err = blockdev.ParseSpeedup("4:2.2, 32:5")
	require.NoError(t, err)
	truth.SwitchTime = 9 * time.Microsecond
	mk := func(e *sim.Engine) blockdev.Device {
		d, err := blockdev.NewFlat(e, truth)
		require.NoError(t, err)
		return d
	}
	meas := measureFitLoads(t, mk)
	base := flatBase()
	base.Name = "vda"
	got, err := FitFlat(meas, base)
	require.NoError(t, err)
	assert.Equal(t, "vda", got.Name)
	assert.Equal(t, truth.Capacity, got.Capacity)
	assert.InEpsilon(t, float64(truth.ReadLatency), float64(got.ReadLatency), 0.01)
	assert.InEpsilon(t, float64(truth.WriteLatency), float64(got.WriteLatency), 0.01)
	assert.InEpsilon(t, truth.ReadMBps, got.ReadMBps, 0.01)
	assert.InEpsilon(t, truth.WriteMBps, got.WriteMBps, 0.01)
	for _, n := range FitDepths {
		assert.InEpsilon(t, truth.ReadSpeedup.At(n), got.ReadSpeedup.At(n), 0.01, "read speedup at %d", n)
		assert.InEpsilon(t, truth.WriteSpeedup.At(n), got.WriteSpeedup.At(n), 0.01, "write speedup at %d", n)
	}
	assert.InEpsilon(t, float64(truth.SwitchTime), float64(got.SwitchTime), 0.03)
}

// A device that is not flat inside (an NVMe model: reads striped over
// dies, so latency is not linear in size) is still reproduced on the loads
// the fit saw: exactly at 4 KiB by depth (the speedup curve is solved from
// them), and over sizes as well as one line can. (Its
// write buffer is too big to fill here: a buffer that fills makes the
// device's speed depend on its history, which no flat model has.)
func TestFitFlatReproducesItsLoads(t *testing.T) {
	nv := blockdev.FlashDefaults("nvme")
	nv.Capacity, nv.MaxHWSectorsKB, nv.QueueDepth = 128<<20, 1024, 64
	nv.Channels, nv.DiesPerChannel, nv.PageSize, nv.Planes = 4, 1, 16<<10, 1
	nv.ReadTime, nv.ProgramTime, nv.ChannelMBps, nv.HostMBps = 60*time.Microsecond, 400*time.Microsecond, 800, 3000
	nv.ReadOverhead, nv.WriteOverhead, nv.WriteBuffer = 10*time.Microsecond, 8*time.Microsecond, 1<<30
	mkNVMe := func(e *sim.Engine) blockdev.Device {
		d, err := blockdev.NewNVMe(e, nv)
		require.NoError(t, err)
		return d
	}
	meas := measureFitLoads(t, mkNVMe)
	p, err := FitFlat(meas, flatBase())
	require.NoError(t, err)
	mkFlat := func(e *sim.Engine) blockdev.Device {
		d, err := blockdev.NewFlat(e, p)
		require.NoError(t, err)
		return d
	}
	for _, l := range FitLoads(1 << 20) {
		got := measureSim(t, mkFlat, l, 50*time.Millisecond)
		want := meas[l]
		tol := 0.02
		if l.QD == 1 || l.BS != 4<<10 {
			tol = 0.35 // one line through the sizes of a device that is not linear
		}
		assert.InEpsilon(t, want.IOPS, got.IOPS, tol, "%v: IOPS", l)
		assert.InEpsilon(t, float64(want.MeanLat), float64(got.MeanLat), tol, "%v: mean latency", l)
	}
}

// A device with a smaller request cap is measured and fitted without the
// sizes beyond it.
func TestFitLoadsSmallCap(t *testing.T) {
	all := FitLoads(1 << 20)
	small := FitLoads(128 << 10)
	for _, l := range small {
		assert.LessOrEqual(t, l.BS, int64(128<<10))
		assert.Contains(t, all, l)
	}
	assert.Len(t, small, len(all)-6, "256k and 1m at depth 1, 256k deep, both directions")
	truth := flatBase()
	truth.MaxHWSectorsKB = 128
	truth.ReadLatency, truth.WriteLatency, truth.ReadMBps, truth.WriteMBps = 30*time.Microsecond, 20*time.Microsecond, 3000, 2000
	mk := func(e *sim.Engine) blockdev.Device {
		d, err := blockdev.NewFlat(e, truth)
		require.NoError(t, err)
		return d
	}
	meas := map[Load]Measured{}
	for _, l := range small {
		meas[l] = measureSim(t, mk, l, 20*time.Millisecond)
	}
	base := flatBase()
	base.MaxHWSectorsKB = 128
	got, err := FitFlat(meas, base)
	require.NoError(t, err)
	assert.InEpsilon(t, 3000, got.ReadMBps, 0.01)
	assert.InEpsilon(t, float64(20*time.Microsecond), float64(got.WriteLatency), 0.01)
	base.MaxHWSectorsKB = 2
	_, err = FitFlat(meas, base)
	assert.ErrorContains(t, err, "needs 4 KiB")
}

func TestFitFlatMissingLoad(t *testing.T) {
	meas := map[Load]Measured{}
	for _, l := range FitLoads(1 << 20)[1:] {
		meas[l] = Measured{IOPS: 1000, MeanLat: time.Millisecond}
	}
	_, err := FitFlat(meas, flatBase())
	assert.ErrorContains(t, err, "randread 4k QD1 not measured")
}

func TestFitLine(t *testing.T) {
	pts := func(xy ...float64) []linePoint {
		var out []linePoint
		for i := 0; i < len(xy); i += 2 {
			out = append(out, linePoint{x: xy[i], y: xy[i+1], withA: true})
		}
		return out
	}
	a, b := fitLine(pts(1, 12, 2, 14, 4, 18))
	assert.InDelta(t, 10, a, 1e-9)
	assert.InDelta(t, 2, b, 1e-9)
	// Points with an offset instead of a: they fit b alone, and pull it
	// together with the others.
	a, b = fitLine(append(pts(1, 12, 2, 14), linePoint{x: 10, y: 25, off: 5}))
	assert.InDelta(t, 10, a, 1e-9)
	assert.InDelta(t, 2, b, 1e-9)
	a, b = fitLine([]linePoint{{x: 10, y: 25, off: 5}, {x: 20, y: 45, off: 5}})
	assert.Zero(t, a)
	assert.InDelta(t, 2, b, 1e-9)
	// Falling with size (noise): a flat line.
	a, b = fitLine(pts(1, 20, 2, 10))
	assert.Zero(t, b)
	assert.InDelta(t, 12, a, 1e-9, "weighted 1/y²: (20/400 + 10/100) / (1/400 + 1/100)")
	// An intercept below 1% of the smallest latency is raised to it.
	a, b = fitLine(pts(1, 100, 2, 300, 3, 500))
	assert.InDelta(t, 1, a, 1e-9)
	assert.Positive(t, b)
}

func TestMedian(t *testing.T) {
	runs := []Measured{{IOPS: 3, MeanLat: 30}, {IOPS: 1, MeanLat: 50}, {IOPS: 2, MeanLat: 10}}
	assert.Equal(t, Measured{IOPS: 2, MeanLat: 30}, Median(runs))
	assert.Equal(t, Measured{IOPS: 2, MeanLat: 40}, Median(runs[:2]), "even count: the mean of the middle two")
	assert.Zero(t, Median(nil))
}

// A target slower than the measuring window (a loaded machine) measures
// slow instead of failing: the window stretches to the first completion.
func TestMeasureStretchesWindowForSlowTarget(t *testing.T) {
	mk := func(e *sim.Engine) blockdev.Device {
		return blockdev.NewMemDevice(e, blockdev.MemParams{Capacity: 64 << 20, Latency: 30 * time.Millisecond})
	}
	got := measureSim(t, mk, Load{BS: 4096, QD: 4, ReadPct: 100}, 10*time.Millisecond)
	// All four first requests complete at 30 ms, past the window's end
	// (11 ms): they are counted, over a window of 29 ms.
	assert.Equal(t, 4, got.IOs)
	assert.Equal(t, 30*time.Millisecond, got.MeanLat)
	assert.InDelta(t, 4/0.029, got.IOPS, 0.5)
}

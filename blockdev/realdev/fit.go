package realdev

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
)

// Calibration loads: what FitFlat needs measured.
var (
	// FitSizes are the block sizes measured alone (depth 1) in each
	// direction: the latency over size gives the command and data parts.
	FitSizes = []int64{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20}
	// FitDepths are the depths at which 4 KiB random IO is measured in
	// each direction: the throughput by depth gives the speedup curves.
	FitDepths = []int{2, 4, 8, 16, 32}
	// FitDeepSizes are larger sizes measured at depth FitDeepDepth in
	// each direction: beside the 4 KiB load at that depth they give the
	// data rate once commands overlap.
	FitDeepSizes = []int64{64 << 10, 256 << 10}
)

// FitDeepDepth is the depth of the FitDeepSizes loads.
const FitDeepDepth = 8

// FitMix is the read/write mix measured for the switch time.
var FitMix = Load{BS: 4 << 10, QD: 8, ReadPct: 50}

// fitBS is the block size of the depth loads.
const fitBS = 4 << 10

// FitLoads returns the loads FitFlat fits to, for a device whose largest
// request is maxBS bytes: random reads and random writes of every FitSizes
// size at depth 1, of 4 KiB at every FitDepths depth, and of every
// FitDeepSizes size at depth FitDeepDepth, leaving out sizes above maxBS;
// and the FitMix mix.
func FitLoads(maxBS int64) []Load {
	var out []Load
	for _, pct := range []int{100, 0} {
		for _, bs := range FitSizes {
			if bs <= maxBS {
				out = append(out, Load{BS: bs, QD: 1, ReadPct: pct})
			}
		}
		for _, qd := range FitDepths {
			out = append(out, Load{BS: fitBS, QD: qd, ReadPct: pct})
		}
		for _, bs := range FitDeepSizes {
			if bs <= maxBS {
				out = append(out, Load{BS: bs, QD: FitDeepDepth, ReadPct: pct})
			}
		}
	}
	return append(out, FitMix)
}

// Median returns the median of runs: of the IOPS, the mean latency and
// the throughput, each on its own (with an even count, the mean of the
// middle two).
func Median(runs []Measured) Measured {
	if len(runs) == 0 {
		return Measured{}
	}
	med := func(f func(Measured) float64) float64 {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = f(r)
		}
		slices.Sort(xs)
		n := len(xs)
		if n%2 == 1 {
			return xs[n/2]
		}
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return Measured{
		IOPS:    med(func(m Measured) float64 { return m.IOPS }),
		MeanLat: time.Duration(med(func(m Measured) float64 { return float64(m.MeanLat) })),
		MBps:    med(func(m Measured) float64 { return m.MBps }),
		IOs:     int(med(func(m Measured) float64 { return float64(m.IOs) })),
	}
}

// FitFlat fits the flat model (blockdev.FlatParams) to measurements of
// every FitLoads load for base's request size cap, filling in the
// latency, rate, speedup and switch keys of base (whose name and limits
// it keeps). Per direction:
//
//   - latency L and data time per byte β (the rate is 1/β) by least
//     squares over two sets of points, each weighted by 1/y² so that every
//     point counts by its relative error: the depth-1 loads, where the
//     model's latency is L + β·size; and the FitDeepSizes loads, where its
//     interval between completions is I₄ + β·(size - 4KiB), I₄ being the
//     measured interval of 4 KiB at that depth (whatever the speedup
//     there, it is the same for both sizes);
//   - the speedup at each FitDepths depth n from the 4 KiB loads: with n
//     commands at the device the model completes one every L/speedup(n) +
//     β·4KiB, so speedup(n) = L / (1/IOPS(n) - β·4KiB) (the denominator
//     at least 1/100 of 1/IOPS(n)).
//
// Then the switch time: the least whose simulated FitMix reaches the
// measured mix's IOPS or fewer (0 if the mix is no slower than the
// directions alone predict), found by bisection to 0.1% of the read
// latency; each simulation runs the load for 200 ms of simulated time.
//
// It fails if a load is missing or measured nothing.
func FitFlat(meas map[Load]Measured, base blockdev.FlatParams) (blockdev.FlatParams, error) {
	maxBS := int64(base.MaxHWSectorsKB) * 1024
	if maxBS < fitBS {
		return base, fmt.Errorf("realdev: fit: requests of at most %d KiB: the fit needs 4 KiB", base.MaxHWSectorsKB)
	}
	for _, l := range FitLoads(maxBS) {
		if m, ok := meas[l]; !ok || m.IOPS <= 0 || m.MeanLat <= 0 {
			return base, fmt.Errorf("realdev: fit: load %v not measured", l)
		}
	}
	interval := func(l Load) float64 { return 1e9 / meas[l].IOPS }
	p := base
	for _, pct := range []int{100, 0} {
		var pts []linePoint
		for _, bs := range FitSizes {
			if bs <= maxBS {
				pts = append(pts, linePoint{x: float64(bs), y: float64(meas[Load{BS: bs, QD: 1, ReadPct: pct}].MeanLat), withA: true})
			}
		}
		i4 := interval(Load{BS: fitBS, QD: FitDeepDepth, ReadPct: pct})
		for _, bs := range FitDeepSizes {
			if bs <= maxBS {
				pts = append(pts, linePoint{x: float64(bs - fitBS), y: interval(Load{BS: bs, QD: FitDeepDepth, ReadPct: pct}), off: i4})
			}
		}
		lat, nsPerByte := fitLine(pts)
		mbps := 0.0
		if nsPerByte > 0 {
			mbps = 1e3 / nsPerByte
		}
		data := float64(fitBS) * nsPerByte
		curve := blockdev.Speedup{}
		for _, qd := range FitDepths {
			iv := interval(Load{BS: fitBS, QD: qd, ReadPct: pct})
			// The data part alone may (through noise) take about as
			// long as the measured interval: the command part then
			// gets at least 1/100 of it.
			per := max(iv-data, iv/100)
			curve = append(curve, blockdev.SpeedupPoint{Depth: qd, Factor: sig4(lat / per)})
		}
		d := time.Duration(math.Round(lat))
		if pct == 100 {
			p.ReadLatency, p.ReadMBps, p.ReadSpeedup = d, round1(mbps), curve
		} else {
			p.WriteLatency, p.WriteMBps, p.WriteSpeedup = d, round1(mbps), curve
		}
	}
	if err := p.Validate(); err != nil {
		return base, fmt.Errorf("realdev: fit: %w", err)
	}
	mixIOPS := func(sw time.Duration) (float64, error) {
		q := p
		q.SwitchTime = sw
		e := sim.New(sim.Options{Seed: 1})
		defer e.Close()
		d, err := blockdev.NewFlat(e, q)
		if err != nil {
			return 0, err
		}
		got, err := NewMeasurer(e, d, min(q.Capacity, 256<<20)).Measure(FitMix, 200*time.Millisecond)
		return got.IOPS, err
	}
	want := meas[FitMix].IOPS
	got, err := mixIOPS(0)
	if err != nil {
		return base, fmt.Errorf("realdev: fit: %w", err)
	}
	if got > want {
		// Bisect on [lo, hi): hi reaches want or fewer, lo does not.
		lo, hi := time.Duration(0), p.ReadLatency
		for {
			if got, err = mixIOPS(hi); err != nil {
				return base, fmt.Errorf("realdev: fit: %w", err)
			}
			if got <= want || hi > time.Second {
				break
			}
			lo, hi = hi, 2*hi
		}
		for hi-lo > max(p.ReadLatency/1000, time.Nanosecond) {
			mid := (lo + hi) / 2
			if got, err = mixIOPS(mid); err != nil {
				return base, fmt.Errorf("realdev: fit: %w", err)
			}
			if got <= want {
				hi = mid
			} else {
				lo = mid
			}
		}
		p.SwitchTime = hi
	}
	return p, nil
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// sig4 rounds x to four significant digits, as Speedup.String writes it.
func sig4(x float64) float64 {
	y, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64)
	return y
}

// linePoint is a point of fitLine: y = off + b·x, plus a if withA.
type linePoint struct {
	x, y, off float64
	withA     bool
}

// fitLine fits a and b ≥ 0 to the points by least squares weighted 1/y²
// and returns them. Without points that have a (withA), a is 0. A
// negative slope (time falling with size: noise) becomes 0 with a refitted
// alone; an a below 1% of the smallest y of its points is raised to it,
// and b refitted.
func fitLine(pts []linePoint) (a, b float64) {
	// Normal equations of Σ w (a·k + b·x + off - y)², k = 1 if withA.
	var saa, sab, sbb, sa, sb float64
	minY := math.Inf(1)
	for _, p := range pts {
		w := 1 / (p.y * p.y)
		k := 0.0
		if p.withA {
			k = 1
			minY = math.Min(minY, p.y)
		}
		r := p.y - p.off
		saa += w * k * k
		sab += w * k * p.x
		sbb += w * p.x * p.x
		sa += w * k * r
		sb += w * p.x * r
	}
	solveB := func(a float64) float64 { // b for a fixed a
		if sbb == 0 {
			return 0
		}
		return max((sb-a*sab)/sbb, 0)
	}
	solveA := func(b float64) float64 { // a for a fixed b
		if saa == 0 {
			return 0
		}
		return (sa - b*sab) / saa
	}
	if den := saa*sbb - sab*sab; den > 0 {
		a = (sa*sbb - sb*sab) / den
		b = (saa*sb - sab*sa) / den
	} else {
		b = solveB(0)
		a = solveA(b)
	}
	if b < 0 {
		b = 0
		a = solveA(0)
	}
	if saa > 0 && a < minY/100 {
		a = minY / 100
		b = solveB(a)
	}
	return a, b
}

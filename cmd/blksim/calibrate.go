package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/blockdev/realdev"
	"github.com/blksim/blksim/internal/units"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/stack"
)

// calCheckLoads are measured and reported beside the fitted loads but not
// fitted: a read/write mix at a size and depth the fit never saw, and
// sequential reads.
var calCheckLoads = []realdev.Load{
	{BS: 16 << 10, QD: 16, ReadPct: 70},
	{BS: 128 << 10, QD: 4, ReadPct: 100, Sequential: true},
}

// cmdCalibrate measures a real target and writes a device profile of kind
// flat (blockdev.FlatParams) fitted to it, plus a stack file using it with
// the real-device host costs (see stack.SetRealDevice).
//
//	blksim calibrate TARGET [--out FILE] [--measure direct|engine] [--time D]
//	                 [--repeat N] [--region SIZE] [--set wall.KEY=VALUE]... [--force]
//
// --measure direct (the default) times the target as fio does, through
// realdev.Device.Probe: the profile then predicts the kernel's IO on it
// (fio). --measure engine times it through blksim's real-mode backend
// (realdev.Measurer on the wall clock): the profile then predicts
// `blksim run --device`, whose own per-request costs it includes.
func cmdCalibrate(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	out := fl.String("out", "calibrated.toml", "write the device profile here (and the stack to FILE with .stack.toml)")
	measure := fl.String("measure", "direct", "direct: time the target as fio does (predicts fio); engine: through blksim's real-mode backend (predicts run --device)")
	per := fl.Duration("time", 300*time.Millisecond, "measuring time per load and run")
	repeat := fl.Int("repeat", 5, "runs of every load (interleaved); the fit uses their medians")
	regionS := fl.String("region", "256m", "measure over the first SIZE bytes of the target")
	force := fl.Bool("force", false, "allow a file blksim did not create, or a block device that looks in use (its data is overwritten)")
	var sets multiFlag
	fl.Var(&sets, "set", "wall.spin=D or wall.idle_spin=D: the wall clock's polling, as for run --device")
	var pos []string
	for rest := args; ; {
		if err := fl.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage(stdout)
				return nil
			}
			return bad("calibrate: %v", err)
		}
		if fl.NArg() == 0 {
			break
		}
		pos = append(pos, fl.Arg(0))
		rest = fl.Args()[1:]
	}
	if len(pos) != 1 {
		return bad("calibrate: one TARGET expected (file:PATH[,size=N] or blk:/dev/NAME), got %d", len(pos))
	}
	if *per < 10*time.Millisecond {
		return bad("calibrate: --time %v: at least 10ms", *per)
	}
	if *measure != "direct" && *measure != "engine" {
		return bad("calibrate: --measure %q: want direct or engine", *measure)
	}
	if *repeat < 1 || *repeat > 100 {
		return bad("calibrate: --repeat %d: between 1 and 100", *repeat)
	}
	region, err := units.ParseSize(*regionS)
	if err != nil || region < 2<<20 {
		return bad("calibrate: --region %q: want a size of at least 2m", *regionS)
	}
	cfg := stack.Default()
	for _, s := range sets {
		if !strings.HasPrefix(s, "wall.") {
			return bad("calibrate: --set %s: only the wall clock's keys (wall.spin, wall.idle_spin) apply to calibrate", s)
		}
		if err := cfg.SetArg(s); err != nil {
			return usageError{fmt.Errorf("calibrate: %w", err)}
		}
	}
	sp, err := realdev.ParseSpec(pos[0])
	if err != nil {
		return usageError{fmt.Errorf("calibrate: %w", err)}
	}
	// Both outputs are checked before measuring, so that one is not
	// written without the other.
	stackPath := strings.TrimSuffix(*out, ".toml") + ".stack.toml"
	for _, p := range []string{*out, stackPath} {
		if err := checkOutputPath("calibrate", p); err != nil {
			return err
		}
	}
	w := cfg.NewWallClock()
	e := sim.New(sim.Options{Clock: w})
	defer e.Close()
	dev, err := realdev.Open(e, w, sp, realdev.Options{Force: *force})
	if err != nil {
		return usageError{fmt.Errorf("calibrate: %w", err)}
	}
	defer dev.Close()
	m := realdev.NewMeasurer(e, dev, region)
	measureOne := func(l realdev.Load) (realdev.Measured, error) {
		if *measure == "direct" {
			return dev.Probe(l, region, *per)
		}
		return m.Measure(l, *per)
	}
	lim := dev.Limits()
	maxBS := int64(lim.MaxHWSectorsKB) * 1024
	loads := realdev.FitLoads(maxBS)
	for _, l := range calCheckLoads {
		if l.BS <= maxBS {
			loads = append(loads, l)
		}
	}
	runs := map[realdev.Load][]realdev.Measured{}
	// Interleaved: a burst of load from elsewhere on the machine hits one
	// run of several loads, not every run of one load.
	for range *repeat {
		for _, l := range loads {
			r, err := measureOne(l)
			if err != nil {
				return fmt.Errorf("calibrate %s: %v: %w", sp, l, err)
			}
			runs[l] = append(runs[l], r)
		}
	}
	meas := map[realdev.Load]realdev.Measured{}
	for l, rs := range runs {
		meas[l] = realdev.Median(rs)
	}
	base := blockdev.DefaultFlatParams()
	base.Name = dev.Name()
	base.Capacity = dev.Capacity() - dev.Capacity()%int64(lim.LogicalBlockSize)
	base.LogicalBlockSize, base.MaxHWSectorsKB, base.QueueDepth = lim.LogicalBlockSize, lim.MaxHWSectorsKB, lim.QueueDepth
	prof, err := realdev.FitFlat(meas, base)
	if err != nil {
		return fmt.Errorf("calibrate %s: %w", sp, err)
	}
	profText := prof.ProfileText()
	// The report: measured against the profile's simulation, as written.
	var rep bytes.Buffer
	tw := tabwriter.NewWriter(&rep, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "load\tmeasured IOPS\t(runs: min-max)\tmean lat (us)\tprofile IOPS\tmean lat (us)\terror IOPS\tlat\t\n")
	for _, l := range loads {
		got := meas[l]
		pred, err := simulateLoad(profText, l, region, *per)
		if err != nil {
			return fmt.Errorf("calibrate: simulating the fitted profile: %w", err)
		}
		lo, hi := math.Inf(1), 0.0
		for _, r := range runs[l] {
			lo, hi = math.Min(lo, r.IOPS), math.Max(hi, r.IOPS)
		}
		note := ""
		if slices.Contains(calCheckLoads, l) {
			note = "check (not fitted)"
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f-%.0f\t%.1f\t%.0f\t%.1f\t%+.0f%%\t%+.0f%%\t%s\n", l, got.IOPS, lo, hi, us(got.MeanLat),
			pred.IOPS, us(pred.MeanLat), 100*(pred.IOPS/got.IOPS-1), 100*(float64(pred.MeanLat)/float64(got.MeanLat)-1), note)
	}
	tw.Flush()
	var text bytes.Buffer
	fmt.Fprintf(&text, "# Device profile fitted by blksim calibrate on %s (--measure %s): medians of\n# %d interleaved runs of %s per load, over the first %d MiB, on %s.\n",
		sp, *measure, *repeat, *per, region>>20, time.Now().Format(time.RFC3339))
	for _, line := range strings.Split(strings.TrimRight(rep.String(), "\n"), "\n") {
		fmt.Fprintf(&text, "#   %s\n", strings.TrimRight(line, " "))
	}
	text.WriteString(profText)
	if err := emit(io.Discard, *out, text.Bytes()); err != nil {
		return err
	}
	var st bytes.Buffer
	predicts := "fio's (the kernel's) runs"
	if *measure == "engine" {
		predicts = "blksim run --device"
	}
	fmt.Fprintf(&st, "# Stack for simulated runs that predict real runs on %s (blksim calibrate\n# --measure %s: %s):\n", sp, *measure, predicts)
	fmt.Fprintf(&st, "# the calibrated profile, and the host costs a real device's latency already\n# contains set to 0, as blksim run --device does.\n")
	fmt.Fprintf(&st, "device.profile = %q\n", profileRef(*out))
	for _, k := range stack.RealCostKeys() {
		fmt.Fprintf(&st, "%s = \"0\"\n", k)
	}
	if err := emit(io.Discard, stackPath, st.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "calibrated %s (--measure %s, %d-byte blocks, %d MiB measured, medians of %d runs):\n%s\nwrote %s and %s\n",
		sp, *measure, lim.LogicalBlockSize, region>>20, *repeat, rep.String(), *out, stackPath)
	return nil
}

// profileRef is how the stack file written beside the profile at out
// names it: its file name, relative to the stack file's directory. A name
// that does not end in .toml gets a "./" prefix, since device.profile
// reads a bare name as an embedded profile's.
func profileRef(out string) string {
	name := filepath.Base(out)
	if !strings.HasSuffix(name, ".toml") {
		return "./" + name
	}
	return name
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// simulateLoad runs l for dur of simulated time on the device that the
// profile text (TOML key = value lines) describes.
func simulateLoad(profText string, l realdev.Load, region int64, dur time.Duration) (realdev.Measured, error) {
	vals := map[string]blockdev.ProfileValue{}
	for i, line := range strings.Split(profText, "\n") {
		k, v, ok := strings.Cut(line, " = ")
		if ok {
			vals[k] = blockdev.ProfileValue{Text: strings.Trim(v, `"`), Where: fmt.Sprintf("calibrate:%d", i+1)}
		}
	}
	e := sim.New(sim.Options{Seed: 1})
	defer e.Close()
	d, err := blockdev.NewFromProfile(e, vals)
	if err != nil {
		return realdev.Measured{}, err
	}
	return realdev.NewMeasurer(e, d, region).Measure(l, dur)
}

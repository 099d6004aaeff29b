package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/blockdev/realdev"
	"github.com/blksim/blksim/internal/units"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/sim/wallclock"
)

// calibration loads: what calibrate measures on the target.
var (
	calReadLat   = []int64{4 << 10, 64 << 10, 1 << 20} // randread QD1
	calReadQD    = []int{4, 16, 32}                    // randread 4k
	calWriteQD1  = realdev.Load{BS: 4 << 10, QD: 1, ReadPct: 0}
	calWriteQD32 = realdev.Load{BS: 4 << 10, QD: 32, ReadPct: 0}
	calMix       = realdev.Load{BS: 4 << 10, QD: 16, ReadPct: 70}
)

// cmdCalibrate measures a real target and writes a device profile (kind
// nvme) whose simulation reproduces it, plus a stack file using it with
// the real-device host costs (see stack.SetRealDevice).
//
//	blksim calibrate TARGET [--out FILE] [--time D] [--region SIZE] [--force]
func cmdCalibrate(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	out := fl.String("out", "calibrated.toml", "write the device profile here (and the stack to FILE with .stack.toml)")
	per := fl.Duration("time", 300*time.Millisecond, "measuring time per load")
	regionS := fl.String("region", "256m", "measure over the first SIZE bytes of the target")
	force := fl.Bool("force", false, "allow a file blksim did not create, or a block device that looks in use (its data is overwritten)")
	var pos []string
	for rest := args; ; {
		if err := fl.Parse(rest); err != nil {
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
	region, err := units.ParseSize(*regionS)
	if err != nil || region < 2<<20 {
		return bad("calibrate: --region %q: want a size of at least 2m", *regionS)
	}
	sp, err := realdev.ParseSpec(pos[0])
	if err != nil {
		return usageError{fmt.Errorf("calibrate: %w", err)}
	}
	if err := checkOutputPath("calibrate", *out); err != nil {
		return err
	}
	w := wallclock.New()
	e := sim.New(sim.Options{Clock: w})
	defer e.Close()
	dev, err := realdev.Open(e, w, sp, realdev.Options{Force: *force})
	if err != nil {
		return usageError{fmt.Errorf("calibrate: %w", err)}
	}
	defer dev.Close()
	m := realdev.NewMeasurer(e, dev, region)
	meas := map[string]realdev.Measured{}
	var loads []realdev.Load
	for _, bs := range calReadLat {
		loads = append(loads, realdev.Load{BS: bs, QD: 1, ReadPct: 100})
	}
	for _, qd := range calReadQD {
		loads = append(loads, realdev.Load{BS: 4 << 10, QD: qd, ReadPct: 100})
	}
	loads = append(loads, calWriteQD1, calWriteQD32, calMix)
	for _, l := range loads {
		r, err := m.Measure(l, *per)
		if err != nil {
			return fmt.Errorf("calibrate %s: %v: %w", sp, l, err)
		}
		meas[l.String()] = r
	}
	lim := dev.Limits()
	prof, err := fitProfile(meas, lim, dev.Capacity(), *per)
	if err != nil {
		return fmt.Errorf("calibrate %s: %w", sp, err)
	}
	// The report: measured against the profile's simulation.
	var rep bytes.Buffer
	tw := tabwriter.NewWriter(&rep, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "load\tmeasured IOPS\tmean lat (us)\tprofile IOPS\tmean lat (us)\terror\n")
	for _, l := range loads {
		got := meas[l.String()]
		sim, err := simulateLoad(prof, l, region, *per)
		if err != nil {
			return fmt.Errorf("calibrate: simulating the fitted profile: %w", err)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.0f\t%.1f\t%+.0f%%\n", l, got.IOPS, us(got.MeanLat), sim.IOPS, us(sim.MeanLat), 100*(sim.IOPS/got.IOPS-1))
	}
	tw.Flush()
	var text bytes.Buffer
	fmt.Fprintf(&text, "# Device profile fitted by blksim calibrate on %s, %s per load\n# over the first %d MiB, on %s.\n", sp, *per, region>>20, time.Now().Format(time.RFC3339))
	for _, line := range strings.Split(strings.TrimRight(rep.String(), "\n"), "\n") {
		fmt.Fprintf(&text, "#   %s\n", line)
	}
	text.WriteString(prof.toml())
	if err := emit(io.Discard, *out, text.Bytes()); err != nil {
		return err
	}
	stackPath := strings.TrimSuffix(*out, ".toml") + ".stack.toml"
	var st bytes.Buffer
	fmt.Fprintf(&st, "# Stack for simulated runs that predict real runs on %s (blksim calibrate):\n", sp)
	fmt.Fprintf(&st, "# the calibrated profile, and the host costs a real device's latency already\n# contains set to 0, as blksim run --device does.\n")
	fmt.Fprintf(&st, "device.profile = %q\n", filepath.Base(*out))
	for _, k := range []string{"host.syscall", "host.dio_setup", "host.dio_per_page", "host.bio_submit", "host.dio_complete", "host.app_per_io", "host.wake_latency", "host.context_switch"} {
		fmt.Fprintf(&st, "%s = \"0\"\n", k)
	}
	if err := emit(io.Discard, stackPath, st.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "calibrated %s (%d-byte blocks, %d MiB measured):\n%s\nwrote %s and %s\n", sp, lim.LogicalBlockSize, region>>20, rep.String(), *out, stackPath)
	return nil
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// profile is the nvme-kind parameters calibrate fits: one NAND die per
// channel, 128 KiB pages, one plane, a fast channel, so that reads cost
// read_overhead + read_time + transfer on the host link, the dies bound
// parallel IOPS, writes land in a write buffer after write_overhead, and
// program_time bounds sustained writes.
type profile struct {
	capacity      int64
	lbs, maxKB    int
	qd            int
	dies          int
	readTime      time.Duration
	readOverhead  time.Duration
	writeOverhead time.Duration
	programTime   time.Duration
	hostMBps      float64
}

func (p profile) toml() string {
	return fmt.Sprintf(`kind = "nvme"
name = "nvme0n1"
capacity = %d
logical_block_size = %d
max_hw_sectors_kb = %d
queue_depth = %d
channels = %d
dies_per_channel = 1
page_size = "128k"
planes = 1
read_time = "%s"
program_time = "%s"
channel_mbps = 100000
host_mbps = %.0f
read_overhead = "%s"
write_overhead = "%s"
write_buffer = "4m"
`, p.capacity, p.lbs, p.maxKB, p.qd, p.dies, p.readTime, p.programTime, p.hostMBps, p.readOverhead, p.writeOverhead)
}

// device builds the profile's model on e.
func (p profile) device(e *sim.Engine) (blockdev.Device, error) {
	vals := map[string]blockdev.ProfileValue{}
	for _, line := range strings.Split(p.toml(), "\n") {
		k, v, ok := strings.Cut(line, " = ")
		if ok {
			vals[k] = blockdev.ProfileValue{Text: strings.Trim(v, `"`), Where: "calibrate"}
		}
	}
	return blockdev.NewFromProfile(e, vals)
}

// simulateLoad runs l on the profile's model for dur of simulated time.
func simulateLoad(p profile, l realdev.Load, region int64, dur time.Duration) (realdev.Measured, error) {
	e := sim.New(sim.Options{Seed: 1})
	defer e.Close()
	d, err := p.device(e)
	if err != nil {
		return realdev.Measured{}, err
	}
	return realdev.NewMeasurer(e, d, region).Measure(l, dur)
}

// fitProfile fits the profile to the measurements: the host link from the
// QD1 read latency's slope over block size, the per-read time from its
// intercept, the dies by simulation against the QD32 read IOPS, the write
// overhead from the QD1 write latency and the program time by simulation
// against the QD32 write IOPS.
func fitProfile(meas map[string]realdev.Measured, lim blockdev.Limits, capacity int64, dur time.Duration) (profile, error) {
	get := func(l realdev.Load) realdev.Measured { return meas[l.String()] }
	r4 := get(realdev.Load{BS: 4 << 10, QD: 1, ReadPct: 100})
	r64 := get(realdev.Load{BS: 64 << 10, QD: 1, ReadPct: 100})
	r1m := get(realdev.Load{BS: 1 << 20, QD: 1, ReadPct: 100})
	p := profile{capacity: capacity - capacity%(1<<20), lbs: lim.LogicalBlockSize, maxKB: lim.MaxHWSectorsKB, qd: lim.QueueDepth}
	slope := float64(r1m.MeanLat-r64.MeanLat) / float64((1<<20)-(64<<10)) // ns per byte
	p.hostMBps = 100000
	if slope > 0 {
		p.hostMBps = math.Min(100000, math.Max(10, 1e3/slope))
	}
	xfer := func(n int64) time.Duration { return time.Duration(float64(n) * 1e3 / p.hostMBps) }
	a := max(r4.MeanLat-xfer(4<<10), 2*time.Microsecond)
	p.readOverhead = min(5*time.Microsecond, a/4).Round(100 * time.Nanosecond)
	p.readTime = (a - p.readOverhead).Round(100 * time.Nanosecond)
	w1 := get(calWriteQD1)
	p.writeOverhead = max(w1.MeanLat-xfer(4<<10), time.Microsecond).Round(100 * time.Nanosecond)
	p.dies, p.programTime = 1, time.Millisecond
	region := int64(256 << 20)
	// Dies: the smallest count whose QD32 randread reaches the measured IOPS.
	target := get(realdev.Load{BS: 4 << 10, QD: 32, ReadPct: 100}).IOPS
	lo, hi := 1, 4096
	for lo < hi {
		mid := (lo + hi) / 2
		p.dies = mid
		s, err := simulateLoad(p, realdev.Load{BS: 4 << 10, QD: 32, ReadPct: 100}, region, dur)
		if err != nil {
			return p, err
		}
		if s.IOPS >= target {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	p.dies = lo
	// Program time: the longest whose QD32 randwrite still reaches the
	// measured IOPS (writes are buffered; programs drain the buffer).
	wt := get(calWriteQD32).IOPS
	plo, phi := time.Microsecond, time.Second
	for range 30 {
		mid := (plo + phi) / 2
		p.programTime = mid
		s, err := simulateLoad(p, calWriteQD32, region, dur)
		if err != nil {
			return p, err
		}
		if s.IOPS >= wt {
			plo = mid
		} else {
			phi = mid
		}
		if phi-plo < 100*time.Nanosecond {
			break
		}
	}
	p.programTime = plo.Round(100 * time.Nanosecond)
	return p, nil
}

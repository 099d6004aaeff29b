package blockdev

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/blksim/blksim/sim"
)

// FlatParams describe a flat device: a black box without modelled
// internals (no dies, no heads, no cache), defined only by what a host sees
// of it: how long a command takes at depth 1 by direction and size, how
// much faster commands are served when more of them are queued, and a
// per-byte cost that no depth hides. It is the model `blksim calibrate`
// fits to a real target whose insides are hidden, such as a virtual disk
// whose host serves it from a page cache.
//
// How it serves: one command at a time, in arrival order. A command's
// service has parts done one after the other: a command part, the
// direction's latency divided by the direction's speedup at the current
// depth n (the commands at the device, the one in service included); the
// switch time, if its direction differs from the command served before
// it; and a data part, its bytes at the direction's rate. The depth is
// re-read whenever a command arrives or leaves, so a command part in
// progress speeds up or slows down with it; the other parts take the same
// time at every depth. Hence at depth 1 a command takes latency +
// bytes/rate, and with n commands of one direction kept at the device one
// completes every latency/speedup(n) + bytes/rate. This is a
// flow-equivalent (load-dependent) server as in queueing network analysis
// (Lazowska et al., Quantitative System Performance, 1984, ch. 8): it
// reproduces the throughput a device shows at each depth (from batched
// notifications, interrupt coalescing, several servicing threads) without
// modelling why.
type FlatParams struct {
	// Name defaults to "flat0".
	Name string
	// Capacity is required.
	Capacity int64
	// LogicalBlockSize is 512 (the default) or 4096.
	LogicalBlockSize int
	// MaxHWSectorsKB is the largest request in KiB (default 1024).
	MaxHWSectorsKB int
	// QueueDepth is the commands the device holds at once (default 64).
	QueueDepth int
	// ReadLatency and WriteLatency are the command parts of a read and of
	// a write at depth 1: a request's latency at depth 1 less its data
	// part. Both must be positive.
	ReadLatency  time.Duration
	WriteLatency time.Duration
	// ReadMBps and WriteMBps are the data rates, decimal MB/s: a request's
	// data part is its bytes at this rate, at every depth. 0 means data
	// costs nothing.
	ReadMBps  float64
	WriteMBps float64
	// ReadSpeedup and WriteSpeedup give, by depth, how many times faster
	// the command part is served than at depth 1 (nil: never faster).
	ReadSpeedup  Speedup
	WriteSpeedup Speedup
	// SwitchTime is added to a command whose direction differs from that
	// of the command served before it (a read after a write, a write
	// after a read): what mixing reads and writes costs beyond each
	// alone. 0 means nothing.
	SwitchTime time.Duration
}

// SpeedupPoint is one point of a Speedup curve: at Depth commands, the
// command part is served Factor times faster than at depth 1.
type SpeedupPoint struct {
	Depth  int
	Factor float64
}

// Speedup is a curve of speed factors by depth, its points in increasing
// depth. It starts at 1 at depth 1 (a point at depth 1, if any, must say
// so); between points the factor is interpolated linearly, and beyond the
// last point it stays at the last factor. The empty curve is 1 at every
// depth.
type Speedup []SpeedupPoint

// ErrSpeedup is wrapped by ParseSpeedup's and Speedup.Validate's errors.
var ErrSpeedup = errors.New("bad speedup curve")

// ParseSpeedup parses a curve written as "DEPTH:FACTOR" points separated
// by commas or spaces, e.g. "1:1, 4:1.9, 16:3.3", and validates it.
func ParseSpeedup(s string) (Speedup, error) {
	var c Speedup
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		ds, fs, ok := strings.Cut(f, ":")
		if !ok {
			return nil, fmt.Errorf("%w: %q: want DEPTH:FACTOR points, e.g. \"1:1, 4:1.9, 16:3.3\"", ErrSpeedup, f)
		}
		d, err := strconv.Atoi(ds)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: depth %q is not an integer", ErrSpeedup, f, ds)
		}
		x, err := strconv.ParseFloat(fs, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: factor %q is not a number", ErrSpeedup, f, fs)
		}
		c = append(c, SpeedupPoint{Depth: d, Factor: x})
	}
	if len(c) == 0 {
		return nil, fmt.Errorf("%w: no points (want e.g. \"1:1, 4:1.9, 16:3.3\")", ErrSpeedup)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate checks that depths are positive and increasing, that every
// factor is positive and finite, and that a point at depth 1 says 1. A
// factor may exceed its depth: the data part is served one command at a
// time, so a device that moves one command's data while it works on
// others' commands is represented by a command part more than n times
// faster at depth n.
func (c Speedup) Validate() error {
	for i, p := range c {
		switch {
		case p.Depth < 1:
			return fmt.Errorf("%w: depth %d: depths start at 1", ErrSpeedup, p.Depth)
		case i > 0 && p.Depth <= c[i-1].Depth:
			return fmt.Errorf("%w: depth %d after %d: depths must increase", ErrSpeedup, p.Depth, c[i-1].Depth)
		case !(p.Factor > 0) || math.IsInf(p.Factor, 0):
			return fmt.Errorf("%w: %d:%g: factors must be positive", ErrSpeedup, p.Depth, p.Factor)
		case p.Depth == 1 && p.Factor != 1:
			return fmt.Errorf("%w: 1:%g: the factor at depth 1 is 1 (the latency keys are depth-1 figures)", ErrSpeedup, p.Factor)
		}
	}
	return nil
}

// At returns the factor at depth n.
func (c Speedup) At(n int) float64 {
	a := SpeedupPoint{Depth: 1, Factor: 1}
	if n <= 1 {
		return 1
	}
	for _, b := range c {
		if n <= b.Depth {
			return a.Factor + (b.Factor-a.Factor)*float64(n-a.Depth)/float64(b.Depth-a.Depth)
		}
		a = b
	}
	return a.Factor
}

// String writes the curve as ParseSpeedup reads it ("1:1, 4:1.9").
func (c Speedup) String() string {
	parts := make([]string, len(c))
	for i, p := range c {
		parts[i] = fmt.Sprintf("%d:%s", p.Depth, strconv.FormatFloat(p.Factor, 'g', 4, 64))
	}
	return strings.Join(parts, ", ")
}

// DefaultFlatParams returns the parameters a "flat" profile starts from:
// everything but the capacity and the latencies, which describe a
// particular device.
func DefaultFlatParams() FlatParams {
	return FlatParams{Name: "flat0", LogicalBlockSize: SectorSize, MaxHWSectorsKB: 1024, QueueDepth: 64}
}

// Validate checks that the parameters describe a working device.
func (p *FlatParams) Validate() error {
	if err := validateCommon(p.Capacity, p.LogicalBlockSize, p.MaxHWSectorsKB, p.QueueDepth, "queue_depth"); err != nil {
		return err
	}
	switch {
	case p.ReadLatency <= 0:
		return keyErr("read_latency", "read_latency must be positive")
	case p.WriteLatency <= 0:
		return keyErr("write_latency", "write_latency must be positive")
	case !(p.ReadMBps >= 0) || math.IsInf(p.ReadMBps, 0):
		return keyErr("read_mbps", "read_mbps must be a finite rate, 0 or more")
	case !(p.WriteMBps >= 0) || math.IsInf(p.WriteMBps, 0):
		return keyErr("write_mbps", "write_mbps must be a finite rate, 0 or more")
	case p.SwitchTime < 0:
		return keyErr("switch_time", "switch_time must not be negative")
	}
	for _, err := range []error{checkTime("read_latency", p.ReadLatency), checkTime("write_latency", p.WriteLatency),
		checkTime("switch_time", p.SwitchTime), checkRate("read_mbps", p.ReadMBps, true), checkRate("write_mbps", p.WriteMBps, true)} {
		if err != nil {
			return err
		}
	}
	if err := p.ReadSpeedup.Validate(); err != nil {
		return keyErr("read_speedup", "%v", err)
	}
	if err := p.WriteSpeedup.Validate(); err != nil {
		return keyErr("write_speedup", "%v", err)
	}
	return nil
}

// Flat is the flat device model (see FlatParams). It keeps written stamps
// like the memory device.
type Flat struct {
	e     *sim.Engine
	p     FlatParams
	c     Completer
	store *StampMap

	// queue holds the commands at the device in arrival order; queue[0]
	// is in service.
	queue []*Request
	// The command in service: its command part left (ns at depth-1
	// speed), the rest left (switch time and data part, ns), its current
	// speed, and when these were last brought up to date.
	cmdLeft   float64
	fixedLeft float64
	speed     float64
	since     sim.Time
	// lastOp is the direction of the command served last (valid once
	// served is set).
	lastOp Op
	served bool
	// gen names the completion event in force; earlier ones are stale.
	gen uint64
}

// NewFlat returns a flat device after validating p (start from
// DefaultFlatParams; an empty name becomes "flat0").
func NewFlat(e *sim.Engine, p FlatParams) (*Flat, error) {
	if p.Name == "" {
		p.Name = DefaultFlatParams().Name
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Flat{e: e, p: p, store: NewStampMap()}, nil
}

// Name returns the device name.
func (d *Flat) Name() string { return d.p.Name }

// Capacity returns the size in bytes.
func (d *Flat) Capacity() int64 { return d.p.Capacity }

// Limits returns the device's limits.
func (d *Flat) Limits() Limits {
	return Limits{LogicalBlockSize: d.p.LogicalBlockSize, MaxHWSectorsKB: d.p.MaxHWSectorsKB, QueueDepth: d.p.QueueDepth}
}

// Params returns the model's parameters.
func (d *Flat) Params() FlatParams { return d.p }

// Attach sets the completer.
func (d *Flat) Attach(c Completer) { d.c = c }

// Stamps returns the device's stamp store.
func (d *Flat) Stamps() *StampMap { return d.store }

// Submit queues r; if it is the only command, its service starts now.
func (d *Flat) Submit(r *Request) {
	now := d.e.Now()
	d.queue = append(d.queue, r)
	if len(d.queue) == 1 {
		d.start(now)
		return
	}
	d.advance(now)
	d.respeed()
}

// Fire completes the command in service if arg names the completion
// event in force (a change of depth may have moved it since).
func (d *Flat) Fire(arg uint64) {
	if arg != d.gen || len(d.queue) == 0 {
		return
	}
	r := d.queue[0]
	d.queue[0] = nil
	d.queue = d.queue[1:]
	if len(d.queue) > 0 {
		d.start(d.e.Now())
	}
	transferData(d.store, r)
	d.c.CompleteRequest(r)
}

// curve returns the speedup curve, latency and rate of op.
func (d *Flat) curve(op Op) (Speedup, time.Duration, float64) {
	if op == OpWrite {
		return d.p.WriteSpeedup, d.p.WriteLatency, d.p.WriteMBps
	}
	return d.p.ReadSpeedup, d.p.ReadLatency, d.p.ReadMBps
}

// start begins the service of queue[0] at now.
func (d *Flat) start(now sim.Time) {
	r := d.queue[0]
	c, lat, mbps := d.curve(r.Op)
	d.cmdLeft = float64(lat)
	d.fixedLeft = float64(transferTime(r.Bytes, mbps))
	if d.served && r.Op != d.lastOp {
		d.fixedLeft += float64(d.p.SwitchTime)
	}
	d.lastOp, d.served = r.Op, true
	d.speed = c.At(len(d.queue))
	d.since = now
	d.schedule()
}

// advance brings the command in service up to now at its current speed.
func (d *Flat) advance(now sim.Time) {
	el := float64(now - d.since)
	d.since = now
	if d.cmdLeft > 0 {
		if done := el * d.speed; done < d.cmdLeft {
			d.cmdLeft -= done
			return
		}
		el -= d.cmdLeft / d.speed
		d.cmdLeft = 0
	}
	d.fixedLeft = max(0, d.fixedLeft-el)
}

// respeed sets the speed of the command in service for the current depth
// and moves its completion if that changes it.
func (d *Flat) respeed() {
	c, _, _ := d.curve(d.queue[0].Op)
	s := c.At(len(d.queue))
	if s == d.speed {
		return
	}
	d.speed = s
	if d.cmdLeft > 0 {
		d.schedule()
	}
}

// schedule (re)schedules the completion of the command in service.
func (d *Flat) schedule() {
	d.gen++
	left := d.cmdLeft/d.speed + d.fixedLeft
	d.e.At(d.since+sim.Time(math.Ceil(left)), d, d.gen)
}

// ProfileText returns p as the lines of a profile of kind "flat" (TOML:
// `key = value`), which NewFromProfile reads back as p. Durations are
// written to the nanosecond, rates to 0.1 MB/s.
func (p FlatParams) ProfileText() string {
	dur := func(d time.Duration) string { return strings.ReplaceAll(d.String(), "µ", "u") }
	var b strings.Builder
	fmt.Fprintf(&b, "kind = \"flat\"\nname = %q\ncapacity = %d\nlogical_block_size = %d\nmax_hw_sectors_kb = %d\nqueue_depth = %d\n",
		p.Name, p.Capacity, p.LogicalBlockSize, p.MaxHWSectorsKB, p.QueueDepth)
	fmt.Fprintf(&b, "read_latency = %q\nread_mbps = %s\n", dur(p.ReadLatency), strconv.FormatFloat(p.ReadMBps, 'f', 1, 64))
	if len(p.ReadSpeedup) > 0 {
		fmt.Fprintf(&b, "read_speedup = %q\n", p.ReadSpeedup)
	}
	fmt.Fprintf(&b, "write_latency = %q\nwrite_mbps = %s\n", dur(p.WriteLatency), strconv.FormatFloat(p.WriteMBps, 'f', 1, 64))
	if len(p.WriteSpeedup) > 0 {
		fmt.Fprintf(&b, "write_speedup = %q\n", p.WriteSpeedup)
	}
	fmt.Fprintf(&b, "switch_time = %q\n", dur(p.SwitchTime))
	return b.String()
}

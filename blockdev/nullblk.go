package blockdev

import (
	"time"

	"github.com/blksim/blksim/sim"
)

// NullParams describe a null device like the kernel's null_blk with
// irqmode=2 (completion by timer). Keys and defaults follow null_blk's
// module parameters.
type NullParams struct {
	// Name defaults to "nullb0".
	Name string
	// Capacity defaults to 250 GiB (null_blk's gb=250).
	Capacity int64
	// LogicalBlockSize is 512 (the default, null_blk's bs) or 4096.
	LogicalBlockSize int
	// MaxHWSectorsKB defaults to 255 sectors (BLK_SAFE_MAX_SECTORS,
	// null_blk's limit when its max_sectors is 0), rounded down to the
	// logical block size: 127 KiB, or 124 KiB with 4 KiB blocks.
	MaxHWSectorsKB int
	// HWQueueDepth is the tags per hardware queue (default 64) and
	// SubmitQueues the number of hardware queues (default 1).
	HWQueueDepth int
	SubmitQueues int
	// CompletionNsec is the time from submission to completion of every
	// request (default 10us, null_blk's completion_nsec).
	CompletionNsec time.Duration
	// MBps caps the bandwidth in MiB/s as null_blk's mbps does (0: no
	// cap); requests pass a FIFO rate limiter before their timer starts.
	// null_blk refills a token bucket every 20 ms instead; the long-run
	// rate is the same.
	MBps float64
	// MemoryBacked keeps written data (as stamps), like null_blk's
	// memory_backed=1; without it writes are discarded and reads return
	// the zero stamp ("never written").
	MemoryBacked bool
}

// Null defaults, as null_blk's module parameters.
const (
	nullDefaultCapacity   = 250 << 30
	nullDefaultCompletion = 10 * time.Microsecond
	nullDefaultQueueDepth = 64
	nullSafeMaxSectors    = 255 // BLK_SAFE_MAX_SECTORS
	nullMaxSubmitQueues   = 1 << 10
)

// DefaultNullParams returns the parameters a "null" profile starts from.
func DefaultNullParams() NullParams {
	return NullParams{
		Name:             "nullb0",
		Capacity:         nullDefaultCapacity,
		LogicalBlockSize: SectorSize,
		HWQueueDepth:     nullDefaultQueueDepth,
		SubmitQueues:     1,
		CompletionNsec:   nullDefaultCompletion,
	}
}

// Validate checks the parameters; a zero MaxHWSectorsKB is filled in by
// NewNull.
func (p *NullParams) Validate() error {
	maxKB := p.MaxHWSectorsKB
	if maxKB == 0 {
		maxKB = nullDefaultMaxKB(p.LogicalBlockSize)
	}
	if err := validateCommon(p.Capacity, p.LogicalBlockSize, maxKB, p.HWQueueDepth, "hw_queue_depth"); err != nil {
		return err
	}
	switch {
	case p.SubmitQueues <= 0 || p.SubmitQueues > nullMaxSubmitQueues:
		return keyErr("submit_queues", "submit_queues must be between 1 and %d", nullMaxSubmitQueues)
	case p.HWQueueDepth > (1<<30)/p.SubmitQueues:
		return keyErr("hw_queue_depth", "hw_queue_depth * submit_queues must be at most %d", 1<<30)
	case p.CompletionNsec < 0:
		return keyErr("completion_nsec", "completion_nsec must not be negative")
	case !(p.MBps >= 0):
		return keyErr("mbps", "mbps must not be negative")
	}
	if err := checkTime("completion_nsec", p.CompletionNsec); err != nil {
		return err
	}
	return checkRate("mbps", p.MBps, true)
}

// nullDefaultMaxKB is BLK_SAFE_MAX_SECTORS in KiB, rounded down to lbs.
func nullDefaultMaxKB(lbs int) int {
	if lbs <= 0 {
		return nullSafeMaxSectors * SectorSize / 1024
	}
	return nullSafeMaxSectors * SectorSize / lbs * lbs / 1024
}

// Null is a null_blk-like device: every request completes CompletionNsec
// after it passed the optional rate limit. Without MemoryBacked it departs
// from the Device contract as null_blk does: it keeps nothing, so a read
// returns the zero stamp even after a write completed.
type Null struct {
	e        *sim.Engine
	p        NullParams
	c        Completer
	store    *StampMap // nil unless memory-backed
	empty    *StampMap // always empty: what a read of a discarding device finds
	slots    slotTable
	linkFree sim.Time
}

// NewNull returns a null device after validating p.
func NewNull(e *sim.Engine, p NullParams) (*Null, error) {
	if p.Name == "" {
		p.Name = "nullb0"
	}
	if p.MaxHWSectorsKB == 0 {
		p.MaxHWSectorsKB = nullDefaultMaxKB(p.LogicalBlockSize)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	d := &Null{e: e, p: p, empty: NewStampMap()}
	if p.MemoryBacked {
		d.store = NewStampMap()
	}
	return d, nil
}

// Name returns the device name.
func (d *Null) Name() string { return d.p.Name }

// Capacity returns the size in bytes.
func (d *Null) Capacity() int64 { return d.p.Capacity }

// Limits returns the device's limits: hw_queue_depth tags on each of
// submit_queues hardware queues.
func (d *Null) Limits() Limits {
	return Limits{LogicalBlockSize: d.p.LogicalBlockSize, MaxHWSectorsKB: d.p.MaxHWSectorsKB,
		QueueDepth: d.p.HWQueueDepth, HWQueues: d.p.SubmitQueues}
}

// Params returns the model's parameters.
func (d *Null) Params() NullParams { return d.p }

// Attach sets the completer.
func (d *Null) Attach(c Completer) { d.c = c }

// Stamps returns the stamp store, or nil when the device is not memory
// backed (it keeps nothing).
func (d *Null) Stamps() *StampMap { return d.store }

// Submit starts r's timer, after the rate limit if there is one.
func (d *Null) Submit(r *Request) {
	slot := uint64(d.slots.put(r))
	if d.p.MBps > 0 {
		start := max(d.e.Now(), d.linkFree)
		d.linkFree = start + sim.Time(transferTime(r.Bytes, d.p.MBps*(1<<20)/1e6))
		d.e.At(d.linkFree+sim.Time(d.p.CompletionNsec), d, slot)
		return
	}
	d.e.After(d.p.CompletionNsec, d, slot)
}

// Fire completes the request in slot arg.
func (d *Null) Fire(arg uint64) {
	r := d.slots.take(int(arg))
	switch {
	case d.store != nil:
		transferData(d.store, r)
	case r.Op == OpRead:
		transferData(d.empty, r)
	}
	d.c.CompleteRequest(r)
}

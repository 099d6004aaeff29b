package blockdev

import (
	"time"

	"github.com/blksim/blksim/sim"
)

// MemParams describe a memory device: every request takes Latency plus its
// transfer at MBps (0 means no transfer cost), with unlimited parallelism.
type MemParams struct {
	Name             string
	Capacity         int64
	LogicalBlockSize int
	MaxHWSectorsKB   int
	QueueDepth       int
	Latency          time.Duration
	MBps             float64
	// Rotational makes the device report itself as a disk (Limits).
	Rotational bool
}

// MemDevice keeps stamps in memory and completes requests after a fixed
// latency. It is the reference device for data-integrity tests.
type MemDevice struct {
	e     *sim.Engine
	p     MemParams
	c     Completer
	store *StampMap
	slots slotTable
}

// withDefaults returns p with its zero fields at their defaults: ram0,
// 512-byte blocks, 1024 KiB requests and depth 256.
func (p MemParams) withDefaults() MemParams {
	if p.Name == "" {
		p.Name = "ram0"
	}
	if p.LogicalBlockSize == 0 {
		p.LogicalBlockSize = SectorSize
	}
	if p.MaxHWSectorsKB == 0 {
		p.MaxHWSectorsKB = 1024
	}
	if p.QueueDepth == 0 {
		p.QueueDepth = 256
	}
	return p
}

// Validate checks the parameters (zero limits stand for their defaults)
// as the "memory" profile kind does: the limits every kind has, a
// latency of at most maxDeviceTime and a rate of 0 or at least
// minDeviceMBps.
func (p MemParams) Validate() error {
	p = p.withDefaults()
	if err := validateCommon(p.Capacity, p.LogicalBlockSize, p.MaxHWSectorsKB, p.QueueDepth, "queue_depth"); err != nil {
		return err
	}
	if err := checkTime("latency", p.Latency); err != nil {
		return err
	}
	return checkRate("mbps", p.MBps, true)
}

// NewMemDevice returns a memory device; zero limits default to 512-byte
// blocks, 1024 KiB requests and depth 256. It does not validate p (tests
// build devices the profile kind would reject); see Validate.
func NewMemDevice(e *sim.Engine, p MemParams) *MemDevice {
	return &MemDevice{e: e, p: p.withDefaults(), store: NewStampMap()}
}

// Name returns the device name.
func (d *MemDevice) Name() string { return d.p.Name }

// Capacity returns the size in bytes.
func (d *MemDevice) Capacity() int64 { return d.p.Capacity }

// Limits returns the device's limits.
func (d *MemDevice) Limits() Limits {
	return Limits{LogicalBlockSize: d.p.LogicalBlockSize, MaxHWSectorsKB: d.p.MaxHWSectorsKB, QueueDepth: d.p.QueueDepth, Rotational: d.p.Rotational}
}

// Attach sets the completer.
func (d *MemDevice) Attach(c Completer) { d.c = c }

// Stamps returns the device's stamp store (for tests and verification).
func (d *MemDevice) Stamps() *StampMap { return d.store }

// Submit schedules r's completion.
func (d *MemDevice) Submit(r *Request) {
	lat := d.p.Latency + transferTime(r.Bytes, d.p.MBps)
	d.e.After(lat, d, uint64(d.slots.put(r)))
}

// Fire completes the request in slot arg.
func (d *MemDevice) Fire(arg uint64) {
	r := d.slots.take(int(arg))
	transferData(d.store, r)
	d.c.CompleteRequest(r)
}

// transferTime is the time to move n bytes at mbps (decimal MB/s); 0 mbps
// is free.
func transferTime(n int64, mbps float64) time.Duration {
	if mbps <= 0 {
		return 0
	}
	return time.Duration(float64(n) * 1e3 / mbps)
}

// slotTable maps small integers to in-flight requests so that events can
// name a request in their uint64 argument without allocating.
type slotTable struct {
	reqs []*Request
	free []int
}

func (s *slotTable) put(r *Request) int {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		s.reqs[i] = r
		return i
	}
	s.reqs = append(s.reqs, r)
	return len(s.reqs) - 1
}

func (s *slotTable) get(i int) *Request { return s.reqs[i] }

func (s *slotTable) take(i int) *Request {
	r := s.reqs[i]
	s.reqs[i] = nil
	s.free = append(s.free, i)
	return r
}

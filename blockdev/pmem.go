package blockdev

import (
	"fmt"
	"time"

	"github.com/blksim/blksim/sim"
)

// DAXDevice is a device whose storage the CPU addresses directly
// (persistent memory). A filesystem mounted with DAX bypasses the page
// cache and the block layer: its IO is a memcpy done by the calling task,
// which pays DAXCopyTime of CPU, and the data land at once.
//
// Contract: DAXRead and DAXWrite are called on the engine goroutine with
// a range inside Capacity; a DAXWrite is visible to every later DAXRead
// and to block-layer reads submitted after it; DAXCopyTime is a pure
// function of its arguments.
type DAXDevice interface {
	Device
	// DAXCopyTime is the CPU time to copy n bytes from the device (OpRead)
	// or to it (OpWrite, persistence flushes included).
	DAXCopyTime(op Op, n int64) time.Duration
	// DAXRead appends the stamps of sectors [sector, sector+n) to dst.
	DAXRead(dst []StampRun, sector, n int64) []StampRun
	// DAXWrite stores stamp s in sectors [sector, sector+n).
	DAXWrite(sector, n int64, s Stamp)
	// DAXStamp returns the stamp of one sector.
	DAXStamp(sector int64) Stamp
}

// PMemParams describe a persistent-memory namespace exposed as a pmem
// block device (/dev/pmemN, an NVDIMM in fsdax mode).
type PMemParams struct {
	// Name defaults to "pmem0".
	Name string
	// Capacity is the namespace size in bytes (default 16 GiB).
	Capacity int64
	// LogicalBlockSize is 512 (the pmem driver's) or 4096.
	LogicalBlockSize int
	// MaxHWSectorsKB is the largest request through the block layer
	// (0: 4096; the bio-based driver sets no real limit).
	MaxHWSectorsKB int
	// ReadMBps is the rate of one CPU copying from the device (memcpy
	// from the persistent memory, the copy_to_user of a DAX read), MB/s.
	ReadMBps float64
	// WriteMBps is the rate of one CPU copying to the device with its
	// persistence flushes (non-temporal stores, then a fence), MB/s.
	WriteMBps float64
	// Latency is the fixed part of each copy (the first access to the
	// media), added once per copy.
	Latency time.Duration
}

// PMem defaults: a DRAM-backed NVDIMM-N in a 2016 server.
const (
	pmemDefaultCapacity = 16 << 30
	pmemDefaultReadMBps = 6000
	pmemDefaultWriteMB  = 4000
)

// DefaultPMemParams returns the parameters a "pmem" profile starts from.
func DefaultPMemParams() PMemParams {
	return PMemParams{Name: "pmem0", Capacity: pmemDefaultCapacity, LogicalBlockSize: SectorSize,
		MaxHWSectorsKB: 4096, ReadMBps: pmemDefaultReadMBps, WriteMBps: pmemDefaultWriteMB}
}

// PMem is a persistent-memory device. Through the block layer it behaves
// as the kernel's bio-based pmem driver, which copies in submit_bio on
// the submitting task's CPU: each request completes after its copy time,
// the requests of different tasks in parallel, one task's one after
// another (a task at iodepth 4 copies no faster than at 1). The model
// charges the copy as device time, not CPU time. With DAX (DAXDevice) the
// caller copies directly and pays the CPU time.
type PMem struct {
	e     *sim.Engine
	p     PMemParams
	c     Completer
	store *StampMap
	slots slotTable
	// busy is when each submitting task (by PID) is done copying.
	busy map[uint32]sim.Time
}

// NewPMem returns a pmem device, or an error naming the parameter at
// fault. A zero Name or MaxHWSectorsKB takes its default.
func NewPMem(e *sim.Engine, p PMemParams) (*PMem, error) {
	if p.MaxHWSectorsKB == 0 {
		p.MaxHWSectorsKB = 4096
	}
	switch {
	case p.Capacity <= 0:
		return nil, &paramError{key: "capacity", msg: "must be positive"}
	case p.LogicalBlockSize != SectorSize && p.LogicalBlockSize != 4096:
		return nil, &paramError{key: "logical_block_size", msg: "must be 512 or 4096"}
	case p.MaxHWSectorsKB <= 0 || p.MaxHWSectorsKB*1024%p.LogicalBlockSize != 0:
		return nil, &paramError{key: "max_hw_sectors_kb", msg: "must be a positive multiple of the logical block size"}
	case p.Capacity%int64(p.LogicalBlockSize) != 0:
		return nil, &paramError{key: "capacity", msg: fmt.Sprintf("must be a multiple of the logical block size %d", p.LogicalBlockSize)}
	case p.ReadMBps <= 0:
		return nil, &paramError{key: "read_mbps", msg: "must be positive"}
	case p.WriteMBps <= 0:
		return nil, &paramError{key: "write_mbps", msg: "must be positive"}
	case p.Latency < 0:
		return nil, &paramError{key: "latency", msg: "must not be negative"}
	}
	for _, err := range []error{checkRate("read_mbps", p.ReadMBps, false), checkRate("write_mbps", p.WriteMBps, false),
		checkTime("latency", p.Latency)} {
		if err != nil {
			return nil, err
		}
	}
	if p.Name == "" {
		p.Name = "pmem0"
	}
	return &PMem{e: e, p: p, store: NewStampMap()}, nil
}

// Name returns the device name.
func (d *PMem) Name() string { return d.p.Name }

// Capacity returns the size in bytes.
func (d *PMem) Capacity() int64 { return d.p.Capacity }

// Limits returns the limits of the bio-based pmem queue: MaxHWSectorsKB
// and no tag limit to speak of (1024 here).
func (d *PMem) Limits() Limits {
	return Limits{LogicalBlockSize: d.p.LogicalBlockSize, MaxHWSectorsKB: d.p.MaxHWSectorsKB, QueueDepth: 1024}
}

// Attach sets the completer.
func (d *PMem) Attach(c Completer) { d.c = c }

// Stamps returns the device's stamp store (for tests and verification).
func (d *PMem) Stamps() *StampMap { return d.store }

// Submit completes r after its copy time.
func (d *PMem) Submit(r *Request) {
	if d.busy == nil {
		d.busy = map[uint32]sim.Time{}
	}
	start := max(d.e.Now(), d.busy[r.Issuer.PID])
	end := start + sim.Time(d.DAXCopyTime(r.Op, r.Bytes))
	d.busy[r.Issuer.PID] = end
	d.e.At(end, d, uint64(d.slots.put(r)))
}

// Fire completes the request in slot arg.
func (d *PMem) Fire(arg uint64) {
	r := d.slots.take(int(arg))
	transferData(d.store, r)
	d.c.CompleteRequest(r)
}

// DAXCopyTime returns Latency plus n bytes at the read or write rate.
func (d *PMem) DAXCopyTime(op Op, n int64) time.Duration {
	mbps := d.p.ReadMBps
	if op == OpWrite {
		mbps = d.p.WriteMBps
	}
	return d.p.Latency + transferTime(n, mbps)
}

// DAXRead appends the stamps of [sector, sector+n) to dst.
func (d *PMem) DAXRead(dst []StampRun, sector, n int64) []StampRun {
	return d.store.Read(dst, sector, n)
}

// DAXWrite stores s in [sector, sector+n).
func (d *PMem) DAXWrite(sector, n int64, s Stamp) { d.store.Write(sector, n, s) }

// DAXStamp returns one sector's stamp.
func (d *PMem) DAXStamp(sector int64) Stamp {
	var buf [1]StampRun
	runs := d.store.Read(buf[:0], sector, 1)
	if len(runs) == 0 {
		return Stamp{}
	}
	return runs[0].Stamp
}

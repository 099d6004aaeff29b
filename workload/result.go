package workload

import (
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/internal/latency"
	"github.com/blksim/blksim/sim"
)

// DirStats holds one job's figures for one IO direction (read or write).
// All times are simulated nanoseconds.
type DirStats struct {
	// IOs is the number of completed IOs (fio's total_ios).
	IOs uint64
	// Bytes is the number of bytes transferred (fio's io_bytes).
	Bytes uint64
	// Slat is the submission latency (zero samples for sync engines, as fio
	// shows none for them).
	Slat latency.Histogram
	// Clat is the completion latency: for sync engines the whole syscall.
	Clat latency.Histogram
	// Lat is the total latency, slat + clat: what the application saw.
	Lat latency.Histogram
}

// Merge adds o's figures to d.
func (d *DirStats) Merge(o *DirStats) {
	d.IOs += o.IOs
	d.Bytes += o.Bytes
	d.Slat.Merge(&o.Slat)
	d.Clat.Merge(&o.Clat)
	d.Lat.Merge(&o.Lat)
}

// JobResult is what one job (one clone of a numjobs= job) measured.
type JobResult struct {
	// Name is the job's section name.
	Name string
	// JobID is fio's 0-based job id across the whole run.
	JobID int
	// GroupID is the reporting group (fio's groupid).
	GroupID int
	// RW, BS, IOEngine and IODepth describe the job for the header line
	// ("name: (g=0): rw=randrw, bs=(R) 4096B-4096B, ... ioengine=psync, iodepth=1").
	RW       string
	BS       [2]int64 // read, write block sizes (the smallest, for a range or split)
	IOEngine string
	IODepth  int
	// BSMax is the largest read and write block size of a job with
	// bsrange or bssplit; 0 for a direction with one size (BS).
	BSMax [2]int64
	// Description is the job's description= text ("" if none).
	Description string
	// Jobs is how many jobs this result stands for: 1, or the number of
	// jobs merged into a group_reporting result.
	Jobs int
	// Read and Write are the per-direction figures.
	Read, Write DirStats
	// Runtime is the job's measured runtime in simulated ns (ramp excluded).
	Runtime int64
	// Error is the errno the job ended with (0 if none), and ErrorMsg its text.
	Error    int
	ErrorMsg string
	// Integrity is what the atomicity oracle found in the job's reads
	// (summed over the jobs of a group_reporting result); its On is false
	// if the oracle did not watch the job's file.
	Integrity IntegrityStats
}

// GroupResult is a reporting group: fio prints one "Run status group" block
// per group. When GroupReporting is true, Jobs holds a single merged entry
// named after the first job, whose Jobs field counts the jobs merged and
// whose Runtime is the longest of theirs, as fio reports them.
type GroupResult struct {
	GroupID        int
	GroupReporting bool
	Jobs           []JobResult
}

// EngineFigures describes the engine's own work during a run.
type EngineFigures struct {
	// SimulatedIOs is the number of IOs the jobs completed.
	SimulatedIOs uint64
	// Events is the number of engine events dispatched.
	Events uint64
	// WallSeconds is the real time the simulation took.
	WallSeconds float64
	// SimulatedSeconds is the simulated time covered.
	SimulatedSeconds float64
}

// DiskResult is one device's block-layer figures for a run.
type DiskResult struct {
	// Name is the device name (nvme0n1).
	Name string
	// Scheduler is the queue's IO scheduler.
	Scheduler string
	// Stats are the queue's counters at the end of the run.
	Stats blockdev.DiskStats
	// Elapsed is the simulated time the counters cover.
	Elapsed time.Duration
}

// Result is everything one run produced, in a deterministic order.
type Result struct {
	// Groups in group id order.
	Groups []GroupResult
	// Locks holds the lockstat-style figures of every lock that was
	// acquired at least once, sorted by name.
	Locks []sim.LockStats
	// Engine holds the engine figures.
	Engine EngineFigures
	// Disks holds each device's figures, in stack order.
	Disks []DiskResult
	// Seed is the seed the run used.
	Seed uint64
	// Integrity is the atomicity oracle's total over every job; its On is
	// false if the oracle watched no file.
	Integrity IntegrityStats
}

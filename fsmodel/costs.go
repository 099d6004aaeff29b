package fsmodel

import "time"

// Costs are the CPU times the filesystem paths charge to the calling task
// (on a simulated CPU, so they queue when the host's CPUs are busy).
type Costs struct {
	// Syscall is the entry plus exit cost of one read or write call.
	Syscall time.Duration
	// DIOSetup is the fixed cost of a direct IO: checks, extent lookup,
	// building and submitting its bios.
	DIOSetup time.Duration
	// DIOPerPage is the per-4KiB cost of pinning user pages and adding
	// them to bios.
	DIOPerPage time.Duration
	// BioSubmit is the cost of submitting one bio through the block layer
	// to the driver (request allocation, queue_rq, doorbell).
	BioSubmit time.Duration
	// DIOComplete is the cost of finishing a direct IO after its bios
	// complete (end_io, unpinning, accounting).
	DIOComplete time.Duration
	// PageCacheLookup is the cost of finding (or inserting) one page in
	// the page cache on the buffered read and write paths (the xarray
	// walk, the page reference); it runs with the page's copy.
	PageCacheLookup time.Duration
}

package sim

import "time"

// LockModeStats holds lockstat-like figures for one acquisition mode of a
// lock (read/shared or write/exclusive). Times are simulated.
type LockModeStats struct {
	// Acquisitions counts successful acquisitions in this mode.
	Acquisitions uint64
	// Contentions counts acquisitions that could not be granted at once
	// (the task spun or slept first).
	Contentions uint64
	// WaitTotal and WaitMax measure the time from the attempt to the grant.
	WaitTotal, WaitMax time.Duration
	// WaitMin is the smallest non-zero wait (zero if never contended).
	WaitMin time.Duration
	// HoldTotal and HoldMax measure the time from the grant to the release.
	HoldTotal, HoldMax time.Duration
	// HoldMin is the smallest hold time (zero if never acquired).
	HoldMin time.Duration
	// Spins counts acquisitions that were obtained by optimistic spinning,
	// and SpinTime the simulated time spent spinning (whether or not the
	// spin ended in the lock).
	Spins    uint64
	SpinTime time.Duration
	// AcqBounces counts acquisitions by a task whose last CPU was not that
	// of the lock's previous owner (the lock's cache line moved), and
	// ConBounces those of them that were contended: /proc/lock_stat's
	// acq-bounces and con-bounces.
	AcqBounces, ConBounces uint64
}

// LockStats is the lockstat view of one lock.
type LockStats struct {
	// Name identifies the lock, e.g. "ext4:i_rwsem:file0".
	Name string
	// Kind is "rwsem" or "mutex" (a Semaphore keeps no lock statistics).
	Kind string
	// Read holds shared acquisitions (rwsem down_read); zero for mutexes.
	Read LockModeStats
	// Write holds exclusive acquisitions.
	Write LockModeStats
	// Handoffs counts grants forced by the handoff rule (a first waiter
	// that waited longer than the handoff timeout).
	Handoffs uint64
}

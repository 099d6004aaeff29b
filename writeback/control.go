package writeback

import (
	"math"

	"github.com/blksim/blksim/sim"
)

// SyncMode is writeback_control.sync_mode.
type SyncMode uint8

const (
	// SyncNone is WB_SYNC_NONE: write what can be written without waiting
	// (pages already under writeback are skipped) and stop when NrToWrite
	// reaches zero. The flusher's background and periodic writeback use it.
	SyncNone SyncMode = iota
	// SyncAll is WB_SYNC_ALL: write every dirty page of the range, waiting
	// for pages under writeback first, whatever NrToWrite says (fsync,
	// sync(2)).
	SyncAll
)

// String returns the kernel's name, "WB_SYNC_NONE" or "WB_SYNC_ALL".
func (m SyncMode) String() string {
	switch m {
	case SyncNone:
		return "WB_SYNC_NONE"
	case SyncAll:
		return "WB_SYNC_ALL"
	}
	return "WB_SYNC_invalid"
}

// Reason says why writeback runs (the kernel's enum wb_reason, plus fsync,
// which the kernel does not route through the flusher). Reasons index
// Stats' per-reason arrays.
type Reason uint8

const (
	// ReasonBackground is flusher writeback because dirty pages exceed the
	// background threshold (WB_REASON_BACKGROUND).
	ReasonBackground Reason = iota
	// ReasonPeriodic is the flusher's periodic kupdate writeback of inodes
	// dirtied longer than DirtyExpire ago (WB_REASON_PERIODIC).
	ReasonPeriodic
	// ReasonSync is writeback of the whole domain for sync(2) or syncfs
	// (WB_REASON_SYNC), see Writeback.SyncFS.
	ReasonSync
	// ReasonFsync is one inode's writeback for fsync, fdatasync or
	// sync_file_range, run on the caller's task (Writeback.Sync).
	ReasonFsync
	// NumReasons is the number of reasons.
	NumReasons
)

var reasonNames = [NumReasons]string{"background", "periodic", "sync", "fsync"}

// String names the reason as the kernel's writeback tracepoints do
// ("background", "periodic", "sync"), or "fsync".
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return "invalid"
}

// AllPages is LONG_MAX: a page budget that never runs out, used for
// WB_SYNC_ALL (the kernel's writeback_chunk_size for WB_SYNC_ALL).
const AllPages = math.MaxInt64

// RangeWhole is LLONG_MAX, the RangeEnd of a whole-file range.
const RangeWhole = math.MaxInt64

// MaxWritebackPages is MAX_WRITEBACK_PAGES: the chunk of one inode that one
// WB_SYNC_NONE writepages call writes before writeback moves on to the
// next inode (4 MiB of 4 KiB pages).
const MaxWritebackPages = 1024

// Control is the kernel's writeback_control: the instructions for one
// writepages call, and what the call reports back. The caller fills it in;
// the filesystem's Writepages reads it and updates NrToWrite and
// PagesSkipped.
type Control struct {
	// SyncMode is WB_SYNC_NONE or WB_SYNC_ALL.
	SyncMode SyncMode
	// NrToWrite is the page budget. Writepages decrements it once per page
	// it writes (sets under writeback); with SyncNone it stops when it
	// reaches zero, with SyncAll it writes every dirty page of the range
	// and the value may go negative.
	NrToWrite int64
	// PagesSkipped counts dirty pages Writepages chose not to write (for
	// example when the lock rule said LockSkip). The flusher then moves
	// the inode to the tail of the dirty list (redirty_tail).
	PagesSkipped int64
	// RangeStart and RangeEnd are the byte range to write, both inclusive
	// (RangeEnd RangeWhole for the whole file). Ignored when RangeCyclic
	// is set.
	RangeStart, RangeEnd int64
	// RangeCyclic asks Writepages to start where the inode's previous
	// cyclic writeback stopped (mapping->writeback_index), wrap around at
	// the end of the file, and remember where it stopped.
	RangeCyclic bool
	// Reason says who asked.
	Reason Reason
}

// Inode is what the writeback machinery needs of a file (the kernel's
// struct inode as fs-writeback.c sees it). Inodes are compared by ID: two
// values with the same ID are the same inode.
//
// Methods are called on the engine goroutine, from tasks and handlers.
type Inode interface {
	// ID identifies the inode within its Writeback; it must not change.
	ID() uint64
	// DirtyPages returns the number of the inode's pages that are dirty
	// now (tagged PAGECACHE_TAG_DIRTY), pages under writeback excluded
	// unless they were dirtied again.
	DirtyPages() int64
}

// Writepager is the filesystem half of writeback, the kernel's
// address_space_operations.writepages: it turns an inode's dirty pages
// into bios. The writeback package declares it and filesystems implement
// it, so writeback never imports a filesystem.
//
// Writepages is called on the flusher's task (background, periodic and
// sync writeback) or on a task that asked for Writeback.Sync; it may
// block through sim primitives (CPU, locks, waits). It must:
//
//   - call Writeback.BeginWritepages first and Writeback.EndWritepages
//     last, and honour the LockDecision Begin returns: hold the
//     filesystem's writepages mutex across plug, the page loop and unplug
//     for LockSerialize; write nothing for LockSkip (Begin has added the
//     inode's dirty pages to wbc.PagesSkipped);
//   - write dirty pages of the range wbc describes in index order,
//     decrementing wbc.NrToWrite once per page and, for SyncNone,
//     stopping when it reaches zero;
//   - account every page it writes: Writeback.AccountCleaned(1) when its
//     dirty flag is cleared and Writeback.AccountWriteback(+1) when it is
//     set under writeback (and AccountWriteback(-1) when the IO
//     completes, usually from a completion handler);
//   - submit its bios under one block plug (bios built per physically
//     contiguous run of blocks, up to the bio size cap).
//
// An error is reported to Sync's caller (as the kernel reports AS_EIO at
// fsync); flusher errors are counted in Stats.Errors.
type Writepager interface {
	Writepages(t *sim.Task, ino Inode, wbc *Control) error
}

// Waiter waits for writeback IO, the kernel's filemap_fdatawait_range.
// WaitOnWriteback blocks t until none of ino's pages whose byte offsets
// fall in [start, end] (end inclusive) is under writeback; it may wait
// longer (for the whole inode, say) but never less. It returns at once if
// none is.
type Waiter interface {
	WaitOnWriteback(t *sim.Task, ino Inode, start, end int64)
}

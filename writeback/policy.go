package writeback

import (
	"github.com/blksim/blksim/sim"
)

// Policy decides what writeback does: which dirty inodes a flusher pass
// writes, in which order, how many pages of each and in which sync mode
// (Pick), and whether a writepages call holds the filesystem's writepages
// mutex (Serialize). It is the thing users unit-test (see Harness).
//
// The machinery calls a Policy on the engine goroutine only, never
// concurrently. A policy should be a pure function of its arguments: the
// machinery keeps the state (dirty list, dirtied times, counters) and
// passes it in, so that a policy value can be shared and runs stay
// deterministic.
type Policy interface {
	// Name describes the policy for reports, e.g. "default".
	Name() string
	// Pick returns the work of one flusher pass. The flusher starts a run
	// of passes for a reason when a SyncFS call is queued (ReasonSync),
	// when it wakes (kicked by BalanceDirtyPages or Kick, or by its
	// periodic timer) with dirty pages above the background threshold
	// (ReasonBackground), and every Limits.DirtyWriteback
	// (ReasonPeriodic). In a run it executes the returned Work in order,
	// one writepages call each on the flusher's task, requeues each
	// inode, and calls Pick again until it returns no work, a pass writes
	// nothing, or (periodic) the run has written as many pages as were
	// dirty when it started. So the policy decides when background
	// writeback stops: Default stops at the background threshold. Work
	// naming an inode that is not on the dirty list or has no dirty
	// pages, or with Pages <= 0, is skipped.
	Pick(p PassInfo) []Work
	// Serialize answers the lock question for one writepages call; see
	// Writeback.BeginWritepages, which asks it.
	Serialize(q LockQuery) LockDecision
}

// DirtyInode is one entry of the dirty list.
type DirtyInode struct {
	Inode Inode
	// DirtiedWhen is when the inode became dirty (inode->dirtied_when):
	// the first MarkInodeDirty after it was clean, or when the flusher
	// last moved it to the tail of the list (redirty_tail).
	DirtiedWhen sim.Time
	// DirtyPages is Inode.DirtyPages() when the pass started.
	DirtyPages int64
}

// PassInfo is what a policy sees at the start of a flusher pass.
type PassInfo struct {
	// Reason is why the flusher runs: ReasonBackground, ReasonPeriodic or
	// ReasonSync.
	Reason Reason
	// Pass counts the passes of this run of Reason, from 0.
	Pass int
	// Now is the current simulated time.
	Now sim.Time
	// Limits are the domain's settings (DirtyExpire for periodic
	// writeback).
	Limits Limits
	// Background and DirtyLimit are the thresholds in pages
	// (Limits.Thresholds of the dirtyable memory).
	Background, DirtyLimit int64
	// Dirty is the number of dirty pages (NR_FILE_DIRTY); Writeback the
	// number under writeback (NR_WRITEBACK). Throttling compares
	// Dirty+Writeback with the limits; background writeback compares
	// Dirty with Background.
	Dirty, Writeback int64
	// Inodes is the dirty list, oldest DirtiedWhen first (ties in the
	// order the inodes were dirtied). Only inodes with dirty pages appear;
	// for ReasonSync only those dirtied by the time the run started
	// (older_than_this), so a sync cannot be livelocked by new writes.
	// The slice is the policy's to keep or change.
	Inodes []DirtyInode
}

// Expired returns, in a new slice in Inodes' order, the inodes dirtied
// at least Limits.DirtyExpire before Now: what periodic writeback may
// write.
func (p PassInfo) Expired() []DirtyInode {
	cut := p.Now - sim.Time(p.Limits.DirtyExpire)
	var out []DirtyInode
	for _, in := range p.Inodes {
		if in.DirtiedWhen <= cut {
			out = append(out, in)
		}
	}
	return out
}

// Work is one writepages call of a pass.
type Work struct {
	Inode Inode
	// Pages is the call's NrToWrite budget (AllPages for no limit).
	Pages int64
	// SyncMode is the call's sync mode.
	SyncMode SyncMode
	// RangeCyclic continues where the inode's last cyclic writeback
	// stopped; otherwise the call covers the whole file.
	RangeCyclic bool
}

// LockDecision is the answer to the lock question for one writepages call.
type LockDecision uint8

const (
	// LockNone runs writepages without the filesystem's writepages mutex.
	LockNone LockDecision = iota
	// LockSerialize holds the filesystem's writepages mutex across plug,
	// the page loop and unplug, so the call allocates its pages as one
	// run (f2fs's sbi->writepages).
	LockSerialize
	// LockSkip writes nothing now: the filesystem adds the inode's dirty
	// pages to Control.PagesSkipped and returns.
	LockSkip
)

// String names the decision: "none", "serialize" or "skip".
func (d LockDecision) String() string {
	switch d {
	case LockNone:
		return "none"
	case LockSerialize:
		return "serialize"
	case LockSkip:
		return "skip"
	}
	return "invalid"
}

// LockQuery describes one writepages call to a Serializer.
type LockQuery struct {
	Inode Inode
	// Control is the call's writeback_control; a Serializer must not
	// change it.
	Control *Control
	// DirtyPages is Inode.DirtyPages() at the call.
	DirtyPages int64
	// Regular reports whether the inode is a regular file: false only if
	// the inode implements interface{ Regular() bool } and says so.
	Regular bool
	// SyncWriters is the number of WB_SYNC_ALL writepages calls in
	// progress on the Writeback, this one included if it is WB_SYNC_ALL
	// (f2fs's sbi->wb_sync_req[DATA] after its increment).
	SyncWriters int
}

// Serializer is the lock half of a Policy, for policies that compose one
// (Default.Serializer).
type Serializer interface {
	Serialize(q LockQuery) LockDecision
}

// F2FSRule selects a variant of f2fs's writepages lock rule.
type F2FSRule uint8

const (
	// F2FSv419 is the rule of v4.19 (commit 853137ce, EXPERIMENTS.md
	// section 3): WB_SYNC_ALL calls always take the mutex; WB_SYNC_NONE
	// calls skip the inode while a WB_SYNC_ALL call is in progress and
	// take the mutex otherwise.
	F2FSv419 F2FSRule = iota
	// F2FSMerged is __should_serialize_io as merged upstream: the same
	// skip, then the mutex only for regular files, and for them when the
	// call is WB_SYNC_NONE or the inode has at least MinSeqBlocks dirty
	// pages.
	F2FSMerged
	// F2FSv418 is the rule just before the mutex came back (v4.18,
	// commit 687de7f1010c, "avoid IO split due to mixed WB_SYNC_ALL and
	// WB_SYNC_NONE"): the same skip and yield, and no mutex at all.
	F2FSv418
)

// F2FSSerialize is f2fs's writepages lock rule (__f2fs_write_data_pages),
// the reference Serializer. The zero value is the v4.19 rule.
//
// Every variant announces WB_SYNC_ALL calls in a sync-request counter
// (LockQuery.SyncWriters, kept by Writeback.BeginWritepages and
// EndWritepages), skips WB_SYNC_NONE calls that start while it is
// non-zero, and makes a WB_SYNC_NONE call already running stop after its
// current page when it becomes non-zero (YieldsToSync, checked through
// Writeback.YieldToSync), so the flusher's pages do not land between an
// fsync's and split the merged write bio by their flags.
type F2FSSerialize struct {
	Rule F2FSRule
	// MinSeqBlocks is F2FSMerged's threshold (sm_info->min_seq_blocks:
	// blocks per segment times segments per section); 0 means 512.
	MinSeqBlocks int64
}

// Serialize applies the rule.
func (f F2FSSerialize) Serialize(q LockQuery) LockDecision {
	if q.Control.SyncMode == SyncNone && q.SyncWriters > 0 {
		return LockSkip
	}
	switch f.Rule {
	case F2FSv419:
		return LockSerialize
	case F2FSv418:
		return LockNone
	}
	minSeq := f.MinSeqBlocks
	if minSeq <= 0 {
		minSeq = 512
	}
	switch {
	case !q.Regular:
		return LockNone
	case q.Control.SyncMode != SyncAll:
		return LockSerialize
	case q.DirtyPages >= minSeq:
		return LockSerialize
	}
	return LockNone
}

// Name returns "f2fs-v4.19", "f2fs-merged" or "f2fs-v4.18".
func (f F2FSSerialize) Name() string {
	switch f.Rule {
	case F2FSv419:
		return "f2fs-v4.19"
	case F2FSv418:
		return "f2fs-v4.18"
	}
	return "f2fs-merged"
}

// YieldsToSync reports true: f2fs_write_cache_pages ends a WB_SYNC_NONE
// call after its current page while a WB_SYNC_ALL call is in progress
// ("give a priority to WB_SYNC threads").
func (f F2FSSerialize) YieldsToSync() bool { return true }

// SyncYielder is implemented by lock rules under which a WB_SYNC_NONE
// writepages call stops after its current page while a WB_SYNC_ALL call
// is in progress (see Writeback.YieldToSync).
type SyncYielder interface {
	YieldsToSync() bool
}

// Default is the kernel's writeback policy (fs/fs-writeback.c), simplified
// to whole passes:
//
//   - background: while Dirty exceeds Background, inodes oldest-dirtied
//     first, ChunkPages each (writeback_chunk_size for WB_SYNC_NONE),
//     WB_SYNC_NONE and range_cyclic, as many inodes as it takes to cover
//     the excess (Dirty - Background); inodes with pages left are
//     requeued and the next pass continues;
//   - periodic (kupdate): the inodes dirtied at least DirtyExpire ago,
//     oldest first, ChunkPages each, WB_SYNC_NONE, range_cyclic, until
//     none is left;
//   - sync: every dirty inode, WB_SYNC_ALL, AllPages, whole file.
//
// The kernel's bandwidth-scaled chunk (half a second of the measured write
// bandwidth, rounded to MIN_WRITEBACK_PAGES) and its 100 ms time slice per
// pass are replaced by the fixed chunk (the MAX_WRITEBACK_PAGES of older
// kernels). The zero value is ready to use and never serializes.
type Default struct {
	// ChunkPages is the pages per inode per WB_SYNC_NONE pass; 0 means
	// MaxWritebackPages.
	ChunkPages int64
	// Serializer answers the lock question; nil means LockNone always.
	Serializer Serializer
}

// Name returns "default", followed by the serializer's name in brackets
// if it has one (a Name() string method).
func (d Default) Name() string {
	if n, ok := d.Serializer.(interface{ Name() string }); ok {
		return "default[" + n.Name() + "]"
	}
	return "default"
}

// chunk returns writeback_chunk_size for mode.
func (d Default) chunk(mode SyncMode) int64 {
	if mode == SyncAll {
		return AllPages
	}
	if d.ChunkPages > 0 {
		return d.ChunkPages
	}
	return MaxWritebackPages
}

// Pick implements Policy as described on Default.
func (d Default) Pick(p PassInfo) []Work {
	var out []Work
	switch p.Reason {
	case ReasonBackground:
		need := p.Dirty - p.Background
		chunk := d.chunk(SyncNone)
		for _, in := range p.Inodes {
			if need <= 0 {
				break
			}
			out = append(out, Work{Inode: in.Inode, Pages: chunk, SyncMode: SyncNone, RangeCyclic: true})
			need -= min(chunk, in.DirtyPages)
		}
	case ReasonPeriodic:
		chunk := d.chunk(SyncNone)
		for _, in := range p.Expired() {
			out = append(out, Work{Inode: in.Inode, Pages: chunk, SyncMode: SyncNone, RangeCyclic: true})
		}
	case ReasonSync:
		for _, in := range p.Inodes {
			out = append(out, Work{Inode: in.Inode, Pages: AllPages, SyncMode: SyncAll})
		}
	}
	return out
}

// Serialize asks d.Serializer, or returns LockNone if it is nil.
func (d Default) Serialize(q LockQuery) LockDecision {
	if d.Serializer == nil {
		return LockNone
	}
	return d.Serializer.Serialize(q)
}

// YieldsToSync reports whether the Serializer does (SyncYielder).
func (d Default) YieldsToSync() bool {
	y, ok := d.Serializer.(SyncYielder)
	return ok && y.YieldsToSync()
}

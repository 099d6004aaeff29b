// Package writeback is the generic half of Linux writeback
// (mm/page-writeback.c and fs/fs-writeback.c) on blksim's engine: dirty
// and writeback page accounting, the vm.dirty_* thresholds, the dirty
// inode list, a flusher task running background, periodic (kupdate) and
// sync writeback, writer throttling (balance_dirty_pages) and fsync's
// WB_SYNC_ALL writeback.
//
// # Division of labour
//
// The filesystem-specific half, how dirty pages become bios, is the
// Writepager interface this package declares and filesystems implement,
// as the kernel's address_space_operations.writepages: writeback never
// imports a filesystem or the page cache. A filesystem
//
//   - reports dirtying: AccountDirtied, then MarkInodeDirty, then
//     BalanceDirtyPages on the writing task;
//   - implements Writepager (and Waiter) and accounts the pages it writes
//     with AccountCleaned and AccountWriteback;
//   - asks BeginWritepages the lock question in each writepages call and
//     holds its writepages mutex when told to;
//   - calls Sync for fsync and fdatasync.
//
// # Policies
//
// What the flusher writes, and the lock rule, are a Policy: Pick chooses
// the work of each pass (which inodes, in which order, how many pages,
// which sync mode) from a PassInfo snapshot; Serialize answers whether a
// writepages call holds the filesystem's writepages mutex, or skips the
// inode. Default is the kernel's policy; F2FSSerialize is f2fs's lock rule
// (v4.19 and merged variants) for Default.Serializer. A Harness runs a
// policy against an in-memory filesystem whose IOs can be asserted on in
// a unit test (see the example).
//
// # Simplifications
//
// One Writeback is one bdi_writeback in one global domain: no memcg or
// per-bdi (strictlimit) domains, no rt-task boosts; dirtyable memory is a
// number the caller sets. Passes replace the kernel's b_dirty/b_io/
// b_more_io lists with one dirty list in dirtied-time order (requeued
// inodes keep their place, skipped or blocked ones go to the tail with a
// fresh time, as redirty_tail does). The WB_SYNC_NONE chunk is fixed
// (MaxWritebackPages) rather than scaled with bandwidth. Throttling paces
// writers at the measured write bandwidth times the kernel's pos_ratio
// curve instead of the dirty_ratelimit feedback loop (see
// BalanceDirtyPages).
//
// # Concurrency
//
// Like everything on a sim.Engine, a Writeback is single-threaded: its
// methods run on the engine goroutine, from tasks and handlers; methods
// taking a *sim.Task block that task through sim primitives only.
package writeback

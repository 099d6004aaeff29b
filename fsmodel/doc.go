// Package fsmodel is blksim's filesystem layer: files with extent maps on a
// block device, inode locks whose modes and spans follow a filesystem's
// policy (the ext4 personalities of kernels 4.9 to 5.5 and 5.6+, f2fs,
// xfs), the direct-IO read and write paths that turn file IO into bios,
// buffered IO through the page cache and writeback, and the DAX paths
// (FS.EnableDAX) that copy straight to a pmem device under the inode
// locks.
//
// Buffered data gets its blocks at writeback: ext4 and xfs from a
// per-file window (delayed allocation, contiguous files), f2fs from a
// shared log in the order pages are written (AllocLog). On f2fs, fsync
// and fdatasync also write the file's direct nodes (the blocks holding its
// data blocks' addresses) to a node log, and fdatasync, or an fsync of at
// most 8 dirty pages, rewrites pages in place rather than at the log's
// head (ipu_policy F2FS_IPU_FSYNC). Every fsync and fdatasync ends with
// a cache flush on a device with a volatile write cache.
//
// All methods run on the engine goroutine; the IO paths block the calling
// simulated task.
package fsmodel

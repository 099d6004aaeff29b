// Package fsmodel is blksim's filesystem layer: files with extent maps on a
// block device, inode locks whose modes and spans follow a filesystem's
// policy (the ext4 personalities of kernels 4.9 to 5.5 and 5.6+, f2fs,
// xfs), the direct-IO read and write paths that turn file IO into bios,
// buffered IO through the page cache and writeback, and the DAX paths
// (FS.EnableDAX) that copy straight to a pmem device under the inode
// locks.
//
// All methods run on the engine goroutine; the IO paths block the calling
// simulated task.
package fsmodel

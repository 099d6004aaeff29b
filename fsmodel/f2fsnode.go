package fsmodel

import (
	"fmt"
	"syscall"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
)

// f2fs's on-disk geometry (include/linux/f2fs_fs.h): the inode block
// addresses the first DEF_ADDRS_PER_INODE data blocks itself, each direct
// node the next ADDRS_PER_BLOCK; a segment is 512 blocks (2 MiB).
const (
	f2fsAddrsPerInode = 923
	f2fsAddrsPerBlock = 1018
	f2fsSegmentBlocks = 512
	// f2fsMinFsyncBlocks is min_fsync_blocks (DEF_MIN_FSYNC_BLOCKS): an
	// fsync of at most this many dirty pages updates in place.
	f2fsMinFsyncBlocks = 8
)

// logHead is one log of AllocLog (a current segment, f2fs's curseg):
// blocks [next, end) of the segment it writes are still free.
type logHead struct {
	next, end int64
}

// started reports whether the log has taken a segment.
func (l *logHead) started() bool { return l.end != 0 }

// f2fsNode is one of a file's direct node blocks (f2fs's dnodes: the
// inode block, then the direct node blocks), which hold the addresses of
// the file's data blocks. A node is created with the first page dirtied
// in its range (its block reserved then, as new_node_page counts a valid
// node), is dirtied again whenever writeback moves one of its data blocks
// (out of place, so the address changes), and is written out of place to
// the warm node log only by fsync or fdatasync (f2fs_fsync_node_pages);
// f2fs's checkpoint, which would write the rest (and the indirect nodes),
// is not modelled. Node pages are taken to stay cached: fio's invalidate
// drops a file's own pages, not the filesystem's node pages, so readers
// never read them, and they are not counted in the page cache.
type f2fsNode struct {
	exists    bool
	reserved  bool  // its block is a reservation, not yet taken
	blk       int64 // block on the device, -1 before its first write
	dirty     bool
	writeback bool
}

// nodeIndex returns which of its file's direct nodes holds the address of
// data page idx: 0 is the inode block.
func nodeIndex(idx int64) int {
	if idx < f2fsAddrsPerInode {
		return 0
	}
	return 1 + int((idx-f2fsAddrsPerInode)/f2fsAddrsPerBlock)
}

// tracksNodes reports whether the filesystem keeps f2fs node blocks.
func (fs *FS) tracksNodes() bool { return fs.buf != nil && fs.buf.opt.Alloc == AllocLog }

// logStarted reports whether an AllocLog filesystem has taken a segment
// for either log: a preallocated extent placed at the bump pointer now
// would be written over.
func (b *buffered) logStarted() bool { return b.dataLog.started() || b.nodeLog.started() }

// createNode makes node k of f exist, dirty (new_node_page), reserving a
// block for it; false when the device has none left (ENOSPC).
func (f *File) createNode(k int) bool {
	for len(f.nodes) <= k {
		f.nodes = append(f.nodes, f2fsNode{blk: -1})
	}
	n := &f.nodes[k]
	if n.exists {
		return true
	}
	if !f.fs.reserveBlock() {
		return false
	}
	n.exists, n.reserved, n.dirty = true, true, true
	return true
}

// dirtyNodes marks the node that changes when data page idx moves to a
// new block: its direct node (the inode block for the first pages). A
// node that does not exist (its reservation failed) is created if it can
// be.
func (f *File) dirtyNodes(idx int64) {
	if k := nodeIndex(idx); f.createNode(k) {
		f.nodes[k].dirty = true
	}
}

// logBlock takes the next free block of log own: from its current
// segment, else a new segment, else (the device is carved up) a block an
// out-of-place write left invalid, else the unused end of the other
// log's segment. Past all that (a write the reservations did not cover)
// it returns the block past the device's end, which the device fails.
// The data log takes its segments upwards from the bump pointer, the
// node log downwards from the device's end: f2fs keeps node and data
// segments apart (mkfs.f2fs starts the node logs away from the data logs,
// and each log takes the next free segment beyond its own), so node
// writes never cut a run of data blocks.
func (fs *FS) logBlock(own, other *logHead) int64 {
	b := fs.buf
	capBlocks := fs.q.Device().Capacity() / BlockSize
	if b.nodeTop == 0 {
		b.nodeTop = capBlocks
	}
	if bottom := (fs.next + BlockSize - 1) / BlockSize; own.next >= own.end && bottom < b.nodeTop {
		if own == &b.nodeLog {
			start := max(b.nodeTop-f2fsSegmentBlocks, bottom)
			own.next, own.end = start, b.nodeTop
			b.nodeTop = start
		} else {
			own.next, own.end = bottom, min(bottom+f2fsSegmentBlocks, b.nodeTop)
			fs.next = own.end * BlockSize
		}
	}
	switch {
	case own.next < own.end:
		own.next++
		return own.next - 1
	case len(fs.freed) > 0:
		blk := fs.freed[0]
		fs.freed = fs.freed[1:]
		return blk
	case other.next < other.end:
		other.end--
		return other.end
	}
	return max(capBlocks, (fs.next+BlockSize-1)/BlockSize)
}

// nodeRef names a file's node in a write bio.
type nodeRef struct {
	f *File
	k int
}

// nodeBio is f2fs's merged write bio of the warm node log
// (sbi->write_io[NODE]): node blocks are appended while each follows the
// last, whichever file they belong to.
type nodeBio struct {
	bio   blockdev.Bio
	nodes []nodeRef
	last  int64
}

// EndBio ends the nodes' writeback; a failed write is recorded on their
// files for fsync to report.
func (nb *nodeBio) EndBio(bio *blockdev.Bio) {
	for _, r := range nb.nodes {
		r.f.nodes[r.k].writeback = false
		if bio.Err != nil {
			r.f.wbErr.set(syscall.Errno(blockdev.ErrnoOf(bio.Err)))
		}
	}
	for _, r := range nb.nodes {
		r.f.wbWait.WakeAll()
	}
}

func (nb *nodeBio) holds(f *File) bool {
	for _, r := range nb.nodes {
		if r.f == f {
			return true
		}
	}
	return false
}

// submitNodeBio sends out the merged node bio.
func (b *buffered) submitNodeBio(q *blockdev.Queue) {
	if b.nodes != nil {
		q.Submit(&b.nodes.bio)
		b.nodes = nil
	}
}

// syncNodes is f2fs_fsync_node_pages and f2fs_wait_on_node_pages_writeback
// for an fsync (or, datasync, fdatasync) whose data is on the device:
// the inode block is dirtied as the sync requires, then each dirty
// direct node of f, in order (the inode first), waits for its write in
// flight, takes the next block of the warm node log under the node log's
// mutex (the old one becomes invalid) and joins the merged node bio, a
// REQ_SYNC write; the bio goes out when it is full, when a block does not
// follow its last, and at the end if it holds one of f's nodes. It then
// waits for f's nodes to be written.
func (f *File) syncNodes(t *sim.Task, datasync bool) {
	fs, b := f.fs, f.fs.buf
	// f2fs_skip_inode_update: fsync writes the inode block after any
	// write, fdatasync only after one that changed the size.
	if f.inodeChanged && (!datasync || f.sizeChanged) && f.createNode(0) {
		f.nodes[0].dirty = true
		f.inodeChanged, f.sizeChanged = false, false
	}
	wrote := false
	// f.nodes grows while this task waits (a write making a new direct
	// node), so nodes are indexed afresh after every wait, never held.
	for k := 0; k < len(f.nodes); k++ {
		if f.nodes[k].writeback {
			// f2fs_wait_on_page_writeback: the merged bio may hold it.
			if b.nodes != nil && b.nodes.holds(f) {
				b.submitNodeBio(fs.q)
			}
			for f.nodes[k].writeback {
				f.wbWait.Wait(t)
			}
		}
		if !f.nodes[k].dirty {
			continue
		}
		t.CPU(b.opt.WritePage)
		if n := &f.nodes[k]; !n.dirty || n.writeback {
			k-- // changed while this task ran: look again
			continue
		}
		// Under writeback from here (the page lock and writeback bit of
		// __write_node_page), so that another sync of the file waits for
		// it rather than take it for written.
		n := &f.nodes[k]
		old, reserved := n.blk, n.reserved
		n.dirty, n.writeback, n.reserved = false, true, false
		b.nodeMu.Lock(t)
		if old >= 0 {
			fs.freed = append(fs.freed, old)
		}
		if reserved {
			fs.takeReserved()
		}
		blk := fs.logBlock(&b.nodeLog, &b.dataLog)
		b.nodeMu.Unlock(t)
		f.nodes[k].blk = blk
		if nb := b.nodes; nb != nil && (blk != nb.last+1 || nb.bio.Bytes+BlockSize > b.opt.BioMax) {
			b.submitNodeBio(fs.q)
		}
		if b.nodes == nil {
			nb := &nodeBio{}
			nb.bio.Op = blockdev.OpWrite
			nb.bio.Sector = blk * (BlockSize / blockdev.SectorSize)
			nb.bio.Sync, nb.bio.NoIdle = true, true
			nb.bio.End = nb
			b.nodes = nb
		}
		b.nodes.nodes = append(b.nodes.nodes, nodeRef{f, k})
		b.nodes.last = blk
		b.nodes.bio.Bytes += BlockSize
		wrote = true
	}
	if wrote && b.nodes != nil && b.nodes.holds(f) {
		// f2fs_submit_merged_write_cond on the node log for this inode.
		b.submitNodeBio(fs.q)
	}
	for k := range f.nodes {
		for f.nodes[k].writeback {
			f.wbWait.Wait(t)
		}
	}
}

// NodeBlocks returns where f's direct nodes (the inode block first) were
// last written on an AllocLog filesystem, -1 for one not written yet; nil
// on other filesystems.
func (f *File) NodeBlocks() []int64 {
	var out []int64
	for _, n := range f.nodes {
		out = append(out, n.blk)
	}
	return out
}

// errNodeSpace is the ENOSPC of a node block that cannot be reserved.
func errNodeSpace(name string, off int64) error {
	return fmt.Errorf("%s write at %d: no block left for its node: %w", name, off, ErrNoSpace)
}

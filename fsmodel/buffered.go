package fsmodel

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/pagecache"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/writeback"
)

// Allocator says when and how a filesystem gives blocks to buffered data.
type Allocator uint8

const (
	// AllocDelayed is ext4/xfs delayed allocation: blocks are allocated at
	// writeback, each file taking the next block of its own window
	// (AllocWindow; a new window follows when it is used up), so a file
	// stays contiguous even when several files are written back together.
	AllocDelayed Allocator = iota
	// AllocLog is f2fs's log-structured allocation: at writeback, every
	// page gets the next free block of the shared current segment of the
	// warm data log, in submission order, under the log's mutex taken per
	// page; rewrites go to new blocks. The file's direct nodes, which hold
	// the data blocks' addresses, are written by fsync and fdatasync to
	// the warm node log, also out of place (File.NodeBlocks).
	AllocLog
)

// BufferedOptions turn on buffered IO for a filesystem.
type BufferedOptions struct {
	// Cache is the page cache; Writeback is created by EnableBuffered.
	Cache *pagecache.Cache
	// Limits, Policy and AvailablePages configure writeback.
	Limits         writeback.Limits
	Policy         writeback.Policy
	AvailablePages int64
	// Alloc selects the allocator; AllocWindow is the per-file window of
	// AllocDelayed in bytes (default 8 MiB).
	Alloc       Allocator
	AllocWindow int64
	// WritepagesMutex, for AllocLog, is f2fs's sbi->writepages: the
	// policy's Serialize rule decides when writepages holds it. Without
	// it concurrent writepages calls interleave their allocations.
	WritepagesMutex bool
	// BioMax caps a writeback bio in bytes (default 512 KiB).
	BioMax int64
	// ReadaheadKB is read_ahead_kb (default 128).
	ReadaheadKB int64
	// CopyPerPage is the CPU cost of copying one page between user and
	// page cache; DirtyPage the cost of dirtying a page (accounting, tree
	// tag); WritePage the writepages cost per page (lock, clear dirty,
	// allocate, add to the bio). Concurrent writepages calls interleave at
	// this granularity.
	CopyPerPage, DirtyPage, WritePage time.Duration
	// WriteChecks is the buffered write's CPU time per call under the
	// inode lock before the copy (write checks, timestamps, mapping).
	WriteChecks time.Duration
	// WriteFolio is the buffered write's CPU time per page before its
	// copy, beyond the page-cache lookup: write_begin and write_end
	// (locking the folio and its reference, uptodate and dirty
	// bookkeeping, the dirty ratelimit check). A reader has no such work,
	// so a multi-page write advances page by page more slowly than a
	// multi-page read.
	WriteFolio time.Duration
	// ReadLockShared makes buffered reads take i_rwsem shared across the
	// read (xfs); otherwise they take no inode lock (ext4, f2fs).
	ReadLockShared bool
}

// buffered is a filesystem's buffered-IO state.
type buffered struct {
	opt   BufferedOptions
	cache *pagecache.Cache
	wb    *writeback.Writeback
	ra    pagecache.Readahead

	pageWait [64]sim.WaitQueue // hashed page-lock waiters
	roomWait sim.WaitQueue     // tasks waiting for cache room

	nextID uint64

	// AllocLog state: the warm data and warm node logs and their
	// mutexes, the writepages mutex, and the filesystem-wide merged write
	// bios of data and of nodes.
	dataLog, nodeLog logHead
	nodeTop          int64 // the node log's segments start here, down
	cursegMu, nodeMu *sim.Mutex
	nodes            *nodeBio
	// copies are the recent buffered-write copies into pages, for what
	// unserialized readers see (tearing.go).
	copies  copyLog[*pagecache.Page]
	wpMu    *sim.Mutex
	shared  *pageBio
	bioPool []*pageBio
}

// ErrNotBuffered is returned by buffered calls on a filesystem without
// buffered IO enabled.
var ErrNotBuffered = errors.New("fsmodel: buffered IO is not enabled on this filesystem")

// EnableBuffered turns on buffered IO: it creates the writeback domain
// (with its flusher task) with this filesystem as its Writepager.
func (fs *FS) EnableBuffered(opt BufferedOptions) error {
	if opt.Cache == nil {
		return errors.New("fsmodel: buffered IO needs a page cache")
	}
	if opt.AllocWindow <= 0 {
		opt.AllocWindow = 8 << 20
	}
	if opt.BioMax <= 0 {
		opt.BioMax = 512 << 10
	}
	if opt.ReadaheadKB == 0 {
		opt.ReadaheadKB = 128
	}
	b := &buffered{opt: opt, cache: opt.Cache}
	// bdi->io_pages is max_sectors_kb in pages (blk_queue_max_hw_sectors,
	// queue_max_sectors_store), not max_hw_sectors_kb.
	b.ra = pagecache.Readahead{MaxPages: opt.ReadaheadKB / 4, IOPages: int64(fs.q.MaxSectorsKB()) / 4}
	b.cursegMu = sim.NewMutex(fs.e, fs.opt.Name+":curseg_lock", false)
	if opt.Alloc == AllocLog {
		b.nodeMu = sim.NewMutex(fs.e, fs.opt.Name+":node_curseg_lock", false)
	}
	b.wpMu = sim.NewMutex(fs.e, fs.opt.Name+":writepages", false)
	wb, err := writeback.New(fs.e, writeback.Options{
		Name: fs.q.Device().Name(), Limits: opt.Limits, Policy: opt.Policy,
		AvailablePages: opt.AvailablePages, Writepager: fs, Waiter: fs,
	})
	if err != nil {
		return err
	}
	b.wb = wb
	fs.buf = b
	return nil
}

// Writeback returns the filesystem's writeback domain (nil without
// buffered IO).
func (fs *FS) Writeback() *writeback.Writeback {
	if fs.buf == nil {
		return nil
	}
	return fs.buf.wb
}

// Cache returns the page cache (nil without buffered IO).
func (fs *FS) Cache() *pagecache.Cache {
	if fs.buf == nil {
		return nil
	}
	return fs.buf.cache
}

// Close stops the writeback flusher and the journal's commit task.
func (fs *FS) Close() error {
	fs.journal.close()
	if fs.buf != nil {
		return fs.buf.wb.Close()
	}
	return nil
}

// Create returns the file called name for buffered IO, creating it empty
// (no blocks: they are allocated at writeback) if it does not exist. On
// an AllocLog filesystem the inode is a node block, reserved here: with
// none left Create fails with an error wrapping ErrNoSpace.
func (fs *FS) Create(name string) (*File, error) {
	if fs.buf == nil {
		return nil, ErrNotBuffered
	}
	if f, ok := fs.files[name]; ok {
		return f, nil
	}
	f := &File{fs: fs, name: name, id: fs.buf.nextID + 1, inode: &Inode{
		Lock: sim.NewRWSem(fs.e, fs.opt.Name+":i_rwsem:"+name, fs.opt.Lock),
	}, ra: pagecache.NewRAState()}
	if fs.tracksNodes() && !f.createNode(0) {
		// The inode block is a node, counted when the inode is made.
		return nil, fmt.Errorf("%w: no block left for the inode of %q", ErrNoSpace, name)
	}
	fs.buf.nextID++
	fs.inums++
	f.inum = fs.inums
	fs.files[name] = f
	fs.order = append(fs.order, f)
	return f, nil
}

// ID identifies the file's inode (writeback.Inode).
func (f *File) ID() uint64 { return f.id }

// DirtyPages returns the file's dirty pages (writeback.Inode).
func (f *File) DirtyPages() int64 {
	return int64(f.fs.buf.cache.InodeDirtyPages(pagecache.InodeID(f.id)))
}

func (f *File) ino() pagecache.InodeID { return pagecache.InodeID(f.id) }

// Blocks returns, per page of the file, its block on the device (-1 for
// a page with no block yet). The slice must not be modified.
func (f *File) Blocks() []int64 { return f.blocks }

// BlockExtents returns the file's allocated blocks as extents (bytes), in
// file order, merging physically contiguous runs.
func (f *File) BlockExtents() []Extent {
	var out []Extent
	for i, b := range f.blocks {
		if b < 0 {
			continue
		}
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.Logical+last.Length == int64(i)*BlockSize && last.Physical+last.Length == b*BlockSize {
				last.Length += BlockSize
				continue
			}
		}
		out = append(out, Extent{Logical: int64(i) * BlockSize, Physical: b * BlockSize, Length: BlockSize})
	}
	return out
}

func (f *File) block(idx int64) int64 {
	if idx >= 0 && idx < int64(len(f.blocks)) {
		return f.blocks[idx]
	}
	return -1
}

func (f *File) setBlock(idx, b int64) {
	for int64(len(f.blocks)) <= idx {
		f.blocks = append(f.blocks, -1)
	}
	before := f.runStart(idx) + f.runStart(idx+1)
	f.blocks[idx] = b
	f.extents += f.runStart(idx) + f.runStart(idx+1) - before
}

// runStart is 1 if page idx has a block that does not follow the block of
// the page before it (the first page of an extent), else 0.
func (f *File) runStart(idx int64) int64 {
	if idx >= int64(len(f.blocks)) || f.blocks[idx] < 0 || idx > 0 && f.blocks[idx-1] == f.blocks[idx]-1 {
		return 0
	}
	return 1
}

// pageWaitQueue is the hashed wait queue of a page's lock.
func (b *buffered) pageWaitQueue(p *pagecache.Page) *sim.WaitQueue {
	h := (uint64(p.Inode())*0x9e3779b97f4a7c15 + uint64(p.Index())) >> 58
	return &b.pageWait[h]
}

// lockPage locks p, sleeping while another task holds it.
func (b *buffered) lockPage(t *sim.Task, p *pagecache.Page) {
	for !p.TryLock() {
		b.pageWaitQueue(p).Wait(t)
	}
}

// unlockPage unlocks p and wakes its waiters.
func (b *buffered) unlockPage(p *pagecache.Page) {
	p.Unlock()
	b.pageWaitQueue(p).WakeAll()
}

// addPage creates a locked page, waiting (and kicking writeback) while the
// cache is full of pages it may not evict.
func (b *buffered) addPage(t *sim.Task, f *File, idx int64) *pagecache.Page {
	for {
		p, err := b.cache.Add(f.ino(), idx)
		if err == nil {
			return p
		}
		// Fix (tests): the file's pages this write dirtied so far are
		// writeback's to clean before the wait (the kernel puts the inode
		// on the dirty list with its first dirty page); a write larger
		// than the cache waited here forever.
		if f.DirtyPages() > 0 {
			b.wb.MarkInodeDirty(f)
		}
		b.wb.Kick()
		b.roomWait.Wait(t)
	}
}

// BufferedWrite writes [off, off+n) through the page cache on behalf of t
// (generic_perform_write): the inode lock exclusive across the copy, the
// dirtying and the dirty-page throttling (balance_dirty_pages, which the
// kernel calls in the page loop, under the lock). Blocks are allocated
// later, at writeback, but each page dirtied without one reserves one
// first, as delayed allocation does (on AllocLog also one for a direct
// node the page is the first of): when the device has none left
// (every block allocated or reserved) the write stops there with an
// error wrapping ErrNoSpace (ENOSPC), the pages before it written.
func (f *File) BufferedWrite(t *sim.Task, off, n int64, s blockdev.Stamp) error {
	if f.fs.dax != nil {
		return f.daxSyscall(t, blockdev.OpWrite, off, n, s, nil)
	}
	c := &f.fs.opt.Costs
	t.CPU(c.Syscall / 2)
	defer t.Charge(c.Syscall - c.Syscall/2)
	return f.WriteIter(t, off, n, s)
}

// WriteIter is BufferedWrite without the syscall's own costs: the
// filesystem's write_iter, for callers that charge their own syscall (an
// io_submit of a buffered file runs it synchronously).
func (f *File) WriteIter(t *sim.Task, off, n int64, s blockdev.Stamp) error {
	fs := f.fs
	if fs.dax != nil {
		return f.daxIO(t, blockdev.OpWrite, off, n, s, nil)
	}
	b := fs.buf
	if b == nil {
		return ErrNotBuffered
	}
	if off < 0 || n <= 0 {
		return fmt.Errorf("%s write at %d+%d: %w", f.name, off, n, syscall.EINVAL)
	}
	f.inode.Lock.DownWrite(t)
	t.Charge(b.opt.WriteChecks)
	fs.journal.touch(f) // file_modified
	var dirtied int64
	for pos := off; pos < off+n; {
		idx := pos / pagecache.PageSize
		pageEnd := (idx + 1) * pagecache.PageSize
		end := min(off+n, pageEnd)
		p := b.cache.Find(f.ino(), idx)
		if p == nil {
			p = b.addPage(t, f, idx)
		} else {
			b.lockPage(t, p)
		}
		if !p.IsDirty() && f.block(idx) < 0 {
			// write_begin's delayed-allocation reservation: a page
			// without a block needs one at writeback; on f2fs its
			// direct node is made first (get_dnode_of_data with
			// ALLOC_NODE), a block reserved for it too.
			nodeOK := !fs.tracksNodes() || f.createNode(nodeIndex(idx))
			if !nodeOK || !fs.reserveBlock() {
				b.unlockPage(p)
				if dirtied > 0 {
					b.wb.MarkInodeDirty(f)
				}
				f.inode.Lock.UpWrite(t)
				if !nodeOK {
					return errNodeSpace(f.name, pos)
				}
				return fmt.Errorf("%s write at %d: %w", f.name, pos, ErrNoSpace)
			}
		}
		whole := pos == idx*pagecache.PageSize && end == pageEnd
		if !p.IsUptodate() && !whole {
			if err := f.readPageLocked(t, p); err != nil {
				b.unlockPage(p)
				f.inode.Lock.UpWrite(t)
				return err
			}
		}
		first := int((pos - idx*pagecache.PageSize) / blockdev.SectorSize)
		copyTime := b.opt.CopyPerPage * time.Duration(end-pos) / pagecache.PageSize
		// The copy runs at the end of this burst (the lookup and the
		// folio's write_begin work first).
		pre := f.fs.opt.Costs.PageCacheLookup + b.opt.WriteFolio
		copyStart := t.Now() + sim.Time(t.Owed()+pre)
		b.beginCopy(p, copyStart, sim.Time(copyTime), first, int((end-pos)/blockdev.SectorSize), s)
		t.CPU(pre + copyTime)
		if whole {
			p.SetStamp(s)
		} else {
			p.SetSectorStamps(first, int((end-pos)/blockdev.SectorSize), s)
		}
		if !p.IsUptodate() {
			p.SetUptodate()
		}
		if p.SetDirty() {
			dirtied++
			b.wb.AccountDirtied(1)
			t.Charge(b.opt.DirtyPage)
		}
		b.unlockPage(p)
		pos = end
	}
	if off+n > f.inode.size {
		f.inode.size = off + n
		f.sizeChanged = true
	}
	// The times changed: f2fs's inode block is dirty for fsync.
	f.inodeChanged = true
	if dirtied > 0 {
		b.wb.MarkInodeDirty(f)
	}
	// Throttling runs under the inode lock: generic_perform_write and
	// iomap_write_iter call balance_dirty_pages_ratelimited in their page
	// loop, inside the write_iter's inode_lock (here once, after the
	// loop). The charged CPU time runs first, as it did when the lock
	// was released before throttling.
	t.Flush()
	b.wb.BalanceDirtyPages(t, dirtied)
	f.inode.Lock.UpWrite(t)
	return nil
}

// readPageLocked reads one locked, not uptodate page synchronously (for a
// partial write): zero-filled if it has no block.
func (f *File) readPageLocked(t *sim.Task, p *pagecache.Page) error {
	blk := f.dataBlock(p.Index())
	if blk < 0 {
		p.SetUptodate()
		return nil
	}
	pb := f.fs.buf.newPageBio(blockdev.OpRead)
	pb.add(p, blk)
	pb.waiter = t
	pb.done.Reinit()
	f.fs.q.Submit(&pb.bio)
	pb.done.Wait(t)
	err := pb.err
	pb.pages = pb.pages[:0]
	f.fs.buf.putPageBio(pb)
	return err
}

// BufferedRead reads [off, off+n) through the page cache (filemap_read):
// cached pages are copied, misses start readahead (one bio per physically
// contiguous run) and wait for the page; a page carrying the readahead
// marker starts the next window asynchronously. Reads past the end of
// the file stop there. The stamps read are appended to *data if data is
// not nil.
func (f *File) BufferedRead(t *sim.Task, off, n int64, data *[]blockdev.StampRun) error {
	return f.bufferedRead(t, &f.ra, off, n, data)
}

// bufferedRead is the read system call with ra as the open file's
// readahead state.
func (f *File) bufferedRead(t *sim.Task, ra *pagecache.RAState, off, n int64, data *[]blockdev.StampRun) error {
	if f.fs.dax != nil {
		return f.daxSyscall(t, blockdev.OpRead, off, n, blockdev.Stamp{}, data)
	}
	c := &f.fs.opt.Costs
	t.CPU(c.Syscall / 2)
	defer t.Charge(c.Syscall - c.Syscall/2)
	return f.readIter(t, ra, off, n, data)
}

// ReadIter is BufferedRead without the syscall's own costs: the
// filesystem's read_iter, for callers that charge their own syscall.
func (f *File) ReadIter(t *sim.Task, off, n int64, data *[]blockdev.StampRun) error {
	return f.readIter(t, &f.ra, off, n, data)
}

// Handle is an open file description (the kernel's struct file) of a
// File: it carries the state the kernel keeps per open rather than per
// inode, the readahead state (file_ra_state). Readers that open one file
// each get their own Handle, so that one's reads neither grow nor reset
// another's readahead window. A File's own read methods use the File's
// built-in Handle state.
type Handle struct {
	f  *File
	ra pagecache.RAState
	// wbErr is the description's sample of the file's writeback error
	// (f_wb_err), for Fsync.
	wbErr errSeq
}

// OpenHandle opens f: a new Handle whose readahead state is fresh
// (file_ra_state_init: no window, no previous read), and that will see
// writeback errors from now on, and one that no description has seen
// yet (errseq_sample).
func (f *File) OpenHandle() *Handle {
	return &Handle{f: f, ra: pagecache.NewRAState(), wbErr: f.wbErr.sample()}
}

// Fsync is File.Fsync through h: a writeback error of the file is
// reported once to each open file description (errseq semantics), so
// h's Fsync returns an error the File's own, or another Handle's, has
// already returned.
func (h *Handle) Fsync(t *sim.Task) error { return h.f.fsync(t, &h.wbErr, false) }

// Fdatasync is Handle.Fsync for fdatasync: the same except on an
// AllocLog filesystem, where it rewrites the file's dirty pages in place
// and writes its inode block only if the size changed (see
// File.Fdatasync).
func (h *Handle) Fdatasync(t *sim.Task) error { return h.f.fsync(t, &h.wbErr, true) }

// File returns the file h is open on.
func (h *Handle) File() *File { return h.f }

// BufferedRead is File.BufferedRead through h: readahead follows h's
// reads alone.
func (h *Handle) BufferedRead(t *sim.Task, off, n int64, data *[]blockdev.StampRun) error {
	return h.f.bufferedRead(t, &h.ra, off, n, data)
}

// ReadIter is File.ReadIter through h: readahead follows h's reads alone.
func (h *Handle) ReadIter(t *sim.Task, off, n int64, data *[]blockdev.StampRun) error {
	return h.f.readIter(t, &h.ra, off, n, data)
}

// readIter is the filesystem's read_iter with ra as the open file's
// readahead state.
func (f *File) readIter(t *sim.Task, ra *pagecache.RAState, off, n int64, data *[]blockdev.StampRun) error {
	fs := f.fs
	if fs.dax != nil {
		return f.daxIO(t, blockdev.OpRead, off, n, blockdev.Stamp{}, data)
	}
	b := fs.buf
	if b == nil {
		return ErrNotBuffered
	}
	if off < 0 || n <= 0 {
		return fmt.Errorf("%s read at %d+%d: %w", f.name, off, n, syscall.EINVAL)
	}
	if b.opt.ReadLockShared {
		f.inode.Lock.DownRead(t)
		defer f.inode.Lock.UpRead(t)
	}
	end := min(off+n, f.inode.size)
	filePages := (f.inode.size + pagecache.PageSize - 1) / pagecache.PageSize
	reqPages := (end - off + pagecache.PageSize - 1) / pagecache.PageSize
	for pos := off; pos < end; {
		idx := pos / pagecache.PageSize
		p := b.cache.Find(f.ino(), idx)
		if p == nil {
			w := b.ra.Sync(ra, idx, reqPages).Clamp(filePages)
			if w.Count == 0 {
				w = pagecache.Window{Start: idx, Count: 1, Marker: -1}
			}
			f.readahead(t, w)
			p = b.cache.Peek(f.ino(), idx)
			if p == nil {
				continue // evicted before we looked: retry
			}
		} else if p.IsReadahead() && p.TestClearReadahead() {
			w := b.ra.Async(ra, idx, reqPages).Clamp(filePages)
			f.readahead(t, w)
		}
		// Wait for the read to finish (the page is locked while in IO).
		// A page its read left not uptodate (the device failed it) is
		// read again, synchronously, and the call fails with EIO if that
		// fails too (filemap_update_page, filemap_read_folio).
		if !p.IsUptodate() {
			b.lockPage(t, p)
			var err error
			if !p.IsUptodate() && p.Resident() {
				err = f.readPageLocked(t, p)
			}
			b.unlockPage(p)
			if err != nil || !p.IsUptodate() {
				if pos > off {
					// filemap_read sets prev_pos to where the copy
					// got to, error or not.
					ra.PrevPos = pos
				}
				return fmt.Errorf("%s read at %d: %w", f.name, pos, syscall.EIO)
			}
		}
		chunk := min(end, (idx+1)*pagecache.PageSize) - pos
		copyTime := b.opt.CopyPerPage * time.Duration(chunk) / pagecache.PageSize
		t.CPU(f.fs.opt.Costs.PageCacheLookup + copyTime)
		if data != nil {
			first := int((pos - idx*pagecache.PageSize) / blockdev.SectorSize)
			rn := int(chunk / blockdev.SectorSize)
			r1 := t.Now()
			r0 := r1 - sim.Time(copyTime)
			c := b.copies.overlapping(p, r0, r1)
			for i := 0; i < rn; i++ {
				sec := p.Index()*pagecache.SectorsPerPage + int64(first+i)
				appendSector(data, sec, seenStamp(c, p.SectorStamp(first+i), first+i, r0, r1, first, rn))
			}
		}
		pos += chunk
	}
	// filemap_read: ra->prev_pos is where the read ended, so that a miss
	// in that page or the next counts as sequential.
	ra.PrevPos = end
	return nil
}

// readahead creates the window's missing pages (locked) and reads them:
// one bio per physically contiguous run of blocks; pages without a block
// are zero-filled at once. The bios go under one plug; completion
// unlocks the pages.
func (f *File) readahead(t *sim.Task, w pagecache.Window) {
	b := f.fs.buf
	var pages []*pagecache.Page
	for i := w.Start; i < w.End(); i++ {
		if b.cache.Peek(f.ino(), i) != nil {
			continue
		}
		p, err := b.cache.Add(f.ino(), i)
		if err != nil {
			break // no room: read what we have
		}
		if i == w.Marker {
			p.SetReadahead()
		}
		pages = append(pages, p)
	}
	if len(pages) == 0 {
		return
	}
	plug := f.fs.q.StartPlug(t, IssuerOf(t))
	var pb *pageBio
	for _, p := range pages {
		blk := f.dataBlock(p.Index())
		if blk < 0 {
			p.SetStamp(blockdev.Stamp{})
			p.SetUptodate()
			b.unlockPage(p)
			continue
		}
		if pb != nil && (!pb.contiguous(blk) || pb.bytes()+pagecache.PageSize > maxBioBytes) {
			plug.Submit(&pb.bio)
			pb = nil
		}
		if pb == nil {
			pb = b.newPageBio(blockdev.OpRead)
			pb.bio.Rahead = true // mpage_readahead's REQ_RAHEAD
		}
		pb.add(p, blk)
	}
	if pb != nil {
		plug.Submit(&pb.bio)
	}
	plug.Finish()
}

// pageBio is a bio of whole pages and the pages it carries.
type pageBio struct {
	b      *buffered
	bio    blockdev.Bio
	pages  []*pagecache.Page
	last   int64 // block of the last page added
	err    error
	waiter *sim.Task
	done   sim.Completion
	files  []*File
}

func (b *buffered) newPageBio(op blockdev.Op) *pageBio {
	var pb *pageBio
	if n := len(b.bioPool); n > 0 {
		pb = b.bioPool[n-1]
		b.bioPool = b.bioPool[:n-1]
	} else {
		pb = &pageBio{b: b}
	}
	pb.bio.Reset()
	pb.bio.Op = op
	pb.bio.End = pb
	pb.bio.CollectData = op == blockdev.OpRead
	pb.err, pb.waiter = nil, nil
	return pb
}

func (b *buffered) putPageBio(pb *pageBio) {
	pb.pages = pb.pages[:0]
	pb.files = pb.files[:0]
	b.bioPool = append(b.bioPool, pb)
}

func (pb *pageBio) bytes() int64 { return int64(len(pb.pages)) * pagecache.PageSize }

func (pb *pageBio) contiguous(blk int64) bool { return len(pb.pages) > 0 && blk == pb.last+1 }

// add appends page p stored at block blk (which must follow the last).
func (pb *pageBio) add(p *pagecache.Page, blk int64) {
	if len(pb.pages) == 0 {
		pb.bio.Sector = blk * (BlockSize / blockdev.SectorSize)
	}
	pb.pages = append(pb.pages, p)
	pb.last = blk
	pb.bio.Bytes = pb.bytes()
}

// EndBio completes the pages of a read or write bio.
func (pb *pageBio) EndBio(bio *blockdev.Bio) {
	b := pb.b
	if bio.Op == blockdev.OpRead {
		for i, p := range pb.pages {
			if bio.Err == nil {
				setPageStamps(p, bio.Sector+int64(i)*pagecache.SectorsPerPage, bio.Data)
				p.SetUptodate()
			}
			if pb.waiter == nil {
				b.unlockPage(p)
			}
		}
		if pb.waiter != nil {
			pb.err = bio.Err
			pb.done.Complete()
			return
		}
		b.putPageBio(pb)
		return
	}
	for _, p := range pb.pages {
		p.EndWriteback()
		b.wb.AccountWriteback(-1)
	}
	for _, f := range pb.files {
		for _, p := range pb.pages {
			if p.Inode() == f.ino() {
				f.wbEnded++
			}
		}
	}
	if bio.Err != nil {
		// The pages stay clean and uptodate: their data lives on in the
		// cache until evicted, after which a read finds the device's
		// older data. The error is recorded on each file
		// (mapping_set_error, as ext4's and iomap's end-of-writeback
		// handlers do) for its next fsync.
		errno := syscall.Errno(blockdev.ErrnoOf(bio.Err))
		for _, f := range pb.files {
			f.wbErr.set(errno)
		}
	}
	for _, f := range pb.files {
		f.wbWait.WakeAll()
	}
	b.roomWait.WakeAll()
	b.putPageBio(pb)
}

// setPageStamps gives p, whose block starts at sector base, the stamps a
// read found for its sectors.
func setPageStamps(p *pagecache.Page, base int64, runs []blockdev.StampRun) {
	end := base + pagecache.SectorsPerPage
	for _, r := range runs {
		s, e := max(r.Sector, base), min(r.Sector+r.Sectors, end)
		if e <= s {
			continue
		}
		if s == base && e == end {
			p.SetStamp(r.Stamp)
			return
		}
		p.SetSectorStamps(int(s-base), int(e-s), r.Stamp)
	}
}

// Writepages writes the inode's dirty pages (writeback.Writepager): the
// lock rule of the policy (f2fs's writepages mutex), one plug across the
// page loop, allocation per the filesystem's allocator, and bios of
// physically contiguous pages up to BioMax.
func (fs *FS) Writepages(t *sim.Task, ino writeback.Inode, wbc *writeback.Control) error {
	f := ino.(*File)
	b := fs.buf
	decision := b.wb.BeginWritepages(f, wbc)
	defer b.wb.EndWritepages(f, wbc)
	if decision == writeback.LockSkip {
		return nil
	}
	locked := decision == writeback.LockSerialize && b.opt.WritepagesMutex
	if locked {
		b.wpMu.Lock(t)
	}
	plug := fs.q.StartPlug(t, IssuerOf(t))
	var own *pageBio // AllocDelayed: this call's bio
	from, to := int64(0), int64(pagecache.MaxIndex)
	if wbc.RangeCyclic {
		from = f.wbIndex
	} else if wbc.RangeEnd != writeback.RangeWhole {
		from, to = wbc.RangeStart/pagecache.PageSize, wbc.RangeEnd/pagecache.PageSize+1
	} else {
		from = wbc.RangeStart / pagecache.PageSize
	}
	tag := pagecache.TagDirty
	// wbc_to_write_flags: WB_SYNC_ALL writeback is REQ_SYNC, which a
	// scheduler serves as the caller's sync IO, and which f2fs's merged
	// bio does not mix with other flags.
	sync := wbc.SyncMode == writeback.SyncAll
	if sync {
		b.cache.TagForWriteback(f.ino(), from, to)
		tag = pagecache.TagToWrite
	}
	var batch []*pagecache.Page
	last := from
	pass := func(from, to int64) bool {
		stop := false
		last = from // done_index starts at each pass's first index
		batch = batch[:0]
		b.cache.RangeTagged(f.ino(), from, to, tag, func(p *pagecache.Page) bool {
			batch = append(batch, p)
			return len(batch) < 64
		})
		for len(batch) > 0 && !stop {
			for _, p := range batch {
				// f2fs also gives a priority to WB_SYNC threads: the
				// flusher stops while an fsync is writing.
				if wbc.SyncMode == writeback.SyncNone && (wbc.NrToWrite <= 0 || b.wb.YieldToSync(wbc)) {
					stop = true
					break
				}
				b.lockPage(t, p)
				if !p.Resident() || !p.IsDirty() {
					b.unlockPage(p)
					continue
				}
				if p.IsWriteback() {
					if wbc.SyncMode == writeback.SyncNone {
						b.unlockPage(p)
						continue
					}
					b.unlockPage(p)
					// f2fs_wait_on_page_writeback: first send out a
					// cached merged bio that may hold this inode's
					// pages (ours included), then wait for this page
					// alone; waiting for the whole file here would wait
					// on pages this call has queued but not submitted.
					if b.shared != nil && b.shared.hasFile(f) {
						plug.Submit(&b.shared.bio)
						b.shared = nil
					}
					if own != nil && own.hasPage(p) {
						plug.Submit(&own.bio)
						own = nil
					}
					for p.IsWriteback() {
						f.wbWait.Wait(t)
					}
					b.lockPage(t, p)
					if !p.Resident() || !p.IsDirty() || p.IsWriteback() {
						b.unlockPage(p)
						continue
					}
				}
				t.CPU(b.opt.WritePage)
				p.ClearDirtyForIO()
				b.wb.AccountCleaned(1)
				blk := fs.allocBlock(t, f, p.Index())
				p.SetWriteback()
				b.wb.AccountWriteback(1)
				f.wbStarted++
				b.unlockPage(p)
				if b.opt.Alloc == AllocLog {
					fs.logAppend(plug, f, p, blk, sync)
				} else {
					own = fs.appendPage(plug, own, f, p, blk, sync) // ext4's mpage bio, this call's own
				}
				wbc.NrToWrite--
				last = p.Index() + 1
			}
			if stop {
				break
			}
			// Continue past every page of this batch, written or
			// skipped (a skipped page keeps its tag and must not be
			// found again).
			next := batch[len(batch)-1].Index() + 1
			batch = batch[:0]
			b.cache.RangeTagged(f.ino(), next, to, tag, func(p *pagecache.Page) bool {
				batch = append(batch, p)
				return len(batch) < 64
			})
		}
		return stop
	}
	stopped := pass(from, to)
	if wbc.RangeCyclic && !stopped && from > 0 {
		stopped = pass(0, from)
	}
	if wbc.RangeCyclic {
		f.wbIndex = last
		if !stopped {
			f.wbIndex = 0
		}
	}
	if own != nil {
		plug.Submit(&own.bio)
	}
	if b.shared != nil && b.shared.hasFile(f) {
		// f2fs_submit_merged_write_cond: the merged bio holding this
		// inode's pages goes out when its writepages ends.
		plug.Submit(&b.shared.bio)
		b.shared = nil
	}
	plug.Finish()
	if locked {
		b.wpMu.Unlock(t)
	}
	return nil
}

// allocBlock returns the block page idx of f is written to, allocating it
// per the filesystem's allocator.
func (fs *FS) allocBlock(t *sim.Task, f *File, idx int64) int64 {
	b := fs.buf
	capBlocks := fs.q.Device().Capacity() / BlockSize
	old := f.block(idx)
	if b.opt.Alloc == AllocLog && old >= 0 && f.needIPU {
		// f2fs's in-place update: the page goes back to its block, its
		// node unchanged.
		return old
	}
	if b.opt.Alloc == AllocLog {
		// Out-of-place: every write takes the next block of the warm data
		// log's current segment, under the log's mutex; the block it
		// replaces becomes invalid. At the device's end the log reuses
		// invalid blocks, as f2fs's slack space recycling does when no
		// free segment is left (its cleaning is not modelled).
		b.cursegMu.Lock(t)
		// The old block is invalid before the new one is chosen: on a
		// device whose every block holds valid data an overwrite reuses
		// it rather than run the log past the device's end.
		if old >= 0 {
			fs.freed = append(fs.freed, old)
		} else {
			fs.takeReserved()
		}
		blk := fs.logBlock(&b.dataLog, &b.nodeLog)
		b.cursegMu.Unlock(t)
		f.setBlock(idx, blk)
		f.dirtyNodes(idx)
		return blk
	}
	if old >= 0 {
		if idx < int64(len(f.unwritten)) && f.unwritten[idx] {
			// An unwritten block gets its data: its extent is
			// converted to written (at the IO's end in the kernel).
			f.unwritten[idx] = false
			fs.journal.allocated(f, old, true)
		}
		return old // overwrite in place
	}
	fs.takeReserved()
	// The next free block of the file's window: blocks are handed out in
	// order, so a file written back in index order is contiguous, and
	// every block below winNext is taken (the block after the previous
	// page's may belong to another page, or lie past the window).
	if f.winNext >= f.winEnd {
		win := b.opt.AllocWindow / BlockSize
		start := fs.bumpStart()
		if j := fs.journal; j != nil && start < j.start {
			// A window ends where the journal starts.
			win = min(win, j.start-start)
		}
		if start >= capBlocks {
			// The device is carved into windows: the reservation made
			// room, in the unused end of another file's window.
			if blk, ok := fs.stealWindowBlock(); ok {
				f.setBlock(idx, blk)
				fs.journal.allocated(f, blk, false)
				return blk
			}
		}
		f.winNext, f.winEnd = start, min(start+win, max(capBlocks, start+1))
		fs.next = f.winEnd * BlockSize
	}
	blk := f.winNext
	f.winNext++
	f.setBlock(idx, blk)
	fs.journal.allocated(f, blk, false)
	return blk
}

// reserveBlock reserves a block for a page dirtied without one (the
// kernel's delayed-allocation reservation at write_begin), or reports
// that the device has none left: every block is allocated or reserved.
func (fs *FS) reserveBlock() bool {
	if fs.allocated+fs.reserved >= fs.q.Device().Capacity()/BlockSize {
		return false
	}
	fs.reserved++
	return true
}

// takeReserved turns a page's reservation into an allocated block.
func (fs *FS) takeReserved() {
	fs.reserved = max(fs.reserved-1, 0)
	fs.allocated++
}

// stealWindowBlock takes the last unused block of the first file (in
// creation order) whose delayed-allocation window has one left.
func (fs *FS) stealWindowBlock() (int64, bool) {
	for _, o := range fs.order {
		if o.winNext < o.winEnd {
			o.winEnd--
			return o.winEnd, true
		}
	}
	return 0, false
}

// appendPage adds page p, written to block blk, to the write bio pb,
// submitting pb first when blk does not follow its last block, it is
// full, or its sync flag is not sync (f2fs merges a page only into a bio
// of the same op flags), and returns the bio the page went into.
func (fs *FS) appendPage(plug *blockdev.Plug, pb *pageBio, f *File, p *pagecache.Page, blk int64, sync bool) *pageBio {
	if pb != nil && (!pb.contiguous(blk) || pb.bytes()+pagecache.PageSize > fs.buf.opt.BioMax || pb.bio.Sync != sync) {
		plug.Submit(&pb.bio)
		pb = nil
	}
	if pb == nil {
		pb = fs.buf.newPageBio(blockdev.OpWrite)
		pb.bio.Sync = sync
		pb.bio.NoIdle = sync // REQ_SYNC without REQ_IDLE
	}
	pb.stampWrite(p, blk)
	pb.add(p, blk)
	pb.addFile(f)
	return pb
}

// logAppend adds a page to the filesystem-wide merged write bio (f2fs's
// sbi->write_io[DATA]): appended whenever its block follows the last one,
// whichever inode it belongs to; a full bio goes out at once.
func (fs *FS) logAppend(plug *blockdev.Plug, f *File, p *pagecache.Page, blk int64, sync bool) {
	b := fs.buf
	b.shared = fs.appendPage(plug, b.shared, f, p, blk, sync)
	if b.shared.bytes() >= b.opt.BioMax {
		plug.Submit(&b.shared.bio)
		b.shared = nil
	}
}

// stampWrite appends the stamps of page p, about to be added at block blk,
// to the write bio's runs.
func (pb *pageBio) stampWrite(p *pagecache.Page, blk int64) {
	base := blk * pagecache.SectorsPerPage
	for i := 0; i < pagecache.SectorsPerPage; {
		st := p.SectorStamp(i)
		n := 1
		if p.UniformStamp() {
			n = pagecache.SectorsPerPage
		}
		runs := pb.bio.WriteRuns
		if k := len(runs) - 1; k >= 0 && runs[k].Stamp == st && runs[k].Sector+runs[k].Sectors == base+int64(i) {
			runs[k].Sectors += int64(n)
		} else {
			pb.bio.WriteRuns = append(runs, blockdev.StampRun{Sector: base + int64(i), Sectors: int64(n), Stamp: st})
		}
		i += n
	}
}

func (pb *pageBio) addFile(f *File) {
	for _, g := range pb.files {
		if g == f {
			return
		}
	}
	pb.files = append(pb.files, f)
}

func (pb *pageBio) hasPage(p *pagecache.Page) bool {
	for _, q := range pb.pages {
		if q == p {
			return true
		}
	}
	return false
}

func (pb *pageBio) hasFile(f *File) bool {
	for _, g := range pb.files {
		if g == f {
			return true
		}
	}
	return false
}

// WaitOnWriteback blocks t until none of ino's pages is under writeback
// (writeback.Waiter; it waits for the whole file).
func (fs *FS) WaitOnWriteback(t *sim.Task, ino writeback.Inode, start, end int64) {
	ino.(*File).waitWriteback(t)
}

func (f *File) waitWriteback(t *sim.Task) {
	for f.fs.buf.cache.InodeWritebackPages(f.ino()) > 0 {
		f.wbWait.Wait(t)
	}
}

// waitWritebackStarted blocks t until as many of f's page writebacks have
// ended as had started when it was called: the pages under writeback
// then, not those a writer keeps adding (completions taken in order).
func (f *File) waitWritebackStarted(t *sim.Task) {
	target := f.wbStarted
	for f.wbEnded < target && f.fs.buf.cache.InodeWritebackPages(f.ino()) > 0 {
		f.wbWait.Wait(t)
	}
}

// Fsync writes back the file's dirty pages and waits for them
// (WB_SYNC_ALL), then on an AllocLog filesystem writes its dirty direct
// nodes and waits for those, then flushes the device's volatile write
// cache if it has one (an empty REQ_PREFLUSH write), as fsync and
// fdatasync do, through the File's own open file description (see
// Handle.Fsync). If a writeback of the file failed
// since this description last looked (the flusher's, or this call's), it
// returns that error (EIO, ENOSPC ...: file_check_and_advance_wb_err),
// once: the next Fsync returns nil unless a new writeback error occurs.
func (f *File) Fsync(t *sim.Task) error { return f.fsync(t, &f.wbSince, false) }

// Fdatasync is Fsync for fdatasync, which on other filesystems does the
// same here. On an AllocLog filesystem (f2fs, whose default ipu_policy
// is F2FS_IPU_FSYNC) fdatasync, and fsync when the file has at most
// f2fsMinFsyncBlocks dirty pages, rewrites dirty pages that already have
// a block in place (FI_NEED_IPU) instead of at the log's head, so their
// direct nodes do not change; fdatasync writes the inode block only when
// the file's size changed since its last sync.
func (f *File) Fdatasync(t *sim.Task) error { return f.fsync(t, &f.wbSince, true) }

// fsync is file_write_and_wait_range, f2fs's node writes, the cache
// flush and the errseq check for the open file description whose sample
// is since; datasync for fdatasync.
func (f *File) fsync(t *sim.Task, since *errSeq, datasync bool) error {
	if f.fs.buf == nil {
		// Direct IO only: nothing cached to write, but the journal and
		// the device's cache all the same.
		return f.syncMeta(t, datasync, nil)
	}
	c := &f.fs.opt.Costs
	t.CPU(c.Syscall / 2)
	defer t.Charge(c.Syscall - c.Syscall/2)
	if f.fs.tracksNodes() {
		// f2fs_do_sync_file: FI_NEED_IPU for the writeback it starts.
		f.needIPU = datasync || f.DirtyPages() <= f2fsMinFsyncBlocks
	}
	err := f.fs.buf.wb.Sync(t, f, writeback.SyncAll)
	f.needIPU = false
	if errno := f.wbErr.checkAndAdvance(since); errno != 0 {
		// file_write_and_wait_range failed: ext4_sync_file,
		// xfs_file_fsync and f2fs_do_sync_file return at once, with
		// no node writes, commit or cache flush.
		return fmt.Errorf("%s fsync: writeback failed: %w", f.name, errno)
	}
	if f.fs.tracksNodes() {
		f.syncNodes(t, datasync)
	}
	return f.syncMeta(t, datasync, err)
}

// syncMeta is fsync's end once the data is on the device: the journal
// commit of the file's last change if it is not on disk yet, and a
// cache flush unless that commit's flush covered the data. err is the
// error so far, returned unless it is nil.
func (f *File) syncMeta(t *sim.Task, datasync bool, err error) error {
	if j := f.fs.journal; j != nil {
		flushed, jerr := j.commitFor(t, f, datasync)
		if jerr != nil {
			if err == nil {
				err = fmt.Errorf("%s fsync: %w", f.name, jerr)
			}
			return err
		}
		if flushed {
			return err
		}
	}
	if ferr := f.fs.flushCache(t); ferr != nil && err == nil {
		err = fmt.Errorf("%s fsync: cache flush failed: %w", f.name, ferr)
	}
	return err
}

// Invalidate drops the file's clean, unlocked pages from the page cache
// (posix_fadvise POSIX_FADV_DONTNEED, as fio's invalidate=1 does before a
// job starts); dirty pages and pages under IO stay. It returns how many
// pages it dropped.
func (f *File) Invalidate() int {
	b := f.fs.buf
	if b == nil {
		return 0
	}
	var drop []*pagecache.Page
	b.cache.Range(f.ino(), 0, pagecache.MaxIndex, func(p *pagecache.Page) bool {
		if !p.IsDirty() && !p.IsWriteback() && !p.IsLocked() {
			drop = append(drop, p)
		}
		return true
	})
	for _, p := range drop {
		p.Lock()
		b.cache.Remove(p)
		p.Unlock()
	}
	f.ra = pagecache.NewRAState()
	return len(drop)
}

// LayOut gives a new buffered file n bytes (rounded up to the block
// size) of blocks in one run, as fio leaves a file it lays out for a job
// that reads it (it writes the file whole and fsyncs it before the job
// starts), and leaves its pages in the page cache, clean and uptodate, as
// those writes do (the oldest evicted first when the cache is full): a
// job that keeps them (invalidate=0) reads from the cache, one that drops
// them reads from the device. The layout's own writes are not simulated
// (the blocks hold no stamps, as a preallocated direct-IO file's). It
// fails as Open does if the blocks do not fit, with EINVAL once an
// AllocLog filesystem has allocated from its log, and with EEXIST if the
// file already has blocks.
func (f *File) LayOut(n int64) error {
	blocks, err := f.placeRun(n, "laying out")
	if err != nil {
		return err
	}
	fs := f.fs
	if fs.tracksNodes() {
		// Its nodes were written with it (where is not modelled) and
		// are clean.
		for k := range nodeIndex(blocks-1) + 1 {
			f.createNode(k)
			n := &f.nodes[k]
			if n.reserved {
				n.reserved = false
				fs.takeReserved()
			}
			n.dirty = false
		}
	}
	for i := range blocks {
		p, err := fs.buf.cache.Add(f.ino(), i)
		if err != nil {
			break // every page is pinned: the rest is not cached
		}
		p.SetUptodate()
		p.Unlock()
	}
	return nil
}

// Preallocate gives a new buffered file n bytes (rounded up to the block
// size), as fio's fallocate=native (the default) does before a job that
// writes it: on ext4 and xfs the blocks of one run, unwritten (read as
// zeros, without a device read, until written), so that writeback writes
// into them instead of allocating; no page is cached. On an AllocLog
// filesystem it only sizes the file: f2fs's fallocate reserves blocks
// without placing them, which its write-time reservation stands for
// here. It fails as LayOut does.
func (f *File) Preallocate(n int64) error {
	if f.fs.tracksNodes() {
		if n <= 0 {
			return fmt.Errorf("fsmodel: %q: size must be positive: %w", f.name, syscall.EINVAL)
		}
		f.Extend(n)
		return nil
	}
	blocks, err := f.placeRun(n, "preallocating")
	if err != nil {
		return err
	}
	f.unwritten = make([]bool, blocks)
	for i := range f.unwritten {
		f.unwritten[i] = true
	}
	return nil
}

// PreallocRoom returns how many bytes a file's preallocation (LayOut,
// Preallocate) could take now: the blocks from the bump pointer to the
// device's end that no allocation or reservation holds.
func (fs *FS) PreallocRoom() int64 {
	capBlocks := fs.q.Device().Capacity() / BlockSize
	return max(min(fs.bumpRoom(), capBlocks-fs.allocated-fs.reserved), 0) * BlockSize
}

// placeRun gives a new buffered file n bytes of blocks in one run at the
// bump pointer and sizes it, checking the space (and on AllocLog the
// nodes' space); what names the caller's act in errors. It returns the
// number of blocks.
func (f *File) placeRun(n int64, what string) (int64, error) {
	fs := f.fs
	if n <= 0 {
		return 0, fmt.Errorf("fsmodel: %q: size must be positive: %w", f.name, syscall.EINVAL)
	}
	if len(f.blocks) > 0 {
		return 0, fmt.Errorf("fsmodel: %q already has blocks: %w", f.name, syscall.EEXIST)
	}
	if fs.buf.logStarted() {
		return 0, fmt.Errorf("fsmodel: %q: %s a file once the log-structured allocator has started is not modelled: %w", f.name, what, syscall.EINVAL)
	}
	blocks := (n + BlockSize - 1) / BlockSize
	capBlocks := fs.q.Device().Capacity() / BlockSize
	if free := min(fs.bumpRoom(), capBlocks-fs.allocated-fs.reserved); blocks > free {
		return 0, fmt.Errorf("%w: %q needs %d bytes, %d free", ErrNoSpace, f.name, blocks*BlockSize, max(free, 0)*BlockSize)
	}
	nodes := 0
	if fs.tracksNodes() {
		nodes = nodeIndex(blocks-1) + 1 - len(f.nodes)
	}
	if free := capBlocks - fs.allocated - fs.reserved - blocks; int64(nodes) > free {
		return 0, fmt.Errorf("%w: %q needs %d bytes for its nodes, %d free", ErrNoSpace, f.name, int64(nodes)*BlockSize, max(free, 0)*BlockSize)
	}
	fs.takeRun(blocks, func(block, off, length int64) {
		for i := range length {
			f.setBlock(off+i, block+i)
		}
	})
	fs.allocated += blocks
	f.Extend(n)
	return blocks, nil
}

// dataBlock is the block page idx reads its data from: -1 for a hole or
// an unwritten preallocated block, which read as zeros.
func (f *File) dataBlock(idx int64) int64 {
	if idx >= 0 && idx < int64(len(f.unwritten)) && f.unwritten[idx] {
		return -1
	}
	return f.block(idx)
}

// Extend sets the size of a buffered file to at least n bytes without
// allocating blocks (the new range reads as zeros until written), as fio
// sizes a file it is about to write.
func (f *File) Extend(n int64) {
	if n > f.inode.size {
		f.inode.size = n
	}
}

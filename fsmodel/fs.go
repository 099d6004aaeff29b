package fsmodel

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/pagecache"
	"github.com/blksim/blksim/sim"
)

// BlockSize is the filesystem block size (allocation and alignment unit
// of "aligned" IO for the lock policies).
const BlockSize = 4096

// Errors of the filesystem layer; they match kernel errnos with errors.Is.
var (
	// ErrNoSpace means the device has no room for a file (ENOSPC).
	ErrNoSpace = fmt.Errorf("fsmodel: %w", syscall.ENOSPC)
	// ErrBeyondEOF is an IO that ends beyond a preallocated file (EINVAL
	// in this model, which does not extend files on direct IO).
	ErrBeyondEOF = fmt.Errorf("fsmodel: IO beyond end of file: %w", syscall.EINVAL)
	// ErrExists is returned when creating a file that exists with another
	// size.
	ErrExists = errors.New("fsmodel: file exists with a different size")
)

// Options configure a filesystem.
type Options struct {
	// Policy decides inode lock spans.
	Policy LockPolicy
	// Lock configures every inode's i_rwsem.
	Lock sim.RWSemOptions
	// Costs are the CPU costs of the IO paths.
	Costs Costs
	// Name prefixes lock names ("ext4").
	Name string
	// Journal is the metadata journal (none by default).
	Journal JournalOptions
}

// FS is a filesystem on one request queue. Files are preallocated and
// written (as fio lays them out) when first opened.
type FS struct {
	e    *sim.Engine
	q    *blockdev.Queue
	opt  Options
	next int64 // next free device byte (bump allocator)

	// Space, in blocks: those holding data (allocated: preallocated
	// files' extents, buffered pages' blocks) and those promised to
	// dirty pages that have none yet (reserved, the kernel's delayed
	// allocation reservation); their sum never exceeds the device, so a
	// buffered write that would need more fails with ENOSPC. freed are
	// blocks an out-of-place write (AllocLog) left invalid, for reuse.
	allocated, reserved int64
	freed               []int64

	files map[string]*File
	dios  []*dio
	buf   *buffered // buffered IO, when enabled
	dax   *daxState // DAX, when mounted with it
	order []*File   // files in creation order

	// batches are the tasks' open submission batches (StartBatch);
	// freeBatches are finished ones kept for reuse.
	batches     []*Batch
	freeBatches []*Batch

	// journal is the metadata journal (nil: none); its blocks count as
	// allocated, and the bump allocator steps over them.
	journal *journal
	// inums is the last inode number given (File.inum).
	inums int64
}

// New returns an empty filesystem on q.
func New(e *sim.Engine, q *blockdev.Queue, opt Options) (*FS, error) {
	if opt.Policy == nil {
		return nil, errors.New("fsmodel: a lock policy is required")
	}
	if opt.Name == "" {
		opt.Name = "fs"
	}
	fs := &FS{e: e, q: q, opt: opt, files: make(map[string]*File)}
	j, err := newJournal(fs, opt.Journal)
	if err != nil {
		return nil, err
	}
	if j != nil {
		fs.journal = j
		fs.allocated = j.size
	}
	return fs, nil
}

// DataCapacity returns the bytes files may hold: the device's capacity
// less the journal.
func (fs *FS) DataCapacity() int64 {
	c := fs.q.Device().Capacity()
	if fs.journal != nil {
		c -= fs.journal.size * BlockSize
	}
	return c
}

// JournalStats returns the journal's counters (zero without a journal).
func (fs *FS) JournalStats() JournalStats {
	if fs.journal == nil {
		return JournalStats{}
	}
	return fs.journal.stats
}

// bumpStart is the bump allocator's next block: the pointer rounded up
// to a block, past the journal if it points into it.
func (fs *FS) bumpStart() int64 {
	start := (fs.next + BlockSize - 1) / BlockSize
	if fs.journal.inJournal(start) {
		start = fs.journal.start + fs.journal.size
	}
	return start
}

// bumpRoom is how many blocks the bump allocator can still hand out:
// those from its pointer to the device's end, less the journal's.
func (fs *FS) bumpRoom() int64 {
	start := fs.bumpStart()
	room := fs.q.Device().Capacity()/BlockSize - start
	if j := fs.journal; j != nil && start < j.start {
		room -= j.size
	}
	return max(room, 0)
}

// takeRun takes n blocks (at most bumpRoom) at the bump pointer and moves
// it on: one run, or two around the journal. fn gets each run's first
// block, its offset in the n blocks and its length.
func (fs *FS) takeRun(n int64, fn func(block, off, length int64)) {
	start, off := fs.bumpStart(), int64(0)
	if j := fs.journal; j != nil && start < j.start && start+n > j.start {
		first := j.start - start
		fn(start, 0, first)
		start, off = j.start+j.size, first
	}
	fn(start, off, n-off)
	fs.next = (start + n - off) * BlockSize
}

// Files returns the files in the order they were created.
func (fs *FS) Files() []*File { return fs.order }

// Layout returns the file's extents on the device: for a preallocated
// (direct IO) file its extent map, for a buffered file its allocated
// blocks, physically contiguous runs merged.
func (f *File) Layout() []Extent {
	if f.fs.buf != nil && f.id != 0 {
		return f.BlockExtents()
	}
	return f.ext.Extents()
}

// Policy returns the filesystem's lock policy.
func (fs *FS) Policy() LockPolicy { return fs.opt.Policy }

// Queue returns the request queue the filesystem sits on.
func (fs *FS) Queue() *blockdev.Queue { return fs.q }

// Costs returns the CPU costs of the filesystem's IO paths, for callers
// that model the system calls around DirectAIO (io_submit, io_getevents).
func (fs *FS) Costs() Costs { return fs.opt.Costs }

// Inode is a file's in-memory inode: its size and its lock.
type Inode struct {
	// Lock is i_rwsem.
	Lock *sim.RWSem
	size int64
	// dioCount is the number of direct IOs in flight (inode_dio_begin).
	dioCount int
	// ilock is the second inode lock of a DAX filesystem that has one
	// (xfs's ILOCK), created on first use.
	ilock *sim.RWSem
	// mtimeTick and atimeTick are the coarse-clock ticks of the last
	// modification and access time updates (DAX paths).
	mtimeTick, atimeTick int64
}

// File is an open file: an inode and its extent map.
type File struct {
	fs    *FS
	name  string
	inode *Inode
	ext   ExtentMap

	// Buffered IO state.
	id              uint64
	blocks          []int64 // block per page, -1 if none
	unwritten       []bool  // per page: its preallocated block holds no data yet
	ra              pagecache.RAState
	wbWait          sim.WaitQueue
	wbIndex         int64 // writeback_index for range_cyclic
	winNext, winEnd int64 // AllocDelayed window (blocks)
	// wbErr is the mapping's writeback error (mapping->wb_err), set when
	// a writeback bio of the file fails; wbSince is the File's own file
	// description's sample of it (f_wb_err), for File.Fsync.
	wbErr, wbSince errSeq
	// nodes are the file's f2fs direct nodes (AllocLog), the inode first;
	// inodeChanged and sizeChanged say whether a write changed its times
	// or size since the last sync wrote the inode block, needIPU that an
	// fsync's writeback updates blocks in place.
	nodes                              []f2fsNode
	inodeChanged, sizeChanged, needIPU bool
	// extents counts the runs of physically contiguous pages in blocks;
	// syncTid and datasyncTid are the journal transactions of the last
	// change fsync and fdatasync must have on disk (ext4's i_sync_tid
	// and i_datasync_tid).
	extents              int64
	syncTid, datasyncTid uint64
	// inum is the file's inode number, in creation order from 1, for
	// every file (id is set for buffered files only).
	inum int64
	// wbStarted and wbEnded count the file's pages set under writeback
	// and those whose writeback ended.
	wbStarted, wbEnded int64
}

// Open returns the file called name, creating it preallocated with size
// bytes (rounded up to the block size) in one extent if it does not exist.
// Opening an existing file with a larger size fails with ErrExists; a new
// one that does not fit beside the space already allocated or promised to
// buffered writes fails with ErrNoSpace, and one created once an AllocLog
// filesystem has allocated from its log fails with EINVAL.
func (fs *FS) Open(name string, size int64) (*File, error) {
	if f, ok := fs.files[name]; ok {
		if size > f.inode.size {
			return nil, fmt.Errorf("%w: %q has %d bytes, %d requested", ErrExists, name, f.inode.size, size)
		}
		return f, nil
	}
	if size <= 0 {
		return nil, fmt.Errorf("fsmodel: %q: size must be positive: %w", name, syscall.EINVAL)
	}
	alloc := (size + BlockSize - 1) / BlockSize * BlockSize
	if room := fs.bumpRoom() * BlockSize; alloc > room {
		return nil, fmt.Errorf("%w: %q needs %d bytes, %d free", ErrNoSpace, name, alloc, room)
	}
	if free := fs.q.Device().Capacity()/BlockSize - fs.allocated - fs.reserved; alloc/BlockSize > free {
		// Buffered writes hold reservations the bump pointer has not
		// reached yet.
		return nil, fmt.Errorf("%w: %q needs %d bytes, %d free", ErrNoSpace, name, alloc, free*BlockSize)
	}
	if fs.buf != nil && fs.buf.logStarted() {
		// f2fs's log runs on from the bump pointer: an extent placed
		// there now would be written over.
		return nil, fmt.Errorf("fsmodel: %q: preallocating a file once the log-structured allocator has started is not modelled: %w", name, syscall.EINVAL)
	}
	f := &File{fs: fs, name: name, inode: &Inode{
		Lock: sim.NewRWSem(fs.e, fs.opt.Name+":i_rwsem:"+name, fs.opt.Lock),
		size: size,
	}}
	var err error
	fs.takeRun(alloc/BlockSize, func(block, off, length int64) {
		if err == nil {
			err = f.ext.Add(Extent{Logical: off * BlockSize, Physical: block * BlockSize, Length: length * BlockSize})
		}
	})
	if err != nil {
		return nil, err
	}
	fs.allocated += alloc / BlockSize
	fs.inums++
	f.inum = fs.inums
	fs.files[name] = f
	fs.order = append(fs.order, f)
	return f, nil
}

// Name returns the file's name.
func (f *File) Name() string { return f.name }

// Size returns the file's size in bytes.
func (f *File) Size() int64 { return f.inode.size }

// Inode returns the file's inode.
func (f *File) Inode() *Inode { return f.inode }

// Extents returns the file's extent map.
func (f *File) Extents() *ExtentMap { return &f.ext }

// dio is one direct IO in flight: it counts its bios down and completes.
type dio struct {
	done      sim.Completion
	remaining int
	err       error
	bios      []*blockdev.Bio
	used      int
	collect   bool
	// aio is the asynchronous IO this dio belongs to (nil for a
	// synchronous one, which completes done instead).
	aio *IOCB
}

// EndBio accounts one finished bio.
func (d *dio) EndBio(b *blockdev.Bio) {
	if b.Err != nil && d.err == nil {
		d.err = b.Err
	}
	d.remaining--
	if d.remaining == 0 {
		if d.aio != nil {
			d.aio.complete()
			return
		}
		d.done.Complete()
	}
}

func (fs *FS) getDIO() *dio {
	if n := len(fs.dios); n > 0 {
		d := fs.dios[n-1]
		fs.dios = fs.dios[:n-1]
		return d
	}
	return &dio{}
}

func (fs *FS) putDIO(d *dio) {
	d.done.Reinit()
	d.err = nil
	d.used = 0
	fs.dios = append(fs.dios, d)
}

// DirectRead reads [off, off+n) with O_DIRECT semantics on behalf of t,
// blocking t for the whole call (syscall costs included). If data is not
// nil, the stamps read are appended to *data in file order (collecting
// them costs simulator time, not simulated time). Misaligned IO fails with
// an error matching syscall.EINVAL, naming the offset and alignment.
func (f *File) DirectRead(t *sim.Task, off, n int64, data *[]blockdev.StampRun) error {
	if f.fs.dax != nil {
		return f.daxSyscall(t, blockdev.OpRead, off, n, blockdev.Stamp{}, data)
	}
	return f.direct(t, blockdev.OpRead, off, n, blockdev.Stamp{}, data)
}

// DirectWrite writes [off, off+n) with O_DIRECT semantics on behalf of t,
// stamping the sectors with s.
func (f *File) DirectWrite(t *sim.Task, off, n int64, s blockdev.Stamp) error {
	if f.fs.dax != nil {
		return f.daxSyscall(t, blockdev.OpWrite, off, n, s, nil)
	}
	return f.direct(t, blockdev.OpWrite, off, n, s, nil)
}

// checkDirect validates a direct IO (alignment, end of file) and returns
// the lock span the policy gives it.
func (f *File) checkDirect(op blockdev.Op, off, n int64) (LockSpan, error) {
	if err := f.fs.q.CheckAlignment(off, n); err != nil {
		return 0, fmt.Errorf("%s %s: %w", f.name, op, err)
	}
	// Fix (tests): compare without overflowing off+n (an overflowed sum
	// passed the check, mapped no bios and waited forever).
	if off < 0 || n > f.inode.size-off {
		return 0, fmt.Errorf("%s %s at %d+%d (size %d): %w", f.name, op, off, n, f.inode.size, ErrBeyondEOF)
	}
	io := IORequest{Offset: off, Length: n,
		Aligned:   off%BlockSize == 0 && n%BlockSize == 0,
		Extending: off+n > f.inode.size,
		Cached:    f.fs.buf != nil && f.fs.buf.cache.InodePages(f.ino()) > 0}
	if op == blockdev.OpRead {
		return f.fs.opt.Policy.DIORead(io), nil
	}
	// file_modified: the write changes the inode's times.
	f.fs.journal.touch(f)
	return f.fs.opt.Policy.DIOWrite(io), nil
}

func (f *File) direct(t *sim.Task, op blockdev.Op, off, n int64, s blockdev.Stamp, data *[]blockdev.StampRun) error {
	fs := f.fs
	c := &fs.opt.Costs
	t.CPU(c.Syscall / 2)
	// The exit half runs with the caller's next CPU burst.
	defer t.Charge(c.Syscall - c.Syscall/2)
	span, err := f.checkDirect(op, off, n)
	if err != nil {
		return err
	}
	lock := f.inode.Lock
	d := fs.getDIO()
	defer fs.putDIO(d)

	d.collect = data != nil
	switch span {
	case SpanNone:
		f.inode.dioCount++
		f.submit(t, d, op, off, n, s, nil)
		d.done.Wait(t)
		t.CPU(c.DIOComplete)
		f.inode.dioCount--
	case SpanSharedIO:
		lock.DownRead(t)
		f.submit(t, d, op, off, n, s, nil)
		d.done.Wait(t)
		t.CPU(c.DIOComplete)
		lock.UpRead(t)
	case SpanExclusiveIO:
		lock.DownWrite(t)
		f.submit(t, d, op, off, n, s, nil)
		d.done.Wait(t)
		t.CPU(c.DIOComplete)
		lock.UpWrite(t)
	case SpanExclusiveSubmit:
		lock.DownWrite(t)
		f.submit(t, d, op, off, n, s, nil)
		lock.UpWrite(t)
		d.done.Wait(t)
		t.CPU(c.DIOComplete)
	case SpanExclusiveRelock:
		lock.DownWrite(t)
		f.inode.dioCount++
		f.submit(t, d, op, off, n, s, nil)
		lock.UpWrite(t)
		d.done.Wait(t)
		f.inode.dioCount--
		lock.DownWrite(t)
		t.CPU(c.DIOComplete)
		lock.UpWrite(t)
	default:
		panic(fmt.Sprintf("fsmodel: policy %s returned invalid span %d", fs.opt.Policy.Name(), span))
	}
	if d.err != nil {
		return fmt.Errorf("%s %s at %d+%d: %w", f.name, op, off, n, d.err)
	}
	if data != nil {
		*data = d.stamps(*data)
	}
	return nil
}

// maxBioBytes is the largest direct-IO bio (BIO_MAX_PAGES of 4 KiB).
const maxBioBytes = 256 * 4096

// submit maps [off, off+n) to bios and submits them, charging the setup
// cost to t. The dio's bios are reused across IOs. With plug nil the bios
// go through a plug of their own (blk_start_plug in the direct-IO path);
// otherwise they join plug, the caller's (an outer plug makes the inner
// one a no-op in the kernel).
func (f *File) submit(t *sim.Task, d *dio, op blockdev.Op, off, n int64, s blockdev.Stamp, plug *blockdev.Plug) {
	c := &f.fs.opt.Costs
	pages := (n + 4095) / 4096
	used := 0
	f.ext.Map(off, n, func(_, phys, length int64) {
		for length > 0 {
			l := min(length, maxBioBytes)
			if used == len(d.bios) {
				d.bios = append(d.bios, &blockdev.Bio{})
			}
			b := d.bios[used]
			used++
			b.Reset()
			b.Op, b.Sector, b.Bytes, b.Stamp, b.End = op, phys/blockdev.SectorSize, l, s, d
			b.CollectData = d.collect
			phys += l
			length -= l
		}
	})
	d.remaining = used
	t.CPU(c.DIOSetup + c.DIOPerPage*time.Duration(pages) + c.BioSubmit*time.Duration(used))
	own := plug == nil
	if own {
		plug = f.fs.q.StartPlug(t, IssuerOf(t))
	}
	for _, b := range d.bios[:used] {
		// REQ_SYNC (and REQ_IDLE) on writes only: fs/direct-io.c and
		// iomap give direct reads a bare REQ_OP_READ, so blkparse shows
		// them "R" and direct writes "WS". Reads are synchronous to the
		// schedulers all the same (op_is_sync).
		b.Sync = op == blockdev.OpWrite
		plug.Submit(b)
	}
	if own {
		plug.Finish()
	}
	d.used = used
}

// collect appends the stamps the dio's read bios found, in file order.
func (d *dio) stamps(data []blockdev.StampRun) []blockdev.StampRun {
	for _, b := range d.bios[:d.used] {
		data = append(data, b.Data...)
	}
	return data
}

// IssuerOf describes task t for block-layer traces: its id as the PID and
// the part of its name before the first ':' (at most 15 bytes, as the
// kernel's comm) as the command.
func IssuerOf(t *sim.Task) blockdev.Issuer {
	comm := t.Name()
	if i := strings.IndexByte(comm, ':'); i >= 0 {
		comm = comm[:i]
	}
	if len(comm) > 15 {
		comm = comm[:15]
	}
	return blockdev.Issuer{PID: uint32(t.ID() + 1), Comm: comm, CPU: t.LastCPU()}
}

// flushWait is a flush bio's completion, for the task waiting on it.
type flushWait struct {
	bio  blockdev.Bio
	done sim.Completion
}

func (w *flushWait) EndBio(*blockdev.Bio) { w.done.Complete() }

// flushCache is blkdev_issue_flush, as fsync and fdatasync end: on a
// device with a volatile write cache an empty REQ_PREFLUSH write, waited
// for, so that the data written before is on stable media; nothing
// without one. It returns the flush's error.
func (fs *FS) flushCache(t *sim.Task) error {
	if !fs.q.Limits().VolatileCache {
		return nil
	}
	w := &flushWait{}
	w.bio.Op, w.bio.Flush, w.bio.Sync = blockdev.OpWrite, true, true
	w.bio.Issuer = IssuerOf(t)
	w.bio.End = w
	fs.q.Submit(&w.bio)
	w.done.Wait(t)
	return w.bio.Err
}

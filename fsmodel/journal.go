package fsmodel

import (
	"fmt"
	"syscall"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
)

// JournalKind selects a filesystem's metadata journal.
type JournalKind uint8

// Journal kinds.
const (
	// NoJournal keeps no journal: fsync writes data and flushes the
	// device's cache (ext4 made with -O ^has_journal, f2fs here).
	NoJournal JournalKind = iota
	// JBD2 is ext4's journal: metadata changes join the running
	// transaction; a commit writes a descriptor block and a copy of each
	// changed metadata block (REQ_META|REQ_SYNC), waits for them, then a
	// commit block with REQ_PREFLUSH|REQ_FUA, as jbd2's
	// jbd2_journal_commit_transaction does without async_commit (6.8+
	// flags).
	JBD2
	// XFSLog is xfs's log: changes are logged in memory (the CIL) and a
	// log force writes them as a checkpoint of 32 KiB iclogs
	// (REQ_META|REQ_SYNC), the last, with the commit record, also
	// REQ_PREFLUSH|REQ_FUA.
	XFSLog
)

// String returns "none", "jbd2" or "xfs-log".
func (k JournalKind) String() string {
	switch k {
	case NoJournal:
		return "none"
	case JBD2:
		return "jbd2"
	case XFSLog:
		return "xfs-log"
	}
	return fmt.Sprintf("JournalKind(%d)", uint8(k))
}

// JournalOptions configure the metadata journal (Options.Journal).
type JournalOptions struct {
	// Kind is the journal's kind (NoJournal: none).
	Kind JournalKind
	// Bytes is the journal's size (0: mkfs's default for the device:
	// mke2fs's ext2fs_default_journal_size, mkfs.xfs's fs/2048 with a
	// 64 MiB floor). It lies at the middle of the device, where mke2fs
	// (get_midpoint_journal_block) and mkfs.xfs (the middle AG) put it;
	// file allocation skips it.
	Bytes int64
	// Interval is when a transaction is committed without an fsync
	// asking: jbd2 this long after it starts (ext4's commit=, 5 s); xfs
	// at the log worker's next run, every Interval from the mount
	// (fs.xfs.xfssyncd_centisecs, 30 s). 0: those defaults.
	Interval time.Duration
	// Tick is the coarse clock's period (1/HZ, 0: 4 ms): a write
	// changes the inode's times, and so logs the inode, only in a tick
	// other than its last change's (inode_needs_update_time).
	Tick time.Duration
	// Ordered makes a commit wait for the data of files it allocated
	// blocks for (ext4's data=ordered without dioread_nolock: the
	// inodes on the transaction's ordered list).
	Ordered bool
}

// JournalStats count a journal's work.
type JournalStats struct {
	// Kind is the journal's kind.
	Kind JournalKind
	// Commits are the transactions (checkpoints) written, Blocks the
	// journal blocks they wrote (descriptor, metadata and commit
	// blocks; log record blocks on xfs).
	Commits, Blocks int64
	// Start and Length are the journal's place on the device: its
	// first block and its length in filesystem blocks.
	Start, Length int64
}

// Metadata kinds a transaction holds (jbd2: one block each; xfs: one log
// item each).
const (
	metaInode  = iota // inode table block (xfs: the inode's log item)
	metaBitmap        // block bitmap (xfs: the AGF)
	metaGroup         // group descriptor block (xfs: the free-space btrees)
	metaLeaf          // extent tree leaf (xfs: the bmap btree)
)

// metaKey names one metadata block or log item.
type metaKey struct {
	kind uint8
	n    int64
}

// txn is a running or committing transaction (xfs: a CIL context).
type txn struct {
	tid   uint64
	items map[metaKey]int64 // log bytes per item (xfs), 1 per block (jbd2)
	keys  []metaKey         // in the order they joined
	// ordered are the files whose data the commit waits for.
	ordered []*File
	// flushSent says the commit block (or log record), which carries the
	// cache flush, has been submitted (jbd2's T_COMMIT_JFLUSH passed).
	flushSent bool
}

// journal is a filesystem's journal and its commit task (kjournald2, or
// xfs's CIL push worker).
type journal struct {
	fs    *FS
	opt   JournalOptions
	start int64 // first block
	size  int64 // blocks
	head  int64 // next block to write, from start

	running, committing *txn
	nextTid             uint64
	committed           uint64 // last tid on disk (j_commit_sequence)
	requested           uint64 // highest tid an fsync asked for
	err                 error  // the journal aborted on a write error

	task     *sim.Task
	wake     sim.WaitQueue // the commit task waits here
	done     sim.WaitQueue // fsyncs wait for commits here
	timerGen uint64
	timerOff bool     // SetJournalTimer(false): no commit timer
	mounted  sim.Time // when the filesystem was made (xfs's worker period)
	closed   bool
	stats    JournalStats
	ioWait   sim.Completion
	ioLeft   int
	ioErr    error
}

// ext4JournalSteps is mke2fs's ext2fs_default_journal_size: a filesystem
// of fewer than below 4 KiB blocks gets a journal of blocks (0: none).
var ext4JournalSteps = []struct{ below, blocks int64 }{
	{2048, 0}, {32768, 1024}, {256 << 10, 4096}, {512 << 10, 8192}, {4 << 20, 16384},
	{8 << 20, 32768}, {16 << 20, 65536}, {32 << 20, 131072},
}

// ext4JournalBlocks is the journal's size in blocks for a filesystem of n
// 4 KiB blocks (0: too small for one; at most 1 GiB).
func ext4JournalBlocks(n int64) int64 {
	for _, st := range ext4JournalSteps {
		if n < st.below {
			return st.blocks
		}
	}
	return 262144
}

// xfsLogBlocks is mkfs.xfs's calculate_log_size for n 4 KiB blocks: the
// filesystem over 2048, at least 64 MiB (XFS_MIN_REALISTIC_LOG_BLOCKS),
// at most 2 GiB; on devices below mkfs.xfs's 300 MB minimum, where no
// real log exists, an eighth of the device.
func xfsLogBlocks(n int64) int64 {
	b := min(max(n/2048, 64<<20/BlockSize), 2<<30/BlockSize)
	return min(b, n/8)
}

// newJournal sets up fs's journal, or returns nil for NoJournal (or a
// device too small for one).
func newJournal(fs *FS, opt JournalOptions) (*journal, error) {
	if opt.Kind == NoJournal {
		return nil, nil
	}
	if opt.Kind > XFSLog {
		return nil, fmt.Errorf("fsmodel: unknown journal kind %v: %w", opt.Kind, syscall.EINVAL)
	}
	capBlocks := fs.q.Device().Capacity() / BlockSize
	size := opt.Bytes / BlockSize
	if opt.Bytes == 0 {
		if opt.Kind == JBD2 {
			size = ext4JournalBlocks(capBlocks)
		} else {
			size = xfsLogBlocks(capBlocks)
		}
		if size == 0 {
			return nil, nil
		}
	}
	if size < 8 || size > capBlocks/2 {
		return nil, fmt.Errorf("fsmodel: a %d-byte journal does not fit a %d-byte device (at least 32 KiB, at most half of it): %w",
			opt.Bytes, capBlocks*BlockSize, syscall.EINVAL)
	}
	if opt.Interval <= 0 {
		opt.Interval = 5 * time.Second
		if opt.Kind == XFSLog {
			opt.Interval = 30 * time.Second
		}
	}
	if opt.Tick <= 0 {
		opt.Tick = 4 * time.Millisecond
	}
	// The middle of the device, at a block group (32768 blocks) or, on
	// a small device, a 16-block boundary.
	start := capBlocks / 2
	if capBlocks >= 4*32768 {
		start -= start % 32768
	} else {
		start -= start % 16
	}
	j := &journal{fs: fs, opt: opt, start: start, size: size, nextTid: 1, mounted: fs.e.Now()}
	j.stats.Kind, j.stats.Start, j.stats.Length = opt.Kind, start, size
	name := "jbd2/" + fs.q.Device().Name() + "-8"
	if opt.Kind == XFSLog {
		name = "kworker/xfs-cil/" + fs.q.Device().Name()
	}
	j.task = fs.e.Go(name, j.run)
	j.task.SetDaemon()
	return j, nil
}

// inJournal reports whether block blk lies in the journal.
func (j *journal) inJournal(blk int64) bool {
	return j != nil && blk >= j.start && blk < j.start+j.size
}

// tick is the coarse clock's current tick.
func (j *journal) tick() int64 { return int64(j.fs.e.Now())/int64(j.opt.Tick) + 1 }

// handle returns the running transaction, starting one (and its commit
// timer) if there is none.
func (j *journal) handle() *txn {
	if j.running == nil {
		j.running = &txn{tid: j.nextTid, items: make(map[metaKey]int64)}
		j.nextTid++
		j.armTimer()
	}
	return j.running
}

// armTimer sets the running transaction's commit timer, replacing any:
// jbd2 commits a transaction Interval after it starts (t_expires); xfs's
// log worker runs every Interval from the mount and forces what it finds.
func (j *journal) armTimer() {
	j.timerGen++
	if j.timerOff {
		return
	}
	d := j.opt.Interval
	if j.opt.Kind == XFSLog {
		d -= time.Duration(j.fs.e.Now()-j.mounted) % d
	}
	j.fs.e.AfterDaemon(d, journalTimer{j}, j.timerGen)
}

// SetJournalTimer turns the journal's commit timer on (the default) or
// off. Off, a transaction is committed only when a sync asks: a workload
// runner turns it off once its jobs have ended, so a run ends with them
// (and with their writeback) rather than with a commit that the kernel
// would make after fio has reported; on again, a running transaction's
// timer starts over. Without a journal it does nothing.
func (fs *FS) SetJournalTimer(on bool) {
	j := fs.journal
	if j == nil || j.timerOff == !on {
		return
	}
	j.timerOff = !on
	j.timerGen++
	if on && j.running != nil {
		j.armTimer()
	}
}

// add puts one metadata block (jbd2) or log item of the given size (xfs)
// in the running transaction, once.
func (tx *txn) add(k metaKey, bytes int64) {
	if _, ok := tx.items[k]; ok {
		return
	}
	tx.items[k] = bytes
	tx.keys = append(tx.keys, k)
}

// Log item sizes (xfs): an op header (12 bytes) before each region; the
// inode item's format (56) and core (176, a v3 inode); a buffer item's
// format (about 24 with its dirty map) and one 128-byte dirty chunk; a
// data fork extent record is 16 bytes.
const (
	xlogOpHeader   = 12
	xlogInodeItem  = 2*xlogOpHeader + 56 + 176
	xlogBufferItem = 2*xlogOpHeader + 24 + 128
	xlogExtent     = 16
)

// inodeKey is what logging f's inode changes: on xfs the inode's own log
// item; on ext4 its inode table block, which holds 16 inodes (256 bytes
// each), so files made one after another share it.
func (j *journal) inodeKey(f *File) metaKey {
	if j.opt.Kind == XFSLog {
		return metaKey{metaInode, f.inum}
	}
	return metaKey{metaInode, f.inum / 16}
}

// touch logs f's inode for a time change (file_update_time), at most
// once per tick; fsync (not fdatasync) then has to commit it.
func (j *journal) touch(f *File) {
	if j == nil || j.closed || j.err != nil {
		return
	}
	tick := j.tick()
	if f.inode.mtimeTick == tick {
		return
	}
	f.inode.mtimeTick = tick
	tx := j.handle()
	tx.add(j.inodeKey(f), xlogInodeItem)
	f.syncTid = tx.tid
}

// allocated logs the allocation of block blk to f at writeback (or the
// conversion of its unwritten extent, converted): the inode (size,
// extents), and for an allocation the block bitmap and group
// descriptor (ext4) or the AGF and free-space btrees (xfs); the extent
// tree leaf once the file has more extents than its inode holds. fsync
// and fdatasync both commit it.
func (j *journal) allocated(f *File, blk int64, converted bool) {
	if j == nil || j.closed || j.err != nil {
		return
	}
	tx := j.handle()
	inode := int64(xlogInodeItem + xlogOpHeader + xlogExtent*min(f.extents, 4))
	tx.add(j.inodeKey(f), inode)
	if j.opt.Ordered && (len(tx.ordered) == 0 || tx.ordered[len(tx.ordered)-1] != f) {
		// EXT4_MAP_NEW: the data goes before the commit (conversions
		// of unwritten blocks too).
		tx.ordered = append(tx.ordered, f)
	}
	if !converted {
		group := blk / 32768 // an ext4 block group; xfs AGs hold several
		if j.opt.Kind == XFSLog {
			group = blk / (j.fs.q.Device().Capacity() / BlockSize / 4)
		}
		tx.add(metaKey{metaBitmap, group}, xlogBufferItem)
		if j.opt.Kind == XFSLog {
			tx.add(metaKey{metaGroup, group}, 2*xlogBufferItem) // bnobt and cntbt leaves
		} else {
			tx.add(metaKey{metaGroup, group / 64}, 1) // 64 descriptors per block
		}
	}
	if f.extents > 4 {
		// The leaf holding the file's last extent (about 340 per leaf).
		tx.add(metaKey{metaLeaf, f.inum<<20 | (f.extents-1)/340}, xlogBufferItem)
	}
	f.syncTid, f.datasyncTid = tx.tid, tx.tid
}

// commitFor is what fsync does once the data is written
// (ext4_fsync_journal, xfs_fsync_flush_log): if the transaction holding
// f's last change of the kind it syncs (times count for fsync, not for
// fdatasync) is not on disk, it has it committed and waits. It reports
// whether that commit's cache flush covers the data written before
// (jbd2_trans_will_send_data_barrier: not when the commit had already
// sent its commit block), and the journal's error.
func (j *journal) commitFor(t *sim.Task, f *File, datasync bool) (flushed bool, err error) {
	if j.err != nil {
		// Aborted (jbd2) or shut down (xfs): every sync fails at once.
		return false, j.err
	}
	tid := f.syncTid
	if datasync {
		tid = f.datasyncTid
	}
	if tid <= j.committed || j.closed {
		return false, nil
	}
	flushed = !(j.committing != nil && j.committing.tid == tid && j.committing.flushSent)
	if j.running != nil && j.running.tid == tid && j.requested < tid {
		j.requested = tid
		j.wake.WakeAll()
	}
	for j.committed < tid && !j.closed {
		j.done.Wait(t)
	}
	return flushed, j.err
}

// journalTimer is a transaction's commit timer (jbd2's j_commit_timer,
// xfs's log worker).
type journalTimer struct{ j *journal }

// Void reports whether the timer was replaced or turned off (or the
// journal closed): the engine then drops it.
func (jt journalTimer) Void(gen uint64) bool { return jt.j.timerGen != gen || jt.j.closed }

// Fire wakes the commit task if the transaction it was set for still runs.
func (jt journalTimer) Fire(gen uint64) {
	if jt.j.timerGen == gen && jt.j.running != nil && !jt.j.closed {
		jt.j.requested = max(jt.j.requested, jt.j.running.tid)
		jt.j.wake.WakeAll()
	}
}

// run is the commit task: it commits the running transaction when an
// fsync or its timer asks, one at a time.
func (j *journal) run(t *sim.Task) {
	for !j.closed {
		if j.running == nil || j.requested < j.running.tid {
			j.wake.Wait(t)
			continue
		}
		j.commit(t)
	}
}

// commit writes the running transaction.
func (j *journal) commit(t *sim.Task) {
	tx := j.running
	j.running, j.committing = nil, tx
	if j.err != nil {
		// An aborted journal writes nothing (its handles fail).
		j.committed, j.committing = tx.tid, nil
		j.done.WakeAll()
		return
	}
	for _, f := range tx.ordered {
		// journal_finish_inode_data_buffers: the allocated data first,
		// as far as it is under writeback when the commit starts.
		f.waitWritebackStarted(t)
	}
	var err error
	if j.opt.Kind == JBD2 {
		// A descriptor block tags about 250 blocks (csum v3: 16-byte
		// tags, the UUID after the first, a checksum tail).
		n := int64(len(tx.keys))
		blocks := (n+249)/250 + n
		err = j.write(t, blocks, false)
		if err == nil {
			tx.flushSent = true
			err = j.write(t, 1, true)
		}
		j.stats.Blocks += blocks + 1
	} else {
		var payload int64 = 2 * xlogOpHeader // start and commit records
		for _, k := range tx.keys {
			payload += tx.items[k]
		}
		var blocks int64
		blocks, err = j.writeCheckpoint(t, tx, payload)
		j.stats.Blocks += blocks
	}
	j.stats.Commits++
	if err != nil && j.err == nil {
		// jbd2_journal_abort / xfs_force_shutdown: every later sync fails.
		j.err = fmt.Errorf("journal write failed, journal aborted: %w", err)
	}
	j.committed, j.committing = tx.tid, nil
	j.done.WakeAll()
}

// write writes n journal blocks at the head, one bio per block under a
// plug (they merge where contiguous), or the commit block (commit: one
// block with PREFLUSH and FUA), and waits for them.
func (j *journal) write(t *sim.Task, n int64, commit bool) error {
	j.begin(int(n))
	if commit {
		b := j.bio(j.head, BlockSize)
		b.Flush, b.FUA = true, true
		j.fs.q.Submit(b)
	} else {
		plug := j.fs.q.StartPlug(t, IssuerOf(t))
		for i := range n {
			plug.Submit(j.bio((j.head+i)%j.size, BlockSize))
		}
		plug.Finish()
	}
	j.head = (j.head + n) % j.size
	return j.wait(t)
}

// iclogSize is xfs's in-core log buffer size (logbsize, 32 KiB by
// default): a checkpoint larger than one iclog spans several, each with
// a 512-byte record header.
const iclogSize = 32 << 10

// writeCheckpoint writes an xfs checkpoint of payload bytes as iclogs at
// the log's head, each rounded up to the device's logical block: all but
// the last plain (REQ_META|REQ_SYNC), waited for, then the last, which
// holds the commit record, with REQ_PREFLUSH|REQ_FUA (its flush covers
// the others). It returns the blocks written and the first error.
func (j *journal) writeCheckpoint(t *sim.Task, tx *txn, payload int64) (int64, error) {
	lbs := int64(j.fs.q.Limits().LogicalBlockSize)
	per := int64(iclogSize - 512)
	n := (payload + per - 1) / per
	var blocks int64
	iclog := func(i int64) int64 {
		b := 512 + min(per, payload-i*per)
		b = (b + lbs - 1) / lbs * lbs
		blocks += (b + BlockSize - 1) / BlockSize
		return b
	}
	if n > 1 {
		j.begin(0)
		for i := range n - 1 {
			j.logWrite(iclog(i), false)
		}
		if err := j.wait(t); err != nil {
			return blocks, err
		}
	}
	tx.flushSent = true
	j.begin(0)
	j.logWrite(iclog(n-1), true)
	return blocks, j.wait(t)
}

// logWrite submits one iclog of bytes at the log's head, in two bios
// where it wraps the log's end (commit: the first with the PREFLUSH, the
// last with the FUA), and moves the head past it, to a block boundary.
func (j *journal) logWrite(bytes int64, commit bool) {
	at := j.head * BlockSize
	room := j.size*BlockSize - at
	parts := [][2]int64{{at, min(bytes, room)}}
	if bytes > room {
		parts = append(parts, [2]int64{0, bytes - room})
	}
	for i, p := range parts {
		b := j.bio(p[0]/BlockSize, p[1])
		b.Flush, b.FUA = commit && i == 0, commit && i == len(parts)-1
		j.ioLeft++
		j.fs.q.Submit(b)
	}
	end := (at + bytes) % (j.size * BlockSize)
	j.head = (end + BlockSize - 1) / BlockSize % j.size
}

// begin starts a batch of n journal bios.
func (j *journal) begin(n int) {
	j.ioLeft, j.ioErr = n, nil
	j.ioWait.Reinit()
}

// bio returns a journal write bio of the current batch: bytes at block
// blk of the journal, REQ_META|REQ_SYNC.
func (j *journal) bio(blk, bytes int64) *blockdev.Bio {
	return &blockdev.Bio{Op: blockdev.OpWrite, Sync: true, Meta: true, End: j, Issuer: IssuerOf(j.task),
		Sector: (j.start + blk) * BlockSize / blockdev.SectorSize, Bytes: bytes}
}

// EndBio counts a journal bio done.
func (j *journal) EndBio(b *blockdev.Bio) {
	if b.Err != nil && j.ioErr == nil {
		j.ioErr = b.Err
	}
	j.ioLeft--
	if j.ioLeft == 0 {
		j.ioWait.Complete()
	}
}

// wait waits for the batch and returns its first error.
func (j *journal) wait(t *sim.Task) error {
	if j.ioLeft > 0 {
		j.ioWait.Wait(t)
	}
	return j.ioErr
}

// close stops the commit task: a running transaction stays uncommitted,
// as at an unmount that the model does not simulate.
func (j *journal) close() {
	if j == nil || j.closed {
		return
	}
	j.closed = true
	j.timerGen++
	j.wake.WakeAll()
	j.done.WakeAll()
}

package writeback

import (
	"errors"
	"fmt"

	"github.com/blksim/blksim/sim"
)

// ErrClosed is returned by Sync, SyncRange and SyncFS on a Writeback that
// was closed (or that closed while they waited).
var ErrClosed = errors.New("writeback: closed")

// Options configure New.
type Options struct {
	// Name names the domain (a device, "sda"); the flusher task is called
	// "flush-" + Name. Empty means "wb".
	Name string
	// Limits are the vm.dirty_* settings; the zero value means
	// DefaultLimits().
	Limits Limits
	// Policy decides what each flusher pass writes and the lock rule;
	// nil means Default{}.
	Policy Policy
	// AvailablePages is the dirtyable memory in pages that the ratio
	// limits are shares of (global_dirtyable_memory); it must be
	// positive. SetAvailablePages changes it later.
	AvailablePages int64
	// Writepager is the filesystem's writepages; required.
	Writepager Writepager
	// Waiter waits for writeback IO for Sync and SyncFS; nil means the
	// Writepager, which must then implement Waiter.
	Waiter Waiter
	// InitialBandwidth is the write bandwidth estimate in pages per
	// second before any writeback has completed; 0 means the kernel's
	// INIT_BW, 100 MiB/s (25600 pages/s).
	InitialBandwidth int64
}

// inodeState is an inode on the dirty list (b_dirty).
type inodeState struct {
	ino         Inode
	dirtiedWhen sim.Time
	prev, next  *inodeState
}

// syncWork is a queued SyncFS request (a wb_writeback_work with done).
type syncWork struct {
	done sim.Completion
	err  error
}

// Writeback is one writeback domain: a bdi_writeback with its dirty inode
// list, dirty and writeback page counters, thresholds, flusher task and
// writer throttling. Create one with New.
//
// All methods must be called on the engine goroutine (from tasks,
// handlers, or between Engine.Run calls); those taking a *sim.Task block
// that task and must be called from its own function.
type Writeback struct {
	e         *sim.Engine
	name      string
	limits    Limits
	policy    Policy
	available int64
	wp        Writepager
	waiter    Waiter

	nrDirty, nrWriteback int64
	syncWriters          int

	inodes     map[uint64]*inodeState
	head, tail *inodeState
	nInodes    int
	// written are the inodes writepages has written pages of, in first
	// write order, for SyncFS to wait on.
	written    []Inode
	writtenSet map[uint64]bool

	flusher      *sim.Task
	wq           sim.WaitQueue
	pendingWake  bool
	running      bool
	closed       bool
	timerArmed   bool
	timerGen     uint64
	lastOldFlush sim.Time
	work         []*syncWork

	bw    bandwidth
	stats Stats
}

// New creates a writeback domain on e and starts its flusher task, which
// sleeps until there is work. It returns an error wrapping
// ErrInvalidLimits for bad limits, and an error for missing options.
func New(e *sim.Engine, opt Options) (*Writeback, error) {
	if opt.Limits == (Limits{}) {
		opt.Limits = DefaultLimits()
	}
	if err := opt.Limits.Validate(); err != nil {
		return nil, err
	}
	if opt.AvailablePages <= 0 {
		return nil, fmt.Errorf("writeback: AvailablePages must be positive, not %d", opt.AvailablePages)
	}
	if opt.Writepager == nil {
		return nil, errors.New("writeback: a Writepager is required")
	}
	if opt.Waiter == nil {
		w, ok := opt.Writepager.(Waiter)
		if !ok {
			return nil, errors.New("writeback: no Waiter, and the Writepager does not implement one")
		}
		opt.Waiter = w
	}
	if opt.Policy == nil {
		opt.Policy = Default{}
	}
	if opt.Name == "" {
		opt.Name = "wb"
	}
	if opt.InitialBandwidth <= 0 {
		opt.InitialBandwidth = initBandwidth
	}
	wb := &Writeback{
		e:            e,
		name:         opt.Name,
		limits:       opt.Limits,
		policy:       opt.Policy,
		available:    opt.AvailablePages,
		wp:           opt.Writepager,
		waiter:       opt.Waiter,
		inodes:       make(map[uint64]*inodeState),
		writtenSet:   make(map[uint64]bool),
		lastOldFlush: e.Now(),
	}
	wb.bw.init(opt.InitialBandwidth, e.Now())
	wb.flusher = e.Go("flush-"+opt.Name, wb.flush)
	wb.flusher.SetDaemon()
	return wb, nil
}

// Name returns the domain's name.
func (wb *Writeback) Name() string { return wb.name }

// Limits returns the domain's settings.
func (wb *Writeback) Limits() Limits { return wb.limits }

// Policy returns the domain's policy.
func (wb *Writeback) Policy() Policy { return wb.policy }

// Flusher returns the flusher task.
func (wb *Writeback) Flusher() *sim.Task { return wb.flusher }

// SetAvailablePages changes the dirtyable memory the ratio limits apply
// to (as page-cache growth or reclaim would); n must be positive.
func (wb *Writeback) SetAvailablePages(n int64) {
	if n <= 0 {
		panic(fmt.Sprintf("writeback: SetAvailablePages(%d)", n))
	}
	wb.available = n
}

// Thresholds returns the current background and dirty thresholds in
// pages (Limits.Thresholds of the available pages).
func (wb *Writeback) Thresholds() (background, dirty int64) {
	return wb.limits.Thresholds(wb.available)
}

// DirtyPages returns the number of dirty pages (NR_FILE_DIRTY).
func (wb *Writeback) DirtyPages() int64 { return wb.nrDirty }

// WritebackPages returns the number of pages under writeback
// (NR_WRITEBACK).
func (wb *Writeback) WritebackPages() int64 { return wb.nrWriteback }

// SyncWriters returns the number of WB_SYNC_ALL writepages calls in
// progress (between BeginWritepages and EndWritepages).
func (wb *Writeback) SyncWriters() int { return wb.syncWriters }

// AccountDirtied records that n pages became dirty (account_page_dirtied).
func (wb *Writeback) AccountDirtied(n int64) { wb.nrDirty += n }

// AccountCleaned records that n dirty pages stopped being dirty: their
// dirty flag was cleared for writeback (clear_page_dirty_for_io) or they
// were truncated. It panics if the dirty count would go negative, which
// is a model bug.
func (wb *Writeback) AccountCleaned(n int64) {
	wb.nrDirty -= n
	if wb.nrDirty < 0 {
		panic(fmt.Sprintf("writeback: %s: dirty page count %d below zero", wb.name, wb.nrDirty))
	}
}

// AccountWriteback adds delta to the pages under writeback: +n when pages
// are set under writeback (set_page_writeback), -n when their IO
// completes (end_page_writeback). Completions feed the write bandwidth
// estimate. It panics if the count would go negative.
func (wb *Writeback) AccountWriteback(delta int64) {
	now := wb.e.Now()
	if delta > 0 && wb.nrWriteback == 0 {
		wb.bw.busy(now)
	}
	wb.nrWriteback += delta
	if wb.nrWriteback < 0 {
		panic(fmt.Sprintf("writeback: %s: writeback page count %d below zero", wb.name, wb.nrWriteback))
	}
	if delta < 0 {
		wb.bw.completed(-delta, now)
	}
}

// MarkInodeDirty puts ino on the dirty list if it is not there
// (__mark_inode_dirty with I_DIRTY_PAGES): its dirtied time is now and it
// goes to the tail, so the list stays in dirtied-time order. An inode
// already on the list keeps its time and place. Call it after the pages
// are dirty; an inode found without dirty pages when a pass starts leaves
// the list. The first dirty inode arms the flusher's periodic wake-up.
func (wb *Writeback) MarkInodeDirty(ino Inode) {
	if _, ok := wb.inodes[ino.ID()]; ok {
		return
	}
	st := &inodeState{ino: ino, dirtiedWhen: wb.e.Now()}
	wb.inodes[ino.ID()] = st
	wb.pushTail(st)
	if wb.nInodes == 1 && !wb.running {
		wb.armTimer()
	}
}

// IsDirty reports whether ino is on the dirty list.
func (wb *Writeback) IsDirty(ino Inode) bool {
	_, ok := wb.inodes[ino.ID()]
	return ok
}

// DirtyInodes returns the dirty list, oldest first, with each inode's
// current DirtyPages.
func (wb *Writeback) DirtyInodes() []DirtyInode {
	out := make([]DirtyInode, 0, wb.nInodes)
	for st := wb.head; st != nil; st = st.next {
		out = append(out, DirtyInode{Inode: st.ino, DirtiedWhen: st.dirtiedWhen, DirtyPages: st.ino.DirtyPages()})
	}
	return out
}

func (wb *Writeback) pushTail(st *inodeState) {
	st.prev, st.next = wb.tail, nil
	if wb.tail != nil {
		wb.tail.next = st
	} else {
		wb.head = st
	}
	wb.tail = st
	wb.nInodes++
}

func (wb *Writeback) unlink(st *inodeState) {
	if st.prev != nil {
		st.prev.next = st.next
	} else {
		wb.head = st.next
	}
	if st.next != nil {
		st.next.prev = st.prev
	} else {
		wb.tail = st.prev
	}
	st.prev, st.next = nil, nil
	wb.nInodes--
}

// remove takes a clean inode off the list (inode_io_list_del).
func (wb *Writeback) remove(st *inodeState) {
	wb.unlink(st)
	delete(wb.inodes, st.ino.ID())
}

// redirtyTail moves st to the tail of the list; if it is older than the
// newest inode its dirtied time becomes now (redirty_tail).
func (wb *Writeback) redirtyTail(st *inodeState) {
	if st == wb.tail {
		return
	}
	if st.dirtiedWhen < wb.tail.dirtiedWhen {
		st.dirtiedWhen = wb.e.Now()
	}
	wb.unlink(st)
	wb.pushTail(st)
}

// requeue puts ino back after a writepages call (requeue_inode).
func (wb *Writeback) requeue(ino Inode, wbc *Control) {
	st, ok := wb.inodes[ino.ID()]
	if !ok {
		return
	}
	switch {
	case ino.DirtyPages() <= 0:
		wb.remove(st) // clean
	case wbc.SyncMode == SyncAll:
		// Redirtied while being synced: newer than the sync.
		st.dirtiedWhen = wb.e.Now()
		wb.unlink(st)
		wb.pushTail(st)
	case wbc.PagesSkipped > 0:
		wb.redirtyTail(st)
	case wbc.NrToWrite <= 0:
		// Slice used up: keep its time and place for the next pass
		// (requeue_io).
	default:
		// Blocked by something else: delay it (redirty_tail).
		wb.redirtyTail(st)
	}
}

// prune drops inodes that have no dirty pages left.
func (wb *Writeback) prune() {
	for st := wb.head; st != nil; {
		next := st.next
		if st.ino.DirtyPages() <= 0 {
			wb.remove(st)
		}
		st = next
	}
}

// BeginWritepages starts a filesystem's writepages call and answers its
// lock question: it counts a WB_SYNC_ALL call in SyncWriters (f2fs's
// sync-request counter) and asks the policy's Serialize. For LockSkip it
// adds the inode's dirty pages to wbc.PagesSkipped. Every call must be
// matched by one EndWritepages with the same wbc, whatever it returned.
//
// Filesystems consult it: the writeback machinery never takes a
// filesystem lock itself. A policy should not skip WB_SYNC_ALL calls
// (fsync would return with pages still dirty).
func (wb *Writeback) BeginWritepages(ino Inode, wbc *Control) LockDecision {
	if wbc.SyncMode == SyncAll {
		wb.syncWriters++
	}
	regular := true
	if r, ok := ino.(interface{ Regular() bool }); ok {
		regular = r.Regular()
	}
	dirty := ino.DirtyPages()
	d := wb.policy.Serialize(LockQuery{
		Inode: ino, Control: wbc, DirtyPages: dirty, Regular: regular, SyncWriters: wb.syncWriters,
	})
	switch d {
	case LockSerialize:
		wb.stats.Serialized++
	case LockSkip:
		wbc.PagesSkipped += dirty
		wb.stats.Skips++
		wb.stats.SkippedPages += dirty
	}
	return d
}

// YieldToSync reports whether the writepages call of wbc should stop
// after its current page: it is WB_SYNC_NONE, a WB_SYNC_ALL call is in
// progress, and the policy yields to sync writers (SyncYielder).
// Filesystems whose page loop has that check call it after each page.
func (wb *Writeback) YieldToSync(wbc *Control) bool {
	if wbc.SyncMode != SyncNone || wb.syncWriters == 0 {
		return false
	}
	y, ok := wb.policy.(SyncYielder)
	return ok && y.YieldsToSync()
}

// EndWritepages ends a call started by BeginWritepages.
func (wb *Writeback) EndWritepages(ino Inode, wbc *Control) {
	if wbc.SyncMode == SyncAll {
		wb.syncWriters--
		if wb.syncWriters < 0 {
			panic("writeback: EndWritepages without BeginWritepages")
		}
	}
}

// writepages runs one call with accounting: it returns the pages written
// (the NrToWrite consumed).
func (wb *Writeback) writepages(t *sim.Task, ino Inode, wbc *Control) (int64, error) {
	before := wbc.NrToWrite
	err := wb.wp.Writepages(t, ino, wbc)
	n := before - wbc.NrToWrite
	if n > 0 && !wb.writtenSet[ino.ID()] {
		wb.writtenSet[ino.ID()] = true
		wb.written = append(wb.written, ino)
	}
	wb.stats.Calls[wbc.Reason]++
	wb.stats.Written[wbc.Reason] += n
	if err != nil {
		wb.stats.Errors++
	}
	return n, err
}

// Sync writes ino's dirty pages and, for SyncAll, waits until their IO has
// completed: the data half of fsync and fdatasync (SyncAll) or of
// sync_file_range(SYNC_FILE_RANGE_WRITE) (SyncNone, no wait). It runs
// writepages on t with NrToWrite AllPages and reason ReasonFsync. The
// metadata half of fsync is the filesystem's. It returns the
// Writepager's error, or ErrClosed.
func (wb *Writeback) Sync(t *sim.Task, ino Inode, mode SyncMode) error {
	return wb.SyncRange(t, ino, mode, 0, RangeWhole)
}

// SyncRange is Sync for the byte range [start, end] (end inclusive), as
// file_write_and_wait_range.
func (wb *Writeback) SyncRange(t *sim.Task, ino Inode, mode SyncMode, start, end int64) error {
	if wb.closed {
		return ErrClosed
	}
	var err error
	if ino.DirtyPages() > 0 {
		wbc := &Control{SyncMode: mode, NrToWrite: AllPages, RangeStart: start, RangeEnd: end, Reason: ReasonFsync}
		_, err = wb.writepages(t, ino, wbc)
		if st, ok := wb.inodes[ino.ID()]; ok && ino.DirtyPages() <= 0 {
			wb.remove(st)
		}
	}
	if mode == SyncAll {
		wb.waiter.WaitOnWriteback(t, ino, start, end)
	}
	if err == nil && wb.closed {
		err = ErrClosed
	}
	return err
}

// SyncFS writes every inode dirtied before the call with the policy's
// ReasonSync passes on the flusher (sync_inodes_sb: Default writes each
// WB_SYNC_ALL), waits for the flusher to finish them, then waits for the
// IO of every inode this Writeback has ever written pages of, so IO
// started earlier by background writeback or a SyncNone Sync is waited
// for too (wait_sb_inodes). It returns the first Writepager error of its
// passes, or ErrClosed.
func (wb *Writeback) SyncFS(t *sim.Task) error {
	if wb.closed {
		return ErrClosed
	}
	w := &syncWork{}
	wb.work = append(wb.work, w)
	wb.wake()
	w.done.Wait(t)
	if errors.Is(w.err, ErrClosed) {
		return w.err
	}
	// After a write error too, as the kernel waits and then reports it.
	for i := 0; i < len(wb.written); i++ { // it may grow while we wait
		wb.waiter.WaitOnWriteback(t, wb.written[i], 0, RangeWhole)
	}
	return w.err
}

// Kick wakes the flusher to check for background writeback now
// (wb_start_background_writeback).
func (wb *Writeback) Kick() {
	if !wb.closed {
		wb.wake()
	}
}

func (wb *Writeback) wake() {
	wb.pendingWake = true
	wb.wq.WakeOne()
}

// timer is the flusher's delayed wake-up (wb_wakeup_delayed); its arg is
// the generation it was armed with.
type timer struct{ wb *Writeback }

// Void reports whether the wake-up was superseded or the domain closed:
// the engine then drops it instead of waiting for it (sim.Voidable).
func (h timer) Void(gen uint64) bool { return gen != h.wb.timerGen || h.wb.closed }

func (h timer) Fire(gen uint64) {
	wb := h.wb
	if gen != wb.timerGen || wb.closed {
		return
	}
	wb.timerArmed = false
	wb.wake()
}

// armTimer schedules a wake-up DirtyWriteback from now, unless one is
// pending or periodic writeback is off (queue_delayed_work does not move a
// pending timer). The timer is daemon work (sim.Engine.AfterDaemon): with
// dirty inodes it cannot clean the flusher re-arms it forever, and that
// must not keep a run whose tasks are deadlocked going.
func (wb *Writeback) armTimer() {
	if wb.timerArmed || wb.closed || wb.limits.DirtyWriteback <= 0 {
		return
	}
	wb.timerArmed = true
	wb.timerGen++
	wb.e.AfterDaemon(wb.limits.DirtyWriteback, timer{wb}, wb.timerGen)
}

// Close stops the domain: the flusher exits when it next runs (it is
// woken now; run the engine, or close it, to let it go), pending timers
// are void, queued SyncFS calls fail with ErrClosed, and writers throttled
// in BalanceDirtyPages return after their current pause. Close is
// idempotent and returns nil.
func (wb *Writeback) Close() error {
	if wb.closed {
		return nil
	}
	wb.closed = true
	wb.timerGen++
	for _, w := range wb.work {
		w.err = ErrClosed
		w.done.Complete()
	}
	wb.work = nil
	wb.wq.WakeAll()
	return nil
}

// overBackground reports whether dirty pages exceed the background
// threshold (wb_over_bg_thresh).
func (wb *Writeback) overBackground() bool {
	bg, _ := wb.Thresholds()
	return wb.nrDirty > bg
}

// periodicDue reports whether a kupdate run is due
// (wb_check_old_data_flush).
func (wb *Writeback) periodicDue() bool {
	d := wb.limits.DirtyWriteback
	return d > 0 && wb.e.Now() >= wb.lastOldFlush+sim.Time(d)
}

// flush is the flusher task (wb_workfn): each round runs queued SyncFS
// work, background writeback if dirty pages exceed the background
// threshold, and periodic writeback if it is due; then, with dirty inodes
// left, it arms the periodic wake-up and sleeps until a kick or the timer.
func (wb *Writeback) flush(t *sim.Task) {
	for !wb.closed {
		if !wb.pendingWake {
			if wb.nInodes > 0 {
				wb.armTimer()
			}
			wb.wq.Wait(t)
			continue
		}
		wb.pendingWake = false
		wb.running = true
		for len(wb.work) > 0 && !wb.closed {
			w := wb.work[0]
			wb.work = wb.work[1:]
			w.err = wb.run(t, ReasonSync)
			if w.err == nil && wb.closed {
				w.err = ErrClosed
			}
			w.done.Complete()
		}
		if !wb.closed && wb.overBackground() {
			_ = wb.run(t, ReasonBackground)
		}
		if !wb.closed && wb.periodicDue() {
			wb.lastOldFlush = wb.e.Now()
			_ = wb.run(t, ReasonPeriodic)
		}
		wb.running = false
	}
}

// run is one wb_writeback: passes chosen by the policy until it returns no
// work or a pass writes nothing. A periodic run writes at most the dirty
// count at its start (kupdate's nr_pages); a sync run sees only inodes
// dirtied by its start (older_than_this).
func (wb *Writeback) run(t *sim.Task, reason Reason) error {
	started := wb.e.Now()
	budget := int64(AllPages)
	if reason == ReasonPeriodic {
		budget = wb.nrDirty
	}
	var firstErr error
	var total int64
	for pass := 0; !wb.closed && total < budget; pass++ {
		works := wb.policy.Pick(wb.passInfo(reason, pass, started))
		if len(works) == 0 {
			break
		}
		wb.stats.Passes[reason]++
		var progress int64
		for _, wk := range works {
			if wb.closed {
				break
			}
			if wk.Inode == nil || wk.Pages <= 0 {
				continue
			}
			if _, ok := wb.inodes[wk.Inode.ID()]; !ok || wk.Inode.DirtyPages() <= 0 {
				continue
			}
			wbc := &Control{
				SyncMode: wk.SyncMode, NrToWrite: wk.Pages, RangeCyclic: wk.RangeCyclic,
				RangeEnd: RangeWhole, Reason: reason,
			}
			n, err := wb.writepages(t, wk.Inode, wbc)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			progress += n
			wb.requeue(wk.Inode, wbc)
		}
		total += progress
		if progress == 0 {
			break
		}
	}
	return firstErr
}

// passInfo builds what Pick sees.
func (wb *Writeback) passInfo(reason Reason, pass int, started sim.Time) PassInfo {
	wb.prune()
	bg, limit := wb.Thresholds()
	info := PassInfo{
		Reason: reason, Pass: pass, Now: wb.e.Now(), Limits: wb.limits,
		Background: bg, DirtyLimit: limit, Dirty: wb.nrDirty, Writeback: wb.nrWriteback,
		Inodes: make([]DirtyInode, 0, wb.nInodes),
	}
	for st := wb.head; st != nil; st = st.next {
		if reason == ReasonSync && st.dirtiedWhen > started {
			break // the list is in dirtied-time order
		}
		info.Inodes = append(info.Inodes, DirtyInode{Inode: st.ino, DirtiedWhen: st.dirtiedWhen, DirtyPages: st.ino.DirtyPages()})
	}
	return info
}

// Stats returns a copy of the domain's statistics.
func (wb *Writeback) Stats() Stats { return wb.stats }

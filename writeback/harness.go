package writeback

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/blksim/blksim/sim"
)

// HarnessOptions configure NewHarness. Zero values mean the defaults
// given; for the durations a negative value means zero cost.
type HarnessOptions struct {
	// Policy is the policy under test; nil means Default{}.
	Policy Policy
	// Limits are the vm.dirty_* settings; zero means DefaultLimits().
	Limits Limits
	// AvailablePages is the dirtyable memory; 0 means 65536 (256 MiB).
	AvailablePages int64
	// InitialBandwidth is Options.InitialBandwidth (pages per second).
	InitialBandwidth int64
	// CPUs is the number of simulated CPUs; 0 means 4.
	CPUs int
	// Seed seeds the engine.
	Seed uint64
	// CopyCost is the CPU time per page a writer dirties; 0 means 1 us.
	CopyCost time.Duration
	// PageCost is the CPU time per page writepages writes (allocating
	// its block, adding it to a bio); 0 means 1 us. Concurrent
	// writepages calls interleave their allocations page by page.
	PageCost time.Duration
	// IOLatency is the device's fixed time per IO; 0 means 50 us.
	IOLatency time.Duration
	// PageIOTime is the device's time per page of an IO; 0 means 10 us
	// (400 MiB/s). The device serves one IO at a time, in submission
	// order.
	PageIOTime time.Duration
	// MaxIOPages caps an IO (a bio): 0 means 128 pages (512 KiB).
	MaxIOPages int64
	// RunLimit bounds Harness.Run in simulated time; 0 means 10 minutes.
	RunLimit time.Duration
}

func (o *HarnessOptions) setDefaults() {
	dur := func(d *time.Duration, def time.Duration) {
		switch {
		case *d == 0:
			*d = def
		case *d < 0:
			*d = 0
		}
	}
	if o.Policy == nil {
		o.Policy = Default{}
	}
	if o.AvailablePages == 0 {
		o.AvailablePages = 65536
	}
	if o.CPUs == 0 {
		o.CPUs = 4
	}
	dur(&o.CopyCost, time.Microsecond)
	dur(&o.PageCost, time.Microsecond)
	dur(&o.IOLatency, 50*time.Microsecond)
	dur(&o.PageIOTime, 10*time.Microsecond)
	if o.MaxIOPages <= 0 {
		o.MaxIOPages = 128
	}
	if o.RunLimit <= 0 {
		o.RunLimit = 10 * time.Minute
	}
}

// IO is one write IO the harness's filesystem submitted: a run of
// physically contiguous blocks of one inode, built by one writepages call.
type IO struct {
	// At is the submission time, Done the completion time.
	At, Done time.Duration
	// Task names the task that submitted it (the flusher, a writer).
	Task string
	// File is the inode's name, Inode its ID.
	File  string
	Inode uint64
	// Block is the first block (page-sized) on the device; Pages the
	// length.
	Block, Pages int64
	// SyncMode and Reason come from the writepages call's Control.
	SyncMode SyncMode
	Reason   Reason
}

// Bytes returns the IO's size in bytes.
func (io IO) Bytes() int64 { return io.Pages * PageSize }

// Extent is a run of a file's pages stored on consecutive blocks.
type Extent struct {
	// Page is the first page index, Block its block, Pages the length.
	Page, Block, Pages int64
}

// Harness runs a Writeback over a small in-memory filesystem so a policy
// can be unit-tested: writer tasks dirty pages of FakeFiles, the policy's
// flusher passes and fsyncs call the filesystem's writepages, which
// allocates blocks log-structured (the next free block, per page, in
// the order pages are written, like f2fs) and records each IO; the test
// asserts on IOSizes, IOs, per-file Written and Extents, and Stats.
//
// An IO is one run of physically contiguous blocks built by one
// writepages call, at most MaxIOPages long: runs of different calls are
// never merged (there is no block layer), so writepages calls that
// interleave their allocations show as small IOs, and in the files'
// Extents. The filesystem honours the policy's lock rule with one
// writepages mutex; WB_SYNC_ALL calls wait for pages under writeback,
// WB_SYNC_NONE calls skip them. With Default's lock rule (none) an fsync
// and the flusher writing the same file do interleave, as f2fs did
// before its writepages mutex; Default{Serializer: F2FSSerialize{}} is
// the 4.19 rule, under which each call writes its range as one run.
//
// The flusher task is "flush-harness" (IO.Task). Failures name the policy
// by its Name and Go type, since a policy embedding Default inherits
// Default's Name. The harness uses tb's Helper, Fatal and Cleanup, from
// the goroutine that calls NewHarness, Run or RunUntil.
//
// A Harness is not safe for concurrent use; its methods that take a
// *sim.Task must be called from that task's function, the others between
// runs.
type Harness struct {
	tb    testing.TB
	clock *harnessClock
	opt   HarnessOptions
	e     *sim.Engine
	wb    *Writeback
	mu    *sim.Mutex
	files []*FakeFile
	ios   []IO
	next  int64 // next free block
	busy  sim.Time
	errs  []error
	// writes numbers Write calls; a page dirtied by the n-th has
	// dirtiedBy n (Fsync's integrity check).
	writes uint64
}

// NewHarness builds a harness. With a non-nil tb, setup errors and task
// failures fail the test and the harness is closed at the end of the
// test; with a nil tb (in an Example) they panic and the caller closes
// it.
func NewHarness(tb testing.TB, opt HarnessOptions) *Harness {
	if tb != nil {
		tb.Helper()
	}
	opt.setDefaults()
	h := &Harness{tb: tb, opt: opt, clock: &harnessClock{limit: -1}}
	h.e = sim.New(sim.Options{Seed: opt.Seed, Host: sim.Host{CPUs: opt.CPUs}, Clock: h.clock})
	h.mu = sim.NewMutex(h.e, "writepages", false)
	wb, err := New(h.e, Options{
		Name: "harness", Limits: opt.Limits, Policy: opt.Policy,
		AvailablePages: opt.AvailablePages, InitialBandwidth: opt.InitialBandwidth,
		Writepager: (*harnessFS)(h),
	})
	if err != nil {
		_ = h.e.Close()
		h.fail(err)
		return nil
	}
	h.wb = wb
	h.e.SetStallLimit(stallLimit(wb.Limits()))
	if tb != nil {
		tb.Cleanup(h.Close)
	}
	return h
}

// stallLimit is how long the harness's runs may go on with only the
// flusher's periodic timer left while tasks are unfinished before they
// fail as a deadlock (sim.Engine.SetStallLimit). A task's legitimate
// waits (writepages, IO, throttle pauses, sync work) all involve other
// events; the longest wait on the timer alone is for periodic writeback
// to pick an inode up, at most dirty_expire plus dirty_writeback, so the
// limit is twice that, and at least a minute.
func stallLimit(l Limits) time.Duration {
	return max(time.Minute, 2*(l.DirtyExpire+l.DirtyWriteback))
}

func (h *Harness) fail(err error) {
	if h.tb == nil {
		panic(err)
	}
	h.tb.Helper()
	h.tb.Fatal(err)
}

// Close closes the Writeback and the engine; it is idempotent.
func (h *Harness) Close() {
	_ = h.wb.Close()
	_ = h.e.Close()
}

// Engine returns the harness's engine.
func (h *Harness) Engine() *sim.Engine { return h.e }

// Writeback returns the Writeback under test.
func (h *Harness) Writeback() *Writeback { return h.wb }

// Now returns the simulated time.
func (h *Harness) Now() time.Duration { return time.Duration(h.e.Now()) }

// File creates an empty file; IDs count from 1 in creation order.
func (h *Harness) File(name string) *FakeFile {
	f := &FakeFile{h: h, id: uint64(len(h.files) + 1), name: name}
	h.files = append(h.files, f)
	return f
}

// Go starts a task called name at simulated time at (or now, if at has
// passed) running fn.
func (h *Harness) Go(name string, at time.Duration, fn func(t *sim.Task)) *sim.Task {
	return h.e.Go(name, func(t *sim.Task) {
		t.Sleep(at - time.Duration(t.Now()))
		fn(t)
	})
}

// Write dirties pages [page, page+pages) of f from t, as a buffered
// write() does: CopyCost per page on a CPU, the pages dirty, the inode
// marked dirty, then BalanceDirtyPages with the pages newly dirtied. A
// negative page or count writes nothing and fails the test when Run or
// RunUntil returns.
func (h *Harness) Write(t *sim.Task, f *FakeFile, page, pages int64) {
	if page < 0 || pages < 0 {
		// From a task: the test fails when Run or RunUntil returns.
		h.errs = append(h.errs, fmt.Errorf("writeback harness: %s: write of pages [%d, %d+%d) of %s: a page and a count must not be negative", t.Name(), page, page, pages, f.name))
		return
	}
	t.CPU(time.Duration(pages) * h.opt.CopyCost)
	f.grow(page + pages)
	h.writes++
	var newly int64
	for i := page; i < page+pages; i++ {
		if f.pages[i]&pageDirty == 0 {
			f.pages[i] |= pageDirty
			f.dirtiedBy[i] = h.writes
			f.dirty++
			newly++
		}
	}
	if newly > 0 {
		h.wb.AccountDirtied(newly)
		h.wb.MarkInodeDirty(f)
	}
	h.wb.BalanceDirtyPages(t, newly)
}

// Fsync is fsync(2) of f from t: Writeback.Sync with SyncAll. It also
// checks fsync's contract: when it returns without an error, no page
// that was dirty when it was called is still dirty (pages dirtied again
// since may be). A page left dirty (a policy or lock rule that skips
// WB_SYNC_ALL work) fails the test at the end of the run.
func (h *Harness) Fsync(t *sim.Task, f *FakeFile) error {
	called := h.writes
	if err := h.wb.Sync(t, f, SyncAll); err != nil {
		return err
	}
	var left, first int64 = 0, -1
	for i, st := range f.pages {
		if st&pageDirty != 0 && f.dirtiedBy[i] <= called {
			if left++; first < 0 {
				first = int64(i)
			}
		}
	}
	if left > 0 {
		h.errs = append(h.errs, fmt.Errorf("writeback harness: %s: fsync of %s returned at %v with %d pages still dirty that were dirty when it was called (the first: page %d); WB_SYNC_ALL writeback must write them (policy %s)",
			t.Name(), f.name, h.Now(), left, first, h.policyName()))
	}
	return nil
}

// policyName names the policy for messages: its Name and its Go type
// (a policy embedding Default inherits Default's Name).
func (h *Harness) policyName() string {
	return fmt.Sprintf("%q (%T)", h.opt.Policy.Name(), h.opt.Policy)
}

// dirtyFiles names the files with dirty inodes, for messages.
func (h *Harness) dirtyFiles() []string {
	var names []string
	for _, d := range h.wb.DirtyInodes() {
		if f, ok := d.Inode.(*FakeFile); ok {
			names = append(names, f.name)
		}
	}
	return names
}

// WriterOptions describe a sequential writer (Harness.Writer).
type WriterOptions struct {
	// Start is when the writer starts.
	Start time.Duration
	// Page is the first page; Pages how many it writes.
	Page, Pages int64
	// Chunk is the pages per write() call; 0 means 128 (512 KiB).
	Chunk int64
	// Think is a pause between write() calls.
	Think time.Duration
	// Fsync makes the writer fsync the file after its last write.
	Fsync bool
}

// Writer starts a task called name that writes pages of f sequentially
// as w describes. An fsync error fails the test, and so does (at once) a
// negative Page or Pages.
func (h *Harness) Writer(name string, f *FakeFile, w WriterOptions) *sim.Task {
	if h.tb != nil {
		h.tb.Helper()
	}
	if w.Page < 0 || w.Pages < 0 {
		h.fail(fmt.Errorf("writeback harness: writer %s: Page %d and Pages %d must not be negative", name, w.Page, w.Pages))
		return nil
	}
	if w.Chunk <= 0 {
		w.Chunk = 128
	}
	return h.Go(name, w.Start, func(t *sim.Task) {
		for p := w.Page; p < w.Page+w.Pages; p += w.Chunk {
			if p > w.Page && w.Think > 0 {
				t.Sleep(w.Think)
			}
			h.Write(t, f, p, min(w.Chunk, w.Page+w.Pages-p))
		}
		if w.Fsync {
			if err := h.Fsync(t, f); err != nil {
				h.errs = append(h.errs, fmt.Errorf("%s: fsync %s: %w", name, f.name, err))
			}
		}
	})
}

// Run runs the engine until no event is left: every writer has finished
// and periodic writeback has written what they left dirty (unless
// Limits.DirtyWriteback is 0). A task panic or a writer's error fails
// the test, and so does an engine still busy RunLimit after the start of
// the call (a policy that never writes some dirty inode keeps the
// periodic timer going forever), or tasks blocked forever (a deadlock;
// also writers throttled at the dirty limit for ever because the policy
// leaves pages dirty), or an fsync that returned with pages dirty (see
// Fsync).
// RunUntil fails as well on tasks blocked with only the flusher's timer
// left for a long time (at least a minute; see sim.Engine.SetStallLimit).
func (h *Harness) Run() {
	if h.tb != nil {
		h.tb.Helper()
	}
	h.clock.limit = h.e.Now() + sim.Time(h.opt.RunLimit)
	defer func() { h.clock.limit = -1 }()
	h.run(-1)
	if n := h.e.Tasks(); n > 0 {
		h.fail(fmt.Errorf("writeback harness: %d unfinished tasks blocked forever at %v; dirty files %v (a deadlock in the test, or in the policy %s?)",
			n, h.e.Now(), h.dirtyFiles(), h.policyName()))
	}
}

// RunUntil runs the engine until simulated time d. Like Run, it fails
// the test when unfinished tasks have had only the flusher's timer (or
// their own throttle pauses) for the harness's stall limit, twice
// dirty_expire plus dirty_writeback and at least a minute: a test that
// parks a task that long and releases it from test code between
// RunUntil calls must raise the limit on Engine.
func (h *Harness) RunUntil(d time.Duration) {
	if h.tb != nil {
		h.tb.Helper()
	}
	h.run(sim.Time(d))
}

func (h *Harness) run(until sim.Time) {
	if h.tb != nil {
		h.tb.Helper()
	}
	if err := h.e.Run(until); err != nil {
		var stop *sim.HandlerPanicError
		if errors.As(err, &stop) && stop.Value == (runLimitHit{}) {
			err = fmt.Errorf("writeback harness: still busy after %v of simulated time; dirty files %v (does the policy %s leave them dirty?)",
				h.opt.RunLimit, h.dirtyFiles(), h.policyName())
		}
		var stall *sim.StallError
		if errors.As(err, &stall) {
			err = fmt.Errorf("writeback harness: tasks blocked or throttled at the dirty limit with no IO since %v, only the flusher's timer left; dirty files %v (a deadlock in the test, or does the policy %s leave them dirty?): %s",
				stall.Since, h.dirtyFiles(), h.policyName(), stall.TaskNames())
		}
		h.fail(err)
	}
	if len(h.errs) > 0 {
		err := h.errs[0]
		h.errs = nil
		h.fail(err)
	}
}

// harnessClock is the virtual clock with a deadline: it stops Run (by a
// panic the engine reports as a HandlerPanicError) before an event later
// than limit, unless limit is negative.
type harnessClock struct{ limit sim.Time }

// runLimitHit is the panic value of a harnessClock past its limit.
type runLimitHit struct{}

func (c *harnessClock) Advance(t sim.Time) {
	if c.limit >= 0 && t > c.limit {
		panic(runLimitHit{})
	}
}

// IOs returns the IOs submitted so far, in submission order.
func (h *Harness) IOs() []IO { return append([]IO(nil), h.ios...) }

// IOSizes returns the size in bytes of each IO, in submission order.
func (h *Harness) IOSizes() []int64 {
	out := make([]int64, len(h.ios))
	for i, io := range h.ios {
		out[i] = io.Bytes()
	}
	return out
}

// Stats returns the Writeback's statistics.
func (h *Harness) Stats() Stats { return h.wb.Stats() }

// Page state bits of a FakeFile.
const (
	pageDirty uint8 = 1 << iota
	pageWriteback
)

// FakeFile is a harness file: an Inode whose pages are only state bits
// (dirty, under writeback) and the block each was last written to.
type FakeFile struct {
	h      *Harness
	id     uint64
	name   string
	pages  []uint8
	blocks []int64
	// dirtiedBy is, per page, the Write call that last dirtied it.
	dirtiedBy []uint64
	dirty     int64
	inIO      int64
	written   int64
	// index is writeback_index, where range_cyclic writeback resumes.
	index int64
	wq    sim.WaitQueue
}

// ID returns the inode number.
func (f *FakeFile) ID() uint64 { return f.id }

// Name returns the file's name.
func (f *FakeFile) Name() string { return f.name }

// DirtyPages returns the number of dirty pages.
func (f *FakeFile) DirtyPages() int64 { return f.dirty }

// WritebackPages returns the number of pages under writeback.
func (f *FakeFile) WritebackPages() int64 { return f.inIO }

// Written returns the number of pages writepages has written (set under
// writeback) so far.
func (f *FakeFile) Written() int64 { return f.written }

// Size returns the file size in pages.
func (f *FakeFile) Size() int64 { return int64(len(f.pages)) }

// Extents returns the file's layout: maximal runs of consecutive pages on
// consecutive blocks, in page order; pages never written are left out.
func (f *FakeFile) Extents() []Extent {
	var out []Extent
	for i, b := range f.blocks {
		if b < 0 {
			continue
		}
		p := int64(i)
		if n := len(out); n > 0 && out[n-1].Page+out[n-1].Pages == p && out[n-1].Block+out[n-1].Pages == b {
			out[n-1].Pages++
			continue
		}
		out = append(out, Extent{Page: p, Block: b, Pages: 1})
	}
	return out
}

func (f *FakeFile) grow(n int64) {
	for int64(len(f.pages)) < n {
		f.pages = append(f.pages, 0)
		f.blocks = append(f.blocks, -1)
		f.dirtiedBy = append(f.dirtiedBy, 0)
	}
}

// busyIn reports whether a page in [first, last] is under writeback.
func (f *FakeFile) busyIn(first, last int64) bool {
	last = min(last, int64(len(f.pages))-1)
	for i := max(first, 0); i <= last; i++ {
		if f.pages[i]&pageWriteback != 0 {
			return true
		}
	}
	return false
}

// harnessFS is the harness's filesystem: it implements Writepager and
// Waiter for FakeFiles.
type harnessFS Harness

// run is an IO being built.
type run struct {
	f     *FakeFile
	block int64
	pages []int64
}

// Writepages is write_cache_pages over a log-structured allocator.
func (fs *harnessFS) Writepages(t *sim.Task, ino Inode, wbc *Control) error {
	h := (*Harness)(fs)
	f, ok := ino.(*FakeFile)
	if !ok || f.h != h {
		return fmt.Errorf("writeback harness: inode %d is not one of this harness's files", ino.ID())
	}
	d := h.wb.BeginWritepages(f, wbc)
	defer h.wb.EndWritepages(f, wbc)
	switch d {
	case LockSkip:
		return nil
	case LockSerialize:
		h.mu.Lock(t)
		defer h.mu.Unlock(t)
	}
	var first, last int64
	if wbc.RangeCyclic {
		first, last = f.index, int64(len(f.pages))-1
	} else {
		first, last = wbc.RangeStart/PageSize, min(wbc.RangeEnd/PageSize, int64(len(f.pages))-1)
	}
	cur := &run{f: f}
	done, next := h.writeRange(t, f, wbc, first, last, cur)
	if wbc.RangeCyclic && !done && first > 0 && f.dirty > 0 {
		// Hit the end with work left: wrap to the start of the file.
		_, next = h.writeRange(t, f, wbc, 0, first-1, cur)
	}
	h.submit(t, cur, wbc)
	if wbc.RangeCyclic {
		f.index = next
	}
	return nil
}

// writeRange writes the dirty pages of [first, last]; it reports whether
// the budget ran out and the index after the last page it looked at.
func (h *Harness) writeRange(t *sim.Task, f *FakeFile, wbc *Control, first, last int64, cur *run) (done bool, next int64) {
	for i := first; i <= last; i++ {
		if f.dirty == 0 {
			// No dirty page left anywhere (a tagged lookup would find
			// none): stop scanning.
			return false, i
		}
		if f.pages[i]&pageDirty == 0 {
			continue
		}
		if f.pages[i]&pageWriteback != 0 {
			if wbc.SyncMode == SyncNone {
				continue
			}
			// Sleeping flushes the plug: submit the run so far.
			h.submit(t, cur, wbc)
			for f.pages[i]&pageWriteback != 0 {
				f.wq.Wait(t)
			}
			if f.pages[i]&pageDirty == 0 {
				continue
			}
		}
		// Claim the page and allocate its block in one step, then pay for
		// it: concurrent writepages calls interleave here.
		f.pages[i] = f.pages[i]&^pageDirty | pageWriteback
		f.dirty--
		f.inIO++
		f.written++
		h.wb.AccountCleaned(1)
		h.wb.AccountWriteback(1)
		b := h.next
		h.next++
		f.blocks[i] = b
		if len(cur.pages) > 0 && (b != cur.block+int64(len(cur.pages)) || int64(len(cur.pages)) >= h.opt.MaxIOPages) {
			h.submit(t, cur, wbc)
		}
		if len(cur.pages) == 0 {
			cur.block = b
		}
		cur.pages = append(cur.pages, i)
		wbc.NrToWrite--
		if h.opt.PageCost > 0 {
			t.CPU(h.opt.PageCost)
		}
		if wbc.NrToWrite <= 0 && wbc.SyncMode == SyncNone {
			return true, i + 1
		}
	}
	return false, last + 1
}

// submit sends the run to the device and starts a new one.
func (h *Harness) submit(t *sim.Task, cur *run, wbc *Control) {
	if len(cur.pages) == 0 {
		return
	}
	n := int64(len(cur.pages))
	start := max(h.e.Now(), h.busy)
	done := start + sim.Time(h.opt.IOLatency) + sim.Time(time.Duration(n)*h.opt.PageIOTime)
	h.busy = done
	h.ios = append(h.ios, IO{
		At: time.Duration(h.e.Now()), Done: time.Duration(done), Task: t.Name(),
		File: cur.f.name, Inode: cur.f.id, Block: cur.block, Pages: n,
		SyncMode: wbc.SyncMode, Reason: wbc.Reason,
	})
	h.e.At(done, &completion{f: cur.f, pages: cur.pages}, 0)
	cur.pages = nil
}

// completion ends the writeback of one IO's pages.
type completion struct {
	f     *FakeFile
	pages []int64
}

func (c *completion) Fire(uint64) {
	f := c.f
	for _, i := range c.pages {
		f.pages[i] &^= pageWriteback
	}
	f.inIO -= int64(len(c.pages))
	f.h.wb.AccountWriteback(-int64(len(c.pages)))
	f.wq.WakeAll()
}

// WaitOnWriteback waits until no page of ino in [start, end] is under
// writeback.
func (fs *harnessFS) WaitOnWriteback(t *sim.Task, ino Inode, start, end int64) {
	f, ok := ino.(*FakeFile)
	if !ok {
		return
	}
	for f.busyIn(start/PageSize, end/PageSize) {
		f.wq.Wait(t)
	}
}

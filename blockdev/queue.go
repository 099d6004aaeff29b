package blockdev

import (
	"cmp"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/blksim/blksim/sim"
)

// DiskStats are a device's counters in the shape of /proc/diskstats,
// indexed by Op where there are two, plus blksim's own request-size
// histograms. Times are simulated.
type DiskStats struct {
	// IOs counts completed requests.
	IOs [2]uint64
	// Merges counts merges: a bio merged into a request, or two requests
	// merged into one.
	Merges [2]uint64
	// Sectors counts sectors transferred.
	Sectors [2]uint64
	// Ticks is the summed request time from allocation to completion.
	Ticks [2]time.Duration
	// InFlight is the number of requests between allocation and
	// completion.
	InFlight int
	// IOTicks is the time during which at least one request was in flight.
	IOTicks time.Duration
	// TimeInQueue is the in-flight count integrated over time.
	TimeInQueue time.Duration
	// Splits counts bios split to the queue's limits.
	Splits uint64
	// D2C and Q2C sum, over completed bios (pieces of split bios are
	// bios), the time from their request's issue to completion and from
	// the bio's queueing to completion; Bios counts them. These are btt's
	// D2C and Q2C, which it also computes per bio.
	D2C, Q2C [2]time.Duration
	Bios     [2]uint64
	// QueuedSizes counts bios by size (bytes) as they entered the queue
	// (Q), DispatchedSizes requests by size as they were issued (D).
	QueuedSizes, DispatchedSizes [2]map[int64]uint64
	// Flushes counts completed flush requests and FlushTicks their time
	// from allocation to completion (diskstats' flush fields, kernel
	// 5.5+); they are not counted as writes. A flush the queue completed
	// at once, the device having no volatile cache, is not counted.
	Flushes    uint64
	FlushTicks time.Duration
}

// Scheduler names accepted in QueueOptions.Scheduler.
const (
	SchedNone       = "none"
	SchedMQDeadline = "mq-deadline"
	SchedCFQ        = "cfq"
)

// DeadlineOptions are mq-deadline's tunables (/sys/block/*/queue/iosched).
type DeadlineOptions struct {
	ReadExpire    time.Duration // default 500 ms
	WriteExpire   time.Duration // default 5 s
	WritesStarved int           // default 2
	FifoBatch     int           // default 16
	NoFrontMerges bool          // front_merges=0 (default: front merges on)
}

// QueueOptions tune a request queue; zero fields take the device's or the
// kernel's defaults.
type QueueOptions struct {
	// MaxSectorsKB caps request size (default: the device's MaxHWSectorsKB).
	MaxSectorsKB int
	// NrRequests caps the requests in flight per hardware queue (default:
	// the device's depth).
	NrRequests int
	// MaxSegments and MaxSegmentSize cap a request's scatter-gather list
	// (defaults: the device's, else 128 and 64 KiB).
	MaxSegments    int
	MaxSegmentSize int
	// NoMerges is sysfs nomerges: 0 all merges, 1 the scheduler tries
	// only its one-hit candidate (the request it last merged into, or
	// the first queued while none was cached), 2 none. Plug merges and
	// merges into the software queue are the same with 0 and 1, as in
	// the kernel.
	NoMerges int
	// Scheduler is SchedNone (default), SchedMQDeadline or SchedCFQ.
	Scheduler string
	// Deadline tunes mq-deadline, CFQ tunes cfq.
	Deadline DeadlineOptions
	CFQ      CFQOptions
	// HWQueues is the number of hardware queues (default: the device's,
	// else 1); a task's CPU picks its queue.
	HWQueues int
}

// hwQueue is one hardware queue: its tags and, with no scheduler, its
// dispatch list (the software queue).
type hwQueue struct {
	tags []int
	list []*Request
	// fq sequences the cache flushes of requests on this hardware queue
	// (blk-flush keeps a flush queue per hardware context).
	fq flushQueue
}

// Queue turns bios into requests for one device, as blk-mq does: it checks
// and splits bios to the queue limits, merges them into plugged or queued
// requests, allocates requests, holds them in the IO scheduler and issues
// them when a tag is free. It may be used only on the engine goroutine.
type Queue struct {
	e      *sim.Engine
	dev    Device
	limits Limits
	opt    QueueOptions
	maxReq int64 // bytes
	maxSeg int
	depth  int // tags per hardware queue

	hwqs     []hwQueue
	inFlight int       // requests holding a tag
	sched    scheduler // nil: none
	lastMrg  *Request  // the scheduler's one-hit merge candidate (q->last_merge)

	free     []*Request
	freeBios []*Bio

	stats    DiskStats
	lastTick sim.Time
	lastDone sim.Time // when the last request completed

	plugs  []*Plug
	tracer Tracer
	tev    TraceEvent

	// Fix (tests): bios failed by Submit are ended from an event, since
	// EndBio must never run inside Submit (BioEnder's contract).
	failed failedBios
}

// failedBios ends, one per event and in FIFO order, the bios that Submit
// rejected.
type failedBios struct {
	q    *Queue
	bios []*Bio
}

// Fire ends the oldest failed bio.
func (f *failedBios) Fire(uint64) {
	b := f.bios[0]
	copy(f.bios, f.bios[1:])
	f.bios[len(f.bios)-1] = nil
	f.bios = f.bios[:len(f.bios)-1]
	f.q.endBio(b)
}

// maxQueueDepth caps the tags of a queue, like the kernel's
// BLK_MQ_MAX_DEPTH (a larger device depth is reduced to it).
const maxQueueDepth = 10240

// Kernel defaults for segment limits (BLK_MAX_SEGMENTS,
// BLK_MAX_SEGMENT_SIZE).
const (
	defaultMaxSegments    = 128
	defaultMaxSegmentSize = 64 << 10
)

// NewQueue attaches a queue to dev. It fails if the options exceed the
// device's limits or are invalid.
func NewQueue(e *sim.Engine, dev Device, opt QueueOptions) (*Queue, error) {
	lim := dev.Limits()
	name := dev.Name()
	if lim.LogicalBlockSize <= 0 || lim.LogicalBlockSize%SectorSize != 0 {
		return nil, fmt.Errorf("blockdev: %s: logical block size %d is not a multiple of %d", name, lim.LogicalBlockSize, SectorSize)
	}
	if lim.MaxHWSectorsKB <= 0 || lim.QueueDepth <= 0 {
		return nil, fmt.Errorf("blockdev: %s: max_hw_sectors_kb and queue depth must be positive", name)
	}
	for _, o := range []struct {
		key string
		v   int
	}{
		{"max_sectors_kb", opt.MaxSectorsKB}, {"max_segments", opt.MaxSegments},
		{"max_segment_size", opt.MaxSegmentSize}, {"nr_requests", opt.NrRequests},
		{"hw_queues", opt.HWQueues}, {"fifo_batch", opt.Deadline.FifoBatch},
		{"quantum", opt.CFQ.Quantum},
	} {
		if o.v < 0 {
			return nil, fmt.Errorf("blockdev: %s: %s %d must not be negative (0 means the default)", name, o.key, o.v)
		}
	}
	q := &Queue{e: e, dev: dev, limits: lim, opt: opt}
	kb := lim.MaxHWSectorsKB
	if opt.MaxSectorsKB > 0 {
		if opt.MaxSectorsKB > kb {
			return nil, fmt.Errorf("blockdev: %s: max_sectors_kb %d exceeds max_hw_sectors_kb %d", name, opt.MaxSectorsKB, kb)
		}
		kb = opt.MaxSectorsKB
	}
	q.maxReq = int64(kb) * 1024
	// Fix (tests): a request size that is not a multiple of the logical
	// block size would split bios into misaligned requests.
	if q.maxReq%int64(lim.LogicalBlockSize) != 0 {
		return nil, fmt.Errorf("blockdev: %s: max_sectors_kb %d is not a multiple of the logical block size %d", name, kb, lim.LogicalBlockSize)
	}
	q.maxSeg = firstPositive(opt.MaxSegments, lim.MaxSegments, defaultMaxSegments)
	if lim.MaxSegments > 0 && q.maxSeg > lim.MaxSegments {
		return nil, fmt.Errorf("blockdev: %s: max_segments %d exceeds the device's %d", name, q.maxSeg, lim.MaxSegments)
	}
	if segSize := firstPositive(opt.MaxSegmentSize, lim.MaxSegmentSize, defaultMaxSegmentSize); segSize < 4096 {
		return nil, fmt.Errorf("blockdev: %s: max_segment_size %d is below the 4096-byte page", name, segSize)
	}
	if opt.NoMerges < 0 || opt.NoMerges > 2 {
		return nil, fmt.Errorf("blockdev: %s: nomerges %d: want 0, 1 or 2", name, opt.NoMerges)
	}
	// Fix (tests): clamp absurd depths (the tag array is allocated
	// up front), as blk-mq does.
	q.depth = min(lim.QueueDepth, maxQueueDepth)
	if opt.NrRequests > 0 && opt.NrRequests < q.depth {
		q.depth = opt.NrRequests
	}
	nhw := firstPositive(opt.HWQueues, lim.HWQueues, 1)
	if nhw > 256 {
		return nil, fmt.Errorf("blockdev: %s: %d hardware queues: at most 256", name, nhw)
	}
	q.hwqs = make([]hwQueue, nhw)
	for i := range q.hwqs {
		for t := q.depth - 1; t >= 0; t-- {
			q.hwqs[i].tags = append(q.hwqs[i].tags, t)
		}
	}
	switch opt.Scheduler {
	case "", SchedNone:
		q.opt.Scheduler = SchedNone
	case SchedMQDeadline:
		q.sched = newDeadline(opt.Deadline)
	case SchedCFQ:
		q.sched = newCFQ(e, q, opt.CFQ)
	default:
		return nil, fmt.Errorf("blockdev: %s: scheduler %q: want %s, %s or %s", name, opt.Scheduler, SchedNone, SchedMQDeadline, SchedCFQ)
	}
	for op := range q.stats.QueuedSizes {
		q.stats.QueuedSizes[op] = make(map[int64]uint64)
		q.stats.DispatchedSizes[op] = make(map[int64]uint64)
	}
	q.failed.q = q
	dev.Attach(q)
	return q, nil
}

func firstPositive(v ...int) int {
	for _, x := range v {
		if x > 0 {
			return x
		}
	}
	return 0
}

// Device returns the queue's device.
func (q *Queue) Device() Device { return q.dev }

// Limits returns the device's limits.
func (q *Queue) Limits() Limits { return q.limits }

// MaxSectorsKB returns the queue's request size cap in KiB
// (max_sectors_kb): QueueOptions.MaxSectorsKB, or the device's
// MaxHWSectorsKB when that is 0. The kernel derives the readahead
// io_pages (bdi->io_pages) from it.
func (q *Queue) MaxSectorsKB() int { return int(q.maxReq / 1024) }

// Scheduler returns the IO scheduler's name.
func (q *Queue) Scheduler() string {
	if q.sched != nil {
		return q.sched.name()
	}
	return SchedNone
}

// scheduler is an IO scheduler (elevator): it holds inserted requests,
// may merge bios into them, and picks the next request to issue.
type scheduler interface {
	name() string
	insert(q *Queue, r *Request)
	// bioMerge merges b into a queued request if it can.
	bioMerge(q *Queue, b *Bio) bool
	// allowMerge reports whether the scheduler lets b join r, queued or
	// still plugged (elv_bio_merge_ok).
	allowMerge(r *Request, b *Bio) bool
	// dispatch returns the next request to issue, or nil (none queued,
	// or the scheduler chooses to wait).
	dispatch(q *Queue) *Request
	// completed is told when an issued request completes.
	completed(q *Queue, r *Request)
}

// Stats returns the counters, with time-based ones brought up to Now. The
// histogram maps are the queue's own: read them, do not modify them.
func (q *Queue) Stats() DiskStats {
	q.tick()
	return q.stats
}

// LastCompletion returns the simulated time at which the last request
// completed, or 0 if none has.
func (q *Queue) LastCompletion() sim.Time { return q.lastDone }

// CheckAlignment returns an EINVAL error unless offset and length (bytes)
// are aligned to the device's logical block size, the rule for direct IO.
func (q *Queue) CheckAlignment(offset, length int64) error {
	lbs := int64(q.limits.LogicalBlockSize)
	if offset%lbs != 0 || length%lbs != 0 || length <= 0 {
		return &AlignmentError{Offset: offset, Length: length, Align: lbs}
	}
	return nil
}

// AlignmentError reports a direct IO that is not aligned to the logical
// block size. It matches syscall.EINVAL with errors.Is.
type AlignmentError struct {
	Offset, Length, Align int64
}

// Error names the offset, the length and the required alignment; an
// empty IO or one at a negative offset is said to be so.
func (e *AlignmentError) Error() string {
	switch {
	case e.Length <= 0:
		return fmt.Sprintf("offset %d length %d: an IO needs a positive length: %v", e.Offset, e.Length, syscall.EINVAL)
	case e.Offset < 0:
		return fmt.Sprintf("offset %d length %d: negative offset: %v", e.Offset, e.Length, syscall.EINVAL)
	}
	return fmt.Sprintf("offset %d length %d not aligned to %d bytes: %v", e.Offset, e.Length, e.Align, syscall.EINVAL)
}

// Is reports whether target is EINVAL.
func (e *AlignmentError) Is(target error) bool { return target == syscall.EINVAL }

// Submit queues b without a plug. The bio must be aligned to the logical
// block size; b.End is told when it completes (possibly with an error),
// never inside Submit. Submit never blocks. A bio that is misaligned or
// empty, or whose Op is neither OpRead nor OpWrite, fails with an error
// matching syscall.EINVAL; one beyond the device fails with ErrOutOfRange.
// A flush (Bio.Flush, an empty write) completes once the device's
// volatile cache is written out, at once if it has none. On a device with
// a volatile cache a write with data and Flush or FUA must fit in one
// request (max_sectors_kb and the segment limits) or fails with EINVAL;
// it is never merged or split. Without one the flags are dropped.
func (q *Queue) Submit(b *Bio) { q.submit(b, nil) }

// submit is submit_bio: check, trace, split, merge or make a request.
func (q *Queue) submit(b *Bio, plug *Plug) {
	b.Submitted = q.e.Now()
	b.remaining = 0
	if b.Bytes == 0 && (b.Flush || b.FUA) {
		q.submitFlush(b)
		return
	}
	// Fix (tests): check alignment to the logical block size (the Device
	// contract), not only to the sector.
	if b.Op > OpWrite {
		// Fix (tests): an unknown Op indexed the per-direction counters
		// out of range and panicked inside Submit.
		q.fail(b, fmt.Errorf("blockdev: bio op %v: %w", b.Op, syscall.EINVAL))
		return
	}
	lbs := int64(q.limits.LogicalBlockSize)
	if b.Bytes <= 0 || b.Bytes%lbs != 0 || b.Sector < 0 || b.Sector*SectorSize%lbs != 0 {
		q.fail(b, &AlignmentError{Offset: b.Sector * SectorSize, Length: b.Bytes, Align: lbs})
		return
	}
	// Fix (tests): compare without overflowing for huge sectors.
	if c := q.dev.Capacity(); b.Bytes > c || b.Sector > (c-b.Bytes)/SectorSize {
		q.fail(b, ErrOutOfRange)
		return
	}
	limit := min(q.maxReq, int64(q.maxSeg)*pageSize)
	if b.Flush || b.FUA {
		if b.Op != OpWrite {
			q.fail(b, fmt.Errorf("blockdev: a PREFLUSH or FUA bio must be a write (op %v): %w", b.Op, syscall.EINVAL))
			return
		}
		if !q.limits.VolatileCache {
			// submit_bio_noacct: nothing to flush, nothing to force;
			// an ordinary write, split as any.
			b.Flush, b.FUA = false, false
		} else if b.Bytes > limit {
			q.fail(b, fmt.Errorf("blockdev: a PREFLUSH or FUA write must fit in one request of %d bytes (%d bytes): %w", limit, b.Bytes, syscall.EINVAL))
			return
		}
	}
	q.traceBio(TraceQueue, b, 0)
	q.stats.QueuedSizes[b.Op][b.Bytes]++
	if b.Flush || b.FUA {
		q.flushSequence(b)
		return
	}
	if b.Bytes <= limit {
		q.queueBio(b, plug)
		return
	}
	// Split as blk_queue_split does: the front piece, marked not to be
	// merged, is queued; the remainder is split again until it fits.
	q.stats.Splits++
	b.remaining = int((b.Bytes + limit - 1) / limit)
	for off := int64(0); off < b.Bytes; off += limit {
		p := q.newBio()
		p.Op, p.Stamp, p.CollectData, p.Sync, p.NoIdle, p.Rahead = b.Op, b.Stamp, b.CollectData, b.Sync, b.NoIdle, b.Rahead
		p.Issuer = b.Issuer
		p.Sector = b.Sector + off/SectorSize
		p.Bytes = min(limit, b.Bytes-off)
		p.Submitted = b.Submitted
		p.parent = b
		if off+p.Bytes < b.Bytes {
			p.noMerge = true
			q.traceBio(TraceSplit, p, uint64(p.Sector+p.Bytes/SectorSize))
		}
		q.queueBio(p, plug)
	}
}

// submitFlush is blk_insert_flush for an empty REQ_PREFLUSH write: done at
// once without a volatile cache; else a request of its own (Q and G
// traced), never merged and past the plug and the scheduler, that waits
// for the queue's next flush request and completes with it (C traced,
// as a plain sync write of no bytes: the kernel strips REQ_PREFLUSH).
func (q *Queue) submitFlush(b *Bio) {
	if b.Op != OpWrite || b.Bytes != 0 || !b.Flush {
		q.fail(b, fmt.Errorf("blockdev: a flush bio must be an empty write (op %v, %d bytes): %w", b.Op, b.Bytes, syscall.EINVAL))
		return
	}
	if !q.limits.VolatileCache {
		q.fail(b, nil)
		return
	}
	q.traceBio(TraceQueue, b, 0)
	q.tick()
	r := q.requestFor(b)
	r.Sync = true
	q.waitFlush(r, fstepEnd)
	q.run()
}

// flushSequence is blk_insert_flush for a write with data and PREFLUSH
// or FUA on a device with a volatile cache: its request (G), never
// merged, bypasses the plug and the scheduler; a PREFLUSH makes it wait
// for the next flush request before it is issued; FUA goes to a device
// that honours it, else makes the write wait for a flush after it, and
// the bio completes when that does.
func (q *Queue) flushSequence(b *Bio) {
	q.tick()
	r := q.requestFor(b)
	r.inSeq, r.post, r.FUA = true, b.FUA && !q.limits.FUA, b.FUA && q.limits.FUA
	if b.Flush {
		q.waitFlush(r, fstepData)
	} else if r.post {
		r.seqPre, r.seqFUA = false, false
		q.dispatchFirst(r)
	} else {
		// FUA alone, which the device honours: no flush to sequence,
		// straight to the hardware queue (blk_mq_request_bypass_insert).
		r.seqPre, r.seqFUA = false, false
		h := &q.hwqs[r.HWQueue]
		h.list = append(h.list, r)
	}
	q.run()
}

// dispatchFirst puts a flush sequence's write at the head of its hardware
// queue's list, as blk_flush_queue_rq puts the DATA step at the head of
// the requeue list.
func (q *Queue) dispatchFirst(r *Request) {
	h := &q.hwqs[r.HWQueue]
	h.fq.dataInFlight++
	r.seqData = true
	h.list = slices.Insert(h.list, 0, r)
}

// flushQueue is blk-flush's state of one hardware queue (struct
// blk_flush_queue): at most one flush request in flight; every request
// waiting for a flush when one is issued is done by it, those that arrive
// later wait for the next.
type flushQueue struct {
	running      *Request   // the flush request in flight (flush_rq), or nil
	pending      []*Request // waiting for a flush not issued yet
	covered      []*Request // waiting for the running flush
	spare        []*Request // covered's other buffer
	dataInFlight int        // flush-sequence writes issued, not completed
	pendingSince sim.Time   // when pending last became non-empty
}

// What a request waiting for a flush does when it completes.
const (
	fstepEnd  = iota + 1 // complete: end its bios
	fstepData            // issue the write
)

// flushPendingTimeout is FLUSH_PENDING_TIMEOUT: how long waiting
// requests hold their flush back while flush-sequence writes are in
// flight (whose postflushes it could then share).
const flushPendingTimeout = 5 * time.Second

// waitFlush makes r wait for its hardware queue's next flush request,
// then do step.
func (q *Queue) waitFlush(r *Request, step uint8) {
	fq := &q.hwqs[r.HWQueue].fq
	if len(fq.pending) == 0 {
		fq.pendingSince = q.e.Now()
	}
	r.fstep = step
	fq.pending = append(fq.pending, r)
	q.kickFlush(r.HWQueue)
}

// kickFlush is blk_kick_flush for hardware queue hw: with no flush in
// flight and requests waiting, and no flush-sequence write in flight
// (for at most flushPendingTimeout), it issues a flush request for them
// all, at the head of the queue's list (blk_mq_insert_request puts
// REQ_OP_FLUSH requests first).
func (q *Queue) kickFlush(hw int) {
	h := &q.hwqs[hw]
	fq := &h.fq
	if fq.running != nil || len(fq.pending) == 0 {
		return
	}
	if fq.dataInFlight > 0 && q.e.Now() < fq.pendingSince+sim.Time(flushPendingTimeout) {
		return
	}
	first := fq.pending[0]
	f := q.newRequest()
	f.Op, f.Sector, f.Bytes, f.Err = OpWrite, 0, 0, nil
	f.Bios = f.Bios[:0]
	f.Issuer, f.Sync, f.NoIdle, f.Rahead, f.Flush, f.Meta, f.FUA = first.Issuer, false, false, false, true, false, false
	f.fstep, f.post, f.inSeq, f.seqPre, f.seqFUA = 0, false, false, false, false
	f.segs, f.noMerge, f.HWQueue = 0, true, hw
	// Its time counts from the kick (blk_rq_init; diskstats' flush
	// ticks).
	f.Queued = q.e.Now()
	q.stats.InFlight++
	fq.running = f
	fq.covered = append(fq.covered, fq.pending...)
	clear(fq.pending)
	fq.pending = fq.pending[:0]
	h.list = slices.Insert(h.list, 0, f)
}

// flushDone is the end of the running flush request f: every request it
// covered takes its next step (or fails with f's error), then the next
// flush is kicked.
func (q *Queue) flushDone(f *Request) {
	fq := &q.hwqs[f.HWQueue].fq
	fq.running = nil
	list := fq.covered
	fq.covered = fq.spare[:0]
	for i, w := range list {
		list[i] = nil
		q.flushStep(w, f.Err)
	}
	fq.spare = list[:0]
	q.kickFlush(f.HWQueue)
}

// flushStep moves request w on once the flush it waited for is done.
func (q *Queue) flushStep(w *Request, err error) {
	if w.fstep == fstepData && err == nil {
		w.seqPre, w.seqFUA = false, false
		q.dispatchFirst(w)
		return
	}
	if w.fstep == fstepEnd && w.Bytes == 0 {
		// blk_update_request traces the empty flush's own completion,
		// its PREFLUSH stripped by blk_insert_flush (traceDone shows a
		// request's Flush, not its bio's PREFLUSH).
		q.traceDone(w, err)
	}
	q.stats.InFlight--
	for _, b := range w.Bios {
		if err != nil {
			b.Err = err
		}
		q.endBio(b)
	}
	q.freeRequest(w)
}

// pageSize is the memory page behind each scatter-gather segment: direct
// IO and page-cache bios carry one page per segment (their pages are not
// physically contiguous).
const pageSize = 4096

// bioSegments is the number of scatter-gather segments of b.
func bioSegments(b *Bio) int { return int((b.Bytes + pageSize - 1) / pageSize) }

// fail ends b with err (nil for a flush with nothing to flush) from an
// event, not inside Submit.
func (q *Queue) fail(b *Bio, err error) {
	b.Err = err
	q.failed.bios = append(q.failed.bios, b)
	q.e.After(0, &q.failed, 0)
}

func (q *Queue) newBio() *Bio {
	if n := len(q.freeBios); n > 0 {
		b := q.freeBios[n-1]
		q.freeBios = q.freeBios[:n-1]
		return b
	}
	return &Bio{}
}

func (q *Queue) newRequest() *Request {
	if n := len(q.free); n > 0 {
		r := q.free[n-1]
		q.free = q.free[:n-1]
		return r
	}
	return &Request{Tag: -1}
}

// queueBio merges b into a plugged or queued request, or makes a request
// of it (G) that goes to the plug or is inserted (I) and run.
func (q *Queue) queueBio(b *Bio, plug *Plug) {
	q.tick()
	if q.opt.NoMerges < 2 && !b.noMerge {
		if plug != nil && q.mergeInto(plug.reqs, b, true) {
			return
		}
		if q.sched != nil {
			if q.sched.bioMerge(q, b) {
				return
			}
		} else if q.mergeInto(q.hwqs[q.hwqOf(b.Issuer)].list, b, false) {
			return
		}
	}
	r := q.requestFor(b)
	if plug != nil {
		plug.add(r)
		return
	}
	q.insert(r)
	q.run()
}

func (q *Queue) hwqOf(iss Issuer) int { return iss.CPU % len(q.hwqs) }

// requestFor allocates a request holding bio b alone (G): a flush's is
// never merged into.
func (q *Queue) requestFor(b *Bio) *Request {
	r := q.newRequest()
	r.Op, r.Sector, r.Bytes, r.Err = b.Op, b.Sector, b.Bytes, nil
	r.Bios = append(r.Bios[:0], b)
	r.Issuer, r.Sync, r.NoIdle, r.Rahead, r.Meta = b.Issuer, b.Sync, b.NoIdle, b.Rahead, b.Meta
	r.Flush, r.FUA = false, false
	r.seqPre, r.seqFUA, r.fstep, r.post, r.inSeq = b.Flush, b.FUA, 0, false, false
	r.segs, r.noMerge = bioSegments(b), b.noMerge || b.Flush || b.FUA
	r.HWQueue = q.hwqOf(b.Issuer)
	r.Queued = q.e.Now()
	q.stats.InFlight++
	q.traceReq(TraceGetRequest, r, 0)
	return r
}

// mergeInto tries to merge b into one of reqs, newest first (at most
// eight for the software queue, as blk_bio_list_merge checks). It
// reports whether b was merged. nomerges=1 does not narrow it: the
// kernel's plug and software-queue merges test only nomerges=2
// (blk_queue_nomerges); nomerges=1 (QUEUE_FLAG_NOXMERGES) limits the
// elevator's lookups alone.
func (q *Queue) mergeInto(reqs []*Request, b *Bio, plugged bool) bool {
	limit := 8
	if plugged {
		limit = len(reqs)
	}
	for i := len(reqs) - 1; i >= 0 && limit > 0; i-- {
		limit--
		if q.tryMerge(reqs[i], b, true) {
			return true
		}
	}
	return false
}

// canMerge reports whether b may join r at all (direction, flags, limits,
// and the scheduler's consent, which plug merges ask too).
func (q *Queue) canMerge(r *Request, b *Bio) bool {
	return r.Op == b.Op && !r.noMerge && !b.noMerge && r.Tag < 0 &&
		r.Bytes+b.Bytes <= q.maxReq && r.segs+bioSegments(b) <= q.maxSeg &&
		(q.sched == nil || q.sched.allowMerge(r, b))
}

// tryMerge merges b into r at its back, or at its front when front is
// allowed, and reports whether it did.
func (q *Queue) tryMerge(r *Request, b *Bio, front bool) bool {
	if !q.canMerge(r, b) {
		return false
	}
	switch {
	case r.Sector+r.Bytes/SectorSize == b.Sector:
		r.Bios = append(r.Bios, b)
		r.Bytes += b.Bytes
		r.segs += bioSegments(b)
		q.merged(r, b, TraceBackMerge)
		return true
	case front && b.Sector+b.Bytes/SectorSize == r.Sector:
		r.Bios = slices.Insert(r.Bios, 0, b)
		r.Sector = b.Sector
		r.Bytes += b.Bytes
		r.segs += bioSegments(b)
		q.merged(r, b, TraceFrontMerge)
		return true
	}
	return false
}

// merged counts and traces b's merge into r. It does not make r the
// one-hit candidate: only the scheduler's merges do (elv_merged_request),
// not plug or software-queue merges.
func (q *Queue) merged(r *Request, b *Bio, a TraceAction) {
	q.stats.Merges[b.Op]++
	q.traceBio(a, b, 0)
}

// insert hands a request to the scheduler (I) or, without one, to its
// hardware queue's list, issued from there in order as tags free up.
func (q *Queue) insert(r *Request) {
	if q.sched != nil {
		q.traceReq(TraceInsert, r, 0)
		q.sched.insert(q, r)
		return
	}
	h := &q.hwqs[r.HWQueue]
	if len(h.list) >= len(h.tags) {
		// Without a scheduler a request that finds a free tag is issued
		// directly (blk_mq_try_issue_directly, and from a plug
		// blk_mq_try_issue_list_directly), which traces no I; only one
		// that must wait for a tag is inserted in the hardware queue's
		// list (blk_mq_insert_requests traces I).
		q.traceReq(TraceInsert, r, 0)
	}
	h.list = append(h.list, r)
}

// run issues requests while tags are free (D): first those on the
// hardware queues' lists (without a scheduler every request; with one,
// flushes, which bypass it), as blk-mq serves hctx->dispatch before the
// elevator, then the scheduler's.
func (q *Queue) run() {
	for i := range q.hwqs {
		h := &q.hwqs[i]
		for len(h.list) > 0 && len(h.tags) > 0 {
			r := h.list[0]
			copy(h.list, h.list[1:])
			h.list[len(h.list)-1] = nil
			h.list = h.list[:len(h.list)-1]
			q.issue(r)
		}
	}
	if q.sched == nil {
		return
	}
	for {
		hw := q.freeHWQueue()
		if hw < 0 {
			return
		}
		r := q.sched.dispatch(q)
		if r == nil {
			return
		}
		r.HWQueue = hw
		q.issue(r)
	}
}

// freeHWQueue returns the first hardware queue with a free tag, or -1.
func (q *Queue) freeHWQueue() int {
	for i := range q.hwqs {
		if len(q.hwqs[i].tags) > 0 {
			return i
		}
	}
	return -1
}

// issue gives r a tag on its hardware queue and submits it to the device.
func (q *Queue) issue(r *Request) {
	if q.lastMrg == r {
		q.lastMrg = nil
	}
	h := &q.hwqs[r.HWQueue]
	r.Tag = h.tags[len(h.tags)-1]
	h.tags = h.tags[:len(h.tags)-1]
	q.inFlight++
	r.Started = q.e.Now()
	if !r.Flush {
		q.stats.DispatchedSizes[r.Op][r.Bytes]++
	}
	q.traceReq(TraceIssue, r, 0)
	q.dev.Submit(r)
}

// tick integrates the time-based counters up to Now.
func (q *Queue) tick() {
	now := q.e.Now()
	if d := time.Duration(now - q.lastTick); d > 0 {
		if q.stats.InFlight > 0 {
			q.stats.IOTicks += d
			q.stats.TimeInQueue += d * time.Duration(q.stats.InFlight)
		}
		q.lastTick = now
	}
}

// CompleteRequest is called by the device when r has finished. A failed
// request (r.Err set) is counted like one that succeeded, as the kernel's
// blk_update_request and blk_account_io_done count it: an IO, its
// sectors and its time in /proc/diskstats; its bios end with r.Err.
func (q *Queue) CompleteRequest(r *Request) {
	q.tick()
	q.lastDone = q.e.Now()
	op := r.Op
	if r.Flush {
		q.stats.Flushes++
		q.stats.FlushTicks += time.Duration(q.e.Now() - r.Queued)
	} else {
		q.stats.IOs[op]++
		q.stats.Sectors[op] += uint64(r.Sectors())
		q.stats.Ticks[op] += time.Duration(q.e.Now() - r.Queued)
	}
	q.inFlight--
	q.traceDone(r, r.Err)
	// Fix (tests): free the tag before ending the bios: an EndBio that
	// submits the next bio at full depth is dispatched at once and needs
	// it.
	h := &q.hwqs[r.HWQueue]
	h.tags = append(h.tags, r.Tag)
	r.Tag = -1
	if r == h.fq.running {
		q.stats.InFlight--
		q.flushDone(r)
		q.freeRequest(r)
		q.run()
		return
	}
	now := q.e.Now()
	for _, b := range r.Bios {
		q.stats.Bios[op]++
		q.stats.D2C[op] += time.Duration(now - r.Started)
		q.stats.Q2C[op] += time.Duration(now - b.Submitted)
	}
	if r.seqData {
		r.seqData = false
		h.fq.dataInFlight--
	}
	if r.inSeq {
		if r.post && r.Err == nil {
			// FUA without device support: the bios end with a flush
			// after the write.
			r.post = false
			q.waitFlush(r, fstepEnd)
			q.run()
			return
		}
	}
	q.stats.InFlight--
	for _, b := range r.Bios {
		if r.Err != nil {
			b.Err = r.Err
		}
		q.endBio(b)
	}
	if q.sched != nil && !r.inSeq {
		q.sched.completed(q, r)
	}
	if r.inSeq {
		q.kickFlush(r.HWQueue) // a flush held back for this write may go
	}
	q.freeRequest(r)
	q.run()
}

// traceDone traces r's completion (C) with err's errno: blk_update_request
// traces it with blk_status_to_errno of the request's status (EIO,
// ENOSPC, ETIMEDOUT ... as the device failed it).
func (q *Queue) traceDone(r *Request, err error) {
	if q.tracer == nil {
		return
	}
	errno := 0
	if err != nil {
		errno = ErrnoOf(err)
	}
	op, sync := r.Op, r.Sync
	if r.Flush {
		op, sync = flushTraceOp, false
	}
	q.tev = TraceEvent{Time: q.e.Now(), Action: TraceComplete, Op: op, Sync: sync, Rahead: r.Rahead, Flush: r.Flush, FUA: r.FUA, Meta: r.Meta, Sector: r.Sector, Bytes: r.Bytes,
		PID: r.Issuer.PID, Comm: r.Issuer.Comm, CPU: r.Issuer.CPU, Error: errno}
	q.tracer.Trace(&q.tev)
}

// flushTraceOp is the direction a flush request is traced with: the
// kernel's flush_rq is REQ_OP_FLUSH, which blktrace files as a read (not
// a write), so blkparse prints it "FN".
const flushTraceOp = OpRead

func (q *Queue) freeRequest(r *Request) {
	clear(r.Bios)
	r.Bios = r.Bios[:0]
	r.Tag = -1
	r.fstep, r.post, r.inSeq, r.seqData, r.FUA, r.Flush = 0, false, false, false, false, false
	q.free = append(q.free, r)
}

// endBio completes b, or one piece of a split bio (the parent completes
// with the last piece, its read stamps sorted by sector).
func (q *Queue) endBio(b *Bio) {
	p := b.parent
	if p == nil {
		if b.End != nil {
			b.End.EndBio(b)
		}
		return
	}
	if b.Err != nil && p.Err == nil {
		p.Err = b.Err
	}
	b.Reset()
	q.freeBios = append(q.freeBios, b)
	p.remaining--
	if p.remaining > 0 {
		return
	}
	if p.Op == OpRead {
		slices.SortFunc(p.Data, func(x, y StampRun) int { return cmp.Compare(x.Sector, y.Sector) })
	}
	if p.End != nil {
		p.End.EndBio(p)
	}
}

// target is the bio whose Data a read of b fills: its parent if b is a
// piece of a split bio.
func (b *Bio) target() *Bio {
	if b.parent != nil {
		return b.parent
	}
	return b
}

// transferData applies a completed request to a stamp store: writes stamp
// their sectors, reads collect the stamps they find.
func transferData(store *StampMap, r *Request) {
	for _, b := range r.Bios {
		if b.Op == OpWrite {
			if runs := b.target().WriteRuns; len(runs) > 0 {
				// Only the part of the runs this bio (or piece) covers.
				start, end := b.Sector, b.Sector+b.Sectors()
				for _, w := range runs {
					s, e := max(w.Sector, start), min(w.Sector+w.Sectors, end)
					if e > s {
						store.Write(s, e-s, w.Stamp)
					}
				}
				continue
			}
			store.Write(b.Sector, b.Sectors(), b.Stamp)
		} else if b.CollectData {
			t := b.target()
			t.Data = store.Read(t.Data, b.Sector, b.Sectors())
		}
	}
}

// SetTracer sends the queue's events to t (nil stops tracing).
func (q *Queue) SetTracer(t Tracer) { q.tracer = t }

// traceBio reports an event about a bio.
func (q *Queue) traceBio(a TraceAction, b *Bio, extra uint64) {
	if q.tracer != nil {
		q.trace(a, b.Op, b.Sync, b.Rahead, b.Flush, b.FUA, b.Meta, b.Sector, b.Bytes, b.Issuer, extra)
	}
}

// traceReq reports an event about a request.
func (q *Queue) traceReq(a TraceAction, r *Request, extra uint64) {
	if q.tracer != nil {
		op, sync := r.Op, r.Sync
		if r.Flush {
			op, sync = flushTraceOp, false
		}
		q.trace(a, op, sync, r.Rahead, r.Flush || r.seqPre, r.seqFUA || r.FUA, r.Meta, r.Sector, r.Bytes, r.Issuer, extra)
	}
}

// trace reports one event if a tracer is set.
func (q *Queue) trace(a TraceAction, op Op, sync, rahead, flush, fua, meta bool, sector, bytes int64, iss Issuer, extra uint64) {
	if q.tracer == nil {
		return
	}
	q.tev = TraceEvent{Time: q.e.Now(), Action: a, Op: op, Sync: sync, Rahead: rahead, Flush: flush, FUA: fua, Meta: meta, Sector: sector, Bytes: bytes,
		PID: iss.PID, Comm: iss.Comm, CPU: iss.CPU, Extra: extra}
	q.tracer.Trace(&q.tev)
}

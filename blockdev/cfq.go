package blockdev

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/blksim/blksim/sim"
)

// CFQOptions are the tunables of cfq, the legacy (single-queue) Completely
// Fair Queueing scheduler that kernels up to 4.20 used on SCSI/UFS disks
// (/sys/block/*/queue/iosched). Zero fields take CFQ's defaults.
type CFQOptions struct {
	// Quantum caps the requests in flight from the queue being served
	// (cfq_quantum, 8).
	Quantum int
	// SliceSync and SliceAsync are the time slices of a process's sync
	// queue and of the async (writeback) queue (100 ms, 40 ms).
	SliceSync, SliceAsync time.Duration
	// SliceIdle is how long CFQ keeps the device idle for the served
	// process's next sync request when its queue runs empty (8 ms on a
	// rotational device; none on a non-rotational one, as since 4.12;
	// negative disables idling).
	SliceIdle time.Duration
	// FifoExpireSync and FifoExpireAsync bound how long a request waits
	// before it is served out of sector order (125 ms, 250 ms).
	FifoExpireSync, FifoExpireAsync time.Duration
	// TargetLatency is the time in which cfq's low_latency mode means to
	// serve every busy queue once (target_latency, 300 ms; zero or
	// negative: 300 ms).
	TargetLatency time.Duration
	// NoLowLatency turns low_latency off (sysfs low_latency=0): slices
	// then keep their full length however many queues are busy.
	NoLowLatency bool
}

// cfqQueue is one process's sync queue, or the shared async queue.
type cfqQueue struct {
	key      uint64
	sync     bool
	sorted   []*Request // by sector
	fifo     []*Request // by insertion
	inflight int
	queued   bool // on the round-robin list
	noIdle   bool // its latest request was a sync write without REQ_IDLE
}

// asyncKey is the queue of async (writeback) requests.
const asyncKey = ^uint64(0)

// cfq serves one queue at a time for a time slice (which starts when its
// first request completes), issuing its requests in sector order. How
// many may be in flight follows cfq_may_dispatch: Quantum/2 at any time;
// while other queues are busy, more only once the slice has started and
// only while it would outlast SliceIdle per request in flight
// (cfq_slice_used_soon), up to Quantum; any number when no other queue
// is busy or it is the only busy sync queue. An async queue waits while
// sync requests are in flight. In low_latency mode (the default) a slice
// shrinks so that the busy queues' sync slices fit TargetLatency, but not
// below twice SliceIdle (cfq_scaled_cfqq_slice), so with many busy
// queues and SliceIdle set, the served queue keeps Quantum/2 in flight
// (for a Quantum of 6 or more). A queue whose slice is used up yields to
// the next busy queue at once, its requests still in flight.
// When the served queue runs empty,
// cfq idles up to SliceIdle for the process's next sync request, waiting
// for the requests it has in flight, before moving to the next busy
// queue. Idling keeps one reader's stream sequential on a disk. After a
// sync write without REQ_IDLE (fsync writeback), and on a non-rotational
// device with a deep queue (cfq's hw_tag), it idles only for the last
// busy queue of its kind (see shouldIdle) and otherwise moves on at once,
// leaving the served queue's requests in flight (cfq_should_idle), so many
// readers still fill a flash device; since 4.12 SliceIdle defaults to
// none there anyway. Queues are
// looked up by key; their service order is round-robin, in the order they
// became busy, except that a sync request preempts an async queue being
// served and its queue goes next (cfq_should_preempt's first rule). Not
// modelled: the other preemption rules, queue merging of cooperating
// processes (cfq_close_cooperator), group idling, the service trees and
// workload slices of sync, sync-noidle and async queues, the ramp of an
// async queue's depth after a delayed sync request, its expiry after
// cfq_prio_to_maxrq dispatches, an expired FIFO request's exemption from
// the dispatch limits (must_dispatch), and the update of the busy-queue
// average when a preempted queue's slice had not started.
type cfq struct {
	e        *sim.Engine
	q        *Queue
	opt      CFQOptions
	nonrot   bool // non-rotational with a deep queue
	queues   map[uint64]*cfqQueue
	rr       []*cfqQueue // busy queues waiting for service
	active   *cfqQueue
	slice    sim.Time // end of the active queue's slice (none until sliceNew ends)
	sliceNew bool     // no request of the active queue completed yet
	busyAvg  int      // cfq_group_get_avg_queues: busy queues, averaged
	inflight [2]int   // requests in flight, async [0] and sync [1]
	idling   bool
	gen      uint64 // invalidates stale idle timers
}

func newCFQ(e *sim.Engine, q *Queue, o CFQOptions) *cfq {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if o.Quantum <= 0 {
		o.Quantum = 8
	}
	def(&o.SliceSync, 100*time.Millisecond)
	def(&o.SliceAsync, 40*time.Millisecond)
	// cfq's hw_tag: the driver keeps CFQ_HW_QUEUE_MIN (5) or more
	// requests in flight.
	l := q.dev.Limits()
	nonrot := !l.Rotational && q.depth >= 5
	if o.SliceIdle == 0 && !l.Rotational {
		o.SliceIdle = -1 // cfq_registered_queue: no idling on SSDs (4.12)
	}
	def(&o.SliceIdle, 8*time.Millisecond)
	def(&o.FifoExpireSync, 125*time.Millisecond)
	def(&o.FifoExpireAsync, 250*time.Millisecond)
	if o.TargetLatency <= 0 {
		o.TargetLatency = 300 * time.Millisecond
	}
	return &cfq{e: e, q: q, opt: o, nonrot: nonrot, queues: make(map[uint64]*cfqQueue)}
}

func (c *cfq) name() string { return SchedCFQ }

// isSync is the kernel's op_is_sync: every read is synchronous, and a
// write is when it is flagged so (direct IO, fsync's WB_SYNC_ALL
// writeback).
func isSync(op Op, flagged bool) bool { return op == OpRead || flagged }

// keyOf is the queue a bio or request goes to: its process's for sync IO
// (every read, buffered readahead included), the shared async queue for
// other writes.
func keyOf(sync bool, iss Issuer) uint64 {
	if !sync {
		return asyncKey
	}
	return uint64(iss.PID)
}

func (c *cfq) queueFor(key uint64, sync bool) *cfqQueue {
	cq := c.queues[key]
	if cq == nil {
		cq = &cfqQueue{key: key, sync: sync}
		c.queues[key] = cq
	}
	return cq
}

func (c *cfq) insert(q *Queue, r *Request) {
	sync := isSync(r.Op, r.Sync)
	cq := c.queueFor(keyOf(sync, r.Issuer), sync)
	r.cfqq = cq
	if sync {
		cq.noIdle = r.Op == OpWrite && r.NoIdle // cfq_update_idle_window
	}
	expire := c.opt.FifoExpireAsync
	if cq.sync {
		expire = c.opt.FifoExpireSync
	}
	r.deadline = q.e.Now() + sim.Time(expire)
	i, _ := slices.BinarySearchFunc(cq.sorted, r.Sector, func(x *Request, s int64) int {
		if x.Sector < s {
			return -1
		}
		return 1
	})
	cq.sorted = slices.Insert(cq.sorted, i, r)
	cq.fifo = append(cq.fifo, r)
	if cq == c.active {
		if c.idling { // the process we idled for came back
			c.idling = false
			c.gen++
		}
		return
	}
	if c.active != nil && !c.active.sync && cq.sync {
		// cfq_should_preempt: a sync request preempts the async queue;
		// its queue is served next (cfq_preempt_queue).
		if cq.queued {
			c.rr = slices.Delete(c.rr, slices.Index(c.rr, cq), slices.Index(c.rr, cq)+1)
		}
		c.expire()
		cq.queued = true
		c.rr = slices.Insert(c.rr, 0, cq)
		return
	}
	if !cq.queued {
		cq.queued = true
		c.rr = append(c.rr, cq)
	}
}

// allowMerge lets b join only a request of the queue b would go to
// (cfq_allow_bio_merge): never a sync bio into an async request or
// another process's.
func (c *cfq) allowMerge(r *Request, b *Bio) bool {
	return keyOf(isSync(r.Op, r.Sync), r.Issuer) == keyOf(isSync(b.Op, b.Sync), b.Issuer)
}

// bioMerge merges b into a request of its own queue (back, then front).
func (c *cfq) bioMerge(q *Queue, b *Bio) bool {
	cq := c.queues[keyOf(isSync(b.Op, b.Sync), b.Issuer)]
	if cq == nil {
		return false
	}
	for _, r := range cq.sorted {
		if q.tryMerge(r, b, true) {
			if r.Sector == b.Sector { // front merge moved the start
				slices.SortFunc(cq.sorted, func(x, y *Request) int {
					return cmp.Compare(x.Sector, y.Sector)
				})
			}
			return true
		}
	}
	return false
}

// remove takes r out of its queue's lists.
func (cq *cfqQueue) remove(r *Request) {
	if i := slices.Index(cq.sorted, r); i >= 0 {
		cq.sorted = slices.Delete(cq.sorted, i, i+1)
	}
	if i := slices.Index(cq.fifo, r); i >= 0 {
		cq.fifo = slices.Delete(cq.fifo, i, i+1)
	}
}

// expire ends the active queue's service; it goes back on the
// round-robin list if it still has requests.
func (c *cfq) expire() {
	cq := c.active
	c.active = nil
	c.idling = false
	c.gen++
	if cq != nil && len(cq.sorted) > 0 && !cq.queued {
		cq.queued = true
		c.rr = append(c.rr, cq)
	}
}

// selectNext makes the next busy queue active, if any.
func (c *cfq) selectNext() bool {
	if len(c.rr) == 0 {
		return false
	}
	cq := c.rr[0]
	c.rr = slices.Delete(c.rr, 0, 1)
	cq.queued = false
	c.active = cq
	c.sliceNew = true
	c.slice = sim.Time(math.MaxInt64) // set at its first completion
	return true
}

// startSlice starts the active queue's time slice, at the completion of
// its first request (cfq_completed_request: cfq_set_prio_slice).
func (c *cfq) startSlice(now sim.Time) {
	c.slice = now + sim.Time(c.scaledSlice())
	c.sliceNew = false
}

// scaledSlice is the active queue's slice (cfq_scaled_cfqq_slice): in
// low_latency mode, when the busy queues' full sync slices would exceed
// TargetLatency, each slice shrinks in proportion, but not below twice
// SliceIdle (scaled like the slice itself).
func (c *cfq) scaledSlice() time.Duration {
	slice := c.opt.SliceAsync
	if c.active.sync {
		slice = c.opt.SliceSync
	}
	if c.opt.NoLowLatency {
		return slice
	}
	sync := c.opt.SliceSync
	expect := sync * time.Duration(c.avgBusy())
	if expect <= c.opt.TargetLatency {
		return slice
	}
	low := min(slice, mulDiv(2*c.idle(), slice, sync))
	return max(mulDiv(slice, c.opt.TargetLatency, expect), low)
}

// mulDiv is a*b/c for non-negative a, b and positive c without overflow
// of the product (as the kernel's u64 arithmetic holds slices of a
// minute); a quotient beyond the int64 range saturates.
func mulDiv(a, b, c time.Duration) time.Duration {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	return time.Duration(min(q, math.MaxInt64))
}

// avgBusy updates and returns the average number of busy queues
// (cfq_group_get_avg_queues): at each update it moves three quarters of
// the way to a higher count and a quarter of the way to a lower one.
func (c *cfq) avgBusy() int {
	// The served queue stays on its service tree until it expires, its
	// requests all dispatched or not (cfq_del_rq_rb).
	busy := len(c.rr)
	if c.active != nil {
		busy++
	}
	lo, hi := min(c.busyAvg, busy), max(c.busyAvg, busy)
	c.busyAvg = (3*hi + lo + 2) / 4
	return c.busyAvg
}

// idle is SliceIdle, 0 when idling is off.
func (c *cfq) idle() time.Duration { return max(c.opt.SliceIdle, 0) }

func (c *cfq) dispatch(q *Queue) *Request {
	now := q.e.Now()
	for {
		cq := c.active
		if cq == nil {
			if !c.selectNext() {
				return nil
			}
			continue
		}
		if now >= c.slice && len(c.rr) > 0 {
			// The slice is used up: the next queue is served at once,
			// this one's requests still in flight (cfq_select_queue).
			c.expire()
			continue
		}
		if len(cq.sorted) > 0 {
			if !cq.sync && c.inflight[1] > 0 {
				return nil // an async queue waits for sync IO to finish
			}
			if cq.sync && c.inflight[0] > 0 && c.shouldIdle(cq) {
				return nil // drain async requests before idling sync IO
			}
			if !c.mayDispatch(cq, now) {
				return nil
			}
			r := cq.sorted[0]
			if head := cq.fifo[0]; head.deadline <= now {
				r = head
			}
			cq.remove(r)
			cq.inflight++
			c.inflight[b2i(cq.sync)]++
			return r
		}
		// The active queue is empty.
		if !c.shouldIdle(cq) {
			c.expire()
			continue
		}
		if cq.inflight > 0 {
			return nil // CFQ waits for the served process's IO to finish
		}
		if now < c.slice {
			if !c.idling {
				c.idling = true
				c.gen++
				q.e.After(c.opt.SliceIdle, c, c.gen)
			}
			return nil
		}
		c.expire()
	}
}

// mayDispatch reports whether the active queue cq may put one more
// request in flight (cfq_may_dispatch): always below Quantum/2; beyond
// that, while other queues are busy, not when its slice is new or would
// end within SliceIdle per request in flight (cfq_slice_used_soon), and
// at most Quantum; with no limit when it is the only busy queue or the
// only busy sync queue.
func (c *cfq) mayDispatch(cq *cfqQueue, now sim.Time) bool {
	if cq.inflight < max(c.opt.Quantum/2, 1) {
		return true
	}
	others := len(c.rr) > 0
	promote := cq.sync && !c.otherSyncBusy()
	if others && !promote && c.sliceUsedSoon(cq, now) {
		return false
	}
	if !others || promote {
		return true
	}
	return cq.inflight < c.opt.Quantum
}

// sliceUsedSoon reports whether the active queue's slice is still new or
// would be over before its requests in flight complete, at SliceIdle
// each (cfq_slice_used_soon).
func (c *cfq) sliceUsedSoon(cq *cfqQueue, now sim.Time) bool {
	return c.sliceNew || now+sim.Time(c.idle()*time.Duration(cq.inflight)) > c.slice
}

// otherSyncBusy reports whether a sync queue other than the active one
// has requests.
func (c *cfq) otherSyncBusy() bool {
	for _, q := range c.rr {
		if q.sync {
			return true
		}
	}
	return false
}

// shouldIdle reports whether cfq keeps the device for the active queue
// cq once it has run empty (cfq_should_idle): always for a queue with
// its idle window on a disk; otherwise only when it is the last busy
// queue of its service tree. The trees are approximated by the idle
// window alone: queues after a sync write without REQ_IDLE form one,
// the other sync queues the other (cfq also moves seeky queues to the
// first; blksim does not track seeks).
func (c *cfq) shouldIdle(cq *cfqQueue) bool {
	if !cq.sync || c.opt.SliceIdle <= 0 {
		return false
	}
	if !cq.noIdle && !c.nonrot {
		return true
	}
	for _, q := range c.rr {
		if q.sync && q.noIdle == cq.noIdle {
			return false
		}
	}
	return true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Fire ends an idle wait that was not interrupted by a new request.
func (c *cfq) Fire(gen uint64) {
	if gen != c.gen || !c.idling {
		return
	}
	c.expire()
	c.q.run()
}

func (c *cfq) completed(q *Queue, r *Request) {
	if r.cfqq != nil {
		if r.cfqq == c.active && c.sliceNew {
			c.startSlice(q.e.Now())
		}
		r.cfqq.inflight--
		c.inflight[b2i(r.cfqq.sync)]--
		r.cfqq = nil
	}
}

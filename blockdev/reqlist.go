package blockdev

import (
	"time"

	"github.com/blksim/blksim/sim"
)

// Request-list constants of the legacy block layer (block/blk-core.c).
const (
	// defaultNrRequests is BLKDEV_MAX_RQ, a request list's default size.
	defaultNrRequests = 128
	// batchRequests (BLK_BATCH_REQ) and batchTime (BLK_BATCH_TIME, HZ/50)
	// bound a batching process's allocations past a full list.
	batchRequests = 32
	batchTime     = 20 * time.Millisecond
)

// requestList is the legacy single-queue layer's request_list: the
// requests allocated on a queue (queued in the scheduler, plugged or in
// flight), counted per direction, async [0] and sync [1], each up to
// limit (nr_requests). A bio needing a request when its direction's list
// is full puts its submitter to sleep (get_request, blktrace S) until a
// request of that direction is freed (freed_request wakes one sleeper).
// The process that fills a list, and each one woken, becomes a batcher
// (ioc_set_batching): it may allocate up to 32 more requests within 20 ms
// past the full mark, to at most 3/2 of the limit, so that a woken
// submitter makes progress.
type requestList struct {
	limit int
	count [2]int
	full  [2]bool
	wait  [2]sim.WaitQueue
	batch map[uint32]*ioBatch // by process (the kernel's io_context)
}

// ioBatch is a process's batching state (io_context's nr_batch_requests
// and last_waited).
type ioBatch struct {
	left int
	last sim.Time
}

func newRequestList(limit int) *requestList {
	if limit <= 0 {
		limit = defaultNrRequests
	}
	return &requestList{limit: limit, batch: make(map[uint32]*ioBatch)}
}

// batching is ioc_batching: the process still has batch allowance.
func (l *requestList) batching(pid uint32, now sim.Time) bool {
	b := l.batch[pid]
	return b != nil && (b.left == batchRequests || b.left > 0 && now < b.last+sim.Time(batchTime))
}

// setBatching is ioc_set_batching: a process that is not batching gets a
// fresh allowance.
func (l *requestList) setBatching(pid uint32, now sim.Time) {
	if l.batching(pid, now) {
		return
	}
	b := l.batch[pid]
	if b == nil {
		b = &ioBatch{}
		l.batch[pid] = b
	}
	b.left, b.last = batchRequests, now
}

// tryGet is __get_request's accounting for a request of direction pool
// for process pid: whether it may be allocated now (exempt: the scheduler
// lets this process allocate whatever the count, cfq's ELV_MQUEUE_MUST).
func (l *requestList) tryGet(pool int, pid uint32, now sim.Time, exempt bool) bool {
	c := l.count[pool]
	if c+1 >= l.limit {
		if !l.full[pool] {
			// This allocation fills the list: mark it full and let
			// its process finish a batch.
			l.full[pool] = true
			l.setBatching(pid, now)
		} else if !exempt && !l.batching(pid, now) {
			return false
		}
	}
	if c >= 3*l.limit/2 {
		return false
	}
	if l.batching(pid, now) {
		l.batch[pid].left--
	}
	l.count[pool]++
	return true
}

// put is freed_request: a request of direction pool is freed, and when
// the list has room again one sleeper is woken and the list is no longer
// full.
func (l *requestList) put(pool int) {
	l.count[pool]--
	if l.count[pool]+1 <= l.limit {
		l.wait[pool].WakeOne()
		l.full[pool] = false
	}
}

// getRequest accounts a new request for b in the request list, first
// sleeping t (the submitter, when it can sleep: a plug's owner) while
// the list refuses it; each sleep is traced (S). Without a task the
// request is allocated past the limit. It returns the request's pool.
func (q *Queue) getRequest(t *sim.Task, b *Bio) int {
	l := q.rl
	pool := b2i(isSync(b.Op, b.Sync))
	pid := b.Issuer.PID
	for {
		now := q.e.Now()
		if l.tryGet(pool, pid, now, q.mustQueue(b)) {
			return pool
		}
		if t == nil {
			l.count[pool]++
			return pool
		}
		q.traceBio(TraceSleep, b, 0)
		l.wait[pool].Wait(t)
		q.tick()
		l.setBatching(pid, q.e.Now())
	}
}

// mustQueue reports whether the scheduler lets b's process allocate a
// request past a full list (cfq_may_queue: the queue cfq is idling for).
func (q *Queue) mustQueue(b *Bio) bool {
	c, ok := q.sched.(*cfq)
	return ok && c.idling && c.active != nil && c.active.key == keyOf(isSync(b.Op, b.Sync), b.Issuer)
}

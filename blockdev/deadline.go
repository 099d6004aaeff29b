package blockdev

import (
	"slices"
	"time"

	"github.com/blksim/blksim/sim"
)

// deadline is the mq-deadline IO scheduler: per direction, requests sorted
// by sector and a FIFO with expiry times; reads are preferred, batches of
// up to fifo_batch requests are issued in sector order, a direction whose
// oldest request expired restarts from the FIFO, and writes are served
// after writes_starved read batches.
type deadline struct {
	expire      [2]time.Duration
	starveLimit int
	fifoBatch   int
	front       bool

	sorted  [2][]*Request // by sector
	fifo    [2][]*Request // by insertion
	next    [2]*Request   // next request of the current batch, in sector order
	batch   int
	starved int
}

func (d *deadline) name() string { return SchedMQDeadline }

// allowMerge lets any bio merge (mq-deadline has no merge veto).
func (d *deadline) allowMerge(*Request, *Bio) bool { return true }

func (d *deadline) completed(*Queue, *Request) {}

func newDeadline(o DeadlineOptions) *deadline {
	d := &deadline{
		expire:      [2]time.Duration{500 * time.Millisecond, 5 * time.Second},
		starveLimit: 2,
		fifoBatch:   16,
		front:       !o.NoFrontMerges,
	}
	if o.ReadExpire > 0 {
		d.expire[OpRead] = o.ReadExpire
	}
	if o.WriteExpire > 0 {
		d.expire[OpWrite] = o.WriteExpire
	}
	if o.WritesStarved > 0 {
		d.starveLimit = o.WritesStarved
	}
	if o.FifoBatch > 0 {
		d.fifoBatch = o.FifoBatch
	}
	return d
}

// pos returns where a request starting at sector sits (or would) in dir's
// sorted list.
func (d *deadline) pos(dir Op, sector int64) int {
	i, _ := slices.BinarySearchFunc(d.sorted[dir], sector, func(r *Request, s int64) int {
		switch {
		case r.Sector < s:
			return -1
		case r.Sector > s:
			return 1
		}
		return 0
	})
	return i
}

// insert queues r with its FIFO deadline, unless it joins the back of a
// queued request (dd_insert_request's blk_mq_sched_try_insert_merge). A
// mergeable request queued while no merge candidate is cached becomes
// the one-hit candidate (q->last_merge), as in dd_insert_request.
func (d *deadline) insert(q *Queue, r *Request) {
	r.deadline = q.e.Now() + sim.Time(d.expire[r.Op])
	if d.insertMerge(q, r) {
		return
	}
	i := d.pos(r.Op, r.Sector)
	d.sorted[r.Op] = slices.Insert(d.sorted[r.Op], i, r)
	d.fifo[r.Op] = append(d.fifo[r.Op], r)
	if q.lastMrg == nil && !r.noMerge {
		q.lastMrg = r
	}
}

// insertMerge is elv_attempt_insert_merge: r, about to be queued, is
// appended to the one-hit candidate if it continues it; with nomerges=0,
// else to the queued request that ends where r starts, and the grown
// request to the one that ends where it starts, and so on (kernels
// before 5.14 repeat the lookup). nomerges=2 tries none. It reports
// whether r was merged (and freed).
func (d *deadline) insertMerge(q *Queue, r *Request) bool {
	if q.opt.NoMerges == 2 || r.noMerge {
		return false
	}
	if m := q.lastMrg; m != nil && d.queued(m) && d.mergeRequests(q, m, r) {
		return true
	}
	if q.opt.NoMerges == 1 {
		return false
	}
	merged := false
	for {
		prev := d.endingAt(r.Op, r.Sector)
		if prev == nil || !d.mergeRequests(q, prev, r) {
			return merged
		}
		merged, r = true, prev
	}
}

// queued reports whether r is held by the scheduler (not issued, not
// in a plug).
func (d *deadline) queued(r *Request) bool {
	return r.Tag < 0 && slices.Contains(d.sorted[r.Op], r)
}

// endingAt returns the queued request of direction op that ends at
// sector (the elevator hash lookup), or nil.
func (d *deadline) endingAt(op Op, sector int64) *Request {
	s := d.sorted[op]
	if i := d.pos(op, sector); i > 0 && s[i-1].Sector+s[i-1].Bytes/SectorSize == sector {
		return s[i-1]
	}
	return nil
}

// remove takes r out of both lists.
func (d *deadline) remove(r *Request) {
	dir := r.Op
	if i := slices.Index(d.sorted[dir], r); i >= 0 {
		d.sorted[dir] = slices.Delete(d.sorted[dir], i, i+1)
	}
	if i := slices.Index(d.fifo[dir], r); i >= 0 {
		d.fifo[dir] = slices.Delete(d.fifo[dir], i, i+1)
	}
	if d.next[dir] == r {
		d.next[dir] = nil
	}
}

// after returns the request following r in sector order, or nil.
func (d *deadline) after(r *Request) *Request {
	s := d.sorted[r.Op]
	i := slices.Index(s, r)
	if i >= 0 && i+1 < len(s) {
		return s[i+1]
	}
	return nil
}

// bioMerge is elv_merge and blk_mq_sched_try_merge: with nomerges=1 only
// the one-hit candidate (q->last_merge) is tried, at its back or front;
// otherwise a back merge into the request ending where b starts, then a
// front merge into the one starting where b ends. Either way the grown
// request then absorbs its neighbour if they touch (attempt_back_merge,
// attempt_front_merge, which nomerges=1 does not prevent), and becomes
// the one-hit candidate (elv_merged_request).
func (d *deadline) bioMerge(q *Queue, b *Bio) bool {
	s := d.sorted[b.Op]
	if q.opt.NoMerges == 1 {
		r := q.lastMrg
		if r == nil || !d.queued(r) || !q.tryMerge(r, b, d.front) {
			return false
		}
		if r.Sector == b.Sector && r.Bios[0] == b {
			d.frontMerged(q, r)
		} else {
			d.backMerged(q, r)
		}
		return true
	}
	// back merge: the request whose end is b.Sector (sorted by start, so
	// look at the last request starting before b).
	if i := d.pos(b.Op, b.Sector); i > 0 {
		r := s[i-1]
		if q.tryMerge(r, b, false) {
			d.backMerged(q, r)
			return true
		}
	}
	if d.front {
		end := b.Sector + b.Bytes/SectorSize
		if i := d.pos(b.Op, end); i < len(s) && s[i].Sector == end {
			r := s[i]
			if q.canMerge(r, b) && q.tryMerge(r, b, true) {
				d.frontMerged(q, r)
				return true
			}
		}
	}
	return false
}

// backMerged lets r, grown at its back by a bio, absorb the request
// after it (attempt_back_merge) and caches it as the one-hit candidate.
func (d *deadline) backMerged(q *Queue, r *Request) {
	q.lastMrg = r
	if next := d.after(r); next != nil {
		d.mergeRequests(q, r, next)
	}
}

// frontMerged restores r's place in the sorted list after a bio joined
// its front, lets the request before it absorb it (attempt_front_merge)
// and caches the survivor as the one-hit candidate.
func (d *deadline) frontMerged(q *Queue, r *Request) {
	d.resort(r)
	q.lastMrg = r
	if i := slices.Index(d.sorted[r.Op], r); i > 0 {
		d.mergeRequests(q, d.sorted[r.Op][i-1], r)
	}
}

// resort restores r's place in the sorted list after its start moved.
func (d *deadline) resort(r *Request) {
	s := d.sorted[r.Op]
	i := slices.Index(s, r)
	s = slices.Delete(s, i, i+1)
	j := 0
	for j < len(s) && s[j].Sector < r.Sector {
		j++
	}
	d.sorted[r.Op] = slices.Insert(s, j, r)
}

// mergeRequests joins next into r when they are contiguous and fit the
// limits (the kernel's request-to-request merge, attempt_merge); next,
// queued or about to be, is freed, r keeps the earlier FIFO deadline and
// becomes the one-hit candidate (elv_merge_requests). It reports whether
// they merged.
func (d *deadline) mergeRequests(q *Queue, r, next *Request) bool {
	if r == next || r.Op != next.Op || r.noMerge || next.noMerge || r.Sector+r.Bytes/SectorSize != next.Sector ||
		r.Bytes+next.Bytes > q.maxReq || r.segs+next.segs > q.maxSeg {
		return false
	}
	r.Bios = append(r.Bios, next.Bios...)
	r.Bytes += next.Bytes
	r.segs += next.segs
	f := d.fifo[r.Op]
	if ni := slices.Index(f, next); ni >= 0 && next.deadline < r.deadline {
		// take next's place in the FIFO, as dd_merged_requests does (a
		// request being inserted is in no FIFO yet)
		r.deadline = next.deadline
		ri := slices.Index(f, r)
		f[ni] = r
		f = slices.Delete(f, ri, ri+1)
		d.fifo[r.Op] = f
		if i := slices.Index(d.sorted[next.Op], next); i >= 0 {
			d.sorted[next.Op] = slices.Delete(d.sorted[next.Op], i, i+1)
		}
		if d.next[next.Op] == next {
			d.next[next.Op] = r
		}
	} else {
		d.remove(next)
	}
	q.lastMrg = r
	q.stats.Merges[r.Op]++
	q.stats.InFlight--
	clear(next.Bios)
	next.Bios = next.Bios[:0]
	q.freeRequest(next)
	return true
}

// dispatch picks the next request to issue, or nil if none is queued.
func (d *deadline) dispatch(q *Queue) *Request {
	now := q.e.Now()
	var r *Request
	// Continue the current batch in sector order.
	if d.batch < d.fifoBatch {
		if n := d.next[OpRead]; n != nil {
			r = n
		} else if n := d.next[OpWrite]; n != nil {
			r = n
		}
	}
	if r == nil {
		dir := Op(255)
		reads, writes := len(d.fifo[OpRead]) > 0, len(d.fifo[OpWrite]) > 0
		switch {
		case reads && writes && d.starved >= d.starveLimit:
			dir = OpWrite
		case reads:
			if writes {
				d.starved++
			}
			dir = OpRead
		case writes:
			dir = OpWrite
		default:
			return nil
		}
		if dir == OpWrite {
			d.starved = 0
		}
		r = d.next[dir]
		if head := d.fifo[dir][0]; r == nil || head.deadline <= now {
			r = head
		}
		d.batch = 0
	}
	d.next[OpRead], d.next[OpWrite] = nil, nil
	d.next[r.Op] = d.after(r)
	d.remove(r)
	d.batch++
	return r
}

package blockdev

import "github.com/blksim/blksim/sim"

// Plug batches one task's bios before they reach the queue, like the
// kernel's blk_plug: the batch is flushed by Finish, when it holds
// plugFlushCount requests or one of plugFlushBytes or more, and when the
// task sleeps. Get one from Queue.StartPlug; a Plug is owned by its task.
//
// Its trace events are 5.x's: P when a request joins an empty batch
// (blk_start_plug itself traces nothing, so a plug that only merged
// bios, or saw none, leaves no P), U with the batch's depth when Finish
// or a full batch flushes it, and UT when the task's sleep does
// (blk_flush_plug_list from schedule: trace_block_unplug with explicit
// false); then I for each request a scheduler takes, or, without one,
// for each that must wait for a tag (the others are issued directly,
// blk_mq_try_issue_list_directly, and traced D only). Kernels from 5.16
// issue such a batch directly without U as well (blk_mq_plug_issue_direct);
// blksim traces the U.
type Plug struct {
	q      *Queue
	owner  *sim.Task
	prev   sim.SleepHook
	issuer Issuer
	reqs   []*Request
	active bool
}

// Kernel limits of a plug (BLK_MAX_REQUEST_COUNT, BLK_PLUG_FLUSH_SIZE).
const (
	plugFlushCount = 32
	plugFlushBytes = 128 << 10
)

// StartPlug starts batching t's bios (blk_start_plug). The plug flushes
// itself if t sleeps before Finish. Nothing is traced until a request
// joins the batch.
func (q *Queue) StartPlug(t *sim.Task, iss Issuer) *Plug {
	p := q.getPlug()
	p.owner = t
	p.issuer = iss
	p.active = true
	p.prev = t.SetSleepHook(p)
	return p
}

func (q *Queue) getPlug() *Plug {
	if n := len(q.plugs); n > 0 {
		p := q.plugs[n-1]
		q.plugs = q.plugs[:n-1]
		return p
	}
	return &Plug{q: q}
}

// Submit sends b through the queue with this plug: it is merged into a
// plugged request if it can be, else its new request joins the batch.
func (p *Plug) Submit(b *Bio) {
	b.Issuer = p.issuer
	p.q.submit(b, p)
}

// add puts a new request in the batch, flushing the batch first when it is
// full or its last request is large (blk_mq_submit_bio's plug rules), and
// traces P when the request starts a batch.
func (p *Plug) add(r *Request) {
	if n := len(p.reqs); n >= plugFlushCount || n > 0 && p.reqs[n-1].Bytes >= plugFlushBytes {
		p.flush(TraceUnplug)
	}
	if len(p.reqs) == 0 {
		p.q.trace(TracePlug, OpRead, false, false, false, false, false, 0, 0, p.issuer, 0)
	}
	p.reqs = append(p.reqs, r)
}

// BeforeSleep flushes the batch: the owner is about to sleep (UT).
func (p *Plug) BeforeSleep(*sim.Task) { p.flush(TraceUnplugTimer) }

// flush inserts the batch into the queue in order (how, U or UT, then I
// for each) and runs the queue.
func (p *Plug) flush(how TraceAction) {
	if len(p.reqs) == 0 {
		return
	}
	q := p.q
	q.trace(how, OpRead, false, false, false, false, false, 0, 0, p.issuer, uint64(len(p.reqs)))
	for i, r := range p.reqs {
		p.reqs[i] = nil
		q.insert(r)
	}
	p.reqs = p.reqs[:0]
	q.run()
}

// Finish flushes the batch and ends the plug (blk_finish_plug). The plug
// must not be used afterwards.
func (p *Plug) Finish() {
	if !p.active {
		panic("blockdev: Finish of a plug that is not active")
	}
	p.flush(TraceUnplug)
	p.owner.SetSleepHook(p.prev)
	p.active = false
	p.owner, p.prev = nil, nil
	p.q.plugs = append(p.q.plugs, p)
}

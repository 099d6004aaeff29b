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
// indexed by Op where there are two. Times are simulated.
type DiskStats struct {
	// IOs counts completed requests.
	IOs [2]uint64
	// Merges counts bios merged into existing requests.
	Merges [2]uint64
	// Sectors counts sectors transferred.
	Sectors [2]uint64
	// Ticks is the summed request time from queueing to completion.
	Ticks [2]time.Duration
	// InFlight is the number of requests between queueing and completion.
	InFlight int
	// IOTicks is the time during which at least one request was in flight.
	IOTicks time.Duration
	// TimeInQueue is the in-flight count integrated over time.
	TimeInQueue time.Duration
	// Splits counts bios split to the device's limits.
	Splits uint64
}

// QueueOptions tune a request queue; zero fields take the device's values.
type QueueOptions struct {
	// MaxSectorsKB caps request size (default: the device's MaxHWSectorsKB).
	MaxSectorsKB int
	// NrRequests caps the requests in flight (default: the device's depth).
	NrRequests int
}

// Queue turns bios into requests for one device: it checks them, splits
// them to the request size limit, waits for a tag when the device is full
// and dispatches in FIFO order. It may be used only on the engine goroutine.
type Queue struct {
	e      *sim.Engine
	dev    Device
	limits Limits
	maxReq int64
	depth  int

	inFlight int   // requests holding a tag
	tags     []int // free tags, lowest on top
	waiting  []*Request
	free     []*Request
	freeBios []*Bio

	stats    DiskStats
	lastTick sim.Time

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

// NewQueue attaches a queue to dev. It fails if the options exceed the
// device's limits.
func NewQueue(e *sim.Engine, dev Device, opt QueueOptions) (*Queue, error) {
	lim := dev.Limits()
	if lim.LogicalBlockSize <= 0 || lim.LogicalBlockSize%SectorSize != 0 {
		return nil, fmt.Errorf("blockdev: %s: logical block size %d is not a multiple of %d", dev.Name(), lim.LogicalBlockSize, SectorSize)
	}
	if lim.MaxHWSectorsKB <= 0 || lim.QueueDepth <= 0 {
		return nil, fmt.Errorf("blockdev: %s: max_hw_sectors_kb and queue depth must be positive", dev.Name())
	}
	q := &Queue{e: e, dev: dev, limits: lim}
	kb := lim.MaxHWSectorsKB
	if opt.MaxSectorsKB > 0 {
		if opt.MaxSectorsKB > kb {
			return nil, fmt.Errorf("blockdev: %s: max_sectors_kb %d exceeds max_hw_sectors_kb %d", dev.Name(), opt.MaxSectorsKB, kb)
		}
		kb = opt.MaxSectorsKB
	}
	q.maxReq = int64(kb) * 1024
	// Fix (tests): a request size that is not a multiple of the logical
	// block size would split bios into misaligned requests.
	if q.maxReq%int64(lim.LogicalBlockSize) != 0 {
		return nil, fmt.Errorf("blockdev: %s: max_sectors_kb %d is not a multiple of the logical block size %d", dev.Name(), kb, lim.LogicalBlockSize)
	}
	// Fix (tests): clamp absurd depths (the tag array is allocated
	// up front), as blk-mq does.
	q.depth = min(lim.QueueDepth, maxQueueDepth)
	q.failed.q = q
	if opt.NrRequests > 0 && opt.NrRequests < q.depth {
		q.depth = opt.NrRequests
	}
	for t := q.depth - 1; t >= 0; t-- {
		q.tags = append(q.tags, t)
	}
	dev.Attach(q)
	return q, nil
}

// Device returns the queue's device.
func (q *Queue) Device() Device { return q.dev }

// Limits returns the device's limits.
func (q *Queue) Limits() Limits { return q.limits }

// Stats returns the counters, with time-based ones brought up to Now.
func (q *Queue) Stats() DiskStats {
	q.tick()
	return q.stats
}

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

// Error names the offset, the length and the required alignment.
func (e *AlignmentError) Error() string {
	return fmt.Sprintf("offset %d length %d not aligned to %d bytes: %v", e.Offset, e.Length, e.Align, syscall.EINVAL)
}

// Is reports whether target is EINVAL.
func (e *AlignmentError) Is(target error) bool { return target == syscall.EINVAL }

// Submit queues b. The bio must be sector aligned; b.End is told when it
// completes (possibly with an error). Submit never blocks.
func (q *Queue) Submit(b *Bio) {
	b.Submitted = q.e.Now()
	b.remaining = 0
	// Fix (tests): check alignment to the logical block size (the Device
	// contract), not only to the sector.
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
	if b.Bytes <= q.maxReq {
		q.queue(b)
		return
	}
	q.stats.Splits++
	n := int((b.Bytes + q.maxReq - 1) / q.maxReq)
	b.remaining = n
	for off := int64(0); off < b.Bytes; off += q.maxReq {
		p := q.newBio()
		p.Op = b.Op
		p.Sector = b.Sector + off/SectorSize
		p.Bytes = min(q.maxReq, b.Bytes-off)
		p.Stamp = b.Stamp
		p.CollectData = b.CollectData
		p.Submitted = b.Submitted
		p.parent = b
		q.queue(p)
	}
}

// fail ends b with err from an event, not inside Submit.
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

// queue makes a request of one bio and dispatches or parks it.
func (q *Queue) queue(b *Bio) {
	q.tick()
	r := q.newRequest()
	r.Op, r.Sector, r.Bytes, r.Err = b.Op, b.Sector, b.Bytes, nil
	r.Bios = append(r.Bios[:0], b)
	r.Queued = q.e.Now()
	q.stats.InFlight++
	if q.inFlight < q.depth && len(q.waiting) == 0 {
		q.dispatch(r)
		return
	}
	q.waiting = append(q.waiting, r)
}

func (q *Queue) dispatch(r *Request) {
	q.inFlight++
	r.Tag = q.tags[len(q.tags)-1]
	q.tags = q.tags[:len(q.tags)-1]
	r.Started = q.e.Now()
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

// CompleteRequest is called by the device when r has finished.
func (q *Queue) CompleteRequest(r *Request) {
	q.tick()
	op := r.Op
	q.stats.IOs[op]++
	q.stats.Sectors[op] += uint64(r.Sectors())
	q.stats.Ticks[op] += time.Duration(q.e.Now() - r.Queued)
	q.stats.InFlight--
	q.inFlight--
	// Fix (tests): free the tag before ending the bios: an EndBio that
	// submits the next bio at full depth is dispatched at once and needs
	// it.
	q.tags = append(q.tags, r.Tag)
	r.Tag = -1
	for _, b := range r.Bios {
		if r.Err != nil {
			b.Err = r.Err
		}
		q.endBio(b)
	}
	clear(r.Bios)
	r.Bios = r.Bios[:0]
	q.free = append(q.free, r)
	if len(q.waiting) > 0 && q.inFlight < q.depth {
		w := q.waiting[0]
		copy(q.waiting, q.waiting[1:])
		q.waiting[len(q.waiting)-1] = nil
		q.waiting = q.waiting[:len(q.waiting)-1]
		q.dispatch(w)
	}
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
			store.Write(b.Sector, b.Sectors(), b.Stamp)
		} else if b.CollectData {
			t := b.target()
			t.Data = store.Read(t.Data, b.Sector, b.Sectors())
		}
	}
}

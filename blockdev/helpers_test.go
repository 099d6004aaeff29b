package blockdev

import (
	"fmt"
	"testing"
	"time"

	"github.com/blksim/blksim/sim"
)

const (
	us  = time.Microsecond
	ms  = time.Millisecond
	KiB = int64(1024)
	MiB = 1024 * KiB
)

// newEngine returns a bare engine (one CPU, free scheduling) that is
// closed when the test ends.
func newEngine(tb testing.TB) *sim.Engine {
	tb.Helper()
	e := sim.New(sim.Options{Seed: 1})
	tb.Cleanup(func() { _ = e.Close() })
	return e
}

// at runs fn at simulated time t (not in the past).
func at(e *sim.Engine, t time.Duration, fn func()) {
	e.AfterFunc(t-time.Duration(e.Now()), fn)
}

// run runs the engine until no event is left and fails the test on error.
func run(tb testing.TB, e *sim.Engine) {
	tb.Helper()
	if err := e.Run(-1); err != nil {
		tb.Fatal(err)
	}
}

// xfer is the time to move n bytes at mbps decimal MB/s, computed in
// integers; the test parameters are chosen so that it is exact.
func xfer(tb testing.TB, n int64, mbps int64) time.Duration {
	tb.Helper()
	if n*1000%mbps != 0 {
		tb.Fatalf("xfer(%d, %d) is not a whole number of ns", n, mbps)
	}
	return time.Duration(n * 1000 / mbps)
}

// testNVMeParams is a small NVMe with round numbers: 8 dies (4 channels x
// 2), 16 KiB pages, 2 planes (32 KiB program unit), a 1024 MB/s channel
// (4 KiB in 4us) and a 4096 MB/s host link (4 KiB in 1us).
func testNVMeParams() NVMeParams {
	return NVMeParams{
		Name:             "nvmetest",
		Capacity:         64 * MiB,
		LogicalBlockSize: 512,
		MaxHWSectorsKB:   128,
		QueueDepth:       256,
		Channels:         4,
		DiesPerChannel:   2,
		PageSize:         16 * KiB,
		Planes:           2,
		ReadTime:         50 * us,
		ProgramTime:      1 * ms,
		ChannelMBps:      1024,
		HostMBps:         4096,
		ReadOverhead:     5 * us,
		WriteOverhead:    2 * us,
		WriteBuffer:      256 * KiB,
	}
}

// newTestNVMe builds an NVMe from p and a queue on it.
func newTestNVMe(tb testing.TB, e *sim.Engine, p NVMeParams) (*NVMe, *Queue) {
	tb.Helper()
	d, err := NewNVMe(e, p)
	if err != nil {
		tb.Fatal(err)
	}
	q, err := NewQueue(e, d, QueueOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return d, q
}

// endRec is one EndBio call.
type endRec struct {
	At       sim.Time
	Err      error
	InSubmit bool
	Data     []StampRun
}

// bioLog is a BioEnder that records every completion per bio, and whether
// it happened inside Queue.Submit.
type bioLog struct {
	e        *sim.Engine
	inSubmit bool
	ends     map[*Bio][]endRec
}

func newBioLog(e *sim.Engine) *bioLog { return &bioLog{e: e, ends: make(map[*Bio][]endRec)} }

func (l *bioLog) EndBio(b *Bio) {
	l.ends[b] = append(l.ends[b], endRec{At: l.e.Now(), Err: b.Err, InSubmit: l.inSubmit,
		Data: append([]StampRun(nil), b.Data...)})
}

// submit sends b to q with l as its ender.
func (l *bioLog) submit(q *Queue, b *Bio) {
	b.End = l
	l.inSubmit = true
	q.Submit(b)
	l.inSubmit = false
}

// submitAt submits b at simulated time t.
func (l *bioLog) submitAt(q *Queue, t time.Duration, b *Bio) {
	at(l.e, t, func() { l.submit(q, b) })
}

// dispatch is one request as a device saw it.
type dispatch struct {
	At     sim.Time
	Op     Op
	Sector int64
	Bytes  int64
	Tag    int
}

func (d dispatch) String() string {
	return fmt.Sprintf("%v %s %d+%d tag %d", d.At, d.Op, d.Sector, d.Bytes, d.Tag)
}

// recDev wraps a device (held as a named field, so nothing escapes) and
// records what the queue dispatches and how many requests are outstanding.
type recDev struct {
	dev            Device
	e              *sim.Engine
	c              Completer
	dispatched     []dispatch
	completedAt    []sim.Time
	outstanding    int
	maxOutstanding int
}

func newRecDev(e *sim.Engine, d Device) *recDev { return &recDev{dev: d, e: e} }

func (w *recDev) Name() string       { return w.dev.Name() }
func (w *recDev) Capacity() int64    { return w.dev.Capacity() }
func (w *recDev) Limits() Limits     { return w.dev.Limits() }
func (w *recDev) Attach(c Completer) { w.c = c; w.dev.Attach(w) }

func (w *recDev) Submit(r *Request) {
	w.dispatched = append(w.dispatched, dispatch{At: w.e.Now(), Op: r.Op, Sector: r.Sector, Bytes: r.Bytes, Tag: r.Tag})
	w.outstanding++
	w.maxOutstanding = max(w.maxOutstanding, w.outstanding)
	w.dev.Submit(r)
}

func (w *recDev) CompleteRequest(r *Request) {
	w.outstanding--
	w.completedAt = append(w.completedAt, w.e.Now())
	w.c.CompleteRequest(r)
}

// reverseDev completes each request after 1ms minus its start sector in
// ns, so that the pieces of a split bio, submitted together, complete in
// reverse sector order. It keeps stamps like the memory device.
type reverseDev struct {
	e     *sim.Engine
	c     Completer
	store *StampMap
	slots slotTable
}

func (d *reverseDev) Name() string    { return "rev0" }
func (d *reverseDev) Capacity() int64 { return 64 * MiB }
func (d *reverseDev) Limits() Limits {
	return Limits{LogicalBlockSize: 512, MaxHWSectorsKB: 128, QueueDepth: 64}
}
func (d *reverseDev) Attach(c Completer) { d.c = c }
func (d *reverseDev) Submit(r *Request) {
	d.e.After(ms-time.Duration(r.Sector), d, uint64(d.slots.put(r)))
}
func (d *reverseDev) Fire(arg uint64) {
	r := d.slots.take(int(arg))
	transferData(d.store, r)
	d.c.CompleteRequest(r)
}

// expand turns runs into one stamp per sector, checking that they are
// sorted, contiguous and start at sector.
func expand(tb testing.TB, sector int64, runs []StampRun) []Stamp {
	tb.Helper()
	var out []Stamp
	pos := sector
	for _, r := range runs {
		if r.Sector != pos || r.Sectors <= 0 {
			tb.Fatalf("runs not contiguous and sorted at sector %d: %v", pos, runs)
		}
		for range r.Sectors {
			out = append(out, r.Stamp)
		}
		pos += r.Sectors
	}
	return out
}

// fill returns n copies of s.
func fill(n int64, s Stamp) []Stamp {
	out := make([]Stamp, n)
	for i := range out {
		out[i] = s
	}
	return out
}

package realdev

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/sim/wallclock"
)

// stopTag is the user data of the NOP that tells the reaper to finish.
const stopTag = ^uint64(0)

// slot is one in-flight request and its buffer. Only the engine goroutine
// touches slots; the reaper passes a completion's slot and result in the
// posted event's argument (slot | uint32(res)<<32).
type slot struct {
	r   *blockdev.Request
	buf []byte
	// held: the request is on the ring (entered or not) and its
	// completion not yet reaped. Kept only by a polled device, whose
	// engine goroutine reaps.
	held bool
}

// Device is a real O_DIRECT target as a blockdev.Device. Submit, Fire,
// Stats and Close run on the engine goroutine (DESIGN.md section 2).
//
// Where the kernel's io_uring_enter takes a timeout (5.11), the device is
// the wall clock's Poller (the first device opened on a clock; later ones
// get a reaper): the engine goroutine submits the requests of
// one instant in one io_uring_enter, and waits in the same call for
// their completions, which it posts to its own inbox. Elsewhere (or with
// Options.Reaper) a reaper goroutine waits for completions and posts them
// through the wall clock's inbox, and every request is entered as it is
// submitted.
type Device struct {
	e     *sim.Engine
	clock *wallclock.Clock
	t     *target
	spec  Spec
	c     blockdev.Completer
	ring  *uring
	qd    int
	maxKB int

	bufs  []byte
	slots []slot
	free  []int
	runs  []blockdev.StampRun // a read's decoded stamps (scratch)
	// failed are requests Submit refused, failed in order by failer.
	failed []*blockdev.Request
	// unentered are the slots pushed to the ring and not yet entered,
	// oldest first.
	unentered []int

	inflight   atomic.Int64
	polled     bool // the engine goroutine reaps (wallclock.Poller)
	reaperDone chan struct{}
	ringErr    error
	closed     bool
	stats      Stats
	gen        uint32 // this Open's generation, in every header written
	probeSeq   uint64 // the sequence of Probe's last written stamp
}

// Open opens the target sp with O_DIRECT, after the safety checks, for an
// engine running on clock (sim.Options.Clock must be clock). The caller
// must Close the device after the engine's last Run.
func Open(e *sim.Engine, clock *wallclock.Clock, sp Spec, opt Options) (*Device, error) {
	t, err := openTarget(sp, opt)
	if err != nil {
		return nil, err
	}
	qd := opt.QueueDepth
	if qd <= 0 {
		qd = 64
	}
	maxKB := opt.MaxHWSectorsKB
	if maxKB <= 0 {
		maxKB = 1024
	}
	if t.maxKB > 0 && t.maxKB < maxKB {
		maxKB = t.maxKB
	}
	if k := t.lbs / 1024; k > 1 {
		maxKB -= maxKB % k
	}
	ring, err := newURing(uint32(qd + 1))
	if err != nil {
		t.close()
		return nil, fmt.Errorf("%s: %w (io_uring is needed for real devices: %w)", sp, err, ErrNotSupported)
	}
	bufs, err := alignedBuf(qd * maxKB * 1024)
	if err != nil {
		ring.close()
		t.close()
		return nil, fmt.Errorf("%s: %w", sp, err)
	}
	d := &Device{e: e, clock: clock, t: t, spec: sp, ring: ring, qd: qd, maxKB: maxKB, bufs: bufs,
		slots: make([]slot, qd), reaperDone: make(chan struct{}), gen: rand.Uint32() | 1}
	for i := range d.slots {
		d.slots[i].buf = bufs[i*maxKB*1024 : (i+1)*maxKB*1024]
		d.free = append(d.free, qd-1-i)
	}
	d.stats = Stats{Backend: "io_uring", LogicalBlockSize: t.lbs, MemAlign: t.memAlign, Created: t.created, FirstCorrupt: -1}
	// One device per clock can reap on the engine goroutine; another
	// one gets a reaper.
	if ring.extArg && !opt.Reaper && clock.SetPoller(d) {
		d.polled = true
		d.stats.Backend = "io_uring (engine reaps)"
		close(d.reaperDone)
	} else {
		go d.reap()
	}
	return d, nil
}

// Name returns the device's name: the block device's, or the file's base
// name.
func (d *Device) Name() string { return d.t.name }

// Capacity returns the target's size in bytes (a file's size, or the
// spec's size=N if smaller).
func (d *Device) Capacity() int64 { return d.t.size }

// Limits returns the direct-IO alignment as the logical block size, the
// request size cap and the queue depth of Options, and for a block device
// whether sysfs calls it rotational (a file's backing device is not
// looked up: it is taken as non-rotational), and whether it has a
// volatile cache: a file always (what a flush writes out is the
// filesystem's), a block device unless sysfs queue/write_cache says
// "write through".
func (d *Device) Limits() blockdev.Limits {
	return blockdev.Limits{LogicalBlockSize: d.t.lbs, MaxHWSectorsKB: d.maxKB, QueueDepth: d.qd, Rotational: d.t.rot,
		VolatileCache: d.t.volatile}
}

// Attach sets the completer.
func (d *Device) Attach(c blockdev.Completer) { d.c = c }

// Spec returns the spec the device was opened with.
func (d *Device) Spec() Spec { return d.spec }

// Stats returns the counters so far.
func (d *Device) Stats() Stats {
	s := d.stats
	s.Enters = d.ring.enters
	return s
}

// Submit writes r's stamped sectors to the target, or reads them, through
// io_uring; a flush (r.Flush) is an fdatasync of the target
// (IORING_OP_FSYNC with IORING_FSYNC_DATASYNC: the kernel flushes the
// file's or the device's cache). It completes r later from an engine
// event, as the Device contract requires, with r.Err set if the kernel
// failed the IO, the transfer was short, or a sector read back was
// corrupt.
func (d *Device) Submit(r *blockdev.Request) {
	if d.closed || len(d.free) == 0 || r.Bytes > int64(d.maxKB)*1024 || r.Sector < 0 ||
		r.Sector*blockdev.SectorSize+r.Bytes > d.t.size || d.ringErr != nil {
		// A contract violation or a closed device: fail it, never write
		// outside the target.
		d.failed = append(d.failed, r)
		d.e.After(0, failer{d}, 0)
		return
	}
	i := d.free[len(d.free)-1]
	d.free = d.free[:len(d.free)-1]
	d.slots[i].r = r
	buf := d.slots[i].buf[:r.Bytes]
	op := uint8(opRead)
	switch {
	case r.Flush:
		op = opFsync
		d.stats.Flushes++
	case r.Op == blockdev.OpWrite:
		op = opWrite
		r.WriteStamps(func(sector, n int64, s blockdev.Stamp) {
			for k := range n {
				off := (sector + k - r.Sector) * blockdev.SectorSize
				putHeader(buf[off:off+blockdev.SectorSize], sector+k, s, d.gen)
			}
		})
		d.stats.Writes++
		d.stats.WriteBytes += uint64(r.Bytes)
	default:
		d.stats.Reads++
		d.stats.ReadBytes += uint64(r.Bytes)
	}
	d.inflight.Add(1)
	d.clock.Expect()
	d.ring.push(op, d.t.fd, buf, r.Sector*blockdev.SectorSize, uint64(i))
	d.slots[i].held = d.polled
	d.unentered = append(d.unentered, i)
	if d.polled && d.ring.pending < maxBatch {
		return // Flush enters it, with the rest of this instant's
	}
	d.Flush()
}

// maxBatch is the most requests a polled device holds before entering
// them while the engine is still busy (with completions, typically: this
// target's completions arrive in bursts of 25-30 at iodepth 32). Sixteen
// left the device idle while the engine worked through a burst; one
// syscall per request cost more; 8 measured best (FIO.md).
const maxBatch = 8

// Flush enters the requests submitted and not yet entered (wallclock.Poller).
func (d *Device) Flush() {
	if d.ring.pending == 0 || d.ringErr != nil {
		return
	}
	d.entered(d.ring.submit())
}

// entered notes the outcome of entering the pushed requests: those the
// kernel did not take (the ring's pending ones) are the last unentered.
func (d *Device) entered(err error) {
	d.unentered = d.unentered[len(d.unentered)-int(d.ring.pending):]
	if err != nil {
		d.broken(err)
	}
}

// broken records that the ring failed: nothing more can complete through
// it. A polled device then fails every request it holds and has not
// reaped (their IO may or may not have happened), so the run ends with
// errors instead of waiting forever. With a reaper, the requests the
// kernel never took fail; those it took are the reaper's to complete.
func (d *Device) broken(err error) {
	d.ringErr = err
	d.ring.discard() // what was never entered never will be
	fail := func(i int) {
		d.slots[i].held = false
		d.inflight.Add(-1)
		res := -int32(syscall.EIO)
		d.clock.Post(d, uint64(i)|uint64(uint32(res))<<32)
	}
	if !d.polled {
		// The reaper reaps what the kernel took; fail only the rest.
		for _, i := range d.unentered {
			fail(i)
		}
		d.unentered = d.unentered[:0]
		return
	}
	for i := range d.slots {
		if d.slots[i].held {
			fail(i)
		}
	}
	d.unentered = d.unentered[:0]
}

// InFlight reports how many requests are outstanding, 0 once the ring
// has failed (wallclock.Poller).
func (d *Device) InFlight() int {
	if d.ringErr != nil {
		return 0
	}
	return int(d.inflight.Load())
}

// Poll collects completions on the engine goroutine and posts them to the
// clock (wallclock.Poller): it checks the completion ring for up to spin,
// then enters the pending requests and waits up to wait in one
// io_uring_enter.
func (d *Device) Poll(spin, wait time.Duration) {
	spinUntilReady(d.ring, spin)
	if !d.ring.ready() && wait > 0 {
		if d.entered(d.ring.submitAndWait(wait)); d.ringErr != nil {
			return
		}
	}
	d.ring.reap(func(ud uint64, res int32) {
		d.slots[ud].held = false
		d.inflight.Add(-1)
		d.clock.Post(d, ud|uint64(uint32(res))<<32)
	})
}

// failer completes, in order, the requests Submit refused.
type failer struct{ d *Device }

// Fire fails the oldest refused request.
func (f failer) Fire(uint64) {
	d := f.d
	r := d.failed[0]
	d.failed = d.failed[1:]
	r.Err = fmt.Errorf("realdev %s: %s of %d bytes at sector %d not issued (outside the target, over the queue depth, or the device is closed or broken): %w", d.t.name, r.Op, r.Bytes, r.Sector, blockdev.ErrIO)
	d.stats.Errors++
	d.c.CompleteRequest(r)
}

// Fire completes the request in slot i: it runs on the engine goroutine,
// posted by the reaper through the wall clock's inbox.
func (d *Device) Fire(arg uint64) {
	i, res := int(uint32(arg)), int32(uint32(arg>>32))
	s := &d.slots[i]
	r := s.r
	s.r = nil
	d.free = append(d.free, i)
	switch {
	case res < 0:
		r.Err = fmt.Errorf("realdev %s: %s at sector %d: %w", d.t.name, r.Op, r.Sector, syscall.Errno(-res))
		d.stats.Errors++
	case int64(res) != r.Bytes:
		r.Err = fmt.Errorf("realdev %s: short %s at sector %d (%d of %d bytes): %w", d.t.name, r.Op, r.Sector, res, r.Bytes, blockdev.ErrIO)
		d.stats.Errors++
	case r.Op == blockdev.OpRead:
		if err := d.decode(r, s.buf[:r.Bytes]); err != nil {
			r.Err = err
		}
	}
	d.c.CompleteRequest(r)
}

// decode checks every sector header of a read and hands the stamps to the
// bios that collect them.
func (d *Device) decode(r *blockdev.Request, buf []byte) error {
	runs := d.runs[:0]
	var bad error
	n := r.Sectors()
	for k := range n {
		sec := r.Sector + k
		st, state, why := getHeader(buf[k*blockdev.SectorSize:(k+1)*blockdev.SectorSize], sec, d.gen)
		switch state {
		case sectorForeign:
			d.stats.ForeignSectors++
		case sectorStale:
			d.stats.StaleSectors++
		case sectorCorrupt:
			d.stats.CorruptSectors++
			if d.stats.FirstCorrupt < 0 {
				d.stats.FirstCorrupt, d.stats.FirstCorruptWhy = sec, why
			}
			if bad == nil {
				bad = fmt.Errorf("realdev %s: read at sector %d: %s: %w", d.t.name, r.Sector, why, ErrCorrupt)
			}
		}
		if l := len(runs) - 1; l >= 0 && runs[l].Stamp == st {
			runs[l].Sectors++
			continue
		}
		runs = append(runs, blockdev.StampRun{Sector: sec, Sectors: 1, Stamp: st})
	}
	d.runs = runs
	if bad != nil {
		return bad
	}
	r.DeliverRead(func(dst []blockdev.StampRun, sector, n int64) []blockdev.StampRun {
		end := sector + n
		for _, x := range runs {
			s, e := max(x.Sector, sector), min(x.Sector+x.Sectors, end)
			if e <= s {
				continue
			}
			if l := len(dst) - 1; l >= 0 && dst[l].Stamp == x.Stamp && dst[l].Sector+dst[l].Sectors == s {
				dst[l].Sectors += e - s
				continue
			}
			dst = append(dst, blockdev.StampRun{Sector: s, Sectors: e - s, Stamp: x.Stamp})
		}
		return dst
	})
	return nil
}

// reap runs on its own goroutine: it waits for completions and posts each
// to the engine's inbox, until Close's stop NOP and no IO is in flight.
func (d *Device) reap() {
	defer close(d.reaperDone)
	stop := false
	for !(stop && d.inflight.Load() == 0) {
		if err := d.ring.wait(); err != nil {
			// Unreachable in practice; leave the IO outstanding rather
			// than invent completions.
			return
		}
		d.ring.reap(func(ud uint64, res int32) {
			if ud == stopTag {
				stop = true
				return
			}
			d.inflight.Add(-1)
			d.clock.Post(d, ud|uint64(uint32(res))<<32)
		})
	}
}

// Close waits for IO in flight (there is none after a completed Run),
// stops the reaper and closes the target. It is idempotent.
func (d *Device) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	var err error
	if d.polled {
		// Nothing is in flight after a completed Run; after a failed
		// one, wait for what is, so no buffer is freed under the kernel.
		d.Flush()
		for d.inflight.Load() > 0 && d.ringErr == nil {
			d.Poll(0, wallclock.MaxPoll)
		}
		d.clock.SetPoller(nil)
		err = d.ringErr
	} else {
		d.ring.push(opNop, -1, nil, 0, stopTag)
		err = d.ring.submit()
		if err == nil {
			<-d.reaperDone
		}
	}
	d.ring.close()
	unix.Munmap(d.bufs)
	d.t.close()
	if err != nil {
		return fmt.Errorf("realdev %s: close: %w", d.t.name, err)
	}
	return nil
}

var _ blockdev.Device = (*Device)(nil)

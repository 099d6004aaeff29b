package blockdev

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/blksim/blksim/sim"
)

// NVMeParams describe a NAND flash SSD model: NAND dies behind channels, a
// DRAM (or SRAM) write buffer, a controller and a host link. The same model
// serves the kinds "nvme", "ufs" and "sata-ssd" (see FlashKinds); they
// differ in their defaults and limits (FlashDefaults). Bandwidths are
// decimal MB/s.
type NVMeParams struct {
	// Kind is the device kind: "nvme" (the zero value), "ufs" or
	// "sata-ssd".
	Kind             string
	Name             string
	Capacity         int64
	LogicalBlockSize int
	MaxHWSectorsKB   int
	QueueDepth       int

	// Channels and DiesPerChannel give the NAND parallelism.
	Channels       int
	DiesPerChannel int
	// PageSize is the NAND page (the read unit); Planes pages are
	// programmed together, so a program writes PageSize*Planes bytes.
	PageSize int64
	Planes   int
	// ReadTime is the array read time (tR) of one page; ProgramTime the
	// program time (tPROG) of one multi-plane program.
	ReadTime    time.Duration
	ProgramTime time.Duration
	// ChannelMBps is the NAND bus rate per channel (data moves between a
	// die and the controller at this rate while the die is busy).
	ChannelMBps float64
	// HostMBps is the host link rate (PCIe), shared by all transfers.
	HostMBps float64
	// ReadOverhead and WriteOverhead are the controller's per-command
	// latencies before the media or buffer is touched.
	ReadOverhead  time.Duration
	WriteOverhead time.Duration
	// CommandTime is the controller's processing time per command,
	// serialised: commands pass the controller one at a time, in
	// submission order, after their overhead. It caps the device at
	// 1/CommandTime commands per second (the small-IO ceiling of UFS and
	// SATA controllers); 0 means no such limit.
	CommandTime time.Duration
	// WriteBuffer is the DRAM write cache: a write completes once its data
	// is in the buffer; buffered data is programmed to the dies in
	// program-size units, and its space is freed when the program ends.
	// Writes wait for space when it is full.
	WriteBuffer int64
	// ProgramQueue caps the programs the controller keeps issued to one
	// die (a die gets its next program only when it has fewer), so reads
	// wait behind at most that many programs; 0 means no cap: buffered
	// data is issued as soon as a program unit is full.
	ProgramQueue int
	// StreamMin is the size from which writes stream past the DRAM
	// buffer: their program units queue at the dies directly (in arrival
	// order with reads) and the write completes when its last unit's
	// program has started, the data being in the die's page register.
	// Such writes are bounded by die time, not buffer space, and reads
	// queue behind their programs. 0 means every write is buffered.
	StreamMin int64
	// VolatileCache says the write buffer is lost on power failure (no
	// power-loss protection, as in consumer drives): the queue then sends
	// cache flushes, which write out a partly filled program unit
	// (padded) and complete once the data of the writes completed before
	// them is programmed. On a sata-ssd a flush is ATA's FLUSH CACHE, not
	// a queued command: it waits for the commands before it and holds
	// those after it. Without it (power-loss protection) flushes never
	// reach the device.
	VolatileCache bool
}

// Validate checks that the parameters describe a working device.
func (p *NVMeParams) Validate() error {
	if _, ok := flashDefaults[p.Kind]; !ok && p.Kind != "" {
		return fmt.Errorf("unknown flash kind %q (want one of %s)", p.Kind, strings.Join(FlashKinds(), ", "))
	}
	if err := validateCommon(p.Capacity, p.LogicalBlockSize, p.MaxHWSectorsKB, p.QueueDepth, "queue_depth"); err != nil {
		return err
	}
	switch {
	case p.Channels <= 0:
		return keyErr("channels", "channels and dies_per_channel must be positive")
	case p.DiesPerChannel <= 0:
		return keyErr("dies_per_channel", "channels and dies_per_channel must be positive")
	// Fix (tests): NewNVMe allocates per-die state; an absurd count must
	// fail here, not panic or exhaust memory there.
	case p.Channels > maxNVMeDies || p.DiesPerChannel > maxNVMeDies || p.Channels*p.DiesPerChannel > maxNVMeDies:
		return keyErr("dies_per_channel", "channels * dies_per_channel must be at most %d dies", maxNVMeDies)
	case p.PageSize <= 0 || p.PageSize%SectorSize != 0:
		return keyErr("page_size", "page_size must be a positive multiple of 512")
	case p.Planes <= 0:
		return keyErr("planes", "planes must be positive")
	// Fix (tests): an overflowing (negative) program unit would make
	// issuePrograms loop forever.
	case p.PageSize > math.MaxInt64/int64(p.Planes):
		return keyErr("planes", "page_size * planes overflows")
	case p.WriteBuffer < int64(p.MaxHWSectorsKB)*1024 || p.WriteBuffer < p.PageSize*int64(p.Planes):
		return keyErr("write_buffer", "write_buffer must hold at least one maximal request (max_hw_sectors_kb) and one program unit (page_size * planes)")
	case p.ProgramQueue < 0:
		return keyErr("program_queue", "program_queue must not be negative")
	}
	for _, t := range []struct {
		key string
		d   time.Duration
	}{{"read_time", p.ReadTime}, {"program_time", p.ProgramTime}, {"read_overhead", p.ReadOverhead},
		{"write_overhead", p.WriteOverhead}, {"command_time", p.CommandTime}} {
		if err := checkTime(t.key, t.d); err != nil {
			return err
		}
	}
	if err := checkRate("channel_mbps", p.ChannelMBps, false); err != nil {
		return err
	}
	if err := checkRate("host_mbps", p.HostMBps, false); err != nil {
		return err
	}
	return p.validateInterface()
}

// maxNVMeDies bounds the NAND dies of a model (real controllers have a
// few hundred at most).
const maxNVMeDies = 1 << 16

// event phases of an NVMe request, in the low bits of the event argument.
const (
	nvmeArrive = iota
	nvmeMediaDone
	nvmeComplete
	nvmeProgramDone
	nvmeFlushCheck
	nvmePhaseBits = 3
)

// NVMe is a parametric NAND flash SSD (kind nvme, ufs or sata-ssd). Each die serves its work in arrival order
// (a read that arrives behind a program waits for it: the model has no
// program suspend); reads touch the die of each NAND page they cover
// (pages are striped across dies), one page per array read (no
// multi-plane reads); writes are absorbed by the write buffer
// and programmed later, one program-size unit at a time, round-robin over
// the dies (respecting ProgramQueue); writes of StreamMin bytes or more
// bypass the buffer. The host link is one FIFO
// server.
type NVMe struct {
	e     *sim.Engine
	p     NVMeParams
	c     Completer
	store *StampMap
	slots slotTable

	dies     []sim.Time // time each die becomes free
	progs    []int      // programs issued to each die and not yet ended
	linkFree sim.Time
	ctrlFree sim.Time // when the controller is done with the last command
	nextDie  int
	unit     int64

	bufUsed    int64    // bytes held in the buffer (admitted, not yet programmed)
	bufPending int64    // admitted bytes not yet handed to a program
	bufReady   sim.Time // when the last admitted data is in the buffer
	admitq     []int    // slots of writes waiting for buffer space

	// Buffered data is programmed in order, unit by unit: admitted
	// counts the bytes into the buffer (padding included), unitsIssued
	// the units handed to dies, dieUnits each die's units in program
	// (their index in that order), unitsDone how many units from the
	// first have all ended (finished holds those ended beyond them).
	admitted    int64
	unitsIssued int64
	unitsDone   int64
	dieUnits    [][]int64
	finished    map[int64]bool
	// Flushes (VolatileCache): streamEnd is when the last streamed
	// write's programs end; flushq holds the flushes waiting, in arrival
	// order; on a sata-ssd hostCmds counts the commands arrived and not
	// completed and held those that arrived behind a flush.
	streamEnd sim.Time
	flushq    []nvmeFlush
	fuaq      []nvmeFlush // FUA writes waiting for their programs
	hostCmds  int
	held      heldCommands

	// Programs counts multi-plane programs issued.
	Programs uint64
}

// NewNVMe returns an NVMe model after validating p.
func NewNVMe(e *sim.Engine, p NVMeParams) (*NVMe, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Name == "" {
		p.Name = FlashDefaults(p.Kind).Name
	}
	return &NVMe{
		progs: make([]int, p.Channels*p.DiesPerChannel),
		e:     e,
		p:     p,
		store: NewStampMap(),
		dies:  make([]sim.Time, p.Channels*p.DiesPerChannel),
		unit:  p.PageSize * int64(p.Planes),

		dieUnits: make([][]int64, p.Channels*p.DiesPerChannel),
		finished: map[int64]bool{},
	}, nil
}

// Name returns the device name.
func (d *NVMe) Name() string { return d.p.Name }

// Capacity returns the size in bytes.
func (d *NVMe) Capacity() int64 { return d.p.Capacity }

// Limits returns the device's limits.
func (d *NVMe) Limits() Limits {
	return Limits{LogicalBlockSize: d.p.LogicalBlockSize, MaxHWSectorsKB: d.p.MaxHWSectorsKB, QueueDepth: d.p.QueueDepth,
		VolatileCache: d.p.VolatileCache, FUA: d.p.VolatileCache}
}

// Attach sets the completer.
func (d *NVMe) Attach(c Completer) { d.c = c }

// Stamps returns the device's stamp store.
func (d *NVMe) Stamps() *StampMap { return d.store }

// Params returns the model's parameters.
func (d *NVMe) Params() NVMeParams { return d.p }

// Submit accepts r; the command overhead runs first, then (with a
// CommandTime) the controller's serialised processing.
func (d *NVMe) Submit(r *Request) {
	slot := uint64(d.slots.put(r))
	ov := d.p.ReadOverhead
	if r.Op == OpWrite {
		ov = d.p.WriteOverhead
	}
	if d.p.CommandTime > 0 {
		start := max(d.e.Now()+sim.Time(ov), d.ctrlFree)
		d.ctrlFree = start + sim.Time(d.p.CommandTime)
		d.e.At(d.ctrlFree, d, slot<<nvmePhaseBits|nvmeArrive)
		return
	}
	d.e.After(ov, d, slot<<nvmePhaseBits|nvmeArrive)
}

// Fire advances the request in the argument's slot through its phases.
func (d *NVMe) Fire(arg uint64) {
	phase := arg & (1<<nvmePhaseBits - 1)
	slot := int(arg >> nvmePhaseBits)
	switch phase {
	case nvmeArrive:
		r := d.slots.get(slot)
		if d.p.Kind == "sata-ssd" && len(d.flushq) > 0 {
			// libata issues nothing while a non-NCQ command is out.
			d.held.hold(slot)
			return
		}
		if r.Flush {
			d.flushq = append(d.flushq, nvmeFlush{slot: slot, target: -1})
			if d.p.Kind != "sata-ssd" {
				// A queued flush covers the writes completed before
				// it, not those sent after.
				d.startFlush(&d.flushq[len(d.flushq)-1])
			}
			d.checkFlushes()
			return
		}
		d.hostCmds++
		if r.Op == OpRead {
			d.readMedia(r, slot)
		} else if d.streamed(r) {
			d.stream(r, slot)
		} else {
			d.admitq = append(d.admitq, slot)
			d.admit()
		}
	case nvmeMediaDone:
		// Read data crosses the host link.
		r := d.slots.get(slot)
		end := d.reserveLink(r.Bytes)
		d.e.At(end, d, uint64(slot)<<nvmePhaseBits|nvmeComplete)
	case nvmeComplete:
		if r := d.slots.get(slot); r.FUA && r.Op == OpWrite {
			// A FUA write completes once its data is programmed (a
			// queued command: nothing is held). A buffered one waits
			// as a flush would, the partly filled unit it ends in
			// padded; a streamed one for its own programs.
			f := nvmeFlush{slot: slot, target: d.unitsDone, notBefore: d.streamEnd}
			if !d.streamed(r) {
				d.padUnit()
				f.target = d.admitted / d.unit
			}
			d.fuaq = append(d.fuaq, f)
			d.checkFlushes()
			return
		}
		d.finish(slot)
	case nvmeProgramDone:
		d.progs[slot]--
		d.bufUsed -= d.unit
		units := d.dieUnits[slot]
		d.unitEnded(units[0])
		d.dieUnits[slot] = units[:copy(units, units[1:])]
		d.admit()
		d.issuePrograms()
		d.checkFlushes()
	case nvmeFlushCheck:
		d.checkFlushes()
	}
}

// unitEnded notes that buffered program unit i has ended.
func (d *NVMe) unitEnded(i int64) {
	if i != d.unitsDone {
		d.finished[i] = true
		return
	}
	d.unitsDone++
	for d.finished[d.unitsDone] {
		delete(d.finished, d.unitsDone)
		d.unitsDone++
	}
}

// padUnit fills the buffer's partly filled program unit, so that it is
// programmed (a flush's data, or room for a write that cannot fit beside
// it), and issues what it can.
func (d *NVMe) padUnit() {
	if d.bufPending%d.unit == 0 {
		return
	}
	pad := d.unit - d.bufPending%d.unit
	d.bufPending += pad
	d.bufUsed += pad
	d.admitted += pad
	d.issuePrograms()
}

// nvmeFlush is a flush waiting: its slot, the buffered units it waits
// for (-1 until it has started) and the end of the streamed programs
// before it.
type nvmeFlush struct {
	slot      int
	target    int64
	notBefore sim.Time
}

// startFlush starts flush f: the buffer's partly filled unit is padded
// and programmed, and f waits for every unit of the data admitted so far
// and for the streamed writes before it.
func (d *NVMe) startFlush(f *nvmeFlush) {
	d.padUnit()
	f.target, f.notBefore = d.admitted/d.unit, d.streamEnd
}

// streamed reports whether write r bypasses the buffer (stream_min).
func (d *NVMe) streamed(r *Request) bool { return d.p.StreamMin > 0 && r.Bytes >= d.p.StreamMin }

// finish completes the command in slot: its data reaches the store.
func (d *NVMe) finish(slot int) {
	r := d.slots.take(slot)
	transferData(d.store, r)
	d.hostCmds--
	d.c.CompleteRequest(r)
	d.checkFlushes()
}

// checkFUAs completes the FUA writes whose data is programmed, in order.
func (d *NVMe) checkFUAs() {
	for len(d.fuaq) > 0 {
		f := d.fuaq[0]
		if d.unitsDone < f.target {
			return
		}
		if now := d.e.Now(); now < f.notBefore {
			d.e.At(f.notBefore, d, nvmeFlushCheck)
			return
		}
		d.fuaq = d.fuaq[:copy(d.fuaq, d.fuaq[1:])]
		d.finish(f.slot)
	}
}

// checkFlushes completes the FUA writes that are done (checkFUAs), then
// starts and completes the waiting flushes in order. A flush
// starts at arrival (on a sata-ssd once no command before it is
// outstanding: startFlush); it completes once every buffered unit of the
// data admitted before it has been programmed and any streamed write
// before it has ended, and on a sata-ssd then lets the commands held
// behind it arrive.
func (d *NVMe) checkFlushes() {
	d.checkFUAs()
	for len(d.flushq) > 0 {
		f := &d.flushq[0]
		if f.target < 0 {
			if d.p.Kind == "sata-ssd" && d.hostCmds > 0 {
				return
			}
			d.startFlush(f)
		}
		now := d.e.Now()
		if d.unitsDone < f.target {
			return
		}
		if now < f.notBefore {
			d.e.At(f.notBefore, d, nvmeFlushCheck)
			return
		}
		r := d.slots.take(f.slot)
		d.flushq = d.flushq[:copy(d.flushq, d.flushq[1:])]
		d.c.CompleteRequest(r)
		if len(d.flushq) == 0 {
			d.held.release(func(slot int) { d.Fire(uint64(slot)<<nvmePhaseBits | nvmeArrive) },
				func() bool { return len(d.flushq) > 0 })
		}
	}
}

// reserveLink queues n bytes on the host link and returns when they are
// through.
func (d *NVMe) reserveLink(n int64) sim.Time {
	start := max(d.e.Now(), d.linkFree)
	d.linkFree = start + sim.Time(transferTime(n, d.p.HostMBps))
	return d.linkFree
}

// readMedia queues a page read on every die the request covers and
// schedules the media-done phase when the slowest finishes.
func (d *NVMe) readMedia(r *Request, slot int) {
	now := d.e.Now()
	done := now
	off := r.Sector * SectorSize
	end := off + r.Bytes
	ps := d.p.PageSize
	for pos := off; pos < end; {
		page := pos / ps
		next := min((page+1)*ps, end)
		die := int(page % int64(len(d.dies)))
		start := max(now, d.dies[die])
		d.dies[die] = start + sim.Time(d.p.ReadTime+transferTime(next-pos, d.p.ChannelMBps))
		done = max(done, d.dies[die])
		pos = next
	}
	d.e.At(done, d, uint64(slot)<<nvmePhaseBits|nvmeMediaDone)
}

// admit moves waiting writes into the buffer in FIFO order while space
// lasts; each admitted write completes when its data has crossed the link.
func (d *NVMe) admit() {
	for len(d.admitq) > 0 {
		slot := d.admitq[0]
		r := d.slots.get(slot)
		if d.bufUsed+r.Bytes > d.p.WriteBuffer {
			if d.unitsDone == d.unitsIssued {
				// No program will free space: the partly filled unit is
				// what keeps the write out, so it is programmed now.
				d.padUnit()
			}
			return
		}
		copy(d.admitq, d.admitq[1:])
		d.admitq = d.admitq[:len(d.admitq)-1]
		d.bufUsed += r.Bytes
		d.bufPending += r.Bytes
		d.admitted += r.Bytes
		end := d.reserveLink(r.Bytes)
		d.bufReady = end
		d.e.At(end, d, uint64(slot)<<nvmePhaseBits|nvmeComplete)
	}
	d.issuePrograms()
}

// stream queues a large write's units at the dies round-robin and
// completes it when its last program has started.
func (d *NVMe) stream(r *Request, slot int) {
	ready := d.reserveLink(r.Bytes)
	n := len(d.dies)
	done := ready
	for left := r.Bytes; left > 0; left -= d.unit {
		die := d.nextDie
		d.nextDie = (die + 1) % n
		start := max(ready, d.dies[die]) + sim.Time(transferTime(min(left, d.unit), d.p.ChannelMBps))
		d.dies[die] = start + sim.Time(d.p.ProgramTime)
		d.streamEnd = max(d.streamEnd, d.dies[die])
		d.Programs++
		done = max(done, start)
	}
	d.e.At(done, d, uint64(slot)<<nvmePhaseBits|nvmeComplete)
}

// issuePrograms hands full units of buffered data to dies, round-robin,
// while some die has room in its program queue. A program starts once its
// data is in the buffer and the die has finished the work queued before
// it; its buffer space is freed when it ends.
func (d *NVMe) issuePrograms() {
	n := len(d.dies)
	for d.bufPending >= d.unit {
		die := -1
		for i := 0; i < n; i++ {
			c := (d.nextDie + i) % n
			if d.p.ProgramQueue == 0 || d.progs[c] < d.p.ProgramQueue {
				die = c
				break
			}
		}
		if die < 0 {
			return
		}
		d.nextDie = (die + 1) % n
		d.bufPending -= d.unit
		d.progs[die]++
		d.dieUnits[die] = append(d.dieUnits[die], d.unitsIssued)
		d.unitsIssued++
		start := max(d.e.Now(), d.bufReady, d.dies[die])
		d.dies[die] = start + sim.Time(transferTime(d.unit, d.p.ChannelMBps)+d.p.ProgramTime)
		d.Programs++
		d.e.At(d.dies[die], d, uint64(die)<<nvmePhaseBits|nvmeProgramDone)
	}
}

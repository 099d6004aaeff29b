package blockdev

import (
	"math"
	"time"

	"github.com/blksim/blksim/sim"
)

// HDDParams describe a hard disk: one actuator over spinning platters, a
// SATA link, a segmented read cache with look-ahead and an optional write
// cache. Rates are decimal MB/s.
type HDDParams struct {
	// Name defaults to "sda".
	Name string
	// Capacity is the size in bytes.
	Capacity int64
	// LogicalBlockSize is 512 (the default; 512e drives) or 4096 (4Kn).
	LogicalBlockSize int
	// MaxHWSectorsKB defaults to 512 (see the sata-ssd kind for why).
	MaxHWSectorsKB int
	// QueueDepth defaults to 32 (NCQ's tags) with NCQ and to 1 without
	// (as libata sets it); at most 32. Without NCQ a depth above 1 is a
	// tagged queue served in arrival order.
	QueueDepth int

	// RPM is the spindle speed; the platter angle at simulated time t is
	// t*RPM/60 revolutions (angle 0 at time 0), so rotational latency is
	// a deterministic function of when the head arrives.
	RPM int
	// TrackToTrack is the seek to the adjacent track (also the track
	// switch inside a transfer, hidden by track skew), AverageSeek the
	// mean over uniformly random start and end positions, FullStroke the
	// seek across the whole stroke. The seek curve is
	// TrackToTrack + a*(sqrt(d)-1) for short seeks of d tracks
	// (acceleration-limited) and linear in d for long ones (the arm
	// coasts), joined smoothly; a and the crossover are fitted to the
	// three times.
	TrackToTrack time.Duration
	AverageSeek  time.Duration
	FullStroke   time.Duration
	// OuterMBps and InnerMBps are the sustained media rates (track
	// switches included, as datasheets give them) at the first and the
	// last LBA: outer tracks hold more sectors. The rate varies linearly
	// with the LBA in between.
	OuterMBps float64
	InnerMBps float64

	// NCQ reorders queued work shortest-positioning-time-first (seek plus
	// rotation from where the head is); without it work is served in
	// arrival order.
	NCQ bool
	// WriteCache completes a write once its data is in the drive's cache
	// (after the link); the data is destaged to the media later, as
	// queued work. Without it a write completes when it is on the media.
	// WriteCacheSize bounds the dirty data; writes wait for space.
	WriteCache     bool
	WriteCacheSize int64
	// Readahead is how far past a media read the head keeps reading into
	// the read cache while the actuator has nothing else to do (0: no read
	// cache). A later read that lies in a cache segment completes from the
	// cache, at the link rate, once its data has been read. CacheSegments
	// is the number of segments (least recently used is replaced).
	Readahead     int64
	CacheSegments int
	// CommandOverhead is the drive's per-command latency (decode, cache
	// lookup), before the command is queued.
	CommandOverhead time.Duration
	// HostMBps is the SATA link rate: cached reads and writes into the
	// write cache cross it; media transfers overlap it (the link is
	// faster than the media).
	HostMBps float64
}

// HDD defaults and bounds.
const (
	hddDefaultMaxKB  = 512
	hddDefaultCache  = 8 << 20
	hddDefaultRA     = 1 << 20
	hddDefaultSegs   = 16
	hddDefaultLink   = 550
	hddMaxTime       = time.Second
	hddMaxRPM        = 100000
	hddMaxMBps       = 1e6
	hddMaxSegments   = 1024
	hddFitRounds     = 200
	rotationSlackNs  = 1.0 // a wait within 1 ns of a full turn is no wait
	hddUnboundedStop = sim.Time(math.MaxInt64)
	hddDestageSlot   = -1
)

// Event phases of the HDD, in the low bits of the event argument.
const (
	hddArrive = iota
	hddMediaDone
	hddComplete
	hddWake
	hddPhaseBits = 2
)

// DefaultHDDParams returns the parameters an "hdd" profile starts from:
// everything but the capacity and the mechanics (rpm, seeks, media rates),
// which describe a particular drive.
func DefaultHDDParams() HDDParams {
	return HDDParams{
		Name:             "sda",
		LogicalBlockSize: SectorSize,
		MaxHWSectorsKB:   hddDefaultMaxKB,
		NCQ:              true,
		WriteCache:       true,
		WriteCacheSize:   hddDefaultCache,
		Readahead:        hddDefaultRA,
		CacheSegments:    hddDefaultSegs,
		HostMBps:         hddDefaultLink,
	}
}

// queueDepth is the effective queue depth (0 picks NCQ's 32 or 1).
func (p *HDDParams) queueDepth() int {
	if p.QueueDepth != 0 {
		return p.QueueDepth
	}
	if p.NCQ {
		return ncqMaxQueueDepth
	}
	return 1
}

// Validate checks the parameters, including that the three seek times
// describe a curve of the model's shape on this geometry.
func (p *HDDParams) Validate() error {
	_, err := p.geometry()
	return err
}

func (p *HDDParams) geometry() (*hddGeom, error) {
	if err := validateCommon(p.Capacity, p.LogicalBlockSize, p.MaxHWSectorsKB, p.queueDepth(), "queue_depth"); err != nil {
		return nil, err
	}
	switch {
	case p.queueDepth() > ncqMaxQueueDepth:
		return nil, keyErr("queue_depth", "queue_depth %d exceeds SATA NCQ's %d tags", p.queueDepth(), ncqMaxQueueDepth)
	case p.RPM <= 0 || p.RPM > hddMaxRPM:
		return nil, keyErr("rpm", "rpm must be between 1 and %d", hddMaxRPM)
	case p.TrackToTrack <= 0 || p.TrackToTrack > hddMaxTime:
		return nil, keyErr("track_to_track", "track_to_track must be positive and at most %v", hddMaxTime)
	case p.AverageSeek <= p.TrackToTrack:
		return nil, keyErr("average_seek", "average_seek %v must exceed track_to_track %v", p.AverageSeek, p.TrackToTrack)
	case p.FullStroke <= p.AverageSeek:
		return nil, keyErr("full_stroke", "full_stroke %v must exceed average_seek %v", p.FullStroke, p.AverageSeek)
	case p.FullStroke > hddMaxTime:
		return nil, keyErr("full_stroke", "full_stroke must be at most %v", hddMaxTime)
	case !(p.OuterMBps >= minDeviceMBps) || p.OuterMBps > hddMaxMBps:
		return nil, keyErr("outer_mbps", "outer_mbps must be between %g and %g", minDeviceMBps, hddMaxMBps)
	case !(p.InnerMBps >= minDeviceMBps):
		return nil, keyErr("inner_mbps", "inner_mbps must be at least %g", minDeviceMBps)
	case p.InnerMBps > p.OuterMBps:
		return nil, keyErr("inner_mbps", "inner_mbps %g exceeds outer_mbps %g: the outer zone is the fastest", p.InnerMBps, p.OuterMBps)
	case !(p.HostMBps >= minDeviceMBps) || p.HostMBps > hddMaxMBps:
		return nil, keyErr("host_mbps", "host_mbps must be between %g and %g", minDeviceMBps, hddMaxMBps)
	case p.WriteCache && p.WriteCacheSize < int64(p.MaxHWSectorsKB)*1024:
		return nil, keyErr("write_cache_size", "write_cache_size %d must hold one maximal request (max_hw_sectors_kb %d)", p.WriteCacheSize, p.MaxHWSectorsKB)
	case p.WriteCacheSize < 0:
		return nil, keyErr("write_cache_size", "write_cache_size must not be negative")
	case p.Readahead < 0:
		return nil, keyErr("readahead", "readahead must not be negative")
	case p.CacheSegments < 0 || p.CacheSegments > hddMaxSegments:
		return nil, keyErr("cache_segments", "cache_segments must be between 0 and %d", hddMaxSegments)
	case p.Readahead > 0 && p.CacheSegments == 0:
		return nil, keyErr("cache_segments", "readahead needs cache_segments of at least 1")
	case p.CommandOverhead < 0 || p.CommandOverhead > hddMaxTime:
		return nil, keyErr("command_overhead", "command_overhead must be between 0 and %v", hddMaxTime)
	}
	rev := 60e9 / float64(p.RPM)
	// The rates are sustained rates, track switches included: the rate
	// under the head is higher by (rev + t2t) / rev.
	onTrack := (rev + float64(p.TrackToTrack)) / rev / 1e3 // MB/s to bytes/ns
	g := &hddGeom{
		rev:  rev,
		ro:   p.OuterMBps * onTrack,
		k:    (p.InnerMBps - p.OuterMBps) * onTrack / float64(p.Capacity),
		t2t:  float64(p.TrackToTrack),
		full: float64(p.FullStroke),
	}
	g.skew = g.t2t / g.rev
	g.tracks = g.tau(float64(p.Capacity))
	if err := g.fitSeek(float64(p.AverageSeek)); err != nil {
		return nil, err
	}
	return g, nil
}

// hddGeom is the drive's geometry and seek curve; times are float ns.
//
// Layout: the media rate at byte offset l is r(l) = ro + k*l bytes/ns,
// and a track holds one revolution's worth at that rate, so the track
// coordinate of l is tau(l) = integral of dl/(rev*r(l)): its integer part
// is the track, its fraction the angle within the track (from the track's
// first sector). Each track starts skew revolutions after the previous one
// (track skew), so a transfer crossing a track boundary loses exactly the
// track switch time.
type hddGeom struct {
	rev    float64 // one revolution, ns
	ro, k  float64 // outer rate (bytes/ns) and its change per byte
	tracks float64 // tau(capacity)
	skew   float64 // track skew, revolutions
	t2t    float64
	full   float64
	// Seek curve: t2t + a*(sqrt(d)-1) up to dc tracks, then linear with
	// slope a/(2*sqrt(dc)) per track.
	a, dc float64
}

// tau is the track coordinate of byte offset l.
func (g *hddGeom) tau(l float64) float64 {
	if g.k == 0 {
		return l / (g.rev * g.ro)
	}
	return math.Log1p(g.k*l/g.ro) / (g.rev * g.k)
}

// track returns the track holding sector s, and its tau.
func (g *hddGeom) track(s int64) (int64, float64) {
	t := g.tau(float64(s) * SectorSize)
	return int64(t), t
}

// angle is the platter angle (revolutions in [0, 1)) of the sector at
// track coordinate t.
func (g *hddGeom) angle(t float64) float64 {
	tr := math.Floor(t)
	a := t - tr + g.skew*tr
	return a - math.Floor(a)
}

// seek is the seek time over d tracks.
func (g *hddGeom) seek(d int64) float64 {
	if d < 0 {
		d = -d
	}
	if d == 0 {
		return 0
	}
	x := float64(d)
	if x <= g.dc {
		return g.t2t + g.a*(math.Sqrt(x)-1)
	}
	return g.t2t + g.a*(math.Sqrt(g.dc)-1) + g.a/(2*math.Sqrt(g.dc))*(x-g.dc)
}

// rotation is the wait, at time t, for the platter to bring angle a under
// the head. A head less than rotationSlackNs past the angle is on it: the
// wait is then that lead, negative, so that the work's end time counts
// from the angle itself. (Simulated time is whole nanoseconds and each end
// time is rounded; a wait of 0 there would let the rounding errors of
// back-to-back transfers add up until one found its first sector just
// passed and waited a whole turn.)
func (g *hddGeom) rotation(a, t float64) float64 {
	w := a - t/g.rev
	w -= math.Floor(w)
	w *= g.rev
	if w > g.rev-rotationSlackNs {
		return w - g.rev
	}
	return w
}

// media is the time to transfer sectors [a, b) once the head is on a:
// the angle swept plus a track switch per track boundary crossed.
func (g *hddGeom) media(a, b int64) float64 {
	ta, xa := g.track(a)
	tb, _ := g.track(b - 1)
	xb := g.tau(float64(b) * SectorSize)
	return g.rev*(xb-xa) + g.t2t*float64(tb-ta)
}

// meanSeek is the mean seek time over uniformly random start and end
// positions (distance fraction u with density 2(1-u)) for the curve with
// crossover dc and the a that makes the full stroke take g.full.
func (g *hddGeom) meanSeek(dc float64) (mean, a float64) {
	n := g.tracks
	a = (g.full - g.t2t) / (math.Sqrt(dc) - 1 + (n-dc)/(2*math.Sqrt(dc)))
	uc := dc / n
	c0 := g.t2t - a
	amp := a * math.Sqrt(n)
	i1 := c0*(2*uc-uc*uc) + amp*(4.0/3*math.Pow(uc, 1.5)-4.0/5*math.Pow(uc, 2.5))
	sc := c0 + amp*math.Sqrt(uc)
	l := 1 - uc
	i2 := sc*l*l + amp/(2*math.Sqrt(uc))*l*l*l/3
	return i1 + i2, a
}

// fitSeek finds the crossover whose curve has mean avg (ns). The mean
// grows with the crossover, from the almost straight line of dc = 1 to
// the pure square root of dc = tracks.
func (g *hddGeom) fitSeek(avg float64) error {
	n := g.tracks
	if n < 2 {
		// At most one track boundary: every seek is a track switch.
		g.a, g.dc = 0, math.Max(n, 1)
		return nil
	}
	lo, hi := 0.0, math.Log(n)
	mlo, _ := g.meanSeek(1)
	mhi, _ := g.meanSeek(n)
	if avg < mlo || avg > mhi {
		return keyErr("average_seek", "average_seek %v is out of reach of a seek curve from track_to_track %v to full_stroke %v over %.0f tracks: it must lie between %v and %v",
			time.Duration(avg), time.Duration(g.t2t), time.Duration(g.full), n, time.Duration(math.Ceil(mlo)), time.Duration(mhi))
	}
	for range hddFitRounds {
		mid := (lo + hi) / 2
		if m, _ := g.meanSeek(math.Exp(mid)); m < avg {
			lo = mid
		} else {
			hi = mid
		}
	}
	g.dc = math.Exp((lo + hi) / 2)
	_, g.a = g.meanSeek(g.dc)
	return nil
}

// hddWork is a request or a destage waiting for the actuator.
type hddWork struct {
	slot   int // request slot, or hddDestageSlot
	op     Op
	sector int64
	bytes  int64
	enq    sim.Time // queued at (a destage: when its data arrived)
	seq    uint64
}

// hddSegment is a read cache segment: sectors [lo, from) were read by a
// media read that ended at fromTime; while the segment is active the head
// goes on reading from `from` towards limit, until stop.
type hddSegment struct {
	lo, from, limit int64
	fromTime, stop  sim.Time
	used            uint64
	valid           bool
}

// HDD is a parametric hard disk. One actuator serves one piece of work at
// a time: host reads that miss the read cache, host writes (without the
// write cache) and destages of cached writes. Choosing the next piece of
// work is shortest-positioning-time-first with NCQ and arrival order
// without. A piece of work costs the seek from the head's track, the wait
// for its first sector to rotate under the head and the media transfer.
type HDD struct {
	e     *sim.Engine
	p     HDDParams
	g     *hddGeom
	c     Completer
	store *StampMap
	slots slotTable

	queue     []hddWork // host work waiting for the actuator
	dirty     []hddWork // cached writes not yet destaged
	admitq    []int     // write slots waiting for cache space
	cacheUsed int64
	// A flush (FLUSH CACHE, not an NCQ command) waits for the commands
	// before it and the cache to empty, and holds those after it:
	// flushSlot is its slot (-1 for none), held the commands that
	// arrived since, hostCmds the commands arrived and not completed.
	flushSlot int
	held      heldCommands
	hostCmds  int

	busy      bool
	cur       hddWork
	headTrack int64
	segs      []hddSegment
	active    int      // segment the head is reading ahead into, or -1
	raBusy    sim.Time // the head is committed to read-ahead data a hit waits for until then
	linkFree  sim.Time
	wakeAt    sim.Time
	seq, tick uint64

	// Seeks counts media operations that moved the head; CacheHits the
	// reads served from the read cache; Destages the destaged writes.
	Seeks, CacheHits, Destages uint64
}

// NewHDD returns a hard disk after validating p.
func NewHDD(e *sim.Engine, p HDDParams) (*HDD, error) {
	g, err := p.geometry()
	if err != nil {
		return nil, err
	}
	if p.Name == "" {
		p.Name = "sda"
	}
	p.QueueDepth = p.queueDepth()
	return &HDD{e: e, p: p, g: g, store: NewStampMap(), active: -1, flushSlot: -1}, nil
}

// Name returns the device name.
func (d *HDD) Name() string { return d.p.Name }

// Capacity returns the size in bytes.
func (d *HDD) Capacity() int64 { return d.p.Capacity }

// Limits returns the device's limits.
func (d *HDD) Limits() Limits {
	return Limits{LogicalBlockSize: d.p.LogicalBlockSize, MaxHWSectorsKB: d.p.MaxHWSectorsKB, QueueDepth: d.p.QueueDepth, Rotational: true,
		// libata gives FUA only to NCQ drives (ata_dev_config_fua).
		VolatileCache: d.p.WriteCache, FUA: d.p.WriteCache && d.p.NCQ}
}

// Attach sets the completer.
func (d *HDD) Attach(c Completer) { d.c = c }

// Stamps returns the device's stamp store.
func (d *HDD) Stamps() *StampMap { return d.store }

// Params returns the model's parameters (with the queue depth resolved).
func (d *HDD) Params() HDDParams { return d.p }

// Tracks returns the number of tracks (of one surface-equivalent: the
// model does not distinguish heads from cylinders).
func (d *HDD) Tracks() float64 { return d.g.tracks }

// SeekTime returns the seek over distance tracks.
func (d *HDD) SeekTime(distance int64) time.Duration {
	return time.Duration(math.Round(d.g.seek(distance)))
}

// Submit accepts r; the command overhead runs first.
func (d *HDD) Submit(r *Request) {
	slot := uint64(d.slots.put(r))
	d.e.After(d.p.CommandOverhead, d, slot<<hddPhaseBits|hddArrive)
}

// Fire advances the device: a command arrives, the actuator finishes its
// work, a request completes, or the actuator may start work.
func (d *HDD) Fire(arg uint64) {
	slot := int(arg >> hddPhaseBits)
	switch arg & (1<<hddPhaseBits - 1) {
	case hddArrive:
		d.arrive(slot)
	case hddMediaDone:
		d.mediaDone()
	case hddComplete:
		d.complete(slot)
	case hddWake:
		if d.wakeAt <= d.e.Now() {
			d.wakeAt = 0
		}
		d.kick()
	}
}

func (d *HDD) arrive(slot int) {
	r := d.slots.get(slot)
	if d.flushSlot >= 0 {
		// libata does not issue a command while a non-NCQ one is out.
		d.held.hold(slot)
		return
	}
	if r.Flush {
		d.flushSlot = slot
		d.checkFlush()
		return
	}
	d.hostCmds++
	if r.Op == OpRead {
		if d.cacheHit(slot, r) {
			return
		}
		d.enqueue(slot, r)
		return
	}
	d.invalidate(r.Sector, r.Sectors())
	if !d.p.WriteCache || r.FUA {
		// Written through to the platter (a FUA write completes once
		// its data is there).
		d.enqueue(slot, r)
		return
	}
	d.admitq = append(d.admitq, slot)
	d.admit()
}

func (d *HDD) enqueue(slot int, r *Request) {
	d.seq++
	d.queue = append(d.queue, hddWork{slot: slot, op: r.Op, sector: r.Sector, bytes: r.Bytes, enq: d.e.Now(), seq: d.seq})
	d.kick()
}

func (d *HDD) complete(slot int) {
	r := d.slots.take(slot)
	transferData(d.store, r)
	d.hostCmds--
	d.c.CompleteRequest(r)
	d.checkFlush()
}

// checkFlush completes the pending flush once every command before it
// has completed and the write cache is empty, then lets the commands
// held behind it arrive, in order.
func (d *HDD) checkFlush() {
	if d.flushSlot < 0 || d.hostCmds > 0 || d.cacheUsed > 0 || len(d.admitq) > 0 {
		return
	}
	r := d.slots.take(d.flushSlot)
	d.flushSlot = -1
	d.c.CompleteRequest(r)
	d.held.release(d.arrive, func() bool { return d.flushSlot >= 0 })
}

// reserveLink queues n bytes on the SATA link from time from.
func (d *HDD) reserveLink(from sim.Time, n int64) sim.Time {
	start := max(from, d.linkFree)
	d.linkFree = start + sim.Time(transferTime(n, d.p.HostMBps))
	return d.linkFree
}

// admit moves waiting writes into the write cache in arrival order while
// space lasts; each completes when its data has crossed the link, and is
// then dirty data to destage.
func (d *HDD) admit() {
	for len(d.admitq) > 0 {
		slot := d.admitq[0]
		r := d.slots.get(slot)
		if d.cacheUsed+r.Bytes > d.p.WriteCacheSize {
			return
		}
		d.admitq = d.admitq[:copy(d.admitq, d.admitq[1:])]
		d.cacheUsed += r.Bytes
		end := d.reserveLink(d.e.Now(), r.Bytes)
		d.e.At(end, d, uint64(slot)<<hddPhaseBits|hddComplete)
		d.addDirty(r.Sector, r.Bytes, end)
	}
}

// addDirty records cached data to destage, appending it to a dirty run it
// continues (up to a maximal request).
func (d *HDD) addDirty(sector, bytes int64, ready sim.Time) {
	maxBytes := int64(d.p.MaxHWSectorsKB) * 1024
	for i := range d.dirty {
		w := &d.dirty[i]
		if w.sector+w.bytes/SectorSize == sector && w.bytes+bytes <= maxBytes {
			w.bytes += bytes
			w.enq = max(w.enq, ready)
			d.wake(w.enq)
			return
		}
	}
	d.seq++
	d.dirty = append(d.dirty, hddWork{slot: hddDestageSlot, op: OpWrite, sector: sector, bytes: bytes, enq: ready, seq: d.seq})
	d.wake(ready)
}

// cacheHit serves r from a read cache segment that holds (or, reading
// ahead, will hold) all of it.
func (d *HDD) cacheHit(slot int, r *Request) bool {
	now := d.e.Now()
	a, b := r.Sector, r.Sector+r.Sectors()
	for i := range d.segs {
		s := &d.segs[i]
		if !s.valid || a < s.lo || b > s.limit {
			continue
		}
		ready := s.fromTime
		if b > s.from {
			ready += sim.Time(math.Round(d.g.media(s.from, b)))
		}
		if ready > s.stop {
			continue
		}
		if i == d.active {
			// The head must stay on this stream until the data is in;
			// it reads on to Readahead past this hit, and the data
			// before the hit is consumed (the segment holds at most a
			// request and the look-ahead).
			d.raBusy = max(d.raBusy, ready)
			s.limit = min(d.p.Capacity/SectorSize, max(s.limit, b+d.p.Readahead/SectorSize))
			s.lo = a
		}
		d.tick++
		s.used = d.tick
		d.CacheHits++
		end := d.reserveLink(max(now, ready), r.Bytes)
		d.e.At(end, d, uint64(slot)<<hddPhaseBits|hddComplete)
		return true
	}
	return false
}

// invalidate drops the read cache segments a write overlaps.
func (d *HDD) invalidate(sector, n int64) {
	for i := range d.segs {
		s := &d.segs[i]
		if s.valid && sector < s.limit && sector+n > s.lo {
			if i == d.active {
				d.stopReadahead()
			}
			s.valid = false
		}
	}
}

// stopReadahead ends the active segment's read-ahead now, leaving the head
// on the track it reached.
func (d *HDD) stopReadahead() {
	if d.active < 0 {
		return
	}
	now := max(d.e.Now(), d.raBusy)
	d.headTrack = d.readaheadTrack(now)
	d.segs[d.active].stop = now
	d.active = -1
}

// readaheadTrack is the track the active read-ahead has reached at t.
func (d *HDD) readaheadTrack(t sim.Time) int64 {
	s := &d.segs[d.active]
	if t <= s.fromTime || s.limit <= s.from {
		return d.headTrack
	}
	tr0, x0 := d.g.track(s.from)
	// The head crosses into track tr0+j after (j - frac(x0)) revolutions
	// and j track switches.
	j := math.Floor((float64(t-s.fromTime) + d.g.rev*(x0-float64(tr0))) / (d.g.rev + d.g.t2t))
	last, _ := d.g.track(s.limit - 1)
	return min(tr0+int64(j), last)
}

// wake makes sure kick runs at t.
func (d *HDD) wake(t sim.Time) {
	if d.wakeAt > d.e.Now() && d.wakeAt <= t {
		return
	}
	d.wakeAt = t
	d.e.At(t, d, hddWake)
}

// kick starts the next piece of work if the actuator is free.
func (d *HDD) kick() {
	if d.busy {
		return
	}
	now := d.e.Now()
	if now < d.raBusy {
		d.wake(d.raBusy)
		return
	}
	head := d.headTrack
	if d.active >= 0 {
		head = d.readaheadTrack(now)
	}
	best, bestDirty := -1, false
	var bestCost float64
	var bestW hddWork
	var nextReady sim.Time
	consider := func(i int, w hddWork, dirty bool) {
		var cost float64
		if d.p.NCQ {
			tr, x := d.g.track(w.sector)
			s := d.g.seek(tr - head)
			cost = s + d.g.rotation(d.g.angle(x), float64(now)+s)
		}
		if best >= 0 {
			switch {
			case cost > bestCost:
				return
			case cost == bestCost && (w.enq > bestW.enq || w.enq == bestW.enq && w.seq > bestW.seq):
				return
			}
		}
		best, bestDirty, bestCost, bestW = i, dirty, cost, w
	}
	for i, w := range d.queue {
		consider(i, w, false)
	}
	for i, w := range d.dirty {
		if w.enq > now {
			if nextReady == 0 || w.enq < nextReady {
				nextReady = w.enq
			}
			continue
		}
		consider(i, w, true)
	}
	if best < 0 {
		if nextReady > 0 {
			d.wake(nextReady)
		}
		return
	}
	if bestDirty {
		d.dirty = append(d.dirty[:best], d.dirty[best+1:]...)
	} else {
		d.queue = append(d.queue[:best], d.queue[best+1:]...)
	}
	d.start(bestW)
}

// start runs w on the actuator: seek, rotation, transfer.
func (d *HDD) start(w hddWork) {
	now := d.e.Now()
	d.stopReadahead()
	tr, x := d.g.track(w.sector)
	s := d.g.seek(tr - d.headTrack)
	if tr != d.headTrack {
		d.Seeks++
	}
	rot := d.g.rotation(d.g.angle(x), float64(now)+s)
	end := sim.Time(math.Round(float64(now) + s + rot + d.g.media(w.sector, w.sector+w.bytes/SectorSize)))
	d.headTrack, _ = d.g.track(w.sector + w.bytes/SectorSize - 1)
	d.busy, d.cur = true, w
	d.e.At(end, d, hddMediaDone)
}

// mediaDone finishes the current work: a read leaves a cache segment the
// head reads ahead into; a request completes; a destage frees cache space.
func (d *HDD) mediaDone() {
	w := d.cur
	d.busy = false
	switch {
	case w.slot == hddDestageSlot:
		d.Destages++
		d.cacheUsed -= w.bytes
		d.admit()
		d.checkFlush()
	default:
		if w.op == OpRead {
			d.addSegment(w.sector, w.sector+w.bytes/SectorSize)
		}
		d.complete(w.slot)
	}
	d.kick()
}

// addSegment caches sectors [lo, from) just read and starts reading ahead
// from `from`, replacing the least recently used segment.
func (d *HDD) addSegment(lo, from int64) {
	if d.p.Readahead == 0 || d.p.CacheSegments == 0 {
		return
	}
	d.tick++
	s := hddSegment{lo: lo, from: from, limit: min(d.p.Capacity/SectorSize, from+d.p.Readahead/SectorSize),
		fromTime: d.e.Now(), stop: hddUnboundedStop, used: d.tick, valid: true}
	i := len(d.segs)
	if i >= d.p.CacheSegments {
		i = 0
		for j := range d.segs {
			if !d.segs[j].valid {
				i = j
				break
			}
			if d.segs[j].used < d.segs[i].used {
				i = j
			}
		}
		d.segs[i] = s
	} else {
		d.segs = append(d.segs, s)
	}
	d.active = i
	d.raBusy = 0
}

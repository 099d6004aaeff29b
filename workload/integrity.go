package workload

import (
	"slices"

	"github.com/blksim/blksim/blockdev"
)

// This file is the atomicity oracle: it watches every write call and read
// call of a run on the files that some job reads and some job writes, and
// checks, from the stamps each read found (DESIGN.md section 3: data are
// stamps), whether the read saw a write torn apart or data older than a
// write it should have seen.
//
// Events. Each write call registers at its start (before the system call,
// or before io_submit/io_uring_enter hands it to the kernel) and gets a
// global id, increasing in start order, and the number of write calls
// completed so far (cstart). It registers again at its end: the return of
// the system call for the sync engines, the reaping of its completion for
// libaio and io_uring (also for buffered files, whose IO runs inside the
// submitting call); the end gives it its completion number (cend, 1, 2, ...
// in completion order). A read registers at its start (the number of
// completed writes then, rc) and is checked at its end (syscall return or
// reap), with the stamps it found, one per sector in file order. Time is
// the engine's event order, not simulated nanoseconds, so two events at the
// same instant are still ordered.
//
// Torn reads. For each write call W whose stamp the read R found, the
// sectors of W∩R are classified: W's own stamp; older data (never written,
// or a write with a smaller id than W's); or neutral (a newer write, with a
// larger id, or a stamp the oracle cannot place). If W∩R holds both W's
// data and older data, every 4 KiB page (file-aligned) of W∩R holding an
// older sector is torn with respect to W: the read saw part of W and, beside
// it, data W should have replaced. The check is per sector, so a page half
// copied by a buffered write is caught as well as a direct write split into
// requests that complete one by one.
//
// Stale reads. A sector of R is stale if R found data from a write S that
// had completed before some other write W' to that sector started, with W'
// completed before R started (or found never-written data while some write
// to the sector had completed before R started): every serial order puts W'
// between S and R, so R had to see W' or something newer. This is the
// brief's "older than the last completed write" rule, widened to any
// completed write that strictly follows S (the last completed one may be
// concurrent with S and prove nothing). Writes that are in flight, or
// completed after R started, never make R stale.
//
// Counting. Per read: a read with at least one torn page counts once in
// TornReads and its torn pages (each page at most once per read, whatever
// the number of writes it is torn against) in TornPages; likewise stale.
// Reads done during ramp_time are checked too: integrity is not a
// performance figure.
//
// Bounded history. Per file, a sector-range map (runs, kept per 1 MiB chunk
// as blockdev.StampMap keeps stamps) holds, for every sector written by a
// completed call, the largest cstart of the completed writes to it (M, the
// latest "started after" horizon), the cend of the write that set M, and
// the previous M with its cend: a read checks against M as it was when the
// read started, which is M or, if M moved while the read was in flight,
// the previous M; if both moved (two writes to one sector completed during
// one read), the sector is not judged stale (conservative). The map has at
// most about two runs per write boundary, like the device's own stamp map.
// Per writer (job), the write calls are kept in a ring in stamp order; at
// most writerKeep completed calls are kept, older ones are pruned and
// summarised by the largest id and cend pruned, which still decides the
// stale and older-than questions for them conservatively. The ring holds
// every call in flight. After warm-up a check and a registration allocate
// nothing.
//
// What the oracle does not judge: stamps of failed write calls (their data
// may be partial), writes of a job on a file that nobody reads, and
// sectors whose history it has dropped. It never changes the simulation:
// it charges no simulated time and only reads what the read calls already
// return.

// sectorsPerPage is the number of 512-byte sectors in a 4 KiB page, the
// unit torn and stale pages are counted in.
const sectorsPerPage = 4096 / blockdev.SectorSize

// historyChunkSectors is the span of one chunk of a file's history (1 MiB).
const historyChunkSectors = 2048

// writerKeep is the number of completed write calls kept per writer before
// older ones are pruned.
const writerKeep = 64

// IntegrityStats counts what the atomicity oracle found in one job's reads
// (or a group's, or a run's). The zero value means the oracle did not
// watch the job's file.
type IntegrityStats struct {
	// On reports whether the oracle watched the job: its file is read by
	// some job of the run and written by some job of the run.
	On bool
	// Reads is the number of reads checked.
	Reads uint64
	// TornReads is the number of reads with at least one torn page, and
	// TornPages the number of torn 4 KiB pages over all of them.
	TornReads, TornPages uint64
	// StaleReads is the number of reads with at least one stale page, and
	// StalePages the number of stale 4 KiB pages over all of them.
	StaleReads, StalePages uint64
}

// Merge adds o's counts to s; s is on if either is.
func (s *IntegrityStats) Merge(o *IntegrityStats) {
	s.On = s.On || o.On
	s.Reads += o.Reads
	s.TornReads += o.TornReads
	s.TornPages += o.TornPages
	s.StaleReads += o.StaleReads
	s.StalePages += o.StalePages
}

// oracle is a run's atomicity oracle, shared by all its jobs. Not safe for
// concurrent use (the engine runs one task at a time).
type oracle struct {
	nextID    uint64 // ids handed out so far
	completed uint64 // write calls ended so far
	writers   []writerLog
	// files are the watched files' histories; writeCall.file indexes it.
	files []*fileHistory

	// Scratch for checkRead, reused from read to read.
	obs   []obsRun
	pages []uint8
	hist  []histRun
	seen  []*writeCall
}

// writeCall is one write call the oracle watches. It holds no pointers,
// so that keeping calls costs the garbage collector nothing.
type writeCall struct {
	id              uint64 // 1, 2, ... in start order
	cstart, cend    uint64 // write calls completed before it started; its completion number (0: in flight)
	sector, sectors int64  // the file sectors written
	file            int32  // index of the file's history in oracle.files
	ended, failed   bool
}

// writerLog holds one writer's write calls in stamp order, as a ring:
// buf[(head+i)&(len(buf)-1)] has sequence number base+i.
type writerLog struct {
	buf     []writeCall
	head, n int
	base    uint64
	// Pruned calls: whether there are any, and their largest id and cend.
	pruned               bool
	prunedID, prunedCend uint64
}

// at returns the call with sequence number seq, or nil if it is not held.
func (w *writerLog) at(seq uint64) *writeCall {
	if w.n == 0 || seq < w.base || seq-w.base >= uint64(w.n) {
		return nil
	}
	return &w.buf[(w.head+int(seq-w.base))&(len(w.buf)-1)]
}

// push appends a zeroed call and returns it; pointers returned earlier may
// be invalidated.
func (w *writerLog) push() *writeCall {
	if w.n == len(w.buf) {
		nb := make([]writeCall, max(16, 2*len(w.buf)))
		for i := range w.n {
			nb[i] = w.buf[(w.head+i)&(len(w.buf)-1)]
		}
		w.buf, w.head = nb, 0
	}
	c := &w.buf[(w.head+w.n)&(len(w.buf)-1)]
	*c = writeCall{}
	w.n++
	return c
}

// prune drops the oldest calls beyond keep while they have ended.
func (w *writerLog) prune(keep int) {
	for w.n > keep {
		c := &w.buf[w.head]
		if !c.ended {
			return
		}
		w.pruned = true
		w.prunedID = max(w.prunedID, c.id)
		w.prunedCend = max(w.prunedCend, c.cend)
		w.head = (w.head + 1) & (len(w.buf) - 1)
		w.n--
		w.base++
	}
}

// newOracle returns an oracle for a run whose writers have stamps with
// Writer 1..writers.
func newOracle(writers int) *oracle {
	return &oracle{writers: make([]writerLog, writers)}
}

// watch returns a new file history registered with the oracle.
func (o *oracle) watch() *fileHistory {
	h := &fileHistory{index: int32(len(o.files)), chunks: make(map[int64][]histRun)}
	o.files = append(o.files, h)
	return h
}

// writer returns the log of stamp s's writer, or nil if s has none.
func (o *oracle) writer(s blockdev.Stamp) *writerLog {
	if s.Writer == 0 || int(s.Writer) > len(o.writers) {
		return nil
	}
	return &o.writers[s.Writer-1]
}

// writeStart registers the start of a write call of n bytes at file offset
// off of the file whose history is h, stamping with s. A writer's calls
// must start in increasing Seq order (gaps are allowed: skipped numbers
// are never-issued calls).
func (o *oracle) writeStart(h *fileHistory, s blockdev.Stamp, off, n int64) {
	w := o.writer(s)
	if w == nil {
		return
	}
	if w.n == 0 {
		w.base = s.Seq
	}
	if s.Seq < w.base+uint64(w.n) {
		return // out of order: not watched
	}
	for w.base+uint64(w.n) < s.Seq {
		c := w.push() // a number never issued
		c.ended, c.failed = true, true
	}
	o.nextID++
	c := w.push()
	c.id, c.cstart, c.file = o.nextID, o.completed, h.index
	c.sector = off / blockdev.SectorSize
	c.sectors = (off%blockdev.SectorSize + n + blockdev.SectorSize - 1) / blockdev.SectorSize
}

// writeEnd registers the end of the write call stamped s; ok is false if
// it failed (its data, maybe partial, are then not judged).
func (o *oracle) writeEnd(s blockdev.Stamp, ok bool) {
	w := o.writer(s)
	if w == nil {
		return
	}
	c := w.at(s.Seq)
	if c == nil || c.ended {
		return
	}
	o.completed++
	c.cend = o.completed
	c.ended = true
	c.failed = !ok
	if ok {
		o.files[c.file].complete(c.sector, c.sectors, c.cstart, c.cend)
	}
	w.prune(writerKeep)
}

// readStart registers the start of a read call and returns what its check
// needs to know of that moment.
func (o *oracle) readStart() uint64 { return o.completed }

// obsKind says what the oracle knows of a stamp a read found.
type obsKind uint8

const (
	obsUnknown obsKind = iota // not placeable: neutral
	obsZero                   // never written
	obsCall                   // a watched call of this file, not failed
	obsPruned                 // a pruned call of a known writer
)

// obsRun is a run of sectors of a read holding one stamp, in file sectors.
type obsRun struct {
	start, end int64
	stamp      blockdev.Stamp
	kind       obsKind
	call       *writeCall // obsCall
	w          *writerLog // obsPruned
}

// olderThan reports whether the run's data are older than the write call
// with id id (never written, or a write that started before it).
func (r *obsRun) olderThan(id uint64) bool {
	switch r.kind {
	case obsZero:
		return true
	case obsCall:
		return r.call.id < id
	case obsPruned:
		return r.w.prunedID < id
	}
	return false
}

// endedBy reports whether the run's data are from a write that completed
// no later than completion number m (so a write with cstart m started
// after it); never-written data count as ended by anything.
func (r *obsRun) endedBy(m uint64) bool {
	switch r.kind {
	case obsZero:
		return true
	case obsCall:
		return r.call.ended && r.call.cend <= m
	case obsPruned:
		return r.w.prunedCend <= m
	}
	return false
}

// Page flags of a read's check.
const (
	pageTorn uint8 = 1 << iota
	pageStale
)

// checkRead checks a read of the file whose history is h, started when
// readStart returned rc, that found data (stamps in file order from file
// sector sector on), and adds the read to st.
func (o *oracle) checkRead(h *fileHistory, rc uint64, sector int64, data []blockdev.StampRun, st *IntegrityStats) {
	st.Reads++
	o.obs = o.obs[:0]
	pos := sector
	for _, r := range data {
		if r.Sectors <= 0 {
			continue
		}
		if k := len(o.obs) - 1; k >= 0 && o.obs[k].stamp == r.Stamp {
			o.obs[k].end += r.Sectors
		} else {
			o.obs = append(o.obs, obsRun{start: pos, end: pos + r.Sectors, stamp: r.Stamp})
		}
		pos += r.Sectors
	}
	if len(o.obs) == 0 {
		return
	}
	firstPage := sector / sectorsPerPage
	np := int((pos-1)/sectorsPerPage - firstPage + 1)
	if cap(o.pages) < np {
		o.pages = make([]uint8, np)
	}
	o.pages = o.pages[:np]
	clear(o.pages)
	mark := func(s, e int64, flag uint8) {
		for p := s/sectorsPerPage - firstPage; p <= (e-1)/sectorsPerPage-firstPage; p++ {
			o.pages[p] |= flag
		}
	}
	for i := range o.obs {
		r := &o.obs[i]
		switch w := o.writer(r.stamp); {
		case r.stamp == blockdev.Stamp{}:
			r.kind = obsZero
		case w == nil:
		case r.stamp.Seq < w.base && w.pruned:
			r.kind, r.w = obsPruned, w
		default:
			if c := w.at(r.stamp.Seq); c != nil && !c.failed && c.file == h.index {
				r.kind, r.call = obsCall, c
			}
		}
	}

	// Stale: against M as it was when the read started.
	for i := range o.obs {
		r := &o.obs[i]
		if r.kind == obsUnknown {
			continue
		}
		o.hist = h.runsIn(o.hist[:0], r.start, r.end)
		for _, hr := range o.hist {
			if m, ok := hr.v.asOf(rc); ok && r.endedBy(m) {
				mark(hr.start, hr.end, pageStale)
			}
		}
	}

	// Torn: against each watched write call the read found.
	o.seen = o.seen[:0]
	for i := range o.obs {
		wc := o.obs[i].call
		if o.obs[i].kind != obsCall || slices.Contains(o.seen, wc) {
			continue
		}
		o.seen = append(o.seen, wc)
		lo, hi := max(wc.sector, sector), min(wc.sector+wc.sectors, pos)
		k, _ := slices.BinarySearchFunc(o.obs, lo, func(r obsRun, x int64) int {
			if r.end <= x {
				return -1
			}
			return 1
		})
		older := false
		for m := k; m < len(o.obs) && o.obs[m].start < hi; m++ {
			if o.obs[m].olderThan(wc.id) {
				older = true
				break
			}
		}
		if !older {
			continue
		}
		for m := k; m < len(o.obs) && o.obs[m].start < hi; m++ {
			if r := &o.obs[m]; r.olderThan(wc.id) {
				mark(max(r.start, lo), min(r.end, hi), pageTorn)
			}
		}
	}
	o.seen = o.seen[:0]

	var torn, stale uint64
	for _, f := range o.pages {
		if f&pageTorn != 0 {
			torn++
		}
		if f&pageStale != 0 {
			stale++
		}
	}
	if torn > 0 {
		st.TornReads++
		st.TornPages += torn
	}
	if stale > 0 {
		st.StaleReads++
		st.StalePages += stale
	}
}

// histVal is what a file's history knows of a sector: m, the largest
// cstart of the completed write calls to it, set by the call whose cend is
// at; and the previous m and its at (pat 0: none known).
type histVal struct {
	m, at, pm, pat uint64
}

// asOf returns m as it was when rc write calls had completed, and false if
// no completed write to the sector is known from then.
func (v histVal) asOf(rc uint64) (uint64, bool) {
	switch {
	case v.at <= rc:
		return v.m, true
	case v.pat != 0 && v.pat <= rc:
		return v.pm, true
	}
	return 0, false
}

// histRun is a run of sectors with one histVal.
type histRun struct {
	start, end int64
	v          histVal
}

// fileHistory is the oracle's history of one file: the sectors written by
// completed write calls, as sorted, non-overlapping runs per 1 MiB chunk
// (sectors never written by a completed call have no run).
type fileHistory struct {
	index  int32 // in oracle.files
	chunks map[int64][]histRun
	repl   []histRun
	// slab is where new chunks take their first runs from, so that a
	// random workload, touching a new chunk with most writes, does not
	// allocate for each.
	slab []histRun
}

// Run slabs: a new chunk gets room for chunkStartRuns runs from a slab of
// slabRuns.
const (
	chunkStartRuns = 4
	slabRuns       = 4096
)

// complete records the completion of a write call of sectors [s, s+n)
// with cstart c and cend ce.
func (h *fileHistory) complete(s, n int64, c, ce uint64) {
	for end := s + n; s < end; {
		ch := s / historyChunkSectors
		e := min(end, (ch+1)*historyChunkSectors)
		h.completeChunk(ch, s, e, c, ce)
		s = e
	}
}

// appendHist appends r to dst, joining it to the last run if they touch
// and have the same value.
func appendHist(dst []histRun, r histRun) []histRun {
	if k := len(dst) - 1; k >= 0 && dst[k].end == r.start && dst[k].v == r.v {
		dst[k].end = r.end
		return dst
	}
	return append(dst, r)
}

// firstEndingAfter returns the index of the first run of runs ending after
// sector s.
func firstEndingAfter(runs []histRun, s int64) int {
	i, _ := slices.BinarySearchFunc(runs, s, func(r histRun, x int64) int {
		if r.end <= x {
			return -1
		}
		return 1
	})
	return i
}

func (h *fileHistory) completeChunk(ch, s, e int64, c, ce uint64) {
	runs := h.chunks[ch]
	i := firstEndingAfter(runs, s)
	j := i
	for j < len(runs) && runs[j].start < e {
		j++
	}
	fresh := histVal{m: c, at: ce}
	r := h.repl[:0]
	if i < j && runs[i].start < s {
		r = append(r, histRun{start: runs[i].start, end: s, v: runs[i].v})
	}
	pos := s
	for _, x := range runs[i:j] {
		xs, xe := max(x.start, s), min(x.end, e)
		if xs > pos {
			r = appendHist(r, histRun{start: pos, end: xs, v: fresh})
		}
		v := x.v
		if c > v.m {
			v = histVal{m: c, at: ce, pm: x.v.m, pat: x.v.at}
		}
		r = appendHist(r, histRun{start: xs, end: xe, v: v})
		pos = xe
	}
	if pos < e {
		r = appendHist(r, histRun{start: pos, end: e, v: fresh})
	}
	if i < j && runs[j-1].end > e {
		r = append(r, histRun{start: e, end: runs[j-1].end, v: runs[j-1].v})
	}
	if runs == nil && len(r) <= chunkStartRuns {
		if len(h.slab) < chunkStartRuns {
			h.slab = make([]histRun, slabRuns)
		}
		runs = h.slab[:0:chunkStartRuns]
		h.slab = h.slab[chunkStartRuns:]
	}
	h.chunks[ch] = slices.Replace(runs, i, j, r...)
	h.repl = r
}

// runsIn appends to dst the runs covering [s, e), clipped to it, and
// returns the extended slice; sectors without a run are left out.
func (h *fileHistory) runsIn(dst []histRun, s, e int64) []histRun {
	for s < e {
		ch := s / historyChunkSectors
		ce := min(e, (ch+1)*historyChunkSectors)
		runs := h.chunks[ch]
		for _, r := range runs[firstEndingAfter(runs, s):] {
			if r.start >= ce {
				break
			}
			dst = append(dst, histRun{start: max(r.start, s), end: min(r.end, ce), v: r.v})
		}
		s = ce
	}
	return dst
}

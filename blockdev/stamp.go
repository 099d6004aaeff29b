package blockdev

import "slices"

// SectorSize is the unit of bio and request addresses, as in the kernel.
const SectorSize = 512

// Stamp identifies the write that last stored a sector: the writer (a job
// or task id) and a sequence number unique to that writer. The zero Stamp
// means "never written".
type Stamp struct {
	Writer uint32
	Seq    uint64
}

// StampRun is a run of consecutive sectors carrying the same stamp.
type StampRun struct {
	Sector  int64
	Sectors int64
	Stamp   Stamp
}

// chunkSectors is the span of one StampMap chunk (1 MiB): runs never cross
// a chunk boundary, so a write touches only the chunks it covers.
const chunkSectors = 2048

// StampMap records, for every sector, the stamp of the write that last
// stored it, as run-length encoded runs kept per 1 MiB chunk (a 1 MiB
// aligned write is one run). The zero value is not usable; create one with
// NewStampMap. Not safe for concurrent use.
type StampMap struct {
	chunks map[int64][]StampRun // chunk index -> sorted, non-overlapping runs
	runs   int
}

// NewStampMap returns an empty map (every sector unwritten).
func NewStampMap() *StampMap {
	return &StampMap{chunks: make(map[int64][]StampRun)}
}

// Len returns the number of runs held.
func (m *StampMap) Len() int { return m.runs }

// Write stamps sectors [sector, sector+n) with s (the zero Stamp erases).
func (m *StampMap) Write(sector, n int64, s Stamp) {
	for end := sector + n; sector < end; {
		c := sector / chunkSectors
		e := min(end, (c+1)*chunkSectors)
		m.writeChunk(c, sector, e, s)
		sector = e
	}
}

// writeChunk replaces [start, end) within chunk c.
func (m *StampMap) writeChunk(c, start, end int64, s Stamp) {
	runs := m.chunks[c]
	before := len(runs)
	// i: first run ending after start; j: first run starting at or after end.
	i, _ := slices.BinarySearchFunc(runs, start, func(r StampRun, x int64) int {
		if r.Sector+r.Sectors <= x {
			return -1
		}
		return 1
	})
	j := i
	for j < len(runs) && runs[j].Sector < end {
		j++
	}
	var repl [3]StampRun
	k := 0
	if i < j && runs[i].Sector < start {
		h := runs[i]
		h.Sectors = start - h.Sector
		repl[k] = h
		k++
	}
	if s != (Stamp{}) {
		repl[k] = StampRun{Sector: start, Sectors: end - start, Stamp: s}
		k++
	}
	if i < j {
		if last := runs[j-1]; last.Sector+last.Sectors > end {
			t := last
			t.Sector = end
			t.Sectors = last.Sector + last.Sectors - end
			repl[k] = t
			k++
		}
	}
	runs = slices.Replace(runs, i, j, repl[:k]...)
	m.runs += len(runs) - before
	if len(runs) == 0 {
		delete(m.chunks, c)
		return
	}
	m.chunks[c] = runs
}

// Read appends to dst the runs covering [sector, sector+n), including runs
// of the zero Stamp for unwritten sectors, clipped to the range, with
// adjacent runs of the same stamp joined, and returns the extended slice.
func (m *StampMap) Read(dst []StampRun, sector, n int64) []StampRun {
	emit := func(r StampRun) {
		if k := len(dst) - 1; k >= 0 && dst[k].Stamp == r.Stamp && dst[k].Sector+dst[k].Sectors == r.Sector {
			dst[k].Sectors += r.Sectors
			return
		}
		dst = append(dst, r)
	}
	for end := sector + n; sector < end; {
		c := sector / chunkSectors
		e := min(end, (c+1)*chunkSectors)
		pos := sector
		for _, r := range m.chunks[c] {
			rs, re := max(r.Sector, sector), min(r.Sector+r.Sectors, e)
			if re <= rs {
				continue
			}
			if rs > pos {
				emit(StampRun{Sector: pos, Sectors: rs - pos})
			}
			emit(StampRun{Sector: rs, Sectors: re - rs, Stamp: r.Stamp})
			pos = re
		}
		if pos < e {
			emit(StampRun{Sector: pos, Sectors: e - pos})
		}
		sector = e
	}
	return dst
}

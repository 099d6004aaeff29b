package blockdev

// Helpers for device backends outside this package (the real O_DIRECT
// device in blockdev/realdev), which keep stamps somewhere other than a
// StampMap but must hand them to bios exactly as the memory device does.

// WriteStamps calls fn, in sector order, for every run of sectors that the
// write request r stores, with the stamp each run gets (a bio's Stamp, or
// the part of its WriteRuns it covers). It does nothing for a read.
func (r *Request) WriteStamps(fn func(sector, n int64, s Stamp)) {
	if r.Op != OpWrite {
		return
	}
	for _, b := range r.Bios {
		if runs := b.target().WriteRuns; len(runs) > 0 {
			start, end := b.Sector, b.Sector+b.Sectors()
			for _, w := range runs {
				s, e := max(w.Sector, start), min(w.Sector+w.Sectors, end)
				if e > s {
					fn(s, e-s, w.Stamp)
				}
			}
			continue
		}
		fn(b.Sector, b.Sectors(), b.Stamp)
	}
}

// DeliverRead hands the stamps a completed read request found to the bios
// that collect them (CollectData): read appends to dst the runs covering
// [sector, sector+n), as StampMap.Read does, and returns the extended
// slice. It does nothing for a write.
func (r *Request) DeliverRead(read func(dst []StampRun, sector, n int64) []StampRun) {
	if r.Op != OpRead {
		return
	}
	for _, b := range r.Bios {
		if b.CollectData {
			t := b.target()
			t.Data = read(t.Data, b.Sector, b.Sectors())
		}
	}
}

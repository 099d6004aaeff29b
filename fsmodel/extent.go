package fsmodel

import (
	"fmt"
	"sort"
)

// Extent maps a run of file blocks to device blocks. Offsets and lengths
// are in bytes; Physical is a byte offset on the device.
type Extent struct {
	Logical  int64
	Physical int64
	Length   int64
}

// ExtentMap is a file's sorted, non-overlapping list of extents.
type ExtentMap struct {
	exts []Extent
}

// Add appends an extent; it must start at or after the end of the last one.
func (m *ExtentMap) Add(e Extent) error {
	if n := len(m.exts); n > 0 {
		last := m.exts[n-1]
		if e.Logical < last.Logical+last.Length {
			return fmt.Errorf("fsmodel: extent at %d overlaps the previous extent", e.Logical)
		}
		if last.Logical+last.Length == e.Logical && last.Physical+last.Length == e.Physical {
			m.exts[n-1].Length += e.Length
			return nil
		}
	}
	m.exts = append(m.exts, e)
	return nil
}

// Extents returns the extents in logical order. The slice must not be
// modified.
func (m *ExtentMap) Extents() []Extent { return m.exts }

// Map calls fn for each physically contiguous piece of [off, off+n), in
// order. It reports false if part of the range has no extent (a hole).
func (m *ExtentMap) Map(off, n int64, fn func(logical, physical, length int64)) bool {
	end := off + n
	i := sort.Search(len(m.exts), func(i int) bool { return m.exts[i].Logical+m.exts[i].Length > off })
	pos := off
	for ; i < len(m.exts) && pos < end; i++ {
		e := m.exts[i]
		if e.Logical > pos {
			return false
		}
		l := min(end, e.Logical+e.Length) - pos
		fn(pos, e.Physical+pos-e.Logical, l)
		pos += l
	}
	return pos >= end
}

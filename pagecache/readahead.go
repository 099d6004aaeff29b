package pagecache

// On-demand readahead, after Linux 5.10-6.9 mm/readahead.c
// (ondemand_readahead, page_cache_sync_ra, page_cache_async_ra,
// get_init_ra_size, get_next_ra_size, try_context_readahead,
// do_page_cache_ra), for order-0 (4 KiB) pages. Written from the kernel's
// algorithm, not copied; the kernel's names are kept so the two can be
// read side by side.
//
// The file_ra_state fields describe the most recent readahead window:
//
//	|<----- AsyncSize ---------|
//	|------------------- Size -------------------->|
//	|==================#===========================|
//	^Start             ^page marked with PG_readahead
//
// A read that misses the cache calls Sync; a read that finds a page with
// PG_readahead clears the mark and calls Async, which pushes the window
// forward before the reader catches up with it.

// DefaultReadaheadKB is read_ahead_kb's default (VM_READAHEAD_PAGES).
const DefaultReadaheadKB = 128

// DefaultReadaheadPages is DefaultReadaheadKB in pages (32).
const DefaultReadaheadPages = DefaultReadaheadKB * 1024 / PageSize

// RAState is one open file's readahead state (struct file_ra_state). Get
// one from NewRAState; the zero value is usable and behaves like a state
// whose last read ended at offset 0.
type RAState struct {
	// Start, Size and AsyncSize are the current window in pages: it
	// covers [Start, Start+Size) and its marker is at
	// Start+Size-AsyncSize.
	Start, Size, AsyncSize int64
	// PrevPos is the byte offset just past the previous read (the
	// kernel's prev_pos, which filemap_read sets to the file position
	// after copying), or -1 for none. The caller updates it after every
	// read; readahead only reads it.
	PrevPos int64
}

// NewRAState returns the state of a newly opened file
// (file_ra_state_init: no window, PrevPos -1).
func NewRAState() RAState { return RAState{PrevPos: -1} }

// Readahead holds one file's readahead parameters (the kernel's
// ra->ra_pages, bdi->io_pages and FMODE_RANDOM) and computes its windows.
// The zero value disables readahead.
type Readahead struct {
	// MaxPages is the largest window in pages (read_ahead_kb / 4; 32 for
	// the default 128 KiB). 0 disables readahead: a miss reads only the
	// page that missed, and marks are never hit.
	MaxPages int64
	// IOPages is the device's optimal IO size in pages (bdi->io_pages,
	// max_sectors_kb / 4), or 0 for none. A read larger than MaxPages may
	// grow the window up to min(request, IOPages).
	IOPages int64
	// Random is FMODE_RANDOM (POSIX_FADV_RANDOM): misses read just what
	// was asked (force_page_cache_ra), with no window and no marker.
	Random bool
	// Cached, if set, reports whether the page at an index of this file
	// is in the cache. The kernel probes the cache to find where a marked
	// window ends (page_cache_next_miss) and to detect a sequential
	// stream whose state was lost, from the pages it left behind
	// (try_context_readahead). Nil means "not cached" everywhere, which
	// disables context readahead.
	Cached func(index int64) bool
}

// Window is the readahead decision: read pages [Start, Start+Count) (those
// not already cached: page_cache_ra_unbounded skips cached pages and
// submits what it gathered so far at each one), and set PG_readahead on the
// page at Marker if the read adds it. Marker is -1 for no marker. A Count
// of 0 means read nothing.
type Window struct {
	Start, Count, Marker int64
}

// End returns Start+Count.
func (w Window) End() int64 { return w.Start + w.Count }

// Clamp limits w to a file of filePages pages as do_page_cache_ra does:
// nothing at or past the end, the window cut at the last page. Like the
// kernel, which keeps the lookahead size and shortens the window, it moves
// the marker back by the pages cut and drops it if that puts it before
// Start.
func (w Window) Clamp(filePages int64) Window {
	if filePages <= 0 || w.Start >= filePages || w.Count <= 0 {
		return Window{Start: w.Start, Marker: -1}
	}
	if w.End() <= filePages {
		return w
	}
	cut := w.End() - filePages
	w.Count -= cut
	if w.Marker >= 0 {
		w.Marker -= cut
		if w.Marker < w.Start {
			w.Marker = -1
		}
	}
	return w
}

// getInitRASize is get_init_ra_size: the first window for a request of
// size pages, rounded up to a power of two, then 4x for small requests
// (up to max/32), 2x for medium ones (up to max/4), else max.
func getInitRASize(size, max int64) int64 {
	n := int64(1)
	for n < size {
		n <<= 1
	}
	switch {
	case n <= max/32:
		return 4 * n
	case n <= max/4:
		return 2 * n
	}
	return max
}

// getNextRASize is get_next_ra_size: ramp the window up, 4x while below
// max/16, 2x up to max/2, else max.
func getNextRASize(cur, max int64) int64 {
	switch {
	case cur < max/16:
		return 4 * cur
	case cur <= max/2:
		return 2 * cur
	}
	return max
}

// Sync is page_cache_sync_ra: the read of reqCount pages at index missed
// the cache at index. It returns the window to read, which always starts
// at index and covers at least the page at index (the caller loops, as
// filemap_read does, for what a capped window leaves), and updates ra. A
// reqCount below 1 counts as 1.
func (r Readahead) Sync(ra *RAState, index, reqCount int64) Window {
	reqCount = max(reqCount, 1)
	if r.MaxPages <= 0 {
		// Readahead disabled: issue just this page as readahead.
		return Window{Start: index, Count: 1, Marker: -1}
	}
	if r.Random {
		// force_page_cache_ra: the request, capped at the larger of the
		// device's IO size and the readahead size.
		return Window{Start: index, Count: min(reqCount, max(r.IOPages, r.MaxPages)), Marker: -1}
	}
	return r.ondemand(ra, false, index, reqCount)
}

// Async is page_cache_async_ra: the read of reqCount pages at index found
// the page at index marked with PG_readahead (the caller clears the mark:
// Page.TestClearReadahead). It returns the next window, which usually
// starts past index, or a Window with Count 0, and updates ra.
func (r Readahead) Async(ra *RAState, index, reqCount int64) Window {
	reqCount = max(reqCount, 1)
	if r.MaxPages <= 0 {
		return Window{Start: index, Marker: -1}
	}
	return r.ondemand(ra, true, index, reqCount)
}

// ondemand is ondemand_readahead.
func (r Readahead) ondemand(ra *RAState, hitMarker bool, index, req int64) Window {
	maxPages := r.MaxPages
	// A request larger than the window may use the device's IO size.
	if req > maxPages && r.IOPages > maxPages {
		maxPages = min(req, r.IOPages)
	}

	switch {
	case index == 0:
		// Start of file.
		return r.initial(ra, index, req, maxPages)

	case index == ra.Start+ra.Size-ra.AsyncSize || index == ra.Start+ra.Size:
		// The expected index (the marker, or the window's end):
		// sequential. Ramp up and push the window forward.
		ra.Start += ra.Size
		ra.Size = getNextRASize(ra.Size, maxPages)
		ra.AsyncSize = ra.Size
		return r.readit(ra, index, maxPages)

	case hitMarker:
		// A marked page without matching state (interleaved streams on
		// one file): the window ends at the first missing page; ramp up
		// from the old async size.
		start := r.nextMiss(index+1, maxPages)
		if start-index > maxPages {
			return Window{Start: index, Marker: -1}
		}
		ra.Start = start
		ra.Size = start - index + req
		ra.Size = getNextRASize(ra.Size, maxPages)
		ra.AsyncSize = ra.Size
		return r.readit(ra, index, maxPages)

	case req > maxPages:
		// Oversize read.
		return r.initial(ra, index, req, maxPages)
	}

	// Sequential cache miss: the previous read ended in this page or the
	// one before (an unaligned or a page-by-page sequential read).
	if ra.PrevPos >= 0 {
		if prev := ra.PrevPos / PageSize; index >= prev && index-prev <= 1 {
			return r.initial(ra, index, req, maxPages)
		}
	}

	// A stream whose state was lost leaves cached pages behind it.
	if r.contextReadahead(ra, index, req, maxPages) {
		return r.readit(ra, index, maxPages)
	}

	// A standalone random read: read what was asked and leave the state
	// alone.
	return Window{Start: index, Count: req, Marker: -1}
}

// initial starts a new window at index (initial_readahead).
func (r Readahead) initial(ra *RAState, index, req, maxPages int64) Window {
	ra.Start = index
	ra.Size = getInitRASize(req, maxPages)
	if ra.Size > req {
		ra.AsyncSize = ra.Size - req
	} else {
		ra.AsyncSize = ra.Size
	}
	return r.readit(ra, index, maxPages)
}

// readit issues ra's window. If the read would hit its own marker at once
// (the marker is at index), the next window is merged into this one.
func (r Readahead) readit(ra *RAState, index, maxPages int64) Window {
	if index == ra.Start && ra.Size == ra.AsyncSize {
		add := getNextRASize(ra.Size, maxPages)
		if ra.Size+add <= maxPages {
			ra.AsyncSize = add
			ra.Size += add
		} else {
			ra.Size = maxPages
			ra.AsyncSize = maxPages >> 1
		}
	}
	w := Window{Start: ra.Start, Count: ra.Size, Marker: -1}
	if ra.AsyncSize > 0 {
		w.Marker = ra.Start + ra.Size - ra.AsyncSize
	}
	return w
}

// contextReadahead is try_context_readahead: if more than req pages right
// before index are cached (count_history_pages), a sequential stream
// probably left them; read ahead as much as that history, doubled if it
// reaches back to the start of the file.
func (r Readahead) contextReadahead(ra *RAState, index, req, maxPages int64) bool {
	if r.Cached == nil {
		return false
	}
	size := index - 1 - r.prevMiss(index-1, maxPages)
	if size <= req {
		return false
	}
	if size >= index {
		size *= 2
	}
	ra.Start = index
	ra.Size = min(size+req, maxPages)
	ra.AsyncSize = 1
	return true
}

// nextMiss is page_cache_next_miss: the first index in [index,
// index+maxScan) not cached, or index+maxScan if all are.
func (r Readahead) nextMiss(index, maxScan int64) int64 {
	if r.Cached == nil {
		return index
	}
	for i := index; i < index+maxScan; i++ {
		if !r.Cached(i) {
			return i
		}
	}
	return index + maxScan
}

// prevMiss is page_cache_prev_miss: the last index in (index-maxScan,
// index] not cached, index-maxScan if all are, or -1 if the scan reached
// the start of the file with every page cached (the kernel's wrap to
// ULONG_MAX, which makes the history reach index 0).
func (r Readahead) prevMiss(index, maxScan int64) int64 {
	for i := index; i > index-maxScan; i-- {
		if i < 0 {
			return -1
		}
		if !r.Cached(i) {
			return i
		}
	}
	return index - maxScan
}

// SyncReadahead is Readahead{MaxPages: maxPages}.Sync(ra, index, reqCount)
// with the window returned as (start, count, asyncMarker); asyncMarker is
// -1 for no marker.
func SyncReadahead(ra *RAState, index, reqCount, maxPages int64) (start, count, asyncMarker int64) {
	w := Readahead{MaxPages: maxPages}.Sync(ra, index, reqCount)
	return w.Start, w.Count, w.Marker
}

// AsyncReadahead is Readahead{MaxPages: maxPages}.Async(ra, index,
// reqCount) with the window returned as (start, count, asyncMarker); count
// is 0 when there is nothing to read.
func AsyncReadahead(ra *RAState, index, reqCount, maxPages int64) (start, count, asyncMarker int64) {
	w := Readahead{MaxPages: maxPages}.Async(ra, index, reqCount)
	return w.Start, w.Count, w.Marker
}

// Run is a physically contiguous part of a read: Pages pages of the file
// from page Index, stored from filesystem block Block on (blocks are
// PageSize bytes). One Run is one bio.
type Run struct {
	Index, Block, Pages int64
}

// Runs splits pages [start, start+count) into physically contiguous runs,
// as mpage_readahead builds bios: phys maps a page index to its block, or
// to -1 for a page not to read (a hole, or a page already cached); a run
// ends at such a page and wherever the next page's block does not follow
// the previous one's. Runs are in index order.
func Runs(start, count int64, phys func(index int64) int64) []Run {
	return AppendRuns(nil, start, count, phys)
}

// AppendRuns is Runs appending to dst, for callers that reuse a slice.
func AppendRuns(dst []Run, start, count int64, phys func(index int64) int64) []Run {
	open := false
	for i := start; i < start+count; i++ {
		b := phys(i)
		if b < 0 {
			open = false
			continue
		}
		if open {
			last := &dst[len(dst)-1]
			if b == last.Block+last.Pages {
				last.Pages++
				continue
			}
		}
		dst = append(dst, Run{Index: i, Block: b, Pages: 1})
		open = true
	}
	return dst
}

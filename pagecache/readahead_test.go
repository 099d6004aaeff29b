package pagecache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGetInitRASize(t *testing.T) {
	tests := []struct{ req, max, want int64 }{
		// A 4 KiB read with read_ahead_kb=128: roundup_pow_of_two(1) = 1
		// <= 32/32, so 4x: the first window is 4 pages (16 KiB), not 128
		// KiB (mm/readahead.c get_init_ra_size, 5.10-6.9).
		{1, 32, 4},
		{2, 32, 4},  // 2 <= 32/4: 2x
		{3, 32, 8},  // rounded up to 4, 2x
		{8, 32, 16}, // 8 <= 32/4: 2x
		{9, 32, 32}, // 16 > 32/4: max
		{32, 32, 32},
		{64, 32, 32},
		{1, 128, 4}, // read_ahead_kb=512
		{4, 128, 16},
		{5, 128, 16}, // 8 <= 128/4: 2x
		{40, 128, 128},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, getInitRASize(tt.req, tt.max), "get_init_ra_size(%d, %d)", tt.req, tt.max)
	}
}

func TestGetNextRASize(t *testing.T) {
	tests := []struct{ cur, max, want int64 }{
		{1, 32, 4},  // 1 < 32/16: 4x
		{2, 32, 4},  // 2 <= 32/2: 2x
		{4, 32, 8},  // 2x
		{8, 32, 16}, // 2x
		{16, 32, 32},
		{17, 32, 32}, // > max/2: max
		{32, 32, 32},
		{4, 128, 16}, // 4 < 128/16: 4x
		{8, 128, 16}, // 8 = 128/16: 2x
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, getNextRASize(tt.cur, tt.max), "get_next_ra_size(%d, %d)", tt.cur, tt.max)
	}
}

// raSim plays filemap_read over a simulated cache: each page of a read
// that is missing triggers Sync, each marked page Async; windows add the
// pages they cover that are missing, and mark the page at Marker if they
// added it.
type raSim struct {
	t         *testing.T
	r         Readahead
	ra        RAState
	filePages int64 // 0: unbounded
	cached    map[int64]bool
	marked    map[int64]bool
	windows   []Window
}

func newRASim(t *testing.T, r Readahead) *raSim {
	s := &raSim{t: t, r: r, ra: NewRAState(), cached: map[int64]bool{}, marked: map[int64]bool{}}
	if s.r.Cached == nil {
		s.r.Cached = func(i int64) bool { return s.cached[i] }
	}
	return s
}

func (s *raSim) submit(w Window) {
	if s.filePages > 0 {
		w = w.Clamp(s.filePages)
	}
	if w.Count == 0 {
		return
	}
	s.windows = append(s.windows, w)
	for i := w.Start; i < w.End(); i++ {
		if !s.cached[i] {
			s.cached[i] = true
			if i == w.Marker {
				s.marked[i] = true
			}
		}
	}
}

// read reads count pages at index.
func (s *raSim) read(index, count int64) {
	end := index + count
	for i := index; i < end; i++ {
		if !s.cached[i] {
			s.submit(s.r.Sync(&s.ra, i, end-i))
		} else if s.marked[i] {
			delete(s.marked, i)
			s.submit(s.r.Async(&s.ra, i, end-i))
		}
		require.True(s.t, s.cached[i], "the window covers the page that missed")
	}
	s.ra.PrevPos = end * PageSize
}

func TestSequentialReader4K(t *testing.T) {
	s := newRASim(t, Readahead{MaxPages: DefaultReadaheadPages})
	for i := range int64(200) {
		s.read(i, 1)
	}
	// The kernel's ramp for a 4 KiB sequential reader with read_ahead_kb
	// 128: 4 pages at the first miss (marker on page 1: async size 3),
	// then async windows of 8, 16, 32, 32... each marked on its first
	// page, issued when the reader reaches the previous marker.
	want := []Window{
		{0, 4, 1},
		{4, 8, 4},
		{12, 16, 12},
		{28, 32, 28},
		{60, 32, 60},
		{92, 32, 92},
		{124, 32, 124},
		{156, 32, 156},
		{188, 32, 188},
		{220, 32, 220},
	}
	assert.Equal(t, want, s.windows)
	assert.Equal(t, RAState{Start: 220, Size: 32, AsyncSize: 32, PrevPos: 200 * PageSize}, s.ra)
}

func TestSequentialReader128K(t *testing.T) {
	s := newRASim(t, Readahead{MaxPages: DefaultReadaheadPages})
	for i := int64(0); i < 160; i += 32 {
		s.read(i, 32)
	}
	// A read as large as the window: the initial window would hit its own
	// marker at once, so it is merged with the next (size 32, async 16);
	// then one full window ahead, marked on its first page.
	want := []Window{
		{0, 32, 16},
		{32, 32, 32},
		{64, 32, 64},
		{96, 32, 96},
		{128, 32, 128},
		{160, 32, 160},
	}
	assert.Equal(t, want, s.windows)
}

func TestSequentialReaderStartingMidFile(t *testing.T) {
	s := newRASim(t, Readahead{MaxPages: DefaultReadaheadPages})
	s.read(1000, 1) // no history: a random read of just that page
	s.read(1001, 1) // follows the previous read: sequential
	s.read(1002, 1)
	s.read(1003, 1)
	assert.Equal(t, []Window{{1000, 1, -1}, {1001, 4, 1002}, {1005, 8, 1005}}, s.windows)
}

func TestRandomReadsDoNotRamp(t *testing.T) {
	r := Readahead{MaxPages: DefaultReadaheadPages}
	ra := NewRAState()
	ra.Start, ra.Size, ra.AsyncSize = 10, 4, 3
	before := ra
	for _, idx := range []int64{500, 77, 9000, 3, 4242, 12} {
		w := r.Sync(&ra, idx, 1)
		assert.Equal(t, Window{idx, 1, -1}, w, "index %d", idx)
		assert.Equal(t, before, ra, "random reads leave the state alone")
		ra.PrevPos = (idx + 1) * PageSize
		before.PrevPos = ra.PrevPos
	}
	// A multi-page random read gets exactly its pages.
	assert.Equal(t, Window{7000, 3, -1}, r.Sync(&ra, 7000, 3))

	// Through the simulation, with context readahead on: random single
	// pages leave no history, so nothing ramps.
	s := newRASim(t, Readahead{MaxPages: DefaultReadaheadPages})
	for _, idx := range []int64{500, 77, 9000, 3, 4242, 12, 801, 802 + 50} {
		s.read(idx, 1)
	}
	for _, w := range s.windows {
		assert.Equal(t, int64(1), w.Count, "%+v", w)
	}
}

func TestUnalignedSequentialReads(t *testing.T) {
	r := Readahead{MaxPages: DefaultReadaheadPages}
	ra := NewRAState()
	ra.PrevPos = 5*PageSize + 100 // the last read ended inside page 5
	assert.Equal(t, Window{5, 4, 6}, r.Sync(&ra, 5, 1), "index - prev_index == 0: sequential")
	ra = NewRAState()
	ra.PrevPos = 5*PageSize + 100
	assert.Equal(t, Window{4, 1, -1}, r.Sync(&ra, 4, 1), "backwards: random")
}

func TestOversizeReadAndIOPages(t *testing.T) {
	tests := []struct {
		name       string
		r          Readahead
		index, req int64
		want       Window
	}{
		{"large read at 0, no io_pages", Readahead{MaxPages: 32}, 0, 64, Window{0, 32, 16}},
		{"large read at 0, io_pages 64", Readahead{MaxPages: 32, IOPages: 64}, 0, 64, Window{0, 64, 32}},
		{"io_pages caps the growth", Readahead{MaxPages: 32, IOPages: 48}, 0, 64, Window{0, 48, 24}},
		{"io_pages smaller than the window", Readahead{MaxPages: 32, IOPages: 16}, 0, 64, Window{0, 32, 16}},
		{"oversize read mid-file", Readahead{MaxPages: 32}, 500, 40, Window{500, 32, 516}},
		{"readahead off", Readahead{}, 500, 40, Window{500, 1, -1}},
		{"FMODE_RANDOM", Readahead{MaxPages: 32, Random: true}, 500, 40, Window{500, 32, -1}},
		{"FMODE_RANDOM with io_pages", Readahead{MaxPages: 32, IOPages: 64, Random: true}, 500, 40, Window{500, 40, -1}},
		{"FMODE_RANDOM small", Readahead{MaxPages: 32, Random: true}, 500, 2, Window{500, 2, -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ra := NewRAState()
			assert.Equal(t, tt.want, tt.r.Sync(&ra, tt.index, tt.req))
		})
	}
	ra := NewRAState()
	assert.Equal(t, Window{7, 0, -1}, Readahead{}.Async(&ra, 7, 1), "readahead off: marks do nothing")
}

func TestMarkerWithoutState(t *testing.T) {
	// Interleaved streams on one file: the state describes another
	// stream's window, a marked page of ours is hit. The window restarts
	// at the first page not cached after it, sized from the old async
	// size and the request, ramped up.
	cached := map[int64]bool{}
	for i := int64(50); i < 60; i++ {
		cached[i] = true
	}
	r := Readahead{MaxPages: 32, Cached: func(i int64) bool { return cached[i] }}
	ra := RAState{Start: 100, Size: 32, AsyncSize: 32, PrevPos: 132 * PageSize}
	w := r.Async(&ra, 50, 1)
	// size = (60 - 50) + 1 = 11, then get_next_ra_size(11, 32) = 22.
	assert.Equal(t, Window{60, 22, 60}, w)
	assert.Equal(t, RAState{Start: 60, Size: 22, AsyncSize: 22, PrevPos: 132 * PageSize}, ra)

	// Cached far beyond the window: give up.
	for i := int64(60); i < 200; i++ {
		cached[i] = true
	}
	ra = RAState{Start: 300, Size: 32, AsyncSize: 32, PrevPos: -1}
	assert.Equal(t, Window{50, 0, -1}, r.Async(&ra, 50, 1))
	assert.Equal(t, RAState{Start: 300, Size: 32, AsyncSize: 32, PrevPos: -1}, ra)

	// Without a cache probe every page after the marker counts as missing.
	ra = RAState{Start: 300, Size: 32, AsyncSize: 32, PrevPos: -1}
	assert.Equal(t, Window{51, 8, 51}, Readahead{MaxPages: 32}.Async(&ra, 50, 3), "size (1+3) ramped to 8")
}

func TestContextReadahead(t *testing.T) {
	cached := map[int64]bool{}
	r := Readahead{MaxPages: 32, Cached: func(i int64) bool { return cached[i] }}
	// 10 pages before index 100 are cached (a stream left them), and the
	// state was lost (PrevPos elsewhere): history 10 > req 1.
	for i := int64(90); i < 100; i++ {
		cached[i] = true
	}
	ra := RAState{PrevPos: 5000 * PageSize}
	assert.Equal(t, Window{100, 11, 110}, r.Sync(&ra, 100, 1), "size = history + req, async size 1")

	// History reaching back to the start of the file doubles.
	for i := int64(0); i < 20; i++ {
		cached[i] = true
	}
	ra = RAState{PrevPos: 5000 * PageSize}
	assert.Equal(t, Window{20, 32, 51}, r.Sync(&ra, 20, 1), "2*20+1 capped at 32")
	ra = RAState{PrevPos: 5000 * PageSize}
	assert.Equal(t, Window{10, 21, 30}, r.Sync(&ra, 10, 1), "2*10+1")

	// Not more history than the request: random.
	ra = RAState{PrevPos: 5000 * PageSize}
	assert.Equal(t, Window{92, 4, -1}, r.Sync(&ra, 92, 4), "history 2 <= 4")
}

func TestWindowClamp(t *testing.T) {
	tests := []struct {
		name  string
		w     Window
		pages int64
		want  Window
	}{
		{"inside", Window{0, 4, 1}, 10, Window{0, 4, 1}},
		{"exactly to the end", Window{0, 4, 1}, 4, Window{0, 4, 1}},
		{"cut, marker moves back", Window{0, 4, 1}, 3, Window{0, 3, 0}},
		{"cut, marker before start", Window{0, 4, 1}, 2, Window{0, 2, -1}},
		{"async window cut loses its marker", Window{12, 16, 12}, 20, Window{12, 8, -1}},
		{"no marker", Window{5, 10, -1}, 8, Window{5, 3, -1}},
		{"past the end", Window{12, 16, 12}, 12, Window{12, 0, -1}},
		{"empty file", Window{0, 4, 1}, 0, Window{0, 0, -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.w.Clamp(tt.pages))
		})
	}

	// A sequential read of a 10-page file stops at its end.
	s := newRASim(t, Readahead{MaxPages: 32})
	s.filePages = 10
	for i := range int64(10) {
		s.read(i, 1)
	}
	assert.Equal(t, []Window{{0, 4, 1}, {4, 6, -1}}, s.windows)
}

func TestShorthands(t *testing.T) {
	ra := NewRAState()
	assert.Equal(t, int64(-1), ra.PrevPos)
	start, count, marker := SyncReadahead(&ra, 0, 1, 32)
	assert.Equal(t, []int64{0, 4, 1}, []int64{start, count, marker})
	start, count, marker = AsyncReadahead(&ra, 1, 1, 32)
	assert.Equal(t, []int64{4, 8, 4}, []int64{start, count, marker})
	_, count, _ = AsyncReadahead(&ra, 1, 1, 0)
	assert.Zero(t, count)
}

func TestRuns(t *testing.T) {
	blocks := func(m map[int64]int64) func(int64) int64 {
		return func(i int64) int64 {
			if b, ok := m[i]; ok {
				return b
			}
			return -1
		}
	}
	tests := []struct {
		name         string
		start, count int64
		phys         func(int64) int64
		want         []Run
	}{
		{"contiguous", 0, 8, func(i int64) int64 { return 100 + i }, []Run{{0, 100, 8}}},
		{"offset window", 40, 4, func(i int64) int64 { return 1000 + i }, []Run{{40, 1040, 4}}},
		{"discontinuous", 0, 6, blocks(map[int64]int64{0: 10, 1: 11, 2: 12, 3: 50, 4: 51, 5: 13}),
			[]Run{{0, 10, 3}, {3, 50, 2}, {5, 13, 1}}},
		{"holes and cached pages split", 0, 6, blocks(map[int64]int64{0: 10, 1: 11, 3: 13, 4: 14}),
			[]Run{{0, 10, 2}, {3, 13, 2}}},
		{"backwards blocks do not merge", 0, 3, blocks(map[int64]int64{0: 12, 1: 11, 2: 10}),
			[]Run{{0, 12, 1}, {1, 11, 1}, {2, 10, 1}}},
		{"interleaved files (f2fs without the writepages mutex)", 0, 4, func(i int64) int64 { return 2 * i },
			[]Run{{0, 0, 1}, {1, 2, 1}, {2, 4, 1}, {3, 6, 1}}},
		{"all holes", 0, 4, func(int64) int64 { return -1 }, nil},
		{"empty", 5, 0, func(int64) int64 { panic("not called") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Runs(tt.start, tt.count, tt.phys))
		})
	}
	dst := make([]Run, 0, 8)
	dst = AppendRuns(dst, 0, 2, func(i int64) int64 { return i })
	dst = AppendRuns(dst, 2, 2, func(i int64) int64 { return i }) // a new call starts a new run
	assert.Equal(t, []Run{{0, 0, 2}, {2, 2, 2}}, dst)
}

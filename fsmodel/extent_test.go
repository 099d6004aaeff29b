package fsmodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	KiB = int64(1024)
	MiB = 1024 * KiB
)

func TestExtentMapAdd(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  []Extent
		errs []bool // per Add
		want []Extent
	}{
		{"contiguous logical and physical merge",
			[]Extent{{0, 100 * KiB, 8 * KiB}, {8 * KiB, 108 * KiB, 4 * KiB}, {12 * KiB, 112 * KiB, 4 * KiB}},
			[]bool{false, false, false},
			[]Extent{{0, 100 * KiB, 16 * KiB}}},
		{"logically contiguous, physically apart",
			[]Extent{{0, 100 * KiB, 8 * KiB}, {8 * KiB, 200 * KiB, 8 * KiB}},
			[]bool{false, false},
			[]Extent{{0, 100 * KiB, 8 * KiB}, {8 * KiB, 200 * KiB, 8 * KiB}}},
		{"physically contiguous after a hole",
			[]Extent{{0, 100 * KiB, 8 * KiB}, {16 * KiB, 108 * KiB, 8 * KiB}},
			[]bool{false, false},
			[]Extent{{0, 100 * KiB, 8 * KiB}, {16 * KiB, 108 * KiB, 8 * KiB}}},
		{"overlap rejected",
			[]Extent{{0, 100 * KiB, 8 * KiB}, {4 * KiB, 300 * KiB, 8 * KiB}},
			[]bool{false, true},
			[]Extent{{0, 100 * KiB, 8 * KiB}}},
		{"before the last rejected",
			[]Extent{{16 * KiB, 100 * KiB, 8 * KiB}, {0, 300 * KiB, 4 * KiB}},
			[]bool{false, true},
			[]Extent{{16 * KiB, 100 * KiB, 8 * KiB}}},
		{"merge then overlap with the merged extent",
			[]Extent{{0, 0, 4 * KiB}, {4 * KiB, 4 * KiB, 4 * KiB}, {6 * KiB, 50 * KiB, 4 * KiB}},
			[]bool{false, false, true},
			[]Extent{{0, 0, 8 * KiB}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m ExtentMap
			for i, e := range tc.add {
				err := m.Add(e)
				if tc.errs[i] {
					assert.ErrorContains(t, err, "overlaps", "Add %d", i)
				} else {
					assert.NoError(t, err, "Add %d", i)
				}
			}
			assert.Equal(t, tc.want, m.Extents())
		})
	}
}

// piece is one Map callback.
type piece struct{ Logical, Physical, Length int64 }

func TestExtentMapMap(t *testing.T) {
	// [0,8k) -> 100k, [8k,16k) -> 200k, hole [16k,32k), [32k,40k) -> 300k.
	var m ExtentMap
	require.NoError(t, m.Add(Extent{0, 100 * KiB, 8 * KiB}))
	require.NoError(t, m.Add(Extent{8 * KiB, 200 * KiB, 8 * KiB}))
	require.NoError(t, m.Add(Extent{32 * KiB, 300 * KiB, 8 * KiB}))
	for _, tc := range []struct {
		name   string
		off, n int64
		ok     bool
		want   []piece
	}{
		{"inside one extent", 0, 4 * KiB, true, []piece{{0, 100 * KiB, 4 * KiB}}},
		{"offset into an extent", 2 * KiB, 2 * KiB, true, []piece{{2 * KiB, 102 * KiB, 2 * KiB}}},
		{"across two extents", 4 * KiB, 8 * KiB, true, []piece{{4 * KiB, 104 * KiB, 4 * KiB}, {8 * KiB, 200 * KiB, 4 * KiB}}},
		{"two whole extents", 0, 16 * KiB, true, []piece{{0, 100 * KiB, 8 * KiB}, {8 * KiB, 200 * KiB, 8 * KiB}}},
		{"into the hole", 12 * KiB, 8 * KiB, false, []piece{{12 * KiB, 204 * KiB, 4 * KiB}}},
		{"inside the hole", 16 * KiB, 4 * KiB, false, nil},
		{"across the hole", 12 * KiB, 24 * KiB, false, []piece{{12 * KiB, 204 * KiB, 4 * KiB}}},
		{"after the hole", 32 * KiB, 8 * KiB, true, []piece{{32 * KiB, 300 * KiB, 8 * KiB}}},
		{"past the last extent", 36 * KiB, 8 * KiB, false, []piece{{36 * KiB, 304 * KiB, 4 * KiB}}},
		{"beyond everything", 40 * KiB, 4 * KiB, false, nil},
		{"empty range", 4 * KiB, 0, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []piece
			ok := m.Map(tc.off, tc.n, func(l, p, n int64) { got = append(got, piece{l, p, n}) })
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got, "pieces up to the first hole are reported in order")
		})
	}
	var empty ExtentMap
	assert.False(t, empty.Map(0, 4*KiB, func(_, _, _ int64) { t.Fatal("no extent to map") }))
}

package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLatencyDistBuckets pins fio's io_u_mark_latency buckets at their
// edges: values are cut to whole units first (1999 ns is 1 us).
func TestLatencyDistBuckets(t *testing.T) {
	for _, tc := range []struct {
		ns    int64
		array string
		idx   int
	}{
		{-5, "n", 0}, {0, "n", 0}, {1, "n", 0}, {2, "n", 1}, {3, "n", 1}, {4, "n", 2},
		{9, "n", 2}, {10, "n", 3}, {49, "n", 4}, {50, "n", 5}, {249, "n", 6},
		{250, "n", 7}, {500, "n", 8}, {750, "n", 9}, {999, "n", 9},
		{1000, "u", 0}, {1999, "u", 0}, {2000, "u", 1}, {3999, "u", 1}, {4000, "u", 2},
		{99_999, "u", 5}, {100_000, "u", 6}, {999_999, "u", 9},
		{1_000_000, "m", 0}, {2_000_000, "m", 1}, {9_999_999, "m", 2}, {750_000_000, "m", 9},
		{999_999_999, "m", 9}, {1_000_000_000, "m", 10}, {1_999_999_999, "m", 10},
		{2_000_000_000, "m", 11}, {1 << 40, "m", 11},
	} {
		var d LatencyDist
		d.Record(tc.ns)
		var want LatencyDist
		switch tc.array {
		case "n":
			want.Nsec[tc.idx] = 1
		case "u":
			want.Usec[tc.idx] = 1
		default:
			want.Msec[tc.idx] = 1
		}
		assert.Equal(t, want, d, "%d ns", tc.ns)
	}
}

// TestLatencyDistMerge: merging adds bucket by bucket, and DirStats.Merge
// merges the distributions.
func TestLatencyDistMerge(t *testing.T) {
	var a, b DirStats
	for _, ns := range []int64{500, 1500, 2_500_000} {
		a.ClatDist.Record(ns)
		b.ClatDist.Record(ns)
	}
	b.ClatDist.Record(3_000_000_000)
	a.Merge(&b)
	assert.Equal(t, uint64(2), a.ClatDist.Nsec[8])
	assert.Equal(t, uint64(2), a.ClatDist.Usec[0])
	assert.Equal(t, uint64(2), a.ClatDist.Msec[1])
	assert.Equal(t, uint64(1), a.ClatDist.Msec[11])
}

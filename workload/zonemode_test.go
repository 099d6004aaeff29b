package workload

import (
	"time"

	"github.com/blksim/blksim/blockdev"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestZoneModeOptions checks zonemode and its zone options as fio 3.33
// takes them: strided needs a zonesize, zonesize needs strided (fio's
// default is none), zbd is the zoned-device mode blksim does not model,
// and zonerange and zoneskip alone change nothing.
func TestZoneModeOptions(t *testing.T) {
	tests := []struct {
		src  string
		kind error
		opt  string
		msg  string
	}{
		{"zonemode=strided", ErrBadValue, "zonemode", "--zonesize must be specified when using --zonemode=strided"},
		{"zonesize=64k", ErrBadValue, "zonesize", "--zonemode=none and --zonesize are not compatible"},
		{"zonemode=none\nzonesize=64k", ErrBadValue, "zonesize", "not compatible"},
		{"zonemode=zbd", ErrNotModelled, "zonemode", "zoned block devices are not modelled"},
		{"zonemode=bogus", ErrBadValue, "zonemode", "none, strided or zbd"},
		{"zonemode=strided\nzonesize=64k\nnrfiles=2", ErrNotModelled, "zonemode", "several files"},
		{"zonemode=strided\nzonesize=64k\nrw=randread\nrandom_distribution=zipf:1.2", ErrNotModelled, "zonemode", "random_distribution"},
		{"zonemode=strided\nzonesize=64k\nrw=randread\nrandom_generator=lfsr", ErrNotModelled, "zonemode", "lfsr"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			requireOptionError(t, tt.src, tt.kind, tt.opt, tt.msg)
		})
	}
	js := parseOne(t, "[j]\nzonemode=strided\nzonesize=64k\n")
	assert.True(t, js.Strided)
	assert.Equal(t, [3]int64{64 << 10, 64 << 10, 0}, [3]int64{js.ZoneSize, js.ZoneRange, js.ZoneSkip}, "zonerange defaults to zonesize")
	js = parseOne(t, "[j]\nzonemode=strided\nzonesize=64k\nzonerange=256k\nzoneskip=1m\n")
	assert.Equal(t, [3]int64{64 << 10, 256 << 10, 1 << 20}, [3]int64{js.ZoneSize, js.ZoneRange, js.ZoneSkip})

	// zonemode=none is fio's default; zonerange and zoneskip without
	// strided change nothing.
	def := parseOne(t, "[j]\n")
	for _, src := range []string{"zonemode=none", "zonerange=256k", "zoneskip=64k"} {
		js := parseOne(t, "[j]\n"+src+"\n")
		assert.False(t, js.Strided, src)
		js.where, js.Options, js.ZoneRange, js.ZoneSkip = nil, nil, 0, 0
		d := def
		d.where, d.Options = nil, nil
		assert.Equal(t, d, js, src)
	}
}

// TestStridedRegion checks that a zone must fit in the job's region, and
// the block size in a zone.
func TestStridedRegion(t *testing.T) {
	for _, tc := range []struct{ src, msg string }{
		{"[j]\nsize=1m\nzonemode=strided\nzonesize=64k\nzonerange=384k\ndirect=1\n", "the zone at 786432 (zonerange=393216, zoneskip=0) runs past the end"},
		{"[j]\nsize=1m\nzonemode=strided\nzonesize=64k\nzonerange=2k\ndirect=1\n", "zones of 2048 bytes are smaller than the block size 4096"},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			st := newStack(t, 1)
			_, err := Run(st.Engine, st.FS, parseString(t, tc.src), RunOptions{})
			require.ErrorIs(t, err, ErrJob)
			assert.ErrorContains(t, err, `option "zonerange"`)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

// stridedOffsets runs src (one psync job, direct, 4 KiB blocks) and
// returns the file offset of each of its IOs in KiB, in order.
func stridedOffsets(t *testing.T, src string) []int64 {
	t.Helper()
	var offs []int64
	rec := func(_ int, _ string, _ blockdev.Op, off, _ int64) { offs = append(offs, off/1024) }
	res, _ := runJobs(t, 1, "[j]\ndirect=1\nbs=4k\nzonemode=strided\n"+src, RunOptions{AppPerIO: time.Microsecond, onIO: rec})
	j := onlyJob(t, res)
	require.Zero(t, j.Error, j.ErrorMsg)
	return offs
}

// zonesKiB lays out fio's sequential strided pattern: n IOs of 4 KiB, per
// zone (every step KiB from 0, starting over at end) size KiB of IO over
// its first rng KiB.
func zonesKiB(n int, size, rng, step, end int64) []int64 {
	var out []int64
	start, done, pos := int64(0), int64(0), int64(0)
	for range n {
		if done >= size {
			done, pos = 0, 0
			if start += step; start >= end {
				start = 0
			}
		}
		if pos >= rng {
			pos = 0
		}
		out = append(out, start+pos)
		pos += 4
		done += 4
	}
	return out
}

// TestStridedSequential checks zonemode=strided's offsets against fio
// 3.33's (write_iolog of the same jobs on a 4 MiB file).
func TestStridedSequential(t *testing.T) {
	tests := []struct {
		name string
		src  string
		fio  []int64 // fio's first offsets, KiB
		want []int64
	}{
		{"zonesize<zonerange", "rw=write\nsize=4m\nzonesize=64k\nzonerange=256k\n",
			[]int64{0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 256, 260},
			zonesKiB(1024, 64, 256, 256, 4096)},
		{"zoneskip", "rw=write\nsize=4m\nzonesize=64k\nzonerange=256k\nzoneskip=64k\n",
			[]int64{0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 320, 324},
			zonesKiB(1024, 64, 256, 320, 4096)},
		{"zonesize>zonerange", "rw=write\nsize=4m\nzonesize=192k\nzonerange=128k\n",
			[]int64{0, 4, 8, 120, 124, 0, 4, 56, 60, 128, 132},
			zonesKiB(1024, 192, 128, 128, 4096)},
		{"zonerange defaults to zonesize", "rw=read\nsize=1m\nzonesize=64k\n",
			[]int64{0, 4, 8, 12, 16, 60, 64, 68},
			zonesKiB(256, 64, 64, 64, 1024)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stridedOffsets(t, tt.src)
			require.Equal(t, tt.want, got)
			// fio's own first offsets (some picked out in the
			// zonesize>zonerange case) agree with the layout.
			if tt.name == "zonesize>zonerange" {
				assert.Equal(t, tt.fio, []int64{got[0], got[1], got[2], got[30], got[31], got[32], got[33], got[46], got[47], got[48], got[49]})
			} else if tt.name == "zonerange defaults to zonesize" {
				assert.Equal(t, tt.fio, []int64{got[0], got[1], got[2], got[3], got[4], got[15], got[16], got[17]})
			} else {
				assert.Equal(t, tt.fio, got[:len(tt.fio)])
			}
		})
	}
}

// TestStridedRandom checks that a random strided job stays in each zone
// for zonesize bytes, visiting no block twice there (fio's random map
// over one zone, reset per zone), and stops after io_size bytes as fio
// 3.33 does (128 IOs).
func TestStridedRandom(t *testing.T) {
	got := stridedOffsets(t, "rw=randwrite\nsize=4m\nio_size=512k\nzonesize=64k\nzonerange=256k\nzoneskip=64k\n")
	require.Len(t, got, 128)
	for z := range 8 {
		start := int64(z) * 320
		seen := map[int64]bool{}
		for _, off := range got[z*16 : z*16+16] {
			assert.GreaterOrEqual(t, off, start)
			assert.Less(t, off, start+256)
			assert.Zero(t, off%4)
			assert.False(t, seen[off], "block %d twice in zone %d", off, z)
			seen[off] = true
		}
	}
}

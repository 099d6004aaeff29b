package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/fsmodel"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/stack"
	"github.com/blksim/blksim/writeback"
)

// newStack builds the default stack (ext4 on the P3600 model) seeded with
// seed, and closes its engine when the test ends.
func newStack(t *testing.T, seed uint64) *stack.Stack {
	t.Helper()
	st, err := stack.Build(stack.Default(), seed)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Engine.Close() })
	return st
}

// runJobs parses src as the job file "test.fio" and runs it on a fresh
// default stack seeded with seed.
func runJobs(t *testing.T, seed uint64, src string, opt RunOptions) (*Result, *stack.Stack) {
	t.Helper()
	st := newStack(t, seed)
	res, err := Run(st.Engine, st.FS, parseString(t, src), opt)
	require.NoError(t, err)
	require.NotNil(t, res)
	return res, st
}

// onlyJob returns the single JobResult of res.
func onlyJob(t *testing.T, res *Result) JobResult {
	t.Helper()
	require.Len(t, res.Groups, 1)
	require.Len(t, res.Groups[0].Jobs, 1)
	return res.Groups[0].Jobs[0]
}

// allJobs returns every JobResult of res in order.
func allJobs(res *Result) []JobResult {
	var out []JobResult
	for _, g := range res.Groups {
		out = append(out, g.Jobs...)
	}
	return out
}

// fileExists reports whether fsys holds a file called name, without
// creating one: opening an existing file with a larger size fails with
// ErrExists, and a missing one cannot be created that large.
func fileExists(t *testing.T, fsys *fsmodel.FS, name string) bool {
	t.Helper()
	_, err := fsys.Open(name, 1<<50)
	if errors.Is(err, fsmodel.ErrExists) {
		return true
	}
	require.ErrorIs(t, err, fsmodel.ErrNoSpace, "opening %q", name)
	return false
}

// openExisting returns the file called name, which must exist.
func openExisting(t *testing.T, fsys *fsmodel.FS, name string) *fsmodel.File {
	t.Helper()
	require.True(t, fileExists(t, fsys, name), "file %q", name)
	f, err := fsys.Open(name, 1)
	require.NoError(t, err)
	return f
}

// blockStamps reads the file called name back after a run and returns the
// stamp of each of its 4 KiB blocks (the zero stamp if never written). It
// fails the test if a block holds more than one stamp, that is if a write
// was not aligned to 4 KiB.
func blockStamps(t *testing.T, st *stack.Stack, name string) []blockdev.Stamp {
	t.Helper()
	const blk = 4096
	f := openExisting(t, st.FS, name)
	exts := f.Extents().Extents()
	require.Len(t, exts, 1)
	phys := exts[0].Physical
	var data []blockdev.StampRun
	var rerr error
	st.Engine.Go("readback", func(tk *sim.Task) {
		rerr = f.DirectRead(tk, 0, f.Size()/blk*blk, &data)
	})
	require.NoError(t, st.Engine.Run(-1))
	require.NoError(t, rerr)
	out := make([]blockdev.Stamp, f.Size()/blk)
	var covered int64
	for _, r := range data {
		start := r.Sector*blockdev.SectorSize - phys
		length := r.Sectors * blockdev.SectorSize
		require.Zero(t, start%blk, "run %+v starts inside a block", r)
		require.Zero(t, length%blk, "run %+v ends inside a block", r)
		for off := start; off < start+length; off += blk {
			out[off/blk] = r.Stamp
		}
		covered += length
	}
	require.Equal(t, int64(len(out))*blk, covered)
	return out
}

// writeOrder turns the stamps of a file written by one writer, each block
// exactly once, into the blocks in the order they were written.
func writeOrder(t *testing.T, stamps []blockdev.Stamp, writer uint32) []int64 {
	t.Helper()
	order := make([]int64, len(stamps))
	seen := make([]bool, len(stamps))
	for b, s := range stamps {
		require.Equal(t, writer, s.Writer, "block %d", b)
		require.True(t, s.Seq >= 1 && s.Seq <= uint64(len(stamps)), "block %d has seq %d", b, s.Seq)
		require.False(t, seen[s.Seq-1], "seq %d written twice", s.Seq)
		seen[s.Seq-1] = true
		order[s.Seq-1] = int64(b)
	}
	return order
}

// maxLat returns the job's largest latency in either direction.
func maxLat(j JobResult) int64 { return max(j.Read.Lat.Max(), j.Write.Lat.Max()) }

func iota64(n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// nextBlock draws a block as a one-block IO does: the map's pick, a new
// pass when it is full, and the block marked.
func nextBlock(m *randomMap, rng *rand.Rand, limit int64) int64 {
	b, ok := m.pick(rng, limit)
	if !ok {
		m.clear()
		b, _ = m.pick(rng, limit)
	}
	m.mark(b, 1)
	return b
}

func TestRandomMapVisitsEveryBlockOncePerPass(t *testing.T) {
	tests := []struct {
		name     string
		n, limit int64
		want     int64 // blocks per pass
	}{
		{"one block", 1, 1, 1},
		{"one word", 64, 64, 64},
		{"partial word", 100, 100, 100},
		{"many words", 1000, 1000, 1000},
		{"limit above n", 10, 50, 10},
		{"zero n is one block", 0, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m randomMap
			m.init(tt.n)
			rng := rand.New(rand.NewPCG(1, 2))
			for pass := range 3 {
				got := make([]int64, 0, tt.want)
				for range tt.want {
					got = append(got, nextBlock(&m, rng, tt.limit))
				}
				if tt.want >= 100 {
					assert.NotEqual(t, iota64(tt.want), got, "pass %d is not random", pass)
				}
				slices.Sort(got)
				require.Equal(t, iota64(tt.want), got, "pass %d", pass)
			}
		})
	}
}

func TestRandomMapDeterministic(t *testing.T) {
	draw := func(seed uint64) []int64 {
		var m randomMap
		m.init(300)
		rng := rand.New(rand.NewPCG(seed, 7))
		out := make([]int64, 900)
		for i := range out {
			out[i] = nextBlock(&m, rng, 300)
		}
		return out
	}
	assert.Equal(t, draw(1), draw(1))
	assert.NotEqual(t, draw(1), draw(2))
}

// A draw that lands on a visited block takes the next free block after it
// in the whole map, wrapping to the first free one, as fio 3.33's
// axmap_next_free does; with a limit below the map's size (the larger
// block size of a randrw job) the block found can be at or past the limit.
func TestRandomMapPick(t *testing.T) {
	tests := []struct {
		name   string
		n      int64
		free   []int64 // the map's free blocks; every other one is visited
		limit  int64
		want   []int64 // the blocks a draw can give
		wantOK bool
	}{
		{"the only free block", 10, []int64{4}, 10, []int64{4}, true},
		{"the only free block, below the limit", 10, []int64{4}, 9, []int64{4}, true},
		{"the only free block at the limit", 10, []int64{9}, 9, []int64{9}, true},
		{"past the limit before wrapping", 200, []int64{0, 150}, 64, []int64{0, 150}, true},
		{"across words", 300, []int64{299}, 300, []int64{299}, true},
		{"wraps to the first free block", 300, []int64{3, 70}, 300, []int64{3, 70}, true},
		{"full", 100, nil, 100, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(64) {
				var m randomMap
				m.init(tt.n)
				m.mark(0, tt.n)
				for _, b := range tt.free {
					m.bits[b/64] &^= 1 << (b % 64)
					m.used--
				}
				b, ok := m.pick(rand.New(rand.NewPCG(seed, 1)), tt.limit)
				require.Equal(t, tt.wantOK, ok, "seed %d", seed)
				if ok {
					require.Contains(t, tt.want, b, "seed %d", seed)
				}
			}
		})
	}
	t.Run("next free after the drawn block", func(t *testing.T) {
		var m randomMap
		m.init(256)
		m.mark(10, 20) // 10..29 visited
		for seed := range uint64(200) {
			rng := rand.New(rand.NewPCG(seed, 1))
			d := rand.New(rand.NewPCG(seed, 1)).Int64N(256) // the same draw
			b, ok := m.pick(rng, 256)
			require.True(t, ok)
			if d >= 10 && d < 30 {
				require.Equal(t, int64(30), b, "draw %d", d)
			} else {
				require.Equal(t, d, b)
			}
		}
	})
}

// mark marks a run of blocks up to the first visited one or the map's end
// and counts what it marked: the blocks an IO really covers.
func TestRandomMapMark(t *testing.T) {
	tests := []struct {
		name    string
		n       int64
		visited []int64
		b, nr   int64
		want    int64
	}{
		{"one block", 100, nil, 5, 1, 1},
		{"a free run", 100, nil, 5, 9, 9},
		{"stops at a visited block", 100, []int64{8}, 5, 9, 3},
		{"across a word", 200, nil, 60, 9, 9},
		{"stops past a word", 200, []int64{66}, 60, 9, 6},
		{"stops at the map's end", 100, nil, 97, 9, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m randomMap
			m.init(tt.n)
			for _, b := range tt.visited {
				m.mark(b, 1)
			}
			used := m.used
			require.Equal(t, tt.want, m.mark(tt.b, tt.nr))
			assert.Equal(t, used+tt.want, m.used)
			for k := range tt.want {
				assert.True(t, m.isSet(tt.b+k), "block %d", tt.b+k)
			}
			if end := tt.b + tt.want; end < tt.n && !slices.Contains(tt.visited, end) {
				assert.False(t, m.isSet(end), "block %d after the run", end)
			}
		})
	}
}

// newTestJob returns a job for spec as Run sets it up, without a file.
// nextOffsetWrap is the offset generator of a one-file job without an end:
// a used-up region starts over (offsetIn with finite false), so the tests
// can draw offsets over several passes.
func (j *job) nextOffsetWrap(dir blockdev.Op) int64 {
	j.ensureLayout()
	off, _, _ := j.offsetIn(j.cur, dir, false)
	return off
}

func newTestJob(spec JobSpec, seed uint64) *job {
	j := &job{spec: &spec, rng: rand.New(rand.NewPCG(seed, 3))}
	j.ensureFiles()
	j.cur.rmap.init(spec.Size / minBS(&spec))
	return j
}

func TestNextOffsetRandom(t *testing.T) {
	tests := []struct {
		name string
		rw   RWMode
		bs   [2]int64
		size int64
	}{
		{"randread 4k", RWRandRead, [2]int64{4096, 4096}, 256 << 10},
		{"randwrite 16k", RWRandWrite, [2]int64{4096, 16384}, 1 << 20},
		{"randread 8k size not a multiple", RWRandRead, [2]int64{8192, 4096}, 250 << 10},
		{"randread bs is size", RWRandRead, [2]int64{65536, 4096}, 65536},
		{"randread 512", RWRandRead, [2]int64{512, 512}, 32 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := defaultJobSpec()
			spec.RW, spec.BS, spec.Size = tt.rw, tt.bs, tt.size
			dir := blockdev.OpRead
			if !tt.rw.HasRead() {
				dir = blockdev.OpWrite
			}
			bs := tt.bs[dir]
			blocks := tt.size / bs
			j := newTestJob(spec, 1)
			for pass := range 3 {
				seen := map[int64]bool{}
				for range blocks {
					off := j.nextOffsetWrap(dir)
					require.Zero(t, off%bs, "offset %d not aligned to %d", off, bs)
					require.GreaterOrEqual(t, off, int64(0))
					require.LessOrEqual(t, off+bs, tt.size, "offset %d", off)
					require.False(t, seen[off], "pass %d: offset %d twice", pass, off)
					seen[off] = true
				}
				require.Len(t, seen, int(blocks), "pass %d", pass)
			}
		})
	}
}

func TestNextOffsetRandomMixedBS(t *testing.T) {
	// Offsets are aligned to the smaller block size, and the larger
	// blocks still end within size.
	spec := defaultJobSpec()
	spec.RW, spec.BS, spec.Size = RWRandRW, [2]int64{4096, 16384}, 128<<10
	j := newTestJob(spec, 5)
	for i := range 2000 {
		dir := blockdev.Op(i % 2)
		off := j.nextOffsetWrap(dir)
		require.Zero(t, off%4096, "offset %d", off)
		require.GreaterOrEqual(t, off, int64(0))
		require.LessOrEqual(t, off+spec.BS[dir], spec.Size, "dir %v offset %d", dir, off)
	}
}

func TestNextOffsetSequential(t *testing.T) {
	type draw struct {
		dir  blockdev.Op
		want int64
	}
	r, w := blockdev.OpRead, blockdev.OpWrite
	tests := []struct {
		name  string
		rw    RWMode
		bs    [2]int64
		size  int64
		draws []draw
	}{
		{"read wraps at size", RWRead, [2]int64{4096, 4096}, 12 << 10,
			[]draw{{r, 0}, {r, 4096}, {r, 8192}, {r, 0}, {r, 4096}}},
		{"write wraps before a partial block", RWWrite, [2]int64{4096, 16384}, 40 << 10,
			[]draw{{w, 0}, {w, 16384}, {w, 0}, {w, 16384}, {w, 0}}},
		{"rw walks each direction on its own", RWReadWrite, [2]int64{4096, 8192}, 16 << 10,
			[]draw{{r, 0}, {w, 0}, {r, 4096}, {r, 8192}, {w, 8192}, {r, 12288}, {w, 0}, {r, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := defaultJobSpec()
			spec.RW, spec.BS, spec.Size = tt.rw, tt.bs, tt.size
			j := newTestJob(spec, 1)
			for i, d := range tt.draws {
				assert.Equal(t, d.want, j.nextOffsetWrap(d.dir), "draw %d", i)
			}
		})
	}
}

// The offsets a run really uses, read back from the device: each write
// stamps its blocks with the job's sequence number.
func TestRunOffsetsOnDevice(t *testing.T) {
	t.Run("write walks the file in order", func(t *testing.T) {
		res, st := runJobs(t, 1, "[j]\nrw=write\nbs=4k\nsize=64k\ndirect=1\n", RunOptions{})
		assert.Equal(t, uint64(16), onlyJob(t, res).Write.IOs)
		order := writeOrder(t, blockStamps(t, st, "j.0.0"), 1)
		assert.Equal(t, iota64(16), order)
	})
	t.Run("write wraps at size", func(t *testing.T) {
		res, st := runJobs(t, 1, "[j]\nrw=write\nbs=4k\nsize=64k\nruntime=100ms\ntime_based\ndirect=1\n", RunOptions{})
		ios := onlyJob(t, res).Write.IOs
		require.Greater(t, ios, uint64(32))
		stamps := blockStamps(t, st, "j.0.0")
		// The last write (seq ios) went to block (ios-1)%16, and every
		// block holds the last of the writes that walked over it.
		for b, s := range stamps {
			last := (ios - 1) / 16 * 16
			if uint64(b) > (ios-1)%16 {
				last -= 16
			}
			assert.Equal(t, last+uint64(b)+1, s.Seq, "block %d", b)
		}
	})
	t.Run("randwrite visits every block once", func(t *testing.T) {
		res, st := runJobs(t, 1, "[j]\nrw=randwrite\nbs=4k\nsize=256k\ndirect=1\n", RunOptions{})
		assert.Equal(t, uint64(64), onlyJob(t, res).Write.IOs)
		order := writeOrder(t, blockStamps(t, st, "j.0.0"), 1)
		assert.NotEqual(t, iota64(64), order, "random writes went in order")
	})
	t.Run("randwrite 16k blocks are aligned", func(t *testing.T) {
		res, st := runJobs(t, 1, "[j]\nrw=randwrite\nbs=16k\nsize=256k\ndirect=1\n", RunOptions{})
		assert.Equal(t, uint64(16), onlyJob(t, res).Write.IOs)
		stamps := blockStamps(t, st, "j.0.0")
		for b := 0; b < len(stamps); b += 4 {
			for k := 1; k < 4; k++ {
				assert.Equal(t, stamps[b], stamps[b+k], "16k block at %d split", b)
			}
			assert.NotZero(t, stamps[b].Seq, "16k block at %d not written", b)
		}
	})
}

func TestRunDirections(t *testing.T) {
	tests := []struct {
		name     string
		opts     string
		readFrac float64
	}{
		{"read", "rw=read", 1},
		{"randread", "rw=randread", 1},
		{"write", "rw=write", 0},
		{"randwrite", "rw=randwrite", 0},
		{"randrw rwmixread=70", "rw=randrw\nrwmixread=70", 0.7},
		{"rw rwmixwrite=80", "rw=rw\nrwmixwrite=80", 0.2},
		{"randrw default mix", "rw=randrw", 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := fmt.Sprintf("[j]\n%s\nbs=4k\nsize=1m\nruntime=100ms\ntime_based\ndirect=1\n", tt.opts)
			res, _ := runJobs(t, 3, src, RunOptions{})
			j := onlyJob(t, res)
			reads, writes := j.Read.IOs, j.Write.IOs
			n := float64(reads + writes)
			require.Greater(t, n, 500.0)
			assert.Equal(t, reads*4096, j.Read.Bytes)
			assert.Equal(t, writes*4096, j.Write.Bytes)
			switch tt.readFrac {
			case 1:
				assert.Zero(t, writes)
			case 0:
				assert.Zero(t, reads)
			default:
				p := tt.readFrac
				sd := math.Sqrt(n * p * (1 - p))
				assert.InDelta(t, p*n, float64(reads), 4*sd, "reads %d of %.0f", reads, n)
			}
		})
	}
}

func TestRunStopConditions(t *testing.T) {
	const app = 500 * time.Nanosecond
	t.Run("size without runtime", func(t *testing.T) {
		res, _ := runJobs(t, 1, "[j]\nrw=randread\nbs=4k\nsize=512k\ndirect=1\n", RunOptions{AppPerIO: app})
		j := onlyJob(t, res)
		assert.Equal(t, uint64(128), j.Read.IOs)
		assert.Equal(t, uint64(512<<10), j.Read.Bytes)
		assert.Zero(t, j.Write.IOs)
		assert.Positive(t, j.Runtime)
		assert.InDelta(t, float64(j.Runtime), res.Engine.SimulatedSeconds*1e9, 1)
		assert.Equal(t, uint64(128), res.Engine.SimulatedIOs)
	})
	t.Run("size with mixed bs", func(t *testing.T) {
		// size counts bytes of both directions. norandommap: with the
		// random map, fio ends a randrw job whose directions have
		// different block sizes early (randomMapOffset).
		res, _ := runJobs(t, 1, "[j]\nrw=randrw\nbs=4k,8k\nnorandommap\nsize=512k\ndirect=1\n", RunOptions{AppPerIO: app})
		j := onlyJob(t, res)
		total := j.Read.Bytes + j.Write.Bytes
		assert.GreaterOrEqual(t, total, uint64(512<<10))
		assert.Less(t, total, uint64(512<<10)+8192)
	})
	t.Run("runtime before size", func(t *testing.T) {
		const runtime = 50 * time.Millisecond
		res, _ := runJobs(t, 1, "[j]\nrw=randread\nbs=4k\nsize=64m\nruntime=50ms\ndirect=1\n", RunOptions{AppPerIO: app})
		j := onlyJob(t, res)
		assert.Less(t, j.Read.Bytes, uint64(64<<20))
		assert.GreaterOrEqual(t, j.Runtime, int64(runtime))
		assert.LessOrEqual(t, j.Runtime, int64(runtime)+maxLat(j)+int64(app))
	})
	t.Run("time_based runs past size", func(t *testing.T) {
		const runtime = 100 * time.Millisecond
		res, _ := runJobs(t, 1, "[j]\nrw=randread\nbs=4k\nsize=64k\nruntime=100ms\ntime_based\ndirect=1\n", RunOptions{AppPerIO: app})
		j := onlyJob(t, res)
		assert.Greater(t, j.Read.IOs, uint64(10*16))
		assert.GreaterOrEqual(t, j.Runtime, int64(runtime))
		assert.LessOrEqual(t, j.Runtime, int64(runtime)+maxLat(j)+int64(app))
	})
	t.Run("ramp_time is not measured", func(t *testing.T) {
		const runtime, ramp = 100 * time.Millisecond, 50 * time.Millisecond
		res, st := runJobs(t, 1, "[j]\nrw=randwrite\nbs=4k\nsize=256k\nruntime=100ms\nramp_time=50ms\ntime_based\ndirect=1\n", RunOptions{AppPerIO: app})
		j := onlyJob(t, res)
		assert.GreaterOrEqual(t, j.Runtime, int64(runtime))
		assert.LessOrEqual(t, j.Runtime, int64(runtime)+j.Write.Lat.Max()+int64(app))
		// The engine runs on until the device is idle.
		assert.GreaterOrEqual(t, res.Engine.SimulatedSeconds*1e9, float64(ramp)+float64(j.Runtime))
		assert.InDelta(t, (ramp + runtime).Seconds(), res.Engine.SimulatedSeconds, 0.01)
		// Every write stamps its sequence number; the newest stamp on
		// the file is the number of writes issued, ramp included.
		var issued uint64
		for _, s := range blockStamps(t, st, "j.0.0") {
			issued = max(issued, s.Seq)
		}
		measured := j.Write.IOs
		require.Greater(t, issued, measured)
		assert.InEpsilon(t, float64(runtime)/float64(ramp+runtime), float64(measured)/float64(issued), 0.03)
		assert.Equal(t, measured, j.Write.Lat.Count())
		assert.Equal(t, measured, res.Engine.SimulatedIOs)
	})
}

// TestRunEndsInsideRamp checks a job that reaches its size before its
// ramp_time is over: fio 3.33 stops it at its size and reports its IOs,
// bytes, queue depths and run time counted from its start, with no
// latency or rate samples (psync read, size=1m, ramp_time=1: 256 IOs of
// 1 MiB in 21 msec; with fsync=4: issued rwts total=0,64,0,15 and IO
// depths 1=123.4%).
func TestRunEndsInsideRamp(t *testing.T) {
	for _, tc := range []struct {
		name, src            string
		reads, writes, syncs uint64
	}{
		{"psync read", "rw=read\nsize=1m\ndirect=1\n", 256, 0, 0},
		{"psync randread without the random map", "rw=randread\nnorandommap\nsize=1m\ndirect=1\n", 256, 0, 0},
		{"libaio randwrite", "ioengine=libaio\niodepth=4\nrw=randwrite\nsize=1m\ndirect=1\n", 0, 256, 0},
		{"buffered writes with fsync=4", "rw=write\nsize=256k\nfsync=4\n", 0, 64, 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := runJobs(t, 1, "[j]\nbs=4k\nramp_time=1s\n"+tc.src, RunOptions{})
			j := onlyJob(t, res)
			assert.Positive(t, j.Runtime)
			assert.Less(t, j.Runtime, int64(500*time.Millisecond), "the job stops at its size, inside the ramp")
			for _, d := range []struct {
				stats *DirStats
				ios   uint64
			}{{&j.Read, tc.reads}, {&j.Write, tc.writes}} {
				assert.Equal(t, d.ios, d.stats.IOs)
				assert.Equal(t, d.ios, d.stats.Issued)
				assert.Equal(t, 4096*d.ios, d.stats.Bytes)
				assert.Zero(t, d.stats.Clat.Count()+d.stats.Lat.Count()+d.stats.Slat.Count(), "no latency samples")
				assert.Zero(t, d.stats.BW.N+d.stats.IOPS.N, "no rate samples")
			}
			assert.Equal(t, j.Runtime, j.Read.Runtime+j.Write.Runtime)
			assert.Equal(t, tc.syncs, j.Sync.IssuedFsync)
			assert.Equal(t, tc.syncs, j.Sync.IOs)
			assert.Zero(t, j.Sync.Lat.Count())
			var level uint64
			for _, n := range j.Depths.Level {
				level += n
			}
			assert.Equal(t, tc.reads+tc.writes+tc.syncs, level, "every IO counts in the depths")
		})
	}
}

func TestRunNumJobsPrivateFiles(t *testing.T) {
	res, st := runJobs(t, 1, "[j]\nrw=randwrite\nbs=4k\nsize=64k\nnumjobs=3\ndirect=1\n", RunOptions{})
	jobs := allJobs(res)
	require.Len(t, jobs, 3)
	var physical []int64
	for c, jr := range jobs {
		assert.Equal(t, "j", jr.Name)
		assert.Equal(t, c, jr.JobID)
		assert.Equal(t, 1, jr.Jobs)
		assert.Equal(t, uint64(16), jr.Write.IOs, "clone %d", c)
		name := fmt.Sprintf("j.%d.0", c)
		f := openExisting(t, st.FS, name)
		assert.Equal(t, int64(64<<10), f.Size())
		physical = append(physical, f.Extents().Extents()[0].Physical)
		// Only this clone wrote its file, each block once.
		writeOrder(t, blockStamps(t, st, name), uint32(c+1))
	}
	slices.Sort(physical)
	assert.Len(t, slices.Compact(physical), 3, "clones share device space")
	assert.False(t, fileExists(t, st.FS, "j.3.0"))
	assert.False(t, fileExists(t, st.FS, "j"))
}

func TestRunNamedFileShared(t *testing.T) {
	// The two clones of a write 64 KiB of the shared file; b reads all of
	// it, so the file must be sized to b's 128 KiB.
	const a = "[a]\nrw=randwrite\nbs=4k\nsize=64k\nfilename=shared\nnumjobs=2\ndirect=1\n"
	const b = "[b]\nrw=randread\nbs=4k\nsize=128k\nfilename=shared\ndirect=1\n"
	for _, tt := range []struct {
		name    string
		src     string
		writers []uint32 // stamps of a's clones (job id + 1)
	}{
		{"smaller first", a + b, []uint32{1, 2}},
		{"larger first", b + a, []uint32{2, 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, st := runJobs(t, 1, tt.src, RunOptions{})
			jobs := allJobs(res)
			require.Len(t, jobs, 3)
			for id, jr := range jobs {
				assert.Equal(t, id, jr.JobID)
				assert.Zero(t, jr.Error, jr.ErrorMsg)
				if jr.Name == "a" {
					assert.Equal(t, uint64(16), jr.Write.IOs, "job %d", id)
				} else {
					assert.Equal(t, uint64(32), jr.Read.IOs, "job %d", id)
				}
			}
			f := openExisting(t, st.FS, "shared")
			assert.Equal(t, int64(128<<10), f.Size())
			for _, name := range []string{"a.0.0", "a.1.0", "b.0.0"} {
				assert.False(t, fileExists(t, st.FS, name), name)
			}
			for blk, s := range blockStamps(t, st, "shared") {
				if blk >= 16 {
					assert.Zero(t, s, "block %d beyond a's size was written", blk)
					continue
				}
				// Which clone wrote a block last is up to the lock.
				require.Contains(t, tt.writers, s.Writer, "block %d", blk)
			}
		})
	}
}

// optionLine returns the 1-based line of src on which key was last set
// (a line "key=..." or a bare "key"), or 1, the section header of a
// one-job file, if none: where an error about the option points.
func optionLine(src, key string) int {
	line := 1
	for i, l := range strings.Split(src, "\n") {
		k, _, _ := strings.Cut(strings.TrimSpace(l), "=")
		if strings.TrimSpace(k) == key {
			line = i + 1
		}
	}
	return line
}

// An error about a job names the line where the option is set, in the
// job's section or in [global], or the section header for an option the
// job does not set.
func TestRunJobErrors(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		line   int
		option string
	}{
		{"missing size", "[j]\nrw=read\ndirect=1\n", 1, "size"},
		{"fsync=N with libaio", "[j]\nsize=64k\nioengine=libaio\nfsync=1\n", 4, "fsync"},
		{"fsync=N with io_uring", "[j]\nsize=64k\ndirect=0\nioengine=io_uring\nfsync=2\n", 5, "fsync"},
		{"several files", "[j]\nsize=64k\ndirect=1\nfilename=a:b\n", 4, "filename"},
		{"time_based without runtime", "[j]\nsize=64k\ndirect=1\ntime_based\n", 4, "time_based"},
		{"size below bs", "[j]\nsize=2k\nbs=4k\ndirect=1\n", 2, "size"},
		{"size below the write bs", "[j]\nrw=randrw\nsize=16k\nbs=4k,64k\ndirect=1\n", 3, "size"},
		{"size below the write bs sequential", "[j]\nrw=rw\nsize=16k\nbs=4k,64k\ndirect=1\n", 3, "size"},
		{"bs not sector aligned", "[j]\nsize=64k\nbs=1000\ndirect=1\n", 3, "bs"},
		{"write bs not sector aligned", "[j]\nrw=randrw\nsize=64k\nbs=4k,1000\ndirect=1\n", 4, "bs"},
		{"second job", "[ok]\nsize=64k\ndirect=1\n\n# the next one is bad\n[bad]\nsize=64k\nioengine=libaio\nfsync=4\n", 9, "fsync"},
		{"global options", "[global]\ndirect=1\nrw=randread\n[j]\nsize=1k\n", 5, "size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStack(t, 1)
			res, err := Run(st.Engine, st.FS, parseString(t, tt.src), RunOptions{})
			require.Error(t, err)
			assert.Nil(t, res)
			assert.ErrorIs(t, err, ErrJob)
			assert.Contains(t, err.Error(), fmt.Sprintf("test.fio:%d: option %q", tt.line, tt.option))
			assert.Zero(t, st.Engine.Now(), "a job ran")
			assert.Zero(t, st.Engine.Events(), "a job ran")
		})
	}
}

func TestRunAcceptsUnusedDirection(t *testing.T) {
	// The block size of a direction the job does not use is not checked,
	// and need not fit in size.
	tests := []struct {
		name   string
		src    string
		reads  uint64
		writes uint64
	}{
		{"misaligned write bs", "[j]\nrw=randread\nsize=64k\nbs=4k,1000\ndirect=1\n", 16, 0},
		{"misaligned read bs", "[j]\nrw=write\nsize=64k\nbs=1000,4k\ndirect=1\n", 0, 16},
		{"write bs above size", "[j]\nrw=randread\nsize=16k\nbs=4k,64k\ndirect=1\n", 4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := runJobs(t, 1, tt.src, RunOptions{})
			j := onlyJob(t, res)
			assert.Zero(t, j.Error, j.ErrorMsg)
			assert.Equal(t, tt.reads, j.Read.IOs)
			assert.Equal(t, tt.writes, j.Write.IOs)
		})
	}
}

func TestRunNoJobs(t *testing.T) {
	st := newStack(t, 1)
	for _, specs := range [][]JobSpec{nil, {}} {
		res, err := Run(st.Engine, st.FS, specs, RunOptions{})
		assert.ErrorIs(t, err, ErrJob)
		assert.Nil(t, res)
	}
}

func TestRunGroupReporting(t *testing.T) {
	const src = "[g]\nrw=randrw\nbs=4k\nsize=128k\nnumjobs=3\ndirect=1\n"
	sep, _ := runJobs(t, 9, src, RunOptions{})
	grp, _ := runJobs(t, 9, src+"group_reporting\n", RunOptions{})

	require.Len(t, sep.Groups, 1)
	assert.False(t, sep.Groups[0].GroupReporting)
	clones := sep.Groups[0].Jobs
	require.Len(t, clones, 3)
	var want JobResult
	for c, jr := range clones {
		assert.Equal(t, 1, jr.Jobs)
		assert.Equal(t, c, jr.JobID)
		assert.Equal(t, uint64(32), jr.Read.IOs+jr.Write.IOs, "clone %d", c)
		want.Read.Merge(&jr.Read)
		want.Write.Merge(&jr.Write)
		want.Runtime = max(want.Runtime, jr.Runtime)
	}

	require.Len(t, grp.Groups, 1)
	assert.True(t, grp.Groups[0].GroupReporting)
	got := onlyJob(t, grp)
	assert.Equal(t, "g", got.Name)
	assert.Equal(t, 0, got.JobID)
	assert.Equal(t, 3, got.Jobs)
	assert.Equal(t, "randrw", got.RW)
	assert.Equal(t, uint64(96), got.Read.IOs+got.Write.IOs)
	assert.Equal(t, want.Read.IOs, got.Read.IOs)
	assert.Equal(t, want.Write.IOs, got.Write.IOs)
	assert.Equal(t, want.Read.Bytes, got.Read.Bytes)
	assert.Equal(t, want.Write.Bytes, got.Write.Bytes)
	assert.Equal(t, want.Read.Lat.Sum(), got.Read.Lat.Sum())
	assert.Equal(t, want.Write.Lat.Max(), got.Write.Lat.Max())
	assert.Equal(t, want.Runtime, got.Runtime)
	// group_reporting changes the report, not the simulation.
	assert.Equal(t, sep.Engine, grp.Engine)
}

// A sync job is a closed loop with one IO in flight: with no application
// time between IOs, the latencies tile the runtime (Little's law with
// N = 1: IOs × mean latency = runtime).
func TestRunLittlesLaw(t *testing.T) {
	tests := []struct {
		name string
		src  string
		app  time.Duration
	}{
		{"randread", "[j]\nrw=randread\nbs=4k\nsize=1m\nruntime=100ms\ntime_based\ndirect=1\n", 0},
		{"randrw 4 jobs", "[j]\nrw=randrw\nbs=4k,16k\nsize=1m\nruntime=100ms\ntime_based\nnumjobs=4\ndirect=1\n", 0},
		{"shared file 8 jobs", "[j]\nrw=randrw\nrwmixread=30\nbs=4k\nsize=1m\nfilename=f\nruntime=100ms\ntime_based\nnumjobs=8\ndirect=1\n", 0},
		{"size bound", "[j]\nrw=write\nbs=64k\nsize=4m\nnumjobs=2\ndirect=1\n", 0},
		{"with app time", "[j]\nrw=randrw\nbs=4k\nsize=1m\nruntime=100ms\ntime_based\nnumjobs=2\ndirect=1\n", 20 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := runJobs(t, 4, tt.src, RunOptions{AppPerIO: tt.app})
			for _, j := range allJobs(res) {
				ios := j.Read.IOs + j.Write.IOs
				require.Positive(t, ios)
				busy := j.Read.Lat.Sum() + j.Write.Lat.Sum() + float64(ios)*float64(tt.app)
				assert.InEpsilon(t, float64(j.Runtime), busy, 0.02, "job %d: %d IOs", j.JobID, ios)
			}
		})
	}
}

func TestRunDeterministic(t *testing.T) {
	const src = "[j]\nrw=randrw\nbs=4k\nsize=256k\nnumjobs=2\nruntime=100ms\ntime_based\ndirect=1\n" +
		"[w]\nrw=randwrite\nbs=4k\nsize=256k\ndirect=1\n"
	run := func(seed uint64, src string) (*Result, []blockdev.Stamp) {
		res, st := runJobs(t, seed, src, RunOptions{AppPerIO: time.Microsecond})
		return res, blockStamps(t, st, "w.0.0")
	}
	res1, stamps1 := run(1, src)
	res2, stamps2 := run(1, src)
	assert.Equal(t, res1, res2)
	assert.Equal(t, stamps1, stamps2)

	// Another engine seed, or another randseed, picks other offsets.
	res3, stamps3 := run(2, src)
	assert.NotEqual(t, writeOrder(t, stamps1, 3), writeOrder(t, stamps3, 3))
	assert.NotEqual(t, res1.Groups, res3.Groups)

	_, stamps4 := run(1, strings.Replace(src, "[w]\n", "[w]\nrandseed=1234\n", 1))
	assert.NotEqual(t, writeOrder(t, stamps1, 3), writeOrder(t, stamps4, 3))
}

// fsync=N: after every N writes the job fsyncs, and those calls are fio's
// sync io_us: counted and timed on their own (Sync), their time not part
// of the write that preceded them. On the default P3600 a buffered 4 KiB
// write is a page-cache copy of a few microseconds; its fsync writes the
// page to the device and waits for it. group_reporting adds the jobs'
// syncs up.
//
// As in fio (io_u.c get_rw_ddir), the sync is the loop's next IO after the
// write that makes N, so the 64th write of a 64-write job has none, and
// its last writes stay dirty (fio 3.33 fsyncs at the end only with
// end_fsync=1).
func TestRunFsyncEveryNIsTimedApart(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		syncs       uint64
		synced      int64 // pages written back by fsync
	}{
		{"fsync=4", "fsync=4\n", 15, 60},
		{"fdatasync=8", "fdatasync=8\n", 7, 56},
		{"both, the smaller wins", "fsync=16\nfdatasync=8\n", 7, 56},
		{"group_reporting", "fsync=4\nnumjobs=2\ngroup_reporting\n", 30, 120},
		{"none", "", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStack(t, 1)
			res := runOn(t, st, "[w]\nrw=write\nbs=4k\nsize=256k\ndirect=0\n"+tc.extra)
			j := onlyJob(t, res)
			require.Zero(t, j.Error, j.ErrorMsg)
			assert.Equal(t, tc.syncs, j.Sync.IOs)
			assert.Equal(t, tc.syncs, j.Sync.IssuedFsync+j.Sync.IssuedDatasync)
			assert.Equal(t, tc.syncs, j.Sync.Lat.Count())
			assert.Equal(t, tc.synced, st.FS.Writeback().Stats().Written[writeback.ReasonFsync])
			if tc.syncs == 0 {
				return
			}
			assert.Less(t, j.Write.Clat.Max(), j.Sync.Lat.Min(), "a write's latency leaves its fsync out")
		})
	}
}

// group_reporting merges a group's jobs as fio's __show_run_stats does:
// the name from the first job, the option list, percentile settings and
// latency depth from the last (each job overwrites them in turn), and the
// jobs as they ran kept in Members (fio describes each at its start).
// Checked against fio 3.33's normal and JSON output for this file.
func TestGroupReportingMergeTakesLastJobsOptions(t *testing.T) {
	st := newStack(t, 1)
	res := runOn(t, st, "[global]\ngroup_reporting\nsize=256k\nbs=4k\nfilename=f\n"+
		"[w]\nrw=write\nnumjobs=3\n"+
		"[r]\nstonewall\nrw=read\nioengine=libaio\niodepth=4\nnumjobs=2\npercentile_list=50\n"+
		"[z]\nrw=randread\nioengine=sync\niodepth=2\n")
	require.Len(t, res.Groups, 2)
	g := res.Groups[1]
	require.Len(t, g.Jobs, 1)
	m := g.Jobs[0]
	assert.Equal(t, "r", m.Name)
	assert.Equal(t, 3, m.Jobs)
	assert.Equal(t, 2, m.IODepth, "the latency depth is the last job's")
	var opts []string
	for _, o := range m.Options {
		opts = append(opts, o.Name+"="+o.Value)
	}
	assert.Equal(t, []string{"rw=randread", "ioengine=sync", "iodepth=2"}, opts)
	assert.NotEqual(t, []float64{50}, m.Percentiles, "the last job's percentile list (fio's default)")
	var names []string
	for _, j := range g.AsRun() {
		names = append(names, j.Name)
	}
	assert.Equal(t, []string{"r", "r", "z"}, names)
	assert.Len(t, res.Groups[0].AsRun(), 3)
}

// EndWithJobs: the run ends with its jobs, the flusher's periodic
// writeback of what they left dirty not waited for; by default the run
// goes on until it is written.
func TestRunEndWithJobs(t *testing.T) {
	src := "[j]\nrw=write\nbs=4k\nsize=1m\nruntime=100ms\n"
	for _, end := range []bool{false, true} {
		st := newStack(t, 1)
		res, err := Run(st.Engine, st.FS, parseString(t, src), RunOptions{EndWithJobs: end})
		require.NoError(t, err)
		j := onlyJob(t, res)
		require.Zero(t, j.Error, j.ErrorMsg)
		if end {
			assert.Less(t, res.Engine.SimulatedSeconds, 1.0)
			assert.Positive(t, st.FS.Writeback().DirtyPages(), "left dirty")
		} else {
			assert.Greater(t, res.Engine.SimulatedSeconds, 25.0, "periodic writeback after dirty_expire")
			assert.Zero(t, st.FS.Writeback().DirtyPages())
		}
	}
}

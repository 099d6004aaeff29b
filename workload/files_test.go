package workload

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/fsmodel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of jobs with several files: nrfiles, openfiles and
// file_service_type, from parsing to where each IO goes.

func TestParseFileOptions(t *testing.T) {
	tests := []struct {
		src  string
		want func(t *testing.T, js JobSpec)
	}{
		{"", func(t *testing.T, js JobSpec) {
			assert.Zero(t, js.NrFiles, "fio's default is one file")
			assert.Zero(t, js.OpenFiles)
			assert.Equal(t, FileService{}, js.FileService, "roundrobin")
			assert.Equal(t, 1, nrFiles(&js))
		}},
		{"nrfiles=4", func(t *testing.T, js JobSpec) { assert.Equal(t, 4, js.NrFiles) }},
		{"nr_files=3", func(t *testing.T, js JobSpec) { assert.Equal(t, 3, js.NrFiles) }},
		{"nrfiles=1k", func(t *testing.T, js JobSpec) { assert.Equal(t, 1024, js.NrFiles, "fio reads integers as sizes") }},
		{"nrfiles=0", func(t *testing.T, js JobSpec) { assert.Equal(t, 1, nrFiles(&js)) }},
		{"nrfiles=4\nfilename=f", func(t *testing.T, js JobSpec) {
			assert.Equal(t, 1, nrFiles(&js), "filename= overrides nrfiles, as in fio")
		}},
		{"nrfiles=8\nopenfiles=2", func(t *testing.T, js JobSpec) { assert.Equal(t, 2, js.OpenFiles) }},
		{"file_service_type=roundrobin", func(t *testing.T, js JobSpec) {
			assert.Equal(t, FileService{Kind: FileServiceRoundRobin}, js.FileService)
		}},
		{"file_service_type=roundrobin:4", func(t *testing.T, js JobSpec) {
			assert.Equal(t, FileService{Kind: FileServiceRoundRobin, Switch: 4}, js.FileService)
		}},
		{"file_service_type=sequential", func(t *testing.T, js JobSpec) {
			assert.Equal(t, FileService{Kind: FileServiceSequential}, js.FileService)
		}},
		{"file_service_type=sequential:2", func(t *testing.T, js JobSpec) {
			assert.Equal(t, FileService{Kind: FileServiceSequential, Switch: 2}, js.FileService)
		}},
		{"file_service_type=random", func(t *testing.T, js JobSpec) {
			assert.Equal(t, FileService{Kind: FileServiceRandom}, js.FileService)
		}},
		{"file_service_type=random:8", func(t *testing.T, js JobSpec) {
			assert.Equal(t, FileService{Kind: FileServiceRandom, Switch: 8}, js.FileService)
		}},
		{"file_service_type=zipf", func(t *testing.T, js JobSpec) {
			assert.Equal(t, FileService{Kind: FileServiceZipf, Param: 1.1}, js.FileService)
		}},
		{"file_service_type=zipf:1.4:0.5", func(t *testing.T, js JobSpec) {
			assert.Equal(t, FileService{Kind: FileServiceZipf, Param: 1.4, Center: 0.5, HasCenter: true}, js.FileService)
		}},
		{"file_service_type=pareto", func(t *testing.T, js JobSpec) {
			assert.Equal(t, FileService{Kind: FileServicePareto, Param: 0.2}, js.FileService)
		}},
		{"file_service_type=pareto:0.3", func(t *testing.T, js JobSpec) {
			assert.Equal(t, FileService{Kind: FileServicePareto, Param: 0.3}, js.FileService)
		}},
		{"file_service_type=normal", func(t *testing.T, js JobSpec) {
			assert.Equal(t, FileService{Kind: FileServiceNormal}, js.FileService)
		}},
		{"file_service_type=gauss:20:0.25", func(t *testing.T, js JobSpec) {
			assert.Equal(t, FileService{Kind: FileServiceNormal, Param: 20, Center: 0.25, HasCenter: true}, js.FileService)
		}},
		{"file_service_type=random:4\nfile_service_type=zipf", func(t *testing.T, js JobSpec) {
			assert.Equal(t, FileService{Kind: FileServiceZipf, Param: 1.1}, js.FileService, "the last one counts")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			tt.want(t, parseOne(t, "[j]\n"+tt.src+"\n"))
		})
	}
	js := parseOne(t, "[global]\nnrfiles=3\nfile_service_type=sequential\n[j]\n")
	assert.Equal(t, 3, js.NrFiles, "from [global]")
	assert.Equal(t, FileServiceSequential, js.FileService.Kind)
	assert.Equal(t, "sequential", js.FileService.Kind.String())
	assert.Equal(t, "FileServiceKind(9)", FileServiceKind(9).String())
}

func TestParseFileOptionErrors(t *testing.T) {
	tests := []struct {
		src  string
		kind error
		line int
		opt  string
		msg  string
	}{
		{"nrfiles=-1", ErrBadValue, 2, "nrfiles", "must not be negative"},
		{"nr_files=x", ErrBadValue, 2, "nr_files", `bad value "x"`},
		{"nrfiles=2g", ErrBadValue, 2, "nrfiles", "integer from 0 to 1048576"},
		{"openfiles=-2", ErrBadValue, 2, "openfiles", "must not be negative"},
		{"openfiles=1.5", ErrBadValue, 2, "openfiles", `bad value "1.5"`},
		{"file_service_type", ErrBadValue, 2, "file_service_type", "a value is required"},
		{"file_service_type=lru", ErrBadValue, 2, "file_service_type", "expected roundrobin[:N], sequential"},
		{"file_service_type=Random", ErrBadValue, 2, "file_service_type", "expected roundrobin"},
		{"file_service_type=roundrobin:0", ErrBadValue, 2, "file_service_type", "integer >= 1"},
		{"file_service_type=random:x", ErrBadValue, 2, "file_service_type", "IOs to issue to a file"},
		{"file_service_type=random:", ErrBadValue, 2, "file_service_type", "integer >= 1"},
		{"file_service_type=sequential:-1", ErrBadValue, 2, "file_service_type", "integer >= 1"},
		{"file_service_type=zipf:", ErrBadValue, 2, "file_service_type", "expected roundrobin"},
		{"file_service_type=zipf:1", ErrBadValue, 2, "file_service_type", "different from 1.0"},
		{"file_service_type=zipf:x", ErrBadValue, 2, "file_service_type", "expected roundrobin"},
		{"file_service_type=pareto:1.5", ErrBadValue, 2, "file_service_type", "between 0 and 1"},
		{"file_service_type=normal:100", ErrBadValue, 2, "file_service_type", "below 100"},
		{"file_service_type=gauss:5:2", ErrBadValue, 2, "file_service_type", "center"},
		{"fill_device=1\nnrfiles=2", ErrNotModelled, 3, "nrfiles", "fill_device"},
		{"nr_files=2\nfill_device=1", ErrNotModelled, 2, "nr_files", "fill_device"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			pe := requireOptionError(t, tt.src, tt.kind, tt.opt, tt.msg)
			assert.Equal(t, "e.fio", pe.File)
			assert.Equal(t, tt.line, pe.Line)
			assert.True(t, strings.HasPrefix(pe.Error(), "e.fio:"), pe.Error())
		})
	}
	// fill_device with one file still parses.
	js := parseOne(t, "[j]\nfill_device=1\nnrfiles=1\n")
	assert.True(t, js.FillDevice)
}

// laidOut returns clone c of the job of src (the options of section [j]
// of test.fio) set up as Run sets it up, without a stack.
func laidOut(t *testing.T, src string, c int) *job {
	t.Helper()
	spec := parseOne(t, "[j]\n"+src)
	j := &job{spec: &spec, clone: c, rng: rand.New(rand.NewPCG(1, 3)), aux: rand.New(rand.NewPCG(1, 4))}
	require.NoError(t, j.layout(1<<40))
	j.setUp()
	return j
}

// fileLayout is a file's name, region offset and length.
type fileLayout struct {
	name     string
	off, len int64
}

func layoutOf(j *job) []fileLayout {
	var out []fileLayout
	for _, f := range j.files {
		out = append(out, fileLayout{f.name, f.regionOff, f.regionLen})
	}
	return out
}

func TestFileLayout(t *testing.T) {
	const m = 1 << 20
	tests := []struct {
		name    string
		src     string
		clone   int
		want    []fileLayout
		ioLimit int64
	}{
		{"one file", "size=1m\n", 0, []fileLayout{{"j.0.0", 0, m}}, m},
		{"default names and an even split", "size=16m\nnrfiles=4\n", 2,
			[]fileLayout{{"j.2.0", 0, 4 * m}, {"j.2.1", 0, 4 * m}, {"j.2.2", 0, 4 * m}, {"j.2.3", 0, 4 * m}}, 16 * m},
		{"filename_format with $filenum, directory", "size=2m\nnrfiles=2\nfilename_format=$jobname-$jobnum/f$filenum\ndirectory=/mnt/d/\n", 1,
			[]fileLayout{{"/mnt/d/j-1/f0", 0, m}, {"/mnt/d/j-1/f1", 0, m}}, 2 * m},
		{"filename_format without $filenum names one file n times", "size=2m\nnrfiles=2\nfilename_format=shared\n", 0,
			[]fileLayout{{"shared", 0, m}, {"shared", 0, m}}, 2 * m},
		{"filename= has one file", "size=2m\nnrfiles=4\nfilename=f\n", 0, []fileLayout{{"f", 0, 2 * m}}, 2 * m},
		{"a size that does not divide", "size=10m\nnrfiles=3\n", 0,
			[]fileLayout{{"j.0.0", 0, 3495253}, {"j.0.1", 0, 3495253}, {"j.0.2", 0, 3495253}}, 3 * 3495253},
		{"what does not divide goes to the first files, a block each", "bs=512\nsize=4096600\nnrfiles=1000\n", 0, nil, 4096600 - 88},
		{"offset applies to every file", "size=2m\nnrfiles=2\noffset=64k\noffset_increment=1m\n", 1,
			[]fileLayout{{"j.1.0", 64<<10 + m, m}, {"j.1.1", 64<<10 + m, m}}, 2 * m},
		{"filesize sizes each file", "filesize=1m\nnrfiles=4\n", 0,
			[]fileLayout{{"j.0.0", 0, m}, {"j.0.1", 0, m}, {"j.0.2", 0, m}, {"j.0.3", 0, m}}, 4 * m},
		{"size limits the bytes of files sized by filesize", "filesize=1m\nsize=3m\nnrfiles=4\n", 0,
			[]fileLayout{{"j.0.0", 0, m}, {"j.0.1", 0, m}, {"j.0.2", 0, m}, {"j.0.3", 0, m}}, 3 * m},
		{"size beyond the files is their total", "filesize=1m\nsize=64m\nnrfiles=2\n", 0,
			[]fileLayout{{"j.0.0", 0, m}, {"j.0.1", 0, m}}, 2 * m},
		{"size as a percentage of the files", "filesize=1m\nsize=50%\nnrfiles=2\n", 0,
			[]fileLayout{{"j.0.0", 0, m}, {"j.0.1", 0, m}}, m},
		{"offset as a percentage of each file", "filesize=1m\noffset=25%\nnrfiles=2\n", 0,
			[]fileLayout{{"j.0.0", 256 << 10, 768 << 10}, {"j.0.1", 256 << 10, 768 << 10}}, 1536 << 10},
		// fio 3.33: the region of a file sized by filesize ends at the
		// file's end; the job reads filesize less offset.
		{"filesize and offset: the region ends at the file's end", "filesize=8m\noffset=2m\nfilename=f\n", 0,
			[]fileLayout{{"f", 2 * m, 6 * m}}, 6 * m},
		{"filesize and offset: size beyond the region is the region", "filesize=8m\noffset=2m\nsize=16m\nfilename=f\n", 0,
			[]fileLayout{{"f", 2 * m, 6 * m}}, 6 * m},
		{"filesize and offset_increment: the clone's region ends at the file's end", "filesize=8m\nsize=2m\noffset_increment=2m\nnumjobs=3\nfilename=f\n", 2,
			[]fileLayout{{"f", 4 * m, 4 * m}}, 2 * m},
		{"io_size", "size=4m\nnrfiles=2\nio_size=16m\n", 0,
			[]fileLayout{{"j.0.0", 0, 2 * m}, {"j.0.1", 0, 2 * m}}, 16 * m},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := laidOut(t, tt.src, tt.clone)
			if tt.want != nil {
				assert.Equal(t, tt.want, layoutOf(j))
			}
			assert.Equal(t, tt.ioLimit, j.ioLimit)
			require.NoError(t, j.checkRegion(512))
		})
	}
	t.Run("remainder blocks", func(t *testing.T) {
		j := laidOut(t, "bs=512\nsize=4096600\nnrfiles=1000\n", 0)
		require.Len(t, j.files, 1000)
		assert.Equal(t, int64(4096+512), j.files[0].regionLen, "600 bytes left over: one more 512-byte block for file 0")
		assert.Equal(t, int64(4096), j.files[1].regionLen)
		assert.Equal(t, "j.0.999", j.files[999].name)
	})
	t.Run("filesize range: each file draws its own", func(t *testing.T) {
		j := laidOut(t, "filesize=1m-4m\nbs=64k\nnrfiles=8\n", 0)
		sizes := map[int64]bool{}
		var total int64
		for _, f := range j.files {
			assert.GreaterOrEqual(t, f.regionLen, int64(m))
			assert.LessOrEqual(t, f.regionLen, int64(4*m))
			assert.Zero(t, f.regionLen%(64<<10), "a multiple of the block size")
			sizes[f.regionLen] = true
			total += f.regionLen
		}
		assert.Greater(t, len(sizes), 1)
		assert.Equal(t, total, j.ioLimit)
	})
	t.Run("files smaller than the block size", func(t *testing.T) {
		j := laidOut(t, "size=16k\nnrfiles=8\n", 0)
		err := j.checkRegion(512)
		require.ErrorIs(t, err, ErrJob)
		assert.Contains(t, err.Error(), `test.fio:3: option "nrfiles"`)
		assert.Contains(t, err.Error(), `nrfiles=8 divides size into files of 2048 bytes (file "j.0.0"), smaller than the block size 4096`)
		j = laidOut(t, "filesize=2k\nnrfiles=8\n", 0)
		assert.ErrorContains(t, j.checkRegion(512), `option "filesize": job cannot run: size 2048 is smaller than the block size 4096`)
	})
}

// serviceOrder returns the file number of each IO the job of src issues,
// at most max, and how often the file to use could not be opened yet.
func serviceOrder(t *testing.T, src string, max int) (files []int, busy int) {
	t.Helper()
	j := laidOut(t, src, 0)
	for len(files) < max {
		var stop stopReason
		io, ok := j.next(nil, &stop)
		if !ok {
			if stop == running {
				busy++
				require.Less(t, busy, 100000, "busy forever")
				continue
			}
			require.Equal(t, stopDone, stop)
			break
		}
		require.Equal(t, j.cur, io.file)
		require.LessOrEqual(t, io.off+io.bs, io.file.regionLen)
		files = append(files, io.file.num)
	}
	return files, busy
}

// counts returns how many IOs went to each of n files.
func counts(files []int, n int) []int {
	c := make([]int, n)
	for _, f := range files {
		c[f]++
	}
	return c
}

// runs returns the lengths of the runs of IOs to one file.
func runs(files []int) []int {
	var out []int
	for i, f := range files {
		if i > 0 && files[i-1] == f {
			out[len(out)-1]++
		} else {
			out = append(out, 1)
		}
	}
	return out
}

func repeat(seq []int, n int) []int {
	var out []int
	for range n {
		out = append(out, seq...)
	}
	return out
}

func TestFileServiceOrder(t *testing.T) {
	// Four files of 4 blocks each.
	const base = "size=64k\nbs=4k\nnrfiles=4\n"
	t.Run("roundrobin", func(t *testing.T) {
		got, busy := serviceOrder(t, base+"rw=read\n", 100)
		assert.Equal(t, repeat([]int{0, 1, 2, 3}, 4), got, "each file in turn, until all are done")
		assert.Zero(t, busy)
	})
	t.Run("roundrobin:2", func(t *testing.T) {
		got, _ := serviceOrder(t, base+"rw=write\nfile_service_type=roundrobin:2\n", 100)
		assert.Equal(t, repeat([]int{0, 0, 1, 1, 2, 2, 3, 3}, 2), got)
	})
	t.Run("roundrobin:3 skips done files", func(t *testing.T) {
		got, _ := serviceOrder(t, base+"rw=write\nfile_service_type=roundrobin:3\n", 100)
		assert.Equal(t, []int{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 0, 1, 2, 3}, got)
	})
	t.Run("sequential", func(t *testing.T) {
		got, _ := serviceOrder(t, base+"rw=read\nfile_service_type=sequential\n", 100)
		assert.Equal(t, []int{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, got)
		again, _ := serviceOrder(t, base+"rw=read\nfile_service_type=sequential:2\n", 100)
		assert.Equal(t, got, again, "sequential ignores :N, as fio does")
	})
	t.Run("random:3", func(t *testing.T) {
		got, _ := serviceOrder(t, "size=4m\nbs=4k\nnrfiles=4\nrw=randread\nfile_service_type=random:3\n", 300)
		require.Len(t, got, 300)
		for i := 0; i < len(got); i += 3 {
			assert.Equal(t, got[i], got[i+1], "IO %d", i+1)
			assert.Equal(t, got[i], got[i+2], "IO %d", i+2)
		}
		c := counts(got, 4)
		for f, n := range c {
			assert.Greater(t, n, 30, "file %d: %v", f, c)
		}
		again, _ := serviceOrder(t, "size=4m\nbs=4k\nnrfiles=4\nrw=randread\nfile_service_type=random:3\n", 300)
		assert.Equal(t, got, again, "deterministic")
	})
	t.Run("random: every block of every file once", func(t *testing.T) {
		got, _ := serviceOrder(t, base+"rw=randwrite\nfile_service_type=random\n", 100)
		assert.Equal(t, []int{4, 4, 4, 4}, counts(got, 4), "the random map makes each file done after its 4 blocks")
		assert.NotEqual(t, repeat([]int{0, 1, 2, 3}, 4), got)
	})
	t.Run("random with lfsr", func(t *testing.T) {
		got, _ := serviceOrder(t, base+"rw=randread\nrandom_generator=lfsr\n", 100)
		assert.Equal(t, []int{4, 4, 4, 4}, counts(got, 4), "each file done after one lfsr pass")
	})
	t.Run("norandommap files are never done", func(t *testing.T) {
		got, _ := serviceOrder(t, base+"rw=randread\nnorandommap\n", 100)
		assert.Len(t, got, 100)
		assert.Equal(t, []int{25, 25, 25, 25}, counts(got, 4))
	})
	t.Run("openfiles=2", func(t *testing.T) {
		got, busy := serviceOrder(t, base+"rw=read\nopenfiles=2\n", 100)
		assert.Equal(t, append(repeat([]int{0, 1}, 4), repeat([]int{2, 3}, 4)...), got,
			"files 2 and 3 wait until 0 and 1 are done and closed")
		assert.Equal(t, 8, busy, "fio's get_next_file returns EBUSY at each unopened file while two are open")
	})
	t.Run("openfiles=1 random", func(t *testing.T) {
		got, busy := serviceOrder(t, base+"rw=read\nopenfiles=1\nfile_service_type=random\n", 100)
		assert.Equal(t, []int{4, 4, 4, 4}, counts(got, 4))
		assert.Len(t, runs(got), 4, "one file at a time")
		assert.Positive(t, busy)
	})
	t.Run("zipf", func(t *testing.T) {
		got, _ := serviceOrder(t, base+"rw=read\nfile_service_type=zipf:1.2\n", 2000)
		require.Len(t, got, 2000, "files start over: the job ends by its size, not here")
		c := counts(got, 4)
		hot := 0
		for f := range c {
			if c[f] > c[hot] {
				hot = f
			}
		}
		assert.Greater(t, c[hot], 1000, "the hottest file takes most IOs: %v", c)
		for f := range c {
			assert.Positive(t, c[f], "every file is used: %v", c)
		}
	})
	t.Run("zipf center", func(t *testing.T) {
		got, _ := serviceOrder(t, base+"rw=read\nfile_service_type=zipf:1.2:0.5\n", 2000)
		c := counts(got, 4)
		assert.Greater(t, c[2], 1000, "the center puts the most likely file at the middle: %v", c)
	})
	t.Run("pareto", func(t *testing.T) {
		got, _ := serviceOrder(t, base+"rw=randread\nfile_service_type=pareto:0.3:0\n", 2000)
		c := counts(got, 4)
		assert.Greater(t, c[0], c[1], "%v", c)
		assert.Greater(t, c[0], c[3], "%v", c)
	})
	t.Run("normal", func(t *testing.T) {
		got, _ := serviceOrder(t, "size=64k\nbs=4k\nnrfiles=5\nrw=read\nfile_service_type=normal\n", 2000)
		c := counts(got, 5)
		assert.Greater(t, c[2], c[0]+c[4], "the middle file is the most likely: %v", c)
		got, _ = serviceOrder(t, "size=64k\nbs=4k\nnrfiles=5\nrw=read\nfile_service_type=gauss:40\n", 2000)
		wide := counts(got, 5)
		assert.Greater(t, wide[0]+wide[4], c[0]+c[4], "a deviation widens it: %v, %v", wide, c)
	})
	t.Run("one file", func(t *testing.T) {
		got, _ := serviceOrder(t, "size=16k\nrw=read\nfile_service_type=random:2\ntime_based\n", 10)
		assert.Equal(t, make([]int, 10), got, "a time_based job with one file wraps around it")
		got, _ = serviceOrder(t, "size=16k\nrw=read\nfile_service_type=random:2\n", 10)
		assert.Equal(t, make([]int, 4), got, "otherwise its file is done at its end")
	})
}

func TestFileServiceNewLoop(t *testing.T) {
	j := laidOut(t, "size=16k\nbs=4k\nnrfiles=2\nrw=read\nloops=2\n", 0)
	order := func() []int {
		var out []int
		for {
			var stop stopReason
			io, ok := j.next(nil, &stop)
			if !ok {
				require.Equal(t, stopDone, stop)
				return out
			}
			out = append(out, io.file.num)
		}
	}
	assert.Equal(t, []int{0, 1, 0, 1}, order())
	j.newLoop()
	assert.Equal(t, []int{0, 1, 0, 1}, order(), "a new loop opens the files again and starts them over")
	for _, f := range j.files {
		assert.True(t, f.done)
		assert.False(t, f.open)
	}

	// io_size asks for more than the files: the job goes over them again,
	// each round a loop of its own (the phase ends, and the job's loops
	// start the round).
	j = laidOut(t, "size=16k\nbs=4k\nnrfiles=2\nrw=read\nio_size=40k\n", 0)
	var got []int
	rounds, moved := 1, int64(0)
	for moved < j.spec.IOSize { // as the job's loops decide
		var stop stopReason
		io, ok := j.next(nil, &stop)
		if !ok {
			require.Equal(t, stopDone, stop)
			require.True(t, j.filesExhausted, "the files are done")
			j.newLoop()
			rounds++
			continue
		}
		j.bytes += io.bs
		moved += io.bs
		got = append(got, io.file.num)
	}
	assert.Equal(t, repeat([]int{0, 1}, 5), got, "four IOs per round; io_size=40k makes ten")
	assert.Equal(t, 3, rounds)

	// Without io_size the loop ends when the files are done, even short
	// of size: 10m over 3 files leaves a part block at each file's end.
	j = laidOut(t, "size=10m\nbs=4k\nnrfiles=3\nrw=write\n", 0)
	n := 0
	for {
		var stop stopReason
		io, ok := j.next(nil, &stop)
		if !ok {
			break
		}
		j.bytes += io.bs
		n++
	}
	assert.Equal(t, 3*853, n, "853 blocks of 4 KiB fit in each 3495253-byte file")
	assert.Less(t, j.bytes, j.ioLimit)
}

// ioCounter counts, per file, the IOs of a run (RunOptions.onIO).
type ioCounter struct {
	reads, writes map[string]int
	bytes         map[string]int64
}

func newIOCounter() *ioCounter {
	return &ioCounter{reads: map[string]int{}, writes: map[string]int{}, bytes: map[string]int64{}}
}

func (c *ioCounter) record(_ int, file string, dir blockdev.Op, _, n int64) {
	if dir == blockdev.OpRead {
		c.reads[file]++
	} else {
		c.writes[file]++
	}
	c.bytes[file] += n
}

func TestRunSeveralFiles(t *testing.T) {
	tests := []struct {
		name string
		src  string
		// want is the IOs per file of each direction, read then write.
		wantReads, wantWrites map[string]int
		check                 func(t *testing.T, jobs []JobResult)
	}{
		{
			name: "buffered psync writes, fsync, read back",
			src: "[global]\nbs=64k\nsize=8m\nnrfiles=4\nfilename_format=f.$filenum\n" +
				"[w]\nrw=write\nend_fsync=1\nfsync=8\n[r]\nstonewall\nrw=read\n",
			wantReads:  map[string]int{"f.0": 32, "f.1": 32, "f.2": 32, "f.3": 32},
			wantWrites: map[string]int{"f.0": 32, "f.1": 32, "f.2": 32, "f.3": 32},
			check: func(t *testing.T, jobs []JobResult) {
				assert.Equal(t, uint64(128), jobs[0].Write.IOs)
				assert.Equal(t, uint64(128), jobs[1].Read.IOs)
			},
		},
		{
			name: "direct libaio random writes with verify",
			src:  "[j]\nioengine=libaio\niodepth=16\ndirect=1\nrw=randwrite\nbs=4k\nsize=4m\nnrfiles=4\nverify=crc32c\nfile_service_type=random:4\n",
			// Every block once (random map), then read back once.
			wantReads:  map[string]int{"j.0.0": 256, "j.0.1": 256, "j.0.2": 256, "j.0.3": 256},
			wantWrites: map[string]int{"j.0.0": 256, "j.0.1": 256, "j.0.2": 256, "j.0.3": 256},
			check: func(t *testing.T, jobs []JobResult) {
				assert.Zero(t, jobs[0].Error, jobs[0].ErrorMsg)
				assert.Equal(t, uint64(1024), jobs[0].Write.IOs)
				assert.Equal(t, uint64(1024), jobs[0].Read.IOs)
			},
		},
		{
			name:       "direct io_uring sequential service with openfiles",
			src:        "[j]\nioengine=io_uring\niodepth=8\ndirect=1\nrw=read\nbs=16k\nsize=3m\nnrfiles=3\nopenfiles=1\nfile_service_type=sequential\n",
			wantReads:  map[string]int{"j.0.0": 64, "j.0.1": 64, "j.0.2": 64},
			wantWrites: map[string]int{},
		},
		{
			name: "a verifying reader checks each file against what was written to it",
			src: "[global]\ndirect=1\nbs=4k\nsize=1m\nnrfiles=2\nfilename_format=v.$filenum\nverify=md5\n" +
				"[w]\nrw=write\ndo_verify=0\n[r]\nstonewall\nrw=read\n",
			wantReads:  map[string]int{"v.0": 128, "v.1": 128},
			wantWrites: map[string]int{"v.0": 128, "v.1": 128},
			check: func(t *testing.T, jobs []JobResult) {
				assert.Zero(t, jobs[1].Error, jobs[1].ErrorMsg)
			},
		},
		{
			name:       "time_based goes over the files again",
			src:        "[j]\ndirect=1\nrw=read\nbs=4k\nsize=64k\nnrfiles=2\ntime_based\nruntime=30ms\n",
			wantReads:  nil, // checked below
			wantWrites: map[string]int{},
		},
		{
			name:       "filesize, size limits the total",
			src:        "[j]\ndirect=1\nrw=write\nbs=4k\nfilesize=1m\nsize=2m\nnrfiles=4\n",
			wantReads:  map[string]int{},
			wantWrites: map[string]int{"j.0.0": 128, "j.0.1": 128, "j.0.2": 128, "j.0.3": 128},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newIOCounter()
			res, _ := runJobs(t, 1, tt.src, RunOptions{AppPerIO: time.Microsecond, onIO: c.record})
			if tt.wantReads == nil {
				a, b := c.reads["j.0.0"], c.reads["j.0.1"]
				assert.Greater(t, a, 64, "more than the 16 blocks of a pass: %v", c.reads)
				assert.InDelta(t, a, b, 1, "%v", c.reads)
				assert.Len(t, c.reads, 2)
				tt.wantReads = c.reads
			}
			assert.Equal(t, tt.wantReads, c.reads)
			assert.Equal(t, tt.wantWrites, c.writes)
			if tt.check != nil {
				tt.check(t, allJobs(res))
			}
		})
	}
}

func TestWatchSeveralFiles(t *testing.T) {
	// Job w writes f.0 and f.1; job r reads f.1 and g. The oracle watches
	// f.1 only, the one file both read and written, whichever job names it.
	f0, f1, g := &fsmodel.File{}, &fsmodel.File{}, &fsmodel.File{}
	w := &job{spec: &JobSpec{RW: RWWrite}, files: []*jobFile{{name: "f.0", file: f0}, {num: 1, name: "f.1", file: f1}}}
	r := &job{spec: &JobSpec{RW: RWRead}, files: []*jobFile{{name: "f.1", file: f1}, {num: 1, name: "g", file: g}}}
	rs := &runState{jobs: []*job{w, r}}
	rs.watchFiles()
	require.NotNil(t, rs.integ)
	assert.Nil(t, w.files[0].hist)
	require.NotNil(t, w.files[1].hist)
	assert.Same(t, w.files[1].hist, r.files[0].hist, "one history per file")
	assert.Nil(t, r.files[1].hist)
	assert.True(t, w.res.Integrity.On)
	assert.True(t, r.res.Integrity.On)

	// A randrw job with several files: every file is watched.
	res, _ := runJobs(t, 1, "[j]\nrw=randrw\nbs=4k\nsize=1m\nnrfiles=4\ndirect=1\n", RunOptions{AppPerIO: time.Microsecond})
	jr := onlyJob(t, res)
	assert.True(t, jr.Integrity.On)
	assert.Zero(t, jr.Integrity.TornReads+jr.Integrity.StaleReads)
}

func TestRunSeveralFilesErrors(t *testing.T) {
	st := newStack(t, 1)
	spec := parseOne(t, "[j]\nfill_device=1\n")
	spec.NrFiles = 2 // as code may build it; the parser rejects it
	_, err := Run(st.Engine, st.FS, []JobSpec{spec}, RunOptions{})
	require.ErrorIs(t, err, ErrJob)
	assert.Contains(t, err.Error(), `test.fio:1: option "nrfiles"`)
	assert.Contains(t, err.Error(), "fill_device is not modelled")

	_, err = Run(st.Engine, st.FS, parseString(t, "[j]\nsize=8k\nnrfiles=4\nbs=4k\n"), RunOptions{})
	require.ErrorIs(t, err, ErrJob)
	assert.Contains(t, err.Error(), "files of 2048 bytes")

	// 1m over 3 files is 349525 bytes each: backward steps would wrap to
	// an unaligned offset.
	_, err = Run(st.Engine, st.FS, parseString(t, "[j]\nsize=1m\nnrfiles=3\nrw=read:-8k\ndirect=1\n"), RunOptions{})
	require.ErrorIs(t, err, ErrJob)
	assert.Contains(t, err.Error(), `option "rw": job cannot run: backward steps wrap to the end of file "j.0.0", 349525 bytes long (nrfiles=3)`)
	res, err := Run(st.Engine, st.FS, parseString(t, "[j]\nsize=1m\nnrfiles=4\nrw=read:-8k\ndirect=1\n"), RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, uint64(256), onlyJob(t, res).Read.IOs)
}

package workload

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noEnv is an env lookup with no variables.
func noEnv(string) (string, bool) { return "", false }

// requireOptionError parses a job "j" whose section holds src (from line
// 2 of "e.fio") and requires a *ParseError of kind naming option opt
// whose text contains msg; it returns the error for further checks.
func requireOptionError(t *testing.T, src string, kind error, opt, msg string) *ParseError {
	t.Helper()
	_, err := Parse("e.fio", strings.NewReader("[j]\n"+src+"\n"), noEnv)
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, kind)
	assert.Equal(t, opt, pe.Option)
	assert.Contains(t, err.Error(), msg)
	return pe
}

// mapEnv returns an env lookup over m.
func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func parseString(t *testing.T, src string) []JobSpec {
	t.Helper()
	jobs, err := Parse("test.fio", strings.NewReader(src), noEnv)
	require.NoError(t, err)
	return jobs
}

// parseOne parses src, which must hold exactly one job.
func parseOne(t *testing.T, src string) JobSpec {
	t.Helper()
	jobs := parseString(t, src)
	require.Len(t, jobs, 1)
	return jobs[0]
}

func TestParseDefaults(t *testing.T) {
	js := parseOne(t, "[job]\n")
	want := JobSpec{
		Name: "job", File: "test.fio", Line: 1,
		RW: RWRead, RWMixRead: 50, BS: [2]int64{4096, 4096},
		NumJobs: 1, IOEngine: "psync", IODepth: 1, RandSeed: 0x89,
		IODepthBatchSubmit: 1, IODepthBatchCompleteMin: 1, IODepthBatchCompleteMax: 1, IODepthLow: 1, Invalidate: true,
	}
	assert.Empty(t, js.where, "no option set")
	js.where = nil
	assert.Equal(t, want, js)
}

func TestParseEveryOption(t *testing.T) {
	src := `; a job using every option blksim models
[global]
ioengine=sync
direct=1
thread
group_reporting

[all]
rw=randrw
rwmixread=70
bs=4k,16k
size=1g
filename=/dev/nvme0n1
numjobs=4
iodepth=1
runtime=30s
time_based
ramp_time=2s
randseed=1234
name=renamed
`
	js := parseOne(t, src)
	want := JobSpec{
		Name: "renamed", File: "test.fio", Line: 8,
		RW: RWRandRW, RWMixRead: 70, BS: [2]int64{4096, 16384},
		Size: 1 << 30, Filename: "/dev/nvme0n1", NumJobs: 4, Thread: true,
		IOEngine: "sync", IODepth: 1, Direct: true,
		Runtime: 30 * time.Second, TimeBased: true, RampTime: 2 * time.Second,
		RandSeed: 1234, RandSeedSet: true, GroupReporting: true,
		IODepthBatchSubmit: 1, IODepthBatchCompleteMin: 1, IODepthBatchCompleteMax: 1, IODepthLow: 1, Invalidate: true,
	}
	// Where each option was set, [global]'s and the job's own, for the
	// runner's errors.
	assert.Equal(t, optPos{"test.fio", 3, "ioengine"}, js.where["ioengine"], "in [global]")
	assert.Equal(t, optPos{"test.fio", 11, "bs"}, js.where["bs"], "in the job's section")
	js.where = nil
	// The options as given, for fio's JSON "global options" and "job
	// options": table names, values as written, "" for a bare flag, in
	// fio's parse order (filename last).
	assert.Equal(t, []OptionValue{{"ioengine", "sync"}, {"direct", "1"}, {"thread", ""}, {"group_reporting", ""}}, js.GlobalOptions)
	assert.Equal(t, []OptionValue{{"rw", "randrw"}, {"rwmixread", "70"}, {"bs", "4k,16k"}, {"size", "1g"},
		{"numjobs", "4"}, {"iodepth", "1"}, {"runtime", "30s"}, {"time_based", ""},
		{"ramp_time", "2s"}, {"randseed", "1234"}, {"name", "renamed"}, {"filename", "/dev/nvme0n1"}}, js.Options)
	js.Options, js.GlobalOptions = nil, nil
	assert.Equal(t, want, js)

	src = `[global]
ioengine=libaio
iodepth=64
[aio]
iodepth_batch_submit=16
iodepth_batch_complete_min=4
iodepth_batch_complete_max=32
iodepth_low=8
`
	js = parseOne(t, src)
	assert.Equal(t, "libaio", js.IOEngine)
	assert.Equal(t, [5]int{64, 16, 4, 32, 8}, depths(js))
}

// depths returns iodepth, iodepth_batch_submit, iodepth_batch_complete_min,
// iodepth_batch_complete_max and iodepth_low.
func depths(js JobSpec) [5]int {
	return [5]int{js.IODepth, js.IODepthBatchSubmit, js.IODepthBatchCompleteMin, js.IODepthBatchCompleteMax, js.IODepthLow}
}

func TestParseAliases(t *testing.T) {
	js := parseOne(t, "[j]\nreadwrite=randwrite\nblocksize=8k\ntimeout=5m\n")
	assert.Equal(t, RWRandWrite, js.RW)
	assert.Equal(t, [2]int64{8192, 8192}, js.BS)
	assert.Equal(t, 5*time.Minute, js.Runtime)

	js = parseOne(t, "[j]\nioengine=io_uring\niodepth=32\niodepth_batch=8\niodepth_batch_complete=2\n")
	assert.Equal(t, [5]int{32, 8, 2, 2, 32}, depths(js))
}

func TestParseInheritance(t *testing.T) {
	type want struct {
		name string
		line int
		bs   int64
		rw   RWMode
		size int64
	}
	tests := []struct {
		name string
		src  string
		want []want
	}{
		{
			name: "global sets defaults for every job",
			src:  "[global]\nbs=8k\nrw=write\n[a]\n[b]\n",
			want: []want{{"a", 4, 8192, RWWrite, 0}, {"b", 5, 8192, RWWrite, 0}},
		},
		{
			name: "a job overrides global for itself only",
			src:  "[global]\nbs=8k\n[a]\nbs=16k\n[b]\n",
			want: []want{{"a", 3, 16384, RWRead, 0}, {"b", 5, 8192, RWRead, 0}},
		},
		{
			name: "a later global affects later jobs only",
			src:  "[global]\nbs=8k\n[a]\n[global]\nrw=randread\n[b]\n",
			want: []want{{"a", 3, 8192, RWRead, 0}, {"b", 6, 8192, RWRandRead, 0}},
		},
		{
			name: "a later global overrides an earlier one",
			src:  "[global]\nbs=8k\nsize=1m\n[a]\n[global]\nbs=64k\n[b]\n",
			want: []want{{"a", 4, 8192, RWRead, 1 << 20}, {"b", 7, 65536, RWRead, 1 << 20}},
		},
		{
			name: "jobs before any global get fio defaults",
			src:  "[a]\n[global]\nbs=8k\n[b]\n",
			want: []want{{"a", 1, 4096, RWRead, 0}, {"b", 4, 8192, RWRead, 0}},
		},
		{
			name: "a job does not leak into the next job",
			src:  "[a]\nrw=write\nsize=4k\n[b]\n",
			want: []want{{"a", 1, 4096, RWWrite, 4096}, {"b", 4, 4096, RWRead, 0}},
		},
		{
			// fio init.c: global = !strncmp(name, "global", 6).
			name: "a section named global-something is global, as in fio",
			src:  "[global-opts]\nbs=8k\n[a]\n",
			want: []want{{"a", 3, 8192, RWRead, 0}},
		},
		{
			// fio names each job after its section when it creates it.
			name: "name= in global does not rename jobs",
			src:  "[global]\nname=g\n[a]\n",
			want: []want{{"a", 3, 4096, RWRead, 0}},
		},
		{
			name: "name= in a job renames it",
			src:  "[a]\nname=other\n",
			want: []want{{"other", 1, 4096, RWRead, 0}},
		},
		{
			name: "duplicate job names are kept apart",
			src:  "[a]\n[a]\nrw=write\n",
			want: []want{{"a", 1, 4096, RWRead, 0}, {"a", 2, 4096, RWWrite, 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs := parseString(t, tt.src)
			require.Len(t, jobs, len(tt.want))
			for i, w := range tt.want {
				assert.Equal(t, w.name, jobs[i].Name, "job %d name", i)
				assert.Equal(t, w.line, jobs[i].Line, "job %d line", i)
				assert.Equal(t, "test.fio", jobs[i].File, "job %d file", i)
				assert.Equal(t, [2]int64{w.bs, w.bs}, jobs[i].BS, "job %d bs", i)
				assert.Equal(t, w.rw, jobs[i].RW, "job %d rw", i)
				assert.Equal(t, w.size, jobs[i].Size, "job %d size", i)
			}
		})
	}
}

func TestParseLineSyntax(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want func(*testing.T, JobSpec)
	}{
		{"spaces around =", "[j]\nbs =8k\n  rw=  write  \n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [2]int64{8192, 8192}, js.BS)
			assert.Equal(t, RWWrite, js.RW)
		}},
		{"tabs and CRLF", "[j]\r\n\tbs\t=8k\r\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [2]int64{8192, 8192}, js.BS)
		}},
		{"comments and blank lines", "; c1\n# c2\n\n   ; c3\n[j]\n\n  # c4\nbs=8k\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [2]int64{8192, 8192}, js.BS)
			assert.Equal(t, 5, js.Line)
		}},
		{
			// fio strip_blank_end cuts a line at its first ';' or '#'; fio's
			// own examples rely on it ("thread=1 ; have each copy ...").
			"inline comments", "[j] ; the job\nnumjobs=2  ; run two\nbs=8k# eight\n",
			func(t *testing.T, js JobSpec) {
				assert.Equal(t, "j", js.Name)
				assert.Equal(t, 2, js.NumJobs)
				assert.Equal(t, [2]int64{8192, 8192}, js.BS)
			},
		},
		{"no final newline", "[j]\nbs=8k", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [2]int64{8192, 8192}, js.BS)
		}},
		{"bare flags and bools mean 1", "[j]\nthread\ndirect\ntime_based\ngroup_reporting\n", func(t *testing.T, js JobSpec) {
			assert.True(t, js.Thread)
			assert.True(t, js.Direct)
			assert.True(t, js.TimeBased)
			assert.True(t, js.GroupReporting)
		}},
		{"flags and bools take 0 and 1", "[global]\nthread\ndirect=1\ntime_based=1\n[j]\nthread=0\ndirect=0\ntime_based=0\ngroup_reporting=1\n",
			func(t *testing.T, js JobSpec) {
				assert.False(t, js.Thread)
				assert.False(t, js.Direct)
				assert.False(t, js.TimeBased)
				assert.True(t, js.GroupReporting)
			}},
		{"buffered negates direct", "[j]\ndirect=1\nbuffered=1\n", func(t *testing.T, js JobSpec) {
			assert.False(t, js.Direct)
		}},
		{"buffered=0 means direct", "[j]\nbuffered=0\n", func(t *testing.T, js JobSpec) {
			assert.True(t, js.Direct)
		}},
		{"later option wins", "[j]\nbs=8k\nbs=16k\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [2]int64{16384, 16384}, js.BS)
		}},
		{"rwmixwrite sets the read share", "[j]\nrw=rw\nrwmixwrite=30\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, 70, js.RWMixRead)
		}},
		{"rwmixread after rwmixwrite wins", "[j]\nrwmixwrite=30\nrwmixread=10\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, 10, js.RWMixRead)
		}},
		{"section name kept as written", "[ my job ]\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, " my job ", js.Name)
		}},
		{"filename kept raw", "[j]\nfilename=/tmp/a:/tmp/b\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, "/tmp/a:/tmp/b", js.Filename)
		}},
		{"randseed default", "[j]\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, uint64(0x89), js.RandSeed)
			assert.False(t, js.RandSeedSet)
		}},
		{"randseed hex and zero", "[global]\nrandseed=0x10\n[j]\nrandseed=0\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, uint64(0), js.RandSeed)
			assert.True(t, js.RandSeedSet)
		}},
		{"size 0 means not given", "[j]\nsize=0\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, int64(0), js.Size)
		}},
		{"ints take size suffixes like fio", "[j]\niodepth=1k\nnumjobs=0x10\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, 16, js.NumJobs)
			assert.Equal(t, 1024, js.IODepth) // kept for a sync engine: see TestParseIODepth
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want(t, parseOne(t, tt.src))
		})
	}
}

func TestParseIODepth(t *testing.T) {
	// A synchronous engine keeps one IO in flight, but fio keeps iodepth
	// as given (its job line and latency line show it), whatever the
	// order of the options; the batching options follow it as for the
	// asynchronous engines.
	for _, tc := range []struct {
		src  string
		want [5]int
	}{
		{"[j]\niodepth=32\n", [5]int{32, 1, 1, 1, 32}},
		{"[j]\nioengine=sync\niodepth=32\n", [5]int{32, 1, 1, 1, 32}},
		{"[global]\niodepth=64\n[j]\nioengine=pvsync\n", [5]int{64, 1, 1, 1, 64}},
		{"[global]\nioengine=psync\n[j]\niodepth=8\n", [5]int{8, 1, 1, 1, 8}},
		{"[j]\nioengine=libaio\niodepth=8\nioengine=psync\niodepth_batch=4\niodepth_low=2\n", [5]int{8, 4, 1, 1, 2}},
		{"[j]\nioengine=psync\n", [5]int{1, 1, 1, 1, 1}},
	} {
		js := parseOne(t, tc.src)
		assert.Equal(t, tc.want, depths(js), tc.src)
	}
}

// The asynchronous engines keep iodepth; the batching options take fio's
// defaults and fixups (init.c fixup_options).
func TestParseAsyncDepths(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want [5]int // iodepth, batch_submit, complete_min, complete_max, low
	}{
		// fio's defaults: submit each IO at once, reap at least 1 and at
		// most iodepth_batch_complete_min, keep the queue full.
		{"[j]\nioengine=libaio\n", [5]int{1, 1, 1, 1, 1}},
		{"[j]\nioengine=libaio\niodepth=32\n", [5]int{32, 1, 1, 1, 32}},
		{"[j]\nioengine=io_uring\niodepth=1k\n", [5]int{1024, 1, 1, 1, 1024}},
		// iodepth_batch 0, or above iodepth, is iodepth.
		{"[j]\nioengine=libaio\niodepth=32\niodepth_batch_submit=0\n", [5]int{32, 32, 1, 1, 32}},
		{"[j]\nioengine=libaio\niodepth=32\niodepth_batch_submit=64\n", [5]int{32, 32, 1, 1, 32}},
		// complete_max below complete_min is complete_min; min may exceed
		// iodepth (fio clamps it to the depth in use when it reaps).
		{"[j]\nioengine=libaio\niodepth=32\niodepth_batch_complete_min=8\niodepth_batch_complete_max=4\n", [5]int{32, 1, 8, 8, 32}},
		{"[j]\nioengine=libaio\niodepth=4\niodepth_batch_complete_min=16\n", [5]int{4, 1, 16, 16, 4}},
		{"[j]\nioengine=libaio\niodepth=32\niodepth_batch_complete_max=32\n", [5]int{32, 1, 1, 32, 32}},
		// Polling: both 0.
		{"[j]\nioengine=io_uring\niodepth=8\niodepth_batch_complete_min=0\n", [5]int{8, 1, 0, 0, 8}},
		// iodepth_low 0, or above iodepth, is iodepth.
		{"[j]\nioengine=libaio\niodepth=16\niodepth_low=4\n", [5]int{16, 1, 1, 1, 4}},
		{"[j]\nioengine=libaio\niodepth=16\niodepth_low=0\n", [5]int{16, 1, 1, 1, 16}},
		{"[j]\nioengine=libaio\niodepth=16\niodepth_low=17\n", [5]int{16, 1, 1, 1, 16}},
		// [global] options are fixed up against each job's own iodepth.
		{"[global]\nioengine=libaio\niodepth_batch=16\niodepth_low=8\n[j]\niodepth=4\n", [5]int{4, 4, 1, 1, 4}},
	} {
		js := parseOne(t, tc.src)
		assert.Equal(t, tc.want, depths(js), tc.src)
	}
}

func TestParseEnv(t *testing.T) {
	env := mapEnv(map[string]string{"BS": "8k", "RW": "randread", "N": "3", "EMPTY": "", "SEMI": "a;b"})
	tests := []struct {
		name string
		src  string
		want func(*testing.T, JobSpec)
	}{
		{"defined", "[j]\nbs=${BS}\nrw=${RW}\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [2]int64{8192, 8192}, js.BS)
			assert.Equal(t, RWRandRead, js.RW)
		}},
		{"inside a value", "[j]\nfilename=/data/${RW}.${N}.dat\nsize=${N}m\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, "/data/randread.3.dat", js.Filename)
			assert.Equal(t, int64(3<<20), js.Size)
		}},
		{"undefined expands to nothing", "[j]\nfilename=/x${NOPE}y\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, "/xy", js.Filename)
		}},
		{"defined empty", "[j]\nfilename=a${EMPTY}b\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, "ab", js.Filename)
		}},
		{"unterminated is literal", "[j]\nfilename=a${BS\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, "a${BS", js.Filename)
		}},
		{"not recursive and after comment removal", "[j]\nfilename=${SEMI}\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, "a;b", js.Filename)
		}},
		{"in the option name too, as fio does", "[j]\n${RW}x=1\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs, err := Parse("env.fio", strings.NewReader(tt.src), env)
			if tt.want == nil {
				var pe *ParseError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, "randreadx", pe.Option)
				return
			}
			require.NoError(t, err)
			require.Len(t, jobs, 1)
			tt.want(t, jobs[0])
		})
	}

	t.Run("nil env is the process environment", func(t *testing.T) {
		t.Setenv("BLKSIM_TEST_BS", "64k")
		jobs, err := Parse("env.fio", strings.NewReader("[j]\nbs=${BLKSIM_TEST_BS}\n"), nil)
		require.NoError(t, err)
		assert.Equal(t, [2]int64{65536, 65536}, jobs[0].BS)
	})
	t.Run("undefined in a size is an error", func(t *testing.T) {
		_, err := Parse("env.fio", strings.NewReader("[j]\nbs=${NOPE}\n"), env)
		assert.ErrorIs(t, err, ErrBadValue)
	})
}

func TestParseSizes(t *testing.T) {
	// Source: fio parse.c (__get_mult_bytes, str_to_decimal) with the
	// default kb_base=1024. k/m/g/t/p with or without "b" are powers of
	// 1024; kib/mib/... are powers of 1000 (fio's documented "compatibility
	// mode" under kb_base); "ki" matches fio's "k" prefix so it is 1024.
	tests := []struct {
		in   string
		want int64
	}{
		{"1", 1},
		{"512", 512},
		{"512b", 512},
		{"4k", 4096},
		{"4K", 4096},
		{"4kb", 4096},
		{"4KB", 4096},
		{"4ki", 4096},
		{"4kib", 4000},
		{"4KiB", 4000},
		{"1m", 1 << 20},
		{"1M", 1048576},
		{"1mb", 1 << 20},
		{"1mib", 1000000},
		{"1MiB", 1000000},
		{"1g", 1 << 30},
		{"1G", 1073741824},
		{"1gb", 1 << 30},
		{"1gib", 1000000000},
		{"1t", 1 << 40},
		{"1tb", 1 << 40},
		{"1tib", 1000000000000},
		{"1p", 1 << 50},
		{"1pb", 1 << 50},
		{"1pib", 1000000000000000},
		{"0x1000", 4096},
		{"0X10", 16},
		{"8191p", 8191 << 50},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			js := parseOne(t, "[j]\nsize="+tt.in+"\nbs="+tt.in+"\n")
			assert.Equal(t, tt.want, js.Size)
			assert.Equal(t, [2]int64{tt.want, tt.want}, js.BS)
		})
	}
}

func TestParseTimes(t *testing.T) {
	// Source: fio parse.c get_mult_time; runtime and ramp_time are
	// is_seconds options, so a bare number is seconds.
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"10", 10 * time.Second},
		{"10s", 10 * time.Second},
		{"10S", 10 * time.Second},
		{"10sec", 10 * time.Second},
		{"250ms", 250 * time.Millisecond},
		{"250msec", 250 * time.Millisecond},
		{"250MS", 250 * time.Millisecond},
		{"100us", 100 * time.Microsecond},
		{"100usec", 100 * time.Microsecond},
		{"5m", 5 * time.Minute},
		{"5min", 5 * time.Minute},
		{"2h", 2 * time.Hour},
		{"1d", 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			js := parseOne(t, "[j]\nruntime="+tt.in+"\nramp_time="+tt.in+"\n")
			assert.Equal(t, tt.want, js.Runtime)
			assert.Equal(t, tt.want, js.RampTime)
		})
	}
}

func TestParseBS(t *testing.T) {
	tests := []struct {
		in   string
		want [2]int64
	}{
		{"8k", [2]int64{8192, 8192}},
		{"4k,8k", [2]int64{4096, 8192}},
		{"4k,8k,16k", [2]int64{4096, 8192}}, // trim size checked, not kept
		{",8k", [2]int64{4096, 8192}},       // empty read side keeps the default
		{"8k,", [2]int64{8192, 4096}},       // fio 3.33: a trailing comma sets reads only
		{"8k,,", [2]int64{8192, 4096}},
		{",,16k", [2]int64{4096, 4096}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			js := parseOne(t, "[j]\nbs="+tt.in+"\n")
			assert.Equal(t, tt.want, js.BS)
		})
	}
	t.Run("empty side keeps the inherited value", func(t *testing.T) {
		js := parseOne(t, "[global]\nbs=64k\n[j]\nbs=,8k\n")
		assert.Equal(t, [2]int64{65536, 8192}, js.BS)
	})
}

func TestRWMode(t *testing.T) {
	tests := []struct {
		in                   string
		mode                 RWMode
		str                  string
		random, read, writes bool
	}{
		{"read", RWRead, "read", false, true, false},
		{"write", RWWrite, "write", false, false, true},
		{"randread", RWRandRead, "randread", true, true, false},
		{"randwrite", RWRandWrite, "randwrite", true, false, true},
		{"rw", RWReadWrite, "rw", false, true, true},
		{"readwrite", RWReadWrite, "rw", false, true, true},
		{"randrw", RWRandRW, "randrw", true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			js := parseOne(t, "[j]\nrw="+tt.in+"\n")
			assert.Equal(t, tt.mode, js.RW)
			assert.Equal(t, tt.str, js.RW.String())
			assert.Equal(t, tt.random, js.RW.Random())
			assert.Equal(t, tt.read, js.RW.HasRead())
			assert.Equal(t, tt.writes, js.RW.HasWrite())
		})
	}
	assert.Equal(t, "RWMode(42)", RWMode(42).String())
	assert.Equal(t, "RWMode(-1)", RWMode(-1).String())
	assert.False(t, RWMode(42).HasRead() || RWMode(42).HasWrite() || RWMode(42).Random())
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		kind   error
		line   int
		option string
		msg    string // substring of Error()
	}{
		// Syntax.
		{"option before any section", "\n; c\nbs=4k\n[j]\n", ErrSyntax, 3, "bs", "outside of any section"},
		{"bare option before any section", "thread\n[j]\n", ErrSyntax, 1, "thread", "outside of any section"},
		{"unterminated header", "[global]\n[job\n", ErrSyntax, 2, "", `section header "[job" must end with "]"`},
		{"header with trailing text", "[job] x\n", ErrSyntax, 1, "", `must end with "]"`},
		{"empty header", "[]\n", ErrSyntax, 1, "", "empty section name"},
		{"blank header", "[  ]\n", ErrSyntax, 1, "", "empty section name"},
		{"missing option name", "[j]\n=4k\n", ErrSyntax, 2, "", "no option name"},
		{"only global", "[global]\nbs=4k\n", ErrSyntax, 2, "", "no job sections"},
		{"empty file", "", ErrSyntax, 1, "", "no job sections"},
		{"only comments", "; nothing\n\n", ErrSyntax, 2, "", "no job sections"},
		{"known option with space argument", "[j]\nbs 4k\n", ErrSyntax, 2, "bs", "expected bs=VALUE"},

		// Unknown options.
		{"unknown option", "[j]\nlatency_target\n", ErrUnknownOption, 2, "latency_target", `option "latency_target" is not modelled by blksim (fio's latency_target: `},
		{"unknown option with value", "[global]\n[j]\nflow=2\n", ErrUnknownOption, 3, "flow", `option "flow" is not modelled`},
		{"unknown option in global", "[global]\nverify_pattern=0xaa\n[j]\n", ErrUnknownOption, 2, "verify_pattern", "not modelled"},
		{"not an fio option", "[j]\nnumjob=2\n", ErrUnknownOption, 2, "numjob", `not an fio 3.33 job option; an option of an engine blksim does not model, or a typo; did you mean "numjobs"?`},
		{"option names are case-sensitive", "[j]\nBS=4k\n", ErrUnknownOption, 2, "BS", "not modelled"},
		{"include of a missing file", "[j]\ninclude other.fio\n", ErrBadValue, 2, "include", `bad value "other.fio"`},
		{"include without a file", "[j]\ninclude\n", ErrBadValue, 2, "include", "a value is required"},
		{"include with =", "[j]\ninclude=other.fio\n", ErrUnknownOption, 2, "include", `write "include FILE" without "="`},

		// Bad values.
		{"bad size", "[j]\nsize=lots\n", ErrBadValue, 2, "size", `bad value "lots"`},
		{"size suffix junk", "[j]\nsize=4kx\n", ErrBadValue, 2, "size", `unknown size suffix "kx"`},
		{"negative size", "[j]\nsize=-1\n", ErrBadValue, 2, "size", "must not be negative"},
		{"size overflow", "[j]\nsize=8192p\n", ErrBadValue, 2, "size", "too large"},
		{"size digits overflow", "[j]\nsize=99999999999999999999\n", ErrBadValue, 2, "size", "too large"},
		{"size with space", "[j]\nsize=4 k\n", ErrBadValue, 2, "size", "unknown size suffix"},
		{"size empty", "[j]\nsize=\n", ErrBadValue, 2, "size", "a value is required"},
		{"size bare", "[j]\nsize\n", ErrBadValue, 2, "size", "a value is required"},
		{"bs zero", "[j]\nbs=0\n", ErrBadValue, 2, "bs", "must be positive"},
		{"bs negative", "[j]\nbs=-4k\n", ErrBadValue, 2, "bs", "must not be negative"},
		{"bs zero write side", "[j]\nbs=4k,0\n", ErrBadValue, 2, "bs", "must be positive"},
		{"bs too many sides", "[j]\nbs=1k,2k,3k,4k\n", ErrBadValue, 2, "bs", "at most three"},
		{"bs only commas", "[j]\nbs=,\n", ErrBadValue, 2, "bs", "expected a positive size"},
		{"bs alias reports the alias", "[j]\nblocksize=x\n", ErrBadValue, 2, "blocksize", `bad value "x"`},
		{"bs bad hex", "[j]\nbs=0xzz\n", ErrBadValue, 2, "bs", `bad value "0xzz"`},
		{"bs hex with suffix", "[j]\nbs=0x10k\n", ErrBadValue, 2, "bs", `bad value "0x10k"`},
		{"bool true is not fio", "[j]\ndirect=true\n", ErrBadValue, 2, "direct", "expected 0 or 1"},
		{"bool 2", "[j]\ndirect=2\n", ErrBadValue, 2, "direct", "expected 0 or 1"},
		{"flag empty", "[j]\nthread=\n", ErrBadValue, 2, "thread", "expected 0 or 1"},
		{"flag negative", "[j]\ntime_based=-1\n", ErrBadValue, 2, "time_based", "expected 0 or 1"},
		{"numjobs zero", "[j]\nnumjobs=0\n", ErrBadValue, 2, "numjobs", "from 1 to 4096"},
		{"numjobs too many", "[j]\nnumjobs=4097\n", ErrBadValue, 2, "numjobs", "from 1 to 4096"},
		{"iodepth zero", "[j]\niodepth=0\n", ErrBadValue, 2, "iodepth", "integer from 1 to 2147483647"},
		{"iodepth huge", "[j]\niodepth=1t\n", ErrBadValue, 2, "iodepth", "integer from 1 to 2147483647"},
		{"rwmixread over 100", "[j]\nrwmixread=101\n", ErrBadValue, 2, "rwmixread", "from 0 to 100"},
		{"rwmixwrite over 100", "[j]\nrwmixwrite=200\n", ErrBadValue, 2, "rwmixwrite", "from 0 to 100"},
		{"rw unknown", "[j]\nrw=sideways\n", ErrBadValue, 2, "rw", "expected one of read, write"},
		{"rw is case-sensitive", "[j]\nrw=READ\n", ErrBadValue, 2, "rw", `bad value "READ"`},
		{"rw prefix", "[j]\nrw=readx\n", ErrBadValue, 2, "rw", `bad value "readx"`},
		{"rw bare", "[j]\nrw\n", ErrBadValue, 2, "rw", "a value is required"},
		{"runtime bad suffix", "[j]\nruntime=10y\n", ErrBadValue, 2, "runtime", `unknown time suffix "y"`},
		{"runtime negative", "[j]\nruntime=-5\n", ErrBadValue, 2, "runtime", "must not be negative"},
		{"runtime overflow", "[j]\nruntime=999999999d\n", ErrBadValue, 2, "runtime", "too long"},
		{"runtime hex", "[j]\nruntime=0x10\n", ErrBadValue, 2, "runtime", "unknown time suffix"},
		{"runtime decimal seconds", "[j]\nruntime=1.5s\n", ErrBadValue, 2, "runtime", "integer part in the option's default unit, 1s here (the suffix after the point is ignored); write the time in a smaller unit (1500ms for 1.5s)"},
		{"runtime decimal bare", "[j]\nruntime=0.25\n", ErrBadValue, 2, "runtime", "(250ms for 0.25)"},
		{"runtime decimal minutes", "[j]\nruntime=2.5m\n", ErrBadValue, 2, "runtime", "2s here"},
		{"runtime decimal milliseconds", "[j]\nruntime=10.5ms\n", ErrBadValue, 2, "runtime", "10s here"},
		{"thinktime decimal", "[j]\nthinktime=1.5ms\n", ErrBadValue, 2, "thinktime", "1us here"},
		{"ramp_time junk", "[j]\nramp_time=soon\n", ErrBadValue, 2, "ramp_time", `bad value "soon"`},
		{"timeout alias", "[j]\ntimeout=x\n", ErrBadValue, 2, "timeout", `bad value "x"`},
		{"randseed negative", "[j]\nrandseed=-1\n", ErrBadValue, 2, "randseed", "must not be negative"},
		{"filename empty", "[j]\nfilename=\n", ErrBadValue, 2, "filename", "a value is required"},
		{"name empty", "[j]\nname=\n", ErrBadValue, 2, "name", "a value is required"},
		{"ioengine empty", "[j]\nioengine=\n", ErrBadValue, 2, "ioengine", "a value is required"},
		{"iodepth_batch negative", "[j]\nioengine=libaio\niodepth_batch=-1\n", ErrBadValue, 3, "iodepth_batch", "must not be negative"},
		{"iodepth_batch_submit junk", "[j]\niodepth_batch_submit=many\n", ErrBadValue, 2, "iodepth_batch_submit", `bad value "many"`},
		{"iodepth_batch_complete_min bare", "[j]\niodepth_batch_complete_min\n", ErrBadValue, 2, "iodepth_batch_complete_min", "a value is required"},
		{"iodepth_batch_complete alias", "[j]\niodepth_batch_complete=1x\n", ErrBadValue, 2, "iodepth_batch_complete", "unknown size suffix"},
		{"iodepth_batch_complete_max huge", "[global]\n[j]\niodepth_batch_complete_max=1t\n", ErrBadValue, 3, "iodepth_batch_complete_max", "integer from 0 to 2147483647"},
		{"iodepth_low negative", "[j]\niodepth_low=-4\n", ErrBadValue, 2, "iodepth_low", "must not be negative"},

		// Not modelled.
		{"posixaio", "[global]\nioengine=posixaio\n[j]\n", ErrNotModelled, 2, "ioengine", `ioengine "posixaio" is not modelled by blksim`},
		{"io_uring spelling", "[j]\nioengine=iouring\n", ErrNotModelled, 2, "ioengine", `ioengine "iouring" is not modelled`},
		{"engine names are case-sensitive", "[j]\nioengine=LIBAIO\n", ErrNotModelled, 2, "ioengine", `ioengine "LIBAIO" is not modelled`},
		{"other engine", "[j]\nioengine=null\n", ErrNotModelled, 2, "ioengine", `ioengine "null" is not modelled`},
		{"rw modifier zero", "[j]\nrw=randread:0\n", ErrBadValue, 2, "rw", "number of IOs per random offset"},
		{"rw modifier junk", "[j]\nrw=write:4x\n", ErrBadValue, 2, "rw", "a size to skip after each IO"},
		{"trim", "[j]\nrw=randtrim\n", ErrNotModelled, 2, "rw", "trim is not modelled"},
		{"size percent over 100", "[j]\nsize=101%\n", ErrBadValue, 2, "size", "percentage must be from 1% to 100%"},
		{"bs percent", "[j]\nbs=10%\n", ErrBadValue, 2, "bs", "percentage is not allowed"},
		{"size zones", "[j]\nsize=8z\n", ErrNotModelled, 2, "size", "zones"},
		{"arithmetic", "[j]\nsize=(1024*)\n", ErrBadValue, 2, "size", "expected a number in expression"},
		{"keyword", "[j]\nnumjobs=$ncpus\n", ErrNotModelled, 2, "numjobs", "keyword $ncpus"},
		{"keyword without a host", "[j]\nsize=$mb_memory\n", ErrNotModelled, 2, "size", "keyword $mb_memory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs, err := Parse("bad.fio", strings.NewReader(tt.src), noEnv)
			require.Error(t, err)
			assert.Nil(t, jobs)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.ErrorIs(t, err, tt.kind)
			for _, other := range []error{ErrSyntax, ErrUnknownOption, ErrBadValue, ErrNotModelled} {
				if other != tt.kind {
					assert.NotErrorIs(t, err, other)
				}
			}
			assert.Equal(t, "bad.fio", pe.File)
			assert.Equal(t, tt.line, pe.Line)
			assert.Equal(t, tt.option, pe.Option)
			assert.Contains(t, err.Error(), tt.msg)
			assert.True(t, strings.HasPrefix(err.Error(), "bad.fio:"), err.Error())
		})
	}
}

// bwavgtime and iopsavgtime are whole milliseconds; unset, they are 0
// (fio's 500 ms).
func TestParseAvgTimes(t *testing.T) {
	js := parseOne(t, "[j]\nbwavgtime=250\niopsavgtime=1k\n")
	assert.Equal(t, 250*time.Millisecond, js.BWAvgTime)
	assert.Equal(t, 1024*time.Millisecond, js.IOPSAvgTime)
	js = parseOne(t, "[j]\n")
	assert.Zero(t, js.BWAvgTime+js.IOPSAvgTime)
}

func TestParseErrorFormat(t *testing.T) {
	tests := []struct {
		src  string
		want string
	}{
		{"[j]\nbs=abc\n", `bad.fio:2: option "bs": bad value "abc": expected a non-negative integer with an optional suffix k, m, g, t, p (1024-based) or kib, mib, ... (1000-based), e.g. 4k`},
		{"[j]\nioengine=posixaio\n", `bad.fio:2: option "ioengine": ioengine "posixaio" is not modelled by blksim (modelled: psync, sync, pvsync, libaio, io_uring)`},
		{"[j]\nioengine=libaio\niodepth_batch=x\n", `bad.fio:3: option "iodepth_batch": bad value "x": expected a non-negative integer with an optional suffix k, m, g, t, p (1024-based) or kib, mib, ... (1000-based), e.g. 4k`},
		{"[j]\n\nlatency_target=10ms\n", `bad.fio:3: option "latency_target" is not modelled by blksim (fio's latency_target: fio's latency-target search is not modelled)`},
		{"[j]\ncontinue_on_error=all\nignore_error=EIO,ENOSPC\n", `bad.fio:3: option "ignore_error" is not modelled by blksim (fio's ignore_error: continue_on_error goes on past fio's default non-fatal errors (EIO, EILSEQ) only; lists of other errnos to ignore are not modelled)`},
		{"[j]\nbsrange=1k-9k\nbs_unaligned\n", `bad.fio:3: option "bs_unaligned" is not modelled by blksim (fio's bs_unaligned: it lets bsrange draw IO sizes of any byte count, and blksim keeps data per 512-byte sector: buffered IO in smaller pieces is not modelled (direct IO of such sizes fails with EINVAL))`},
		{"[j]\ndirect=0\nblocksize_unaligned=1\n", `bad.fio:3: option "blocksize_unaligned" is not modelled by blksim (fio's blocksize_unaligned: it lets bsrange draw IO sizes of any byte count, and blksim keeps data per 512-byte sector: buffered IO in smaller pieces is not modelled (direct IO of such sizes fails with EINVAL))`},
		{"[j\n", `bad.fio:1: syntax error: section header "[j" must end with "]"`},
		{"bs=4k\n", `bad.fio:1: option "bs": syntax error: option outside of any section: add a [global] or [jobname] header above it`},
		{"[j]\nrw=randtrim\n", `bad.fio:2: option "rw": rw=randtrim: trim is not modelled by blksim`},
		{"[j]\nbwavgtime=0\n", `bad.fio:2: option "bwavgtime": bad value "0": expected an integer from 1 to 2147483647`},
		{"[j]\niopsavgtime=x\n", `bad.fio:2: option "iopsavgtime": bad value "x": expected a non-negative integer with an optional suffix k, m, g, t, p (1024-based) or kib, mib, ... (1000-based), e.g. 4k`},
		{"[j]\nrate=4k\nratemin=8k\n", `bad.fio:3: option "ratemin": bad value "8192": the read minimum rate exceeds rate=4096 (fio: minimum rate exceeds rate)`},
		{"[j]\nrate_iops=,10\nrate_iops_min=,20\n", `bad.fio:3: option "rate_iops_min": bad value "20": the write minimum rate exceeds rate_iops=10 (fio: minimum rate exceeds rate)`},
		{"[j]\nioengine=io_uring\nio_submit_mode=offload\n", `bad.fio:3: option "io_submit_mode": io_uring can't be used with offloaded submit (fio: use a sync engine)`},
	}
	for _, tt := range tests {
		_, err := Parse("bad.fio", strings.NewReader(tt.src), noEnv)
		require.Error(t, err)
		assert.Equal(t, tt.want, err.Error())
	}

	// The zero value and a nil Err still format.
	assert.Equal(t, ":0: <nil>", (&ParseError{}).Error())
	pe := &ParseError{File: "f", Line: 3, Option: "o", Err: ErrBadValue}
	assert.Equal(t, `f:3: option "o": bad value`, pe.Error())
	assert.Equal(t, ErrBadValue, pe.Unwrap())
}

func TestParseFile(t *testing.T) {
	path := filepath.Join("testdata", "jobfiles", "global-override.fio")
	jobs, err := ParseFile(path, mapEnv(map[string]string{"SIZE": "64m"}))
	require.NoError(t, err)
	require.Len(t, jobs, 3)

	seqRead, randWrite, mixed := jobs[0], jobs[1], jobs[2]
	assert.Equal(t, "seq-read", seqRead.Name)
	assert.Equal(t, path, seqRead.File)
	assert.Equal(t, RWRead, seqRead.RW)
	assert.Equal(t, int64(64<<20), seqRead.Size)
	assert.Equal(t, [2]int64{128 << 10, 128 << 10}, seqRead.BS)
	assert.True(t, seqRead.Direct)

	assert.Equal(t, "rand-write", randWrite.Name)
	assert.Equal(t, RWRandWrite, randWrite.RW)
	assert.Equal(t, [2]int64{4096, 4096}, randWrite.BS)
	assert.Equal(t, 4, randWrite.NumJobs)
	assert.Equal(t, 32, randWrite.IODepth)

	assert.Equal(t, "mixed", mixed.Name)
	assert.Equal(t, RWRandRW, mixed.RW)
	assert.Equal(t, 70, mixed.RWMixRead)
	assert.False(t, mixed.Direct)
	assert.Equal(t, 30*time.Second, mixed.Runtime)
	assert.True(t, mixed.TimeBased)
	assert.Equal(t, int64(64<<20), mixed.Size)
	assert.Equal(t, []int{8, 12, 18}, []int{seqRead.Line, randWrite.Line, mixed.Line})

	t.Run("error names the path", func(t *testing.T) {
		path := filepath.Join("testdata", "jobfiles", "not-modelled.fio")
		_, err := ParseFile(path, noEnv)
		var pe *ParseError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, path, pe.File)
		assert.Equal(t, 7, pe.Line)
		assert.Equal(t, "ioengine", pe.Option)
		assert.ErrorIs(t, err, ErrNotModelled)
	})
	t.Run("missing file is not a ParseError", func(t *testing.T) {
		_, err := ParseFile(filepath.Join("testdata", "jobfiles", "no-such.fio"), noEnv)
		require.Error(t, err)
		assert.ErrorIs(t, err, os.ErrNotExist)
		var pe *ParseError
		assert.False(t, errors.As(err, &pe))
	})
}

// errReader fails after returning its data.
type errReader struct{ data string }

func (r *errReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, errors.New("disk on fire")
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestParseReadError(t *testing.T) {
	_, err := Parse("r.fio", &errReader{data: "[j]\nbs=4k\n"}, noEnv)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "disk on fire")
	var pe *ParseError
	assert.False(t, errors.As(err, &pe))
}

func TestOptionTable(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range optionTable {
		require.NotNil(t, o.set, o.name)
		assert.NotEmpty(t, o.expect(), o.name)
		for _, n := range append([]string{o.name}, o.aliases...) {
			assert.False(t, seen[n], "%s listed twice", n)
			seen[n] = true
			got, ok := lookupOption(n)
			require.True(t, ok, n)
			assert.Equal(t, o.name, got.name)
		}
		if o.kind == kindInt {
			assert.LessOrEqual(t, o.min, o.max, o.name)
		}
	}
	assert.Panics(t, func() {
		buildOptionIndex([]option{{name: "a"}, {name: "b", aliases: []string{"a"}}})
	})
}

// examplesDir is fio's example job files, kept beside the repository
// (see ../shared/fio-examples/README.md).
const examplesDir = "../../shared/fio-examples"

func TestParseFioExamples(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(examplesDir, "*.fio"))
	require.NoError(t, err)
	if len(paths) == 0 {
		t.Skipf("no fio examples in %s", examplesDir)
	}
	kinds := map[string]int{}
	for _, path := range paths {
		jobs, err := ParseFile(path, noEnv)
		if err == nil {
			require.NotEmpty(t, jobs, path)
			kinds["ok"]++
			continue
		}
		var pe *ParseError
		require.ErrorAs(t, err, &pe, path)
		assert.Equal(t, path, pe.File)
		assert.Greater(t, pe.Line, 0, path)
		for _, k := range []error{ErrSyntax, ErrUnknownOption, ErrBadValue, ErrNotModelled} {
			if errors.Is(err, k) {
				kinds[k.Error()]++
			}
		}
		t.Logf("%v", err)
	}
	t.Logf("%d example files: %v", len(paths), kinds)
	// fio itself parses all of them, so none is a syntax error.
	assert.Zero(t, kinds[ErrSyntax.Error()])
}

func TestParseFioExamplesPinned(t *testing.T) {
	// A few examples whose outcome is pinned, so a change in how blksim
	// treats fio's own files is seen.
	tests := []struct {
		file   string
		kind   error // nil: parses
		line   int
		option string
	}{
		{file: "fio-seq-read.fio"},
		{file: "fio-rand-RW.fio"},
		{file: "aio-read.fio"},
		{file: "jesd219.fio"},
		{file: "rand-zones.fio"},
		{file: "latency-profile.fio", kind: ErrUnknownOption, line: 14, option: "latency_target"},
		{file: "cpuio.fio", kind: ErrNotModelled, line: 2, option: "ioengine"},
	}
	for _, tt := range tests {
		path := filepath.Join(examplesDir, tt.file)
		if _, err := os.Stat(path); err != nil {
			t.Skipf("%s: %v", path, err)
		}
		_, err := ParseFile(path, noEnv)
		if tt.kind == nil {
			assert.NoError(t, err, tt.file)
			continue
		}
		var pe *ParseError
		require.ErrorAs(t, err, &pe, tt.file)
		assert.ErrorIs(t, err, tt.kind, tt.file)
		assert.Equal(t, tt.line, pe.Line, tt.file)
		assert.Equal(t, tt.option, pe.Option, tt.file)
	}
}

// percentile_list as fio parses it: sorted, the print precision the most
// decimals written, the list ended at a 0, at most 20 values from 0 to
// 100.
func TestParsePercentileList(t *testing.T) {
	for _, tc := range []struct {
		val  string
		ps   []float64
		prec int
	}{
		{"99.9:50:99", []float64{50, 99, 99.9}, 1},
		{"50:99:99.9:99.995", []float64{50, 99, 99.9, 99.995}, 3},
		{"90", []float64{90}, 0},
		{"50:0:99", []float64{50}, 0},
		{"0", []float64{}, 0},
		{"100", []float64{100}, 0},
		{"50:", []float64{50}, 0}, // fio 3.33 runs it with the 50th alone
	} {
		js := parseOne(t, "[j]\npercentile_list="+tc.val+"\n")
		assert.Equal(t, tc.ps, js.Percentiles, tc.val)
		assert.Equal(t, tc.prec, js.PercentilePrecision, tc.val)
	}
	assert.Nil(t, parseOne(t, "[j]\n").Percentiles, "unset: fio's default list")
	for _, tc := range []struct{ val, msg string }{
		{"101", `101 is out of range`},
		{"-1", `-1 is out of range`},
		{"50:x", `"x" is not a number`},
		{"NaN", `"NaN" is not a number`},
		{strings.Repeat("1:", 20) + "1", `21 percentiles: fio takes at most 20`},
	} {
		_, err := Parse("p.fio", strings.NewReader("[j]\npercentile_list="+tc.val+"\n"), noEnv)
		require.Error(t, err, tc.val)
		assert.Contains(t, err.Error(), `p.fio:2: option "percentile_list": bad value`)
		assert.Contains(t, err.Error(), tc.msg)
	}
}

// A job file's options are reported in fio's parse order (sort_options:
// kb_base and lockfile first, filename last); the command line's as given.
func TestOptionOrderAsFioParses(t *testing.T) {
	js := parseOne(t, "[global]\nfilename=g\nbs=4k\n[j]\nfilename=f\nsize=1m\nkb_base=1000\nrw=read\n")
	assert.Equal(t, []OptionValue{{"kb_base", "1000"}, {"size", "1m"}, {"rw", "read"}, {"filename", "f"}}, js.Options)
	assert.Equal(t, []OptionValue{{"bs", "4k"}, {"filename", "g"}}, js.GlobalOptions)
	jobs, err := ParseCommandLine([]CommandLineOption{
		{Name: "name", Value: "x", HasValue: true}, {Name: "filename", Value: "f", HasValue: true},
		{Name: "size", Value: "1m", HasValue: true}}, ParseOptions{})
	require.NoError(t, err)
	assert.Equal(t, []OptionValue{{"name", "x"}, {"filename", "f"}, {"size", "1m"}}, jobs[0].Options)
}

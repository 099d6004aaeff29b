package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Parser tests for the fio 3.x options and syntax beyond the first
// version: include, sections, command-line jobs and overrides, and each
// option's value forms. Runner behaviour is in fioruns_test.go.

func TestParseInclude(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
		return p
	}
	write("sub/opts.fio", "bs=8k ; options only\nrw=randread\n")
	write("sub/jobs.fio", "[global]\nsize=2m\n[inc-a]\n\n[inc-b]\ninclude opts.fio\n")
	write("sub/bad.fio", "[j]\nbs=lots\n")
	write("self.fio", "[j]\ninclude self.fio\n")
	write("a.fio", "[j]\ninclude b.fio\n")
	write("b.fio", "include a.fio\n")
	main := write("main.fio", "[global]\nsize=1m\n[first]\ninclude sub/opts.fio\niodepth=2\ninclude sub/jobs.fio\n[last]\n")

	jobs, err := ParseFile(main, noEnv)
	require.NoError(t, err)
	require.Len(t, jobs, 4)
	first, a, b, last := jobs[0], jobs[1], jobs[2], jobs[3]
	assert.Equal(t, "first", first.Name)
	assert.Equal(t, [2]int64{8192, 8192}, first.BS, "options of an included file join the section")
	assert.Equal(t, RWRandRead, first.RW)
	assert.Equal(t, int64(1<<20), first.Size)
	assert.Equal(t, "inc-a", a.Name)
	assert.Equal(t, filepath.Join(dir, "sub", "jobs.fio"), a.File, "a job names the file it is defined in")
	assert.Equal(t, 3, a.Line)
	assert.Equal(t, int64(2<<20), a.Size, "an included [global] changes the jobs after it")
	assert.Equal(t, [2]int64{4096, 4096}, a.BS)
	assert.Equal(t, [2]int64{8192, 8192}, b.BS, "includes nest, relative to the including file")
	assert.Equal(t, "last", last.Name)
	assert.Equal(t, int64(2<<20), last.Size, "a [global] read from an include stays in effect")

	for _, tc := range []struct {
		src, file, msg string
		line           int
	}{
		{"[j]\ninclude sub/bad.fio\n", "sub/bad.fio", `bad value "lots"`, 2},
		{"[j]\ninclude self.fio\n", "self.fio", "include cycle", 2},
		{"[j]\ninclude a.fio\n", "b.fio", "include cycle: " + filepath.Join(dir, "a.fio") + " -> " + filepath.Join(dir, "b.fio") + " -> " + filepath.Join(dir, "a.fio"), 1},
		{"[j]\ninclude missing.fio\n", "top.fio", "missing.fio", 2},
		{"[j]\ninclude sub\n", "top.fio", "not a regular file", 2},
	} {
		top := write("top.fio", tc.src)
		_, err := ParseFile(top, noEnv)
		var pe *ParseError
		require.ErrorAs(t, err, &pe, tc.src)
		assert.Equal(t, filepath.Join(dir, tc.file), pe.File, tc.src)
		assert.Equal(t, tc.line, pe.Line, tc.src)
		assert.Contains(t, err.Error(), tc.msg)
	}

	t.Run("ReadFile hook", func(t *testing.T) {
		files := map[string]string{"x/inc.fio": "[from-hook]\nbs=16k\n"}
		opt := ParseOptions{Env: noEnv, ReadFile: func(p string) ([]byte, error) {
			d, ok := files[filepath.ToSlash(p)]
			if !ok {
				return nil, os.ErrNotExist
			}
			return []byte(d), nil
		}}
		jobs, err := ParseWith("x/job.fio", strings.NewReader("include inc.fio\n"), opt)
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		assert.Equal(t, [2]int64{16384, 16384}, jobs[0].BS)
	})
}

func TestParseGlobalAnywhere(t *testing.T) {
	jobs := parseString(t, "[a]\n[global]\nbs=8k\n[b]\nbs=16k\n[global]\nrw=write\n[c]\n[global-2]\nbs=32k\n[d]\n")
	require.Len(t, jobs, 4)
	assert.Equal(t, []int64{4096, 16384, 8192, 32768}, []int64{jobs[0].BS[0], jobs[1].BS[0], jobs[2].BS[0], jobs[3].BS[0]})
	assert.Equal(t, []RWMode{RWRead, RWRead, RWWrite, RWWrite}, []RWMode{jobs[0].RW, jobs[1].RW, jobs[2].RW, jobs[3].RW})
}

func TestParseCommandLine(t *testing.T) {
	opts := []CommandLineOption{
		{Name: "direct", Value: "1", HasValue: true},
		{Name: "size", Value: "16m", HasValue: true},
		{Name: "name", Value: "a", HasValue: true},
		{Name: "rw", Value: "randread", HasValue: true},
		{Name: "time_based"},
		{Name: "runtime", Value: "1", HasValue: true},
		{Name: "name", Value: "global", HasValue: true},
		{Name: "bs", Value: "64k", HasValue: true},
		{Name: "name", Value: "b", HasValue: true},
		{Name: "numjobs", Value: "$ncpus", HasValue: true},
	}
	jobs, err := ParseCommandLine(opts, ParseOptions{Host: Host{CPUs: 3}})
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	a, b := jobs[0], jobs[1]
	assert.Equal(t, "a", a.Name)
	assert.Equal(t, CommandLine, a.File)
	assert.Zero(t, a.Line)
	assert.True(t, a.Direct)
	assert.Equal(t, int64(16<<20), a.Size)
	assert.Equal(t, RWRandRead, a.RW)
	assert.True(t, a.TimeBased)
	assert.Equal(t, time.Second, a.Runtime)
	assert.Equal(t, [2]int64{4096, 4096}, a.BS, "a later global section changes later jobs only")
	assert.Equal(t, "b", b.Name)
	assert.Equal(t, [2]int64{65536, 65536}, b.BS)
	assert.True(t, b.Direct)
	assert.Equal(t, 3, b.NumJobs)
	// fio's JSON job options of a command-line job start with its name.
	assert.Equal(t, []OptionValue{{"name", "a"}, {"rw", "randread"}, {"time_based", ""}, {"runtime", "1"}}, a.Options)
	assert.Equal(t, []OptionValue{{"name", "b"}, {"numjobs", "3"}}, b.Options)

	for _, tc := range []struct {
		opts []CommandLineOption
		msg  string
	}{
		{[]CommandLineOption{{Name: "rw", Value: "read", HasValue: true}}, `command line: option "name": syntax error: no job`},
		{[]CommandLineOption{{Name: "name", Value: "x", HasValue: true}, {Name: "frob", Value: "1", HasValue: true}}, `command line: option "frob" is not modelled by blksim`},
		{[]CommandLineOption{{Name: "name", Value: "x", HasValue: true}, {Name: "bs", Value: "huge", HasValue: true}}, `command line: option "bs": bad value "huge"`},
		{[]CommandLineOption{{Name: "name"}}, `command line: option "name": bad value`},
	} {
		_, err := ParseCommandLine(tc.opts, ParseOptions{})
		var pe *ParseError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, CommandLine, pe.File)
		assert.Zero(t, pe.Line)
		assert.Contains(t, err.Error(), tc.msg)
	}
}

func TestParseOverrides(t *testing.T) {
	src := "[global]\nsize=1g\nruntime=60\n[a]\nsize=50%\nbs=8k\n[b]\nkb_base=1000\n"
	opt := ParseOptions{Env: noEnv, Overrides: []CommandLineOption{
		{Name: "runtime", Value: "100ms", HasValue: true},
		{Name: "size", Value: "16k", HasValue: true},
	}}
	jobs, err := ParseWith("o.fio", strings.NewReader(src), opt)
	require.NoError(t, err)
	for _, js := range jobs {
		assert.Equal(t, 100*time.Millisecond, js.Runtime, js.Name)
		assert.Zero(t, js.SizePercent, js.Name)
	}
	assert.Equal(t, int64(16<<10), jobs[0].Size, "an override replaces the job's own option")
	assert.Equal(t, [2]int64{8192, 8192}, jobs[0].BS, "and leaves the others")
	assert.Equal(t, int64(16000), jobs[1].Size, "the job's kb_base reads the override")
	// JSON "job options" report what ran: the overridden size is the
	// command line's, shown with the global options.
	assert.Equal(t, []OptionValue{{Name: "bs", Value: "8k"}}, jobs[0].Options)
	assert.Contains(t, jobs[0].GlobalOptions, OptionValue{Name: "size", Value: "16k"})

	for _, tc := range []struct {
		o   CommandLineOption
		msg string
	}{
		{CommandLineOption{Name: "name", Value: "x", HasValue: true}, "--name defines a job"},
		{CommandLineOption{Name: "nope", Value: "1", HasValue: true}, `command line: option "nope" is not modelled by blksim`},
		{CommandLineOption{Name: "size", Value: "x", HasValue: true}, `command line: option "size": bad value "x"`},
	} {
		_, err := ParseWith("o.fio", strings.NewReader(src), ParseOptions{Overrides: []CommandLineOption{tc.o}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.msg)
	}
	assert.Equal(t, "--size=16k", CommandLineOption{Name: "size", Value: "16k", HasValue: true}.String())
	assert.Equal(t, "--time_based", CommandLineOption{Name: "time_based"}.String())
}

func TestParseKeywordsAndBC(t *testing.T) {
	opt := ParseOptions{Env: noEnv, Host: Host{CPUs: 8, MemoryMB: 4096, PageSize: 16384}}
	for _, tc := range []struct {
		line string
		get  func(JobSpec) int64
		want int64
	}{
		{"numjobs=$ncpus", func(js JobSpec) int64 { return int64(js.NumJobs) }, 8},
		{"numjobs=$ncpus/3", func(js JobSpec) int64 { return int64(js.NumJobs) }, 2},
		{"numjobs=-$ncpus+10", func(js JobSpec) int64 { return int64(js.NumJobs) }, 2},
		{"numjobs=(1+$ncpus)*2", func(js JobSpec) int64 { return int64(js.NumJobs) }, 18},
		{"numjobs=2^$ncpus/64", func(js JobSpec) int64 { return int64(js.NumJobs) }, 4},
		{"size=$mb_memory", func(js JobSpec) int64 { return js.Size }, 4096},
		{"size=$pagesize", func(js JobSpec) int64 { return js.Size }, 16384},
		{"size=$mb_memory*1024*1024", func(js JobSpec) int64 { return js.Size }, 4 << 30},
		{"filename=/data/$ncpus", func(js JobSpec) int64 { return 0 }, 0},
	} {
		jobs, err := ParseWith("k.fio", strings.NewReader("[j]\n"+tc.line+"\n"), opt)
		if tc.line == "filename=/data/$ncpus" {
			// fio hands "/data/8" to bc too, which fails.
			assert.ErrorIs(t, err, ErrBadValue, tc.line)
			continue
		}
		require.NoError(t, err, tc.line)
		assert.Equal(t, tc.want, tc.get(jobs[0]), tc.line)
	}
	jobs, err := ParseWith("k.fio", strings.NewReader("[j]\nfilename=f$ncpus.dat\n"), opt)
	require.NoError(t, err)
	assert.Equal(t, "f8.dat", jobs[0].Filename, "no arithmetic, no bc")
	for _, bad := range []string{"size=$ncpus*4k", "size=$ncpus/0", "size=$ncpus*(2"} {
		_, err := ParseWith("k.fio", strings.NewReader("[j]\n"+bad+"\n"), opt)
		assert.ErrorIs(t, err, ErrBadValue, bad)
	}
	// Without host facts (Parse), $ncpus and $mb_memory are not known.
	_, err = Parse("k.fio", strings.NewReader("[j]\nnumjobs=$ncpus\n"), noEnv)
	assert.ErrorIs(t, err, ErrNotModelled)
	js := parseOne(t, "[j]\nsize=$pagesize*2\n")
	assert.Equal(t, int64(8192), js.Size, "$pagesize is 4096 by default")
}

func TestParseNewOptions(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want func(*testing.T, JobSpec)
	}{
		{"size percent", "size=30%\noffset=10%\noffset_increment=5%\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [4]int64{0, 30, 10, 5}, [4]int64{js.Size, int64(js.SizePercent), int64(js.OffsetPercent), int64(js.OffsetIncrementPercent)})
		}},
		{"size after percent", "size=30%\nsize=1m\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, int64(1<<20), js.Size)
			assert.Zero(t, js.SizePercent)
		}},
		{"offsets", "offset=1m\noffset_increment=64k\nfileoffset=2m\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, int64(2<<20), js.Offset)
			assert.Equal(t, int64(64<<10), js.OffsetIncrement)
		}},
		{"io_size filesize number_ios", "io_limit=8m\nfilesize=1m-4m\nnumber_ios=100\nfill_fs=1\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, int64(8<<20), js.IOSize)
			assert.Equal(t, [2]int64{1 << 20, 4 << 20}, js.FileSize)
			assert.Equal(t, int64(100), js.NumberIOs)
			assert.True(t, js.FillDevice)
		}},
		{"filesize reversed and fixed", "filesize=4m:1m\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [2]int64{1 << 20, 4 << 20}, js.FileSize)
		}},
		{"bsrange", "bsrange=4k-16k\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [2][2]int64{{4096, 16384}, {4096, 16384}}, js.BSRange)
		}},
		{"bsrange per direction, reversed", "blocksize_range=16k-4k,1k:2k\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [2][2]int64{{4096, 16384}, {1024, 2048}}, js.BSRange)
		}},
		{"bs after bsrange", "bsrange=4k-16k\nbs=,8k\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [2][2]int64{{4096, 16384}, {}}, js.BSRange)
			assert.Equal(t, int64(8192), js.BS[1])
		}},
		{"bssplit", "bssplit=4k/10:64k/50:32k/40\n", func(t *testing.T, js JobSpec) {
			// By increasing share, as fio's bssplit_ddir sorts them.
			want := []BSSplitEntry{{4096, 10}, {32768, 40}, {65536, 50}}
			assert.Equal(t, [2][]BSSplitEntry{want, want}, js.BSSplit)
		}},
		{"bssplit per direction with missing percentages", "bssplit=2k/50:4k/,8k:16k:32k/40\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, []BSSplitEntry{{2048, 50}, {4096, 50}}, js.BSSplit[0])
			assert.Equal(t, []BSSplitEntry{{8192, 30}, {16384, 30}, {32768, 40}}, js.BSSplit[1])
		}},
		{"bssplit one size", "bssplit=8k\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, []BSSplitEntry{{8192, 100}}, js.BSSplit[0])
		}},
		{"bssplit write only", "bssplit=,8k/100\n", func(t *testing.T, js JobSpec) {
			assert.Nil(t, js.BSSplit[0])
			assert.Equal(t, []BSSplitEntry{{8192, 100}}, js.BSSplit[1])
		}},
		{"blockalign", "ba=8k\nblockalign=,16k\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [2]int64{8192, 16384}, js.BlockAlign)
		}},
		{"rw random modifier", "rw=randread:8\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, RWRandRead, js.RW)
			assert.Equal(t, 8, js.SeqNr)
		}},
		{"rw sequential hole", "rw=write:4k\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, int64(4096), js.SeqAdd)
		}},
		{"rw backwards", "rw=read:-8k\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, int64(-8192), js.SeqAdd)
		}},
		{"rw resets the modifier", "rw=randread:8\nrw=randwrite\nrw_sequencer=identical\n", func(t *testing.T, js JobSpec) {
			assert.Zero(t, js.SeqNr)
			assert.True(t, js.RWSequencerIdentical)
		}},
		{"random options", "norandommap\npercentage_random=70,20\nrandom_generator=lfsr\nrandrepeat=0\n", func(t *testing.T, js JobSpec) {
			assert.True(t, js.NoRandomMap)
			assert.Equal(t, [2]int{30, 80}, js.PercentSequential)
			assert.Equal(t, "lfsr", js.RandomGenerator)
			assert.True(t, js.NoRandRepeat)
		}},
		{"zipf", "random_distribution=zipf:1.2\n", func(t *testing.T, js JobSpec) {
			d := Distribution{Kind: DistZipf, Param: 1.2}
			assert.Equal(t, [2]Distribution{d, d}, js.Distribution)
		}},
		{"zipf default and center", "random_distribution=zipf\nrandom_distribution=pareto:0.3:0.25\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, Distribution{Kind: DistPareto, Param: 0.3, Center: 0.25, HasCenter: true}, js.Distribution[0])
		}},
		{"normal", "random_distribution=normal:10\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, Distribution{Kind: DistNormal, Param: 10}, js.Distribution[1])
		}},
		{"zoned with a missing range", "random_distribution=zoned:50/5:30/15:20/\n", func(t *testing.T, js JobSpec) {
			d := Distribution{Kind: DistZoned, Zones: []Zone{{50, 5, 0}, {30, 15, 0}, {20, 80, 0}}}
			assert.Equal(t, [2]Distribution{d, d}, js.Distribution)
		}},
		{"zoned per direction", "random_distribution=zoned:50/5:30/15:20/,50/10:50/90\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, []Zone{{50, 10, 0}, {50, 90, 0}}, js.Distribution[1].Zones)
		}},
		{"zoned_abs", "random_distribution=zoned_abs:60/1m:40/2m\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, []Zone{{60, 0, 1 << 20}, {40, 0, 2 << 20}}, js.Distribution[0].Zones)
		}},
		{"random resets", "random_distribution=zipf\nrandom_distribution=random\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [2]Distribution{}, js.Distribution)
		}},
		{"rates", "rate=1m,500k\nrate_iops=,200\nratemin=1k\nrate_iops_min=5\nratecycle=500\nrate_process=poisson\nio_submit_mode=offload\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [2]int64{1 << 20, 500 << 10}, js.Rate)
			assert.Equal(t, [2]int64{0, 200}, js.RateIOPS)
			assert.Equal(t, [2]int64{1024, 1024}, js.RateMin)
			assert.Equal(t, [2]int64{5, 5}, js.RateIOPSMin)
			assert.Equal(t, 500*time.Millisecond, js.RateCycle)
			assert.True(t, js.RatePoisson)
			assert.True(t, js.SubmitOffload)
		}},
		{"rate read only", "rate=64k,\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, [2]int64{64 << 10, 0}, js.Rate)
		}},
		{"think and delay", "thinktime=2000\nthinktime_spin=1ms\nthinktime_blocks=4\nthinktime_blocks_type=issue\nstartdelay=2-5\nloops=3\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, 2*time.Millisecond, js.ThinkTime)
			assert.Equal(t, time.Millisecond, js.ThinkTimeSpin)
			assert.Equal(t, 4, js.ThinkTimeBlocks)
			assert.True(t, js.ThinkTimeIssue)
			assert.Equal(t, [2]time.Duration{2 * time.Second, 5 * time.Second}, js.StartDelay)
			assert.Equal(t, 3, js.Loops)
		}},
		{"groups", "stonewall\nnew_group\nexitall\nexit_what=all\ndescription=a job\n", func(t *testing.T, js JobSpec) {
			assert.True(t, js.Stonewall && js.NewGroup && js.ExitAll)
			assert.Equal(t, "all", js.ExitWhat)
			assert.Equal(t, "a job", js.Description)
		}},
		{"verify", "verify=crc32c-intel\ndo_verify=0\nverify_only\nverify_fatal=1\nverify_backlog=32\nverify_backlog_batch=8\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, "crc32c-intel", js.Verify)
			assert.True(t, js.NoDoVerify && js.VerifyOnly && js.VerifyFatal)
			assert.Equal(t, int64(32), js.VerifyBacklog)
			assert.Equal(t, int64(8), js.VerifyBacklogBatch)
		}},
		{"verify 0", "verify=md5\nverify=0\n", func(t *testing.T, js JobSpec) {
			assert.Empty(t, js.Verify)
		}},
		{"files", "directory=/mnt/x\nfilename_format=f.$jobnum\nnrfiles=1\nthreads=4\ncreate_serialize=0\n", func(t *testing.T, js JobSpec) {
			assert.Equal(t, "/mnt/x", js.Directory)
			assert.Equal(t, "f.$jobnum", js.FilenameFormat)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want(t, parseOne(t, "[j]\n"+tt.src))
		})
	}
}

func TestParseNewOptionErrors(t *testing.T) {
	tests := []struct {
		src  string
		kind error
		opt  string
		msg  string
	}{
		{"bssplit=4k/60:8k/60:16k:32k", ErrBadValue, "bssplit", "more than 100%"},
		{"bssplit=0/100", ErrBadValue, "bssplit", "positive"},
		{"bssplit=4k/x", ErrBadValue, "bssplit", "not an integer"},
		{"bsrange=4k", ErrBadValue, "bsrange", "expected a range"},
		{"random_distribution=zoned:60/10:30/20:8/30", ErrBadValue, "random_distribution", "add up to 98"},
		{"random_distribution=zoned:50/5:30/15:30/", ErrBadValue, "random_distribution", "more than 100%"},
		{"random_distribution=zipf:1", ErrBadValue, "random_distribution", "different from 1.0"},
		{"random_distribution=pareto:1", ErrBadValue, "random_distribution", "between 0 and 1"},
		{"random_distribution=normal:100", ErrBadValue, "random_distribution", "below 100"},
		{"random_distribution=zipf:1.2:1.5", ErrBadValue, "random_distribution", "center"},
		{"random_distribution=gauss", ErrNotModelled, "random_distribution", "gauss"},
		{"random_distribution=uniform", ErrBadValue, "random_distribution", "expected random"},
		{"percentage_random=101", ErrBadValue, "percentage_random", "0 to 100"},
		{"random_generator=mt", ErrBadValue, "random_generator", "lfsr"},
		{"rw_sequencer=random", ErrBadValue, "rw_sequencer", "identical"},
		{"rate_process=burst", ErrBadValue, "rate_process", "poisson"},
		{"exit_what=some", ErrBadValue, "exit_what", "stonewall"},
		{"thinktime_blocks=0", ErrBadValue, "thinktime_blocks", "integer from 1 to 2147483647"},
		{"thinktime=1y", ErrBadValue, "thinktime", "microseconds if none"},
		{"startdelay=a-b", ErrBadValue, "startdelay", `bad value "a"`},
		{"verify=sha9", ErrBadValue, "verify", "crc32c"},
		{"verify=pattern", ErrNotModelled, "verify", "stamps"},
		{"kb_base=1001", ErrBadValue, "kb_base", "1024 or 1000"},
		{"filesize=0", ErrBadValue, "filesize", "positive"},
		{"nrfiles=2\nfill_device=1", ErrNotModelled, "nrfiles", "fill_device"},
		{"directory=/a:/b", ErrNotModelled, "directory", "several directories"},
		{"io_submit_mode=thread", ErrBadValue, "io_submit_mode", "offload"},
		{"size=2z", ErrNotModelled, "size", "zones"},
		{"io_size=50%", ErrNotModelled, "io_size", "percentage"},
		{"offset=0%", ErrBadValue, "offset", "1% to 100%"},
		{"wait_for=nobody", ErrBadValue, "wait_for", "no job named"},
		{"wait_for=j", ErrBadValue, "wait_for", "itself"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			pe := requireOptionError(t, tt.src, tt.kind, tt.opt, tt.msg)
			assert.Equal(t, 2, pe.Line)
		})
	}
	// wait_for names an earlier job, as fio requires.
	jobs := parseString(t, "[a]\n[b]\nwait_for=a\n")
	assert.Equal(t, "a", jobs[1].WaitFor)
	_, err := Parse("e.fio", strings.NewReader("[a]\nwait_for=b\n[b]\n"), noEnv)
	assert.ErrorContains(t, err, "waitee job b unknown")
}

func TestUnknownOptionMessages(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"sync", "fio's sync: O_SYNC/O_DSYNC writes need a flush model"},
		{"log_compression", "fio's log_compression: fio's in-memory compression of its logs"},
		{"cpus_allowed_policy", "fio's cpus_allowed_policy: CPU affinity is not modelled"},
		{"hostname", "fio's hostname: an fio option blksim does not simulate"},
		{"iodepht", `did you mean "iodepth"?`},
		{"zzzz", "not an fio 3.33 job option"},
	} {
		assert.Contains(t, unknownOption(tc.name).Error(), tc.want, tc.name)
	}
	// Every name the reasons give that is not a pattern is an fio option,
	// or a newer fio's.
	for k := range notModelledReasons {
		if !strings.HasSuffix(k, "*") && !fioOptionNames[k] {
			assert.Contains(t, []string{"random_sequence_*"}, k, "%s is not an fio 3.33 option", k)
		}
		_, modelled := lookupOption(strings.TrimSuffix(k, "*"))
		assert.False(t, modelled, "%s is modelled but has a reason not to be", k)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/blksim/blksim/stack"
)

// TestMain fails the run if a simulated task's coroutine outlives its run.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// experimentsDir holds the shipped ext4-dio job and stack files.
const experimentsDir = "../../testdata/experiments/ext4-dio"

// result is what one run() call produced.
type result struct {
	status         int
	stdout, stderr string
}

// runCLI calls run with args and an environment holding only env.
func runCLI(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	lookup := func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
	status := run(args, &stdout, &stderr, lookup)
	return result{status, stdout.String(), stderr.String()}
}

// writeFile writes data to name in a new temporary directory and returns
// its path.
func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	return p
}

// smallJob is a short 4-job randrw run.
const smallJob = `[global]
size=64m
runtime=200ms
numjobs=4
rw=randrw
direct=1
filename=x
bs=4k
group_reporting

[small]
`

// ext4DIOJob is the shipped ext4-dio.fio with runtime=1 instead of 10.
const ext4DIOJob = `[global]
direct=1
iodepth=1
thread
rw=randrw
ioengine=psync
bs=${BS}
size=20G
numjobs=8
runtime=1
filename=ext4-dio.dat
group_reporting

[ext4-dio-randrw]
`

var deterministic = map[string]string{"BLKSIM_DETERMINISTIC": "1"}

func TestBadInputExitsTwo(t *testing.T) {
	job := writeFile(t, "job.fio", smallJob)
	unknownOpt := writeFile(t, "unknown.fio", "[global]\nsize=1m\n\n[j]\ndirect=1\nfrobnicate=3\n")
	badValue := writeFile(t, "badvalue.fio", "[j]\nsize=1m\nbs=huge\n")
	noJobs := writeFile(t, "empty.fio", "; nothing\n[global]\nsize=1m\n")
	buffered := writeFile(t, "buffered.fio", "[j]\nsize=1m\nbs=4k\nrw=read\nioengine=libaio\nfsync=4\n")
	noBS := filepath.Join(experimentsDir, "ext4-dio.fio")
	badStack := writeFile(t, "bad.toml", "fs = \"ext4\"\n[ext4]\niomap_dio = = true\n")
	unknownKeyStack := writeFile(t, "unknown.toml", "fs = \"ext4\"\n\n[host]\ncpu = 4\n")
	missingProfile := writeFile(t, "missingprof.toml", "device.profile = \"nope.toml\"\n")
	missing := filepath.Join(t.TempDir(), "missing.fio")

	tests := []struct {
		name string
		env  map[string]string
		args []string
		// want are substrings of stderr.
		want []string
	}{
		{name: "no args", args: nil, want: []string{"usage:"}},
		{name: "unknown command", args: []string{"frob"}, want: []string{`unknown command "frob"`}},
		{name: "unknown flag", args: []string{"run", "--frob", job}, want: []string{"frob"}},
		{name: "bad seed", args: []string{"run", "--seed", "abc", job}, want: []string{"seed", "abc"}},
		{name: "two job files", args: []string{"run", job, job}, want: []string{"one job file"}},
		{name: "missing job file", args: []string{"run", missing}, want: []string{missing}},
		{name: "unknown job option", args: []string{"run", unknownOpt}, want: []string{unknownOpt + ":6:", `"frobnicate"`}},
		{name: "bad job value", args: []string{"run", badValue}, want: []string{badValue + ":3:", `"bs"`, `"huge"`}},
		{name: "no job sections", args: []string{"run", noJobs}, want: []string{noJobs + ":"}},
		{name: "job the runner cannot run", args: []string{"run", buffered}, want: []string{buffered + ":6:", `"fsync"`}},
		{name: "unset BS in the shipped job", args: []string{"run", noBS}, want: []string{noBS + ":", `"bs"`}},
		{name: "set unknown key", args: []string{"run", "--set", "unknown.key=1", job}, want: []string{`"unknown.key"`, "--set unknown.key"}},
		{name: "set bad bool", args: []string{"run", "--set", "ext4.iomap_dio=maybe", job}, want: []string{`"ext4.iomap_dio"`, `"maybe"`}},
		{name: "set without =", args: []string{"run", "--set", "ext4.iomap_dio", job}, want: []string{"--set ext4.iomap_dio", "KEY=VALUE"}},
		{name: "set bad duration", args: []string{"run", "--set", "host.wake_latency=soon", job}, want: []string{`"host.wake_latency"`}},
		{name: "set unknown device key", args: []string{"run", "--set", "device.x=1", job}, want: []string{"--set device.x", `"x"`}},
		{name: "set host.cpus=0", args: []string{"run", "--set", "host.cpus=0", job}, want: []string{`"host.cpus"`}},
		{name: "set unknown profile", args: []string{"run", "--set", "device.profile=p9", job}, want: []string{`"p9"`, "p3600"}},
		{name: "missing stack file", args: []string{"run", "--stack", "/nonexistent/s.toml", job}, want: []string{"/nonexistent/s.toml"}},
		{name: "malformed stack file", args: []string{"run", "--stack", badStack, job}, want: []string{badStack + ":3:"}},
		{name: "unknown key in stack file", args: []string{"run", "--stack", unknownKeyStack, job}, want: []string{unknownKeyStack + ":4:", `"host.cpu"`}},
		{name: "missing profile in stack file", args: []string{"run", "--stack", missingProfile, job}, want: []string{missingProfile + ":1:", "nope.toml"}},
		{name: "xml output", args: []string{"run", "--output-format", "xml", job}, want: []string{`"xml"`, "normal, terse, json or json+"}},
		{name: "xml in an output list", args: []string{"run", "--output-format", "normal,xml", job}, want: []string{`"normal,xml"`}},
		{name: "empty output list entry", args: []string{"run", "--output-format", "terse,", job}, want: []string{`"terse,"`}},
		{name: "terse version 1", args: []string{"run", "--terse-version", "1", job}, want: []string{"--terse-version 1", "2, 3, 4 or 5"}},
		{name: "terse version not a number", args: []string{"run", "--terse-version=three", job}, want: []string{"terse-version"}},
		{name: "xml output, default job", args: []string{"run", "--output-format=xml"}, want: []string{`"xml"`}},
		{name: "eta not a mode", args: []string{"run", "--eta=sometimes", job}, want: []string{`--eta "sometimes"`, "always, never or auto"}},
		{name: "eta-interval not a time", args: []string{"run", "--eta-interval=soon", job}, want: []string{`--eta-interval "soon"`}},
		{name: "status-interval", args: []string{"run", "--status-interval=1s", job}, want: []string{`--status-interval "1s"`, "not modelled"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			if env == nil {
				env = deterministic
			}
			r := runCLI(t, env, tc.args...)
			assert.Equal(t, exitBadArgs, r.status, "stderr: %s", r.stderr)
			assert.Empty(t, r.stdout, "nothing may be written to stdout on bad input")
			for _, w := range tc.want {
				assert.Contains(t, r.stderr, w)
			}
			// One message, not a usage dump and a message.
			if len(tc.args) > 0 {
				assert.True(t, strings.HasPrefix(r.stderr, "blksim: "), "stderr %q", r.stderr)
				assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "stderr %q", r.stderr)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"run", "-h"}, {"run", "--help"},
		{"calibrate", "-h"}, {"calibrate", "--help"}, {"keys", "-h"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := runCLI(t, nil, args...)
			assert.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
			assert.Contains(t, r.stdout, "usage:")
			assert.Contains(t, r.stdout, "blksim run")
			assert.Empty(t, r.stderr)
		})
	}
}

// keys takes no arguments: anything else is bad input, not ignored.
func TestKeysRejectsArguments(t *testing.T) {
	for _, args := range [][]string{{"keys", "extra"}, {"keys", "--json"}, {"keys", "-h", "x"}} {
		r := runCLI(t, nil, args...)
		assert.Equal(t, exitBadArgs, r.status, "%v", args)
		assert.Empty(t, r.stdout, "%v", args)
		assert.Contains(t, r.stderr, "keys: no arguments expected", "%v", args)
	}
}

func TestKeysListsEveryKey(t *testing.T) {
	r := runCLI(t, nil, "keys")
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	assert.Empty(t, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.NotEmpty(t, lines)
	assert.Equal(t, []string{"KEY", "DEFAULT", "MEANING"}, strings.Fields(lines[0]))
	// The table ends at a blank line; a note on value syntax follows.
	end := slices.Index(lines, "")
	require.Positive(t, end, "a blank line before the note")
	assert.Contains(t, strings.Join(lines[end:], "\n"), "a bare number is nanoseconds")
	listed := map[string][]string{}
	for _, l := range lines[1:end] {
		f := strings.Fields(l)
		require.GreaterOrEqual(t, len(f), 3, "line %q", l)
		listed[f[0]] = f
	}
	for _, k := range stack.Keys() {
		f, ok := listed[k.Name]
		if assert.True(t, ok, "key %q not listed", k.Name) {
			assert.Equal(t, k.Default, f[1], "key %q", k.Name)
		}
	}
	assert.Contains(t, listed, "device.<key>")
	for _, k := range stack.PatternKeys() {
		assert.Contains(t, listed, k.Name)
	}
	assert.Len(t, listed, len(stack.Keys())+len(stack.PatternKeys())+1)
}

func TestDeterministicOutput(t *testing.T) {
	job := writeFile(t, "small.fio", smallJob)
	for _, format := range []string{"normal", "json"} {
		t.Run(format, func(t *testing.T) {
			runSeed := func(seed string) string {
				r := runCLI(t, deterministic, "run", "--seed", seed, "--output-format", format, job)
				require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
				require.Empty(t, r.stderr)
				require.NotEmpty(t, r.stdout)
				return r.stdout
			}
			a, b := runSeed("7"), runSeed("7")
			assert.Equal(t, a, b, "same job, stack and seed must give byte-identical output")
			c := runSeed("8")
			assert.NotEqual(t, a, c, "a different seed should give different output")
			if format == "json" {
				var v map[string]any
				require.NoError(t, json.Unmarshal([]byte(a), &v), "output is valid JSON")
				// Without the wall-clock figures.
				assert.NotContains(t, a, "wall_seconds")
				// Strip the seed itself: the figures must still differ.
				assert.NotEqual(t,
					strings.Replace(a, `"seed" : 7`, "", 1),
					strings.Replace(c, `"seed" : 8`, "", 1))
			}
		})
	}
}

// jsonDir is the part of fio's JSON a test reads.
type jsonDir struct {
	IOPS     float64 `json:"iops"`
	TotalIOs uint64  `json:"total_ios"`
	Lat      struct {
		Mean float64 `json:"mean"`
	} `json:"lat_ns"`
}

type jsonOut struct {
	Jobs []struct {
		Jobname string  `json:"jobname"`
		Error   int     `json:"error"`
		Read    jsonDir `json:"read"`
		Write   jsonDir `json:"write"`
	} `json:"jobs"`
	Blksim struct {
		Seed  uint64 `json:"seed"`
		Locks []struct {
			Name string `json:"name"`
		} `json:"locks"`
	} `json:"blksim"`
}

// TestLittlesLaw is an acceptance criterion: with 8 psync jobs at iodepth
// 1, each job always has exactly one IO in its syscall, so IOPS x mean
// latency summed over both directions is the job count.
func TestLittlesLaw(t *testing.T) {
	job := writeFile(t, "ext4-dio.fio", ext4DIOJob)
	env := map[string]string{"BLKSIM_DETERMINISTIC": "1", "BS": "4k"}
	for _, stackFile := range []string{
		"with-parallel-dio-reads.toml",
		"without-parallel-dio-reads.toml",
		"without-parallel-dio-reads-nolock.toml",
		"iomap.toml",
	} {
		t.Run(stackFile, func(t *testing.T) {
			r := runCLI(t, env, "run", "--stack", filepath.Join(experimentsDir, stackFile), "--output-format", "json", job)
			require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
			var out jsonOut
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
			require.Len(t, out.Jobs, 1, "group_reporting merges the 8 jobs")
			j := out.Jobs[0]
			assert.Equal(t, "ext4-dio-randrw", j.Jobname)
			assert.Zero(t, j.Error)
			require.NotZero(t, j.Read.TotalIOs)
			require.NotZero(t, j.Write.TotalIOs)
			inFlight := j.Read.IOPS*j.Read.Lat.Mean/1e9 + j.Write.IOPS*j.Write.Lat.Mean/1e9
			assert.InEpsilon(t, 8, inFlight, 0.02,
				"read_iops*read_lat + write_iops*write_lat = %.3f (read %.0f IOPS x %.1f us, write %.0f IOPS x %.1f us)",
				inFlight, j.Read.IOPS, j.Read.Lat.Mean/1e3, j.Write.IOPS, j.Write.Lat.Mean/1e3)
		})
	}
}

// TestDefaultRun is the README's main command: "blksim run" with no job
// file runs the embedded ext4-dio experiment at BS=4k.
func TestDefaultRun(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 10 s of IO; skipped with -short")
	}
	r := runCLI(t, deterministic, "run")
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	assert.Empty(t, r.stderr)
	out := r.stdout
	assert.True(t, strings.HasPrefix(out, "stack: ext4"), "output starts %q", out[:min(len(out), 80)])
	assert.Contains(t, out, "ext4-dio-randrw: (g=0): rw=randrw, bs=(R) 4096B-4096B")
	assert.Contains(t, out, "ioengine=psync, iodepth=1")
	assert.Contains(t, out, "Run status group 0")
	assert.Contains(t, out, "READ: bw=")
	assert.Contains(t, out, "WRITE: bw=")
	assert.Contains(t, out, "lock_stat")
	assert.Contains(t, out, "class name")
	assert.Contains(t, out, "contentions")
	assert.Contains(t, out, "ext4:i_rwsem:ext4-dio.dat")
	assert.Contains(t, out, "simulated IOs")
	assert.NotContains(t, out, "per wall second", "BLKSIM_DETERMINISTIC leaves out wall-clock figures")
}

// BS from the environment reaches the embedded job.
func TestDefaultRunBS(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 10 s of IO; skipped with -short")
	}
	r := runCLI(t, map[string]string{"BLKSIM_DETERMINISTIC": "1", "BS": "1M"}, "run", "--output-format", "json")
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	// The job file's [global] bs=${BS}, as fio reports it.
	assert.Contains(t, r.stdout, `"bs" : "1M"`)
}

func TestStackAndSetChangeTheRun(t *testing.T) {
	job := writeFile(t, "small.fio", smallJob)
	runWith := func(args ...string) jsonOut {
		r := runCLI(t, deterministic, append(append([]string{"run", "--output-format", "json"}, args...), job)...)
		require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
		var out jsonOut
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
		require.Len(t, out.Jobs, 1)
		return out
	}
	def := runWith()
	// The iomap stack file and the equivalent --set give the same run.
	iomap := runWith("--stack", filepath.Join(experimentsDir, "iomap.toml"))
	iomapSet := runWith("--set", "ext4.iomap_dio=true")
	assert.Equal(t, iomap, iomapSet)
	assert.NotEqual(t, def.Jobs[0].Read, iomap.Jobs[0].Read, "iomap locking changes the run")
	// --set overrides the stack file.
	back := runWith("--stack", filepath.Join(experimentsDir, "iomap.toml"), "--set", "ext4.iomap_dio=false")
	assert.Equal(t, def, back)
	// A device key override reaches the device.
	slow := runWith("--set", "device.read_time=700us")
	assert.Greater(t, slow.Jobs[0].Read.Lat.Mean, 2*def.Jobs[0].Read.Lat.Mean)
}

func TestNormalOutputFormat(t *testing.T) {
	job := writeFile(t, "small.fio", smallJob)
	r := runCLI(t, deterministic, "run", "--seed", "3", job)
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	assert.True(t, strings.HasPrefix(r.stdout, "stack: ext4 (parallel DIO reads) on nvme0n1 (p3600)\n"), "output starts %q", r.stdout[:min(len(r.stdout), 80)])
	assert.Contains(t, r.stdout, "small: (groupid=0, jobs=4)")
	assert.Contains(t, r.stdout, "Run status group 0 (all jobs):")
}

// --output-format json+ adds fio's clat_ns bins, whose counts add up to
// the IOs.
func TestJSONPlusBins(t *testing.T) {
	job := writeFile(t, "j.fio", "[j]\ndirect=1\nrw=randread\nsize=16m\nruntime=20ms\n")
	var out, errb strings.Builder
	require.Equal(t, 0, run([]string{"run", "--output-format", "json+", job}, &out, &errb, func(string) (string, bool) { return "", false }), errb.String())
	var res struct {
		Jobs []struct {
			Read struct {
				TotalIOs uint64 `json:"total_ios"`
				Clat     struct {
					Bins map[string]uint64 `json:"bins"`
				} `json:"clat_ns"`
			} `json:"read"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out.String()), &res))
	var n uint64
	for _, c := range res.Jobs[0].Read.Clat.Bins {
		n += c
	}
	require.Positive(t, res.Jobs[0].Read.TotalIOs)
	assert.Equal(t, res.Jobs[0].Read.TotalIOs, n)
}

// A DAX stack says so in its first line; sync and async engines both run
// on it (io_submit completes a DAX IO inside the call), and the block
// layer sees no IO.
func TestRunDAXStack(t *testing.T) {
	dir := "../../testdata/experiments/dax-reader-spin"
	for _, engine := range []string{"psync", "libaio"} {
		r := runCLI(t, deterministic, "run", "--stack", filepath.Join(dir, "reader-spin.toml"),
			"--runtime=5ms", "--ioengine="+engine, "--direct=1", filepath.Join(dir, "randrw.fio"))
		require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
		assert.True(t, strings.HasPrefix(r.stdout, "stack: xfs mounted with dax on pmem0 (pmem-nvdimm)\n"), "output starts %q", r.stdout[:min(len(r.stdout), 80)])
		assert.Contains(t, r.stdout, "ioengine="+engine)
		assert.Contains(t, r.stdout, "pmem0: ios=0/0")
		assert.Contains(t, r.stdout, "xfs:ilock:testfile-W")
	}
}

// The usage text names every flag of the run command (a flag left out,
// such as --layout, could only be found in the source).
func TestUsageNamesEveryRunFlag(t *testing.T) {
	var b bytes.Buffer
	usage(&b)
	for name := range runFlags {
		if name == "h" || name == "help" {
			continue
		}
		assert.Contains(t, b.String(), "--"+name, "usage lacks --%s", name)
	}
}

// A run that wrote through the page cache prints the writeback section
// (and "blksim"."writeback" in JSON); a direct-IO run has none.
func TestRunPrintsWriteback(t *testing.T) {
	buffered := writeFile(t, "buf.fio", "[w]\nrw=write\nbs=1m\nsize=8m\ndirect=0\nend_fsync=1\n")
	r := runCLI(t, nil, "run", buffered)
	require.Equal(t, 0, r.status, r.stderr)
	assert.Contains(t, r.stdout, "\nWriteback: thresholds background=")
	assert.Contains(t, r.stdout, "fsync=2048 (writepages calls:")
	r = runCLI(t, nil, "run", "--output-format", "json", buffered)
	require.Equal(t, 0, r.status, r.stderr)
	assert.Contains(t, r.stdout, `"writeback" : {`)

	direct := writeFile(t, "direct.fio", "[w]\nrw=write\nbs=1m\nsize=8m\ndirect=1\n")
	r = runCLI(t, nil, "run", direct)
	require.Equal(t, 0, r.status, r.stderr)
	assert.NotContains(t, r.stdout, "Writeback:")
}

// A run in which a job fails exits 1 and still writes its report, to
// --output FILE too (fio writes its report file whatever the jobs did),
// with the job's error in it; the IO error lines go to stderr.
func TestFailedJobReportWrittenToOutput(t *testing.T) {
	job := writeFile(t, "w.fio", "[w]\nfilename=f\nsize=80m\nbs=4k\nrw=write\nfallocate=none\n")
	out := filepath.Join(t.TempDir(), "out.txt")
	r := runCLI(t, map[string]string{"BLKSIM_DETERMINISTIC": "1"}, "run", "--set", "fs=ext4", "--set", "device.capacity=64m", "--output", out, job)
	assert.Equal(t, 1, r.status, r.stderr)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(data), "w: (groupid=0, jobs=1): err=28 (file:io_u.c:1876, func=io_u error, error=No space left on device)")
	assert.Contains(t, r.stderr, "fio: io_u error on file f: No space left on device")
	assert.Empty(t, r.stdout)
}

// --layout prints each file's extents after the results, then where the
// journal lies (none without one).
func TestRunLayout(t *testing.T) {
	job := writeFile(t, "l.fio", "[j]\nrw=write\nbs=64k\nsize=1m\ndirect=1\n")
	r := runCLI(t, nil, "run", "--layout", job)
	require.Equal(t, 0, r.status, r.stderr)
	i := strings.Index(r.stdout, "\nFile layout (extents: file offset -> device offset, KiB):\n  j.0.0: 1 extent\n           0 ->          0      1024\n")
	require.GreaterOrEqual(t, i, 0, r.stdout)
	assert.Regexp(t, `\n  journal \(jbd2\): device \d+-\d+\n`, r.stdout[i:])
	r = runCLI(t, nil, "run", "--layout", "--set", "ext4.journal=false", job)
	require.Equal(t, 0, r.status, r.stderr)
	assert.Contains(t, r.stdout, "  j.0.0: 1 extent")
	assert.NotContains(t, r.stdout, "journal (")
}

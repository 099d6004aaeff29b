package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/workload"
)

// jsonJobs returns jobname, job_runtime (ms) and IO counts of a JSON run.
type jsonJob struct {
	Jobname    string `json:"jobname"`
	Error      int    `json:"error"`
	JobRuntime int64  `json:"job_runtime"`
	Read       struct {
		TotalIOs uint64 `json:"total_ios"`
		Runtime  int64  `json:"runtime"`
	} `json:"read"`
	Write struct {
		TotalIOs uint64 `json:"total_ios"`
	} `json:"write"`
}

func jsonJobs(t *testing.T, out string) []jsonJob {
	t.Helper()
	var doc struct {
		Jobs []jsonJob `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	return doc.Jobs
}

func TestRunCommandLineJob(t *testing.T) {
	r := runCLI(t, deterministic, "run", "--name=cli", "--rw=randread", "--size=16m", "--direct=1", "--runtime=20ms", "--time_based", "--output-format", "json")
	require.Equal(t, exitOK, r.status, r.stderr)
	jobs := jsonJobs(t, r.stdout)
	require.Len(t, jobs, 1)
	assert.Equal(t, "cli", jobs[0].Jobname)
	// 20 ms and the IO in flight at the deadline: the read runtime rounded
	// up to a whole millisecond as fio's update_runtime does (fio's
	// familiar 60001msec), job_runtime cut as fio's mtime_since_now.
	assert.Equal(t, int64(21), jobs[0].Read.Runtime)
	assert.Equal(t, int64(20), jobs[0].JobRuntime)
	assert.Positive(t, jobs[0].Read.TotalIOs)

	// Global options before the first --name, several jobs, $ncpus from
	// the stack.
	r = runCLI(t, deterministic, "run", "--direct=1", "--size=1m", "--set", "host.cpus=3",
		"--name=a", "--rw=write", "--name=b", "--rw=randread", "--numjobs=$ncpus", "--output-format=json")
	require.Equal(t, exitOK, r.status, r.stderr)
	jobs = jsonJobs(t, r.stdout)
	require.Len(t, jobs, 4)
	assert.Equal(t, []string{"a", "b", "b", "b"}, []string{jobs[0].Jobname, jobs[1].Jobname, jobs[2].Jobname, jobs[3].Jobname})
	assert.Equal(t, uint64(256), jobs[0].Write.TotalIOs)

	// $mb_memory is pagecache.limit in MiB.
	r = runCLI(t, deterministic, "run", "--direct=1", "--set", "pagecache.limit=8m", "--name=m", "--size=$mb_memory*1024", "--output-format=json")
	require.Equal(t, exitOK, r.status, r.stderr)
	jobs = jsonJobs(t, r.stdout)
	assert.Equal(t, uint64(2), jobs[0].Read.TotalIOs, "8 KiB of 4 KiB reads")
}

func TestRunCommandLineOverrides(t *testing.T) {
	job := writeFile(t, "long.fio", "[global]\ndirect=1\nsize=1g\nruntime=60\ntime_based\n[a]\nrw=randread\n[b]\nrw=randwrite\nsize=10%\n")
	for _, args := range [][]string{
		{"run", "--runtime=30ms", "--size=16m", "--output-format=json", job},
		{"run", job, "--runtime=30ms", "--output-format", "json", "--size=16m"},
	} {
		r := runCLI(t, deterministic, args...)
		require.Equal(t, exitOK, r.status, r.stderr)
		for _, j := range jsonJobs(t, r.stdout) {
			// fio's total_run_time: whole ms, cut (the runtimes are 30.x ms).
			assert.Equal(t, int64(30), j.JobRuntime, j.Jobname)
		}
	}
	// The embedded default job takes overrides too.
	r := runCLI(t, deterministic, "run", "--runtime=20ms", "--numjobs=2", "--output-format=json")
	require.Equal(t, exitOK, r.status, r.stderr)
	for _, j := range jsonJobs(t, r.stdout) {
		assert.Equal(t, int64(40), j.JobRuntime, "group_reporting: the two jobs' 20.x ms summed")
	}
	// "--" ends the options.
	r = runCLI(t, deterministic, "run", "--runtime=20ms", "--size=16m", "--", job)
	require.Equal(t, exitOK, r.status, r.stderr)
}

func TestRunCommandLineErrors(t *testing.T) {
	job := writeFile(t, "j.fio", "[j]\ndirect=1\nsize=1m\n")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--frob=1", job}, []string{`command line: option "frob" is not modelled by blksim (`}},
		{[]string{"run", "--size=lots", job}, []string{`command line: option "size": bad value "lots"`}},
		{[]string{"run", "--name=x", job}, []string{"--name defines a job"}},
		{[]string{"run", "--name=x", "--rw=randread"}, []string{`command line: option "size": job cannot run: size= is required`}},
		{[]string{"run", "--rw=randread", "--name=x", "--latency_target=1ms"}, []string{`command line: option "latency_target" is not modelled by blksim (fio's latency_target`}},
		{[]string{"run", "--name=x", "--size=1m", "--ioengine=posixaio"}, []string{`command line: option "ioengine": ioengine "posixaio" is not modelled by blksim`}},
		{[]string{"run", "--name=x", "--size=1m", "--direct=1", "--numjobs=$mb_memory+1"}, []string{`command line: option "numjobs": bad value "4097"`}},
	} {
		r := runCLI(t, deterministic, tc.args...)
		assert.Equal(t, exitBadArgs, r.status, "%v: %s", tc.args, r.stderr)
		assert.Empty(t, r.stdout)
		for _, w := range tc.want {
			assert.Contains(t, r.stderr, w, tc.args)
		}
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, r.stderr)
	}
}

func TestSplitRunArgs(t *testing.T) {
	flags, fio, pos := splitRunArgs([]string{"--seed", "7", "-set=a=b", "--rw=read", "job.fio", "--time_based", "--output", "o.json", "--", "--x"})
	assert.Equal(t, []string{"--seed", "7", "-set=a=b", "--output", "o.json"}, flags)
	assert.Equal(t, []workload.CommandLineOption{{Name: "rw", Value: "read", HasValue: true}, {Name: "time_based"}}, fio)
	assert.Equal(t, []string{"job.fio", "--x"}, pos)
}

// size=N% of a file that does not exist yet, without filesize, fails the
// job as fio 3.33 does: "j: you need to specify size=" and err=22 on
// stderr, exit status 1; the other jobs run.
func TestRunSizePercentOfNewFile(t *testing.T) {
	job := writeFile(t, "pct.fio", "[global]\ndirect=1\nbs=4k\nrw=read\n[j]\nsize=50%\n[k]\nsize=64k\n")
	r := runCLI(t, deterministic, "run", "--output-format=json", job)
	require.Equal(t, exitFailed, r.status, r.stderr)
	assert.Contains(t, r.stderr, "j: you need to specify size=\n")
	assert.Contains(t, r.stderr, `job "j" failed: err=22 (file:filesetup.c:1155, func=total_file_size, error=Invalid argument)`)
	jobs := jsonJobs(t, r.stdout)
	require.Len(t, jobs, 2)
	assert.Equal(t, 22, jobs[0].Error)
	assert.Zero(t, jobs[0].Read.TotalIOs)
	assert.Zero(t, jobs[1].Error)
	assert.Equal(t, uint64(16), jobs[1].Read.TotalIOs)
}

// A direct-IO file larger than the device fails its job, as fio 3.33
// fails it (err=28 from the layout's write), with exit status 1 and the
// report written; the other job runs. It used to abort the run (exit 2).
func TestRunDirectFileWithoutRoom(t *testing.T) {
	job := writeFile(t, "nospc.fio", "[global]\ndirect=1\nbs=4k\nrw=randread\n[small]\nfilename=a\nsize=4m\n[huge]\nfilename=b\nsize=200m\n")
	r := runCLI(t, deterministic, "run", "--set", "device.capacity=64m", "--output-format=json", job)
	require.Equal(t, exitFailed, r.status, r.stderr)
	assert.Contains(t, r.stderr, `job "huge" failed: err=28 (file:filesetup.c:240, func=write, error=No space left on device)`)
	jobs := jsonJobs(t, r.stdout)
	require.Len(t, jobs, 2)
	assert.Zero(t, jobs[0].Error)
	assert.Equal(t, uint64(1024), jobs[0].Read.TotalIOs)
	assert.Equal(t, 28, jobs[1].Error)
	assert.Zero(t, jobs[1].Read.TotalIOs)

	// As fio 3.33 (a 64 MiB loop-mounted ext4): the layout fails in the
	// parent, whose two lines go to stderr with pid 0; the job did no IO,
	// so it has no report block and writes no logs.
	dir := t.TempDir()
	logged := writeFile(t, "nospc-log.fio", "[global]\ndirect=1\nbs=4k\nrw=randread\nwrite_lat_log="+filepath.Join(dir, "el")+"\n[small]\nfilename=a\nsize=4m\n[huge]\nfilename=b\nsize=200m\n")
	r = runCLI(t, deterministic, "run", "--set", "device.capacity=64m", logged)
	require.Equal(t, exitFailed, r.status, r.stderr)
	assert.Contains(t, r.stderr, "fio: ENOSPC on laying out file, stopping\nfio: pid=0, err=28/file:filesetup.c:240, func=write, error=No space left on device\n")
	assert.Contains(t, r.stdout, "\nsmall: (groupid=0")
	assert.NotContains(t, r.stdout, "\nhuge: (groupid=0")
	assert.NotContains(t, r.stdout, "fio: pid=")
	assert.FileExists(t, filepath.Join(dir, "el_lat.1.log"))
	assert.NoFileExists(t, filepath.Join(dir, "el_lat.2.log"))
}

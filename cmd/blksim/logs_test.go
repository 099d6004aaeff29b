package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/workload"
)

// logsJob asks for every kind of log: per job, shared (per_job_logs=0),
// in a subdirectory, with log_offset, and in windows.
const logsJob = `[global]
direct=1
bs=4k
size=64k
filename=data

[a]
rw=randrw
numjobs=2
group_reporting
write_bw_log
write_lat_log

[b]
rw=write
write_iops_log=sub/x
log_offset=1

[c]
rw=read
numjobs=2
per_job_logs=0
write_iops_log

[d]
rw=randread
ioengine=libaio
iodepth=4
write_hist_log
log_hist_msec=1

[e]
rw=write
size=64m
rate_iops=500
runtime=1s
time_based
log_avg_msec=250
write_lat_log=win
`

// TestRunWritesLogs: run writes fio's log files, under fio's names, in
// the current directory or where the option's value says; the same run
// writes the same bytes again, replacing the files.
func TestRunWritesLogs(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.Mkdir("sub", 0o755))
	require.NoError(t, os.WriteFile("job.fio", []byte(logsJob), 0o644))
	// A shared file is replaced, not appended to as fio 3.33 does.
	require.NoError(t, os.WriteFile("c_iops.log", []byte("old\n"), 0o644))

	r := runCLI(t, deterministic, "run", "job.fio")
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "Run status group 0")
	assert.Equal(t, []string{
		"a_bw.1.log", "a_bw.2.log", "a_clat.1.log", "a_clat.2.log", "a_lat.1.log", "a_lat.2.log",
		"a_slat.1.log", "a_slat.2.log", "c_iops.log", "d_clat_hist.6.log", "job.fio", "sub",
		"win_clat.7.log", "win_lat.7.log", "win_slat.7.log",
	}, dirNames(t, dir))
	assert.Equal(t, []string{"x_iops.3.log"}, dirNames(t, "sub"))

	read := func(name string) string {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		return string(data)
	}
	lineCount := func(name string) int { return strings.Count(read(name), "\n") }
	perIO := regexp.MustCompile(`^(\d+, \d+, [01], 4096, 0\n)+$`)
	for _, name := range []string{"a_bw.1.log", "a_bw.2.log", "a_clat.1.log", "a_lat.2.log"} {
		assert.Regexp(t, perIO, read(name), name)
		assert.Equal(t, 16, lineCount(name), name)
	}
	assert.Empty(t, read("a_slat.1.log"), "a sync engine logs no submission latency")
	assert.Regexp(t, `^(\d+, 1, 1, 4096, \d+, 0\n){16}$`, read("sub/x_iops.3.log"))
	assert.Regexp(t, `^(\d+, 1, 0, 4096, 0\n){32}$`, read("c_iops.log"), "both clones' entries")
	hist := strings.Split(strings.TrimSuffix(read("d_clat_hist.6.log"), "\n"), "\n")
	require.NotEmpty(t, hist)
	for _, l := range hist {
		f := strings.Split(l, ", ")
		assert.Len(t, f, 3+1856, "time, direction, size and fio's 1856 bins")
		assert.Equal(t, []string{"0", "4096"}, f[1:3])
	}
	// 250 ms windows: an entry per window, without size or offset.
	assert.Equal(t, "250, ", read("win_clat.7.log")[:5])
	assert.Regexp(t, `^(\d+, \d+, 1, 0, 0\n){4}$`, read("win_clat.7.log"))

	// The same run writes the same files.
	before := map[string]string{}
	for _, n := range dirNames(t, dir) {
		if strings.HasSuffix(n, ".log") {
			before[n] = read(n)
		}
	}
	r = runCLI(t, deterministic, "run", "job.fio")
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	for n, data := range before {
		assert.Equal(t, data, read(n), n)
	}
	assert.Len(t, dirNames(t, dir), 15, "no temporary file is left")
}

// TestRunLogErrors: a log file that cannot be written is bad input,
// found before the run: exit status 2, one message naming the job
// file, line and option, and nothing written.
func TestRunLogErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.Mkdir("j_bw.1.log", 0o755))
	require.NoError(t, os.WriteFile("plain", nil, 0o644))
	for _, tc := range []struct {
		name, opt, want string
	}{
		{"missing directory", "write_iops_log=nodir/x", `job.fio:4: option "write_iops_log": job cannot run: log file nodir/x_iops.1.log: directory nodir does not exist`},
		{"a directory in the way", "write_bw_log", `job.fio:4: option "write_bw_log": job cannot run: log file j_bw.1.log: is a directory`},
		{"a file as the directory", "write_lat_log=plain/x", `log file plain/x_lat.1.log: plain is not a directory`},
		{"not modelled", "log_store_compressed=1", `job.fio:4: option "log_store_compressed": log_store_compressed=1 is not modelled`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile("job.fio", []byte("[j]\nsize=64k\ndirect=1\n"+tc.opt+"\n"), 0o644))
			r := runCLI(t, deterministic, "run", "job.fio")
			assert.Equal(t, exitBadArgs, r.status)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, tc.want)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "one line: %q", r.stderr)
			assert.Equal(t, []string{"j_bw.1.log", "job.fio", "plain"}, dirNames(t, dir))
		})
	}
}

// TestWriteLogsAllOrNothing: when one file cannot be written, none is:
// the others stay as they were.
func TestWriteLogsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok_bw.1.log")
	require.NoError(t, os.WriteFile(ok, []byte("old\n"), 0o644))
	logs := []*workload.IOLog{
		{Path: ok, Entries: []workload.LogEntry{{TimeMS: 1, Value: 2, BS: 4096}}},
		{Path: filepath.Join(dir, "gone", "x_bw.2.log")},
	}
	err := writeLogs(logs)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "log file "+logs[1].Path)
	data, err := os.ReadFile(ok)
	require.NoError(t, err)
	assert.Equal(t, "old\n", string(data))
	assert.Equal(t, []string{"ok_bw.1.log"}, dirNames(t, dir), "no temporary file is left")

	// Logs with one path make one file, in order.
	logs[1].Path = ok
	logs[1].Entries = []workload.LogEntry{{TimeMS: 3, Value: 4, Dir: 1, BS: 4096}}
	require.NoError(t, writeLogs(logs))
	data, err = os.ReadFile(ok)
	require.NoError(t, err)
	assert.Equal(t, "1, 2, 0, 4096, 0\n3, 4, 1, 4096, 0\n", string(data))
	fi, err := os.Stat(ok)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
}

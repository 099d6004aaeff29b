package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// needTool skips the test when a blktrace tool is not installed.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (apt-get install -y blktrace): %v", name, err)
	}
	return p
}

// runTraced runs job with --blktrace into a temp dir and returns the dir
// and the JSON result.
func runTraced(t *testing.T, job string, sets ...string) (string, map[string]any) {
	t.Helper()
	dir := t.TempDir()
	jobFile := filepath.Join(dir, "job.fio")
	require.NoError(t, os.WriteFile(jobFile, []byte(job), 0o644))
	traceDir := filepath.Join(dir, "trace")
	args := []string{"run", "--blktrace", traceDir, "--output-format", "json"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	args = append(args, jobFile)
	var out, errb strings.Builder
	env := func(string) (string, bool) { return "", false }
	require.Equal(t, 0, run(args, &out, &errb, env), errb.String())
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out.String()), &res))
	return traceDir, res
}

// blkparse runs blkparse on the trace, writing a binary dump for btt, and
// returns its text output; it fails on anything written to stderr.
func blkparse(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command(needTool(t, "blkparse"), "-i", "nvme0n1", "-d", "dump.bin")
	cmd.Dir = dir
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), errb.String())
	require.Empty(t, errb.String(), "blkparse warnings")
	return out.String()
}

// A 1 MiB direct read on a device with max_hw_sectors_kb=128 is dispatched
// as 8 requests: blkparse shows 7 splits (X) and 8 dispatches (D) per read.
func TestBlktraceSplitsOneMiBRead(t *testing.T) {
	needTool(t, "blkparse")
	job := "[r]\ndirect=1\nrw=randread\nbs=1m\nsize=64m\nioengine=psync\nfilename=f\nruntime=20ms\n"
	dir, res := runTraced(t, job, "queue.max_hw_sectors_kb=128")
	text := blkparse(t, dir)
	reads := int(res["jobs"].([]any)[0].(map[string]any)["read"].(map[string]any)["total_ios"].(float64))
	require.Positive(t, reads)
	count := func(action string) int {
		re := regexp.MustCompile(`(?m)^\s*\d+,\d+\s+\d+\s+\d+\s+[\d.]+\s+\d+\s+` + action + `\s`)
		return len(re.FindAllString(text, -1))
	}
	// A read still in flight when the job stopped is traced but not
	// counted by fio; allow for it.
	assert.InDelta(t, 7*reads, count("X"), 7)
	assert.InDelta(t, 8*reads, count("D"), 8)
	assert.Equal(t, count("D"), count("C"))
}

// btt's D2C and Q2C averages agree with blksim's own within 1%, and its
// dispatch size histogram matches blksim's. (btt follows only bios that a
// single request completes, so the job avoids splits: every bio fits
// max_hw_sectors_kb.)
func TestBlktraceAgreesWithBtt(t *testing.T) {
	needTool(t, "blkparse")
	bttPath := needTool(t, "btt")
	job := "[global]\ndirect=1\nioengine=psync\nfilename=f\nsize=256m\nruntime=100ms\nthread\n" +
		"[rnd]\nrw=randrw\nbs=4k\nnumjobs=3\n[big]\nrw=randread\nbs=64k\n"
	dir, res := runTraced(t, job)
	blkparse(t, dir)
	cmd := exec.Command(bttPath, "-i", "dump.bin", "-o", "btt")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	avg := func(name string) float64 {
		data, err := os.ReadFile(filepath.Join(dir, "btt.avg"))
		require.NoError(t, err)
		m := regexp.MustCompile(`(?m)^` + name + `\s+\S+\s+(\S+)`).FindStringSubmatch(string(data))
		require.NotNil(t, m, "%s in btt output:\n%s", name, data)
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		return v * 1e9
	}
	dev := res["blksim"].(map[string]any)["devices"].([]any)[0].(map[string]any)
	assert.InEpsilon(t, dev["d2c_avg_ns"].(float64), avg("D2C"), 0.01)
	assert.InEpsilon(t, dev["q2c_avg_ns"].(float64), avg("Q2C"), 0.01)

	// btt's dispatch histogram (btt_dhist.dat): "SECTORS COUNT" per
	// bucket, # comment lines.
	hist := map[int64]uint64{}
	data, err := os.ReadFile(filepath.Join(dir, "btt_dhist.dat"))
	require.NoError(t, err, "btt wrote no dispatch histogram")
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		require.Len(t, f, 2, line)
		sectors, err1 := strconv.ParseInt(f[0], 10, 64)
		n, err2 := strconv.ParseUint(f[1], 10, 64)
		require.NoError(t, err1)
		require.NoError(t, err2)
		if n > 0 {
			hist[sectors*512] = n
		}
	}
	want := map[int64]uint64{}
	reqs := res["blksim"].(map[string]any)["requests"].(map[string]any)
	for _, dir := range []string{"read", "write"} {
		for k, v := range reqs[dir].(map[string]any)["sizes"].(map[string]any) {
			size, _ := strconv.ParseInt(k, 10, 64)
			want[size] += uint64(v.(float64))
		}
	}
	assert.Equal(t, want, hist)
}

// --blktrace errors: a DIR that cannot be a directory, or cannot be
// written, is a usage error (status 2) before the run; a run that fails
// leaves an earlier trace in DIR untouched and writes nothing there.
func TestBlktraceDirErrors(t *testing.T) {
	dir := t.TempDir()
	jobFile := filepath.Join(dir, "job.fio")
	require.NoError(t, os.WriteFile(jobFile, []byte("[w]\ndirect=1\nrw=write\nbs=4k\nsize=64k\nfilename=f\n"), 0o644))
	env := func(string) (string, bool) { return "", false }
	runIt := func(traceDir string, extra ...string) (int, string) {
		var out, errb strings.Builder
		args := append([]string{"run", "--blktrace", traceDir}, extra...)
		return run(append(args, jobFile), &out, &errb, env), errb.String()
	}

	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	status, msg := runIt(file)
	assert.Equal(t, exitBadArgs, status, msg)
	assert.Contains(t, msg, "--blktrace")

	if fi, err := os.Stat("/sys/kernel"); os.Geteuid() == 0 && err == nil && fi.IsDir() {
		// Root writes through mode bits; sysfs refuses it files.
		status, msg = runIt("/sys/kernel")
		assert.Equal(t, exitBadArgs, status, msg)
		assert.Equal(t, 1, strings.Count(msg, "permission denied"), "one message: %s", msg)
	}

	traceDir := filepath.Join(dir, "trace")
	require.NoError(t, os.Mkdir(traceDir, 0o755))
	old := filepath.Join(traceDir, "nvme0n1.blktrace.0")
	require.NoError(t, os.WriteFile(old, []byte("old"), 0o644))
	// The layout of the job's buffered file does not fit on the device:
	// the run fails after the trace was opened.
	status, msg = runIt(traceDir, "--size=2000g", "--direct=0", "--rw=read")
	assert.Equal(t, exitBadArgs, status, msg)
	entries, err := os.ReadDir(traceDir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing written beside the earlier trace")
	got, err := os.ReadFile(old)
	require.NoError(t, err)
	assert.Equal(t, "old", string(got))

	status, msg = runIt(traceDir)
	assert.Equal(t, exitOK, status, msg)
	st, err := os.Stat(old)
	require.NoError(t, err)
	assert.Greater(t, st.Size(), int64(3), "a completed run replaces the trace")
}

// The iostat figures are rates over the run's active time (until the last
// job ended or the last request completed), as fio's disk statistics are:
// a buffered write with end_fsync does its IO in a few milliseconds, and
// the engine's run on to the flusher's next wakeup, 5 s later, must not
// dilute them (it gave util=0.11% and 6.4 w/s; the trace shows the device
// busy for most of the run).
func TestIostatOverActiveTime(t *testing.T) {
	job := "[w]\nrw=write\nbs=4k\nsize=4m\nioengine=psync\nfilename=f\nend_fsync=1\n"
	_, res := runTraced(t, job)
	b := res["blksim"].(map[string]any)
	dev := b["devices"].([]any)[0].(map[string]any)
	eng := b["engine"].(map[string]any)
	require.Greater(t, eng["simulated_seconds"].(float64), 4.0, "the engine runs on to the flusher's wakeup")
	assert.Greater(t, dev["%util"].(float64), 20.0)
	ws := dev["w/s"].(float64)
	writes := float64(res["disk_util"].([]any)[0].(map[string]any)["write_ios"].(float64))
	assert.Greater(t, ws, 30*writes, "32 writes over a run of about 10 ms")
	assert.InDelta(t, dev["%util"].(float64), res["disk_util"].([]any)[0].(map[string]any)["util"].(float64), 0.01)
}

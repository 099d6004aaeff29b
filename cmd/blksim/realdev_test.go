package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev/realdev"
)

func TestRunDeviceBadSpec(t *testing.T) {
	for _, spec := range []string{"nvme0n1", "file:", "blk:sda", "file:x,size=12"} {
		var out, errOut bytes.Buffer
		status := run([]string{"run", "--device", spec, "--name=j", "--rw=read", "--size=1m", "--direct=1"}, &out, &errOut, noEnv)
		assert.Equal(t, exitBadArgs, status, spec)
		assert.Contains(t, errOut.String(), "bad device spec", spec)
	}
	var out, errOut bytes.Buffer
	assert.Equal(t, exitBadArgs, run([]string{"run", "--force", "--name=j", "--rw=read", "--size=1m"}, &out, &errOut, noEnv))
}

func TestRunDeviceFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dev.dat")
	var out, errOut bytes.Buffer
	status := run([]string{"run", "--device", "file:" + path + ",size=32m", "--name=j", "--rw=randrw", "--bs=4k",
		"--size=16m", "--direct=1", "--runtime=200ms", "--time_based=1", "--verify=crc32c"}, &out, &errOut, noEnv)
	if status != exitOK && strings.Contains(errOut.String(), "O_DIRECT") {
		t.Skipf("no O_DIRECT here: %s", errOut.String())
	}
	assert.Equal(t, exitOK, status, errOut.String())
	assert.Contains(t, out.String(), "real device file:"+path)
	assert.Contains(t, out.String(), "0 corrupt")
	// JSON carries the device's counters and verification result.
	out.Reset()
	errOut.Reset()
	status = run([]string{"run", "--device", "file:" + path + ",size=32m", "--name=j", "--rw=randrw", "--bs=4k",
		"--size=16m", "--direct=1", "--runtime=100ms", "--time_based=1", "--output-format=json"}, &out, &errOut, noEnv)
	require.Equal(t, exitOK, status, errOut.String())
	var doc struct {
		Blksim struct {
			Real struct {
				Reads, Writes uint64
				Enters        uint64 `json:"io_uring_enters"`
				Corrupt       uint64 `json:"corrupt_sectors"`
				Interrupted   bool
			} `json:"real_device"`
		}
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	rd := doc.Blksim.Real
	assert.Positive(t, rd.Reads+rd.Writes)
	assert.Positive(t, rd.Enters)
	assert.Zero(t, rd.Corrupt)
	assert.False(t, rd.Interrupted)
	// A file blksim did not create is refused without --force.
	other := filepath.Join(dir, "other.dat")
	assert.NoError(t, os.WriteFile(other, make([]byte, 1<<20), 0o644))
	out.Reset()
	errOut.Reset()
	status = run([]string{"run", "--device", "file:" + other, "--name=j", "--rw=read", "--size=512k", "--direct=1"}, &out, &errOut, noEnv)
	assert.Equal(t, exitBadArgs, status)
	assert.Contains(t, errOut.String(), "did not create")
}

func noEnv(string) (string, bool) { return "", false }

// calibrate on a temporary file writes a flat profile and a stack that
// build, and the stack predicts a simulated run.
func TestCalibrateFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dev.dat")
	out := filepath.Join(dir, "cal.toml")
	var stdout, errOut bytes.Buffer
	status := run([]string{"calibrate", "file:" + path + ",size=16m", "--out", out, "--time", "10ms", "--repeat", "1",
		"--region", "8m", "--set", "wall.idle_spin=50us"}, &stdout, &errOut, noEnv)
	if status != exitOK && strings.Contains(errOut.String(), "O_DIRECT") {
		t.Skipf("no O_DIRECT here: %s", errOut.String())
	}
	require.Equal(t, exitOK, status, errOut.String())
	for _, l := range append(realdev.FitLoads(1<<20), calCheckLoads...) {
		assert.Contains(t, stdout.String(), l.String())
	}
	assert.Contains(t, stdout.String(), "check (not fitted)")
	prof, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(prof), "kind = \"flat\"")
	assert.Contains(t, string(prof), "# Device profile fitted by blksim calibrate on file:"+path+",size=16777216 (--measure direct)")
	st, err := os.ReadFile(filepath.Join(dir, "cal.stack.toml"))
	require.NoError(t, err)
	assert.Contains(t, string(st), `device.profile = "cal.toml"`)
	assert.Contains(t, string(st), `host.syscall = "0"`)

	// The stack runs a simulated job on the profile.
	stdout.Reset()
	errOut.Reset()
	status = run([]string{"run", "--stack", filepath.Join(dir, "cal.stack.toml"), "--name=j", "--rw=randread", "--bs=16k",
		"--size=4m", "--direct=1", "--ioengine=libaio", "--iodepth=8", "--runtime=50ms", "--time_based=1"}, &stdout, &errOut, noEnv)
	require.Equal(t, exitOK, status, errOut.String())
	assert.Contains(t, stdout.String(), "read: IOPS=")

	// Through the engine, into the same file (blksim created it).
	stdout.Reset()
	errOut.Reset()
	status = run([]string{"calibrate", "file:" + path, "--out", out, "--measure", "engine", "--time", "10ms", "--repeat", "1",
		"--region", "8m"}, &stdout, &errOut, noEnv)
	require.Equal(t, exitOK, status, errOut.String())
	st, err = os.ReadFile(filepath.Join(dir, "cal.stack.toml"))
	require.NoError(t, err)
	assert.Contains(t, string(st), "--measure engine: blksim run --device")
}

func TestCalibrateBadArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"calibrate"}, "one TARGET expected"},
		{[]string{"calibrate", "file:/nonexistent/x.dat", "--time", "1ms"}, "--time 1ms"},
		{[]string{"calibrate", "file:/nonexistent/x.dat", "--repeat", "0"}, "--repeat 0"},
		{[]string{"calibrate", "file:/nonexistent/x.dat", "--measure", "fio"}, `--measure "fio"`},
		{[]string{"calibrate", "file:/nonexistent/x.dat", "--region", "1m"}, `--region "1m"`},
		{[]string{"calibrate", "file:/nonexistent/x.dat", "--set", "host.cpus=2"}, "only the wall clock's keys"},
		{[]string{"calibrate", "file:/nonexistent/x.dat", "--set", "wall.spin=soon"}, `key "wall.spin"`},
		{[]string{"calibrate", "disk:/dev/sda"}, "bad device spec"},
	} {
		var stdout, errOut bytes.Buffer
		assert.Equal(t, exitBadArgs, run(tc.args, &stdout, &errOut, noEnv), tc.args)
		assert.Contains(t, errOut.String(), tc.msg, tc.args)
	}
}

// calibrate --out FILE with a name not ending in .toml writes a stack
// file whose device.profile still names FILE (a bare name would be read
// as an embedded profile's).
func TestCalibrateOutWithoutTomlSuffix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dev.dat")
	out := filepath.Join(dir, "cal.prof")
	var stdout, errOut bytes.Buffer
	status := run([]string{"calibrate", "file:" + path + ",size=8m", "--out", out, "--time", "10ms", "--repeat", "1",
		"--region", "4m"}, &stdout, &errOut, noEnv)
	if status != exitOK && strings.Contains(errOut.String(), "O_DIRECT") {
		t.Skipf("no O_DIRECT here: %s", errOut.String())
	}
	require.Equal(t, exitOK, status, errOut.String())
	stackPath := filepath.Join(dir, "cal.prof.stack.toml")
	st, err := os.ReadFile(stackPath)
	require.NoError(t, err)
	assert.Contains(t, string(st), `device.profile = "./cal.prof"`)
	stdout.Reset()
	errOut.Reset()
	status = run([]string{"run", "--stack", stackPath, "--name=j", "--rw=randread", "--bs=4k",
		"--size=1m", "--direct=1", "--runtime=20ms", "--time_based=1"}, &stdout, &errOut, noEnv)
	require.Equal(t, exitOK, status, errOut.String())
	assert.Contains(t, stdout.String(), "read: IOPS=")
}

// calibrate checks both of its outputs before measuring: a stack file
// path that cannot be written is bad input, and the profile is not
// written either.
func TestCalibrateStackOutputChecked(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "cal.stack.toml"), 0o755))
	var stdout, errOut bytes.Buffer
	status := run([]string{"calibrate", "file:" + filepath.Join(dir, "dev.dat") + ",size=8m", "--out", filepath.Join(dir, "cal.toml"),
		"--time", "10ms", "--repeat", "1", "--region", "4m"}, &stdout, &errOut, noEnv)
	assert.Equal(t, exitBadArgs, status, errOut.String())
	assert.Contains(t, errOut.String(), "cal.stack.toml: is a directory")
	assert.NoFileExists(t, filepath.Join(dir, "cal.toml"))
	assert.NoFileExists(t, filepath.Join(dir, "dev.dat"))
}

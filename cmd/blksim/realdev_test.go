package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The corpus test runs the blksim command as a child process: the test
// binary itself, which runs main's run function instead of the tests when
// this variable is set.
const childEnv = "BLKSIM_TEST_RUN_MAIN"

func init() {
	if os.Getenv(childEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv))
	}
}

// fioExamplesDir holds fio's example job files, beside the repository
// (../shared/fio-examples from the repository's root).
const fioExamplesDir = "../../../shared/fio-examples"

// corpusTimeout bounds one file's run: every file must finish or fail
// within it.
const corpusTimeout = 2 * time.Minute

// cleanFailure is the one-line message of a file blksim does not model:
// the file, a line and the option or engine.
var cleanFailure = regexp.MustCompile(`^blksim: (\S+\.fio):(\d+): option "([^"]+)"`)

// TestFioExamplesCorpus runs every fio example job file with
// --runtime=100ms --size=16m. Each must either run (exit 0, with output)
// or fail at once with exit status 2 and one message naming the file, a
// line and the option or engine blksim does not model: no panic, no hang,
// no other failure. A file stopped only by buffered IO (fio's default) must
// run with --direct=1 added.
func TestFioExamplesCorpus(t *testing.T) {
	dir, err := filepath.Abs(fioExamplesDir)
	require.NoError(t, err)
	paths, err := filepath.Glob(filepath.Join(dir, "*.fio"))
	require.NoError(t, err)
	if len(paths) == 0 {
		t.Skipf("no fio examples in %s", fioExamplesDir)
	}
	if testing.Short() {
		t.Skip("runs about a hundred simulations; skipped with -short")
	}
	exe, err := os.Executable()
	require.NoError(t, err)

	var mu sync.Mutex
	ran := map[string]bool{}
	ranDirect := map[string]bool{}
	failed := map[string]string{}
	t.Run("files", func(t *testing.T) {
		for _, path := range paths {
			name := filepath.Base(path)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				// Each runs in a directory of its own: the log files
				// of examples with write_bw_log and the like go there.
				cwd := t.TempDir()
				status, stdout, msg := runChild(t, exe, cwd, "run", "--runtime=100ms", "--size=16m", path)
				assert.NotContains(t, msg, "internal error", "a panic")
				assert.NotContains(t, msg, "goroutine ", "a panic")
				switch status {
				case exitOK:
					assert.Empty(t, msg)
					assert.Contains(t, stdout, "Run status group 0")
					mu.Lock()
					ran[name] = true
					mu.Unlock()
				case exitBadArgs:
					assert.Empty(t, stdout)
					assert.Equal(t, 1, strings.Count(msg, "\n")+1, "one line: %q", msg)
					m := cleanFailure.FindStringSubmatch(msg)
					require.NotNil(t, m, "the message names file:line: option: %q", msg)
					assert.Equal(t, path, m[1])
					line, _ := strconv.Atoi(m[2])
					assert.Positive(t, line)
					mu.Lock()
					failed[name] = msg
					mu.Unlock()
					if m[3] != "direct" {
						break
					}
					// Buffered IO is what stops it: with --direct=1 it
					// must run.
					status, stdout, msg := runChild(t, exe, cwd, "run", "--runtime=100ms", "--size=16m", "--direct=1", path)
					assert.Equal(t, exitOK, status, "with --direct=1: %s", msg)
					assert.Contains(t, stdout, "Run status group 0")
					mu.Lock()
					ranDirect[name] = true
					mu.Unlock()
				default:
					t.Fatalf("%s: exit status %d (want 0 or 2): %s", name, status, msg)
				}
			})
		}
	})
	var names []string
	for n := range ran {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%d of %d fio examples run, %d fail cleanly; run: %s", len(ran), len(paths), len(failed), strings.Join(names, " "))
	t.Logf("%d of those stopped only by buffered IO run with --direct=1", len(ranDirect))
	// These exercise the options this version models; each must keep
	// running.
	for _, n := range []string{
		"aio-read.fio", "basic-verify.fio", "fixed-rate-submission.fio", "iometer-file-access-server.fio",
		"jesd219.fio", "poisson-rate-submission.fio", "rand-zones.fio", "ssd-steadystate.fio", "ssd-test.fio",
		"tiobench-example.fio",
	} {
		if _, err := os.Stat(filepath.Join(fioExamplesDir, n)); err == nil {
			assert.True(t, ran[n], "%s: %s", n, failed[n])
		}
	}
}

// runChild runs the blksim command (this test binary, see init) with args
// in directory dir within corpusTimeout and returns its exit status,
// stdout and stderr.
func runChild(t *testing.T, exe, dir string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), corpusTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1", "BLKSIM_DETERMINISTIC=1")
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%v did not finish within %v", args, corpusTimeout)
	status := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		status = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return status, stdout.String(), strings.TrimSpace(stderr.String())
}

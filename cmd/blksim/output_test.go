package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withOutput inserts "--output" FILE after the command name (run takes
// its flags before the job file).
func withOutput(args []string, flag ...string) []string {
	out := append([]string{args[0]}, flag...)
	return append(out, args[1:]...)
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := []string{}
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// --output FILE writes what stdout would have shown, and nothing to
// stdout, for each command.
func TestOutputFile(t *testing.T) {
	job := writeFile(t, "bs.fio", bsJob)
	env := map[string]string{"BLKSIM_DETERMINISTIC": "1", "BS": "4k"}
	commands := map[string][]string{
		"run":          {"run", job},
		"run json":     {"run", "--output-format", "json", job},
		"compare":      {"compare", job, "--variant", "a:", "--variant", "b:ext4.iomap_dio=true"},
		"compare json": {"compare", job, "--variant", "a:", "--output-format", "json"},
	}
	for name, args := range commands {
		t.Run(name, func(t *testing.T) {
			want := runCLI(t, env, args...)
			require.Equal(t, exitOK, want.status, "stderr: %s", want.stderr)
			dir := t.TempDir()
			out := filepath.Join(dir, "out.txt")
			r := runCLI(t, env, withOutput(args, "--output", out)...)
			require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
			assert.Empty(t, r.stdout)
			assert.Empty(t, r.stderr)
			data, err := os.ReadFile(out)
			require.NoError(t, err)
			assert.Equal(t, want.stdout, string(data))
			assert.Equal(t, []string{"out.txt"}, dirNames(t, dir), "no temporary file is left")
			fi, err := os.Stat(out)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())

			// An existing file is replaced.
			require.NoError(t, os.WriteFile(out, []byte("old contents that are longer than nothing\n"), 0o644))
			r = runCLI(t, env, withOutput(args, "--output="+out)...)
			require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
			data, err = os.ReadFile(out)
			require.NoError(t, err)
			assert.Equal(t, want.stdout, string(data))
		})
	}
}

// A reproduce run with rows off still completes its report: the file is
// written, and the exit status says the rows are off.
func TestOutputFileReproduceOff(t *testing.T) {
	root := experiment(t, "exp", map[string]string{
		"small.fio": bsJob, "stack.toml": smallStack, "published.toml": offPublished,
	})
	want := runCLI(t, deterministic, "reproduce", "--dir", root)
	require.Equal(t, exitFailed, want.status)
	out := filepath.Join(t.TempDir(), "repro.txt")
	r := runCLI(t, deterministic, "reproduce", "--dir", root, "--output", out)
	assert.Equal(t, exitFailed, r.status)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "exp/bad")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, want.stdout, string(data))
}

// On bad input or a failed run, --output FILE is not created (or, if it
// exists, not touched), and no temporary file is left beside it.
func TestOutputFileNotWrittenOnError(t *testing.T) {
	job := writeFile(t, "bs.fio", bsJob)
	badJob := writeFile(t, "bad.fio", "[j]\nsize=1m\nbs=huge\n")
	root := experiment(t, "exp", map[string]string{
		"small.fio": bsJob, "stack.toml": smallStack, "published.toml": "source = \"s\"\n",
	})
	env := map[string]string{"BLKSIM_DETERMINISTIC": "1", "BS": "4k"}
	tests := map[string][]string{
		"run bad job":              {"run", badJob},
		"run unset variable":       {"run", writeFile(t, "nobs.fio", bsJob)},
		"run bad key":              {"run", "--set", "host.frob=1", job},
		"compare bad variant":      {"compare", job, "--variant", "nocolon"},
		"compare bad sweep value":  {"compare", job, "--variant", "a:", "--sweep", "env.BS=4k,huge"},
		"reproduce bad experiment": {"reproduce", "--dir", root},
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			e := env
			if name == "run unset variable" {
				e = deterministic
			}
			for _, existing := range []bool{false, true} {
				dir := t.TempDir()
				out := filepath.Join(dir, "out.txt")
				if existing {
					require.NoError(t, os.WriteFile(out, []byte("keep me\n"), 0o644))
				}
				r := runCLI(t, e, withOutput(args, "--output", out)...)
				assert.Equal(t, exitBadArgs, r.status, "stderr: %s", r.stderr)
				assert.Empty(t, r.stdout)
				if existing {
					data, err := os.ReadFile(out)
					require.NoError(t, err)
					assert.Equal(t, "keep me\n", string(data))
					assert.Equal(t, []string{"out.txt"}, dirNames(t, dir))
				} else {
					assert.NoFileExists(t, out)
					assert.Empty(t, dirNames(t, dir))
				}
			}
		})
	}
}

// A bad --output path is bad input, found before anything runs.
func TestOutputBadPath(t *testing.T) {
	job := writeFile(t, "bs.fio", bsJob)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", job},
		{"compare", job, "--variant", "a:"},
		{"reproduce"},
	} {
		for _, out := range []string{filepath.Join(dir, "missing", "out.txt"), dir} {
			r := runCLI(t, deterministic, withOutput(args, "--output", out)...)
			assert.Equal(t, exitBadArgs, r.status, "%v: stderr: %s", args, r.stderr)
			assert.Contains(t, r.stderr, "--output "+out)
			assert.Empty(t, r.stdout)
		}
	}
	assert.Empty(t, dirNames(t, dir))
}

func TestWriteFileAtomicError(t *testing.T) {
	// The directory vanished between the check and the write: an error,
	// and nothing created.
	dir := filepath.Join(t.TempDir(), "gone")
	err := writeFileAtomic(filepath.Join(dir, "out.txt"), []byte("x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--output "+filepath.Join(dir, "out.txt"))
	assert.NoDirExists(t, dir)
}

// An --output path that cannot take a new file (here in /proc, where no
// one can create files, even root) is bad input found before the run,
// not a failure after it.
func TestOutputUnwritableDir(t *testing.T) {
	if fi, err := os.Stat("/proc/self"); err != nil || !fi.IsDir() {
		t.Skip("no /proc")
	}
	job := writeFile(t, "bs.fio", bsJob)
	for _, args := range [][]string{
		{"run", job},
		{"compare", job, "--variant", "a:"},
		{"reproduce", "ext4-dio"},
	} {
		out := "/proc/blksim-output-test.txt"
		r := runCLI(t, map[string]string{"BLKSIM_DETERMINISTIC": "1", "BS": "4k"}, withOutput(args, "--output", out)...)
		assert.Equal(t, exitBadArgs, r.status, "%v: stderr: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "--output "+out)
		assert.Contains(t, r.stderr, "cannot create a file in /proc")
		assert.Empty(t, r.stdout)
	}
	if os.Geteuid() != 0 {
		dir := t.TempDir()
		require.NoError(t, os.Chmod(dir, 0o555))
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		r := runCLI(t, deterministic, "run", "--output", filepath.Join(dir, "out.txt"), job)
		assert.Equal(t, exitBadArgs, r.status, "stderr: %s", r.stderr)
		assert.Contains(t, r.stderr, "permission denied")
	}
}

// --output through a symbolic link replaces the file the link points to
// and keeps the link; an existing FIFO (as /dev/stdout on a pipe, or
// /dev/null, which are not regular files) is written in place, never
// replaced by a regular file.
func TestOutputSymlinkAndFIFO(t *testing.T) {
	job := writeFile(t, "bs.fio", bsJob)
	env := map[string]string{"BLKSIM_DETERMINISTIC": "1", "BS": "4k"}
	want := runCLI(t, env, "run", job)
	require.Equal(t, exitOK, want.status, "stderr: %s", want.stderr)

	dir := t.TempDir()
	real := filepath.Join(dir, "real.txt")
	link := filepath.Join(dir, "link.txt")
	require.NoError(t, os.WriteFile(real, []byte("old\n"), 0o644))
	require.NoError(t, os.Symlink("real.txt", link))
	r := runCLI(t, env, "run", "--output", link, job)
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link is kept")
	data, err := os.ReadFile(real)
	require.NoError(t, err)
	assert.Equal(t, want.stdout, string(data))
	assert.ElementsMatch(t, []string{"real.txt", "link.txt"}, dirNames(t, dir))

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	// A non-blocking reader first, so that the CLI's open for writing
	// does not block; the report fits in the pipe's buffer.
	fd, err := syscall.Open(fifo, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	require.NoError(t, err)
	defer syscall.Close(fd)
	r = runCLI(t, env, "run", "--output", fifo, job)
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(fd, buf)
		if n <= 0 || err != nil {
			break
		}
		got = append(got, buf[:n]...)
	}
	assert.Equal(t, want.stdout, string(got))
	fi, err = os.Lstat(fifo)
	require.NoError(t, err)
	assert.Equal(t, os.ModeNamedPipe, fi.Mode().Type(), "the FIFO is not replaced")
}

// --output /dev/stdout with stdout redirected to a file, appending: the
// report is appended through the descriptor, and what the file held is
// kept (the file is neither replaced nor rewritten from offset 0).
func TestOutputDevStdoutRedirectedToFile(t *testing.T) {
	if _, err := os.Stat("/dev/stdout"); err != nil {
		t.Skip("no /dev/stdout on this system")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	job := writeFile(t, "bs.fio", bsJob)
	log := filepath.Join(t.TempDir(), "log.txt")
	require.NoError(t, os.WriteFile(log, []byte("previous log line\n"), 0o600))
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	cmd := exec.Command(exe, "run", "--output", "/dev/stdout", job)
	cmd.Env = append(os.Environ(), childEnv+"=1", "BLKSIM_DETERMINISTIC=1", "BS=4k")
	cmd.Stdout = f
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	require.NoError(t, f.Close())
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "previous log line\nstack: "), "%.80q", data)
	fi, err := os.Stat(log)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the same file, not a new one")
}

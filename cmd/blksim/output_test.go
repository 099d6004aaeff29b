package main

import (
	"os"
	"path/filepath"
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

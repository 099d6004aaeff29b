package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/blksim/blksim/stack"
	"github.com/blksim/blksim/workload"
)

// parseInterspersed parses fl over args, allowing flags after positional
// arguments ("compare JOB --variant ..."), and returns the positional
// arguments in order. Everything after "--" is positional.
func parseInterspersed(fl *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fl.Parse(args); err != nil {
			return nil, err
		}
		rest := fl.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at "--" (consumed) or at the first non-flag.
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// checkOutputPath reports bad input if --output names a file that cannot
// be written later: the path must not be a directory, and, unless it is an
// existing device, FIFO or the like (written in place), the directory the
// output will be renamed into must exist and take a new file. It is called
// before any simulation runs, so that an unwritable path fails at once
// with status 2 rather than after the run.
func checkOutputPath(cmd, path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return bad("%s: --output %s: is a directory", cmd, path)
	}
	target, special, err := outputTarget(path)
	if err != nil {
		return bad("%s: --output %s: %v", cmd, path, err)
	}
	if special {
		return nil
	}
	dir := filepath.Dir(target)
	fi, err := os.Stat(dir)
	if err != nil {
		return bad("%s: --output %s: %v", cmd, path, err)
	}
	if !fi.IsDir() {
		return bad("%s: --output %s: %s is not a directory", cmd, path, dir)
	}
	// Probe: the output is written as a temporary file in dir.
	probe, err := os.CreateTemp(dir, "."+filepath.Base(target)+".probe*")
	if err != nil {
		return bad("%s: --output %s: cannot create a file in %s: %v", cmd, path, dir, errors.Unwrap(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// stdFile returns os.Stdout or os.Stderr if path is the very file one of
// them has open (as /dev/stdout is, whatever it was redirected to), else
// nil.
func stdFile(path string) *os.File {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	for _, f := range []*os.File{os.Stdout, os.Stderr} {
		if sfi, err := f.Stat(); err == nil && os.SameFile(fi, sfi) {
			return f
		}
	}
	return nil
}

// outputTarget returns the file an --output path names: the path itself,
// or, if it is a symbolic link to a regular file, the file it points to
// (which is replaced, leaving the link in place). special reports an
// existing file that is not a regular file, such as /dev/stdout on a pipe
// or terminal, /dev/null or a FIFO: it cannot be replaced and is written
// in place.
func outputTarget(path string) (target string, special bool, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, false, nil
	}
	if err != nil {
		return "", false, err
	}
	if !fi.Mode().IsRegular() {
		return path, true, nil
	}
	target, err = filepath.EvalSymlinks(path)
	if err != nil {
		return "", false, err
	}
	return target, false, nil
}

// emit writes a finished output to stdout, or, when path is not empty, to
// the file path, atomically: the data goes to a temporary file in the same
// directory, which is then renamed over path, so that path holds either
// its old contents or the whole new output, never part of it. Callers call
// emit only once the output is complete.
func emit(stdout io.Writer, path string, data []byte) error {
	if path == "" {
		_, err := stdout.Write(data)
		return err
	}
	return writeFileAtomic(path, data)
}

// writeFileAtomic writes data to path through a temporary file and a
// rename; on error the temporary file is removed and path is untouched.
// The file gets mode 0644 (set explicitly: CreateTemp makes 0600 files).
// A symbolic link is followed, so the file it points to is replaced and
// the link kept; an existing file that is not a regular file (a device,
// a FIFO) cannot be replaced and is written in place.
func writeFileAtomic(path string, data []byte) (err error) {
	if std := stdFile(path); std != nil {
		// /dev/stdout redirected to a file (perhaps with >>): write
		// through the descriptor, at its offset and in its append mode,
		// instead of replacing the file or reopening it at offset 0.
		if _, err := std.Write(data); err != nil {
			return fmt.Errorf("--output %s: %w", path, err)
		}
		return nil
	}
	st, err := stageFile(path, data)
	if err == nil {
		err = st.commit()
	}
	if err != nil {
		return fmt.Errorf("--output %s: %w", path, err)
	}
	return nil
}

// stagedFile is a file's new contents written under a temporary name in
// the directory of the file they replace (target), waiting to be renamed
// over it.
type stagedFile struct{ tmp, target string }

// stageFile writes data to a temporary file (mode 0644) beside the file
// path names: path itself, or the regular file a symbolic link at path
// points to (outputTarget). An existing file that is not a regular file
// (a device, a FIFO) cannot be replaced: data is written to it in place
// at once, and the result is nil. On error nothing is left behind.
func stageFile(path string, data []byte) (st *stagedFile, err error) {
	target, special, err := outputTarget(path)
	if err != nil {
		return nil, err
	}
	if special {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return nil, err
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return nil, err
	}
	if err = tmp.Sync(); err != nil {
		return nil, err
	}
	if err = tmp.Chmod(0o644); err != nil {
		return nil, err
	}
	if err = tmp.Close(); err != nil {
		return nil, err
	}
	return &stagedFile{tmp: tmp.Name(), target: target}, nil
}

// commit renames the staged file over its target (nothing to do for
// nil, a file written in place).
func (s *stagedFile) commit() error {
	if s == nil {
		return nil
	}
	if err := os.Rename(s.tmp, s.target); err != nil {
		os.Remove(s.tmp)
		return err
	}
	return nil
}

// abort removes the staged file, leaving its target as it was.
func (s *stagedFile) abort() {
	if s != nil {
		os.Remove(s.tmp)
	}
}

// overlayEnv returns a ${VAR} lookup that finds vars first and then base
// (which may be nil: vars only).
func overlayEnv(base func(string) (string, bool), vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if v, ok := vars[k]; ok {
			return v, true
		}
		if base == nil {
			return "", false
		}
		return base(k)
	}
}

// checkBuild builds cfg once and throws the stack away, so that a bad
// device.* key or profile is reported as bad input before any simulation
// runs.
func checkBuild(cfg *stack.Config) error {
	st, err := stack.Build(cfg, 1)
	if err != nil {
		return usageError{err}
	}
	return st.Close()
}

// simulate runs specs on a fresh stack built from cfg with seed. Job errors
// the runner finds before running (and stack errors) are bad input; a job
// that ends with an error fails the run.
func simulate(cfg *stack.Config, specs []workload.JobSpec, seed uint64) (*workload.Result, error) {
	st, err := stack.Build(cfg, seed)
	if err != nil {
		return nil, usageError{err}
	}
	defer st.Close()
	res, err := workload.Run(st.Engine, st.FS, specs, workload.RunOptions{AppPerIO: st.AppPerIO, NoIntegrity: !st.IntegrityCheck})
	if err != nil {
		var pe *workload.ParseError
		if errors.As(err, &pe) || errors.Is(err, workload.ErrJob) {
			return nil, usageError{err}
		}
		return nil, err
	}
	addStackFigures(st, res)
	res.Seed = seed
	if err := failedJob(res); err != nil {
		return nil, err
	}
	return res, nil
}

// addStackFigures fills the figures of res that the stack, not the
// workload, holds after a run: lock statistics, CPU time and the device
// queue's counters.
func addStackFigures(st *stack.Stack, res *workload.Result) {
	res.Locks = st.Engine.LockStats()
	res.CPUs, res.SpinTime = st.Engine.CPUStats(), st.Engine.SpinTime()
	res.Disks = []workload.DiskResult{{Name: st.Device.Name(), Scheduler: st.Queue.Scheduler(),
		Stats: st.Queue.Stats(), Elapsed: time.Duration(res.Engine.ActiveSeconds * 1e9)}}
	if wb := st.FS.Writeback(); wb != nil {
		if s := wb.Stats(); s.TotalWritten() > 0 || s.Pauses > 0 {
			bg, limit := wb.Thresholds()
			res.Writeback = &workload.WritebackResult{Stats: s, Background: bg, Limit: limit, Bandwidth: wb.Bandwidth()}
		}
	}
	if js := st.FS.JournalStats(); js.Commits > 0 {
		res.Journal = &js
	}
}

// failedJob returns an error naming the first job of res that ended with
// an error, or nil. Like fio, a run in which a job failed exits non-zero.
// The error carries every job's IO error lines (fio's stderr lines).
func failedJob(res *workload.Result) error {
	var err *jobFailedError
	for _, g := range res.Groups {
		for _, j := range g.Jobs {
			if j.Error != 0 && err == nil {
				err = &jobFailedError{msg: fmt.Sprintf("job %q failed: err=%d (%s)", j.Name, j.Error, j.ErrorMsg)}
			}
		}
	}
	if err != nil {
		for _, g := range res.Groups {
			for _, j := range g.Jobs {
				err.log = append(err.log, j.ErrorLog...)
			}
		}
		return err
	}
	return nil
}

// jobFailedError is a run in which a job failed: log holds the lines fio
// would have printed on stderr about the jobs' IO errors, printed before
// the error itself.
type jobFailedError struct {
	log []string
	msg string
}

func (e *jobFailedError) Error() string { return e.msg }

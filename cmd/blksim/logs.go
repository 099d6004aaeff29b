package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/blksim/blksim/workload"
)

// logPathChecker returns the check run gives workload.CheckLogFiles: a
// log file must not be a directory, and, unless it is an existing
// device, FIFO or the like (written in place), the directory it goes to
// must exist and take a new file (it is written as a temporary file
// there, then renamed). Each directory is probed once.
func logPathChecker() func(path string) error {
	probed := map[string]error{}
	probe := func(dir string) error {
		if err, ok := probed[dir]; ok {
			return err
		}
		err := probeDir(dir)
		probed[dir] = err
		return err
	}
	return func(path string) error {
		if err := probe(filepath.Dir(path)); err != nil {
			return err
		}
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			return errors.New("is a directory")
		}
		target, special, err := outputTarget(path)
		if err != nil || special {
			return err
		}
		return probe(filepath.Dir(target))
	}
}

// probeDir reports why a new file cannot be created in dir, or nil.
func probeDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	probe, err := os.CreateTemp(dir, ".blksim-log.probe*")
	if err != nil {
		return fmt.Errorf("cannot create a file in %s: %v", dir, errors.Unwrap(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// logFile is the text of one log file: the logs that go to its path,
// in order.
type logFile struct {
	path string
	data []byte
}

// renderLogs turns a run's logs into files: logs that share a path
// (per_job_logs=0) make one file, their text in the run's order.
func renderLogs(logs []*workload.IOLog) ([]logFile, error) {
	var files []logFile
	at := map[string]int{}
	bufs := []*bytes.Buffer{}
	for _, l := range logs {
		i, ok := at[l.Path]
		if !ok {
			i = len(files)
			at[l.Path] = i
			files = append(files, logFile{path: l.Path})
			bufs = append(bufs, new(bytes.Buffer))
		}
		if _, err := l.WriteTo(bufs[i]); err != nil {
			return nil, err
		}
	}
	for i := range files {
		files[i].data = bufs[i].Bytes()
	}
	return files, nil
}

// writeLogs writes a run's log files, as fio writes them when its jobs
// end, but all or nothing: every file is first written under a temporary
// name beside its target, and only when all are written are they renamed
// into place, so that a failure leaves no log half-written. Unlike fio,
// a file shared with per_job_logs=0 is replaced, not appended to, so that
// the same run gives the same files.
func writeLogs(logs []*workload.IOLog) error {
	files, err := renderLogs(logs)
	if err != nil {
		return err
	}
	staged := make([]*stagedFile, 0, len(files))
	abort := func() {
		for _, s := range staged {
			s.abort()
		}
	}
	for _, f := range files {
		s, err := stageFile(f.path, f.data)
		if err != nil {
			abort()
			return fmt.Errorf("log file %s: %w", f.path, err)
		}
		staged = append(staged, s)
	}
	for i, s := range staged {
		if err := s.commit(); err != nil {
			staged = staged[i+1:]
			abort()
			return fmt.Errorf("log file %s: %w", files[i].path, err)
		}
	}
	return nil
}

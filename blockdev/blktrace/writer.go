package blktrace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/blksim/blksim/blockdev"
)

// MaxCPUs bounds the CPU numbers a Writer accepts: an event on CPU MaxCPUs
// or above is an error. Each CPU seen costs an open file and a 32 KiB write
// buffer, so a Writer's buffers hold at most 32 MiB.
const MaxCPUs = 1024

// bufSize is the write buffer of each per-CPU file.
const bufSize = 32 << 10

// Writer errors.
var (
	// ErrClosed is returned by Close after the first call, and recorded
	// (see Err) by a Trace after Close.
	ErrClosed = errors.New("blktrace: writer closed")
	// ErrEvent reports an event the format cannot carry: a negative time,
	// sector or size, a size above 4 GiB, or a CPU outside [0, MaxCPUs).
	ErrEvent = errors.New("blktrace: bad event")
)

// Writer writes one device's events as blktrace does: one file per CPU,
// named <device>.blktrace.<cpu>, each a sequence of blk_io_trace records in
// time order. It implements blockdev.Tracer.
//
// Records go to hidden temporary files in the directory (CPU 0's is
// created by New, the others when their CPU first traces an event), and
// only a successful Close puts them in place: it removes the files of an
// earlier trace of the same name, renames the temporary files to
// <device>.blktrace.<cpu> and creates the missing ones (empty) so that the
// files are numbered contiguously from 0, because blkparse -i <device>
// reads .0, .1, ... up to the first missing number. A Close that fails, or
// Abort, removes the temporary files instead: the directory is left as it
// was, with any earlier trace intact and no half-written one.
//
// Trace cannot return an error: the first error (an unwritable file, an
// event the format cannot carry) is kept, later events are dropped, and Err
// and Close report it. A Writer is safe for concurrent use, though the
// block layer calls it from the engine goroutine only.
type Writer struct {
	mu     sync.Mutex
	dir    string
	name   string
	dev    uint32
	cpus   []*cpuFile // index = CPU; nil until the CPU traces
	buf    [HeaderSize + CommLen]byte
	err    error
	closed bool
}

// cpuFile is one CPU's trace file (a temporary file until Close) and the
// state the kernel keeps per CPU.
type cpuFile struct {
	f   *os.File
	w   *bufio.Writer
	seq uint32
	// comms holds the command name last noted for each PID on this CPU.
	comms map[uint32]string
	// swapper is the name noted for PID 0 events without one.
	swapper string
}

// New returns a Writer for the device named device with device number dev
// (see Dev), writing into dir, which is created if missing. A '/' in the
// name becomes '_' as the kernel does (blktrace_setup), so that the name
// is one file name; an empty name is an error. New creates CPU 0's
// temporary file, so a directory that cannot be written is an error here,
// before anything is traced; it changes no existing file.
func New(dir, device string, dev uint32) (*Writer, error) {
	if device == "" {
		return nil, fmt.Errorf("blktrace: empty device name")
	}
	name := strings.ReplaceAll(device, "/", "_")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("blktrace: %w", err)
	}
	w := &Writer{dir: dir, name: name, dev: dev}
	if _, err := w.cpu(0); err != nil {
		return nil, err
	}
	return w, nil
}

// Path returns the name of the file that holds cpu's records once Close
// has succeeded.
func (w *Writer) Path(cpu int) string {
	return filepath.Join(w.dir, w.name+".blktrace."+strconv.Itoa(cpu))
}

// Trace appends ev to the file of ev.CPU, preceded by a process note
// (BLK_TN_PROCESS, the command name NUL-padded to CommLen bytes) if ev.PID
// has not traced on that CPU yet or last did so under another name. A PID
// 0 event with no name is noted as "swapper/<cpu>", the kernel's idle
// task. Events must come in time order on each CPU (the blockdev.Tracer
// contract), since blkparse merges the files by time. ev is not retained.
func (w *Writer) Trace(ev *blockdev.TraceEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	if w.closed {
		w.err = ErrClosed
		return
	}
	if err := w.trace(ev); err != nil {
		w.err = err
	}
}

func (w *Writer) trace(ev *blockdev.TraceEvent) error {
	switch {
	case ev.CPU < 0 || ev.CPU >= MaxCPUs:
		return fmt.Errorf("%w: CPU %d outside [0, %d)", ErrEvent, ev.CPU, MaxCPUs)
	case ev.Time < 0:
		return fmt.Errorf("%w: time %d", ErrEvent, ev.Time)
	case ev.Sector < 0:
		return fmt.Errorf("%w: sector %d", ErrEvent, ev.Sector)
	case ev.Bytes < 0 || ev.Bytes > math.MaxUint32:
		return fmt.Errorf("%w: %d bytes", ErrEvent, ev.Bytes)
	}
	cf, err := w.cpu(ev.CPU)
	if err != nil {
		return err
	}
	comm := ev.Comm
	if comm == "" && ev.PID == 0 {
		comm = cf.swapper
	}
	if last, ok := cf.comms[ev.PID]; !ok || last != comm {
		if err := w.note(cf, ev, comm); err != nil {
			return err
		}
		cf.comms[ev.PID] = comm
	}

	cf.seq++
	rec := Record{
		Sequence: cf.seq,
		Time:     uint64(ev.Time),
		Sector:   uint64(ev.Sector),
		Bytes:    uint32(ev.Bytes),
		Action:   ActionWord(ev.Action, ev.Op, ev.Sync, ev.Rahead),
		PID:      ev.PID,
		Device:   w.dev,
		CPU:      uint32(ev.CPU),
	}
	if ev.Flush {
		// REQ_PREFLUSH: blkparse's "F" before the direction.
		rec.Action |= CatFlush << CategoryShift
	}
	if ev.FUA {
		// REQ_FUA: blkparse's "F" after the direction.
		rec.Action |= CatFUA << CategoryShift
	}
	if ev.Meta {
		rec.Action |= CatMeta << CategoryShift
	}
	pdu := 0
	switch ev.Action {
	case blockdev.TracePlug:
		// blk_add_trace_plug: no IO, no payload.
		rec.Sector, rec.Bytes = 0, 0
	case blockdev.TraceUnplug, blockdev.TraceUnplugTimer:
		// blk_add_trace_unplug: no IO; the depth as __be64.
		rec.Sector, rec.Bytes = 0, 0
		binary.BigEndian.PutUint64(w.buf[HeaderSize:], ev.Extra)
		pdu = 8
	case blockdev.TraceSplit:
		// blk_add_trace_split: the new sector as __be64, bio status.
		binary.BigEndian.PutUint64(w.buf[HeaderSize:], ev.Extra)
		pdu = 8
		rec.Error = errnoField(ev.Error)
	case blockdev.TraceComplete:
		// blk_add_trace_rq_complete: blk_status_to_errno, negative.
		rec.Error = errnoField(ev.Error)
	}
	putHeader(w.buf[:], &rec, pdu)
	if _, err := cf.w.Write(w.buf[:HeaderSize+pdu]); err != nil {
		return fmt.Errorf("blktrace: %w", err)
	}
	return nil
}

// errnoField stores a positive errno as the kernel does: the negative
// value truncated to the 16-bit error field.
func errnoField(errno int) uint16 { return uint16(-errno) }

// note writes a BLK_TN_PROCESS record for ev's task, as trace_note_tsk
// does: no sequence, sector or size, the time and CPU of the event it
// precedes, and the command name in a CommLen-byte payload.
func (w *Writer) note(cf *cpuFile, ev *blockdev.TraceEvent, comm string) error {
	rec := Record{
		Time:   uint64(ev.Time),
		Action: ProcessNote,
		PID:    ev.PID,
		Device: w.dev,
		CPU:    uint32(ev.CPU),
	}
	putHeader(w.buf[:], &rec, CommLen)
	pdu := w.buf[HeaderSize : HeaderSize+CommLen]
	n := copy(pdu[:CommLen-1], comm)
	clear(pdu[n:])
	if _, err := cf.w.Write(w.buf[:HeaderSize+CommLen]); err != nil {
		return fmt.Errorf("blktrace: %w", err)
	}
	return nil
}

// cpu returns cpu's file, creating its temporary file on first use.
func (w *Writer) cpu(cpu int) (*cpuFile, error) {
	if cpu < len(w.cpus) && w.cpus[cpu] != nil {
		return w.cpus[cpu], nil
	}
	f, err := os.CreateTemp(w.dir, "."+w.name+".blktrace."+strconv.Itoa(cpu)+".*.tmp")
	if err == nil {
		// The mode blktrace gives its files (CreateTemp's is 0600).
		if err = f.Chmod(0o644); err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}
	if err != nil {
		return nil, fmt.Errorf("blktrace: %w", err)
	}
	for len(w.cpus) <= cpu {
		w.cpus = append(w.cpus, nil)
	}
	cf := &cpuFile{f: f, w: bufio.NewWriterSize(f, bufSize), comms: make(map[uint32]string),
		swapper: "swapper/" + strconv.Itoa(cpu)}
	w.cpus[cpu] = cf
	return cf, nil
}

// Err returns the first error met by Trace, or nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close flushes and closes every file and, if neither Trace nor Close met
// an error, puts the trace in place: the files of an earlier trace of the
// same name in dir (<device>.blktrace.<n>) are replaced: the temporary
// files are renamed to their Path, empty files put in place for the CPUs
// below the highest one seen that traced nothing, so that blkparse finds
// them all, and the earlier trace's files of higher CPUs removed. On an
// error before the first rename (Trace's, a flush, a directory in the
// way, an empty file not made) it removes the temporary files, leaves dir
// as it was and returns the first error Trace met joined with those of
// its own; a rename or removal failing after that (rare: same directory)
// leaves the files already renamed in place. Calls after the first (or
// after Abort) return ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	errs := []error{w.err}
	for _, cf := range w.cpus {
		if cf == nil {
			continue
		}
		if err := cf.w.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("blktrace: %w", err))
		}
		if err := cf.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("blktrace: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		w.removeTemps()
		return err
	}
	if err := w.install(); err != nil {
		w.removeTemps()
		return err
	}
	w.cpus = nil
	return nil
}

// install replaces an earlier trace in dir with the temporary files: it
// first makes an empty temporary file for each CPU that traced nothing
// and checks that no directory stands where a file must go (failures
// there leave dir as it was), then renames every temporary file over its
// Path, and last removes the earlier trace's files of higher CPU numbers.
func (w *Writer) install() error {
	for cpu := range w.cpus {
		if fi, err := os.Lstat(w.Path(cpu)); err == nil && fi.IsDir() {
			return fmt.Errorf("blktrace: %s is a directory", w.Path(cpu))
		}
	}
	for cpu, cf := range w.cpus {
		if cf != nil {
			continue
		}
		f, err := os.CreateTemp(w.dir, "."+w.name+".blktrace."+strconv.Itoa(cpu)+".*.tmp")
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			return fmt.Errorf("blktrace: %w", err)
		}
		w.cpus[cpu] = &cpuFile{f: f}
	}
	for cpu, cf := range w.cpus {
		if err := os.Rename(cf.f.Name(), w.Path(cpu)); err != nil {
			return fmt.Errorf("blktrace: %w", err)
		}
		w.cpus[cpu] = nil
	}
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("blktrace: %w", err)
	}
	prefix := w.name + ".blktrace."
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" || e.IsDir() {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil && n < len(w.cpus) {
			continue // just installed
		}
		if err := os.Remove(filepath.Join(w.dir, e.Name())); err != nil {
			return fmt.Errorf("blktrace: removing an earlier trace: %w", err)
		}
	}
	return nil
}

// removeTemps removes the temporary files not yet renamed into place.
func (w *Writer) removeTemps() {
	for _, cf := range w.cpus {
		if cf != nil {
			_ = os.Remove(cf.f.Name())
		}
	}
	w.cpus = nil
}

// Abort ends the Writer without a trace: it closes and removes the
// temporary files, leaving dir as New found it. It is a no-op after Close
// or Abort, so it can be deferred on a run's error paths.
func (w *Writer) Abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	for _, cf := range w.cpus {
		if cf != nil {
			_ = cf.f.Close()
		}
	}
	w.removeTemps()
}

var _ blockdev.Tracer = (*Writer)(nil)

package fsmodel

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/pagecache"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/writeback"
)

// faultStack is a buffered filesystem on a memory device wrapped in a
// FaultDevice that fails reads or writes while told to.
type faultStack struct {
	e                     *sim.Engine
	dev                   *blockdev.MemDevice
	fs                    *FS
	failReads, failWrites int // how many more to fail (-1: all)
	errno                 syscall.Errno
}

func newFaultStack(t *testing.T) *faultStack {
	t.Helper()
	s := &faultStack{errno: syscall.EIO}
	e := sim.New(sim.Options{Seed: 1, Host: sim.Host{CPUs: 4}})
	s.e = e
	s.dev = blockdev.NewMemDevice(e, blockdev.MemParams{Capacity: 1 << 30, LogicalBlockSize: 4096, Latency: 50 * time.Microsecond})
	fd := blockdev.NewFaultDevice(e, s.dev, blockdev.InjectorFunc(func(r *blockdev.Request) error {
		n := &s.failReads
		if r.Op == blockdev.OpWrite {
			n = &s.failWrites
		}
		if *n == 0 {
			return nil
		}
		if *n > 0 {
			*n--
		}
		return &blockdev.InjectedError{Errno: s.errno}
	}))
	q, err := blockdev.NewQueue(e, fd, blockdev.QueueOptions{})
	require.NoError(t, err)
	fsys, err := New(e, q, Options{Policy: Ext4{}, Name: "t"})
	require.NoError(t, err)
	cache, err := pagecache.New(pagecache.Options{LimitPages: 4096})
	require.NoError(t, err)
	require.NoError(t, fsys.EnableBuffered(BufferedOptions{Cache: cache, Policy: writeback.Default{}, AvailablePages: 4096}))
	t.Cleanup(func() { _ = fsys.Close(); _ = e.Close(); cache.Close() })
	s.fs = fsys
	return s
}

// written creates file "a", writes its first size bytes with oldStamp,
// fsyncs it and drops it from the page cache.
func (s *faultStack) written(t *testing.T, size int64) *File {
	t.Helper()
	f, err := s.fs.Create("a")
	require.NoError(t, err)
	s.do(t, func(tk *sim.Task) {
		require.NoError(t, f.BufferedWrite(tk, 0, size, oldStamp))
		require.NoError(t, f.Fsync(tk))
	})
	require.Positive(t, f.Invalidate())
	return f
}

// do runs fn as a task to the end of the simulation.
func (s *faultStack) do(t *testing.T, fn func(tk *sim.Task)) {
	t.Helper()
	s.e.Go("t", fn)
	require.NoError(t, s.e.Run(-1))
}

var (
	oldStamp = blockdev.Stamp{Writer: 1, Seq: 1}
	newStamp = blockdev.Stamp{Writer: 2, Seq: 1}
)

// TestWritebackErrorReportedByFsyncOnce: a failed writeback ends the
// pages' writeback and leaves them clean, with the new data in the cache
// and the old on the device; the file's next fsync returns the errno,
// once per open file description (errseq_t), and later ones return 0
// unless a new error occurs.
func TestWritebackErrorReportedByFsyncOnce(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC} {
		t.Run(errno.Error(), func(t *testing.T) {
			s := newFaultStack(t)
			s.errno = errno
			f, err := s.fs.Create("a")
			require.NoError(t, err)
			h := f.OpenHandle()
			s.do(t, func(tk *sim.Task) {
				require.NoError(t, f.BufferedWrite(tk, 0, 64<<10, oldStamp))
				require.NoError(t, f.Fsync(tk))
			})
			s.failWrites = -1
			var errs []error
			s.do(t, func(tk *sim.Task) {
				require.NoError(t, f.BufferedWrite(tk, 0, 64<<10, newStamp))
				errs = append(errs, f.Fsync(tk), f.Fsync(tk), h.Fsync(tk), h.Fsync(tk))
			})
			require.Len(t, errs, 4)
			assert.ErrorIs(t, errs[0], errno, "the fsync that wrote back sees the error")
			assert.NoError(t, errs[1], "reported once per description")
			assert.ErrorIs(t, errs[2], errno, "another description opened before sees it too")
			assert.NoError(t, errs[3])
			late := f.OpenHandle()
			s.do(t, func(tk *sim.Task) {
				assert.NoError(t, late.Fsync(tk), "a description opened after the error was seen does not")
			})

			assert.Zero(t, f.DirtyPages(), "the failed pages are clean")
			assert.Zero(t, s.fs.Cache().InodeWritebackPages(f.ino()), "and out of writeback")
			var data []blockdev.StampRun
			s.do(t, func(tk *sim.Task) { require.NoError(t, f.BufferedRead(tk, 0, 64<<10, &data)) })
			assert.Equal(t, []blockdev.StampRun{{Sector: 0, Sectors: 128, Stamp: newStamp}}, data, "the cache still holds the new data")

			// Evicted, the pages read back the device's old data.
			s.failWrites = 0
			require.Positive(t, f.Invalidate())
			data = nil
			s.do(t, func(tk *sim.Task) { require.NoError(t, f.BufferedRead(tk, 0, 64<<10, &data)) })
			assert.Equal(t, []blockdev.StampRun{{Sector: 0, Sectors: 128, Stamp: oldStamp}}, data, "a lost write: the old data")

			// A new error after the last was seen is reported again.
			s.failWrites = 1
			s.do(t, func(tk *sim.Task) {
				require.NoError(t, f.BufferedWrite(tk, 0, 4096, newStamp))
				assert.ErrorIs(t, f.Fsync(tk), errno)
				assert.NoError(t, f.Fsync(tk))
			})
		})
	}
}

// TestFlusherWritebackErrorReachesFsync: an error of the flusher's
// background writeback, which no one waits for, is the next fsync's.
func TestFlusherWritebackErrorReachesFsync(t *testing.T) {
	s := newFaultStack(t)
	f, err := s.fs.Create("a")
	require.NoError(t, err)
	s.failWrites = -1
	s.do(t, func(tk *sim.Task) {
		require.NoError(t, f.BufferedWrite(tk, 0, 1<<20, newStamp))
		// dirty_expire (30 s) and the flusher's period (5 s) pass.
		tk.Sleep(40 * time.Second)
		require.Zero(t, f.DirtyPages(), "the flusher wrote the pages back")
		s.failWrites = 0
		assert.ErrorIs(t, f.Fsync(tk), syscall.EIO)
		assert.NoError(t, f.Fsync(tk))
	})
}

// TestBufferedReadError: a readahead read the device fails leaves its
// pages not uptodate; read() reads the page again (filemap_read_folio)
// and returns EIO only if that fails too.
func TestBufferedReadError(t *testing.T) {
	tests := []struct {
		name      string
		failReads int
		wantErr   bool
	}{
		{"retry succeeds", 1, false},
		{"retry fails", -1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFaultStack(t)
			f := s.written(t, 256<<10)
			s.failReads = tt.failReads
			var data []blockdev.StampRun
			var rerr error
			s.do(t, func(tk *sim.Task) { rerr = f.BufferedRead(tk, 0, 4096, &data) })
			if tt.wantErr {
				assert.ErrorIs(t, rerr, syscall.EIO)
				p := s.fs.Cache().Peek(f.ino(), 0)
				require.NotNil(t, p)
				assert.False(t, p.IsUptodate(), "the failed page is not uptodate")
				return
			}
			require.NoError(t, rerr)
			assert.Equal(t, []blockdev.StampRun{{Sector: 0, Sectors: 8, Stamp: oldStamp}}, data)
		})
	}
}

func TestErrSeq(t *testing.T) {
	var e errSeq
	a, b := e.sample(), e.sample()
	assert.Zero(t, e.checkAndAdvance(&a), "no error yet")
	e.set(syscall.EIO)
	e.set(syscall.ENOSPC) // unseen: replaces the errno, no new count
	c := e.sample()
	assert.Zero(t, c, "a sample of an unseen error starts before it")
	assert.Equal(t, syscall.ENOSPC, e.checkAndAdvance(&a))
	assert.Zero(t, e.checkAndAdvance(&a))
	assert.Equal(t, syscall.ENOSPC, e.checkAndAdvance(&b))
	assert.Equal(t, syscall.ENOSPC, e.checkAndAdvance(&c))
	d := e.sample()
	assert.Zero(t, e.checkAndAdvance(&d), "a sample after it was seen does not see it")
	e.set(syscall.EIO)
	for _, s := range []*errSeq{&a, &b, &c, &d} {
		assert.Equal(t, syscall.EIO, e.checkAndAdvance(s), "a new error after the last was seen reaches everyone")
		assert.Zero(t, e.checkAndAdvance(s))
	}
	e.set(0)
	assert.Zero(t, e.checkAndAdvance(&a), "no error is no error")
}

// A read that fails part way leaves the open file's prev_pos where the
// copy got to (filemap_read sets it whether or not the read ends in an
// error), so the next read from there counts as sequential.
func TestFailedReadSetsPrevPos(t *testing.T) {
	s := newFaultStack(t)
	f := s.written(t, 1<<20)
	h := f.OpenHandle()
	s.do(t, func(tk *sim.Task) { require.NoError(t, h.BufferedRead(tk, 0, 16<<10, nil)) })
	s.failReads = -1
	var rerr error
	s.do(t, func(tk *sim.Task) { rerr = h.BufferedRead(tk, 0, 1<<20, nil) })
	require.ErrorIs(t, rerr, syscall.EIO)
	var at int64
	_, scanErr := fmt.Sscanf(rerr.Error(), "a read at %d:", &at)
	require.NoError(t, scanErr, rerr.Error())
	require.Positive(t, at, "the cached pages were copied first")
	assert.Equal(t, at, h.ra.PrevPos)
}

// Open counts the space buffered writes have been promised: a file that
// would not fit beside them is refused with ErrNoSpace; and once the
// log-structured allocator has written, a preallocated file (whose extent
// the log would run over) is refused.
func TestOpenRespectsReservationsAndLog(t *testing.T) {
	s := newBufStack(t, AllocDelayed, false, 0, 1<<16)
	f, err := s.fs.Create("a")
	require.NoError(t, err)
	capacity := s.dev.Capacity()
	s.e.Go("w", func(tk *sim.Task) {
		// under the background threshold: reserved, not written back
		require.NoError(t, f.BufferedWrite(tk, 0, 16<<20, oldStamp))
	})
	require.NoError(t, s.e.Run(sim.Time(100*time.Millisecond)))
	require.Zero(t, s.fs.Writeback().Stats().TotalWritten())
	_, err = s.fs.Open("big", capacity-8<<20)
	assert.ErrorIs(t, err, ErrNoSpace)
	_, err = s.fs.Open("fits", capacity-16<<20)
	assert.NoError(t, err)

	l := newBufStack(t, AllocLog, false, 0, 1<<16)
	g, err := l.fs.Create("a")
	require.NoError(t, err)
	l.e.Go("w", func(tk *sim.Task) {
		require.NoError(t, g.BufferedWrite(tk, 0, 1<<20, oldStamp))
		require.NoError(t, g.Fsync(tk))
	})
	require.NoError(t, l.e.Run(-1))
	_, err = l.fs.Open("late", 1<<20)
	assert.ErrorIs(t, err, syscall.EINVAL)
}

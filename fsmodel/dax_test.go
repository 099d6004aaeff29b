package fsmodel

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
)

// daxEnv is a DAX filesystem on a pmem device copying 4 KiB in 1 us each
// way (4096 MB/s), with a 1 us syscall, 1 us of block mapping and 2 us
// timestamp updates.
type daxEnv struct {
	e    *sim.Engine
	pmem *blockdev.PMem
	fs   *FS
	f    *File
}

func newDAXEnv(t *testing.T, policy LockPolicy, opt DAXOptions) *daxEnv {
	t.Helper()
	e := sim.New(sim.Options{Seed: 1, Host: sim.Host{CPUs: 8}})
	t.Cleanup(func() { _ = e.Close() })
	pm, err := blockdev.NewPMem(e, blockdev.PMemParams{Capacity: 64 * MiB, LogicalBlockSize: 512, ReadMBps: 4096, WriteMBps: 4096})
	require.NoError(t, err)
	q, err := blockdev.NewQueue(e, pm, blockdev.QueueOptions{})
	require.NoError(t, err)
	fs, err := New(e, q, Options{Policy: policy, Costs: Costs{Syscall: 2 * us}, Name: "xfs"})
	require.NoError(t, err)
	require.NoError(t, fs.EnableDAX(opt))
	f, err := fs.Open("f", 1*MiB)
	require.NoError(t, err)
	return &daxEnv{e: e, pmem: pm, fs: fs, f: f}
}

func TestEnableDAXRefusals(t *testing.T) {
	e := sim.New(sim.Options{Seed: 1, Host: sim.Host{CPUs: 2}})
	t.Cleanup(func() { _ = e.Close() })
	mem := blockdev.NewMemDevice(e, blockdev.MemParams{Capacity: MiB})
	q, err := blockdev.NewQueue(e, mem, blockdev.QueueOptions{})
	require.NoError(t, err)
	fs, err := New(e, q, Options{Policy: XFS{}})
	require.NoError(t, err)
	err = fs.EnableDAX(DAXOptions{})
	require.ErrorIs(t, err, ErrDAX)
	assert.Contains(t, err.Error(), "does not support DAX (it needs a pmem device)")

	pm, err := blockdev.NewPMem(e, blockdev.DefaultPMemParams())
	require.NoError(t, err)
	q2, err := blockdev.NewQueue(e, pm, blockdev.QueueOptions{})
	require.NoError(t, err)
	fs2, err := New(e, q2, Options{Policy: F2FS{}})
	require.NoError(t, err)
	err = fs2.EnableDAX(DAXOptions{})
	require.ErrorIs(t, err, ErrDAX)
	assert.Contains(t, err.Error(), "f2fs does not support DAX")
}

// Every write is a copy to the device, visible to the next read at once;
// IO beyond the file or misaligned to sectors fails with the errno; the
// block layer sees nothing.
func TestDAXDataAndErrors(t *testing.T) {
	v := newDAXEnv(t, XFS{}, DAXOptions{})
	require.True(t, v.fs.DAX())
	s1, s2 := blockdev.Stamp{Writer: 1, Seq: 1}, blockdev.Stamp{Writer: 1, Seq: 2}
	var got []blockdev.StampRun
	var errs []error
	v.e.Go("io", func(tk *sim.Task) {
		require.NoError(t, v.f.BufferedWrite(tk, 0, 8192, s1))
		require.NoError(t, v.f.DirectWrite(tk, 4096, 512, s2))
		require.NoError(t, v.f.DirectRead(tk, 0, 8192, &got))
		errs = append(errs, v.f.DirectWrite(tk, MiB-4096, 8192, s1))
		errs = append(errs, v.f.BufferedRead(tk, 100, 512, nil))
		var tail []blockdev.StampRun
		require.NoError(t, v.f.BufferedRead(tk, MiB-512, 4096, &tail)) // stops at EOF
		assert.Equal(t, []blockdev.StampRun{{Sector: MiB/512 - 1, Sectors: 1}}, tail)
	})
	require.NoError(t, v.e.Run(-1))
	assert.Equal(t, []blockdev.StampRun{
		{Sector: 0, Sectors: 8, Stamp: s1},
		{Sector: 8, Sectors: 1, Stamp: s2},
		{Sector: 9, Sectors: 7, Stamp: s1},
	}, got)
	require.Len(t, errs, 2)
	assert.ErrorIs(t, errs[0], ErrBeyondEOF)
	assert.ErrorIs(t, errs[1], syscall.EINVAL)
	assert.Contains(t, errs[1].Error(), "aligned to 512-byte sectors")
	assert.Equal(t, [2]uint64{}, v.fs.Queue().Stats().IOs)

	var cb IOCB
	cb.Handler = aioNop{}
	v.e.Go("aio", func(tk *sim.Task) {
		assert.ErrorIs(t, v.f.DirectAIO(tk, blockdev.OpRead, 0, 4096, blockdev.Stamp{}, &cb), ErrDAX)
	})
	require.NoError(t, v.e.Run(-1))
}

type aioNop struct{}

func (aioNop) AIODone(*IOCB) {}

// The lock rules of xfs's DAX paths, one case each: which locks an IO
// takes and in which mode, seen by a probe while the IO copies.
func TestDAXLockRules(t *testing.T) {
	type seen struct{ ioReaders, ioWriter, ilockReaders int }
	for _, tc := range []struct {
		name   string
		policy LockPolicy
		opt    DAXOptions
		write  bool
		off, n int64
		want   seen // the most seen during the second IO
		// ilockW is the number of exclusive ILOCK acquisitions (timestamp
		// updates) after two IOs 20 us apart in one tick.
		ilockW uint64
	}{
		{"xfs read: iolock shared, ILOCK shared to map", XFS{}, DAXOptions{}, false, 0, 4096, seen{1, 0, 1}, 1},
		{"xfs aligned write: iolock shared, ILOCK shared to map", XFS{}, DAXOptions{}, true, 0, 4096, seen{1, 0, 1}, 1},
		{"xfs unaligned write: iolock exclusive", XFS{}, DAXOptions{}, true, 512, 512, seen{0, 1, 1}, 1},
		{"xfs writes with i_version: a timestamp update per write", XFS{}, DAXOptions{IVersion: true}, true, 0, 4096, seen{1, 0, 1}, 2},
		{"ext4 write: inode lock exclusive, no ILOCK", Ext4{}, DAXOptions{}, true, 0, 4096, seen{0, 1, 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opt.BlockMap, tc.opt.UpdateTime = us, 2*us
			v := newDAXEnv(t, tc.policy, tc.opt)
			in := v.f.Inode()
			var got seen
			for i := range 2 {
				at := time.Duration(i) * 20 * us
				v.e.Go("io", func(tk *sim.Task) {
					tk.Sleep(at)
					if tc.write {
						require.NoError(t, v.f.DirectWrite(tk, tc.off, tc.n, blockdev.Stamp{Writer: 1, Seq: uint64(i + 1)}))
					} else {
						require.NoError(t, v.f.DirectRead(tk, tc.off, tc.n, nil))
					}
				})
			}
			// Sample the iolock through the second IO.
			for at := 20 * us; at < 30*us; at += 250 * time.Nanosecond {
				v.e.AfterFunc(at, func() {
					got.ioReaders = max(got.ioReaders, in.Lock.Readers())
					if il := v.f.ILock(); il != nil {
						got.ilockReaders = max(got.ilockReaders, il.Readers())
					}
					if in.Lock.Writer() != nil {
						got.ioWriter = 1
					}
				})
			}
			require.NoError(t, v.e.Run(-1))
			assert.Equal(t, tc.want, got)
			if il := v.f.ILock(); il != nil {
				assert.Equal(t, tc.ilockW, il.Stats().Write.Acquisitions)
			} else {
				assert.Zero(t, tc.ilockW)
			}
		})
	}
}

// Timestamps follow the coarse clock without i_version: one update per
// tick for writes, and a read updates the access time once after a
// modification (relatime: when atime <= mtime), then not until the file
// is modified again.
func TestDAXTimestampTicks(t *testing.T) {
	v := newDAXEnv(t, XFS{}, DAXOptions{Tick: 100 * us, UpdateTime: us})
	updates := func() uint64 { return v.f.ILock().Stats().Write.Acquisitions }
	var got []uint64
	v.e.Go("io", func(tk *sim.Task) {
		for i := range 10 { // 10 writes in the first tick: 1 update
			require.NoError(t, v.f.DirectWrite(tk, 0, 4096, blockdev.Stamp{Writer: 1, Seq: uint64(i + 1)}))
		}
		got = append(got, updates())
		tk.Sleep(100 * us) // a new tick: 1 more for the write
		require.NoError(t, v.f.DirectWrite(tk, 0, 4096, blockdev.Stamp{Writer: 1, Seq: 11}))
		got = append(got, updates())
		for range 3 { // atime once after the modification
			require.NoError(t, v.f.DirectRead(tk, 0, 4096, nil))
		}
		got = append(got, updates())
		// A later tick, no modification: the access time still equals
		// the modification time (both set in one tick), and relatime
		// updates when mtime >= atime: once more, then no more.
		tk.Sleep(100 * us)
		require.NoError(t, v.f.DirectRead(tk, 0, 4096, nil))
		got = append(got, updates())
		tk.Sleep(100 * us)
		require.NoError(t, v.f.DirectRead(tk, 0, 4096, nil))
		got = append(got, updates())
		tk.Sleep(100 * us) // modified, then read in a later tick: both update
		require.NoError(t, v.f.DirectWrite(tk, 0, 4096, blockdev.Stamp{Writer: 1, Seq: 12}))
		tk.Sleep(100 * us)
		require.NoError(t, v.f.DirectRead(tk, 0, 4096, nil))
		got = append(got, updates())
	})
	require.NoError(t, v.e.Run(-1))
	assert.Equal(t, []uint64{1, 2, 3, 4, 4, 6}, got)
}

// Reads and aligned writes both hold the iolock shared on DAX, so a read
// can copy a block while a write copies into it: it sees the sectors the
// writer has passed (torn), as buffered readers without the lock do.
func TestDAXReadTearsAgainstSharedWrite(t *testing.T) {
	old, upd := blockdev.Stamp{Writer: 1, Seq: 1}, blockdev.Stamp{Writer: 2, Seq: 1}
	for _, tc := range []struct {
		name    string
		readAt  time.Duration
		wantNew int64 // sectors of the 4 KiB block read new
	}{
		{"read long before", 0, 0},
		{"read long after", 50 * us, 8},
		// The writer copies its 8 sectors during [2, 3) us (after its
		// syscall half and 1 us of mapping) at 4096 MB/s; the reader,
		// twice as fast, copies during [2.25, 2.75) us: it reads sector i
		// at 2.28 + 0.0625i us, after the writer wrote it (2.125 +
		// 0.125i) only for i <= 2.
		{"reader overtakes the writer", 250 * time.Nanosecond, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.New(sim.Options{Seed: 1, Host: sim.Host{CPUs: 8}})
			t.Cleanup(func() { _ = e.Close() })
			pm, err := blockdev.NewPMem(e, blockdev.PMemParams{Capacity: MiB, LogicalBlockSize: 512, ReadMBps: 8192, WriteMBps: 4096})
			require.NoError(t, err)
			q, err := blockdev.NewQueue(e, pm, blockdev.QueueOptions{})
			require.NoError(t, err)
			fs, err := New(e, q, Options{Policy: XFS{}, Costs: Costs{Syscall: 2 * us}})
			require.NoError(t, err)
			require.NoError(t, fs.EnableDAX(DAXOptions{BlockMap: us}))
			f, err := fs.Open("f", 4096)
			require.NoError(t, err)
			e.Go("setup", func(tk *sim.Task) { require.NoError(t, f.DirectWrite(tk, 0, 4096, old)) })
			require.NoError(t, e.Run(-1))
			var data []blockdev.StampRun
			e.Go("w", func(tk *sim.Task) { require.NoError(t, f.DirectWrite(tk, 0, 4096, upd)) })
			e.Go("r", func(tk *sim.Task) {
				tk.Sleep(tc.readAt)
				require.NoError(t, f.DirectRead(tk, 0, 4096, &data))
			})
			require.NoError(t, e.Run(-1))
			var n int64
			for _, r := range data {
				if r.Stamp == upd {
					n += r.Sectors
				} else {
					require.Equal(t, old, r.Stamp)
				}
			}
			assert.Equal(t, tc.wantNew, n, "%v", data)
		})
	}
}

// A read decides what it saw of each block when it has copied that block:
// a second write to a block the read has already copied does not change
// what the read returned for it. The read copies block 0 during [1, 5) us
// (1024 MB/s) and block 1 during [5, 9) us; the first write copies block 0
// during [3, 4) us, so the read's last 3 sectors of block 0 come after
// the writer's (new) and the first 5 before (old); the second write
// copies block 0 during [6, 7) us, after the read was done with it.
func TestDAXReadDecidesPerBlock(t *testing.T) {
	old := blockdev.Stamp{Writer: 1, Seq: 1}
	w1, w2 := blockdev.Stamp{Writer: 2, Seq: 1}, blockdev.Stamp{Writer: 3, Seq: 1}
	want := []blockdev.StampRun{{Sector: 0, Sectors: 5, Stamp: old}, {Sector: 5, Sectors: 3, Stamp: w1}, {Sector: 8, Sectors: 8, Stamp: old}}
	for _, second := range []bool{false, true} {
		e := sim.New(sim.Options{Seed: 1, Host: sim.Host{CPUs: 8}})
		t.Cleanup(func() { _ = e.Close() })
		pm, err := blockdev.NewPMem(e, blockdev.PMemParams{Capacity: MiB, LogicalBlockSize: 512, ReadMBps: 1024, WriteMBps: 4096})
		require.NoError(t, err)
		q, err := blockdev.NewQueue(e, pm, blockdev.QueueOptions{})
		require.NoError(t, err)
		fs, err := New(e, q, Options{Policy: XFS{}, Costs: Costs{Syscall: 2 * us}})
		require.NoError(t, err)
		require.NoError(t, fs.EnableDAX(DAXOptions{}))
		f, err := fs.Open("f", 8192)
		require.NoError(t, err)
		e.Go("setup", func(tk *sim.Task) { require.NoError(t, f.DirectWrite(tk, 0, 8192, old)) })
		require.NoError(t, e.Run(-1))
		var data []blockdev.StampRun
		e.Go("r", func(tk *sim.Task) { require.NoError(t, f.DirectRead(tk, 0, 8192, &data)) })
		e.Go("w1", func(tk *sim.Task) {
			tk.Sleep(2 * us)
			require.NoError(t, f.DirectWrite(tk, 0, 4096, w1))
		})
		if second {
			e.Go("w2", func(tk *sim.Task) {
				tk.Sleep(5 * us)
				require.NoError(t, f.DirectWrite(tk, 0, 4096, w2))
			})
		}
		require.NoError(t, e.Run(-1))
		assert.Equal(t, want, data, "second write: %v", second)
	}
}

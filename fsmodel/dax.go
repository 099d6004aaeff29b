package fsmodel

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/pagecache"
	"github.com/blksim/blksim/sim"
)

// This file is the DAX path (a filesystem mounted with -o dax on a pmem
// device): reads and writes, direct or not, copy between the caller's
// buffer and the device with the CPU while holding the inode lock; there
// is no page cache and no block layer. What the filesystem adds around
// the copy is its locking: the iolock (i_rwsem) in the mode its
// DAXLocking gives, block mapping under a second inode lock where the
// filesystem has one (xfs's ILOCK, shared), and timestamp updates, which
// on xfs take that second lock exclusive (xfs_vn_update_time).

// DAXLocking is the locking of a filesystem's DAX paths. A LockPolicy
// that does not implement it cannot be mounted with DAX (f2fs has no DAX).
type DAXLocking interface {
	// DAXWriteShared reports whether a DAX write holds the iolock shared
	// (DAX reads always do); otherwise it holds it exclusive.
	DAXWriteShared(io IORequest) bool
	// DAXInodeLock names the second inode lock that block mapping takes
	// shared and timestamp updates take exclusive ("" for none).
	DAXInodeLock() string
}

// DAXWriteShared is xfs's rule of 4.7 (DAX went through the direct-IO
// write path): shared for aligned, non-extending writes to a file with no
// cached pages, else exclusive.
func (p XFS) DAXWriteShared(io IORequest) bool {
	return p.DIOWrite(io) == SpanSharedIO
}

// DAXInodeLock is xfs's ILOCK.
func (XFS) DAXInodeLock() string { return "ilock" }

// DAXWriteShared is ext4's rule (ext4_dax_write_iter, 4.9 and later):
// DAX writes hold the inode lock exclusive.
func (Ext4) DAXWriteShared(IORequest) bool { return false }

// DAXInodeLock is "": ext4 maps blocks under i_data_sem shared (no
// writer in this model) and updates timestamps in a journal handle, not
// under an inode lock.
func (Ext4) DAXInodeLock() string { return "" }

// DAXOptions configure the DAX paths (FS.EnableDAX).
type DAXOptions struct {
	// BlockMap is the CPU time of mapping an IO's blocks (the extent
	// lookup), charged under the second inode lock held shared.
	BlockMap time.Duration
	// WriteChecks is the CPU time of a write's checks under the iolock
	// before the timestamp update (generic_write_checks, privileges).
	WriteChecks time.Duration
	// UpdateTime is the CPU time of one timestamp update
	// (xfs_vn_update_time: a transaction that logs the inode), charged
	// under the second inode lock held exclusive.
	UpdateTime time.Duration
	// IVersion makes every write update the inode's timestamps: the
	// i_version counter changes on every write (xfs v5 filesystems before
	// 4.16). Without it a write updates them only when the coarse clock
	// has ticked since the last update, and a read updates the access
	// time only then and only after a modification (relatime).
	IVersion bool
	// Tick is the coarse clock's period, 1/HZ (0: 4 ms, HZ=250).
	Tick time.Duration
}

// daxState is a DAX filesystem's device and the copies in progress.
type daxState struct {
	opt    DAXOptions
	dev    blockdev.DAXDevice
	copies copyLog[int64] // keyed by device 4 KiB block
}

// ErrDAX is wrapped by errors of the DAX paths' set-up.
var ErrDAX = errors.New("fsmodel: DAX")

// EnableDAX mounts the filesystem with DAX: every file IO becomes a copy
// to or from the device, which must implement blockdev.DAXDevice, and the
// policy must implement DAXLocking. Files are preallocated (FS.Open);
// the buffered and direct IO calls of every file take the DAX path, and a
// page cache, if enabled, stays unused.
func (fs *FS) EnableDAX(opt DAXOptions) error {
	dev, ok := fs.q.Device().(blockdev.DAXDevice)
	if !ok {
		return fmt.Errorf("%w: device %s does not support DAX (it needs a pmem device)", ErrDAX, fs.q.Device().Name())
	}
	if _, ok := fs.opt.Policy.(DAXLocking); !ok {
		return fmt.Errorf("%w: %s does not support DAX", ErrDAX, fs.opt.Policy.Name())
	}
	if fs.journal != nil {
		return fmt.Errorf("%w: a journal on a DAX mount is not modelled (make the filesystem without one)", ErrDAX)
	}
	if opt.Tick <= 0 {
		opt.Tick = 4 * time.Millisecond
	}
	fs.dax = &daxState{opt: opt, dev: dev}
	return nil
}

// DAX reports whether the filesystem is mounted with DAX.
func (fs *FS) DAX() bool { return fs.dax != nil }

// ILock returns the file's second inode lock (xfs's ILOCK) on a DAX
// filesystem whose policy has one, or nil.
func (f *File) ILock() *sim.RWSem { return f.inode.ilock }

// daxSyscall is daxIO inside a read or write system call.
func (f *File) daxSyscall(t *sim.Task, op blockdev.Op, off, n int64, s blockdev.Stamp, data *[]blockdev.StampRun) error {
	c := &f.fs.opt.Costs
	t.CPU(c.Syscall / 2)
	defer t.Charge(c.Syscall - c.Syscall/2)
	return f.daxIO(t, op, off, n, s, data)
}

// daxIO is one DAX read or write of [off, off+n) on behalf of t; the
// syscall's costs are the caller's. Reads past the end of the file stop
// there; writes beyond it fail (files are preallocated); IO not aligned to
// 512-byte sectors fails with EINVAL (a limit of blksim's data tracking,
// not of the kernel).
func (f *File) daxIO(t *sim.Task, op blockdev.Op, off, n int64, s blockdev.Stamp, data *[]blockdev.StampRun) error {
	fs := f.fs
	x := fs.dax
	if off < 0 || n <= 0 || off%blockdev.SectorSize != 0 || n%blockdev.SectorSize != 0 {
		// The kernel's DAX paths take any alignment; blksim tracks data
		// per 512-byte sector (its stamps) and cannot.
		return fmt.Errorf("%s %s at %d+%d: blksim's DAX IO must be aligned to %d-byte sectors (its data stamps): %w", f.name, op, off, n, blockdev.SectorSize, syscall.EINVAL)
	}
	if op == blockdev.OpRead {
		n = min(n, f.inode.size-off)
		if n <= 0 {
			return nil
		}
	} else if n > f.inode.size-off {
		return fmt.Errorf("%s %s at %d+%d (size %d): %w", f.name, op, off, n, f.inode.size, ErrBeyondEOF)
	}
	pol := fs.opt.Policy.(DAXLocking)
	if f.inode.ilock == nil && pol.DAXInodeLock() != "" {
		f.inode.ilock = sim.NewRWSem(fs.e, fs.opt.Name+":"+pol.DAXInodeLock()+":"+f.name, fs.opt.Lock)
	}
	io := IORequest{Offset: off, Length: n, Aligned: off%BlockSize == 0 && n%BlockSize == 0}
	shared := op == blockdev.OpRead || pol.DAXWriteShared(io)
	lock := f.inode.Lock
	if shared {
		lock.DownRead(t)
	} else {
		lock.DownWrite(t)
	}
	if op == blockdev.OpWrite {
		t.Charge(x.opt.WriteChecks)
		if tick := f.tick(); x.opt.IVersion || f.inode.mtimeTick != tick {
			f.updateTime(t)
			f.inode.mtimeTick = tick
		}
	}
	if il := f.inode.ilock; il != nil {
		il.DownRead(t)
		t.Charge(x.opt.BlockMap)
		il.UpRead(t)
	} else {
		t.Charge(x.opt.BlockMap)
	}
	f.daxCopy(t, op, off, n, s, data)
	if tick := f.tick(); op == blockdev.OpRead && f.inode.atimeTick != tick && f.inode.mtimeTick >= f.inode.atimeTick {
		f.updateTime(t)
		f.inode.atimeTick = tick
	}
	if shared {
		lock.UpRead(t)
	} else {
		lock.UpWrite(t)
	}
	return nil
}

// tick is the coarse clock now, counting ticks from 1 (0 in the inode
// means never updated).
func (f *File) tick() int64 {
	return int64(f.fs.e.Now())/int64(f.fs.dax.opt.Tick) + 1
}

// updateTime is a timestamp update: under the second inode lock held
// exclusive where there is one.
func (f *File) updateTime(t *sim.Task) {
	d := f.fs.dax.opt.UpdateTime
	if il := f.inode.ilock; il != nil {
		il.DownWrite(t)
		t.Charge(d)
		il.UpWrite(t)
		return
	}
	t.Charge(d)
}

// daxCopy copies [off, off+n) of the file to or from the device, 4 KiB
// block by block at the device's copy rate, one CPU burst per block on
// t's CPU. A write records each block's copy as its burst starts and
// stores its stamps then, so that a read copying the same block at the
// same time (both may hold the iolock shared) sees the sectors the writer
// had reached; a read decides what it saw of a block when its burst for
// the block ends, when every write that overlapped it has recorded its
// copy. (A write's burst is taken to start when it is recorded: on a
// host with more runnable tasks than CPUs it may start later, which dates
// the copy early.)
func (f *File) daxCopy(t *sim.Task, op blockdev.Op, off, n int64, s blockdev.Stamp, data *[]blockdev.StampRun) {
	x := f.fs.dax
	dev := x.dev
	total := dev.DAXCopyTime(op, n)
	t.Flush()
	// Each block's share of the copy, in proportion to its bytes, cut
	// from the running total so that the shares add up to it.
	share := func(pos, end int64) time.Duration {
		return time.Duration(int64(total)*(end-off)/n - int64(total)*(pos-off)/n)
	}
	f.ext.Map(off, n, func(logical, phys, length int64) {
		for pos := logical; pos < logical+length; {
			end := min(logical+length, (pos/BlockSize+1)*BlockSize)
			p := phys + pos - logical
			devBlock := p / BlockSize
			first := int(p % BlockSize / blockdev.SectorSize)
			secs := int((end - pos) / blockdev.SectorSize)
			d := share(pos, end)
			if op == blockdev.OpWrite {
				base := devBlock * pagecache.SectorsPerPage
				x.copies.begin(devBlock, t.Now(), sim.Time(d), first, secs, s, func(i int) blockdev.Stamp { return dev.DAXStamp(base + int64(i)) })
				dev.DAXWrite(p/blockdev.SectorSize, int64(secs), s)
				t.CPU(d)
			} else {
				t.CPU(d)
				if data != nil {
					c1 := t.Now()
					c0 := c1 - sim.Time(d)
					f.daxSeen(data, x.copies.endedAfter(devBlock, c0), p/blockdev.SectorSize, pos/blockdev.SectorSize, first, secs, c0, c1)
				}
			}
			pos = end
		}
	})
}

// daxSeen appends to *data what a read that copied secs sectors from
// device sector dev (file sector fileSec, sector first of its block)
// between c0 and c1 saw, given the block's latest write copy c.
func (f *File) daxSeen(data *[]blockdev.StampRun, c *pageCopy, dev, fileSec int64, first, secs int, c0, c1 sim.Time) {
	for i := 0; i < secs; i++ {
		st := seenStamp(c, f.fs.dax.dev.DAXStamp(dev+int64(i)), first+i, c0, c1, first, secs)
		appendSector(data, fileSec+int64(i), st)
	}
}

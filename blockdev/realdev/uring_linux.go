package realdev

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A minimal io_uring over raw syscalls: one submitter (the engine
// goroutine) and one completer (a reaper goroutine, or the engine
// goroutine itself when the kernel can wait with a timeout), no SQPOLL.

const (
	ioringOffSQRing = 0
	ioringOffCQRing = 0x8000000
	ioringOffSQEs   = 0x10000000

	ioringFeatSingleMmap = 1 << 0
	ioringFeatExtArg     = 1 << 8 // 5.11: io_uring_enter takes a timeout
	ioringEnterGetEvents = 1 << 0
	ioringEnterExtArg    = 1 << 3

	opNop   = 0
	opRead  = 22 // IORING_OP_READ (5.6)
	opWrite = 23 // IORING_OP_WRITE
	opFsync = 3  // IORING_OP_FSYNC, with fsyncDatasync: fdatasync

	fsyncDatasync = 1 // IORING_FSYNC_DATASYNC (sqe fsync_flags)
)

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

// getEventsArg is struct io_uring_getevents_arg.
type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWait   uint32
	ts        uint64
}

// kernelTimespec is struct __kernel_timespec (64-bit fields everywhere).
type kernelTimespec struct {
	sec, nsec int64
}

type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	rwFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFdIn  int32
	addr3       uint64
	pad         uint64
}

type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// uring is one ring. Submit-side fields belong to the submitter, cq-side
// to the completer.
type uring struct {
	fd      int
	rings   []byte
	sqeMem  []byte
	sqHead  *uint32
	sqTail  *uint32
	sqMask  uint32
	sqArray unsafe.Pointer
	sqes    unsafe.Pointer
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    unsafe.Pointer
	entries uint32
	pending uint32 // SQEs written but not yet entered
	enters  uint64 // io_uring_enter calls that submitted SQEs
	extArg  bool   // IORING_FEAT_EXT_ARG
	// The wait's argument and timeout live here, in the heap, because
	// the kernel gets the timeout's address as an integer.
	waitArg getEventsArg
	waitTS  kernelTimespec
}

func newURing(entries uint32) (*uring, error) {
	var p uringParams
	fd, _, errno := syscall.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	u := &uring{fd: int(fd), entries: p.sqEntries, extArg: p.features&ioringFeatExtArg != 0}
	if p.features&ioringFeatSingleMmap == 0 {
		unix.Close(u.fd)
		return nil, fmt.Errorf("io_uring without IORING_FEAT_SINGLE_MMAP: %w", ErrNotSupported)
	}
	size := max(int(p.sqOff.array)+int(p.sqEntries)*4, int(p.cqOff.cqes)+int(p.cqEntries)*int(unsafe.Sizeof(cqe{})))
	rings, err := unix.Mmap(u.fd, ioringOffSQRing, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		unix.Close(u.fd)
		return nil, fmt.Errorf("io_uring mmap rings: %w", err)
	}
	sqeMem, err := unix.Mmap(u.fd, ioringOffSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		unix.Munmap(rings)
		unix.Close(u.fd)
		return nil, fmt.Errorf("io_uring mmap sqes: %w", err)
	}
	base := unsafe.Pointer(&rings[0])
	u.rings, u.sqeMem = rings, sqeMem
	u.sqHead = (*uint32)(unsafe.Add(base, p.sqOff.head))
	u.sqTail = (*uint32)(unsafe.Add(base, p.sqOff.tail))
	u.sqMask = *(*uint32)(unsafe.Add(base, p.sqOff.ringMask))
	u.sqArray = unsafe.Add(base, p.sqOff.array)
	u.sqes = unsafe.Pointer(&sqeMem[0])
	u.cqHead = (*uint32)(unsafe.Add(base, p.cqOff.head))
	u.cqTail = (*uint32)(unsafe.Add(base, p.cqOff.tail))
	u.cqMask = *(*uint32)(unsafe.Add(base, p.cqOff.ringMask))
	u.cqes = unsafe.Add(base, p.cqOff.cqes)
	return u, nil
}

// push queues one SQE (submitter only); the caller keeps fewer than
// entries in flight, so the ring never fills.
func (u *uring) push(op uint8, fd int, buf []byte, off int64, userData uint64) {
	tail := atomic.LoadUint32(u.sqTail)
	idx := tail & u.sqMask
	e := (*sqe)(unsafe.Add(u.sqes, uintptr(idx)*unsafe.Sizeof(sqe{})))
	*e = sqe{opcode: op, fd: int32(fd), off: uint64(off), userData: userData}
	if op == opFsync {
		e.rwFlags = fsyncDatasync
	}
	if len(buf) > 0 {
		e.addr = uint64(uintptr(unsafe.Pointer(&buf[0])))
		e.len = uint32(len(buf))
	}
	*(*uint32)(unsafe.Add(u.sqArray, uintptr(idx)*4)) = idx
	atomic.StoreUint32(u.sqTail, tail+1)
	u.pending++
}

// submit enters the queued SQEs (submitter only).
func (u *uring) submit() error {
	for u.pending > 0 {
		n, _, errno := syscall.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), uintptr(u.pending), 0, 0, 0, 0)
		if errno == syscall.EINTR || errno == syscall.EAGAIN || errno == syscall.EBUSY {
			continue
		}
		if errno != 0 {
			return fmt.Errorf("io_uring_enter: %w", errno)
		}
		u.enters++
		u.pending -= uint32(n)
	}
	return nil
}

// wait blocks until at least one completion is ready (completer only).
func (u *uring) wait() error {
	for atomic.LoadUint32(u.cqHead) == atomic.LoadUint32(u.cqTail) {
		_, _, errno := syscall.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), 0, 1, ioringEnterGetEvents, 0, 0)
		if errno != 0 && errno != syscall.EINTR {
			return fmt.Errorf("io_uring_enter(GETEVENTS): %w", errno)
		}
	}
	return nil
}

// discard drops the SQEs pushed and not yet entered (submitter only):
// the kernel reads the submission ring only when entered, so they never
// reach it.
func (u *uring) discard() {
	atomic.StoreUint32(u.sqTail, atomic.LoadUint32(u.sqTail)-u.pending)
	u.pending = 0
}

// ready reports whether a completion is waiting (completer only).
func (u *uring) ready() bool { return atomic.LoadUint32(u.cqHead) != atomic.LoadUint32(u.cqTail) }

// submitAndWait enters the queued SQEs and waits until a completion is
// ready or d has passed, in one io_uring_enter (needs extArg; submitter
// and completer only). A timeout is not an error.
func (u *uring) submitAndWait(d time.Duration) error {
	u.waitTS = kernelTimespec{sec: int64(d / time.Second), nsec: int64(d % time.Second)}
	u.waitArg = getEventsArg{ts: uint64(uintptr(unsafe.Pointer(&u.waitTS)))}
	for {
		n, _, errno := syscall.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), uintptr(u.pending), 1,
			ioringEnterGetEvents|ioringEnterExtArg, uintptr(unsafe.Pointer(&u.waitArg)), unsafe.Sizeof(u.waitArg))
		runtime.KeepAlive(u) // waitArg holds waitTS's address as an integer
		if errno == 0 || errno == syscall.ETIME || errno == syscall.EINTR {
			if errno == 0 && u.pending > 0 {
				u.enters++
				u.pending -= uint32(n)
			}
			if u.pending == 0 || errno != 0 {
				return nil
			}
			continue // not all submitted: enter the rest
		}
		if errno == syscall.EAGAIN || errno == syscall.EBUSY {
			if err := u.submit(); err != nil {
				return err
			}
			continue
		}
		return fmt.Errorf("io_uring_enter(GETEVENTS): %w", errno)
	}
}

// reap calls fn for each ready completion (completer only).
func (u *uring) reap(fn func(userData uint64, res int32)) int {
	head := atomic.LoadUint32(u.cqHead)
	tail := atomic.LoadUint32(u.cqTail)
	n := 0
	for ; head != tail; head++ {
		c := (*cqe)(unsafe.Add(u.cqes, uintptr(head&u.cqMask)*unsafe.Sizeof(cqe{})))
		fn(c.userData, c.res)
		n++
	}
	atomic.StoreUint32(u.cqHead, head)
	return n
}

func (u *uring) close() {
	unix.Munmap(u.sqeMem)
	unix.Munmap(u.rings)
	unix.Close(u.fd)
}

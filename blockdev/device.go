package blockdev

import (
	"errors"
	"syscall"
)

// Errors a device or the queue reports. They wrap kernel errnos so that
// errors.Is(err, syscall.EIO) and friends hold.
var (
	// ErrIO is a failed device IO (EIO).
	ErrIO = ioError{syscall.EIO}
	// ErrOutOfRange is an IO beyond the device's capacity (EIO, as the
	// kernel fails such bios).
	ErrOutOfRange = errors.Join(errors.New("blockdev: IO beyond end of device"), syscall.EIO)
)

type ioError struct{ errno syscall.Errno }

func (e ioError) Error() string        { return "blockdev: " + e.errno.Error() }
func (e ioError) Is(target error) bool { return target == e.errno }
func (e ioError) Unwrap() error        { return e.errno }

// ErrnoOf returns the errno err carries (errors.As finds a
// syscall.Errno), else EIO: the status a failed block IO reports.
func ErrnoOf(err error) int {
	var errno syscall.Errno
	if errors.As(err, &errno) && errno != 0 {
		return int(errno)
	}
	return int(syscall.EIO)
}

// Limits are a device's queue limits, as in /sys/block/<dev>/queue.
type Limits struct {
	// LogicalBlockSize is the smallest addressable unit in bytes (512 or
	// 4096); direct IO must be aligned to it.
	LogicalBlockSize int
	// MaxHWSectorsKB is the largest request the device accepts, in KiB.
	MaxHWSectorsKB int
	// QueueDepth is the number of requests the device holds at once per
	// hardware queue (tags).
	QueueDepth int
	// MaxSegments is the most scatter-gather segments one request may
	// carry (0: the kernel default, 128).
	MaxSegments int
	// MaxSegmentSize is the largest segment in bytes (0: 64 KiB).
	MaxSegmentSize int
	// HWQueues is the number of hardware queues (0: 1).
	HWQueues int
	// Rotational is sysfs queue/rotational: the device seeks (a disk).
	// cfq idles only for rotational devices or shallow queues.
	Rotational bool
	// VolatileCache is sysfs queue/write_cache "write back": completed
	// writes may sit in a cache that a power loss would lose, so a flush
	// (Bio.Flush) must wait for them. Without it the queue completes a
	// flush at once, as the kernel drops REQ_PREFLUSH on queues without
	// QUEUE_FLAG_WC.
	VolatileCache bool
	// FUA says the device honours REQ_FUA on writes (only with a
	// VolatileCache): such a write (Request.FUA) completes once its data
	// is on stable media. The kernel sends FUA to SATA disks since 6.2
	// (libata's fua default) and to NVMe drives with a volatile cache;
	// without it the queue follows a FUA write with a flush.
	FUA bool
}

// Completer is told by a device when a request has finished.
type Completer interface {
	CompleteRequest(r *Request)
}

// Device is a block device model or backend.
//
// Contract:
//   - A flush request (Request.Flush: no data) reaches only a device
//     whose Limits have VolatileCache; it completes once every write the
//     device completed before it arrived is on stable media.
//   - Submit is called on the engine goroutine with a request that lies
//     within Capacity, is aligned to LogicalBlockSize and no larger than
//     MaxHWSectorsKB, and while fewer than QueueDepth requests per
//     hardware queue are outstanding (Request.HWQueue says which). The
//     device owns the request until it completes it.
//   - The device completes every request exactly once, by calling the
//     Completer given to Attach from an engine event at or after the time
//     of Submit, never from inside Submit. A failed request has Err set;
//     partial completion is not reported: a request succeeds or fails whole.
//   - A completed write's stamps are visible to every read submitted after
//     the write completed. Reads and writes in flight together may see
//     either version of overlapping sectors.
//   - The device retains only stamps, not payload bytes, and nothing that
//     was not written to it. A device documented as discarding data (the
//     null device without memory_backed, like null_blk) is exempt from the
//     read-back rule: its reads return zero stamps.
type Device interface {
	// Name is the kernel-style device name, e.g. "nvme0n1".
	Name() string
	// Capacity is the size in bytes.
	Capacity() int64
	// Limits are the device's queue limits.
	Limits() Limits
	// Attach sets the completer; it is called once before any Submit.
	Attach(c Completer)
	// Submit starts a request.
	Submit(r *Request)
}

// heldCommands are the slots of the commands that arrived while a
// non-queued flush was out (libata issues nothing beside one), in arrival
// order. The slice and a spare swap at each release, so holding
// allocates nothing in the steady state.
type heldCommands struct {
	slots, spare []int
}

func (h *heldCommands) hold(slot int) { h.slots = append(h.slots, slot) }

// release lets the held commands arrive, in order, through arrive; once
// one of them starts another flush (flushing reports it), the rest stay
// held behind it.
func (h *heldCommands) release(arrive func(slot int), flushing func() bool) {
	held := h.slots
	h.slots = h.spare[:0]
	for i, slot := range held {
		arrive(slot)
		if flushing() {
			h.slots = append(h.slots, held[i+1:]...)
			break
		}
	}
	h.spare = held[:0]
}

package writeback

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// PageSize is the size of a page in bytes (PAGE_SIZE with 4 KiB pages).
// Every page count in this package is in pages of this size.
const PageSize = 4096

// ErrInvalidLimits is wrapped by every error Limits.Validate returns (and
// New, when its Limits are bad). It matches syscall.EINVAL, as the kernel's
// sysctl handlers reject such values.
var ErrInvalidLimits = errors.Join(errors.New("writeback: invalid limits"), syscall.EINVAL)

// Limits are the vm.dirty_* sysctls of one writeback domain.
//
// A ratio is a percentage of the dirtyable memory (Thresholds' argument);
// a non-zero byte value overrides its ratio, as writing vm.dirty_bytes
// zeroes vm.dirty_ratio in the kernel. The zero Limits is taken to mean
// DefaultLimits by Options and HarnessOptions; any other value is used as
// it is, so start from DefaultLimits and change fields.
type Limits struct {
	// DirtyRatio is vm.dirty_ratio: writers are throttled as dirty plus
	// writeback pages approach this share of dirtyable memory (0-100).
	DirtyRatio int
	// DirtyBackgroundRatio is vm.dirty_background_ratio: the flusher
	// writes in the background while dirty pages exceed this share (0-100).
	DirtyBackgroundRatio int
	// DirtyBytes is vm.dirty_bytes; if non-zero it replaces DirtyRatio.
	// The kernel's minimum, 2 pages, applies.
	DirtyBytes int64
	// DirtyBackgroundBytes is vm.dirty_background_bytes; if non-zero it
	// replaces DirtyBackgroundRatio.
	DirtyBackgroundBytes int64
	// DirtyExpire is vm.dirty_expire_centisecs: periodic (kupdate)
	// writeback writes inodes first dirtied at least this long ago.
	DirtyExpire time.Duration
	// DirtyWriteback is vm.dirty_writeback_centisecs: the flusher's
	// periodic wake-up interval, armed only while some inode is dirty
	// (so an engine with nothing dirty goes idle). Zero disables
	// periodic writeback, as in the kernel.
	DirtyWriteback time.Duration
}

// DefaultLimits returns the kernel's defaults: dirty_ratio 20,
// dirty_background_ratio 10, no byte limits, dirty_expire_centisecs 3000
// (30 s) and dirty_writeback_centisecs 500 (5 s).
func DefaultLimits() Limits {
	return Limits{
		DirtyRatio:           20,
		DirtyBackgroundRatio: 10,
		DirtyExpire:          30 * time.Second,
		DirtyWriteback:       5 * time.Second,
	}
}

// Validate returns nil if the kernel would accept every field, else an
// error wrapping ErrInvalidLimits that names the first bad field: ratios
// outside 0-100, negative byte counts, a non-zero DirtyBytes below two
// pages, negative durations.
func (l Limits) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidLimits, fmt.Sprintf(format, args...))
	}
	switch {
	case l.DirtyRatio < 0 || l.DirtyRatio > 100:
		return bad("dirty_ratio %d is outside 0-100", l.DirtyRatio)
	case l.DirtyBackgroundRatio < 0 || l.DirtyBackgroundRatio > 100:
		return bad("dirty_background_ratio %d is outside 0-100", l.DirtyBackgroundRatio)
	case l.DirtyBytes < 0:
		return bad("dirty_bytes %d is negative", l.DirtyBytes)
	case l.DirtyBytes != 0 && l.DirtyBytes < 2*PageSize:
		return bad("dirty_bytes %d is below the minimum of two pages (%d)", l.DirtyBytes, 2*PageSize)
	case l.DirtyBackgroundBytes < 0:
		return bad("dirty_background_bytes %d is negative", l.DirtyBackgroundBytes)
	case l.DirtyExpire < 0:
		return bad("dirty_expire %v is negative", l.DirtyExpire)
	case l.DirtyWriteback < 0:
		return bad("dirty_writeback %v is negative", l.DirtyWriteback)
	}
	return nil
}

// Thresholds returns the background and dirty thresholds in pages for
// availablePages of dirtyable memory, as the kernel's domain_dirty_limits
// computes them for the global domain:
//
//   - dirty = DIV_ROUND_UP(DirtyBytes, PageSize) if DirtyBytes is set, else
//     (DirtyRatio*PageSize/100) * availablePages / PageSize, with the
//     kernel's integer arithmetic (so 20% of 1000 pages is 199);
//   - background likewise from DirtyBackgroundBytes or
//     DirtyBackgroundRatio;
//   - if background >= dirty, background becomes dirty/2.
//
// Simplified: availablePages stands for the kernel's
// global_dirtyable_memory (free plus file pages, less the reserves, with
// highmem excluded), which the caller supplies; the boosts the kernel gives
// real-time and PF_LESS_THROTTLE tasks (a quarter more plus 1/32 of the
// limit) are not applied; there are no memcg or per-bdi (strictlimit)
// domains. Thresholds does not validate l; negative availablePages count
// as zero.
func (l Limits) Thresholds(availablePages int64) (background, dirty int64) {
	if availablePages < 0 {
		availablePages = 0
	}
	fromRatio := func(pct int) int64 {
		ratio := int64(pct) * PageSize / 100
		return ratio * availablePages / PageSize
	}
	if l.DirtyBytes > 0 {
		dirty = (l.DirtyBytes + PageSize - 1) / PageSize
	} else {
		dirty = fromRatio(l.DirtyRatio)
	}
	if l.DirtyBackgroundBytes > 0 {
		background = (l.DirtyBackgroundBytes + PageSize - 1) / PageSize
	} else {
		background = fromRatio(l.DirtyBackgroundRatio)
	}
	if background >= dirty {
		background = dirty / 2
	}
	return background, dirty
}

// FreerunCeiling returns the dirty count (dirty plus writeback pages) up to
// which BalanceDirtyPages never pauses a writer: halfway between the two
// thresholds (the kernel's dirty_freerun_ceiling).
func FreerunCeiling(background, dirty int64) int64 { return (background + dirty) / 2 }

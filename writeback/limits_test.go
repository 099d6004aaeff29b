package writeback_test

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/writeback"
)

// The kernel's defaults.
func TestDefaultLimits(t *testing.T) {
	l := writeback.DefaultLimits()
	assert.Equal(t, writeback.Limits{
		DirtyRatio: 20, DirtyBackgroundRatio: 10,
		DirtyExpire: 30 * time.Second, DirtyWriteback: 5 * time.Second,
	}, l)
	require.NoError(t, l.Validate())
}

// Ratios are shares of the dirtyable memory, computed with
// domain_dirty_limits' integer arithmetic: the ratio is scaled to
// PAGE_SIZE units first (20% -> 819/4096).
func TestThresholdsRatio(t *testing.T) {
	l := writeback.DefaultLimits()
	bg, dirty := l.Thresholds(1000)
	assert.Equal(t, int64(99), bg, "409*1000/4096")
	assert.Equal(t, int64(199), dirty, "819*1000/4096")

	bg, dirty = l.Thresholds(1 << 20) // 4 GiB
	assert.Equal(t, int64(409<<8), bg)
	assert.Equal(t, int64(819<<8), dirty)

	bg, dirty = l.Thresholds(-5)
	assert.Zero(t, bg)
	assert.Zero(t, dirty)
}

// Byte limits override their ratios and round up to whole pages.
func TestThresholdsBytes(t *testing.T) {
	l := writeback.DefaultLimits()
	l.DirtyBytes = 1 << 20
	l.DirtyBackgroundBytes = 256<<10 + 1
	bg, dirty := l.Thresholds(1 << 30)
	assert.Equal(t, int64(256), dirty, "1 MiB")
	assert.Equal(t, int64(65), bg, "256 KiB + 1 byte rounds up")

	// One of each kind: bytes for dirty, ratio for background.
	l = writeback.DefaultLimits()
	l.DirtyBytes = 8 << 20
	bg, dirty = l.Thresholds(10000)
	assert.Equal(t, int64(2048), dirty)
	assert.Equal(t, int64(998), bg, "409*10000/4096")
}

// A background threshold at or above the dirty threshold is clamped to
// half of it.
func TestThresholdsClamp(t *testing.T) {
	l := writeback.DefaultLimits()
	l.DirtyBackgroundRatio = 30
	bg, dirty := l.Thresholds(1000)
	assert.Equal(t, int64(199), dirty)
	assert.Equal(t, int64(99), bg, "199/2")

	l = writeback.DefaultLimits()
	l.DirtyBytes = 1 << 20
	l.DirtyBackgroundBytes = 1 << 20
	bg, dirty = l.Thresholds(1000)
	assert.Equal(t, int64(256), dirty)
	assert.Equal(t, int64(128), bg, "equal is clamped too")

	l.DirtyBackgroundBytes = 1<<20 - 100
	bg, _ = l.Thresholds(1000)
	assert.Equal(t, int64(128), bg, "rounds up to 256 pages, then clamps")

	assert.Equal(t, int64(149), writeback.FreerunCeiling(99, 199))
}

// Bad values are rejected with ErrInvalidLimits (EINVAL), naming the
// field; New rejects them too.
func TestLimitsValidate(t *testing.T) {
	base := writeback.DefaultLimits()
	tests := []struct {
		name string
		mod  func(*writeback.Limits)
		want string
	}{
		{"ratio above 100", func(l *writeback.Limits) { l.DirtyRatio = 101 }, "dirty_ratio"},
		{"negative ratio", func(l *writeback.Limits) { l.DirtyRatio = -1 }, "dirty_ratio"},
		{"background ratio", func(l *writeback.Limits) { l.DirtyBackgroundRatio = 200 }, "dirty_background_ratio"},
		{"negative bytes", func(l *writeback.Limits) { l.DirtyBytes = -1 }, "dirty_bytes"},
		{"bytes below two pages", func(l *writeback.Limits) { l.DirtyBytes = 2*writeback.PageSize - 1 }, "minimum"},
		{"negative background bytes", func(l *writeback.Limits) { l.DirtyBackgroundBytes = -4096 }, "dirty_background_bytes"},
		{"negative expire", func(l *writeback.Limits) { l.DirtyExpire = -time.Second }, "dirty_expire"},
		{"negative interval", func(l *writeback.Limits) { l.DirtyWriteback = -1 }, "dirty_writeback"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := base
			tc.mod(&l)
			err := l.Validate()
			require.Error(t, err)
			assert.ErrorIs(t, err, writeback.ErrInvalidLimits)
			assert.True(t, errors.Is(err, syscall.EINVAL))
			assert.Contains(t, err.Error(), tc.want)

			e := sim.New(sim.Options{})
			defer e.Close()
			_, err = writeback.New(e, writeback.Options{Limits: l, AvailablePages: 100, Writepager: nopFS{}})
			assert.ErrorIs(t, err, writeback.ErrInvalidLimits)
		})
	}
	ok := base
	ok.DirtyBytes = 2 * writeback.PageSize
	ok.DirtyWriteback = 0 // periodic writeback off is valid
	assert.NoError(t, ok.Validate())
}

// nopFS is a filesystem with nothing to write.
type nopFS struct{}

func (nopFS) Writepages(*sim.Task, writeback.Inode, *writeback.Control) error { return nil }
func (nopFS) WaitOnWriteback(*sim.Task, writeback.Inode, int64, int64)        {}

// New checks its required options.
func TestNewOptions(t *testing.T) {
	e := sim.New(sim.Options{})
	defer e.Close()
	_, err := writeback.New(e, writeback.Options{Writepager: nopFS{}})
	assert.ErrorContains(t, err, "AvailablePages")
	_, err = writeback.New(e, writeback.Options{AvailablePages: 1})
	assert.ErrorContains(t, err, "Writepager")
	_, err = writeback.New(e, writeback.Options{AvailablePages: 1, Writepager: writepagesOnly{}})
	assert.ErrorContains(t, err, "Waiter")
	wb, err := writeback.New(e, writeback.Options{AvailablePages: 1, Writepager: writepagesOnly{}, Waiter: nopFS{}})
	require.NoError(t, err)
	assert.Equal(t, writeback.DefaultLimits(), wb.Limits(), "zero Limits mean the defaults")
	assert.Equal(t, "default", wb.Policy().Name())
	assert.Equal(t, "flush-wb", wb.Flusher().Name())
	assert.Equal(t, int64(25600), wb.Bandwidth(), "INIT_BW")
}

type writepagesOnly struct{}

func (writepagesOnly) Writepages(*sim.Task, writeback.Inode, *writeback.Control) error { return nil }

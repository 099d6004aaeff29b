//go:build !linux

package realdev

import (
	"fmt"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/sim/wallclock"
)

// Device is a real O_DIRECT target; on this platform it cannot be opened.
type Device struct{}

// Open returns ErrNotSupported: real devices need Linux.
func Open(e *sim.Engine, clock *wallclock.Clock, sp Spec, opt Options) (*Device, error) {
	return nil, fmt.Errorf("%s: %w", sp, ErrNotSupported)
}

// Name returns "".
func (d *Device) Name() string { return "" }

// Capacity returns 0.
func (d *Device) Capacity() int64 { return 0 }

// Limits returns zero limits.
func (d *Device) Limits() blockdev.Limits { return blockdev.Limits{} }

// Attach does nothing.
func (d *Device) Attach(blockdev.Completer) {}

// Submit does nothing (no Device can be opened here).
func (d *Device) Submit(*blockdev.Request) {}

// Spec returns the zero Spec.
func (d *Device) Spec() Spec { return Spec{} }

// Stats returns zero stats.
func (d *Device) Stats() Stats { return Stats{} }

// Close does nothing.
func (d *Device) Close() error { return nil }

// Probe returns ErrNotSupported.
func (d *Device) Probe(l Load, region int64, dur time.Duration) (Measured, error) {
	return Measured{}, ErrNotSupported
}

package stack

import (
	"fmt"

	"github.com/blksim/blksim/blockdev/realdev"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/sim/wallclock"
)

// realTarget is the real device a Config builds on.
type realTarget struct {
	spec realdev.Spec
	opt  realdev.Options
}

// realCostKeys are the host costs a real device's latency already
// contains: the device time is measured around the kernel's own syscall
// entry, direct-IO setup, block layer, driver, interrupt and wake-up, so
// the model's figures for them would count them twice. SetRealDevice sets
// those still at their defaults to 0; --set (or the stack file) puts them
// back. The lock costs (spin handoff) and CPU count stay.
var realCostKeys = []string{
	"host.syscall", "host.dio_setup", "host.dio_per_page", "host.bio_submit", "host.dio_complete",
	"host.app_per_io", "host.wake_latency", "host.context_switch",
}

// SetRealDevice makes Build open the real target spec ("file:PATH[,size=N]"
// or "blk:/dev/NAME", see package realdev) instead of the device profile,
// and run the engine on the wall clock (sim/wallclock). The queue depth is
// the queue.nr_requests key if set, else 64. Errors wrap ErrConfig (and
// realdev.ErrBadSpec for a spec that does not parse).
func (c *Config) SetRealDevice(spec string, opt realdev.Options) error {
	sp, err := realdev.ParseSpec(spec)
	if err != nil {
		return fmt.Errorf("--device: %w: %w", ErrConfig, err)
	}
	for _, k := range realCostKeys {
		if c.where[k] == "default" {
			c.vals[k] = "0"
			c.where[k] = "default (real device)"
		}
	}
	c.real = &realTarget{spec: sp, opt: opt}
	return nil
}

// RealCostKeys returns the host cost keys that a real device's latency
// already contains, which SetRealDevice sets to 0 (and a stack that
// predicts a real device should too).
func RealCostKeys() []string { return append([]string(nil), realCostKeys...) }

// RealDevice returns the real target's spec, if SetRealDevice was called.
func (c *Config) RealDevice() (realdev.Spec, bool) {
	if c.real == nil {
		return realdev.Spec{}, false
	}
	return c.real.spec, true
}

// NewWallClock returns the wall clock for a real-device stack, with the
// polling of the wall.spin, wall.idle_spin and wall.idle_spin_inflight
// keys (wallclock.Clock.Spin, IdleSpin and IdleSpinInFlight).
func (c *Config) NewWallClock() *wallclock.Clock {
	w := wallclock.New()
	w.Spin = c.duration("wall.spin")
	w.IdleSpin = c.duration("wall.idle_spin")
	w.IdleSpinInFlight = c.integer("wall.idle_spin_inflight")
	return w
}

// openReal opens the real target for engine e on clock w.
func (c *Config) openReal(e *sim.Engine, w *wallclock.Clock) (*realdev.Device, error) {
	opt := c.real.opt
	if n := c.integer("queue.nr_requests"); n > 0 && opt.QueueDepth == 0 {
		opt.QueueDepth = n
	}
	if kb := c.integer("queue.max_hw_sectors_kb"); kb > 0 && opt.MaxHWSectorsKB == 0 {
		opt.MaxHWSectorsKB = kb
	}
	opt.Reaper = c.boolean("wall.reaper")
	d, err := realdev.Open(e, w, c.real.spec, opt)
	if err != nil {
		return nil, fmt.Errorf("--device: %w", err)
	}
	return d, nil
}

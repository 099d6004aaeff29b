package realdev

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/blksim/blksim/blockdev"
)

// ProbeWriter is the writer in the stamps of the sectors Probe writes.
const ProbeWriter = 0xCA11

// Probe measures l straight on the target, the way fio's io_uring engine
// does: the calling goroutine keeps l.QD requests in flight through an
// io_uring of its own, submitting the replacements of each batch of
// completions with one system call, and times every request from just
// before its submission to its reaping. No engine, wall clock or reaper
// goroutine is involved, so what it measures is the target as the kernel
// delivers it, without blksim's own per-request costs; Measure on the
// engine measures the target as blksim's real mode sees it.
//
// It runs a warm-up of dur/10, then a window of dur, over the first region
// bytes of the target (0: all of it), at offsets and directions drawn as
// Measure draws them. Written sectors carry stamped headers (writer
// ProbeWriter, this Open's generation), so the target stays consistent for
// later reads; what it reads is not verified. Only call it on the engine
// goroutine while no request of the engine is in flight (as between
// engine runs), with l.QD at most the device's queue depth and l.BS at
// most its request size cap.
func (d *Device) Probe(l Load, region int64, dur time.Duration) (Measured, error) {
	if d.closed {
		return Measured{}, fmt.Errorf("realdev %s: probe: the device is closed", d.t.name)
	}
	if n := d.inflight.Load(); n != 0 {
		return Measured{}, fmt.Errorf("realdev %s: probe: %d requests of the engine in flight", d.t.name, n)
	}
	if region <= 0 || region > d.t.size {
		region = d.t.size
	}
	if l.BS <= 0 || l.BS%int64(d.t.lbs) != 0 || l.BS > int64(d.maxKB)*1024 || l.BS > region || l.QD < 1 || l.QD > d.qd {
		return Measured{}, fmt.Errorf("realdev %s: probe: bad load %v (block size a multiple of %d up to %d KiB, depth 1 to %d)",
			d.t.name, l, d.t.lbs, d.maxKB, d.qd)
	}
	ring, err := newURing(uint32(l.QD))
	if err != nil {
		return Measured{}, fmt.Errorf("realdev %s: probe: %w", d.t.name, err)
	}
	defer ring.close()
	rng := rand.New(rand.NewPCG(1, 2))
	started := make([]time.Time, l.QD)
	var next int64
	issue := func(i int) {
		op := uint8(opRead)
		if rng.IntN(100) >= l.ReadPct {
			op = opWrite
		}
		var off int64
		if l.Sequential {
			off = next
			next += l.BS
			if next+l.BS > region {
				next = 0
			}
		} else {
			off = rng.Int64N(region/l.BS) * l.BS
		}
		buf := d.slots[i].buf[:l.BS]
		if op == opWrite {
			d.probeSeq++
			st := blockdev.Stamp{Writer: ProbeWriter, Seq: d.probeSeq}
			sec := off / blockdev.SectorSize
			for k := range l.BS / blockdev.SectorSize {
				putHeader(buf[k*blockdev.SectorSize:(k+1)*blockdev.SectorSize], sec+k, st, d.gen)
			}
			d.stats.Writes++
			d.stats.WriteBytes += uint64(l.BS)
		} else {
			d.stats.Reads++
			d.stats.ReadBytes += uint64(l.BS)
		}
		started[i] = time.Now()
		ring.push(op, d.t.fd, buf, off, uint64(i))
	}
	warm := time.Now().Add(dur / 10)
	deadline := warm.Add(dur)
	for i := range l.QD {
		issue(i)
	}
	inflight := l.QD
	var (
		ios    int
		bytes  int64
		latSum time.Duration
		ioErr  error
	)
	for inflight > 0 {
		var err error
		if ring.extArg {
			// Enter the new requests at once, check the completion
			// ring for a while (as real mode does), then wait for a
			// completion in the kernel, as fio does.
			if err = ring.submit(); err == nil {
				spinUntilReady(ring, d.clock.IdleSpin)
			}
			for err == nil && !ring.ready() {
				err = ring.submitAndWait(time.Second)
			}
		} else if err = ring.submit(); err == nil {
			err = ring.wait()
		}
		if err != nil {
			return Measured{}, fmt.Errorf("realdev %s: probe: %w", d.t.name, err)
		}
		ring.reap(func(ud uint64, res int32) {
			now := time.Now()
			i := int(ud)
			inflight--
			switch {
			case res < 0 && ioErr == nil:
				ioErr = fmt.Errorf("realdev %s: probe %v: %w", d.t.name, l, syscall.Errno(-res))
			case res >= 0 && int64(res) != l.BS && ioErr == nil:
				ioErr = fmt.Errorf("realdev %s: probe %v: short transfer (%d of %d bytes): %w", d.t.name, l, res, l.BS, blockdev.ErrIO)
			}
			if !now.Before(warm) && (!now.After(deadline) || ios == 0) {
				// Nothing in the window (a loaded machine): it
				// stretches to this first completion after it.
				if now.After(deadline) {
					deadline = now
				}
				ios++
				bytes += l.BS
				latSum += now.Sub(started[i])
			}
			if now.Before(deadline) && ioErr == nil {
				issue(i)
				inflight++
			}
		})
	}
	if ioErr != nil {
		d.stats.Errors++
		return Measured{}, ioErr
	}
	if ios == 0 {
		return Measured{}, fmt.Errorf("realdev %s: probe %v: nothing completed", d.t.name, l)
	}
	win := deadline.Sub(warm).Seconds()
	return Measured{IOPS: float64(ios) / win, MeanLat: latSum / time.Duration(ios),
		MBps: float64(bytes) / win / 1e6, IOs: ios}, nil
}

// spinUntilReady checks the completion ring for up to d without blocking.
func spinUntilReady(u *uring, d time.Duration) {
	if d <= 0 || u.ready() {
		return
	}
	for end := time.Now().Add(d); !u.ready() && time.Now().Before(end); {
	}
}

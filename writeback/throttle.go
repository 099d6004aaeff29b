package writeback

import (
	"math"
	"time"

	"github.com/blksim/blksim/sim"
)

// MaxPause is MAX_PAUSE: the longest single pause BalanceDirtyPages makes
// a writer take.
const MaxPause = 200 * time.Millisecond

// maxPauseJiffies is roundup_pow_of_two(1 + HZ/8) at HZ=250, in jiffies
// of 4 ms: wb_max_pause lets a pause last at most this many jiffies per
// second of writeback the dirty pages need (about an eighth of the time
// to write them all), so that a small pool of dirty pages is not left to
// drain while its writers sleep. (It is 0.128 s per second at HZ 250 and
// 1000 alike.)
const (
	maxPauseJiffies = 32
	jiffy           = 4 * time.Millisecond
)

// maxPause is wb_max_pause: the longest pause for a domain with dirty
// (dirty plus writeback) pages written back at rate pages per second:
// about an eighth of the time to write them, plus a jiffy, at most
// MaxPause.
func maxPause(dirty, rate int64) time.Duration {
	per := 1 + rate/maxPauseJiffies // pages written per jiffy-slice
	t := dirty/per + 1              // jiffies
	if t >= int64(MaxPause/jiffy) {
		return MaxPause
	}
	return time.Duration(t) * jiffy
}

// initBandwidth is INIT_BW: 100 MiB/s in 4 KiB pages per second.
const initBandwidth = 100 << 20 / PageSize

// Bandwidth-estimate constants: samples at least BANDWIDTH_INTERVAL
// apart, averaged over a period of about 3 s, idle gaps longer than a
// second skipped (wb_update_write_bandwidth).
const (
	bandwidthInterval = 200 * time.Millisecond
	bandwidthPeriod   = 3 * time.Second
	bandwidthIdle     = time.Second
)

// ratelimitShift is RATELIMIT_CALC_SHIFT, the fixed-point shift of
// pos_ratio.
const ratelimitShift = 10

// bandwidth estimates the domain's write bandwidth from writeback
// completions.
type bandwidth struct {
	rate    int64 // pages per second
	stamp   sim.Time
	written int64 // pages completed since stamp
}

func (b *bandwidth) init(rate int64, now sim.Time) {
	b.rate, b.stamp = rate, now
}

// busy is called when writeback starts from idle: a gap longer than
// bandwidthIdle is not counted as slow writeback.
func (b *bandwidth) busy(now sim.Time) {
	if time.Duration(now-b.stamp) > bandwidthIdle {
		b.stamp, b.written = now, 0
	}
}

// completed records n pages whose writeback completed at now.
func (b *bandwidth) completed(n int64, now sim.Time) {
	b.written += n
	elapsed := time.Duration(now - b.stamp)
	if elapsed < bandwidthInterval {
		return
	}
	raw := b.written * int64(time.Second) // pages/s times elapsed
	if elapsed > bandwidthPeriod {
		b.rate = raw / int64(elapsed)
	} else {
		b.rate = (b.rate*int64(bandwidthPeriod-elapsed) + raw) / int64(bandwidthPeriod)
	}
	if b.rate < 1 {
		b.rate = 1
	}
	b.stamp, b.written = now, 0
}

// Bandwidth returns the current write bandwidth estimate in pages per
// second.
func (wb *Writeback) Bandwidth() int64 { return wb.bw.rate }

// posRatio is the kernel's global pos_ratio (wb_position_ratio without the
// per-wb part) in 1<<ratelimitShift fixed point: 2.0 at the freerun
// ceiling, 1.0 at the setpoint halfway to the limit, falling as a cubic to
// 0 at the limit; 0 at or above the limit.
func posRatio(dirty, freerun, limit int64) int64 {
	if dirty >= limit {
		return 0
	}
	setpoint := (freerun + limit) / 2
	x := ((setpoint - dirty) << ratelimitShift) / ((limit - setpoint) | 1)
	pos := x
	pos = pos * x >> ratelimitShift
	pos = pos * x >> ratelimitShift
	pos += 1 << ratelimitShift
	return min(max(pos, 0), 2<<ratelimitShift)
}

// PauseFor returns the pause BalanceDirtyPages would give a writer that
// has just dirtied pages, with dirty (dirty plus writeback) pages against
// the current thresholds and bandwidth estimate, and whether the writer
// is at the limit (it would pause again after this pause). It does not
// change anything.
func (wb *Writeback) PauseFor(dirtied, dirty int64) (pause time.Duration, atLimit bool) {
	bg, limit := wb.Thresholds()
	freerun := FreerunCeiling(bg, limit)
	if dirty <= freerun {
		return 0, false
	}
	maxP := maxPause(dirty, wb.bw.rate)
	rate := wb.bw.rate * posRatio(dirty, freerun, limit) >> ratelimitShift
	if rate <= 0 {
		return maxP, true
	}
	if dirtied <= 0 {
		return 0, false
	}
	if dirtied > math.MaxInt64/int64(time.Second) {
		return maxP, false
	}
	return min(time.Duration(dirtied*int64(time.Second)/rate), maxP), false
}

// BalanceDirtyPages throttles a writer that has just dirtied pages, as
// balance_dirty_pages does; call it after dirtying (and AccountDirtied,
// MarkInodeDirty). With d = DirtyPages()+WritebackPages():
//
//   - d at or below the freerun ceiling (background+dirty thresholds)/2:
//     no pause;
//   - above it and below the dirty limit: one pause of dirtied pages at a
//     rate of the write bandwidth estimate times pos_ratio (2 at the
//     ceiling, 1 at the setpoint halfway to the limit, falling as the
//     kernel's cubic towards 0 at the limit), so the pause grows with the
//     overshoot;
//   - at or above the dirty limit: pauses of the longest length,
//     repeated until writeback completions bring d below the limit.
//
// No pause is longer than wb_max_pause: about an eighth of the time the
// write bandwidth estimate needs to write d pages, plus a 4 ms jiffy, and
// at most MaxPause (so with little dirty memory the pauses are short and
// the device does not run dry while writers sleep).
//
// Whenever dirty pages exceed the background threshold it kicks the
// flusher. It returns at once on a closed Writeback (after any pause in
// progress).
//
// Simplified: the kernel rates a task at dirty_ratelimit * pos_ratio,
// where dirty_ratelimit is a per-domain rate fed back so that N writers
// share the write bandwidth; here the rate is the measured write
// bandwidth itself (so N writers settle where pos_ratio is about 1/N,
// nearer the limit than the kernel's setpoint), and the
// per-bdi (wb) half of pos_ratio, min_pause and the nr_dirtied_pause
// ratelimiting of calls are left out: call it per write with the pages
// that write dirtied.
func (wb *Writeback) BalanceDirtyPages(t *sim.Task, dirtied int64) {
	// The pauses wait for writeback to make progress: they are not
	// progress themselves, so a writer throttled forever while nothing is
	// written is a stall (sim.Engine.SetStallLimit), not a busy run.
	defer t.SetPolling(t.SetPolling(true))
	for !wb.closed {
		pause, atLimit := wb.PauseFor(dirtied, wb.nrDirty+wb.nrWriteback)
		if pause == 0 && !atLimit {
			break
		}
		wb.Kick()
		if pause > 0 {
			t.Sleep(pause)
			wb.stats.Pauses++
			wb.stats.PauseTotal += pause
			wb.stats.PauseMax = max(wb.stats.PauseMax, pause)
			if atLimit {
				wb.stats.LimitPauses++
			}
		}
		if !atLimit {
			break
		}
	}
	if wb.overBackground() {
		wb.Kick()
	}
}

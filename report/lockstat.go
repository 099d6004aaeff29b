package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/blksim/blksim/sim"
)

// lockColumns are the table's column headers, /proc/lock_stat's plus
// blksim's spins and handoffs.
var lockColumns = [...]string{
	"class name",
	"con-bounces", "contentions", "waittime-min", "waittime-max", "waittime-total", "waittime-avg",
	"acq-bounces", "acquisitions", "holdtime-min", "holdtime-max", "holdtime-total", "holdtime-avg",
	"spins", "handoffs",
}

// WriteLockStat writes a lockstat-style table of locks, one row per lock and
// acquisition mode with at least one acquisition, in the order given. It
// writes nothing if there is no such row, and returns the first error from
// w.
//
// As in /proc/lock_stat, a lock's exclusive row comes before its shared
// row; the class name is the lock's Name, suffixed "-W" and "-R" when the
// lock has both rows, the shared row "-R" also alone, and an exclusive
// row of a lock never taken shared (a mutex, or an rwsem only written)
// has no suffix. Times are simulated microseconds with two decimals,
// rounded as the kernel displays them (half up at 10 ns): waittime-avg is
// the total wait over contentions in whole nanoseconds (0.00 if none),
// holdtime-avg the total hold over acquisitions, waittime-min the
// smallest non-zero wait. A wait ends when
// the waiter has run its handoff (wake-to-run latency, context switch,
// cache-line transfer), so those costs are wait time, not hold time.
// acq-bounces counts acquisitions on a CPU other than the previous
// owner's (the lock's cache line moved), con-bounces those that were also
// contended. spins counts
// acquisitions won by optimistic spinning. handoffs belong to the lock, not
// to a mode: the lock's first row shows them and its second row "-".
// Columns are aligned with spaces: names left, numbers right.
func WriteLockStat(w io.Writer, locks []sim.LockStats) error {
	b := bufio.NewWriter(w)
	writeLockTable(b, locks)
	return b.Flush()
}

// hasLockRows reports whether any lock has a row to print.
func hasLockRows(locks []sim.LockStats) bool {
	for i := range locks {
		if locks[i].Read.Acquisitions > 0 || locks[i].Write.Acquisitions > 0 {
			return true
		}
	}
	return false
}

// writeLockTable writes the table for WriteLockStat and WriteNormal.
func writeLockTable(b *bufio.Writer, locks []sim.LockStats) {
	var rows [][]string
	for i := range locks {
		l := &locks[i]
		first := true
		modes := []struct {
			suffix string
			m      *sim.LockModeStats
		}{{"-W", &l.Write}, {"-R", &l.Read}}
		if l.Read.Acquisitions == 0 {
			modes[0].suffix = ""
		}
		for _, md := range modes {
			if md.m.Acquisitions == 0 {
				continue
			}
			handoffs := "-"
			if first {
				handoffs = strconv.FormatUint(l.Handoffs, 10)
				first = false
			}
			rows = append(rows, lockRow(l.Name+md.suffix, md.m, handoffs))
		}
	}
	if len(rows) == 0 {
		return
	}

	widths := make([]int, len(lockColumns))
	for i, c := range lockColumns {
		widths[i] = len(c)
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	total := 0
	for _, w := range widths {
		total += w
	}
	total += 2 * (len(widths) - 1)

	b.WriteString("lock_stat (simulated; times in usec):\n")
	writeLockLine(b, lockColumns[:], widths)
	b.WriteString(strings.Repeat("-", total))
	b.WriteString("\n")
	for _, r := range rows {
		writeLockLine(b, r, widths)
	}
}

// lockRow formats one mode of a lock.
func lockRow(name string, m *sim.LockModeStats, handoffs string) []string {
	var waitAvg, holdAvg time.Duration
	if m.Contentions > 0 {
		waitAvg = m.WaitTotal / time.Duration(m.Contentions)
	}
	if m.Acquisitions > 0 {
		holdAvg = m.HoldTotal / time.Duration(m.Acquisitions)
	}
	return []string{
		name,
		strconv.FormatUint(m.ConBounces, 10),
		strconv.FormatUint(m.Contentions, 10),
		usec(m.WaitMin), usec(m.WaitMax), usec(m.WaitTotal), usec(waitAvg),
		strconv.FormatUint(m.AcqBounces, 10),
		strconv.FormatUint(m.Acquisitions, 10),
		usec(m.HoldMin), usec(m.HoldMax), usec(m.HoldTotal), usec(holdAvg),
		strconv.FormatUint(m.Spins, 10),
		handoffs,
	}
}

// writeLockLine writes one aligned row: the first cell left-aligned, the
// others right-aligned, two spaces apart, no trailing blanks.
func writeLockLine(b *bufio.Writer, cells []string, widths []int) {
	for i, c := range cells {
		if i == 0 {
			fmt.Fprintf(b, "%-*s", widths[i], c)
			continue
		}
		fmt.Fprintf(b, "  %*s", widths[i], c)
	}
	b.WriteString("\n")
}

// usec formats a simulated duration in microseconds with two decimals.
func usec(d time.Duration) string {
	// lockdep's snprint_time: add 5 ns, then cut to 10 ns.
	ns := int64(d) + 5
	return fmt.Sprintf("%d.%02d", ns/1000, ns%1000/10)
}

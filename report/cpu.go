package report

import (
	"bufio"
	"fmt"
	"io"
	"time"

	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/workload"
)

// cpuLine is fio's per-job "cpu" line (show_thread_status_normal): usr
// and sys as percentages of the runtime, context switches, and the page
// fault counts, which blksim does not model (always 0).
func cpuLine(c *workload.CPUUsage) string {
	usr, sys := c.Percent()
	return fmt.Sprintf("  cpu          : usr=%3.2f%%, sys=%3.2f%%, ctx=%d, majf=0, minf=0\n", usr, sys, c.Ctx)
}

// WriteCPUUtil writes blksim's per-CPU utilisation table for r (nothing if
// r.CPUs is empty) and returns the first error from w.
//
// Its title gives the simulated time the percentages are of
// (r.Engine.SimulatedSeconds); then one row per CPU that was busy at all,
// "cpu usr sys idle" in percent with two decimals, and an "all" row with
// the averages over every CPU of the host, idle ones included. When tasks
// spun on locks, a last line gives that time, which no CPU row holds
// (spinning does not occupy a simulated CPU; it is in the spinners' sys
// time of fio's cpu line).
func WriteCPUUtil(w io.Writer, r *workload.Result) error {
	b := bufio.NewWriter(w)
	writeCPUTable(b, r)
	return b.Flush()
}

// writeCPUTable writes the table for WriteCPUUtil and WriteNormal.
func writeCPUTable(b *bufio.Writer, r *workload.Result) {
	if len(r.CPUs) == 0 {
		return
	}
	elapsed := time.Duration(r.Engine.SimulatedSeconds * 1e9)
	pct := func(d time.Duration) float64 {
		if elapsed <= 0 {
			return 0
		}
		return float64(d) * 100 / float64(elapsed)
	}
	fmt.Fprintf(b, "cpu_util (simulated; percent of %.2f s on %d CPUs):\n", r.Engine.SimulatedSeconds, len(r.CPUs))
	fmt.Fprintf(b, "%-4s  %7s  %7s  %7s\n", "cpu", "usr", "sys", "idle")
	var all sim.CPUStat
	for id, c := range r.CPUs {
		all.User += c.User
		all.Sys += c.Sys
		if c.User+c.Sys == 0 {
			continue
		}
		u, s := pct(c.User), pct(c.Sys)
		fmt.Fprintf(b, "%-4d  %7.2f  %7.2f  %7.2f\n", id, u, s, max(100-u-s, 0))
	}
	n := time.Duration(len(r.CPUs))
	u, s := pct(all.User/n), pct(all.Sys/n)
	fmt.Fprintf(b, "%-4s  %7.2f  %7.2f  %7.2f\n", "all", u, s, max(100-u-s, 0))
	if r.SpinTime > 0 {
		fmt.Fprintf(b, "lock spinning, on no simulated CPU: %.3f ms\n", float64(r.SpinTime)/1e6)
	}
}

// cpusJSON is the "cpus" array of the "blksim" object.
func cpusJSON(cpus []sim.CPUStat) []any {
	out := []any{}
	for id, c := range cpus {
		o := new(jsonObject)
		o.add("cpu", id)
		o.add("usr_ns", int64(c.User))
		o.add("sys_ns", int64(c.Sys))
		out = append(out, o)
	}
	return out
}

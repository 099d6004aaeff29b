package report

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/workload"
)

// msec converts a duration to whole milliseconds, as /proc/diskstats
// counts ticks.
func msec(d time.Duration) uint64 { return uint64(d / time.Millisecond) }

// utilPct is the share of the elapsed time the device was busy.
func utilPct(d *workload.DiskResult) float64 {
	if d.Elapsed <= 0 {
		return 0
	}
	return 100 * float64(d.Stats.IOTicks) / float64(d.Elapsed)
}

// writeDiskStats writes fio's "Disk stats (read/write)" block, as fio
// 3.33's print_disk_util (later fio versions add sectors=; the iostat
// table has the amounts).
func writeDiskStats(b *bufio.Writer, disks []workload.DiskResult) {
	b.WriteString("\nDisk stats (read/write):\n")
	for i := range disks {
		d := &disks[i]
		s := &d.Stats
		fmt.Fprintf(b, "  %s: ios=%d/%d, merge=%d/%d, ticks=%d/%d, in_queue=%d, util=%.2f%%\n",
			d.Name, s.IOs[0], s.IOs[1], s.Merges[0], s.Merges[1],
			msec(s.Ticks[0]), msec(s.Ticks[1]), msec(s.TimeInQueue), utilPct(d))
	}
}

// iostatRow holds one device's iostat -x figures.
type iostatRow struct {
	rs, ws, rMBs, wMBs, rrqm, wrqm, rAwait, wAwait, aqu, rareq, wareq, util float64
	// fs and fAwait are the cache flushes per second and their mean time
	// (sysstat's f/s and f_await).
	fs, fAwait float64
}

func iostatOf(d *workload.DiskResult) iostatRow {
	s := &d.Stats
	secs := d.Elapsed.Seconds()
	if secs <= 0 {
		return iostatRow{}
	}
	per := func(n uint64) float64 { return float64(n) / secs }
	await := func(op int) float64 {
		if s.IOs[op] == 0 {
			return 0
		}
		return float64(s.Ticks[op]) / float64(s.IOs[op]) / 1e6
	}
	reqsz := func(op int) float64 {
		if s.IOs[op] == 0 {
			return 0
		}
		return float64(s.Sectors[op]) * blockdev.SectorSize / float64(s.IOs[op]) / 1024
	}
	return iostatRow{
		rs: per(s.IOs[0]), ws: per(s.IOs[1]),
		rMBs: per(s.Sectors[0]) * blockdev.SectorSize / (1 << 20), wMBs: per(s.Sectors[1]) * blockdev.SectorSize / (1 << 20),
		rrqm: per(s.Merges[0]), wrqm: per(s.Merges[1]),
		rAwait: await(0), wAwait: await(1),
		aqu:   float64(s.TimeInQueue) / float64(d.Elapsed),
		rareq: reqsz(0), wareq: reqsz(1),
		util: utilPct(d),
		fs:   per(s.Flushes),
		fAwait: func() float64 {
			if s.Flushes == 0 {
				return 0
			}
			return float64(s.FlushTicks) / float64(s.Flushes) / 1e6
		}(),
	}
}

// writeIostat writes an iostat -x style table (MB are MiB, sizes KiB,
// awaits ms), one row per device.
func writeIostat(b *bufio.Writer, disks []workload.DiskResult) {
	head := []string{"Device", "r/s", "w/s", "rMB/s", "wMB/s", "rrqm/s", "wrqm/s", "r_await", "w_await", "aqu-sz", "rareq-sz", "wareq-sz", "%util"}
	rows := [][]string{head}
	for i := range disks {
		r := iostatOf(&disks[i])
		f := func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
		rows = append(rows, []string{disks[i].Name, f(r.rs), f(r.ws), f(r.rMBs), f(r.wMBs), f(r.rrqm), f(r.wrqm),
			f(r.rAwait), f(r.wAwait), f(r.aqu), f(r.rareq), f(r.wareq), f(r.util)})
	}
	b.WriteString("\niostat (simulated):\n")
	writeTable(b, rows)
	for i := range disks {
		st := &disks[i].Stats
		fmt.Fprintf(b, "%s: per bio (as btt): D2C avg %.2f us, Q2C avg %.2f us\n", disks[i].Name,
			avgNs(st.D2C[:], st.Bios[:])/1e3, avgNs(st.Q2C[:], st.Bios[:])/1e3)
		if st.Flushes > 0 {
			r := iostatOf(&disks[i])
			fmt.Fprintf(b, "%s: cache flushes %d (f/s %.2f, f_await %.2f ms)\n", disks[i].Name, st.Flushes, r.fs, r.fAwait)
		}
	}
}

// writeRequestSizes writes the request-size histograms at queue time (bios)
// and dispatch time (requests), with merge and split counts.
func writeRequestSizes(b *bufio.Writer, disks []workload.DiskResult) {
	for i := range disks {
		d := &disks[i]
		s := &d.Stats
		fmt.Fprintf(b, "\nRequest sizes on %s (scheduler %s): bios queued -> requests dispatched; merges=%d/%d, splits=%d\n",
			d.Name, d.Scheduler, s.Merges[0], s.Merges[1], s.Splits)
		rows := [][]string{{"size", "read Q", "read D", "write Q", "write D"}}
		for _, size := range sizeKeys(s) {
			rows = append(rows, []string{sizeLabel(size),
				strconv.FormatUint(s.QueuedSizes[0][size], 10), strconv.FormatUint(s.DispatchedSizes[0][size], 10),
				strconv.FormatUint(s.QueuedSizes[1][size], 10), strconv.FormatUint(s.DispatchedSizes[1][size], 10)})
		}
		writeTable(b, rows)
	}
}

// sizeKeys returns every size seen in any histogram, ascending.
func sizeKeys(s *blockdev.DiskStats) []int64 {
	var keys []int64
	for _, m := range []map[int64]uint64{s.QueuedSizes[0], s.QueuedSizes[1], s.DispatchedSizes[0], s.DispatchedSizes[1]} {
		for k := range m {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// sizeLabel prints a byte count as 4k, 512k, 1m when exact, else bytes.
func sizeLabel(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "m"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// writeTable writes rows with the first column left-aligned and the others
// right-aligned, two spaces apart.
func writeTable(b *bufio.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, r := range rows {
		writeLockLine(b, r, widths)
	}
}

// diskUtilJSON is fio's "disk_util" array.
func diskUtilJSON(disks []workload.DiskResult) []any {
	out := []any{}
	for i := range disks {
		d := &disks[i]
		s := &d.Stats
		o := new(jsonObject)
		o.add("name", d.Name)
		o.add("read_ios", s.IOs[0])
		o.add("write_ios", s.IOs[1])
		o.add("read_merges", s.Merges[0])
		o.add("write_merges", s.Merges[1])
		o.add("read_ticks", msec(s.Ticks[0]))
		o.add("write_ticks", msec(s.Ticks[1]))
		o.add("in_queue", msec(s.TimeInQueue))
		o.add("util", utilPct(d))
		out = append(out, o)
	}
	return out
}

// requestsJSON is blksim.requests for the first device (and
// blksim.devices for all): per direction the dispatched requests' count,
// bytes and sizes (bytes -> count), the same for queued bios under
// "queued", and merge and split counts.
func requestsJSON(d *workload.DiskResult) *jsonObject {
	s := &d.Stats
	o := new(jsonObject)
	for op, name := range []string{"read", "write"} {
		do := histJSON(s.DispatchedSizes[op])
		do.add("queued", histJSON(s.QueuedSizes[op]))
		do.add("merges", s.Merges[op])
		o.add(name, do)
	}
	o.add("splits", s.Splits)
	return o
}

func histJSON(m map[int64]uint64) *jsonObject {
	o := new(jsonObject)
	var count, bytes uint64
	keys := make([]int64, 0, len(m))
	for k, v := range m {
		keys = append(keys, k)
		count += v
		bytes += v * uint64(k)
	}
	slices.Sort(keys)
	sizes := new(jsonObject)
	for _, k := range keys {
		sizes.add(strconv.FormatInt(k, 10), m[k])
	}
	o.add("count", count)
	o.add("bytes", bytes)
	o.add("sizes", sizes)
	return o
}

// iostatJSON is one device's iostat figures.
func iostatJSON(d *workload.DiskResult) *jsonObject {
	r := iostatOf(d)
	o := new(jsonObject)
	o.add("device", d.Name)
	o.add("scheduler", d.Scheduler)
	for _, kv := range []struct {
		k string
		v float64
	}{{"r/s", r.rs}, {"w/s", r.ws}, {"rMB/s", r.rMBs}, {"wMB/s", r.wMBs}, {"rrqm/s", r.rrqm}, {"wrqm/s", r.wrqm},
		{"r_await", r.rAwait}, {"w_await", r.wAwait}, {"f/s", r.fs}, {"f_await", r.fAwait}, {"aqu-sz", r.aqu}, {"rareq-sz", r.rareq}, {"wareq-sz", r.wareq}, {"%util", r.util}} {
		o.add(kv.k, kv.v)
	}
	st := &d.Stats
	o.add("d2c_avg_ns", avgNs(st.D2C[:], st.Bios[:]))
	o.add("q2c_avg_ns", avgNs(st.Q2C[:], st.Bios[:]))
	o.add("requests", requestsJSON(d))
	return o
}

// avgNs is the mean over both directions of per-bio times.
func avgNs(sum []time.Duration, n []uint64) float64 {
	if n[0]+n[1] == 0 {
		return 0
	}
	return float64(sum[0]+sum[1]) / float64(n[0]+n[1])
}

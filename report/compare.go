package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/blksim/blksim/workload"
)

// DirSummary is one IO direction of a run, reduced to the three figures
// the mailing-list reports compare.
type DirSummary struct {
	// MiBs is the bandwidth in MiB/s (2^20 bytes per second).
	MiBs float64 `json:"bw_mibs"`
	// IOPS is the number of IOs per second.
	IOPS float64 `json:"iops"`
	// LatUs is the mean total latency (fio's lat) in microseconds; 0 when
	// the direction has no IOs.
	LatUs float64 `json:"lat_mean_us"`
	// Requests counts the requests of the direction dispatched to the
	// devices over the whole run (blktrace's D events, every device of
	// the stack), and RequestSizes counts them by size in bytes. They are
	// not part of the JSON form.
	Requests     uint64           `json:"-"`
	RequestSizes map[int64]uint64 `json:"-"`
}

// Summary is a run reduced to its read and write figures.
type Summary struct {
	Read  DirSummary `json:"read"`
	Write DirSummary `json:"write"`
}

// TotalMiBs is the read plus write bandwidth in MiB/s.
func (s Summary) TotalMiBs() float64 { return s.Read.MiBs + s.Write.MiBs }

// Summarize reduces a run to its read and write figures, over every job of
// every group. Within a group, bandwidth and IOPS are the group's bytes and
// IOs over its longest runtime in that direction (fio's "Run status group"
// aggregate, with the runtime in simulated nanoseconds rather than whole
// milliseconds); groups add up. The mean latency is the mean over every IO
// of the direction. The request counts add up the devices' dispatched
// requests.
func Summarize(r *workload.Result) Summary {
	var s Summary
	for i, d := range [2]*DirSummary{&s.Read, &s.Write} {
		for di := range r.Disks {
			for size, n := range r.Disks[di].Stats.DispatchedSizes[i] {
				if d.RequestSizes == nil {
					d.RequestSizes = map[int64]uint64{}
				}
				d.RequestSizes[size] += n
				d.Requests += n
			}
		}
	}
	var latSum [2]float64
	var latN [2]uint64
	for gi := range r.Groups {
		var bytes, ios [2]uint64
		var runtime [2]int64
		for ji := range r.Groups[gi].Jobs {
			j := &r.Groups[gi].Jobs[ji]
			for i, d := range [2]*workload.DirStats{&j.Read, &j.Write} {
				if d.Bytes == 0 {
					continue
				}
				bytes[i] += d.Bytes
				ios[i] += d.IOs
				rt := d.Runtime // the direction's (fio's ts.runtime[ddir])
				if rt <= 0 {
					rt = j.Runtime
				}
				runtime[i] = max(runtime[i], rt)
				if n := d.Lat.Count(); n > 0 {
					latSum[i] += d.Lat.Mean() * float64(n)
					latN[i] += n
				}
			}
		}
		for i, d := range [2]*DirSummary{&s.Read, &s.Write} {
			if runtime[i] <= 0 {
				continue
			}
			secs := float64(runtime[i]) / 1e9
			d.MiBs += float64(bytes[i]) / secs / (1 << 20)
			d.IOPS += float64(ios[i]) / secs
		}
	}
	for i, d := range [2]*DirSummary{&s.Read, &s.Write} {
		if latN[i] > 0 {
			d.LatUs = latSum[i] / float64(latN[i]) / 1e3
		}
	}
	return s
}

// CompareVariant is one variant of a comparison: a name and the
// KEY=VALUE settings it applies on top of the base stack.
type CompareVariant struct {
	Name     string   `json:"name"`
	Settings []string `json:"settings"`
}

// CompareCell is one variant's figures at one sweep value.
type CompareCell struct {
	Variant string `json:"variant"`
	Summary
	// TotalMiBs is the read plus write bandwidth in MiB/s.
	TotalMiBs float64 `json:"total_bw_mibs"`
	// Ratio is TotalMiBs over the first variant's TotalMiBs in the same
	// row; nil when the first variant moved no bytes.
	Ratio *float64 `json:"bw_ratio_to_first"`
}

// CompareRow is one sweep value: one cell per variant, in variant order.
type CompareRow struct {
	// Sweep is the sweep value ("" without a sweep).
	Sweep string        `json:"sweep_value"`
	Cells []CompareCell `json:"variants"`
}

// Comparison is the outcome of "blksim compare": every variant run at
// every sweep value of one job.
type Comparison struct {
	// Job names the job file.
	Job string `json:"job"`
	// Seed is the engine seed every run used.
	Seed uint64 `json:"seed"`
	// SweepKey is the swept key ("" without a sweep): a stack key, or
	// "env.NAME" for a job-file variable.
	SweepKey string           `json:"sweep_key"`
	Variants []CompareVariant `json:"variant_settings"`
	Rows     []CompareRow     `json:"rows"`
}

// NewCompareRow builds the row for sweep value sweep from the variants'
// summaries (in variant order), computing totals and ratios to the first.
func NewCompareRow(sweep string, variants []CompareVariant, sums []Summary) CompareRow {
	row := CompareRow{Sweep: sweep, Cells: make([]CompareCell, len(sums))}
	for i, s := range sums {
		c := CompareCell{Summary: s, TotalMiBs: s.TotalMiBs()}
		if i < len(variants) {
			c.Variant = variants[i].Name
		}
		if first := sums[0].TotalMiBs(); first > 0 {
			r := c.TotalMiBs / first
			c.Ratio = &r
		}
		row.Cells[i] = c
	}
	return row
}

// compareColumns are the sub-columns under each variant.
var compareColumns = [...]string{"READ MiB/s", "IOPS", "lat us", "WRITE MiB/s", "IOPS", "lat us", "ratio"}

// cellStrings formats one cell in compareColumns order.
func cellStrings(c *CompareCell) []string {
	ratio := "-"
	if c.Ratio != nil {
		ratio = fmt.Sprintf("%.2fx", *c.Ratio)
	}
	return []string{
		fmt.Sprintf("%.1f", c.Read.MiBs), fmt.Sprintf("%.0f", c.Read.IOPS), fmt.Sprintf("%.1f", c.Read.LatUs),
		fmt.Sprintf("%.1f", c.Write.MiBs), fmt.Sprintf("%.0f", c.Write.IOPS), fmt.Sprintf("%.1f", c.Write.LatUs),
		ratio,
	}
}

// WriteCompare writes c as a text table in the manner of the mailing-list
// "with / without" reports:
//
//	compare: JOB, seed N, sweep KEY
//	  NAME: KEY=VALUE, ...            (one line per variant)
//
//	KEY | NAME                                                  | NAME ...
//	    | READ MiB/s  IOPS  lat us  WRITE MiB/s  IOPS  lat us  ratio | ...
//	4k  |       30.2  7731   555.2         30.1  7720   480.1  1.00x | ...
//
// One row per sweep value (without a sweep there is one row and no first
// column), a column group per variant: read bandwidth (MiB/s), IOPS and
// mean latency (us), the same for writes, and the variant's total (read +
// write) bandwidth as a multiple of the first variant's ("-" if the first
// moved nothing). It returns the first error from w.
func WriteCompare(w io.Writer, c *Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "compare: %s, seed %d", c.Job, c.Seed)
	if c.SweepKey != "" {
		fmt.Fprintf(&b, ", sweep %s", c.SweepKey)
	}
	b.WriteString("\n")
	nameWidth := 0
	for _, v := range c.Variants {
		nameWidth = max(nameWidth, len(v.Name))
	}
	for _, v := range c.Variants {
		settings := strings.Join(v.Settings, ", ")
		if settings == "" {
			settings = "(base stack)"
		}
		fmt.Fprintf(&b, "  %-*s  %s\n", nameWidth+1, v.Name+":", settings)
	}
	b.WriteString("\n")

	// Cells as strings, then column widths.
	nv := len(c.Variants)
	cells := make([][][]string, len(c.Rows))
	width := make([][]int, nv)
	for v := range width {
		width[v] = make([]int, len(compareColumns))
		for k, h := range compareColumns {
			width[v][k] = len(h)
		}
	}
	for ri := range c.Rows {
		cells[ri] = make([][]string, nv)
		for v := 0; v < nv && v < len(c.Rows[ri].Cells); v++ {
			cells[ri][v] = cellStrings(&c.Rows[ri].Cells[v])
			for k, s := range cells[ri][v] {
				width[v][k] = max(width[v][k], len(s))
			}
		}
	}
	// A variant's name must fit over its columns: widen the first.
	for v := range nv {
		total := 2 * (len(compareColumns) - 1)
		for _, wd := range width[v] {
			total += wd
		}
		if extra := len(c.Variants[v].Name) - total; extra > 0 {
			width[v][0] += extra
		}
	}
	keyWidth := 0
	if c.SweepKey != "" {
		keyWidth = len(c.SweepKey)
		for _, r := range c.Rows {
			keyWidth = max(keyWidth, len(r.Sweep))
		}
	}
	line := func(first string, group func(v int) string) {
		var l strings.Builder
		if c.SweepKey != "" {
			fmt.Fprintf(&l, "%-*s | ", keyWidth, first)
		}
		for v := range nv {
			if v > 0 {
				l.WriteString(" | ")
			}
			l.WriteString(group(v))
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteString("\n")
	}
	groupWidth := func(v int) int {
		total := 2 * (len(compareColumns) - 1)
		for _, wd := range width[v] {
			total += wd
		}
		return total
	}
	line(c.SweepKey, func(v int) string { return fmt.Sprintf("%-*s", groupWidth(v), c.Variants[v].Name) })
	line("", func(v int) string {
		parts := make([]string, len(compareColumns))
		for k, h := range compareColumns {
			parts[k] = fmt.Sprintf("%*s", width[v][k], h)
		}
		return strings.Join(parts, "  ")
	})
	for ri, r := range c.Rows {
		line(r.Sweep, func(v int) string {
			if cells[ri][v] == nil {
				return strings.Repeat(" ", groupWidth(v))
			}
			parts := make([]string, len(compareColumns))
			for k, s := range cells[ri][v] {
				parts[k] = fmt.Sprintf("%*s", width[v][k], s)
			}
			return strings.Join(parts, "  ")
		})
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCompareJSON writes c as indented JSON: "job", "seed", "sweep_key"
// ("" without a sweep), "variant_settings" (each variant's "name" and
// "settings"), and "rows", one per sweep value, each with "sweep_value"
// and "variants": per variant, "variant", "read" and "write" ("bw_mibs",
// "iops", "lat_mean_us"), "total_bw_mibs" and "bw_ratio_to_first" (null if
// the first variant moved no bytes). It returns the first error from w.
func WriteCompareJSON(w io.Writer, c *Comparison) error {
	return writeIndentedJSON(w, c)
}

// writeIndentedJSON writes v as two-space indented JSON and a newline.
// Non-finite floats are an error, as encoding/json makes them.
func writeIndentedJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/workload"
)

// dirWith returns a direction of n IOs of bs bytes, each taking latNs.
func dirWith(n, bs uint64, latNs int64) workload.DirStats {
	var d workload.DirStats
	for range n {
		d.Clat.Record(latNs)
		d.Lat.Record(latNs)
	}
	d.IOs, d.Issued, d.Bytes = n, n, n*bs
	return d
}

func TestSummarize(t *testing.T) {
	// Group 0: two jobs, runtimes 1 s and 2 s: the group's rate is its
	// bytes over 2 s. Group 1: one job of 0.5 s. Groups add up.
	r := &workload.Result{Groups: []workload.GroupResult{
		{GroupID: 0, Jobs: []workload.JobResult{
			{Runtime: 1e9, Read: dirWith(1000, 1<<20, 100_000), Write: dirWith(500, 4096, 20_000)},
			{Runtime: 2e9, Read: dirWith(3000, 1<<20, 300_000)},
		}},
		{GroupID: 1, Jobs: []workload.JobResult{
			{Runtime: 5e8, Write: dirWith(1500, 4096, 40_000)},
		}},
	}}
	s := Summarize(r)
	assert.InDelta(t, 4000.0/2, s.Read.MiBs, 1e-9)
	assert.InDelta(t, 4000.0/2, s.Read.IOPS, 1e-9)
	assert.InDelta(t, (1000*100+3000*300)/4000.0, s.Read.LatUs, 1e-9)
	// Write: group 0's only writer ran 1 s (the 2 s job wrote nothing), group 1 0.5 s.
	assert.InDelta(t, 500*4096.0/(1<<20)+1500*4096.0/0.5/(1<<20), s.Write.MiBs, 1e-9)
	assert.InDelta(t, 500+3000, s.Write.IOPS, 1e-9)
	assert.InDelta(t, (500*20+1500*40)/2000.0, s.Write.LatUs, 1e-9)
	assert.InDelta(t, s.Read.MiBs+s.Write.MiBs, s.TotalMiBs(), 1e-9)

	// Nothing ran: all zeros, no NaN.
	assert.Equal(t, Summary{}, Summarize(&workload.Result{Groups: []workload.GroupResult{{Jobs: []workload.JobResult{{}}}}}))

	// Request counts add up every device's dispatched requests by size.
	disk := func(reads, writes map[int64]uint64) workload.DiskResult {
		return workload.DiskResult{Stats: blockdev.DiskStats{DispatchedSizes: [2]map[int64]uint64{reads, writes}}}
	}
	r.Disks = []workload.DiskResult{
		disk(map[int64]uint64{4096: 10, 1 << 19: 2}, map[int64]uint64{1 << 19: 5}),
		disk(map[int64]uint64{4096: 1}, nil),
	}
	s = Summarize(r)
	assert.Equal(t, uint64(13), s.Read.Requests)
	assert.Equal(t, map[int64]uint64{4096: 11, 1 << 19: 2}, s.Read.RequestSizes)
	assert.Equal(t, uint64(5), s.Write.Requests)
	assert.Equal(t, map[int64]uint64{1 << 19: 5}, s.Write.RequestSizes)
}

// sampleComparison is a two-row, three-variant comparison, the last
// variant named longer than its columns are wide.
func sampleComparison() *Comparison {
	variants := []CompareVariant{
		{Name: "w/", Settings: []string{"ext4.parallel_dio_reads=true"}},
		{Name: "w/o", Settings: []string{"ext4.parallel_dio_reads=false"}},
		{Name: "w/o + dioread_nolock: the revert, mounted with dioread_nolock (a long name)", Settings: []string{"ext4.parallel_dio_reads=false", "ext4.dioread_nolock=true"}},
	}
	return &Comparison{
		Job: "ext4-dio.fio", Seed: 1, SweepKey: "env.BS", Variants: variants,
		Rows: []CompareRow{
			NewCompareRow("4k", variants, []Summary{
				{Read: DirSummary{MiBs: 30.2, IOPS: 7731, LatUs: 555}, Write: DirSummary{MiBs: 30.1, IOPS: 7706, LatUs: 480}},
				{Read: DirSummary{MiBs: 115.2, IOPS: 29491, LatUs: 248}, Write: DirSummary{MiBs: 115.1, IOPS: 29466, LatUs: 21.9}},
				{Read: DirSummary{MiBs: 120.6, IOPS: 30874, LatUs: 246}, Write: DirSummary{MiBs: 120.5, IOPS: 30848, LatUs: 12.1}},
			}),
			NewCompareRow("1M", variants, []Summary{
				{Read: DirSummary{MiBs: 476.3, IOPS: 476, LatUs: 8059}, Write: DirSummary{MiBs: 476.0, IOPS: 476, LatUs: 8631}},
				{Read: DirSummary{MiBs: 580.0, IOPS: 580, LatUs: 7624}, Write: DirSummary{MiBs: 579.0, IOPS: 579, LatUs: 6163}},
				{Read: DirSummary{MiBs: 600.6, IOPS: 601, LatUs: 7400}, Write: DirSummary{MiBs: 600.0, IOPS: 600, LatUs: 5937}},
			}),
		},
	}
}

func TestWriteCompareGolden(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteCompare(&b, sampleComparison()))
	checkGolden(t, "compare.golden", b.Bytes())
}

func TestWriteCompareShape(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteCompare(&b, sampleComparison()))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	// Title, 3 variant lines, blank, 2 header lines, 2 rows.
	require.Len(t, lines, 9, b.String())
	assert.Equal(t, "compare: ext4-dio.fio, seed 1, sweep env.BS", lines[0])
	// Every table line has its column separators in the same places.
	table := lines[5:]
	bars := func(l string) []int {
		var at []int
		for i, c := range l {
			if c == '|' {
				at = append(at, i)
			}
		}
		return at
	}
	for _, l := range table[1:] {
		assert.Equal(t, bars(table[0]), bars(l), "line %q", l)
	}
	assert.Len(t, bars(table[0]), 3)
	assert.True(t, strings.HasPrefix(table[2], "4k "), table[2])
	assert.True(t, strings.HasPrefix(table[3], "1M "), table[3])
	// Seven figures per variant; the first variant's ratio is 1.
	cells := strings.Split(table[2], "|")
	require.Len(t, cells, 4)
	for _, c := range cells[1:] {
		assert.Len(t, strings.Fields(c), 7, "cell %q", c)
	}
	assert.Equal(t, "1.00x", strings.Fields(cells[1])[6])
	assert.Equal(t, "3.82x", strings.Fields(cells[2])[6])
}

func TestWriteCompareNoSweep(t *testing.T) {
	v := []CompareVariant{{Name: "base", Settings: []string{}}, {Name: "x", Settings: []string{"host.cpus=2"}}}
	c := &Comparison{Job: "j.fio", Seed: 3, Variants: v, Rows: []CompareRow{
		NewCompareRow("", v, []Summary{{}, {Read: DirSummary{MiBs: 1, IOPS: 2, LatUs: 3}}}),
	}}
	var b bytes.Buffer
	require.NoError(t, WriteCompare(&b, c))
	out := b.String()
	assert.Contains(t, out, "compare: j.fio, seed 3\n")
	assert.Contains(t, out, "base:  (base stack)\n")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	last := lines[len(lines)-1]
	// No sweep column: the row starts with the first variant's figures;
	// the first variant moved nothing, so ratios are undefined.
	assert.Equal(t, 1, strings.Count(last, "|"), last)
	assert.Equal(t, "-", strings.Fields(strings.Split(last, "|")[1])[6])
	assert.Nil(t, c.Rows[0].Cells[1].Ratio)
}

func TestWriteCompareJSON(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteCompareJSON(&b, sampleComparison()))
	var v struct {
		Job      string `json:"job"`
		SweepKey string `json:"sweep_key"`
		Variants []struct {
			Name     string   `json:"name"`
			Settings []string `json:"settings"`
		} `json:"variant_settings"`
		Rows []struct {
			Sweep string `json:"sweep_value"`
			Cells []struct {
				Variant string `json:"variant"`
				Read    struct {
					MiBs  float64 `json:"bw_mibs"`
					IOPS  float64 `json:"iops"`
					LatUs float64 `json:"lat_mean_us"`
				} `json:"read"`
				Total float64  `json:"total_bw_mibs"`
				Ratio *float64 `json:"bw_ratio_to_first"`
			} `json:"variants"`
		} `json:"rows"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &v))
	assert.Equal(t, "env.BS", v.SweepKey)
	require.Len(t, v.Variants, 3)
	assert.Equal(t, []string{"ext4.parallel_dio_reads=false", "ext4.dioread_nolock=true"}, v.Variants[2].Settings)
	require.Len(t, v.Rows, 2)
	assert.Equal(t, "1M", v.Rows[1].Sweep)
	c := v.Rows[0].Cells
	require.Len(t, c, 3)
	assert.Equal(t, "w/o", c[1].Variant)
	assert.InDelta(t, 115.2, c[1].Read.MiBs, 1e-9)
	assert.InDelta(t, 29491, c[1].Read.IOPS, 1e-9)
	assert.InDelta(t, 248, c[1].Read.LatUs, 1e-9)
	assert.InDelta(t, 230.3, c[1].Total, 1e-9)
	require.NotNil(t, c[1].Ratio)
	assert.InDelta(t, 230.3/60.3, *c[1].Ratio, 1e-9)
	assert.InDelta(t, 1, *c[0].Ratio, 1e-12)
}

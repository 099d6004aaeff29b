package report

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/workload"
)

// terseV3Fields are the names fio's HOWTO (fio 3.33, "Terse output") gives
// the fields of a version 3 line, for a run with one disk and no
// description.
const terseV3Fields = "terse_version_3;fio_version;jobname;groupid;error;read_kb;read_bandwidth_kb;read_iops;read_runtime_ms;read_slat_min_us;read_slat_max_us;read_slat_mean_us;read_slat_dev_us;read_clat_min_us;read_clat_max_us;read_clat_mean_us;read_clat_dev_us;read_clat_pct01;read_clat_pct02;read_clat_pct03;read_clat_pct04;read_clat_pct05;read_clat_pct06;read_clat_pct07;read_clat_pct08;read_clat_pct09;read_clat_pct10;read_clat_pct11;read_clat_pct12;read_clat_pct13;read_clat_pct14;read_clat_pct15;read_clat_pct16;read_clat_pct17;read_clat_pct18;read_clat_pct19;read_clat_pct20;read_tlat_min_us;read_lat_max_us;read_lat_mean_us;read_lat_dev_us;read_bw_min_kb;read_bw_max_kb;read_bw_agg_pct;read_bw_mean_kb;read_bw_dev_kb;write_kb;write_bandwidth_kb;write_iops;write_runtime_ms;write_slat_min_us;write_slat_max_us;write_slat_mean_us;write_slat_dev_us;write_clat_min_us;write_clat_max_us;write_clat_mean_us;write_clat_dev_us;write_clat_pct01;write_clat_pct02;write_clat_pct03;write_clat_pct04;write_clat_pct05;write_clat_pct06;write_clat_pct07;write_clat_pct08;write_clat_pct09;write_clat_pct10;write_clat_pct11;write_clat_pct12;write_clat_pct13;write_clat_pct14;write_clat_pct15;write_clat_pct16;write_clat_pct17;write_clat_pct18;write_clat_pct19;write_clat_pct20;write_tlat_min_us;write_lat_max_us;write_lat_mean_us;write_lat_dev_us;write_bw_min_kb;write_bw_max_kb;write_bw_agg_pct;write_bw_mean_kb;write_bw_dev_kb;cpu_user;cpu_sys;cpu_csw;cpu_mjf;cpu_minf;iodepth_1;iodepth_2;iodepth_4;iodepth_8;iodepth_16;iodepth_32;iodepth_64;lat_2us;lat_4us;lat_10us;lat_20us;lat_50us;lat_100us;lat_250us;lat_500us;lat_750us;lat_1000us;lat_2ms;lat_4ms;lat_10ms;lat_20ms;lat_50ms;lat_100ms;lat_250ms;lat_500ms;lat_750ms;lat_1000ms;lat_2000ms;lat_over_2000ms;disk_name;disk_read_iops;disk_write_iops;disk_read_merges;disk_write_merges;disk_read_ticks;write_ticks;disk_queue_time;disk_util"

// terseResult is sampleResult with one disk and a description, as a run
// on a stack reports them.
func terseResult() *workload.Result {
	r := sampleResult()
	r.Groups[0].Jobs[0].Description = "random 4k reads"
	r.Disks = []workload.DiskResult{{Name: "nvme0n1", Scheduler: "none",
		Stats: blockdev.DiskStats{IOs: [2]uint64{59000, 23700}, Merges: [2]uint64{12, 3400},
			Ticks:   [2]time.Duration{61_234 * time.Millisecond, 88_001 * time.Millisecond},
			IOTicks: 55 * time.Second, TimeInQueue: 150 * time.Second},
		Elapsed: 60_000_999_999}}
	return r
}

func TestWriteTerseGolden(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteTerse(&b, terseResult(), Options{}))
	checkGolden(t, "terse.golden", b.Bytes())
}

// TestWriteTerseFields checks each version's field count against fio
// 3.33's output for a job with one disk and a description (counted on
// real fio runs: 131 fields for version 3, 161 then 2 on a second line
// for version 2, 172 for 4 and 190 for 5) and without.
func TestWriteTerseFields(t *testing.T) {
	for _, tc := range []struct {
		version int
		want    []int // fields per output line of the first job
	}{
		{0, []int{131}},
		{2, []int{161, 2}},
		{3, []int{131}},
		{4, []int{172}},
		{5, []int{190}},
	} {
		t.Run(strconv.Itoa(tc.version), func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, WriteTerse(&b, terseResult(), Options{TerseVersion: tc.version}))
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			// Five jobs; the first has a description.
			require.Len(t, lines, 5+len(tc.want)-1)
			for i, n := range tc.want {
				assert.Len(t, strings.Split(lines[i], ";"), n, "line %d", i+1)
			}
			noDesc := tc.want[0]
			if len(tc.want) == 1 {
				noDesc--
			}
			assert.Len(t, strings.Split(lines[len(tc.want)], ";"), noDesc, "a job without description")
		})
	}
}

// TestWriteTerseV3ByName reads a version 3 line by fio's field names.
func TestWriteTerseV3ByName(t *testing.T) {
	var b bytes.Buffer
	r := terseResult()
	r.Groups[0].Jobs[0].Description = ""
	require.NoError(t, WriteTerse(&b, r, Options{}))
	names := strings.Split(terseV3Fields, ";")
	line, _, _ := strings.Cut(b.String(), "\n")
	vals := strings.Split(line, ";")
	require.Len(t, vals, len(names))
	f := map[string]string{}
	for i, n := range names {
		f[n] = vals[i]
	}
	j := &r.Groups[0].Jobs[0]
	usr, sys := j.CPU.Percent()
	require.NotZero(t, usr*sys, "the fixture has CPU use")
	for _, tc := range []struct{ name, want string }{
		{"terse_version_3", "3"},
		{"fio_version", "blksim"},
		{"jobname", "randread"},
		{"groupid", "0"},
		{"error", "0"},
		{"read_kb", strconv.FormatUint(j.Read.Bytes>>10, 10)},
		{"read_iops", strconv.FormatUint(1000*j.Read.IOs/2501, 10)},
		{"read_runtime_ms", "2501"}, // 2500.12 ms rounded up, as fio's update_runtime
		{"read_slat_min_us", "0"},
		{"read_clat_min_us", strconv.FormatInt(j.Read.Clat.Min()/1000, 10)},
		{"read_clat_pct01", "1.000000%=" + strconv.FormatInt(j.Read.Clat.Percentile(1)/1000, 10)},
		{"read_clat_pct17", "99.990000%=" + strconv.FormatInt(j.Read.Clat.Percentile(99.99)/1000, 10)},
		{"read_clat_pct18", "0%=0"},
		// The samples' mean (31915.2 KiB/s) over the group's aggregate
		// bandwidth cut to whole KiB/s (80000 KiB in 2.501 s: 31987).
		{"read_bw_agg_pct", "99.775534%"},
		{"read_bw_min_kb", strconv.FormatUint(j.Read.BW.Min, 10)},
		{"read_bw_mean_kb", fmt.Sprintf("%f", j.Read.BW.Mean)},
		{"write_bw_agg_pct", "0.000000%"},
		{"write_kb", "0"},
		{"write_clat_pct01", "1.000000%=0"},
		{"cpu_user", fmt.Sprintf("%f%%", usr)},
		{"cpu_sys", fmt.Sprintf("%f%%", sys)},
		{"cpu_csw", strconv.FormatUint(j.CPU.Ctx, 10)},
		{"cpu_minf", "0"},
		{"iodepth_1", "100.0%"},
		{"iodepth_64", "0.0%"},
		{"lat_2us", "0.00%"},
		{"disk_name", "nvme0n1"},
		{"disk_read_iops", "59000"},
		{"disk_write_merges", "3400"},
		{"disk_read_ticks", "61234"},
		{"write_ticks", "88001"},
		{"disk_queue_time", "150000"},
		{"disk_util", "91.67%"},
	} {
		assert.Equal(t, tc.want, f[tc.name], tc.name)
	}
	// The latency distribution adds up to 100% (each bucket rounded).
	var sum float64
	for _, n := range names {
		if strings.HasPrefix(n, "lat_") {
			p, err := strconv.ParseFloat(strings.TrimSuffix(f[n], "%"), 64)
			require.NoError(t, err, n)
			sum += p
		}
	}
	assert.InDelta(t, 100, sum, 0.2)
}

// TestWriteTerseEdgeCases: a job without IO prints fio's -nan% as the
// first latency field and 0.0% IO depths; a deep job's depths are not
// measured (all 0.0%); version 1 does not exist.
func TestWriteTerseEdgeCases(t *testing.T) {
	var b bytes.Buffer
	r := terseResult()
	require.NoError(t, WriteTerse(&b, r, Options{}))
	lines := strings.Split(b.String(), "\n")
	names := strings.Split(terseV3Fields, ";")
	field := func(line, name string) string {
		for i, n := range names {
			if n == name {
				return strings.Split(line, ";")[i]
			}
		}
		t.Fatalf("no field %s", name)
		return ""
	}
	idle := lines[4] // missing-file: no IO
	assert.Equal(t, "2", field(idle, "error"))
	assert.Equal(t, "-nan%", field(idle, "lat_2us"))
	assert.Equal(t, "0.00%", field(idle, "lat_4us"))
	assert.Equal(t, "0.0%", field(idle, "iodepth_1"))
	deep := lines[1] // libaio, iodepth=32
	assert.Equal(t, "0.1%", field(deep, "iodepth_1"), "one IO of 42000 shows as fio's smallest share")
	assert.Equal(t, "100.0%", field(deep, "iodepth_32"))
	assert.NotEqual(t, "0", field(deep, "write_slat_max_us"))

	err := WriteTerse(&b, r, Options{TerseVersion: 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "terse version 1")
}

// TestNoClatPercentiles: a job with clat_percentiles=0 (or gtod_reduce)
// has no percentiles in any output, as fio 3.33 prints it: no percentile
// block, no "percentile" key, twenty "0%=0" terse fields.
func TestNoClatPercentiles(t *testing.T) {
	r := terseResult()
	r.Groups = r.Groups[:1]
	r.Groups[0].Jobs[0].NoClatPercentiles = true
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer) error
		check func(t *testing.T, out string)
	}{
		{"normal", func(b *bytes.Buffer) error { return WriteNormal(b, r, Options{}) }, func(t *testing.T, out string) {
			assert.Contains(t, out, "clat (usec)")
			assert.NotContains(t, out, "percentiles")
		}},
		{"json+", func(b *bytes.Buffer) error { return WriteJSON(b, r, Options{Bins: true}) }, func(t *testing.T, out string) {
			assert.NotContains(t, out, `"percentile"`)
			assert.NotContains(t, out, `"bins"`)
		}},
		{"terse", func(b *bytes.Buffer) error { return WriteTerse(b, r, Options{}) }, func(t *testing.T, out string) {
			assert.Equal(t, 40, strings.Count(out, ";0%=0"))
			assert.NotContains(t, out, "1.000000%=")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, tc.write(&b))
			tc.check(t, b.String())
		})
	}
}

// The bandwidth fields of a real fio 3.33 terse line (4 KiB reads for
// 1.2 s, two samples), rebuilt from its samples: min, max, the mean as a
// share of the aggregate cut to KiB/s, mean and stddev.
func TestTerseBandwidthFieldsMatchFio(t *testing.T) {
	r := fioJob(false, 1459949568/4096, 4096, 1201, nil)
	d := &r.Groups[0].Jobs[0].Read
	d.BW.Add(950912)
	d.BW.Add(1334656)
	var b bytes.Buffer
	require.NoError(t, WriteTerse(&b, r, Options{}))
	f := strings.Split(strings.TrimSuffix(b.String(), "\n"), ";")
	names := strings.Split(terseV3Fields, ";")
	require.Len(t, f, len(names)-9, "no disk fields without disks")
	got := map[string]string{}
	for i, v := range f {
		got[names[i]] = v
	}
	for name, want := range map[string]string{
		"read_kb": "1425732", "read_bandwidth_kb": "1187120", "read_runtime_ms": "1201",
		"read_bw_min_kb": "950912", "read_bw_max_kb": "1334656", "read_bw_agg_pct": "96.265247%",
		"read_bw_mean_kb": "1142784.000000", "read_bw_dev_kb": "271347.984640",
	} {
		assert.Equal(t, want, got[name], name)
	}
}

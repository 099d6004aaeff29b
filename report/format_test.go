package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The expected strings below are copied from real fio runs (fio 3.1 to
// 3.38 output found in public benchmark notes); the inputs are the numbers
// those runs measured, or numbers chosen to land on the same strings.

func TestNum2Str(t *testing.T) {
	tests := []struct {
		num    uint64
		maxlen int
		pow2   bool
		unit   string
		want   string
	}{
		// IOPS (num2str(iops, 4, 1, 0, N2S_NONE)).
		{7731, 4, false, "", "7731"},
		{4801, 4, false, "", "4801"},
		{95, 4, false, "", "95"},
		{0, 4, false, "", "0"},
		{30912, 4, false, "", "30.9k"},
		{18649, 4, false, "", "18.6k"},
		{25400, 4, false, "", "25.4k"},
		{15700, 4, false, "", "15.7k"},
		{691000, 4, false, "", "691k"},
		{979000, 4, false, "", "979k"},
		{1004000, 4, false, "", "1004k"},
		// Bandwidth, binary and decimal.
		{19666387, 4, true, "B/s", "18.8MiB/s"}, // 22 MiB in 1173 ms
		{19666387, 4, false, "B/s", "19.7MB/s"},
		{390796, 4, true, "B/s", "382KiB/s"}, // 22 MiB in 59030 ms: carried
		{390796, 4, false, "B/s", "391kB/s"},
		{76386331, 4, true, "B/s", "72.8MiB/s"},
		{76386331, 4, false, "B/s", "76.4MB/s"},
		{5329644, 4, true, "B/s", "5205KiB/s"},
		{5329644, 4, false, "B/s", "5330kB/s"},
		{24004861, 4, false, "B/s", "24.0MB/s"},
		{31700000, 4, true, "B/s", "30.2MiB/s"},
		{31700000, 4, false, "B/s", "31.7MB/s"},
		{1032000000, 4, true, "B/s", "984MiB/s"},
		{1032000000, 4, false, "B/s", "1032MB/s"},
		{4012000000, 4, true, "B/s", "3826MiB/s"},
		{4012000000, 4, false, "B/s", "4012MB/s"},
		{45300000000, 4, true, "B/s", "42.2GiB/s"},
		{45300000000, 4, false, "B/s", "45.3GB/s"},
		// Amounts.
		{23068672, 4, true, "B", "22.0MiB"},
		{23068672, 4, false, "B", "23.1MB"},
		{4294967296, 4, true, "B", "4096MiB"},
		{5957 << 20, 4, true, "B", "5957MiB"},
		{20615843020, 4, true, "B", "19.2GiB"},
		{224 << 30, 4, true, "B", "224GiB"},
		{843 << 30, 4, true, "B", "843GiB"},
		// fio 3.25 printed this one as "21.0MiB"; current fio carries the
		// rounded-up fraction.
		{23066700, 4, true, "B", "22.0MiB"},
		// Block sizes in the description line.
		{4096, 4, true, "B", "4096B"},
		{16384, 4, true, "B", "16.0KiB"},
		{1 << 20, 4, true, "B", "1024KiB"},
		// Latency min/max (num2str(v, 6, 1, 0, N2S_NONE)).
		{1122100, 6, false, "", "1122.1k"},
		{1147600, 6, false, "", "1147.6k"},
		{57976, 6, false, "", "57976"},
		{999999, 6, false, "", "999999"},
		// The largest value still fits.
		{^uint64(0), 4, false, "", "18.4E"},
	}
	for _, tt := range tests {
		if got := num2str(tt.num, tt.maxlen, tt.pow2, tt.unit); got != tt.want {
			t.Errorf("num2str(%d, %d, %v, %q) = %q, want %q", tt.num, tt.maxlen, tt.pow2, tt.unit, got, tt.want)
		}
	}
}

func TestLatLine(t *testing.T) {
	tests := []struct {
		name      string
		min, max  uint64
		mean, dev float64
		want      string
	}{
		{"slat", 1322, 1122100, 6479.98, 7716.25,
			"    slat (nsec): min=1322, max=1122.1k, avg=6479.98, stdev=7716.25\n"},
		{"clat", 10519, 57976, 13462.14, 2609.65,
			"    clat (nsec): min=10519, max=57976, avg=13462.14, stdev=2609.65\n"},
		{"clat", 1195400, 28566900, 5028700, 838940,
			"    clat (usec): min=1195, max=28566, avg=5028.70, stdev=838.94\n"},
		{" lat", 3100, 139500, 4530, 3440,
			"     lat (usec): min=3, max=139, avg= 4.53, stdev= 3.44\n"},
		{"sync", 6100000, 821000000, 10450000, 18420000,
			"    sync (msec): min=6, max=821, avg=10.45, stdev=18.42\n"},
		// Each threshold is strict, and all three must hold.
		{"clat", 2000, 200000, 5000, 5000,
			"    clat (nsec): min=2000, max=200000, avg=5000.00, stdev=5000.00\n"},
		{"clat", 2001, 99999, 5000, 5000,
			"    clat (nsec): min=2001, max=99999, avg=5000.00, stdev=5000.00\n"},
		{"clat", 2001, 100000, 5000, 1000,
			"    clat (nsec): min=2001, max=100000, avg=5000.00, stdev=1000.00\n"},
		{"clat", 2001, 100000, 5000, 1000.5,
			"    clat (usec): min=2, max=100, avg= 5.00, stdev= 1.00\n"},
		{"clat", 3000000, 150000000, 9000000, 1000000,
			"    clat (usec): min=3000, max=150000, avg=9000.00, stdev=1000.00\n"},
	}
	for _, tt := range tests {
		if got := latLine(tt.name, tt.min, tt.max, tt.mean, tt.dev); got != tt.want {
			t.Errorf("latLine(%v %v %v %v):\n got %q\nwant %q", tt.min, tt.max, tt.mean, tt.dev, got, tt.want)
		}
	}
}

// scaled returns nanosecond values that fio shows as vals after scaling
// by unit (which rounds up).
func scaled(unit uint64, vals ...uint64) []uint64 {
	out := make([]uint64, len(vals))
	for i, v := range vals {
		out[i] = v*unit - 1
	}
	return out
}

func TestPercentileBlock(t *testing.T) {
	ps := defaultPercentiles[:]
	tests := []struct {
		name string
		vals []uint64
		want string
	}{
		{"clat", []uint64{11584, 11712, 11840, 12096, 12352, 12480, 12608, 12992, 13632, 13888,
			15424, 18560, 23168, 27264, 38656, 43264, 58112}, `    clat percentiles (nsec):
     |  1.00th=[11584],  5.00th=[11712], 10.00th=[11840], 20.00th=[12096],
     | 30.00th=[12352], 40.00th=[12480], 50.00th=[12608], 60.00th=[12992],
     | 70.00th=[13632], 80.00th=[13888], 90.00th=[15424], 95.00th=[18560],
     | 99.00th=[23168], 99.50th=[27264], 99.90th=[38656], 99.95th=[43264],
     | 99.99th=[58112]
`},
		{"clat", scaled(1000, 3195, 3752, 4080, 4490, 4752, 4883, 5014, 5145, 5276, 5473,
			5800, 6194, 7832, 8586, 10683, 11863, 14877), `    clat percentiles (usec):
     |  1.00th=[ 3195],  5.00th=[ 3752], 10.00th=[ 4080], 20.00th=[ 4490],
     | 30.00th=[ 4752], 40.00th=[ 4883], 50.00th=[ 5014], 60.00th=[ 5145],
     | 70.00th=[ 5276], 80.00th=[ 5473], 90.00th=[ 5800], 95.00th=[ 6194],
     | 99.00th=[ 7832], 99.50th=[ 8586], 99.90th=[10683], 99.95th=[11863],
     | 99.99th=[14877]
`},
		{"clat", scaled(1000, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 6, 7, 12, 18, 49, 69, 139), `    clat percentiles (usec):
     |  1.00th=[    4],  5.00th=[    4], 10.00th=[    4], 20.00th=[    4],
     | 30.00th=[    4], 40.00th=[    4], 50.00th=[    4], 60.00th=[    4],
     | 70.00th=[    4], 80.00th=[    5], 90.00th=[    6], 95.00th=[    7],
     | 99.00th=[   12], 99.50th=[   18], 99.90th=[   49], 99.95th=[   69],
     | 99.99th=[  139]
`},
		{"sync", scaled(1000000, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 13, 62, 70, 209, 472, 818), `    sync percentiles (msec):
     |  1.00th=[    9],  5.00th=[    9], 10.00th=[    9], 20.00th=[    9],
     | 30.00th=[    9], 40.00th=[    9], 50.00th=[    9], 60.00th=[    9],
     | 70.00th=[    9], 80.00th=[    9], 90.00th=[    9], 95.00th=[   13],
     | 99.00th=[   62], 99.50th=[   70], 99.90th=[  209], 99.95th=[  472],
     | 99.99th=[  818]
`},
		// Seven-digit values: three per row.
		{"clat", scaled(1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000,
			1000, 1000, 1000, 1000, 1000, 1000, 1234567), `    clat percentiles (usec):
     |  1.00th=[   1000],  5.00th=[   1000], 10.00th=[   1000],
     | 20.00th=[   1000], 30.00th=[   1000], 40.00th=[   1000],
     | 50.00th=[   1000], 60.00th=[   1000], 70.00th=[   1000],
     | 80.00th=[   1000], 90.00th=[   1000], 95.00th=[   1000],
     | 99.00th=[   1000], 99.50th=[   1000], 99.90th=[   1000],
     | 99.95th=[   1000], 99.99th=[1234567]
`},
		// All-zero latencies keep the minimum width.
		{"clat", make([]uint64, 17), `    clat percentiles (nsec):
     |  1.00th=[    0],  5.00th=[    0], 10.00th=[    0], 20.00th=[    0],
     | 30.00th=[    0], 40.00th=[    0], 50.00th=[    0], 60.00th=[    0],
     | 70.00th=[    0], 80.00th=[    0], 90.00th=[    0], 95.00th=[    0],
     | 99.00th=[    0], 99.50th=[    0], 99.90th=[    0], 99.95th=[    0],
     | 99.99th=[    0]
`},
	}
	for i, tt := range tests {
		if got := percentileBlock(tt.name, ps, 2, tt.vals); got != tt.want {
			t.Errorf("case %d:\n got:\n%s\nwant:\n%s", i, got, tt.want)
		}
	}
}

// Whole lines of real fio 3.25 output (ioengine=sync, bs=4k, size=22m),
// rebuilt from the figures they report.
func TestDirectionAndGroupLinesMatchFio(t *testing.T) {
	tests := []struct {
		n, bs   uint64
		msec    int64
		dirLine string
		grpLine string
	}{
		{5632, 4096, 1173,
			"  write: IOPS=4801, BW=18.8MiB/s (19.7MB/s)(22.0MiB/1173msec); 0 zone resets",
			"  WRITE: bw=18.8MiB/s (19.7MB/s), 18.8MiB/s-18.8MiB/s (19.7MB/s-19.7MB/s), io=22.0MiB (23.1MB), run=1173-1173msec"},
		{5632, 4096, 59030,
			"  write: IOPS=95, BW=382KiB/s (391kB/s)(22.0MiB/59030msec); 0 zone resets",
			"  WRITE: bw=382KiB/s (391kB/s), 382KiB/s-382KiB/s (391kB/s-391kB/s), io=22.0MiB (23.1MB), run=59030-59030msec"},
		{5632, 4096, 961,
			"  write: IOPS=5860, BW=22.9MiB/s (24.0MB/s)(22.0MiB/961msec); 0 zone resets",
			"  WRITE: bw=22.9MiB/s (24.0MB/s), 22.9MiB/s-22.9MiB/s (24.0MB/s-24.0MB/s), io=22.0MiB (23.1MB), run=961-961msec"},
		{5632, 4096, 302,
			"  write: IOPS=18.6k, BW=72.8MiB/s (76.4MB/s)(22.0MiB/302msec); 0 zone resets",
			"  WRITE: bw=72.8MiB/s (76.4MB/s), 72.8MiB/s-72.8MiB/s (76.4MB/s-76.4MB/s), io=22.0MiB (23.1MB), run=302-302msec"},
		{5632, 4096, 39092,
			"  write: IOPS=144, BW=576KiB/s (590kB/s)(22.0MiB/39092msec); 0 zone resets",
			"  WRITE: bw=576KiB/s (590kB/s), 576KiB/s-576KiB/s (590kB/s-590kB/s), io=22.0MiB (23.1MB), run=39092-39092msec"},
		{5632, 4096, 1997,
			"  write: IOPS=2820, BW=11.0MiB/s (11.6MB/s)(22.0MiB/1997msec); 0 zone resets",
			"  WRITE: bw=11.0MiB/s (11.6MB/s), 11.0MiB/s-11.0MiB/s (11.6MB/s-11.6MB/s), io=22.0MiB (23.1MB), run=1997-1997msec"},
		// fio 3.25 printed "21.0MiB" here (see TestNum2Str).
		{10029, 2300, 4328,
			"  write: IOPS=2317, BW=5205KiB/s (5330kB/s)(22.0MiB/4328msec); 0 zone resets",
			"  WRITE: bw=5205KiB/s (5330kB/s), 5205KiB/s-5205KiB/s (5330kB/s-5330kB/s), io=22.0MiB (23.1MB), run=4328-4328msec"},
	}
	for _, tt := range tests {
		var b strings.Builder
		if err := WriteNormal(&b, fioJob(true, tt.n, tt.bs, tt.msec, nil), Options{OmitWall: true}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(b.String(), "\n")
		if !contains(lines, tt.dirLine) {
			t.Errorf("missing %q in\n%s", tt.dirLine, b.String())
		}
		if !contains(lines, tt.grpLine) {
			t.Errorf("missing %q in\n%s", tt.grpLine, b.String())
		}
	}
}

func TestDescriptionAndHeaderLines(t *testing.T) {
	var b strings.Builder
	if err := WriteNormal(&b, fioJob(true, 5632, 4096, 1173, nil), Options{OmitWall: true}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for _, want := range []string{
		"mytest: (g=0): rw=write, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=sync, iodepth=1",
		"mytest: (groupid=0, jobs=1): err= 0: pid=0: Thu Jan  1 00:00:00 1970",
		"Run status group 0 (all jobs):",
	} {
		if !contains(lines, want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}

	r := fioJob(false, 1000, 16384, 1000, nil)
	r.Groups[0].Jobs[0].RW, r.Groups[0].Jobs[0].IOEngine, r.Groups[0].Jobs[0].IODepth = "read", "posixaio", 32
	b.Reset()
	if err := WriteNormal(&b, r, Options{OmitWall: true}); err != nil {
		t.Fatal(err)
	}
	want := "mytest: (g=0): rw=read, bs=(R) 16.0KiB-16.0KiB, (W) 16.0KiB-16.0KiB, (T) 16.0KiB-16.0KiB, ioengine=posixaio, iodepth=32"
	if !strings.HasPrefix(b.String(), want+"\n") {
		t.Errorf("description: got\n%s\nwant %q", b.String(), want)
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// The bandwidth and IOPS sample lines of real fio output, rebuilt from
// their samples: fio 3.25's sync writes of 22 MiB (two samples of each, and
// one whose mean beats the group's aggregate, so per= is capped at 100),
// and fio 3.33's 4 KiB reads at 1.5 GB/s, shown in MiB/s with min and max
// cut to integers.
func TestRateSampleLinesMatchFio(t *testing.T) {
	for _, tc := range []struct {
		write     bool
		n, bs     uint64
		msec      int64
		bw, iops  []uint64
		bwLine    string
		iopsLine  string
		direction string
	}{
		{true, 5632, 4096, 1173, []uint64{18952, 19424}, []uint64{4738, 4856},
			"   bw (  KiB/s): min=18952, max=19424, per=99.91%, avg=19188.00, stdev=333.75, samples=2",
			"   iops        : min= 4738, max= 4856, avg=4797.00, stdev=83.44, samples=2", "write"},
		{true, 5632, 4096, 961, []uint64{23776}, []uint64{5944},
			"   bw (  KiB/s): min=23776, max=23776, per=100.00%, avg=23776.00, stdev= 0.00, samples=1",
			"   iops        : min= 5944, max= 5944, avg=5944.00, stdev= 0.00, samples=1", "write"},
		{false, 448593, 4096, 1201, []uint64{1516160, 1523712}, []uint64{379040, 380928},
			"   bw (  MiB/s): min= 1480, max= 1488, per=100.00%, avg=1484.31, stdev= 5.21, samples=2",
			"   iops        : min=379040, max=380928, avg=379984.00, stdev=1335.02, samples=2", "read"},
	} {
		r := fioJob(tc.write, tc.n, tc.bs, tc.msec, nil)
		j := &r.Groups[0].Jobs[0]
		d := &j.Read
		if tc.write {
			d = &j.Write
		}
		for _, v := range tc.bw {
			d.BW.Add(v)
		}
		for _, v := range tc.iops {
			d.IOPS.Add(v)
		}
		var b strings.Builder
		require.NoError(t, WriteNormal(&b, r, Options{OmitWall: true}))
		lines := strings.Split(b.String(), "\n")
		assert.True(t, contains(lines, tc.bwLine), "missing %q in\n%s", tc.bwLine, b.String())
		assert.True(t, contains(lines, tc.iopsLine), "missing %q in\n%s", tc.iopsLine, b.String())

		// The JSON has the samples unscaled, per= as bw_agg.
		b.Reset()
		require.NoError(t, WriteJSON(&b, r, Options{OmitWall: true}))
		var doc struct {
			Jobs []map[string]json.RawMessage `json:"jobs"`
		}
		require.NoError(t, json.Unmarshal([]byte(b.String()), &doc))
		var dir map[string]any
		require.NoError(t, json.Unmarshal(doc.Jobs[0][tc.direction], &dir))
		assert.EqualValues(t, tc.bw[0], dir["bw_min"])
		assert.EqualValues(t, tc.bw[len(tc.bw)-1], dir["bw_max"])
		assert.EqualValues(t, len(tc.bw), dir["bw_samples"])
		assert.EqualValues(t, tc.iops[0], dir["iops_min"])
		assert.EqualValues(t, len(tc.iops), dir["iops_samples"])
	}
}

// A percentile_list block of real fio 3.33 output
// (percentile_list=50:99:99.9:99.995): three decimals, as its most
// precise value has, and four to a line.
func TestPercentileListBlockMatchesFio(t *testing.T) {
	got := percentileBlock("clat", []float64{50, 99, 99.9, 99.995}, 3, []uint64{60672, 132096, 276480, 733184})
	want := "    clat percentiles (usec):\n     | 50.000th=[   61], 99.000th=[  133], 99.900th=[  277], 99.995th=[  734]\n"
	assert.Equal(t, want, got)
	// Whole percentages print without decimals (fio's "%3.0f").
	got = percentileBlock("clat", []float64{50, 90, 99}, 0, []uint64{5000, 6000, 7000})
	assert.Equal(t, "    clat percentiles (nsec):\n     |  50th=[ 5000],  90th=[ 6000],  99th=[ 7000]\n", got)
}

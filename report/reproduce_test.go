package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// metric returns the Metric named key.
func metric(t *testing.T, key string) Metric {
	t.Helper()
	for _, m := range Metrics() {
		if m.Key == key {
			return m
		}
	}
	t.Fatalf("no metric %q", key)
	return Metric{}
}

// sampleReproduction has two experiments: one with every row within
// tolerance, one with a row off in two metrics and a row with its own
// tolerance.
func sampleReproduction(t *testing.T) *Reproduction {
	mibs, rlat, wlat := metric(t, "read_mibs"), metric(t, "read_lat_us"), metric(t, "write_lat_us")
	r := &Reproduction{Experiments: []ReproExperiment{
		{Name: "ext4-dio", Source: "EXPERIMENTS.md section 1", Job: "ext4-dio.fio", Seed: 1, Tolerance: 0.15,
			Rows: []ReproRow{
				{Name: "4k-with", Stack: "with.toml", Env: map[string]string{"BS": "4k"}, Tolerance: 0.15, Metrics: []ReproMetric{
					NewReproMetric(mibs, 30.2, 31.0, 0.15),
					NewReproMetric(rlat, 555, 540.4, 0.15),
					NewReproMetric(wlat, 480, 470, 0.15),
				}},
				{Name: "1M-with", Stack: "with.toml", Env: map[string]string{"BS": "1M"}, Tolerance: 0.15, Metrics: []ReproMetric{
					NewReproMetric(mibs, 476.3, 480.2, 0.15),
				}},
			}},
		{Name: "xfs-dio", Source: "a mailing-list report", Job: "xfs.fio", Seed: 7, Tolerance: 0.1,
			Rows: []ReproRow{
				{Name: "4k", Stack: "xfs.toml", Tolerance: 0.1, Metrics: []ReproMetric{
					NewReproMetric(mibs, 100, 130, 0.1),
					NewReproMetric(rlat, 40, 41, 0.1),
					NewReproMetric(wlat, 12.1, 9.5, 0.1),
				}},
				{Name: "1M-loose", Stack: "xfs.toml", Tolerance: 0.25, Metrics: []ReproMetric{
					NewReproMetric(mibs, 1000, 1200, 0.25),
				}},
			}},
	}}
	r.Tally()
	return r
}

func TestNewReproMetric(t *testing.T) {
	m := NewReproMetric(metric(t, "read_mibs"), 100, 115, 0.15)
	assert.InDelta(t, 0.15, m.Error, 1e-12)
	assert.True(t, m.OK, "at the tolerance is within it")
	m = NewReproMetric(metric(t, "read_mibs"), 100, 84, 0.15)
	assert.InDelta(t, -0.16, m.Error, 1e-12)
	assert.False(t, m.OK)
	assert.Equal(t, "read_mibs", m.Key)
	assert.Equal(t, "read MiB/s", m.Label)
}

func TestMetricsValues(t *testing.T) {
	s := Summary{Read: DirSummary{MiBs: 1, IOPS: 2, LatUs: 3, Requests: 7}, Write: DirSummary{MiBs: 4, IOPS: 5, LatUs: 6, Requests: 8}}
	got := map[string]float64{}
	for _, m := range Metrics() {
		got[m.Key] = m.Value(s)
		assert.NotEmpty(t, m.Label)
	}
	assert.Equal(t, map[string]float64{"read_mibs": 1, "read_iops": 2, "read_lat_us": 3, "read_requests": 7,
		"write_mibs": 4, "write_iops": 5, "write_lat_us": 6, "write_requests": 8}, got)
}

// MetricByKey knows the fixed metrics and the request-size ones, whose
// keys it spells canonically; anything else is an error naming the key.
func TestMetricByKey(t *testing.T) {
	s := Summary{
		Read:  DirSummary{RequestSizes: map[int64]uint64{4096: 80000, 512 << 10: 12}},
		Write: DirSummary{RequestSizes: map[int64]uint64{4096: 3, 512 << 10: 2208, 1 << 20: 1}},
	}
	for _, tc := range []struct {
		key, canon, label string
		value             float64
		err               string
	}{
		{key: "read_mibs", canon: "read_mibs", label: "read MiB/s"},
		{key: "write_requests", canon: "write_requests", label: "write requests"},
		{key: "read_requests_4k", canon: "read_requests_4k", label: "read requests 4k", value: 80000},
		{key: "read_requests_4096", canon: "read_requests_4k", label: "read requests 4k", value: 80000},
		{key: "read_requests_4KiB", canon: "read_requests_4k", label: "read requests 4k", value: 80000},
		{key: "write_requests_512k", canon: "write_requests_512k", label: "write requests 512k", value: 2208},
		{key: "write_requests_1m", canon: "write_requests_1m", label: "write requests 1m", value: 1},
		{key: "write_requests_1024k", canon: "write_requests_1m", label: "write requests 1m", value: 1},
		{key: "read_requests_8k", canon: "read_requests_8k", label: "read requests 8k", value: 0},
		{key: "read_requests_1536", canon: "read_requests_1536", label: "read requests 1536", value: 0},
		{key: "read_mibs_4k", err: `unknown metric "read_mibs_4k"`},
		{key: "trim_requests_4k", err: `unknown metric "trim_requests_4k"`},
		{key: "read_requests_", err: `metric "read_requests_": size ""`},
		{key: "read_requests_4x", err: `size "4x": want a positive multiple of 512 bytes`},
		{key: "read_requests_0", err: `size "0": want a positive multiple of 512 bytes`},
		{key: "read_requests_1000", err: `size "1000": want a positive multiple of 512 bytes`},
		{key: "read_requests_-4k", err: `size "-4k"`},
		{key: "read_requests_99999999999t", err: `size "99999999999t"`},
	} {
		t.Run(tc.key, func(t *testing.T) {
			m, err := MetricByKey(tc.key)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.canon, m.Key)
			assert.Equal(t, tc.label, m.Label)
			if strings.Contains(tc.key, "_requests_") {
				assert.Equal(t, tc.value, m.Value(s))
			}
		})
	}
}

func TestTally(t *testing.T) {
	r := sampleReproduction(t)
	assert.Equal(t, 4, r.Rows)
	assert.Equal(t, 1, r.RowsOff)
	assert.False(t, r.OK)
	assert.True(t, r.Experiments[0].Rows[0].OK)
	assert.False(t, r.Experiments[1].Rows[0].OK)
	assert.True(t, r.Experiments[1].Rows[1].OK, "+20%% is within the row's own 25%%")
	assert.Equal(t, "reproduce: OFF, 1 of 4 rows outside tolerance: xfs-dio/4k (read MiB/s +30.0%, write lat us -21.5%; tolerance ±10%)", r.Verdict())

	ok := &Reproduction{Experiments: r.Experiments[:1]}
	ok.Tally()
	assert.True(t, ok.OK)
	assert.Equal(t, "reproduce: OK, all 2 rows of 1 experiment within tolerance", ok.Verdict())
}

// Ratios are judged on their own and counted apart from rows; a zero
// denominator is never within tolerance.
func TestTallyRatios(t *testing.T) {
	r := sampleReproduction(t)
	e := &r.Experiments[0]
	e.Ratios = []ReproRatio{
		{Name: "gain", Of: "1M-with", Over: "4k-with", Key: "read_mibs", Label: "read MiB/s", Published: 15, Tolerance: 0.1},
		{Name: "zero", Of: "4k-with", Over: "1M-with", Key: "read_mibs", Label: "read MiB/s", Published: 1, Tolerance: 0.1},
	}
	e.Ratios[0].SetSimulated(480.2, 31.0)
	e.Ratios[1].SetSimulated(31, 0)
	require.NotNil(t, e.Ratios[0].Simulated)
	assert.InDelta(t, 15.49, *e.Ratios[0].Simulated, 0.01)
	assert.True(t, e.Ratios[0].OK)
	assert.False(t, e.Ratios[1].OK)
	assert.Nil(t, e.Ratios[1].Simulated)
	r.Tally()
	r.Tally() // idempotent
	assert.Equal(t, 2, r.Ratios)
	assert.Equal(t, 1, r.RatiosOff)
	assert.False(t, r.OK)
	assert.Equal(t, "reproduce: OFF, 1 of 4 rows and 1 of 2 ratios outside tolerance: ext4-dio/ratio zero (read MiB/s n/a (zero denominator); tolerance ±10%); xfs-dio/4k (read MiB/s +30.0%, write lat us -21.5%; tolerance ±10%)", r.Verdict())

	var js bytes.Buffer
	require.NoError(t, WriteReproduceJSON(&js, r), "a zero denominator is null in JSON, not +Inf")
	assert.Contains(t, js.String(), `"simulated": null`)
	var text bytes.Buffer
	require.NoError(t, WriteReproduce(&text, r))
	assert.Contains(t, text.String(), "  ratio zero: read MiB/s of 4k-with over 1M-with: published 1.00, simulated n/a, n/a (zero denominator) (tolerance ±10%) OFF\n")

	ok := &Reproduction{Experiments: []ReproExperiment{*e}}
	ok.Experiments[0].Ratios = ok.Experiments[0].Ratios[:1]
	ok.Tally()
	assert.True(t, ok.OK)
	assert.Equal(t, "reproduce: OK, all 2 rows and 1 ratios of 1 experiment within tolerance", ok.Verdict())
	var b bytes.Buffer
	require.NoError(t, WriteReproduce(&b, ok))
	assert.Contains(t, b.String(), "\n  ratio gain: read MiB/s of 1M-with over 4k-with: published 15.00, simulated 15.49, +3.3% (tolerance ±10%) OK\n")
	b.Reset()
	require.NoError(t, WriteReproduceJSON(&b, ok))
	assert.Contains(t, b.String(), `"ratios": [`)
	assert.Contains(t, b.String(), `"metric": "read_mibs"`)
}

func TestWriteReproduceGolden(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteReproduce(&b, sampleReproduction(t)))
	checkGolden(t, "reproduce.golden", b.Bytes())
	out := b.String()
	assert.True(t, strings.HasPrefix(out, "ext4-dio: EXPERIMENTS.md section 1\n"), out)
	assert.Contains(t, out, "\nxfs-dio: a mailing-list report\n")
	assert.Equal(t, 2, strings.Count(out, " OFF\n"), out)
	assert.True(t, strings.HasSuffix(out, "\n"+sampleReproduction(t).Verdict()+"\n"))
}

func TestWriteReproduceJSON(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteReproduceJSON(&b, sampleReproduction(t)))
	var v struct {
		Experiments []struct {
			Name      string  `json:"name"`
			Source    string  `json:"source"`
			Tolerance float64 `json:"tolerance"`
			Rows      []struct {
				Name    string            `json:"name"`
				Env     map[string]string `json:"env"`
				OK      bool              `json:"ok"`
				Metrics []struct {
					Name      string  `json:"name"`
					Published float64 `json:"published"`
					Simulated float64 `json:"simulated"`
					Error     float64 `json:"error"`
					OK        bool    `json:"ok"`
				} `json:"metrics"`
			} `json:"rows"`
		} `json:"experiments"`
		Rows    int  `json:"rows"`
		RowsOff int  `json:"rows_off"`
		OK      bool `json:"ok"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &v))
	assert.Equal(t, 4, v.Rows)
	assert.Equal(t, 1, v.RowsOff)
	assert.False(t, v.OK)
	require.Len(t, v.Experiments, 2)
	assert.Equal(t, "EXPERIMENTS.md section 1", v.Experiments[0].Source)
	row := v.Experiments[1].Rows[0]
	assert.Equal(t, "4k", row.Name)
	assert.False(t, row.OK)
	require.Len(t, row.Metrics, 3)
	assert.Equal(t, "read_mibs", row.Metrics[0].Name)
	assert.InDelta(t, 0.3, row.Metrics[0].Error, 1e-12)
	assert.False(t, row.Metrics[0].OK)
	assert.True(t, row.Metrics[1].OK)
	assert.Equal(t, map[string]string{"BS": "4k"}, v.Experiments[0].Rows[0].Env)
}

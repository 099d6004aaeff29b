package report

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/blksim/blksim/internal/latency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteJSONGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, sampleResult(), Options{OmitWall: true}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "json.golden", b.Bytes())
}

// orderedKeys returns the keys of the JSON object in data, in order.
func orderedKeys(t *testing.T, data json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %v %v", tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestWriteJSONParsesWithFioFieldNames(t *testing.T) {
	r := sampleResult()
	var b bytes.Buffer
	if err := WriteJSON(&b, r, Options{}); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b.Bytes()) {
		t.Fatalf("invalid JSON:\n%s", b.String())
	}

	var top map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	if got, want := orderedKeys(t, b.Bytes()), []string{"fio version", "timestamp", "timestamp_ms", "time", "global options", "jobs", "blksim"}; !slices.Equal(got, want) {
		t.Errorf("top-level keys %v, want %v", got, want)
	}

	var jobs []json.RawMessage
	if err := json.Unmarshal(top["jobs"], &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 5 {
		t.Fatalf("%d jobs, want 5", len(jobs))
	}
	// The keys of a real fio 3.33 job (less its wall-clock "eta" and
	// "elapsed"), in its order.
	wantJobKeys := []string{"jobname", "groupid", "error", "eta", "elapsed", "job options", "read", "write", "trim", "sync", "job_runtime",
		"usr_cpu", "sys_cpu", "ctx", "majf", "minf", "iodepth_level", "iodepth_submit", "iodepth_complete",
		"latency_ns", "latency_us", "latency_ms", "latency_depth", "latency_target", "latency_percentile", "latency_window"}
	wantDirKeys := []string{"io_bytes", "io_kbytes", "bw_bytes", "bw", "iops", "runtime", "total_ios",
		"short_ios", "drop_ios", "slat_ns", "clat_ns", "lat_ns", "bw_min", "bw_max", "bw_agg", "bw_mean",
		"bw_dev", "bw_samples", "iops_min", "iops_max", "iops_mean", "iops_stddev", "iops_samples"}
	// "job options" only for a job whose section gave options, as fio.
	withOptions := map[int]bool{0: true, 1: true, 2: true}
	for i, j := range jobs {
		wantJobKeys := wantJobKeys
		if !withOptions[i] {
			wantJobKeys = slices.DeleteFunc(slices.Clone(wantJobKeys), func(k string) bool { return k == "job options" })
		}
		if got := orderedKeys(t, j); !slices.Equal(got, wantJobKeys) {
			t.Errorf("job keys %v, want %v", got, wantJobKeys)
		}
		var dirs map[string]json.RawMessage
		if err := json.Unmarshal(j, &dirs); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"read", "write", "trim"} {
			if got := orderedKeys(t, dirs[d]); !slices.Equal(got, wantDirKeys) {
				t.Errorf("%s keys %v, want %v", d, got, wantDirKeys)
			}
		}
		if got := orderedKeys(t, dirs["sync"]); !slices.Equal(got, []string{"total_ios", "lat_ns"}) {
			t.Errorf("sync keys %v", got)
		}
	}

	// Typed decoding of the fields fio consumers read.
	type lat struct {
		Min        int64            `json:"min"`
		Max        int64            `json:"max"`
		Mean       float64          `json:"mean"`
		Stddev     float64          `json:"stddev"`
		N          uint64           `json:"N"`
		Percentile map[string]int64 `json:"percentile"`
	}
	type dir struct {
		IOBytes  uint64  `json:"io_bytes"`
		IOKBytes uint64  `json:"io_kbytes"`
		BWBytes  uint64  `json:"bw_bytes"`
		BW       uint64  `json:"bw"`
		IOPS     float64 `json:"iops"`
		Runtime  uint64  `json:"runtime"`
		TotalIOs uint64  `json:"total_ios"`
		Slat     lat     `json:"slat_ns"`
		Clat     lat     `json:"clat_ns"`
		Lat      lat     `json:"lat_ns"`
	}
	var out struct {
		FioVersion string            `json:"fio version"`
		Timestamp  int64             `json:"timestamp"`
		Global     map[string]string `json:"global options"`
		Jobs       []struct {
			Jobname    string            `json:"jobname"`
			GroupID    int               `json:"groupid"`
			Error      int               `json:"error"`
			Options    map[string]string `json:"job options"`
			Read       dir               `json:"read"`
			Write      dir               `json:"write"`
			Trim       dir               `json:"trim"`
			JobRuntime uint64            `json:"job_runtime"`
			UsrCPU     float64           `json:"usr_cpu"`
			SysCPU     float64           `json:"sys_cpu"`
			Ctx        uint64            `json:"ctx"`
			Majf       uint64            `json:"majf"`
			Minf       uint64            `json:"minf"`
		} `json:"jobs"`
		Blksim struct {
			Seed  uint64 `json:"seed"`
			Locks []struct {
				Name, Kind  string
				Read, Write map[string]int64
				Handoffs    uint64
			} `json:"locks"`
			CPUs   []map[string]int64 `json:"cpus"`
			SpinNS int64              `json:"spin_ns"`
			Engine map[string]float64 `json:"engine"`
		} `json:"blksim"`
	}
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	// The bare flag time_based is left out, as fio 3.33 leaves it out.
	if out.FioVersion != "blksim" || out.Timestamp != 0 || !mapsEqual(out.Global, map[string]string{"direct": "1", "size": "1g"}) {
		t.Errorf("header: %q %d %v", out.FioVersion, out.Timestamp, out.Global)
	}

	j0 := out.Jobs[0]
	src := &r.Groups[0].Jobs[0]
	if j0.Jobname != "randread" || j0.GroupID != 0 || j0.Error != 0 || j0.JobRuntime != 2500 || j0.Read.Runtime != 2501 { // 2500.12 ms: cut (total_run_time), rounded up (update_runtime)
		t.Errorf("job 0 header: %+v", j0)
	}
	if want := map[string]string{"rw": "randread", "bs": "4k"}; !mapsEqual(j0.Options, want) {
		t.Errorf("job options %v, want %v", j0.Options, want)
	}
	rd := j0.Read
	if rd.IOBytes != src.Read.Bytes || rd.IOKBytes != src.Read.Bytes/1024 || rd.TotalIOs != 20000 || rd.Runtime != 2501 {
		t.Errorf("read totals: %+v", rd)
	}
	if rd.BWBytes != src.Read.Bytes*1000/2501 || rd.BW != rd.BWBytes/1024 || math.Abs(rd.IOPS-20000.0*1000/2501) > 1e-6 {
		t.Errorf("read rates: bw_bytes %d bw %d iops %v", rd.BWBytes, rd.BW, rd.IOPS)
	}
	if rd.Clat.N != 20000 || rd.Clat.Min != src.Read.Clat.Min() || rd.Clat.Max != src.Read.Clat.Max() ||
		math.Abs(rd.Clat.Mean-src.Read.Clat.Mean()) > 1e-6 || math.Abs(rd.Clat.Stddev-src.Read.Clat.Stddev()) > 1e-6 {
		t.Errorf("clat_ns: %+v", rd.Clat)
	}
	if len(rd.Clat.Percentile) != len(defaultPercentiles) {
		t.Errorf("%d percentiles, want %d", len(rd.Clat.Percentile), len(defaultPercentiles))
	}
	for key, p := range map[string]float64{"1.000000": 1, "50.000000": 50, "99.500000": 99.5, "99.990000": 99.99} {
		if got, want := rd.Clat.Percentile[key], src.Read.Clat.Percentile(p); got != want {
			t.Errorf("percentile[%s] = %d, want %d", key, got, want)
		}
	}
	if rd.Slat.N != 0 || rd.Slat.Percentile != nil || rd.Lat.Percentile != nil {
		t.Errorf("slat/lat: %+v %+v", rd.Slat, rd.Lat)
	}
	if w := j0.Write; w.IOBytes != 0 || w.Runtime != 0 || w.IOPS != 0 || w.Clat.N != 0 || w.Clat.Percentile != nil {
		t.Errorf("idle write direction: %+v", w)
	}

	if j1 := out.Jobs[1]; j1.Options["bs"] != "4k,16k" || j1.Read.Slat.N != 30000 || j1.Write.Slat.N != 12000 {
		t.Errorf("job 1: %+v", j1)
	}
	if j3 := out.Jobs[3]; j3.Error != 5 || j3.Jobname != "fsync-writer" || j3.GroupID != 2 {
		t.Errorf("job 3: %+v", j3)
	}
	// fio's CPU figures: whole msec of CPU time over whole msec of runtime
	// (13/2500, 97/2500); a group's runtimes are summed (1234/240003).
	assert.InDelta(t, 0.52, out.Jobs[0].UsrCPU, 1e-9)
	assert.InDelta(t, 3.88, out.Jobs[0].SysCPU, 1e-9)
	assert.Equal(t, uint64(20011), out.Jobs[0].Ctx)
	assert.Zero(t, out.Jobs[0].Majf+out.Jobs[0].Minf)
	assert.InDelta(t, 1234.0*100/240003, out.Jobs[3].SysCPU, 1e-6) // %f: six decimals
	require.Len(t, out.Blksim.CPUs, 4)
	assert.Equal(t, map[string]int64{"cpu": 1, "usr_ns": 65e6, "sys_ns": 640e6}, out.Blksim.CPUs[1])
	assert.Equal(t, int64(4007e3), out.Blksim.SpinNS)

	if out.Blksim.Seed != 42 || len(out.Blksim.Locks) != len(r.Locks) {
		t.Errorf("blksim: seed %d, %d locks", out.Blksim.Seed, len(out.Blksim.Locks))
	}
	l := out.Blksim.Locks[1]
	if l.Name != "ext4:i_rwsem:file0" || l.Kind != "rwsem" || l.Handoffs != 17 ||
		l.Write["acquisitions"] != 23700 || l.Write["wait_total_ns"] != 61e9 || l.Write["spin_ns"] != 4e6 ||
		l.Read["wait_min_ns"] != 800 || len(l.Read) != 12 ||
		l.Write["acq_bounces"] != 20100 || l.Write["con_bounces"] != 9700 {
		t.Errorf("lock: %+v", l)
	}
	e := out.Blksim.Engine
	if e["events"] != 1234567 || e["wall_seconds"] != 1.75 || e["simulated_ios"] != float64(r.Engine.SimulatedIOs) ||
		math.Abs(e["ios_per_wall_second"]-float64(r.Engine.SimulatedIOs)/1.75) > 1e-3 {
		t.Errorf("engine: %v", e)
	}
}

func TestWriteJSONOmitWall(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, sampleResult(), Options{OmitWall: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "wall") {
		t.Errorf("OmitWall output mentions wall time")
	}
}

func TestJSONStringEscaping(t *testing.T) {
	r := sampleResult()
	r.Groups[0].Jobs[0].Name = "q\"uote\\back\nline\ttab\x01ctl\xffbad ünï"
	var b bytes.Buffer
	if err := WriteJSON(&b, r, Options{OmitWall: true}); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Jobs []struct {
			Jobname string `json:"jobname"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if want := "q\"uote\\back\nline\ttab\x01ctl\ufffdbad ünï"; out.Jobs[0].Jobname != want {
		t.Errorf("jobname %q, want %q", out.Jobs[0].Jobname, want)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A job's "elapsed" counts whole seconds, rounded up, until the jobs
// ended, as fio's does when it exits, not the writeback the engine goes
// on simulating (fio 3.33: a 3 ms buffered write job shows elapsed 1).
func TestJSONElapsedEndsWithTheJobs(t *testing.T) {
	r := sampleResult()
	r.Engine.SimulatedSeconds, r.Engine.JobsSeconds = 36.2, 0.003
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, r, Options{}))
	var top struct {
		Jobs []struct {
			Elapsed int `json:"elapsed"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &top))
	require.NotEmpty(t, top.Jobs)
	for _, j := range top.Jobs {
		assert.Equal(t, 1, j.Elapsed)
	}
}

// TestJSONPlusSyncBins: fio 3.33's json+ gives the sync latencies of
// fsync=N calls "bins" as it gives clat_ns theirs (add_ddir_lat_json),
// and neither has them with clat_percentiles=0 or without samples.
func TestJSONPlusSyncBins(t *testing.T) {
	for _, tc := range []struct {
		name      string
		syncs     []int64
		noPct     bool
		wantBins  bool
		wantCount string
	}{
		{name: "fsync calls", syncs: []int64{2000, 2000, 20840}, wantBins: true, wantCount: `"2008" : 2`},
		{name: "clat_percentiles=0", syncs: []int64{2000}, noPct: true},
		{name: "no fsync calls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var clat latency.Histogram
			clat.Record(12000)
			r := fioJob(true, 1, 4096, 10, &clat)
			j := &r.Groups[0].Jobs[0]
			j.NoClatPercentiles = tc.noPct
			for _, v := range tc.syncs {
				j.Sync.Lat.Record(v)
				j.Sync.IssuedFsync++
				j.Sync.IOs++
			}
			var b bytes.Buffer
			require.NoError(t, WriteJSON(&b, r, Options{Bins: true}))
			var out struct {
				Jobs []struct {
					Sync struct {
						Lat map[string]json.RawMessage `json:"lat_ns"`
					} `json:"sync"`
				} `json:"jobs"`
			}
			require.NoError(t, json.Unmarshal(b.Bytes(), &out))
			bins, ok := out.Jobs[0].Sync.Lat["bins"]
			assert.Equal(t, tc.wantBins, ok)
			if tc.wantBins {
				assert.Contains(t, string(bins), tc.wantCount)
			}
		})
	}
}

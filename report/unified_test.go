package report

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/workload"
)

// rates builds rate samples from the figures fio prints for them: their
// number, minimum, maximum, mean and standard deviation.
func rates(n, lo, hi uint64, mean, dev float64) workload.RateSamples {
	return workload.RateSamples{N: n, Min: lo, Max: hi, Mean: mean, S: dev * dev * float64(n-1)}
}

// unifiedJob is a 4 KiB psync randrw job of 2001 msec with unified
// reporting mode; its IO counts and rate samples are those of an fio 3.33
// run (time_based, runtime=2s, unified_rw_reporting=both), its latencies
// drawn at random.
func unifiedJob(mode int) *workload.Result {
	rng := rand.New(rand.NewPCG(1, 2))
	clat := func() int64 { return int64(40000 + rng.ExpFloat64()*50000) }
	j := workload.JobResult{Name: "j", RW: "randrw", BS: [2]int64{4096, 4096}, IOEngine: "psync",
		IODepth: 1, Runtime: 2001e6, UnifiedRW: mode}
	gen(&j.Read, 10880, 4096, nil, clat)
	gen(&j.Write, 10844, 4096, nil, clat)
	j.Read.BW = rates(3, 20135, 24592, 67655.0/3, 2252.21)
	j.Write.BW = rates(3, 19560, 24504, 67832.0/3, 2667.46)
	j.Read.IOPS = rates(3, 5033, 6148, 16913.0/3, 563.45)
	j.Write.IOPS = rates(3, 4890, 6126, 16958.0/3, 666.87)
	syncDepths(&j)
	return &workload.Result{Groups: []workload.GroupResult{{Jobs: []workload.JobResult{j}}}}
}

func TestUnifiedNormal(t *testing.T) {
	tests := []struct {
		name string
		mode int
		want []string // lines (or line starts) in the output, in order
		not  []string
	}{
		{"none", 0, []string{
			"  read: IOPS=5437, BW=21.2MiB/s (22.3MB/s)(42.5MiB/2001msec)\n",
			"  write: IOPS=5419, BW=21.2MiB/s (22.2MB/s)(42.4MiB/2001msec); 0 zone resets\n",
			"     issued rwts: total=10880,10844,0,0 ",
			"   READ: bw=21.2MiB/s (22.3MB/s), ",
			"  WRITE: bw=21.2MiB/s (22.2MB/s), ",
		}, []string{"mixed", "MIXED"}},
		{"mixed", 1, []string{
			"  mixed: IOPS=10.9k, BW=42.4MiB/s (44.5MB/s)(84.9MiB/2001msec)\n",
			"   bw (  KiB/s): min=39695, max=49096, per=100.00%, avg=45162.33, stdev=2207.97, samples=6\n",
			"   iops        : min= 9923, max=12274, avg=11290.33, stdev=552.16, samples=6\n",
			"     issued rwts: total=21724,0,0,0 short=0,0,0,0 dropped=0,0,0,0\n",
			"  MIXED: bw=42.4MiB/s (44.5MB/s), 42.4MiB/s-42.4MiB/s (44.5MB/s-44.5MB/s), io=84.9MiB (89.0MB), run=2001-2001msec\n",
		}, []string{"read:", "write:", "zone resets", "READ:", "WRITE:"}},
		// fio 3.33's own output for this run: its both-mode mixed line
		// has its figures formatted with no significant figures.
		{"both", 2, []string{
			"  read: IOPS=5437, BW=21.2MiB/s (22.3MB/s)(42.5MiB/2001msec)\n",
			"   bw (  KiB/s): min=20135, max=24592, per=100.00%, avg=22551.67, stdev=2252.21, samples=3\n",
			"  write: IOPS=5419, BW=21.2MiB/s (22.2MB/s)(42.4MiB/2001msec); 0 zone resets\n",
			"   bw (  KiB/s): min=19560, max=24504, per=100.00%, avg=22610.67, stdev=2667.46, samples=3\n",
			"  mixed: IOPS=0, BW=0 (0)(0B/2001msec)\n",
			"   bw (  KiB/s): min=39695, max=49096, per=100.00%, avg=45162.33, stdev=2207.97, samples=6\n",
			"   iops        : min= 9923, max=12274, avg=11290.33, stdev=552.16, samples=6\n",
			"     issued rwts: total=10880,10844,0,0 ",
			"   READ: bw=21.2MiB/s (22.3MB/s), 21.2MiB/s-21.2MiB/s (22.3MB/s-22.3MB/s), io=42.5MiB (44.6MB), run=2001-2001msec\n",
			"  WRITE: bw=21.2MiB/s (22.2MB/s), 21.2MiB/s-21.2MiB/s (22.2MB/s-22.2MB/s), io=42.4MiB (44.4MB), run=2001-2001msec\n",
			"  MIXED: bw=42.4MiB/s (44.5MB/s), 21.2MiB/s-21.2MiB/s (22.2MB/s-22.3MB/s), io=84.9MiB (89.0MB), run=2001-2001msec\n",
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			require.NoError(t, WriteNormal(&b, unifiedJob(tt.mode), Options{OmitWall: true}))
			out := b.String()
			rest := out
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				require.GreaterOrEqual(t, i, 0, "missing or out of order: %q in\n%s", w, out)
				rest = rest[i+len(w):]
			}
			for _, n := range tt.not {
				assert.NotContains(t, out, n)
			}
		})
	}
}

// TestUnifiedMixedSums checks the mixed direction against the read and
// write ones it sums: latencies as if recorded together, rates added.
func TestUnifiedMixedSums(t *testing.T) {
	j := &unifiedJob(unifiedBoth).Groups[0].Jobs[0]
	dirs := directions(j)
	require.Len(t, dirs, 3)
	m := dirs[2].stats
	assert.True(t, dirs[2].mixed && dirs[2].both)
	assert.Equal(t, "mixed", dirs[2].name)
	assert.Equal(t, j.Read.Bytes+j.Write.Bytes, m.Bytes)
	assert.Equal(t, j.Read.Issued+j.Write.Issued, m.Issued)
	assert.Equal(t, j.Runtime, m.Runtime)
	assert.Equal(t, j.Read.Clat.Count()+j.Write.Clat.Count(), m.Clat.Count())
	assert.Equal(t, min(j.Read.Clat.Min(), j.Write.Clat.Min()), m.Clat.Min())
	assert.Equal(t, max(j.Read.Clat.Max(), j.Write.Clat.Max()), m.Clat.Max())
	assert.InDelta(t, j.Read.Clat.Sum()+j.Write.Clat.Sum(), m.Clat.Sum(), 1)
	assert.Equal(t, j.Read.BW.Min+j.Write.BW.Min, m.BW.Min)
	assert.Equal(t, j.Read.BW.N+j.Write.BW.N, m.BW.N)
	assert.InDelta(t, j.Read.BW.Mean+j.Write.BW.Mean, m.BW.Mean, 1e-9)
	// The job's own figures are left alone.
	assert.Equal(t, uint64(10880), j.Read.Issued)

	// A read-only job: the mixed runtime is the read one's, not the
	// write direction's (which moved nothing).
	ro := workload.JobResult{Runtime: 5e6, UnifiedRW: unifiedMixed}
	ro.Read.Bytes, ro.Read.Runtime = 4096, 3e6
	dirs = directions(&ro)
	require.Len(t, dirs, 1)
	assert.Equal(t, int64(3e6), dirs[0].stats.Runtime)
}

func TestUnifiedJSON(t *testing.T) {
	tests := []struct {
		mode int
		keys []string
	}{
		{0, []string{"read", "write", "trim", "sync"}},
		{1, []string{"mixed"}},
		{2, []string{"read", "write", "trim", "sync", "mixed"}},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		require.NoError(t, WriteJSON(&b, unifiedJob(tt.mode), Options{OmitWall: true}))
		var doc struct {
			Jobs []json.RawMessage `json:"jobs"`
		}
		require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
		require.Len(t, doc.Jobs, 1)
		var dirKeys []string
		for _, k := range orderedKeys(t, doc.Jobs[0]) {
			switch k {
			case "read", "write", "trim", "sync", "mixed":
				dirKeys = append(dirKeys, k)
			}
		}
		assert.Equal(t, tt.keys, dirKeys, "mode %d", tt.mode)
		if tt.mode == 0 {
			continue
		}
		var job struct {
			Mixed map[string]any `json:"mixed"`
		}
		require.NoError(t, json.Unmarshal(doc.Jobs[0], &job))
		m := job.Mixed
		assert.EqualValues(t, 21724*4096, m["io_bytes"])
		assert.EqualValues(t, 21724, m["total_ios"])
		assert.EqualValues(t, 2001, m["runtime"])
		assert.EqualValues(t, 39695, m["bw_min"])
		assert.EqualValues(t, 6, m["bw_samples"])
		assert.InDelta(t, 2207.97, m["bw_dev"], 0.01)
	}
}

func TestUnifiedTerse(t *testing.T) {
	fields := func(mode, ver int) []string {
		var b strings.Builder
		require.NoError(t, WriteTerse(&b, unifiedJob(mode), Options{TerseVersion: ver}))
		return strings.Split(strings.TrimSuffix(b.String(), "\n"), ";")
	}
	// fio 3.33's terse v3 of a randrw job on one disk has 130 fields; 89
	// with mixed (no write fields), 171 with both (the mixed ones after
	// the write ones). Versions 4 and 5 have trim fields too, which mixed
	// leaves out as well.
	n3, n5 := len(fields(0, 3)), len(fields(0, 5))
	tests := []struct{ mode, ver, n int }{
		{1, 3, n3 - dirFieldsV3}, {2, 3, n3 + dirFieldsV3},
		{1, 5, n5 - 2*dirFieldsV5}, {2, 5, n5 + dirFieldsV5},
	}
	for _, tt := range tests {
		assert.Len(t, fields(tt.mode, tt.ver), tt.n, "mode %d v%d", tt.mode, tt.ver)
	}
	// The read fields hold the sums: KiB, bandwidth, IOPS, runtime.
	f := fields(1, 3)
	assert.Equal(t, []string{"86896", "43426", "10856", "2001"}, f[5:9])
	g := fields(2, 3)
	assert.Equal(t, f[5:5+dirFieldsV3], g[5+2*dirFieldsV3:5+3*dirFieldsV3], "both's mixed block is mixed's read block")
}

// dirFieldsV3 and dirFieldsV5 are the number of terse fields of one
// direction in versions 3 and 5.
const (
	dirFieldsV3 = 41
	dirFieldsV5 = 47
)

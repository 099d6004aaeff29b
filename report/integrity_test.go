package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/workload"
)

// integrityResult is sampleResult with the atomicity oracle on for every
// job but the last, which found torn and stale reads in the first job.
func integrityResult() *workload.Result {
	r := sampleResult()
	var jobs []*workload.JobResult
	for gi := range r.Groups {
		for ji := range r.Groups[gi].Jobs {
			jobs = append(jobs, &r.Groups[gi].Jobs[ji])
		}
	}
	for i, j := range jobs[:len(jobs)-1] {
		j.Integrity = workload.IntegrityStats{On: true, Reads: uint64(100 * (i + 1))}
	}
	jobs[0].Integrity.TornReads, jobs[0].Integrity.TornPages = 3, 17
	jobs[0].Integrity.StaleReads, jobs[0].Integrity.StalePages = 1, 2
	for _, j := range jobs {
		r.Integrity.Merge(&j.Integrity)
	}
	return r
}

func TestWriteNormalIntegrity(t *testing.T) {
	tests := []struct {
		name   string
		result *workload.Result
		lines  []string // each must appear, in this order
		jobs   int      // per-job integrity lines
	}{
		{name: "off", result: sampleResult()},
		{name: "on", result: integrityResult(), lines: []string{
			"  integrity    : torn_reads=3 (pages=17), stale_reads=1 (pages=2)\n",
			"  integrity    : torn_reads=0 (pages=0), stale_reads=0 (pages=0)\n",
			"\nIntegrity (all jobs): reads_checked=",
			", torn_reads=3 (pages=17), stale_reads=1 (pages=2)\n",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, WriteNormal(&b, tc.result, Options{OmitWall: true}))
			out := b.String()
			rest := out
			for _, l := range tc.lines {
				i := strings.Index(rest, l)
				require.GreaterOrEqual(t, i, 0, "missing %q in\n%s", l, out)
				rest = rest[i+len(l):]
			}
			if tc.lines == nil {
				assert.NotContains(t, out, "integrity")
				assert.NotContains(t, out, "Integrity")
				return
			}
			// One line per watched job; the group total precedes the
			// engine line.
			want := 0
			for _, g := range tc.result.Groups {
				for _, j := range g.Jobs {
					if j.Integrity.On && (j.Read.Bytes != 0 || j.Write.Bytes != 0 || j.Read.IOs+j.Write.IOs != 0 || j.Error != 0) {
						want++
					}
				}
			}
			assert.Equal(t, want, strings.Count(out, "  integrity    : "))
			assert.Less(t, strings.Index(out, "Integrity (all jobs)"), strings.Index(out, "blksim engine:"))
		})
	}
}

func TestWriteJSONIntegrity(t *testing.T) {
	type counts struct {
		Jobname    string `json:"jobname"`
		JobID      *int   `json:"jobid"`
		Reads      uint64 `json:"reads_checked"`
		TornReads  uint64 `json:"torn_reads"`
		TornPages  uint64 `json:"torn_pages"`
		StaleReads uint64 `json:"stale_reads"`
		StalePages uint64 `json:"stale_pages"`
	}
	var doc struct {
		Blksim map[string]json.RawMessage `json:"blksim"`
	}
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, sampleResult(), Options{OmitWall: true}))
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	assert.NotContains(t, doc.Blksim, "integrity", "no oracle, no section")

	r := integrityResult()
	b.Reset()
	require.NoError(t, WriteJSON(&b, r, Options{OmitWall: true}))
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	require.Contains(t, doc.Blksim, "integrity")
	var in struct {
		counts
		Jobs []counts `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal(doc.Blksim["integrity"], &in))
	assert.Equal(t, r.Integrity.Reads, in.Reads)
	assert.Equal(t, uint64(3), in.TornReads)
	assert.Equal(t, uint64(17), in.TornPages)
	assert.Equal(t, uint64(1), in.StaleReads)
	assert.Equal(t, uint64(2), in.StalePages)
	var on []workload.JobResult
	for _, g := range r.Groups {
		for _, j := range g.Jobs {
			if j.Integrity.On {
				on = append(on, j)
			}
		}
	}
	require.Len(t, in.Jobs, len(on))
	for i, j := range on {
		assert.Equal(t, j.Name, in.Jobs[i].Jobname)
		require.NotNil(t, in.Jobs[i].JobID)
		assert.Equal(t, j.JobID, *in.Jobs[i].JobID)
		assert.Equal(t, j.Integrity.Reads, in.Jobs[i].Reads)
		assert.Equal(t, j.Integrity.TornPages, in.Jobs[i].TornPages)
	}
	assert.Equal(t, []string{"reads_checked", "torn_reads", "torn_pages", "stale_reads", "stale_pages", "jobs"},
		orderedKeys(t, doc.Blksim["integrity"]))
}

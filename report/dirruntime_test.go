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

// A write job with verify: fio's runtime of each direction is its phases'
// (writes 20 ms, the verify phase's reads 10 ms), and its bandwidth is over
// that; job_runtime is the whole job, summed over the jobs of a
// group_reporting result (fio's total_run_time).
func TestDirectionRuntimes(t *testing.T) {
	j := workload.JobResult{Name: "v", RW: "randwrite", BS: [2]int64{4096, 4096}, IOEngine: "psync",
		IODepth: 1, Jobs: 1, Runtime: 30e6, CPU: workload.CPUUsage{Runtime: 30e6}}
	j.Read.IOs, j.Read.Issued, j.Read.Bytes, j.Read.Runtime = 256, 256, 1<<20, 10e6
	j.Write.IOs, j.Write.Issued, j.Write.Bytes, j.Write.Runtime = 256, 256, 1<<20, 20e6
	res := &workload.Result{Groups: []workload.GroupResult{{Jobs: []workload.JobResult{j}}}}

	var out bytes.Buffer
	require.NoError(t, WriteJSON(&out, res, Options{}))
	var doc struct {
		Jobs []struct {
			Read, Write struct {
				Runtime uint64 `json:"runtime"`
				BW      uint64 `json:"bw"`
			}
			JobRuntime uint64 `json:"job_runtime"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	got := doc.Jobs[0]
	assert.Equal(t, uint64(10), got.Read.Runtime)
	assert.Equal(t, uint64(102400), got.Read.BW)
	assert.Equal(t, uint64(20), got.Write.Runtime)
	assert.Equal(t, uint64(51200), got.Write.BW)
	assert.Equal(t, uint64(30), got.JobRuntime)

	out.Reset()
	require.NoError(t, WriteNormal(&out, res, Options{}))
	assert.Contains(t, out.String(), "(1024KiB/10msec)")
	assert.Contains(t, out.String(), "(1024KiB/20msec)")
	assert.Contains(t, out.String(), "run=10-10msec")
	assert.Contains(t, out.String(), "run=20-20msec")

	out.Reset()
	require.NoError(t, WriteTerse(&out, res, Options{TerseVersion: 3}))
	f := strings.Split(out.String(), ";")
	assert.Equal(t, []string{"1024", "102400", "25600", "10"}, f[5:9], "read: kB, bw, iops, runtime")
	assert.Equal(t, []string{"1024", "51200", "12800", "20"}, f[46:50], "write")

	// group_reporting: job_runtime is the jobs' sum.
	g := j
	g.Jobs, g.CPU.Runtime = 3, 90e6
	res = &workload.Result{Groups: []workload.GroupResult{{GroupReporting: true, Jobs: []workload.JobResult{g}}}}
	out.Reset()
	require.NoError(t, WriteJSON(&out, res, Options{}))
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	assert.Equal(t, uint64(90), doc.Jobs[0].JobRuntime)
}

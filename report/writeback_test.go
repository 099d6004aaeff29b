package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/workload"
	"github.com/blksim/blksim/writeback"
)

// writebackResult is sampleResult with writeback figures: 300 pages
// written by background writeback and 100 by fsync, two skipped calls of
// the lock rule, and five throttle pauses.
func writebackResult() *workload.Result {
	r := sampleResult()
	var s writeback.Stats
	s.Written[writeback.ReasonBackground], s.Calls[writeback.ReasonBackground] = 300, 3
	s.Written[writeback.ReasonFsync], s.Calls[writeback.ReasonFsync] = 100, 1
	s.Skips, s.SkippedPages = 2, 64
	s.Pauses, s.LimitPauses, s.PauseTotal, s.PauseMax = 5, 1, 250*time.Millisecond, 200*time.Millisecond
	r.Writeback = &workload.WritebackResult{Stats: s, Background: 1000, Limit: 2000, Bandwidth: 25600}
	return r
}

// The normal output's writeback section: thresholds and bandwidth, pages
// and calls per reason, the lock rule's decisions, the throttle; none
// without figures.
func TestWriteNormalWriteback(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteNormal(&b, sampleResult(), Options{OmitWall: true}))
	assert.NotContains(t, b.String(), "Writeback:")

	b.Reset()
	require.NoError(t, WriteNormal(&b, writebackResult(), Options{OmitWall: true}))
	out := b.String()
	i := strings.Index(out, "\nWriteback:")
	require.GreaterOrEqual(t, i, 0, out)
	assert.Equal(t, `
Writeback: thresholds background=1000 limit=2000 pages, bandwidth estimate 100.0 MiB/s
  pages written: background=300, periodic=0, sync=0, fsync=100 (writepages calls: background=3, periodic=0, sync=0, fsync=1)
  lock rule: serialized=0, skipped=2 (64 pages)
  throttle: pauses=5 (1 at the limit), total=250.0 ms, longest=200.0 ms
`, out[i:i+strings.Index(out[i+1:], "\n\n")+2])
}

// "blksim"."writeback" in the JSON output, only with figures.
func TestWriteJSONWriteback(t *testing.T) {
	var doc struct {
		Blksim map[string]json.RawMessage `json:"blksim"`
	}
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, sampleResult(), Options{OmitWall: true}))
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	assert.NotContains(t, doc.Blksim, "writeback")

	b.Reset()
	require.NoError(t, WriteJSON(&b, writebackResult(), Options{OmitWall: true}))
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	require.Contains(t, doc.Blksim, "writeback")
	var wb struct {
		Background int64            `json:"background_pages"`
		Limit      int64            `json:"limit_pages"`
		Bandwidth  int64            `json:"bandwidth_pages_per_second"`
		Pages      map[string]int64 `json:"pages_written"`
		Calls      map[string]int64 `json:"writepages_calls"`
		Skipped    int64            `json:"skipped"`
		SkipPages  int64            `json:"skipped_pages"`
		Pauses     int64            `json:"pauses"`
		AtLimit    int64            `json:"limit_pauses"`
		Total      int64            `json:"pause_total_ns"`
		Max        int64            `json:"pause_max_ns"`
	}
	require.NoError(t, json.Unmarshal(doc.Blksim["writeback"], &wb))
	assert.Equal(t, int64(1000), wb.Background)
	assert.Equal(t, int64(2000), wb.Limit)
	assert.Equal(t, int64(25600), wb.Bandwidth)
	assert.Equal(t, map[string]int64{"background": 300, "periodic": 0, "sync": 0, "fsync": 100}, wb.Pages)
	assert.Equal(t, map[string]int64{"background": 3, "periodic": 0, "sync": 0, "fsync": 1}, wb.Calls)
	assert.Equal(t, int64(2), wb.Skipped)
	assert.Equal(t, int64(64), wb.SkipPages)
	assert.Equal(t, int64(5), wb.Pauses)
	assert.Equal(t, int64(1), wb.AtLimit)
	assert.Equal(t, int64(250e6), wb.Total)
	assert.Equal(t, int64(200e6), wb.Max)
}

// A job's fsync=N calls: the normal output's
// "fsync/fdatasync/sync_file_range:" block after its directions, and
// "sync" in the JSON with their count and latencies.
func TestWriteSyncLatencies(t *testing.T) {
	r := sampleResult()
	j := &r.Groups[0].Jobs[0]
	for _, ns := range []int64{150000, 200000, 250000} {
		j.Sync.IOs++
		j.Sync.IssuedFsync++
		j.Sync.Lat.Record(ns)
	}
	var b bytes.Buffer
	require.NoError(t, WriteNormal(&b, r, Options{OmitWall: true}))
	out := b.String()
	i := strings.Index(out, "  fsync/fdatasync/sync_file_range:\n    sync (usec): min=150, max=250, avg=200.00, stdev=")
	require.GreaterOrEqual(t, i, 0, out)
	assert.Contains(t, out[i:], "    sync percentiles (usec):\n     |  1.00th=[  151],")
	assert.Less(t, i, strings.Index(out, "  cpu          :"), "before the cpu line")

	b.Reset()
	require.NoError(t, WriteJSON(&b, r, Options{OmitWall: true}))
	var doc struct {
		Jobs []struct {
			Sync struct {
				TotalIOs uint64 `json:"total_ios"`
				Lat      struct {
					N          uint64             `json:"N"`
					Min        int64              `json:"min"`
					Percentile map[string]float64 `json:"percentile"`
				} `json:"lat_ns"`
			} `json:"sync"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	require.NotEmpty(t, doc.Jobs)
	assert.Equal(t, uint64(3), doc.Jobs[0].Sync.TotalIOs)
	assert.Equal(t, uint64(3), doc.Jobs[0].Sync.Lat.N)
	assert.Equal(t, int64(150000), doc.Jobs[0].Sync.Lat.Min)
	assert.Contains(t, doc.Jobs[0].Sync.Lat.Percentile, "50.000000")
}

package blockdev

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
)

// doneAt records when each request completed.
type doneAt struct {
	e  *sim.Engine
	at map[*Request]time.Duration
}

func (d *doneAt) CompleteRequest(r *Request) { d.at[r] = time.Duration(d.e.Now()) }

// The bio-based pmem driver copies in the submitting task: four requests
// of one task complete one copy after another, four tasks' at once.
func TestPMemCopiesPerSubmitter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pids  []uint32
		wants []time.Duration // in copy times
	}{
		{"one task", []uint32{7, 7, 7, 7}, []time.Duration{1, 2, 3, 4}},
		{"four tasks", []uint32{1, 2, 3, 4}, []time.Duration{1, 1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			d, err := NewPMem(e, PMemParams{Capacity: 1 << 30, LogicalBlockSize: 4096, ReadMBps: 1000, WriteMBps: 1000})
			require.NoError(t, err)
			got := &doneAt{e: e, at: map[*Request]time.Duration{}}
			d.Attach(got)
			copyTime := d.DAXCopyTime(OpRead, 64<<10)
			var reqs []*Request
			for i, pid := range tc.pids {
				r := &Request{Op: OpRead, Sector: int64(i) * 128, Bytes: 64 << 10, Issuer: Issuer{PID: pid}}
				reqs = append(reqs, r)
				d.Submit(r)
			}
			run(t, e)
			for i, r := range reqs {
				assert.Equal(t, tc.wants[i]*copyTime, got.at[r], "request %d", i)
			}
		})
	}
}

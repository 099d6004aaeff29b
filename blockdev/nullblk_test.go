package blockdev

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A profile of just kind = "null" is null_blk loaded without parameters.
func TestNullDefaults(t *testing.T) {
	dev, err := NewFromProfile(newEngine(t), profile("kind=null"))
	require.NoError(t, err)
	d := dev.(*Null)
	assert.Equal(t, "nullb0", d.Name())
	assert.Equal(t, int64(250)<<30, d.Capacity())
	assert.Equal(t, Limits{LogicalBlockSize: 512, MaxHWSectorsKB: 127, QueueDepth: 64, HWQueues: 1}, d.Limits())
	assert.Equal(t, 10*us, d.Params().CompletionNsec)
	assert.Nil(t, d.Stamps(), "not memory backed")

	dev, err = NewFromProfile(newEngine(t), profile("kind=null", "logical_block_size=4096", "submit_queues=4", "hw_queue_depth=8", "completion_nsec=2500"))
	require.NoError(t, err)
	assert.Equal(t, Limits{LogicalBlockSize: 4096, MaxHWSectorsKB: 124, QueueDepth: 8, HWQueues: 4}, dev.Limits())
	assert.Equal(t, 2500*time.Nanosecond, dev.(*Null).Params().CompletionNsec, "completion_nsec in ns, as null_blk")
}

// Mechanism: every request completes completion_nsec after submission,
// whatever its size and however many are in flight.
func TestNullLatencyIsCompletionNsec(t *testing.T) {
	for _, tc := range []struct {
		name       string
		completion string
		want       time.Duration
	}{
		{"default", "", 10 * us},
		{"2us", "completion_nsec=2000", 2 * us},
		{"zero", "completion_nsec=0", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kvs := []string{"kind=null", "capacity=64m", "max_hw_sectors_kb=1024"}
			if tc.completion != "" {
				kvs = append(kvs, tc.completion)
			}
			e := newEngine(t)
			dev, err := NewFromProfile(e, profile(kvs...))
			require.NoError(t, err)
			q, err := NewQueue(e, dev, QueueOptions{})
			require.NoError(t, err)
			var lats []func() time.Duration
			for i := range int64(16) {
				lats = append(lats, latencyOf(t, e, q, 3*us, &Bio{Op: Op(i % 2), Sector: i * 2048, Bytes: (i + 1) * 4096, Stamp: Stamp{1, uint64(i + 1)}}))
			}
			run(t, e)
			for _, l := range lats {
				assert.Equal(t, tc.want, l())
			}
		})
	}
}

// Mechanism: mbps (MiB/s, as null_blk's) caps the bandwidth: requests
// pass a FIFO rate limiter, then their completion timer runs.
func TestNullMBps(t *testing.T) {
	e := newEngine(t)
	dev, err := NewFromProfile(e, profile("kind=null", "capacity=64m", "max_hw_sectors_kb=1024", "mbps=1000"))
	require.NoError(t, err)
	q, err := NewQueue(e, dev, QueueOptions{})
	require.NoError(t, err)
	perMiB := time.Second / 1000 // 1 MiB at 1000 MiB/s
	var lats []func() time.Duration
	for i := range int64(4) {
		lats = append(lats, latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: i * 2048, Bytes: MiB}))
	}
	run(t, e)
	for i, l := range lats {
		assert.InDelta(t, float64(time.Duration(i+1)*perMiB+10*us), float64(l()), 2, "request %d", i)
	}
}

// Mechanism: like null_blk, the device keeps data only when memory
// backed; otherwise a read after a write finds the zero stamp.
func TestNullMemoryBacked(t *testing.T) {
	for _, backed := range []bool{true, false} {
		e := newEngine(t)
		kvs := []string{"kind=null", "capacity=64m"}
		if backed {
			kvs = append(kvs, "memory_backed=true")
		}
		dev, err := NewFromProfile(e, profile(kvs...))
		require.NoError(t, err)
		q, err := NewQueue(e, dev, QueueOptions{})
		require.NoError(t, err)
		log := newBioLog(e)
		log.submit(q, &Bio{Op: OpWrite, Sector: 64, Bytes: 8192, Stamp: Stamp{4, 2}})
		r := &Bio{Op: OpRead, Sector: 64, Bytes: 8192, CollectData: true}
		log.submitAt(q, ms, r)
		run(t, e)
		require.Len(t, log.ends[r], 1)
		want := Stamp{}
		if backed {
			want = Stamp{4, 2}
		}
		assert.Equal(t, []StampRun{{Sector: 64, Sectors: 16, Stamp: want}}, log.ends[r][0].Data, "memory_backed=%v", backed)
	}
}

func TestNullValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mod    func(p *NullParams)
		errHas string
	}{
		{"zero capacity", func(p *NullParams) { p.Capacity = 0 }, "capacity"},
		{"zero depth", func(p *NullParams) { p.HWQueueDepth = 0 }, "hw_queue_depth"},
		{"zero queues", func(p *NullParams) { p.SubmitQueues = 0 }, "submit_queues"},
		{"too many tags", func(p *NullParams) { p.SubmitQueues, p.HWQueueDepth = 1024, 1<<21 }, "hw_queue_depth"},
		{"negative completion", func(p *NullParams) { p.CompletionNsec = -1 }, "completion_nsec"},
		{"negative rate", func(p *NullParams) { p.MBps = -1 }, "mbps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultNullParams()
			tc.mod(&p)
			require.ErrorContains(t, p.Validate(), tc.errHas)
			_, err := NewNull(newEngine(t), p)
			require.ErrorContains(t, err, tc.errHas)
		})
	}
}

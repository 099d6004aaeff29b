package blockdev

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
)

// profile builds profile values from "key=value" strings.
func profile(kvs ...string) map[string]ProfileValue {
	vals := make(map[string]ProfileValue, len(kvs))
	for i, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		vals[k] = ProfileValue{Text: v, Where: fmt.Sprintf("test:%d", i+1)}
	}
	return vals
}

// conformanceDevices are every Device implementation, each built from a
// small profile. The conformance tests run against all of them.
// conformanceDevice is one device profile under the conformance tests.
type conformanceDevice struct {
	name    string
	profile []string
	// discards marks a device that keeps no data (null_blk without
	// memory_backed): it departs from the contract's read-back clause.
	discards bool
}

var conformanceDevices = []conformanceDevice{
	{"memory", []string{"kind=memory", "capacity=64m", "latency=20us", "mbps=2000"}, false},
	{"pmem", []string{"kind=pmem", "capacity=64m", "read_mbps=6000", "write_mbps=4000", "latency=100ns"}, false},
	{"memory-4k", []string{"kind=memory", "capacity=64m", "logical_block_size=4096", "max_hw_sectors_kb=1024", "queue_depth=32", "latency=5us"}, false},
	{"nvme", []string{"kind=nvme", "capacity=64m", "logical_block_size=512", "max_hw_sectors_kb=1024",
		"queue_depth=128", "channels=4", "dies_per_channel=2", "page_size=16k", "planes=2",
		"read_time=50us", "program_time=1ms", "channel_mbps=1024", "host_mbps=4096",
		"read_overhead=5us", "write_overhead=2us", "write_buffer=4m"}, false},
	{"nvme-program-queue", []string{"kind=nvme", "capacity=64m", "logical_block_size=4096", "max_hw_sectors_kb=1024",
		"queue_depth=64", "channels=2", "dies_per_channel=1", "page_size=4k", "planes=1",
		"read_time=30us", "program_time=300us", "channel_mbps=800", "host_mbps=3000",
		"read_overhead=3us", "write_overhead=1us", "write_buffer=1m", "program_queue=1"}, false},
	{"nvme-stream", []string{"kind=nvme", "capacity=64m", "max_hw_sectors_kb=1024", "logical_block_size=512",
		"queue_depth=128", "channels=4", "dies_per_channel=2", "page_size=16k", "planes=2",
		"read_time=50us", "program_time=1ms", "channel_mbps=1024", "host_mbps=4096",
		"read_overhead=5us", "write_overhead=2us", "write_buffer=1m", "stream_min=64k"}, false},
	{"ufs", []string{"kind=ufs", "capacity=64m", "max_hw_sectors_kb=1024", "channels=2", "dies_per_channel=2",
		"page_size=16k", "planes=2", "read_time=80us", "program_time=900us", "channel_mbps=400",
		"read_overhead=10us", "write_overhead=10us", "command_time=20us", "write_buffer=1m"}, false},
	{"sata-ssd", []string{"kind=sata-ssd", "capacity=64m", "max_hw_sectors_kb=1024", "channels=4", "dies_per_channel=2",
		"page_size=16k", "planes=2", "read_time=60us", "program_time=1ms", "channel_mbps=400",
		"read_overhead=15us", "write_overhead=15us", "command_time=11us", "write_buffer=2m", "stream_min=512k"}, false},
	{"hdd", []string{"kind=hdd", "capacity=64m", "max_hw_sectors_kb=1024", "rpm=7200", "track_to_track=1ms",
		"average_seek=8.5ms", "full_stroke=18ms", "outer_mbps=200", "inner_mbps=100", "command_overhead=50us"}, false},
	{"hdd-fifo-no-cache-4kn", []string{"kind=hdd", "capacity=64m", "logical_block_size=4096", "max_hw_sectors_kb=1024",
		"queue_depth=8", "ncq=false", "write_cache=false", "readahead=0", "rpm=5400", "track_to_track=2ms",
		"average_seek=12ms", "full_stroke=25ms", "outer_mbps=120", "inner_mbps=60"}, false},
	{"hdd-small-cache", []string{"kind=hdd", "capacity=64m", "max_hw_sectors_kb=1024", "rpm=15000", "track_to_track=200us",
		"average_seek=3ms", "full_stroke=7ms", "outer_mbps=250", "inner_mbps=250", "write_cache_size=1m",
		"readahead=64k", "cache_segments=2", "host_mbps=600"}, false},
	{"flat", []string{"kind=flat", "capacity=64m", "read_latency=40us", "write_latency=30us", "read_mbps=1500", "write_mbps=2000",
		"read_speedup=1:1, 4:2, 16:3.5", "write_speedup=1:1, 8:4", "switch_time=7us"}, false},
	{"flat-4k-shallow", []string{"kind=flat", "capacity=64m", "logical_block_size=4096", "max_hw_sectors_kb=1024",
		"queue_depth=4", "read_latency=5us", "write_latency=1ms"}, false},
	{"null", []string{"kind=null", "capacity=64m", "max_hw_sectors_kb=1024", "memory_backed=true"}, false},
	{"null-4k-throttled", []string{"kind=null", "capacity=64m", "logical_block_size=4096", "max_hw_sectors_kb=1024",
		"submit_queues=2", "hw_queue_depth=16", "completion_nsec=2000", "mbps=2000", "memory_backed=true"}, false},
	{"null-discarding", []string{"kind=null", "capacity=64m", "max_hw_sectors_kb=1024"}, true},
}

// stamper is what every device implementation offers for verification.
type stamper interface{ Stamps() *StampMap }

// conformer drives a Device directly, as the queue would, and checks the
// Device contract on every completion.
type conformer struct {
	t         *testing.T
	e         *sim.Engine
	dev       Device
	lim       Limits
	inSubmit  bool
	submitted map[*Request]sim.Time
	completed map[*Request]int
	done      []*Request
	ndone     int
	backlog   []func()
	onDone    func(r *Request)
}

// conformanceWrappers run the conformance tests on each device as it is
// and wrapped: a FaultDevice whose injector never fires must keep the
// contract exactly as its delegate does.
type conformanceWrapper struct {
	name string
	wrap func(e *sim.Engine, d Device) Device
}

var conformanceWrappers = []conformanceWrapper{
	{"", nil},
	{"fault-idle", func(e *sim.Engine, d Device) Device {
		// Requests are evaluated (counters advance) but none matches.
		return NewFaultDevice(e, d, &Rule{When: And(OnOp(OpWrite), InSectors(1<<40, 1<<41), After(1), Every(2))})
	}},
}

func newConformer(t *testing.T, profileKVs []string, wrap func(*sim.Engine, Device) Device) *conformer {
	e := newEngine(t)
	dev, err := NewFromProfile(e, profile(profileKVs...))
	require.NoError(t, err)
	if wrap != nil {
		dev = wrap(e, dev)
	}
	c := &conformer{t: t, e: e, dev: dev, lim: dev.Limits(),
		submitted: make(map[*Request]sim.Time), completed: make(map[*Request]int)}
	dev.Attach(c)
	return c
}

// CompleteRequest checks exactly-once, asynchronous, not-before-submit.
func (c *conformer) CompleteRequest(r *Request) {
	sub, ok := c.submitted[r]
	assert.True(c.t, ok, "completion of a request never submitted")
	assert.False(c.t, c.inSubmit, "request completed inside Submit")
	assert.GreaterOrEqual(c.t, c.e.Now(), sub, "completed before it was submitted")
	c.completed[r]++
	assert.Equal(c.t, 1, c.completed[r], "request %d+%d completed more than once", r.Sector, r.Bytes)
	c.done = append(c.done, r)
	c.ndone++
	if c.onDone != nil {
		c.onDone(r)
	}
	if len(c.backlog) > 0 {
		next := c.backlog[0]
		c.backlog = c.backlog[1:]
		next()
	}
}

// outstanding is the number of submitted requests not yet completed.
func (c *conformer) outstanding() int { return len(c.submitted) - c.ndone }

// submit hands the device a one-bio request, within the contract.
func (c *conformer) submit(op Op, sector, bytes int64, s Stamp) *Request {
	require.Zero(c.t, sector*SectorSize%int64(c.lim.LogicalBlockSize))
	require.Zero(c.t, bytes%int64(c.lim.LogicalBlockSize))
	require.LessOrEqual(c.t, bytes, int64(c.lim.MaxHWSectorsKB)*KiB)
	require.LessOrEqual(c.t, sector*SectorSize+bytes, c.dev.Capacity())
	require.Less(c.t, c.outstanding(), c.lim.QueueDepth)
	b := &Bio{Op: op, Sector: sector, Bytes: bytes, Stamp: s, CollectData: op == OpRead}
	r := &Request{Op: op, Sector: sector, Bytes: bytes, Bios: []*Bio{b}, Tag: c.outstanding(), Queued: c.e.Now(), Started: c.e.Now()}
	c.submitted[r] = c.e.Now()
	c.inSubmit = true
	c.dev.Submit(r)
	c.inSubmit = false
	return r
}

// submitAt submits at time t, or as soon after as the device has a free
// slot.
func (c *conformer) submitAt(t time.Duration, op Op, sector, bytes int64, s Stamp) {
	do := func() { c.submit(op, sector, bytes, s) }
	at(c.e, t, func() {
		if c.outstanding() >= c.lim.QueueDepth {
			c.backlog = append(c.backlog, do)
			return
		}
		do()
	})
}

func (c *conformer) run() {
	run(c.t, c.e)
	assert.Zero(c.t, c.outstanding(), "requests never completed")
}

// read submits a read now, runs the engine and returns the stamps found.
func (c *conformer) read(sector, bytes int64) []StampRun {
	r := c.submit(OpRead, sector, bytes, Stamp{})
	c.run()
	require.NoError(c.t, r.Err)
	return r.Bios[0].Data
}

func (c *conformer) write(sector, bytes int64, s Stamp) {
	r := c.submit(OpWrite, sector, bytes, s)
	c.run()
	require.NoError(c.t, r.Err)
}

func TestDeviceConformance(t *testing.T) {
	for _, w := range conformanceWrappers {
		for _, dc := range conformanceDevices {
			testDeviceConformance(t, dc, w)
		}
	}
}

func testDeviceConformance(t *testing.T, dc conformanceDevice, w conformanceWrapper) {
	name := dc.name
	if w.name != "" {
		name = w.name + "/" + dc.name
	}
	t.Run(name, func(t *testing.T) {
		t.Run("Limits", func(t *testing.T) {
			c := newConformer(t, dc.profile, w.wrap)
			assert.Contains(t, []int{512, 4096}, c.lim.LogicalBlockSize)
			assert.Positive(t, c.lim.MaxHWSectorsKB)
			assert.Positive(t, c.lim.QueueDepth)
			assert.Positive(t, c.dev.Capacity())
			assert.Zero(t, c.dev.Capacity()%int64(c.lim.LogicalBlockSize))
			assert.NotEmpty(t, c.dev.Name())
			st, ok := c.dev.(stamper)
			require.True(t, ok, "%T offers its stamps", c.dev)
			if dc.discards {
				assert.Nil(t, st.Stamps(), "a discarding device keeps no stamps")
			} else {
				assert.NotNil(t, st.Stamps())
			}
		})
		if dc.discards {
			t.Run("DiscardsData", func(t *testing.T) {
				c := newConformer(t, dc.profile, w.wrap)
				lbs := int64(c.lim.LogicalBlockSize)
				base := 100 * lbs / SectorSize
				c.write(base, 16*lbs, Stamp{Writer: 1, Seq: 1})
				assert.Equal(t, []StampRun{{Sector: base, Sectors: 16 * lbs / SectorSize}}, c.read(base, 16*lbs), "reads find the zero stamp after a write")
				c.write(2*chunkSectors, MiB, Stamp{Writer: 1, Seq: 2})
				assert.Equal(t, []StampRun{{Sector: 2 * chunkSectors, Sectors: chunkSectors}}, c.read(2*chunkSectors, MiB))
			})
		}
		t.Run("CompletesExactlyOnceAsynchronously", func(t *testing.T) {
			c := newConformer(t, dc.profile, w.wrap)
			rng := c.e.NewRand(1)
			lbs := int64(c.lim.LogicalBlockSize)
			maxBlocks := int64(c.lim.MaxHWSectorsKB) * KiB / lbs
			n := 0
			for wave := range 5 {
				// Up to the device's depth, at random times in a
				// 1ms window (several at the same instant).
				k := min(c.lim.QueueDepth, 48)
				for i := range k {
					op := Op(rng.IntN(2))
					bytes := (1 + rng.Int64N(min(maxBlocks, 64))) * lbs
					sector := rng.Int64N((c.dev.Capacity()-bytes)/lbs) * lbs / SectorSize
					when := time.Duration(wave)*10*ms + time.Duration(rng.IntN(20))*50*us
					c.submitAt(when, op, sector, bytes, Stamp{Writer: 1, Seq: uint64(wave*1000 + i + 1)})
					n++
				}
				require.NoError(t, c.e.Run(sim.Time(time.Duration(wave+1)*10*ms-1)))
			}
			c.run()
			assert.Len(t, c.done, n)
			for r, k := range c.completed {
				assert.Equal(t, 1, k)
				assert.NoError(t, r.Err)
			}
		})
		t.Run("CompletedWriteIsReadBack", func(t *testing.T) {
			if dc.discards {
				t.Skip("the device keeps no data (DiscardsData checks that)")
			}
			c := newConformer(t, dc.profile, w.wrap)
			lbs := int64(c.lim.LogicalBlockSize)
			a, b := Stamp{Writer: 1, Seq: 1}, Stamp{Writer: 2, Seq: 1}
			base := 100 * lbs / SectorSize
			assert.Equal(t, []StampRun{{Sector: base, Sectors: 16 * lbs / SectorSize}}, c.read(base, 16*lbs), "unwritten sectors read as the zero stamp")
			c.write(base, 16*lbs, a)
			c.write(base+4*lbs/SectorSize, 2*lbs, b)
			s := lbs / SectorSize
			assert.Equal(t, []StampRun{
				{Sector: base, Sectors: 4 * s, Stamp: a},
				{Sector: base + 4*s, Sectors: 2 * s, Stamp: b},
				{Sector: base + 6*s, Sectors: 10 * s, Stamp: a},
			}, c.read(base, 16*lbs))
			// A read submitted right as a write completes sees it.
			c.onDone = func(r *Request) {
				if r.Op == OpWrite {
					c.submit(OpRead, base, lbs, Stamp{})
				}
			}
			w := Stamp{Writer: 3, Seq: 9}
			c.submit(OpWrite, base, lbs, w)
			c.run()
			require.Len(t, c.done, 6)
			last := c.done[len(c.done)-1]
			assert.Equal(t, OpRead, last.Op)
			assert.Equal(t, []StampRun{{Sector: base, Sectors: s, Stamp: w}}, last.Bios[0].Data)
		})
		t.Run("MiBWriteIsOneRunPerChunk", func(t *testing.T) {
			if dc.discards {
				t.Skip("the device keeps no data (DiscardsData checks that)")
			}
			c := newConformer(t, dc.profile, w.wrap)
			store := c.dev.(stamper).Stamps()
			a, b := Stamp{Writer: 1, Seq: 1}, Stamp{Writer: 1, Seq: 2}
			c.write(2*chunkSectors, MiB, a)
			assert.Equal(t, 1, store.Len(), "an aligned 1 MiB write is one run")
			assert.Equal(t, []StampRun{{Sector: 2 * chunkSectors, Sectors: chunkSectors, Stamp: a}}, c.read(2*chunkSectors, MiB))
			// 1 MiB starting half-way through chunk 5 covers two chunks.
			c.write(5*chunkSectors+chunkSectors/2, MiB, b)
			assert.Equal(t, 3, store.Len(), "a straddling 1 MiB write is one run per chunk")
			assert.Equal(t, []StampRun{{Sector: 5*chunkSectors + chunkSectors/2, Sectors: chunkSectors, Stamp: b}}, c.read(5*chunkSectors+chunkSectors/2, MiB))
		})
		t.Run("ConcurrentDistinctRequestsAllComplete", func(t *testing.T) {
			if dc.discards {
				t.Skip("the device keeps no data (DiscardsData checks that)")
			}
			c := newConformer(t, dc.profile, w.wrap)
			k := int64(min(c.lim.QueueDepth, 64))
			span := 64 * KiB / SectorSize
			// First half written beforehand, read concurrently with
			// writes to the second half.
			for i := range k / 2 {
				c.submit(OpWrite, i*span, 64*KiB, Stamp{Writer: 5, Seq: uint64(i + 1)})
			}
			c.run()
			c.done = nil
			reqs := map[*Request]int64{}
			for i := range k {
				op := OpRead
				if i >= k/2 {
					op = OpWrite
				}
				reqs[c.submit(op, i*span, 64*KiB, Stamp{Writer: 6, Seq: uint64(i + 1)})] = i
			}
			c.run()
			require.Len(t, c.done, int(k))
			for r, i := range reqs {
				require.NoError(t, r.Err)
				if r.Op == OpRead {
					assert.Equal(t, []StampRun{{Sector: i * span, Sectors: span, Stamp: Stamp{Writer: 5, Seq: uint64(i + 1)}}}, r.Bios[0].Data)
				}
			}
			for i := k / 2; i < k; i++ {
				assert.Equal(t, []StampRun{{Sector: i * span, Sectors: span, Stamp: Stamp{Writer: 6, Seq: uint64(i + 1)}}}, c.read(i*span, 64*KiB))
			}
		})
	})
}

package blockdev

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
)

// nandOnly are the NAND keys a flash profile must give; everything else
// has a default per kind.
var nandOnly = []string{"capacity=1g", "channels=2", "dies_per_channel=2", "page_size=16k", "planes=2",
	"read_time=60us", "program_time=1ms", "channel_mbps=400", "write_buffer=1m"}

// The flash kinds share one model and differ in their interface defaults.
func TestFlashKindDefaults(t *testing.T) {
	assert.Equal(t, []string{"nvme", "sata-ssd", "ufs"}, FlashKinds())
	for _, tc := range []struct {
		kind string
		name string
		lim  Limits
		host float64
	}{
		{"nvme", "nvme0n1", Limits{LogicalBlockSize: 512, MaxHWSectorsKB: 128, QueueDepth: 1023}, 3200},
		{"ufs", "sda", Limits{LogicalBlockSize: 4096, MaxHWSectorsKB: 512, QueueDepth: 32}, 1050},
		{"sata-ssd", "sda", Limits{LogicalBlockSize: 512, MaxHWSectorsKB: 512, QueueDepth: 32}, 550},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			dev, err := NewFromProfile(newEngine(t), profile(append([]string{"kind=" + tc.kind}, nandOnly...)...))
			require.NoError(t, err)
			d := dev.(*NVMe)
			assert.Equal(t, tc.name, d.Name())
			assert.Equal(t, tc.lim, d.Limits())
			assert.Equal(t, tc.kind, d.Params().Kind)
			assert.Equal(t, tc.host, d.Params().HostMBps)
		})
	}
	// Go callers that leave Kind empty get an NVMe.
	p := testNVMeParams()
	p.Name = ""
	d, err := NewNVMe(newEngine(t), p)
	require.NoError(t, err)
	assert.Equal(t, "nvme0n1", d.Name())
	p.Kind = "emmc"
	_, err = NewNVMe(newEngine(t), p)
	assert.ErrorContains(t, err, `unknown flash kind "emmc"`)
}

// Each interface's hard limits.
func TestFlashKindLimits(t *testing.T) {
	for _, tc := range []struct {
		kind   string
		extra  []string
		errHas string
	}{
		{"ufs", []string{"queue_depth=33"}, "32 transfer request slots"},
		{"sata-ssd", []string{"queue_depth=33"}, "NCQ's 32 tags"},
		{"sata-ssd", []string{"host_mbps=601"}, "6 Gb/s"},
		{"sata-ssd", []string{"max_hw_sectors_kb=32768", "write_buffer=64m"}, "32767"},
		{"nvme", []string{"queue_depth=65536"}, "65535"},
	} {
		vals := profile(append(append([]string{"kind=" + tc.kind}, nandOnly...), tc.extra...)...)
		_, err := NewFromProfile(newEngine(t), vals)
		assert.ErrorContains(t, err, tc.errHas, "%s %v", tc.kind, tc.extra)
	}
	// At the limits.
	for _, tc := range []struct {
		kind  string
		extra []string
	}{
		{"ufs", []string{"queue_depth=32"}},
		{"sata-ssd", []string{"queue_depth=32", "host_mbps=600", "max_hw_sectors_kb=32767", "write_buffer=32767k", "logical_block_size=512"}},
		{"nvme", []string{"queue_depth=65535"}},
	} {
		_, err := NewFromProfile(newEngine(t), profile(append(append([]string{"kind=" + tc.kind}, nandOnly...), tc.extra...)...))
		assert.NoError(t, err, "%s %v", tc.kind, tc.extra)
	}
}

// Mechanism: command_time serialises commands through the controller, in
// submission order, after their overhead: commands submitted together
// reach the dies command_time apart.
func TestFlashCommandTime(t *testing.T) {
	p := testNVMeParams()
	p.CommandTime = 20 * us
	e := newEngine(t)
	_, q := newTestNVMe(t, e, p)
	var lats []func() time.Duration
	for i := range int64(8) {
		// Page i is on die i: no die is shared.
		lats = append(lats, latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: i * 32, Bytes: 4 * KiB}))
	}
	run(t, e)
	tail := p.ReadTime + xfer(t, 4*KiB, 1024) + xfer(t, 4*KiB, 4096)
	for i, l := range lats {
		assert.Equal(t, p.ReadOverhead+time.Duration(i+1)*p.CommandTime+tail, l(), "read %d", i)
	}
	// Without it, all eight run in parallel.
	e = newEngine(t)
	_, q = newTestNVMe(t, e, testNVMeParams())
	lats = lats[:0]
	for i := range int64(8) {
		lats = append(lats, latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: i * 32, Bytes: 4 * KiB}))
	}
	run(t, e)
	for i, l := range lats {
		assert.Equal(t, p.ReadOverhead+tail+time.Duration(i)*xfer(t, 4*KiB, 4096), l(), "read %d (link FIFO)", i)
	}
}

// profileRates runs closed loops of depth 32 on a shipped profile through
// a queue: sequential 512 KiB reads and writes (MB/s) and random 4 KiB
// reads and writes (IOPS).
func profileRates(t *testing.T, name string) (readMBps, writeMBps, readIOPS, writeIOPS float64) {
	t.Helper()
	rate := func(op Op, bs int64, random bool, n int) float64 {
		e := newEngine(t)
		dev, err := NewFromProfile(e, loadProfile(t, name))
		require.NoError(t, err)
		q, err := NewQueue(e, dev, QueueOptions{})
		require.NoError(t, err)
		rng := e.NewRand(5)
		span := int64(8) << 30 / bs
		var ends []sim.Time
		l := &closedLoop{q: q, bios: make([]Bio, 32),
			fill: func(b *Bio, i int) {
				k := int64(i) % span
				if random {
					k = rng.Int64N(span)
				}
				b.Op, b.Sector, b.Bytes = op, k*bs/SectorSize, bs
				if op == OpWrite {
					b.Stamp = Stamp{1, uint64(i + 1)}
				}
			},
			onEnd: func(*Bio) { ends = append(ends, e.Now()) }}
		l.run(t, e, n)
		require.NoError(t, l.err)
		// Steady state: the last three quarters.
		from := n / 4
		return float64(n-1-from) / time.Duration(ends[n-1]-ends[from]).Seconds()
	}
	readMBps = rate(OpRead, 512*KiB, false, 4000) * 512 * 1024 / 1e6
	writeMBps = rate(OpWrite, 512*KiB, false, 2000) * 512 * 1024 / 1e6
	readIOPS = rate(OpRead, 4*KiB, true, 40000)
	writeIOPS = rate(OpWrite, 4*KiB, true, 40000)
	t.Logf("%s at depth 32: sequential 512k read %.0f MB/s, write %.0f MB/s; random 4k read %.1fk IOPS, write %.1fk IOPS",
		name, readMBps, writeMBps, readIOPS/1e3, writeIOPS/1e3)
	return
}

// The UFS 2.1 profile at depth 32 is within the published ranges of
// 2017-19 parts (EXPERIMENTS.md section 3): sequential read 850-1000 MB/s,
// write 255-260 MB/s, random 4K 42-58k read IOPS, 40-50k write IOPS.
func TestUFS21ProfileRates(t *testing.T) {
	dev, err := NewFromProfile(newEngine(t), loadProfile(t, "ufs21"))
	require.NoError(t, err)
	assert.Equal(t, Limits{LogicalBlockSize: 4096, MaxHWSectorsKB: 512, QueueDepth: 32}, dev.Limits())
	rm, wm, ri, wi := profileRates(t, "ufs21")
	assert.True(t, rm >= 850 && rm <= 1000, "sequential read %.0f MB/s", rm)
	assert.InEpsilon(t, 257, wm, 0.02, "sequential write MB/s")
	assert.True(t, ri >= 42e3 && ri <= 58e3, "random read %.0f IOPS", ri)
	assert.True(t, wi >= 40e3 && wi <= 50e3, "random write %.0f IOPS", wi)
}

// The SATA SSD profile at depth 32: a 2015-19 SATA drive's ~550/500 MB/s
// and ~90k random read IOPS.
func TestSATASSDProfileRates(t *testing.T) {
	rm, wm, ri, wi := profileRates(t, "sata-ssd")
	assert.InEpsilon(t, 550, rm, 0.02, "sequential read MB/s (the link)")
	assert.InEpsilon(t, 500, wm, 0.03, "sequential write MB/s")
	assert.InEpsilon(t, 90e3, ri, 0.05, "random read IOPS")
	assert.InEpsilon(t, 90e3, wi, 0.05, "random write IOPS")
}

// The interface keys of the flash kinds are documented with their
// defaults in their descriptions.
func TestFlashKeyDocsNameDefaults(t *testing.T) {
	keys, err := ProfileKeys("ufs")
	require.NoError(t, err)
	i := slices.IndexFunc(keys, func(k [2]string) bool { return k[0] == "host_mbps" })
	require.GreaterOrEqual(t, i, 0)
	assert.Contains(t, keys[i][1], "ufs: 1050")
}

package blockdev

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
)

// flatDriver submits requests straight to a device and records when each
// completes; with depth > 0 it resubmits a like request on every
// completion (a closed loop, as fio at a fixed iodepth).
type flatDriver struct {
	e    *sim.Engine
	d    Device
	done map[*Request]sim.Time
	// closed loop
	depth int
	op    Op
	bytes int64
	next  int64
	stop  sim.Time
	times []sim.Time
}

func newFlatDriver(t *testing.T, kvs ...string) *flatDriver {
	t.Helper()
	e := newEngine(t)
	d, err := NewFromProfile(e, profile(append([]string{"kind=flat", "capacity=64m"}, kvs...)...))
	require.NoError(t, err)
	f := &flatDriver{e: e, d: d, done: map[*Request]sim.Time{}}
	d.Attach(f)
	return f
}

func (f *flatDriver) submit(op Op, sector, bytes int64) *Request {
	r := &Request{Op: op, Sector: sector, Bytes: bytes, Bios: []*Bio{{Op: op, Sector: sector, Bytes: bytes, Stamp: Stamp{Writer: 1, Seq: uint64(sector + 1)}}}}
	f.d.Submit(r)
	return r
}

func (f *flatDriver) submitAt(t time.Duration, op Op, sector, bytes int64) **Request {
	var r *Request
	at(f.e, t, func() { r = f.submit(op, sector, bytes) })
	return &r
}

func (f *flatDriver) CompleteRequest(r *Request) {
	f.done[r] = f.e.Now()
	if f.depth > 0 {
		f.times = append(f.times, f.e.Now())
		if f.e.Now() < f.stop {
			f.loopOne()
		}
	}
}

func (f *flatDriver) loopOne() {
	f.submit(f.op, f.next/SectorSize, f.bytes)
	f.next = (f.next + f.bytes) % (32 * MiB)
}

// interval runs a closed loop of depth requests for 100 ms and returns the
// mean time between completions after the first 10 ms.
func (f *flatDriver) interval(t *testing.T, depth int, op Op, bytes int64) time.Duration {
	t.Helper()
	f.depth, f.op, f.bytes, f.times = depth, op, bytes, nil
	f.stop = f.e.Now() + sim.Time(100*ms)
	warm := f.e.Now() + sim.Time(10*ms)
	for range depth {
		f.loopOne()
	}
	run(t, f.e)
	// Between warm-up and stop (the last completions drain at lower
	// depths).
	i := slices.IndexFunc(f.times, func(x sim.Time) bool { return x >= warm })
	j := slices.IndexFunc(f.times, func(x sim.Time) bool { return x >= f.stop })
	return time.Duration(f.times[j]-f.times[i]) / time.Duration(j-i)
}

// Mechanism: alone at the device, a request takes its direction's latency
// plus its bytes at its direction's rate.
func TestFlatDepthOneLatency(t *testing.T) {
	f := newFlatDriver(t, "read_latency=40us", "write_latency=25us", "read_mbps=1000", "write_mbps=2000")
	for _, tc := range []struct {
		op    Op
		bytes int64
		want  time.Duration
	}{
		{OpRead, 4 * KiB, 40*us + 4096},
		{OpRead, 1 * MiB, 40*us + 1048576},
		{OpWrite, 4 * KiB, 25*us + 2048},
		{OpWrite, 256 * KiB, 25*us + 131072},
	} {
		start := f.e.Now()
		r := f.submit(tc.op, 0, tc.bytes)
		run(t, f.e)
		assert.Equal(t, tc.want, time.Duration(f.done[r]-start), "%s %d", tc.op, tc.bytes)
	}
}

// Mechanism: with n requests kept at the device, one completes every
// latency/speedup(n) + bytes/rate: the command part speeds up with depth,
// the data part does not.
func TestFlatClosedLoopThroughput(t *testing.T) {
	for _, tc := range []struct {
		depth int
		op    Op
		bytes int64
		want  time.Duration
	}{
		{1, OpRead, 8 * KiB, 40*us + 8192},
		{2, OpRead, 8 * KiB, 40*us/2 + 8192},
		{3, OpRead, 8 * KiB, 16*us + 8192}, // 2.5x between 2:2 and 4:3
		{4, OpRead, 8 * KiB, 40*us/3 + 8192},
		{16, OpRead, 8 * KiB, 10*us + 8192}, // the last point holds beyond it
		{4, OpRead, 64 * KiB, 40*us/3 + 65536},
		{4, OpWrite, 8 * KiB, 30*us + 4096}, // writes: no speedup curve
	} {
		f := newFlatDriver(t, "read_latency=40us", "write_latency=30us", "read_mbps=1000", "write_mbps=2000",
			"read_speedup=1:1, 2:2, 4:3 8:4")
		got := f.interval(t, tc.depth, tc.op, tc.bytes)
		assert.InDelta(t, float64(tc.want), float64(got), 2, "depth %d %s %d: one completion per %v", tc.depth, tc.op, tc.bytes, tc.want)
	}
}

// Mechanism: the depth is re-read when a command arrives or leaves, so a
// command part in progress speeds up when another command arrives; a data
// part does not change; the queue is served in arrival order.
func TestFlatSpeedFollowsDepth(t *testing.T) {
	f := newFlatDriver(t, "read_latency=100us", "write_latency=100us", "write_mbps=1000", "read_speedup=1:1, 2:2")
	a := f.submitAt(0, OpRead, 0, 4*KiB)
	b := f.submitAt(50*us, OpRead, 8, 4*KiB) // a: 50us done, 50us left at speed 2
	c := f.submitAt(90*us, OpWrite, 16, 4*KiB)
	run(t, f.e)
	assert.Equal(t, sim.Time(75*us), f.done[*a])
	// b starts at 75us alone (speed 1); c's arrival at 90us makes the
	// depth 2 (b's curve, speed 2): 85us left take 42.5us.
	assert.Equal(t, sim.Time(132500), f.done[*b])
	// c starts alone: 100us (writes have no curve) + 4096ns of data.
	assert.Equal(t, sim.Time(132500+100*us+4096), f.done[*c])

	// A depth change during the data part moves nothing.
	f = newFlatDriver(t, "read_latency=10us", "write_latency=10us", "read_mbps=100", "read_speedup=1:1, 2:2")
	a = f.submitAt(0, OpRead, 0, 4*KiB) // 10us + 40.96us
	b = f.submitAt(20*us, OpRead, 8, 4*KiB)
	run(t, f.e)
	assert.Equal(t, sim.Time(10*us+40960), f.done[*a])
	assert.Equal(t, sim.Time(10*us+40960+10*us+40960), f.done[*b], "b alone once a left")
}

// Mechanism: a command whose direction differs from the one served before
// it takes switch_time more, at every depth.
func TestFlatSwitchTime(t *testing.T) {
	f := newFlatDriver(t, "read_latency=10us", "write_latency=10us", "switch_time=5us", "read_speedup=1:1, 2:2")
	r1 := f.submitAt(0, OpRead, 0, 4*KiB)       // the first command: nothing to switch from
	w1 := f.submitAt(20*us, OpWrite, 8, 4*KiB)  // after a read
	w2 := f.submitAt(40*us, OpWrite, 16, 4*KiB) // after a write
	r2 := f.submitAt(60*us, OpRead, 24, 4*KiB)  // after a write
	// Two reads behind a write: the first switches (its command part at
	// speed 2 while the other waits), the second does not.
	f.submitAt(100*us, OpWrite, 32, 4*KiB)
	r3 := f.submitAt(100*us, OpRead, 40, 4*KiB)
	r4 := f.submitAt(100*us, OpRead, 48, 4*KiB)
	run(t, f.e)
	assert.Equal(t, sim.Time(10*us), f.done[*r1])
	assert.Equal(t, sim.Time(35*us), f.done[*w1])
	assert.Equal(t, sim.Time(50*us), f.done[*w2])
	assert.Equal(t, sim.Time(75*us), f.done[*r2])
	// The write: 10us alone at the start (writes have no curve), done at
	// 115us after its own switch; r3 from 115us: 10us/2 + 5us; r4 alone.
	assert.Equal(t, sim.Time(125*us), f.done[*r3])
	assert.Equal(t, sim.Time(135*us), f.done[*r4])
}

func TestFlatDefaults(t *testing.T) {
	f := newFlatDriver(t, "read_latency=50us", "write_latency=60us")
	d := f.d.(*Flat)
	assert.Equal(t, "flat0", d.Name())
	assert.Equal(t, Limits{LogicalBlockSize: 512, MaxHWSectorsKB: 1024, QueueDepth: 64}, d.Limits())
	assert.Equal(t, 1.0, d.Params().ReadSpeedup.At(32), "no curve: never faster")
	assert.Zero(t, d.Params().ReadMBps, "data is free by default")
}

func TestParseSpeedup(t *testing.T) {
	c, err := ParseSpeedup("1:1, 4:1.9,16:3.25 32:4")
	require.NoError(t, err)
	assert.Equal(t, Speedup{{1, 1}, {4, 1.9}, {16, 3.25}, {32, 4}}, c)
	assert.Equal(t, "1:1, 4:1.9, 16:3.25, 32:4", c.String())
	for n, want := range map[int]float64{1: 1, 2: 1.3, 4: 1.9, 10: 2.575, 16: 3.25, 32: 4, 100: 4} {
		assert.InDelta(t, want, c.At(n), 1e-12, "depth %d", n)
	}
	again, err := ParseSpeedup(c.String())
	require.NoError(t, err)
	assert.Equal(t, c, again)
	c, err = ParseSpeedup("4:2")
	require.NoError(t, err)
	assert.Equal(t, 1.0, c.At(1), "the curve starts at 1:1")
	assert.InDelta(t, 4.0/3, c.At(2), 1e-12)
	assert.Equal(t, 2.0, c.At(9))

	for in, msg := range map[string]string{
		"":              "no points",
		"1:1, 4":        `"4": want DEPTH:FACTOR`,
		"x:1":           `depth "x"`,
		"1:fast":        `factor "fast"`,
		"0:1":           "depths start at 1",
		"1:1, 4:2, 4:3": "depths must increase",
		"1:1, 4:0":      "factors must be positive",
		"1:1, 4:NaN":    "factors must be positive",
		"1:0.5, 2:1":    "the factor at depth 1 is 1",
	} {
		_, err := ParseSpeedup(in)
		assert.ErrorIs(t, err, ErrSpeedup, in)
		assert.ErrorContains(t, err, msg, in)
	}
}

func TestFlatProfileErrors(t *testing.T) {
	ok := profileFor("flat")
	for _, tc := range []struct {
		name string
		kvs  []string
		has  []string
	}{
		{"no read latency", []string{"kind=flat", "capacity=1g", "write_latency=1us"}, []string{`key "read_latency" (not set)`, "must be positive"}},
		{"zero write latency", append(slices.Clone(ok), "write_latency=0"), []string{`key "write_latency" = "0"`, "must be positive"}},
		{"negative rate", append(slices.Clone(ok), "read_mbps=-1"), []string{`key "read_mbps"`, `"-1"`}},
		{"infinite rate", append(slices.Clone(ok), "write_mbps=+Inf"), []string{`key "write_mbps"`}},
		{"speedup at depth 1", append(slices.Clone(ok), "read_speedup=1:2, 2:2.5"), []string{`key "read_speedup"`, "the factor at depth 1 is 1"}},
		{"speedup syntax", append(slices.Clone(ok), "write_speedup=1-1"), []string{`key "write_speedup"`, "DEPTH:FACTOR"}},
		{"queue depth", append(slices.Clone(ok), "queue_depth=0"), []string{`key "queue_depth" = "0"`}},
		{"negative switch time", append(slices.Clone(ok), "switch_time=-1us"), []string{`key "switch_time"`, `"-1us"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewFromProfile(newEngine(t), withWhere("f.toml:3", tc.kvs...))
			assert.Nil(t, d)
			assert.ErrorIs(t, err, ErrProfile)
			assert.ErrorContains(t, err, "f.toml:3")
			for _, s := range tc.has {
				assert.ErrorContains(t, err, s)
			}
		})
	}
}

// ProfileText writes what NewFromProfile reads back.
func TestFlatProfileTextRoundTrip(t *testing.T) {
	for _, p := range []FlatParams{
		{Name: "vda", Capacity: 300 << 20, LogicalBlockSize: 512, MaxHWSectorsKB: 1024, QueueDepth: 64,
			ReadLatency: 41300 * time.Nanosecond, WriteLatency: 52*us + 7, ReadMBps: 1750.5, WriteMBps: 2100,
			ReadSpeedup: Speedup{{2, 1.45}, {4, 1.9}, {32, 4.125}}, WriteSpeedup: Speedup{{1, 1}, {8, 3.5}}, SwitchTime: 12345},
		{Name: "flat0", Capacity: 64 << 20, LogicalBlockSize: 4096, MaxHWSectorsKB: 128, QueueDepth: 8,
			ReadLatency: ms, WriteLatency: 2 * ms},
	} {
		text := p.ProfileText()
		vals := map[string]ProfileValue{}
		for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
			k, v, ok := strings.Cut(line, " = ")
			require.True(t, ok, line)
			vals[k] = ProfileValue{Text: strings.Trim(v, `"`), Where: fmt.Sprintf("p.toml:%d", i+1)}
		}
		d, err := NewFromProfile(newEngine(t), vals)
		require.NoError(t, err, text)
		assert.Equal(t, p, d.(*Flat).Params(), text)
	}
}

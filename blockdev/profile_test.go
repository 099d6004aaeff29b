package blockdev

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/internal/tomlkv"
	"github.com/blksim/blksim/sim"
)

// withWhere builds profile values from "key=value" strings, all set at
// where.
func withWhere(where string, kvs ...string) map[string]ProfileValue {
	vals := profile(kvs...)
	for k, v := range vals {
		v.Where = where
		vals[k] = v
	}
	return vals
}

var memOK = []string{"kind=memory", "capacity=16m"}

func TestNewFromProfileErrors(t *testing.T) {
	nvmeOK := conformanceDevices[2].profile
	for _, tc := range []struct {
		name string
		vals map[string]ProfileValue
		has  []string
	}{
		{"no kind", withWhere("a.toml:1", "capacity=1g"), []string{`no "kind" key`, "memory, nvme"}},
		{"unknown kind", withWhere("disk.toml:3", "kind=hdd"), []string{"disk.toml:3", `unknown kind "hdd"`, "memory, nvme"}},
		{"unknown nvme key", withWhere("x.toml:7", append(slices.Clone(nvmeOK), "chanels=4")...), []string{"x.toml:7", `unknown key "chanels"`, "kind nvme"}},
		{"nvme-only key on memory", withWhere("m.toml:2", append(slices.Clone(memOK), "read_time=1us")...), []string{"m.toml:2", `unknown key "read_time"`, "kind memory"}},
		{"bad size", withWhere("--set", append(slices.Clone(memOK), "capacity=12q")...), []string{"--set", `key "capacity"`, `"12q"`}},
		{"negative int", withWhere("p.toml:9", append(slices.Clone(nvmeOK), "queue_depth=-1")...), []string{"p.toml:9", `key "queue_depth"`}},
		{"bad duration", withWhere("p.toml:4", append(slices.Clone(nvmeOK), "read_time=fast")...), []string{"p.toml:4", `key "read_time"`, `"fast"`}},
		{"NaN rate", withWhere("p.toml:5", append(slices.Clone(nvmeOK), "host_mbps=NaN")...), []string{"p.toml:5", `key "host_mbps"`}},
		{"negative rate", withWhere("p.toml:6", append(slices.Clone(memOK), "mbps=-3")...), []string{"p.toml:6", `key "mbps"`}},
		{"invalid nvme parameters", withWhere("p.toml:1", append(slices.Clone(nvmeOK), "channels=0")...), []string{"nvme", "channels"}},
		{"memory without capacity", withWhere("p.toml:1", "kind=memory"), []string{"memory", "capacity must be positive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewFromProfile(newEngine(t), tc.vals)
			require.Error(t, err)
			assert.Nil(t, d)
			assert.ErrorIs(t, err, ErrProfile)
			for _, s := range tc.has {
				assert.ErrorContains(t, err, s)
			}
		})
	}
}

func TestProfileKeys(t *testing.T) {
	require.Equal(t, []string{"memory", "nvme"}, Kinds())
	bases := map[string][]string{"memory": memOK, "nvme": conformanceDevices[2].profile}
	for _, kind := range Kinds() {
		t.Run(kind, func(t *testing.T) {
			keys, err := ProfileKeys(kind)
			require.NoError(t, err)
			require.NotEmpty(t, keys)
			names := make([]string, len(keys))
			for i, k := range keys {
				names[i] = k[0]
				assert.NotEmpty(t, k[1], "key %q has a description", k[0])
			}
			assert.True(t, slices.IsSorted(names), "keys sorted: %v", names)
			assert.Len(t, slices.Compact(slices.Clone(names)), len(names), "no duplicates")
			assert.NotContains(t, names, "kind")
			for _, n := range []string{"name", "capacity", "logical_block_size", "max_hw_sectors_kb", "queue_depth"} {
				assert.Contains(t, names, n)
			}
			// Every listed key is accepted and parsed: a bad value is
			// reported against that key.
			e := newEngine(t)
			_, err = NewFromProfile(e, profile(bases[kind]...))
			require.NoError(t, err)
			for _, n := range names {
				if n == "name" {
					continue
				}
				_, err := NewFromProfile(e, profile(append(slices.Clone(bases[kind]), n+"=bogus")...))
				assert.ErrorContains(t, err, fmt.Sprintf("key %q", n))
				assert.NotContains(t, err.Error(), "unknown key")
			}
		})
	}
	_, err := ProfileKeys("floppy")
	assert.ErrorIs(t, err, ErrProfile)
	assert.ErrorContains(t, err, `"floppy"`)
}

// loadP3600 reads the shipped P3600 profile as blksim does.
func loadP3600(tb testing.TB) map[string]ProfileValue {
	tb.Helper()
	data, err := os.ReadFile("../testdata/devices/p3600.toml")
	require.NoError(tb, err)
	kv, err := tomlkv.Parse("p3600.toml", data)
	require.NoError(tb, err)
	vals := make(map[string]ProfileValue, len(kv))
	for k, v := range kv {
		vals[k] = ProfileValue{Text: v.Text, Where: fmt.Sprintf("p3600.toml:%d", v.Line)}
	}
	return vals
}

func TestP3600ProfileBuildsNVMe(t *testing.T) {
	e := newEngine(t)
	vals := loadP3600(t)
	dev, err := NewFromProfile(e, vals)
	require.NoError(t, err)
	d, ok := dev.(*NVMe)
	require.True(t, ok, "got %T", dev)
	p := d.Params()
	assert.Equal(t, "nvme0n1", d.Name())
	assert.Equal(t, 745*1024*MiB, d.Capacity())
	assert.Equal(t, Limits{LogicalBlockSize: 512, MaxHWSectorsKB: 128, QueueDepth: 1023}, d.Limits())
	assert.Equal(t, 36, p.Channels*p.DiesPerChannel)
	assert.Equal(t, 16*KiB, p.PageSize)
	assert.Equal(t, 1600*us, p.ProgramTime)
	assert.Equal(t, 3*MiB, p.WriteBuffer)

	q, err := NewQueue(e, d, QueueOptions{})
	require.NoError(t, err)
	// Idle 4k read: 8us overhead + 70us tR + 4096 B at 400 MB/s (10.24us)
	// + 4096 B at 3200 MB/s (1.28us).
	lat := latencyOf(t, e, q, 0, &Bio{Op: OpRead, Sector: 1 << 20, Bytes: 4096})
	run(t, e)
	assert.Equal(t, 89520*time.Nanosecond, lat())

	// An override's error names its key and where it came from.
	vals["program_time"] = ProfileValue{Text: "slow", Where: "--set device.program_time"}
	_, err = NewFromProfile(e, vals)
	assert.ErrorContains(t, err, "--set device.program_time")
	assert.ErrorContains(t, err, `key "program_time"`)
}

// FuzzProfile feeds arbitrary "key=value" lines to NewFromProfile: it
// never panics, fails only with ErrProfile, and a device it builds takes a
// queue (or a clear error) and serves a write and a read.
func FuzzProfile(f *testing.F) {
	for _, dc := range conformanceDevices {
		f.Add(strings.Join(dc.profile, "\n"))
	}
	data, err := os.ReadFile("../testdata/devices/p3600.toml")
	require.NoError(f, err)
	kv, err := tomlkv.Parse("p3600.toml", data)
	require.NoError(f, err)
	var lines []string
	for k, v := range kv {
		lines = append(lines, k+"="+v.Text)
	}
	slices.Sort(lines)
	f.Add(strings.Join(lines, "\n"))
	f.Add(strings.Join(conformanceDevices[2].profile, "\n") + "\nchannels=1073741824\ndies_per_channel=1073741824")
	f.Add(strings.Join(conformanceDevices[2].profile, "\n") + "\npage_size=4611686018427387904\nplanes=4")
	f.Add("kind=memory\ncapacity=9223372036854775807\nqueue_depth=1073741824\nmax_hw_sectors_kb=1073741824")
	f.Add("kind=memory\ncapacity=1k\nlogical_block_size=4096")
	f.Add("kind=nvme\nkind=memory\n=\n==\ncapacity")
	f.Fuzz(func(t *testing.T, text string) {
		vals := map[string]ProfileValue{}
		for i, line := range strings.Split(text, "\n") {
			k, v, _ := strings.Cut(line, "=")
			vals[k] = ProfileValue{Text: v, Where: fmt.Sprintf("fuzz:%d", i+1)}
		}
		e := sim.New(sim.Options{Seed: 1})
		defer e.Close()
		dev, err := NewFromProfile(e, vals)
		if err != nil {
			require.ErrorIs(t, err, ErrProfile)
			require.Nil(t, dev)
			return
		}
		require.NotNil(t, dev)
		q, err := NewQueue(e, dev, QueueOptions{})
		if err != nil {
			return
		}
		lbs := int64(q.Limits().LogicalBlockSize)
		log := newBioLog(e)
		w := &Bio{Op: OpWrite, Sector: 0, Bytes: lbs, Stamp: Stamp{1, 1}}
		r := &Bio{Op: OpRead, Sector: 0, Bytes: lbs, CollectData: true}
		log.submit(q, w)
		log.submitAt(q, time.Second, r)
		require.NoError(t, e.Run(-1))
		require.Len(t, log.ends[w], 1)
		require.Len(t, log.ends[r], 1)
		if dev.Capacity() < lbs {
			require.ErrorIs(t, log.ends[w][0].Err, ErrOutOfRange)
		}
	})
}

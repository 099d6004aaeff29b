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

// allKinds is Kinds() as the error messages list them.
const allKinds = "flat, hdd, memory, null, nvme, pmem, sata-ssd, ufs"

// profileFor returns a small valid profile of every kind.
func profileFor(kind string) []string {
	for _, dc := range conformanceDevices {
		if dc.profile[0] == "kind="+kind {
			return slices.Clone(dc.profile)
		}
	}
	panic("no conformance device of kind " + kind)
}

func TestNewFromProfileErrors(t *testing.T) {
	nvmeOK := profileFor("nvme")
	hddOK := profileFor("hdd")
	for _, tc := range []struct {
		name string
		vals map[string]ProfileValue
		has  []string
	}{
		{"no kind", withWhere("a.toml:1", "capacity=1g"), []string{`no "kind" key`, allKinds}},
		{"unknown kind", withWhere("disk.toml:3", "kind=floppy"), []string{"disk.toml:3", `unknown kind "floppy"`, allKinds}},
		{"unknown nvme key", withWhere("x.toml:7", append(slices.Clone(nvmeOK), "chanels=4")...), []string{"x.toml:7", `unknown key "chanels"`, "kind nvme"}},
		{"nvme-only key on memory", withWhere("m.toml:2", append(slices.Clone(memOK), "read_time=1us")...), []string{"m.toml:2", `unknown key "read_time"`, "kind memory"}},
		{"flash key on hdd", withWhere("h.toml:4", append(slices.Clone(hddOK), "page_size=16k")...), []string{"h.toml:4", `unknown key "page_size"`, "kind hdd"}},
		{"hdd key on null", withWhere("n.toml:2", "kind=null", "rpm=7200"), []string{"n.toml:2", `unknown key "rpm"`, "kind null"}},
		{"bad size", withWhere("--set", append(slices.Clone(memOK), "capacity=12q")...), []string{"--set", `key "capacity"`, `"12q"`}},
		{"negative int", withWhere("p.toml:9", append(slices.Clone(nvmeOK), "queue_depth=-1")...), []string{"p.toml:9", `key "queue_depth"`}},
		{"bad duration", withWhere("p.toml:4", append(slices.Clone(nvmeOK), "read_time=fast")...), []string{"p.toml:4", `key "read_time"`, `"fast"`}},
		{"NaN rate", withWhere("p.toml:5", append(slices.Clone(nvmeOK), "host_mbps=NaN")...), []string{"p.toml:5", `key "host_mbps"`}},
		{"negative rate", withWhere("p.toml:6", append(slices.Clone(memOK), "mbps=-3")...), []string{"p.toml:6", `key "mbps"`}},
		{"bad bool", withWhere("h.toml:8", append(slices.Clone(hddOK), "ncq=maybe")...), []string{"h.toml:8", `key "ncq"`, `"maybe"`}},
		{"invalid nvme parameters", withWhere("p.toml:1", append(slices.Clone(nvmeOK), "channels=0")...), []string{"p.toml:1", "nvme", `key "channels" = "0"`, "must be positive"}},
		{"memory without capacity", withWhere("p.toml:1", "kind=memory"), []string{"p.toml:1", "memory", `key "capacity" (not set)`, "capacity must be positive"}},
		{"flash without NAND geometry", withWhere("u.toml:1", "kind=ufs", "capacity=1g"), []string{"u.toml:1", "ufs", `key "channels" (not set)`}},
		{"ufs deeper than 32", withWhere("u.toml:5", append(profileFor("ufs"), "queue_depth=64")...), []string{"u.toml:5", `key "queue_depth" = "64"`, "32 transfer request slots"}},
		{"sata link above 6 Gb/s", withWhere("s.toml:3", append(profileFor("sata-ssd"), "host_mbps=700")...), []string{"s.toml:3", `key "host_mbps"`, "600 MB/s"}},
		{"sata beyond LBA48 requests", withWhere("s.toml:4", append(profileFor("sata-ssd"), "max_hw_sectors_kb=65536", "write_buffer=128m")...), []string{"s.toml:4", `key "max_hw_sectors_kb"`, "32767"}},
		{"nvme deeper than a queue", withWhere("n.toml:4", append(slices.Clone(nvmeOK), "queue_depth=70000")...), []string{"n.toml:4", `key "queue_depth"`, "65535"}},
		{"write buffer below a request", withWhere("n.toml:6", append(slices.Clone(nvmeOK), "write_buffer=64k")...), []string{"n.toml:6", `key "write_buffer"`, "maximal request"}},
		{"hdd inner faster than outer", withWhere("h.toml:9", append(slices.Clone(hddOK), "inner_mbps=250")...), []string{"h.toml:9", `key "inner_mbps" = "250"`, "outer zone is the fastest"}},
		{"hdd average below track to track", withWhere("h.toml:3", append(slices.Clone(hddOK), "average_seek=500us")...), []string{"h.toml:3", `key "average_seek"`, "must exceed track_to_track"}},
		{"hdd full stroke below average", withWhere("h.toml:3", append(slices.Clone(hddOK), "full_stroke=5ms")...), []string{"h.toml:3", `key "full_stroke"`, "must exceed average_seek"}},
		{"hdd average out of the curve's reach", withWhere("h.toml:2", append(slices.Clone(hddOK), "average_seek=17ms")...), []string{"h.toml:2", `key "average_seek" = "17ms"`, "out of reach", "must lie between"}},
		{"hdd without rpm", withWhere("h.toml:1", "kind=hdd", "capacity=1g"), []string{"h.toml:1", `key "rpm" (not set)`}},
		{"hdd NCQ deeper than 32", withWhere("h.toml:5", append(slices.Clone(hddOK), "queue_depth=33")...), []string{"h.toml:5", `key "queue_depth"`, "32 tags"}},
		{"hdd FIFO deeper than 32", withWhere("h.toml:5", append(slices.Clone(hddOK), "ncq=false", "queue_depth=64")...), []string{"h.toml:5", `key "queue_depth"`, "32 tags"}},
		{"hdd cache size without cache", withWhere("h.toml:7", append(slices.Clone(hddOK), "write_cache=false", "write_cache_size=4m")...), []string{"h.toml:7", `key "write_cache_size"`, "write_cache = false"}},
		{"hdd cache below a request", withWhere("h.toml:7", append(slices.Clone(hddOK), "write_cache_size=64k")...), []string{"h.toml:7", `key "write_cache_size"`, "maximal request"}},
		{"hdd readahead without segments", withWhere("h.toml:8", append(slices.Clone(hddOK), "cache_segments=0")...), []string{"h.toml:8", `key "cache_segments"`, "readahead"}},
		{"null without queues", withWhere("n.toml:3", "kind=null", "submit_queues=0"), []string{"n.toml:3", `key "submit_queues" = "0"`}},
		{"null odd block size", withWhere("n.toml:2", "kind=null", "logical_block_size=1024"), []string{"n.toml:2", `key "logical_block_size"`, "512 or 4096"}},
		{"null request not a block multiple", withWhere("n.toml:4", "kind=null", "logical_block_size=4096", "max_hw_sectors_kb=127"), []string{"n.toml:4", `key "max_hw_sectors_kb"`}},
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

// Every rate key of every kind rejects a rate too small for the clock,
// and every time key a time too long for it: their service times would
// overflow int64 nanoseconds and wrap negative, so that a device at 1e-300
// MB/s served faster than one at a sane rate. A rate of 0 stays "free"
// where it was.
func TestProfileRateAndTimeBounds(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		rates []string
		times []string
	}{
		{"nvme", []string{"channel_mbps", "host_mbps"}, []string{"read_time", "program_time", "read_overhead", "write_overhead", "command_time"}},
		{"ufs", []string{"channel_mbps", "host_mbps"}, []string{"read_time", "program_time", "command_time"}},
		{"sata-ssd", []string{"channel_mbps", "host_mbps"}, []string{"program_time"}},
		{"hdd", []string{"outer_mbps", "inner_mbps", "host_mbps"}, []string{"command_overhead"}},
		{"null", []string{"mbps"}, []string{"completion_nsec"}},
		{"pmem", []string{"read_mbps", "write_mbps"}, []string{"latency"}},
		{"memory", []string{"mbps"}, []string{"latency"}},
		{"flat", []string{"read_mbps", "write_mbps"}, []string{"read_latency", "write_latency", "switch_time"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			base := memOK
			if tc.kind != "memory" {
				base = profileFor(tc.kind)
			}
			for _, k := range tc.rates {
				_, err := NewFromProfile(newEngine(t), withWhere("r.toml:3", append(slices.Clone(base), k+"=1e-300")...))
				require.Error(t, err, k)
				assert.ErrorContains(t, err, fmt.Sprintf("r.toml:3: bad device profile: %s: key %q", tc.kind, k))
				assert.ErrorContains(t, err, "0.001")
			}
			for _, k := range tc.times {
				_, err := NewFromProfile(newEngine(t), withWhere("r.toml:4", append(slices.Clone(base), k+"=2000000h")...))
				require.Error(t, err, k)
				assert.ErrorContains(t, err, fmt.Sprintf("r.toml:4: bad device profile: %s: key %q", tc.kind, k))
			}
		})
	}
	for _, kv := range []string{"mbps=0", "mbps=0.001", "latency=1h"} {
		_, err := NewFromProfile(newEngine(t), profile(append(slices.Clone(memOK), kv)...))
		assert.NoError(t, err, kv)
	}
}

// The memory kind checks the limits every kind has (it checked only the
// capacity, and a bad block size failed later, in the queue, naming no
// key).
func TestMemoryProfileLimits(t *testing.T) {
	for kv, want := range map[string]string{
		"logical_block_size=1000": "512 or 4096",
		"logical_block_size=8192": "512 or 4096",
		"capacity=1000001":        "not a multiple of the logical block size",
		"max_hw_sectors_kb=2":     "multiple of the logical block size",
	} {
		key, _, _ := strings.Cut(kv, "=")
		vals := withWhere("m.toml:2", append(slices.Clone(memOK), "logical_block_size=4096", kv)...)
		_, err := NewFromProfile(newEngine(t), vals)
		require.Error(t, err, kv)
		assert.ErrorContains(t, err, fmt.Sprintf("m.toml:2: bad device profile: memory: key %q", key), kv)
		assert.ErrorContains(t, err, want, kv)
	}
}

// An override that turns the HDD write cache off leaves the profile's
// write_cache_size unused; the size with the cache off in one place (the
// profile, or the overrides) is still an error, named where the size was
// set.
func TestHDDWriteCacheOffByOverride(t *testing.T) {
	vals := withWhere("h.toml:7", append(profileFor("hdd"), "write_cache_size=4m")...)
	vals["write_cache"] = ProfileValue{Text: "false", Where: "--set device.write_cache", Override: true}
	d, err := NewFromProfile(newEngine(t), vals)
	require.NoError(t, err)
	assert.False(t, d.(*HDD).Params().WriteCache)

	vals["write_cache_size"] = ProfileValue{Text: "2m", Where: "--set device.write_cache_size", Override: true}
	_, err = NewFromProfile(newEngine(t), vals)
	assert.ErrorContains(t, err, `--set device.write_cache_size: bad device profile: hdd: key "write_cache_size": has no effect with write_cache = false`)

	vals = withWhere("h.toml:7", append(profileFor("hdd"), "write_cache=false")...)
	vals["write_cache_size"] = ProfileValue{Text: "2m", Where: "--set device.write_cache_size", Override: true}
	_, err = NewFromProfile(newEngine(t), vals)
	assert.ErrorContains(t, err, `--set device.write_cache_size: bad device profile: hdd: key "write_cache_size"`)
}

func TestProfileKeys(t *testing.T) {
	require.Equal(t, strings.Split(allKinds, ", "), Kinds())
	readme, err := os.ReadFile("../testdata/devices/README.md")
	require.NoError(t, err)
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
			for _, n := range []string{"name", "capacity", "logical_block_size", "max_hw_sectors_kb"} {
				assert.Contains(t, names, n)
			}
			// Every key is documented in the README's section of its
			// kind (or of the flash model the kind shares).
			section := readmeSection(t, string(readme), kind)
			for _, n := range names {
				assert.True(t, strings.Contains(section, "`"+n+"`"), "README documents key %q of kind %s", n, kind)
			}
			// Every listed key is accepted and parsed: a bad value is
			// reported against that key.
			e := newEngine(t)
			base := memOK
			if kind != "memory" {
				base = profileFor(kind)
			}
			_, err = NewFromProfile(e, profile(base...))
			require.NoError(t, err)
			for _, n := range names {
				if n == "name" {
					continue
				}
				_, err := NewFromProfile(e, profile(append(slices.Clone(base), n+"=bogus")...))
				assert.ErrorContains(t, err, fmt.Sprintf("key %q", n))
				assert.NotContains(t, err.Error(), "unknown key")
			}
		})
	}
	_, err = ProfileKeys("floppy")
	assert.ErrorIs(t, err, ErrProfile)
	assert.ErrorContains(t, err, `"floppy"`)
}

// readmeSection returns the README's section about kind: from its
// "## kind = ..." heading (the flash kinds share one) to the next heading.
func readmeSection(t *testing.T, readme, kind string) string {
	t.Helper()
	for _, sec := range strings.Split(readme, "\n## ")[1:] {
		head, _, _ := strings.Cut(sec, "\n")
		if strings.HasPrefix(head, "kind =") && strings.Contains(head, `"`+kind+`"`) {
			return sec
		}
	}
	t.Fatalf("README has no section for kind %q", kind)
	return ""
}

// loadProfile reads a shipped profile (testdata/devices/NAME.toml) as
// blksim does.
func loadProfile(tb testing.TB, name string) map[string]ProfileValue {
	tb.Helper()
	data, err := os.ReadFile("../testdata/devices/" + name + ".toml")
	require.NoError(tb, err)
	kv, err := tomlkv.Parse(name+".toml", data)
	require.NoError(tb, err)
	vals := make(map[string]ProfileValue, len(kv))
	for k, v := range kv {
		vals[k] = ProfileValue{Text: v.Text, Where: fmt.Sprintf("%s.toml:%d", name, v.Line)}
	}
	return vals
}

// shippedProfiles lists testdata/devices/*.toml by name.
func shippedProfiles(tb testing.TB) []string {
	tb.Helper()
	ents, err := os.ReadDir("../testdata/devices")
	require.NoError(tb, err)
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".toml"); ok {
			out = append(out, n)
		}
	}
	return out
}

// Every shipped profile builds, and documents itself in the README.
func TestShippedProfilesBuild(t *testing.T) {
	names := shippedProfiles(t)
	require.Subset(t, names, []string{"p3600", "ufs21", "sata-ssd", "hdd-7200"})
	readme, err := os.ReadFile("../testdata/devices/README.md")
	require.NoError(t, err)
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			vals := loadProfile(t, n)
			_, err := NewFromProfile(newEngine(t), vals)
			require.NoError(t, err)
			assert.True(t, strings.Contains(string(readme), "\n## "+n+".toml"), "README has a section on %s.toml", n)
		})
	}
}

// loadP3600 reads the shipped P3600 profile as blksim does.
func loadP3600(tb testing.TB) map[string]ProfileValue {
	tb.Helper()
	return loadProfile(tb, "p3600")
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
	for _, name := range shippedProfiles(f) {
		var lines []string
		for k, v := range loadProfile(f, name) {
			lines = append(lines, k+"="+v.Text)
		}
		slices.Sort(lines)
		f.Add(strings.Join(lines, "\n"))
	}
	nvme, hdd := strings.Join(profileFor("nvme"), "\n"), strings.Join(profileFor("hdd"), "\n")
	f.Add(nvme + "\nchannels=1073741824\ndies_per_channel=1073741824")
	f.Add(nvme + "\npage_size=4611686018427387904\nplanes=4")
	f.Add(nvme + "\ncommand_time=1h")
	f.Add("kind=ufs\ncapacity=1g\nchannels=1\ndies_per_channel=1\npage_size=4k\nplanes=1\nchannel_mbps=1\nwrite_buffer=512k")
	f.Add(hdd + "\nrpm=1\nfull_stroke=1s\naverage_seek=400ms")
	f.Add(hdd + "\ncapacity=9223372036854775807\nouter_mbps=1000000\ninner_mbps=0.000001")
	f.Add(hdd + "\ncapacity=4k\ntrack_to_track=1ns")
	f.Add(hdd + "\nncq=false\nwrite_cache=false\nreadahead=0")
	f.Add("kind=null")
	f.Add("kind=null\nmemory_backed=true\nmbps=0.001\ncompletion_nsec=0\nsubmit_queues=1024\nhw_queue_depth=1048576")
	f.Add("kind=null\ncapacity=512\nlogical_block_size=4096")
	f.Add("kind=memory\ncapacity=9223372036854775807\nqueue_depth=1073741824\nmax_hw_sectors_kb=1073741824")
	f.Add("kind=memory\ncapacity=1k\nlogical_block_size=4096")
	f.Add("kind=pmem\ncapacity=4k\nread_mbps=0.001\nwrite_mbps=1e9\nlatency=1h")
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

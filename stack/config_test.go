package stack_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/fsmodel"
	"github.com/blksim/blksim/stack"
)

// experimentsDir holds the shipped ext4-dio stack files.
const experimentsDir = "../testdata/experiments/ext4-dio"

// ext4DIOStacks are the stack files of the ext4-dio experiment (the
// directory also holds the job file and published results, which are not
// stacks).
var ext4DIOStacks = []string{
	"iomap.toml",
	"with-parallel-dio-reads.toml",
	"without-parallel-dio-reads.toml",
	"without-parallel-dio-reads-nolock.toml",
}

// build builds c and closes the engine when the test ends.
func build(t *testing.T, c *stack.Config) (*stack.Stack, error) {
	t.Helper()
	st, err := stack.Build(c, 1)
	if err == nil {
		t.Cleanup(func() { _ = st.Engine.Close() })
	}
	return st, err
}

func TestDefaultHasEveryKey(t *testing.T) {
	keys := stack.Keys()
	require.NotEmpty(t, keys)
	c := stack.Default()
	seen := map[string]bool{}
	for _, k := range keys {
		assert.False(t, seen[k.Name], "key %q documented twice", k.Name)
		seen[k.Name] = true
		assert.NotEmpty(t, k.Doc, "key %q has no description", k.Name)
		assert.Equal(t, k.Default, c.Get(k.Name), "key %q", k.Name)
		assert.Equal(t, "default", c.Where(k.Name), "key %q", k.Name)
		// Every default is a valid value of its key.
		require.NoError(t, c.Clone().Set(k.Name, k.Default, "test"), "key %q", k.Name)
	}
	// Default holds exactly the documented keys.
	sorted := c.Sorted()
	require.Len(t, sorted, len(keys))
	for i, kv := range sorted {
		assert.True(t, seen[kv[0]], "Default has undocumented key %q", kv[0])
		if i > 0 {
			assert.Less(t, sorted[i-1][0], kv[0], "Sorted is not sorted")
		}
	}
	for _, name := range []string{
		"fs", "ext4.parallel_dio_reads", "ext4.dioread_nolock", "ext4.iomap_dio",
		"device.profile", "queue.max_sectors_kb", "queue.nr_requests", "host.cpus",
		"host.wake_latency", "host.context_switch", "host.spin_handoff", "host.syscall",
		"host.dio_setup", "host.dio_per_page", "host.bio_submit", "host.dio_complete",
		"host.app_per_io", "rwsem.writer_spin", "rwsem.reader_spin",
		"rwsem.handoff_timeout", "rwsem.wake_any_readers",
	} {
		assert.True(t, seen[name], "key %q is missing", name)
	}
	// The documented defaults of the README: ext4 with default mount
	// options on the P3600.
	assert.Equal(t, "ext4", c.Get("fs"))
	assert.Equal(t, "p3600", c.Get("device.profile"))
	assert.Equal(t, "true", c.Get("ext4.parallel_dio_reads"))
	assert.Equal(t, "false", c.Get("ext4.dioread_nolock"))
	assert.Equal(t, "false", c.Get("ext4.iomap_dio"))
}

func TestDefaultBuilds(t *testing.T) {
	st, err := build(t, stack.Default())
	require.NoError(t, err)
	assert.Equal(t, "nvme0n1", st.Device.Name())
	assert.Equal(t, fsmodel.Ext4{ParallelDIOReads: true}, st.FS.Policy())
	assert.Equal(t, 16, st.Engine.Host().CPUs)
	assert.Equal(t, "1.5µs", st.AppPerIO.String())
}

func TestLoadExperimentStacks(t *testing.T) {
	type setting struct{ value, where string }
	tests := []struct {
		file   string
		want   map[string]setting
		policy fsmodel.Ext4
	}{
		{
			file: "iomap.toml",
			want: map[string]setting{
				"fs":                      {"ext4", ":4"},
				"device.profile":          {"p3600", ":5"},
				"ext4.iomap_dio":          {"true", ":8"},
				"ext4.parallel_dio_reads": {"true", "default"},
				"ext4.dioread_nolock":     {"false", "default"},
			},
			policy: fsmodel.Ext4{ParallelDIOReads: true, IomapDIO: true},
		},
		{
			file: "with-parallel-dio-reads.toml",
			want: map[string]setting{
				"fs":                      {"ext4", ":3"},
				"device.profile":          {"p3600", ":4"},
				"ext4.parallel_dio_reads": {"true", ":7"},
				"ext4.dioread_nolock":     {"false", ":8"},
				"ext4.iomap_dio":          {"false", ":9"},
			},
			policy: fsmodel.Ext4{ParallelDIOReads: true},
		},
		{
			file: "without-parallel-dio-reads.toml",
			want: map[string]setting{
				"fs":                      {"ext4", ":4"},
				"device.profile":          {"p3600", ":5"},
				"ext4.parallel_dio_reads": {"false", ":8"},
				"ext4.dioread_nolock":     {"false", ":9"},
				"ext4.iomap_dio":          {"false", ":10"},
			},
			policy: fsmodel.Ext4{},
		},
		{
			file: "without-parallel-dio-reads-nolock.toml",
			want: map[string]setting{
				"fs":                      {"ext4", ":4"},
				"device.profile":          {"p3600", ":5"},
				"ext4.parallel_dio_reads": {"false", ":8"},
				"ext4.dioread_nolock":     {"true", ":9"},
				"ext4.iomap_dio":          {"false", ":10"},
			},
			policy: fsmodel.Ext4{DioreadNolock: true},
		},
	}
	require.Len(t, tests, len(ext4DIOStacks))
	for i, tc := range tests {
		require.Equal(t, ext4DIOStacks[i], tc.file)
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(experimentsDir, tc.file)
			c, err := stack.Load(path)
			require.NoError(t, err)
			for key, w := range tc.want {
				assert.Equal(t, w.value, c.Get(key), "key %q", key)
				where := w.where
				if strings.HasPrefix(where, ":") {
					where = path + where
				}
				assert.Equal(t, where, c.Where(key), "key %q", key)
			}
			// Keys the file does not set keep their defaults.
			assert.Equal(t, "16", c.Get("host.cpus"))
			assert.Equal(t, "default", c.Where("host.cpus"))

			st, err := build(t, c)
			require.NoError(t, err)
			assert.Equal(t, tc.policy, st.FS.Policy())
			assert.Equal(t, "nvme0n1", st.Device.Name())
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
		return p
	}
	tests := []struct {
		name string
		path string
		want []string
	}{
		{
			name: "missing file",
			path: filepath.Join(dir, "nope.toml"),
			want: []string{filepath.Join(dir, "nope.toml"), "no such file"},
		},
		{
			name: "syntax error",
			path: write("syntax.toml", "fs = \"ext4\"\n\n[ext4]\niomap_dio = = true\n"),
			want: []string{filepath.Join(dir, "syntax.toml") + ":4:"},
		},
		{
			name: "unknown key",
			path: write("unknown.toml", "fs = \"ext4\"\n[ext4]\nparallel_dio_read = true\n"),
			want: []string{filepath.Join(dir, "unknown.toml") + ":3:", `"ext4.parallel_dio_read"`, "unknown key"},
		},
		{
			name: "unknown table",
			path: write("table.toml", "[xfs]\nfoo = 1\n"),
			want: []string{filepath.Join(dir, "table.toml") + ":2:", `"xfs.foo"`},
		},
		{
			name: "bad bool",
			path: write("bool.toml", "[ext4]\niomap_dio = \"maybe\"\n"),
			want: []string{filepath.Join(dir, "bool.toml") + ":2:", `"ext4.iomap_dio"`, `"maybe"`},
		},
		{
			name: "number for bool",
			path: write("numbool.toml", "\n[ext4]\n\niomap_dio = 2\n"),
			want: []string{filepath.Join(dir, "numbool.toml") + ":4:", `"ext4.iomap_dio"`},
		},
		{
			name: "bad duration",
			path: write("dur.toml", "[host]\ncpus = 4\nwake_latency = \"3 us\"\n"),
			want: []string{filepath.Join(dir, "dur.toml") + ":3:", `"host.wake_latency"`, `"3 us"`},
		},
		{
			name: "negative duration",
			path: write("negdur.toml", "rwsem.handoff_timeout = \"-1ms\"\n"),
			want: []string{filepath.Join(dir, "negdur.toml") + ":1:", `"rwsem.handoff_timeout"`},
		},
		{
			name: "bad int",
			path: write("int.toml", "[host]\ncpus = 1.5\n"),
			want: []string{filepath.Join(dir, "int.toml") + ":2:", `"host.cpus"`},
		},
		{
			name: "negative int",
			path: write("negint.toml", "queue.nr_requests = -4\n"),
			want: []string{filepath.Join(dir, "negint.toml") + ":1:", `"queue.nr_requests"`},
		},
		{
			name: "no cpus",
			path: write("nocpus.toml", "[host]\ncpus = 0\n"),
			want: []string{filepath.Join(dir, "nocpus.toml") + ":2:", `"host.cpus"`, "[1, 1048576]"},
		},
		{
			name: "bad enum",
			path: write("enum.toml", "# fs\nfs = \"btrfs\"\n"),
			want: []string{filepath.Join(dir, "enum.toml") + ":2:", `"fs"`, `"btrfs"`, "ext4"},
		},
		{
			name: "array",
			path: write("array.toml", "[host]\ncpus = [1, 2]\n"),
			want: []string{filepath.Join(dir, "array.toml") + ":2:", `"host.cpus"`},
		},
		{
			name: "empty device key",
			path: write("emptydev.toml", "[device]\n\"\" = 1\n"),
			want: []string{filepath.Join(dir, "emptydev.toml") + ":2:", "empty device key"},
		},
		{
			name: "first error in file order",
			path: write("order.toml", "[host]\ncpus = \"x\"\n[ext4]\niomap_dio = \"y\"\n"),
			want: []string{filepath.Join(dir, "order.toml") + ":2:", `"host.cpus"`},
		},
		{
			name: "inline table",
			path: write("inline.toml", "fs = \"ext4\"\next4 = { iomap_dio = \"perhaps\" }\n"),
			want: []string{filepath.Join(dir, "inline.toml") + ":2:", `"ext4.iomap_dio"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := stack.Load(tc.path)
			require.Error(t, err)
			assert.Nil(t, c)
			assert.ErrorIs(t, err, stack.ErrConfig)
			msg := err.Error()
			assert.Contains(t, msg, tc.want[0])
			for _, w := range tc.want[1:] {
				assert.Contains(t, msg, w)
			}
			assert.NotContains(t, msg, ":0:", "line 0 is never a useful location")
		})
	}
}

func TestSetErrors(t *testing.T) {
	tests := []struct {
		key, value string
		want       []string
	}{
		{"nope", "1", []string{`unknown key "nope"`, "blksim keys"}},
		{"ext4.nope", "true", []string{`unknown key "ext4.nope"`}},
		{"EXT4.IOMAP_DIO", "true", []string{`unknown key "EXT4.IOMAP_DIO"`}},
		{"", "x", []string{`unknown key ""`}},
		{"ext4.iomap_dio", "maybe", []string{`key "ext4.iomap_dio"`, `"maybe"`, "boolean"}},
		{"ext4.parallel_dio_reads", "", []string{`key "ext4.parallel_dio_reads"`}},
		{"rwsem.writer_spin", "2", []string{`key "rwsem.writer_spin"`}},
		{"host.wake_latency", "fast", []string{`key "host.wake_latency"`, `"fast"`, "duration"}},
		{"host.syscall", "-5ns", []string{`key "host.syscall"`, "duration"}},
		{"rwsem.handoff_timeout", "4 ms", []string{`key "rwsem.handoff_timeout"`}},
		{"host.cpus", "many", []string{`key "host.cpus"`, "integer"}},
		{"host.cpus", "-1", []string{`key "host.cpus"`}},
		{"host.cpus", "1048577", []string{`key "host.cpus"`, "1048576"}},
		{"queue.max_sectors_kb", "128k", []string{`key "queue.max_sectors_kb"`}},
		{"queue.slice_idle", "bogus", []string{`key "queue.slice_idle"`, "duration", "nor one of auto"}},
		{"fs", "btrfs", []string{`key "fs"`, `"btrfs"`, "ext4"}},
		{"fs", "EXT4", []string{`key "fs"`, `"EXT4"`}},
		{"fs", "", []string{`key "fs"`}},
		{"device.", "1", []string{"empty device key"}},
		{"fault.op", "both", []string{`key "fault.op"`, `"both"`, "read, write, any"}},
		{"fault.sectors", "100", []string{`key "fault.sectors"`, "START-END"}},
		{"fault.sectors", "200-100", []string{`key "fault.sectors"`, "above the start"}},
		{"fault.sectors", "1000b-2k", []string{`key "fault.sectors"`, "512-byte sectors"}},
		{"fault.after", "-1", []string{`key "fault.after"`, "integer"}},
		{"fault.every", "0", []string{`key "fault.every"`, "integer"}},
		{"fault.probability", "1.5", []string{`key "fault.probability"`, "probability"}},
		{"fault.probability", "half", []string{`key "fault.probability"`}},
		{"fault.count", "lots", []string{`key "fault.count"`}},
		{"fault.errno", "EPERM", []string{`key "fault.errno"`, "EIO, ENOSPC, ETIMEDOUT"}},
		{"fault.latency", "soon", []string{`key "fault.latency"`, "duration"}},
	}
	for _, tc := range tests {
		for _, where := range []string{"stack.toml:7", "--set " + tc.key} {
			t.Run(tc.key+"="+tc.value+"@"+where, func(t *testing.T) {
				c := stack.Default()
				before := c.Sorted()
				err := c.Set(tc.key, tc.value, where)
				require.Error(t, err)
				assert.ErrorIs(t, err, stack.ErrConfig)
				assert.True(t, strings.HasPrefix(err.Error(), where+": "), "error %q should start with %q", err, where)
				for _, w := range tc.want {
					assert.Contains(t, err.Error(), w)
				}
				// A failed Set changes nothing.
				assert.Equal(t, before, c.Sorted())
			})
		}
	}
}

func TestSet(t *testing.T) {
	tests := []struct{ key, value string }{
		{"ext4.iomap_dio", "true"},
		{"ext4.iomap_dio", "off"},
		{"host.cpus", "1"},
		{"host.cpus", "1048576"},
		{"host.wake_latency", "0"},
		{"host.wake_latency", "2500"},
		{"rwsem.handoff_timeout", "1.5ms"},
		{"queue.max_sectors_kb", "64"},
		{"fs", "ext4"},
		{"device.profile", "some/file.toml"},
		// Device keys are not checked until Build.
		{"device.program_time", "anything"},
		{"device.x", "1"},
	}
	for _, tc := range tests {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			c := stack.Default()
			require.NoError(t, c.Set(tc.key, tc.value, "here:3"))
			assert.Equal(t, tc.value, c.Get(tc.key))
			assert.Equal(t, "here:3", c.Where(tc.key))
		})
	}
}

func TestSetArg(t *testing.T) {
	tests := []struct {
		arg, key, value string
	}{
		{"ext4.iomap_dio=true", "ext4.iomap_dio", "true"},
		{" host.cpus = 8 ", "host.cpus", "8"},
		{"host.wake_latency=5us", "host.wake_latency", "5us"},
		{"device.program_time=2ms", "device.program_time", "2ms"},
		{"device.name=a=b", "device.name", "a=b"},
		{"device.name=", "device.name", ""},
	}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			c := stack.Default()
			require.NoError(t, c.SetArg(tc.arg))
			assert.Equal(t, tc.value, c.Get(tc.key))
			assert.Equal(t, "--set "+tc.key, c.Where(tc.key))
		})
	}
}

func TestSetArgErrors(t *testing.T) {
	tests := []struct {
		arg  string
		want []string
	}{
		{"ext4.iomap_dio", []string{"--set ext4.iomap_dio", "want KEY=VALUE"}},
		{"", []string{"want KEY=VALUE"}},
		{"=true", []string{"--set =true", "want KEY=VALUE"}},
		{"  =true", []string{"want KEY=VALUE"}},
		{"ext4.iomap_dio=maybe", []string{"--set ext4.iomap_dio:", `key "ext4.iomap_dio"`, `"maybe"`}},
		{"unknown.key=1", []string{"--set unknown.key:", `unknown key "unknown.key"`}},
		{"host.wake_latency=3 parsecs", []string{"--set host.wake_latency:", `key "host.wake_latency"`}},
		{"fs=btrfs", []string{"--set fs:", `"btrfs"`}},
		{"host.cpus=0", []string{"--set host.cpus:", `key "host.cpus"`, "[1, 1048576]"}},
	}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			c := stack.Default()
			before := c.Sorted()
			err := c.SetArg(tc.arg)
			require.Error(t, err)
			assert.ErrorIs(t, err, stack.ErrConfig)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Equal(t, before, c.Sorted())
		})
	}
}

func TestCloneIsIndependent(t *testing.T) {
	c := stack.Default()
	require.NoError(t, c.SetArg("host.cpus=4"))
	d := c.Clone()
	require.NoError(t, d.SetArg("host.cpus=2"))
	require.NoError(t, d.SetArg("device.name=x"))
	assert.Equal(t, "4", c.Get("host.cpus"))
	assert.Equal(t, "", c.Get("device.name"))
	assert.Equal(t, "2", d.Get("host.cpus"))
}

// Later settings override earlier ones: the stack file over the defaults,
// --set over the stack file.
func TestOverrideOrder(t *testing.T) {
	c, err := stack.Load(filepath.Join(experimentsDir, "iomap.toml"))
	require.NoError(t, err)
	require.NoError(t, c.SetArg("ext4.iomap_dio=false"))
	require.NoError(t, c.SetArg("ext4.dioread_nolock=true"))
	assert.Equal(t, "false", c.Get("ext4.iomap_dio"))
	assert.Equal(t, "--set ext4.iomap_dio", c.Where("ext4.iomap_dio"))
	st, err := build(t, c)
	require.NoError(t, err)
	assert.Equal(t, fsmodel.Ext4{ParallelDIOReads: true, DioreadNolock: true}, st.FS.Policy())
}

func TestBuildFlowsHostKeys(t *testing.T) {
	c := stack.Default()
	for _, s := range []string{
		"host.cpus=3", "host.wake_latency=7us", "host.context_switch=2us", "host.spin_handoff=99ns",
		"host.syscall=1us", "host.dio_setup=2us", "host.dio_per_page=50ns", "host.bio_submit=3us",
		"host.dio_complete=600ns", "host.app_per_io=1us",
	} {
		require.NoError(t, c.SetArg(s))
	}
	st, err := build(t, c)
	require.NoError(t, err)
	h := st.Engine.Host()
	assert.Equal(t, 3, h.CPUs)
	assert.Equal(t, "7µs", h.WakeLatency.String())
	assert.Equal(t, "2µs", h.ContextSwitch.String())
	assert.Equal(t, "99ns", h.SpinHandoff.String())
	assert.Equal(t, "1µs", st.Costs.Syscall.String())
	assert.Equal(t, "2µs", st.Costs.DIOSetup.String())
	assert.Equal(t, "50ns", st.Costs.DIOPerPage.String())
	assert.Equal(t, "3µs", st.Costs.BioSubmit.String())
	assert.Equal(t, "600ns", st.Costs.DIOComplete.String())
	assert.Equal(t, "1µs", st.AppPerIO.String())
}

func TestBuildQueueKeys(t *testing.T) {
	c := stack.Default()
	require.NoError(t, c.SetArg("queue.max_sectors_kb=64"))
	require.NoError(t, c.SetArg("queue.nr_requests=32"))
	_, err := build(t, c)
	require.NoError(t, err)

	c = stack.Default()
	require.NoError(t, c.SetArg("queue.max_sectors_kb=4096"))
	_, err = build(t, c)
	require.Error(t, err)
	assert.ErrorIs(t, err, stack.ErrConfig)
	assert.Contains(t, err.Error(), "max_sectors_kb")

	for _, v := range []string{"auto", "0", "8ms"} {
		c = stack.Default()
		require.NoError(t, c.SetArg("queue.scheduler=cfq"))
		require.NoError(t, c.SetArg("queue.slice_idle="+v))
		_, err = build(t, c)
		require.NoError(t, err, v)
	}
}

func TestDeviceKeysFlowToProfile(t *testing.T) {
	c := stack.Default()
	require.NoError(t, c.SetArg("device.name=nvme7n1"))
	require.NoError(t, c.SetArg("device.program_time=2ms"))
	require.NoError(t, c.SetArg("device.channels=4"))
	st, err := build(t, c)
	require.NoError(t, err)
	assert.Equal(t, "nvme7n1", st.Device.Name())
	nv, ok := st.Device.(*blockdev.NVMe)
	require.True(t, ok, "device is %T", st.Device)
	p := nv.Params()
	assert.Equal(t, "2ms", p.ProgramTime.String())
	assert.Equal(t, 4, p.Channels)
	// Keys not overridden keep the profile's values.
	assert.Equal(t, "70µs", p.ReadTime.String())
	assert.Equal(t, 1023, p.QueueDepth)

	// A device key from a stack file flows the same way.
	dir := t.TempDir()
	writeMemProfile(t, filepath.Join(dir, "mem.toml"), "mem0")
	c, err = stack.Parse("s.toml", []byte("device.profile = \"mem.toml\"\n[device]\nname = \"ram9\"\ncapacity = \"2g\"\n"), dir)
	require.NoError(t, err)
	assert.Equal(t, "s.toml:3", c.Where("device.name"))
	st, err = build(t, c)
	require.NoError(t, err)
	assert.Equal(t, "ram9", st.Device.Name())
	assert.Equal(t, int64(2<<30), st.Device.Capacity())
}

// The write cache of the shipped disk profile, which sizes it, can be
// turned off from the command line (it was an error against the
// profile's write_cache_size line).
func TestHDDWriteCacheOffFromCommandLine(t *testing.T) {
	c := stack.Default()
	require.NoError(t, c.SetArg("device.profile=hdd-7200"))
	require.NoError(t, c.SetArg("device.write_cache=false"))
	st, err := build(t, c)
	require.NoError(t, err)
	hdd, ok := st.Device.(*blockdev.HDD)
	require.True(t, ok, "device is %T", st.Device)
	assert.False(t, hdd.Params().WriteCache)
}

func TestDeviceKeyErrors(t *testing.T) {
	tests := []struct {
		name string
		set  []string
		file string // a stack file, instead of set
		want []string
	}{
		{
			name: "unknown device key",
			set:  []string{"device.x=1"},
			want: []string{"--set device.x", `"x"`, "unknown key"},
		},
		{
			name: "bad device duration",
			set:  []string{"device.program_time=slow"},
			want: []string{"--set device.program_time", `"program_time"`, `"slow"`},
		},
		{
			name: "bad device size",
			set:  []string{"device.capacity=lots"},
			want: []string{"--set device.capacity", `"capacity"`},
		},
		{
			name: "bad device kind",
			set:  []string{"device.kind=floppy"},
			want: []string{"--set device.kind", `"floppy"`, "nvme"},
		},
		{
			name: "invalid device parameters",
			set:  []string{"device.channels=0"},
			want: []string{"channels"},
		},
		{
			name: "unknown device key in a stack file",
			file: "fs = \"ext4\"\n\n[device]\nprofile = \"p3600\"\nreadtime = \"70us\"\n",
			want: []string{"dev.toml:5", `"readtime"`, "unknown key"},
		},
		{
			name: "unknown embedded profile",
			set:  []string{"device.profile=p9999"},
			want: []string{"--set device.profile", `"p9999"`, "have: ", "p3600"},
		},
		{
			name: "unknown embedded profile in a file",
			file: "device.profile = \"sata\"\n",
			want: []string{"dev.toml:1", `"sata"`, "p3600"},
		},
		{
			name: "missing profile file",
			file: "\ndevice.profile = \"nope.toml\"\n",
			want: []string{"dev.toml:2", "nope.toml", "no such file"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := stack.Default()
			if tc.file != "" {
				var err error
				c, err = stack.Parse("dev.toml", []byte(tc.file), t.TempDir())
				require.NoError(t, err, "the error is Build's, not Parse's")
			}
			for _, s := range tc.set {
				require.NoError(t, c.SetArg(s), "the error is Build's, not SetArg's")
			}
			st, err := build(t, c)
			require.Error(t, err)
			assert.Nil(t, st)
			assert.ErrorIs(t, err, stack.ErrConfig)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// writeMemProfile writes a small memory-device profile at path.
func writeMemProfile(t *testing.T, path, name string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	prof := "kind = \"memory\"\nname = \"" + name + "\"\ncapacity = \"1g\"\nlogical_block_size = 512\nmax_hw_sectors_kb = 128\nqueue_depth = 64\nlatency = \"10us\"\n"
	require.NoError(t, os.WriteFile(path, []byte(prof), 0o644))
}

func TestDeviceProfileRelativeToStackFile(t *testing.T) {
	dir := t.TempDir()
	writeMemProfile(t, filepath.Join(dir, "devs", "mem.toml"), "mem0")
	stackPath := filepath.Join(dir, "stack.toml")
	require.NoError(t, os.WriteFile(stackPath, []byte("device.profile = \"devs/mem.toml\"\n"), 0o644))

	// The test's working directory is the package directory, not dir.
	c, err := stack.Load(stackPath)
	require.NoError(t, err)
	st, err := build(t, c)
	require.NoError(t, err)
	assert.Equal(t, "mem0", st.Device.Name())

	// Parse resolves against the dir it is given.
	c, err = stack.Parse("inline.toml", []byte("device.profile = \"devs/mem.toml\"\n"), dir)
	require.NoError(t, err)
	st, err = build(t, c)
	require.NoError(t, err)
	assert.Equal(t, "mem0", st.Device.Name())

	// An absolute path is used as is.
	c, err = stack.Parse("abs.toml", []byte("device.profile = \""+filepath.Join(dir, "devs", "mem.toml")+"\"\n"), t.TempDir())
	require.NoError(t, err)
	st, err = build(t, c)
	require.NoError(t, err)
	assert.Equal(t, "mem0", st.Device.Name())

	// Errors in the profile name the profile file and line.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "devs", "bad.toml"), []byte("kind = \"memory\"\n\nlatency = \"soon\"\n"), 0o644))
	c, err = stack.Parse("s.toml", []byte("device.profile = \"devs/bad.toml\"\n"), dir)
	require.NoError(t, err)
	_, err = build(t, c)
	require.Error(t, err)
	assert.ErrorIs(t, err, stack.ErrConfig)
	assert.Contains(t, err.Error(), filepath.Join(dir, "devs", "bad.toml")+":3")
	assert.Contains(t, err.Error(), `"latency"`)
}

// A profile path given with --set is relative to the working directory,
// not to the stack file's directory.
func TestDeviceProfileSetArgRelativeToWorkingDir(t *testing.T) {
	dir := t.TempDir()
	stackPath := filepath.Join(dir, "stack.toml")
	require.NoError(t, os.WriteFile(stackPath, []byte("fs = \"ext4\"\n"), 0o644))
	writeMemProfile(t, filepath.Join(dir, "mem.toml"), "in-stack-dir")

	local := t.TempDir()
	writeMemProfile(t, filepath.Join(local, "mem.toml"), "in-working-dir")
	t.Chdir(local)

	c, err := stack.Load(stackPath)
	require.NoError(t, err)
	require.NoError(t, c.SetArg("device.profile=mem.toml"))
	st, err := build(t, c)
	require.NoError(t, err)
	assert.Equal(t, "in-working-dir", st.Device.Name())
}

func TestEmbeddedProfiles(t *testing.T) {
	assert.Contains(t, stack.EmbeddedProfiles(), "p3600")
	for _, name := range stack.EmbeddedProfiles() {
		t.Run(name, func(t *testing.T) {
			c := stack.Default()
			require.NoError(t, c.SetArg("device.profile="+name))
			_, err := build(t, c)
			require.NoError(t, err)
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range ext4DIOStacks {
		data, err := os.ReadFile(filepath.Join(experimentsDir, name))
		require.NoError(f, err)
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"[host]\ncpus = 0\n",
		"[device]\nprogram_time = \"2ms\"\nx = 1\n",
		"fs = \"xfs\"\n",
		"ext4 = { iomap_dio = true }\n",
		"[[ext4]]\niomap_dio = true\n",
		"\"ext4.iomap_dio\" = true\next4.iomap_dio = false\n",
		"device. = 1\n",
		"host.wake_latency = -1\n",
		"[queue]\nscheduler = \"cfq\"\nslice_idle = \"auto\"\n",
		"a = [\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := stack.Parse("fuzz.toml", data, "")
		if err != nil {
			require.Nil(t, c)
			require.True(t, errors.Is(err, stack.ErrConfig), "error %q does not wrap ErrConfig", err)
			require.Contains(t, err.Error(), "fuzz.toml")
			return
		}
		// Every documented key still has a valid value.
		for _, k := range stack.Keys() {
			require.NoError(t, c.Clone().Set(k.Name, c.Get(k.Name), "x"), "key %q", k.Name)
		}
	})
}

// compare's --variant and --sweep are command-line options too: a device
// or host profile path they give is relative to the working directory,
// not to the --stack file's directory.
func TestProfilePathFromCompareRelativeToWorkingDir(t *testing.T) {
	dir := t.TempDir()
	stackPath := filepath.Join(dir, "stack.toml")
	require.NoError(t, os.WriteFile(stackPath, []byte("fs = \"ext4\"\n"), 0o644))
	writeMemProfile(t, filepath.Join(dir, "mem.toml"), "in-stack-dir")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "host.toml"), []byte("cpus = 3\n"), 0o644))

	local := t.TempDir()
	writeMemProfile(t, filepath.Join(local, "mem.toml"), "in-working-dir")
	require.NoError(t, os.WriteFile(filepath.Join(local, "host.toml"), []byte("cpus = 5\n"), 0o644))
	t.Chdir(local)

	for _, where := range []string{"--variant b", "--sweep device.profile"} {
		c, err := stack.Load(stackPath)
		require.NoError(t, err)
		require.NoError(t, c.Set("device.profile", "mem.toml", where))
		require.NoError(t, c.Set("host.profile", "host.toml", where))
		st, err := build(t, c)
		require.NoError(t, err, where)
		assert.Equal(t, "in-working-dir", st.Device.Name(), where)
		assert.Equal(t, 5, st.Engine.Host().CPUs, where)
	}
}

// A device profile without a kind (here a host profile given by mistake)
// is an error naming the file, since there is no key to name.
func TestDeviceProfileWithoutKindNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "host.toml")
	require.NoError(t, os.WriteFile(path, []byte("cpus = 4\n"), 0o644))
	c := stack.Default()
	require.NoError(t, c.SetArg("device.profile="+path))
	_, err := build(t, c)
	require.Error(t, err)
	assert.ErrorIs(t, err, stack.ErrConfig)
	assert.Contains(t, err.Error(), path+": ")
	assert.Contains(t, err.Error(), `no "kind" key`)
}

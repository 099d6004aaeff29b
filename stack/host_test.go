package stack_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/stack"
)

const hostsDir = "../testdata/hosts"

// hostKeys are the host.* keys a profile may set.
func hostKeys() map[string]stack.KeyDoc {
	out := map[string]stack.KeyDoc{}
	for _, k := range stack.Keys() {
		if name, ok := strings.CutPrefix(k.Name, "host."); ok && name != "profile" {
			out[name] = k
		}
	}
	return out
}

// TestDefaultHostProfileIsTheDefaults: testdata/hosts/default.toml writes
// out every host.* default (copy_per_page excepted: it is 4 x
// copy_per_kib), so host.profile = "default" changes nothing.
func TestDefaultHostProfileIsTheDefaults(t *testing.T) {
	var prof map[string]any
	_, err := toml.DecodeFile(filepath.Join(hostsDir, "default.toml"), &prof)
	require.NoError(t, err)
	for name, k := range hostKeys() {
		if name == "copy_per_page" {
			assert.NotContains(t, prof, name)
			continue
		}
		if assert.Contains(t, prof, name, "default.toml misses %s", name) {
			assert.Equal(t, k.Default, tomlText(prof[name]), "key %s", name)
		}
	}
	c := stack.Default()
	require.NoError(t, c.SetArg("host.profile=default"))
	assert.Equal(t, stack.Default().Sorted(), c.Sorted())
}

func tomlText(v any) string { return fmt.Sprint(v) }

// TestHostProfiles builds every embedded host profile and checks its
// figures against the ranges of EXPERIMENTS.md section 2.
func TestHostProfiles(t *testing.T) {
	names := stack.EmbeddedHostProfiles()
	for _, want := range []string{"default", "xeon-e7-8890v3-4s", "xeon-8480-2s"} {
		require.Contains(t, names, want)
	}
	tests := []struct {
		name string
		cpus int
	}{
		{"default", 16},
		{"xeon-e7-8890v3-4s", 144},
		{"xeon-8480-2s", 224},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := stack.Default()
			require.NoError(t, c.SetArg("host.profile="+tc.name))
			st, err := build(t, c)
			require.NoError(t, err)
			h := st.Engine.Host()
			assert.Equal(t, tc.cpus, h.CPUs)
			assert.Equal(t, tc.cpus, len(st.Engine.CPUStats()))
			assert.GreaterOrEqual(t, h.ContextSwitch, time.Microsecond)
			assert.LessOrEqual(t, h.ContextSwitch, 3500*time.Nanosecond)
			assert.GreaterOrEqual(t, h.WakeLatency, 2*time.Microsecond)
			assert.LessOrEqual(t, h.WakeLatency, 10*time.Microsecond)
			if tc.name != "default" {
				assert.GreaterOrEqual(t, h.CacheLine, 100*time.Nanosecond, "cache-line transfer ~100-200 ns")
				assert.LessOrEqual(t, h.CacheLine, 200*time.Nanosecond)
				assert.Positive(t, h.SpinIteration)
				assert.Positive(t, st.Costs.PageCacheLookup)
			}
			assert.Equal(t, "testdata/hosts/"+tc.name+".toml:", c.Where("host.cpus")[:len("testdata/hosts/"+tc.name+".toml:")])
		})
	}
	// Every profile documents where its figures come from.
	readme, err := os.ReadFile(filepath.Join(hostsDir, "README.md"))
	require.NoError(t, err)
	for _, n := range names {
		assert.Contains(t, string(readme), n+".toml")
	}
}

// TestHostProfileOverrides: a host.* key set in the stack file or with
// --set wins over the profile whatever the order; the profile wins over
// the defaults.
func TestHostProfileOverrides(t *testing.T) {
	tests := []struct {
		name      string
		stackFile string
		set       []string
		cpus      string
		where     string
	}{
		{"profile", "host.profile = \"xeon-8480-2s\"\n", nil, "224", "testdata/hosts/xeon-8480-2s.toml:5"},
		{"stack key after", "host.profile = \"xeon-8480-2s\"\nhost.cpus = 8\n", nil, "8", "s.toml:2"},
		{"stack key before", "host.cpus = 8\nhost.profile = \"xeon-8480-2s\"\n", nil, "8", "s.toml:1"},
		{"--set", "host.profile = \"xeon-8480-2s\"\n", []string{"host.cpus=4"}, "4", "--set host.cpus"},
		{"--set profile", "host.cpus = 8\n", []string{"host.profile=xeon-e7-8890v3-4s"}, "8", "s.toml:1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := stack.Parse("s.toml", []byte(tc.stackFile), "")
			require.NoError(t, err)
			for _, s := range tc.set {
				require.NoError(t, c.SetArg(s))
			}
			assert.Equal(t, tc.cpus, c.Get("host.cpus"))
			assert.Equal(t, tc.where, c.Where("host.cpus"))
			// The clone keeps the profile.
			assert.Equal(t, tc.cpus, c.Clone().Get("host.cpus"))
		})
	}
}

func TestHostProfileFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "hosts"), 0o755))
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "hosts", name), []byte(body), 0o644))
	}
	write("small.toml", "cpus = 2\ncache_line = \"180ns\"\n")
	write("unknown.toml", "cpus = 2\n\nturbo = true\n")
	write("bad.toml", "cpus = 2\nwake_latency = \"soon\"\n")
	write("self.toml", "profile = \"default\"\n")

	// A path in a stack file is relative to the stack file.
	c, err := stack.Parse("s.toml", []byte("host.profile = \"hosts/small.toml\"\n"), dir)
	require.NoError(t, err)
	st, err := build(t, c)
	require.NoError(t, err)
	assert.Equal(t, 2, st.Engine.Host().CPUs)
	assert.Equal(t, 180*time.Nanosecond, st.Engine.Host().CacheLine)
	assert.Equal(t, "3us", c.Get("host.wake_latency"), "keys the profile leaves out keep their defaults")

	tests := []struct {
		name, stackFile string
		want            []string
	}{
		{"no such embedded profile", `host.profile = "nosuch"`, []string{"s.toml:1", `no embedded host profile "nosuch"`, "xeon-8480-2s"}},
		{"no such file", `host.profile = "hosts/none.toml"`, []string{"s.toml:1", "none.toml"}},
		{"unknown key", `host.profile = "hosts/unknown.toml"`, []string{"unknown.toml:3", `"turbo"`}},
		{"bad value", `host.profile = "hosts/bad.toml"`, []string{"bad.toml:2", `"wake_latency"`}},
		{"profile in a profile", `host.profile = "hosts/self.toml"`, []string{"self.toml:1", `"profile"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := stack.Parse("s.toml", []byte(tc.stackFile+"\n"), dir)
			require.Error(t, err)
			assert.Nil(t, c)
			assert.ErrorIs(t, err, stack.ErrConfig)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestLockClassKeys: rwsem.<class>.reader_spin and writer_spin replace the
// global rwsem.* spinning for the rwsems of that class only.
func TestLockClassKeys(t *testing.T) {
	tests := []struct {
		name   string
		set    []string
		lock   string
		reader bool
		writer bool
	}{
		{"global defaults", nil, "ext4:i_rwsem:f", false, true},
		{"global reader spin", []string{"rwsem.reader_spin=true"}, "ext4:i_rwsem:f", true, true},
		{"class reader spin", []string{"rwsem.i_rwsem.reader_spin=true"}, "xfs:i_rwsem:f", true, true},
		{"class leaves others", []string{"rwsem.i_rwsem.reader_spin=true"}, "xfs:mmaplock:f", false, true},
		{"class over global", []string{"rwsem.reader_spin=true", "rwsem.writer_spin=true", "rwsem.i_rwsem.reader_spin=false", "rwsem.i_rwsem.writer_spin=false"}, "ext4:i_rwsem:f", false, false},
		{"class keeps other global keys", []string{"rwsem.reader_spin=true", "rwsem.i_rwsem.writer_spin=false"}, "ext4:i_rwsem:f", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := stack.Default()
			require.NoError(t, c.SetArg("rwsem.spin_limit=5us"))
			for _, s := range tc.set {
				require.NoError(t, c.SetArg(s))
			}
			st, err := build(t, c)
			require.NoError(t, err)
			// The filesystem creates its rwsems with the global options;
			// the engine applies the class's.
			global := sim.RWSemOptions{WriterSpin: c.Get("rwsem.writer_spin") == "true", ReaderSpin: c.Get("rwsem.reader_spin") == "true"}
			o := sim.NewRWSem(st.Engine, tc.lock, global).Options()
			assert.Equal(t, tc.reader, o.ReaderSpin, "reader spin")
			assert.Equal(t, tc.writer, o.WriterSpin, "writer spin")
			if strings.Contains(tc.name, "class") && tc.lock != "xfs:mmaplock:f" {
				assert.Equal(t, 5*time.Microsecond, o.SpinLimit, "a class inherits the other rwsem.* keys")
			}
		})
	}
	c := stack.Default()
	for _, bad := range []string{"rwsem.i_rwsem.reader_spin=maybe", "rwsem.i_rwsem.spin=true", "rwsem..reader_spin=true", "rwsem.I-RWSEM.reader_spin=true"} {
		err := c.SetArg(bad)
		assert.ErrorIs(t, err, stack.ErrConfig, bad)
	}
}

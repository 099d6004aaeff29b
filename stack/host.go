package stack

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/blksim/blksim"
	"github.com/blksim/blksim/internal/tomlkv"
	"github.com/blksim/blksim/sim"
)

// loadHostProfile reads the host profile name (set at where): an embedded
// profile (testdata/hosts/NAME.toml) or a path ending in .toml, relative
// to the stack file's directory when the stack file set it (else to the
// working directory). A profile is flat TOML whose keys are host.* stack
// keys without the "host." prefix ("cpus = 72"); it returns the values by
// full key.
func (c *Config) loadHostProfile(name, where string) (map[string]profileValue, error) {
	var data []byte
	var err error
	src := name
	if strings.HasSuffix(name, ".toml") || strings.ContainsRune(name, os.PathSeparator) {
		path := name
		if !filepath.IsAbs(path) && c.dir != "" && !fromCommandLine(where) {
			path = filepath.Join(c.dir, path)
		}
		src = path
		data, err = os.ReadFile(path)
	} else {
		src = "testdata/hosts/" + name + ".toml"
		data, err = fs.ReadFile(blksim.Testdata, src)
		if err != nil {
			err = fmt.Errorf("no embedded host profile %q (have: %s)", name, strings.Join(EmbeddedHostProfiles(), ", "))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: host.profile: %v", where, ErrConfig, err)
	}
	kv, err := tomlkv.Parse(src, data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	out := make(map[string]profileValue, len(kv))
	for k, v := range kv {
		at := fmt.Sprintf("%s:%d", src, v.Line)
		key := "host." + k
		def, ok := lookupKey(key)
		if !ok || key == "host.profile" {
			return nil, fmt.Errorf("%s: %w: unknown host profile key %q (the host.* keys of 'blksim keys', without \"host.\")", at, ErrConfig, k)
		}
		if err := checkValue(def, v.Text); err != nil {
			return nil, fmt.Errorf("%s: %w: key %q: %v", at, ErrConfig, k, err)
		}
		out[key] = profileValue{text: v.Text, where: at}
	}
	return out, nil
}

// EmbeddedHostProfiles lists the host profiles built into the binary.
func EmbeddedHostProfiles() []string {
	ents, _ := fs.ReadDir(blksim.Testdata, "testdata/hosts")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".toml"); ok {
			out = append(out, n)
		}
	}
	return out
}

// hostOf returns the engine's host: CPUs and the costs the engine applies.
func (c *Config) hostOf() (sim.Host, error) {
	h := sim.Host{
		CPUs:          c.integer("host.cpus"),
		WakeLatency:   c.duration("host.wake_latency"),
		ContextSwitch: c.duration("host.context_switch"),
		SpinHandoff:   c.duration("host.spin_handoff"),
		SpinIteration: c.duration("host.spin"),
		CacheLine:     c.duration("host.cache_line"),
		WakeStep:      c.duration("host.wake_step"),
	}
	if h.CPUs < 1 {
		return h, fmt.Errorf("%s: %w: key \"host.cpus\" must be at least 1", c.Where("host.cpus"), ErrConfig)
	}
	return h, nil
}

// copyPerPage is the page copy cost, from host.copy_per_page or four
// times host.copy_per_kib, whichever was set more explicitly: in the stack
// file or with --set first (copy_per_page if both), then in the host
// profile (likewise), else the default copy_per_kib.
func (c *Config) copyPerPage() time.Duration {
	explicit := func(k string) bool { return c.where[k] != "default" }
	_, profPage := c.host["host.copy_per_page"]
	switch {
	case explicit("host.copy_per_page"):
	case explicit("host.copy_per_kib"):
		return 4 * c.duration("host.copy_per_kib")
	case profPage:
	default:
		return 4 * c.duration("host.copy_per_kib")
	}
	return c.duration("host.copy_per_page")
}

// lockOptions returns the rwsem options of the rwsem.* keys, and the
// per-class replacements of the rwsem.<class>.reader_spin and writer_spin
// keys (nil if none is set).
func (c *Config) lockOptions() (sim.RWSemOptions, map[string]sim.RWSemOptions) {
	handoff := c.duration("rwsem.handoff_timeout")
	if handoff == 0 {
		handoff = -1 // disabled
	}
	global := sim.RWSemOptions{
		WriterSpin:     c.boolean("rwsem.writer_spin"),
		ReaderSpin:     c.boolean("rwsem.reader_spin"),
		HandoffTimeout: handoff,
		WakeAnyReaders: c.boolean("rwsem.wake_any_readers"),
		SpinLimit:      c.duration("rwsem.spin_limit"),

		WriterSpinReaders: c.duration("rwsem.writer_spin_readers"),
	}
	var keys []string
	for k := range c.vals {
		if _, _, ok := classKey(k); ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return global, nil
	}
	sort.Strings(keys)
	classes := map[string]sim.RWSemOptions{}
	for _, k := range keys {
		class, opt, _ := classKey(k)
		o, ok := classes[class]
		if !ok {
			o = global
		}
		if opt == "reader_spin" {
			o.ReaderSpin = c.boolean(k)
		} else {
			o.WriterSpin = c.boolean(k)
		}
		classes[class] = o
	}
	return global, classes
}

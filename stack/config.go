// Package stack describes and builds a simulated IO stack: which device
// profile, which host, which filesystem with which lock rules. A stack is
// a set of dotted keys ("ext4.parallel_dio_reads", "host.cpus",
// "device.program_time") read from a TOML file and overridden with --set;
// every key has a type and a default, and unknown keys are errors.
package stack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/internal/tomlkv"
	"github.com/blksim/blksim/internal/units"
)

// ErrConfig is wrapped by every error about a stack file or --set value.
var ErrConfig = errors.New("bad stack configuration")

// kind is a key's value type.
type kind uint8

const (
	kBool kind = iota
	kInt
	kSize
	kDuration
	kString
)

// keyDef declares one stack key.
type keyDef struct {
	name string
	kind kind
	def  string
	doc  string
	enum []string
}

// Keys of a stack. "device.*" keys other than device.profile override the
// device profile's own keys and are checked when the device is built.
var keyDefs = []keyDef{
	{"fs", kString, "ext4", "filesystem personality", []string{"ext4", "f2fs", "xfs"}},
	{"f2fs.writepages_mutex", kBool, "true", "f2fs's sbi->writepages mutex (v4.19 commit 853137ce); false is v4.18: concurrent writepages interleave their block allocation, while the flusher still skips inodes and stops after its current page when an fsync is writing (sync-request counter)", nil},
	{"f2fs.writepages_rule", kString, "v4.19", "with f2fs.writepages_mutex: when writepages serializes: v4.19 (WB_SYNC_ALL always, WB_SYNC_NONE unless a sync writer is active) or merged (upstream: WB_SYNC_NONE, or dirty pages >= 512)", []string{"v4.19", "merged"}},
	{"pagecache.limit", kSize, "4g", "page cache size (simulated RAM available to it)", nil},
	{"pagecache.policy", kString, "lru", "eviction: the kernel's two-list LRU (deterministic) or tinylfu (ristretto v2 admission; NOT deterministic)", []string{"lru", "tinylfu"}},
	{"pagecache.read_ahead_kb", kInt, "128", "read_ahead_kb of the device", nil},
	{"writeback.dirty_ratio", kInt, "20", "vm.dirty_ratio (percent of the page cache)", nil},
	{"writeback.dirty_background_ratio", kInt, "10", "vm.dirty_background_ratio", nil},
	{"writeback.dirty_bytes", kSize, "0", "vm.dirty_bytes (overrides the ratio when set)", nil},
	{"writeback.dirty_background_bytes", kSize, "0", "vm.dirty_background_bytes", nil},
	{"writeback.dirty_expire_centisecs", kInt, "3000", "vm.dirty_expire_centisecs", nil},
	{"writeback.dirty_writeback_centisecs", kInt, "500", "vm.dirty_writeback_centisecs", nil},
	{"writeback.bio_max", kSize, "512k", "largest writeback bio", nil},
	{"xfs.buffered_read_lock", kBool, "true", "buffered reads take the iolock (i_rwsem) shared across the read; false is the December 2024 patch (reads rely on folio locks)", nil},
	{"dax", kBool, "false", "mount with -o dax: every file IO is a CPU copy to or from a pmem device (device kind pmem) under the inode locks; no page cache, no block layer (xfs, ext4)", nil},
	{"xfs.i_version", kBool, "false", "every write updates the timestamps (xfs_vn_update_time under the ILOCK exclusive): the i_version counter changes on each write, as on xfs v5 filesystems before 4.16; false updates them once per tick of the coarse clock (host.hz)", nil},
	{"xfs.log_size", kSize, "0", "internal log size (0: mkfs.xfs's default, the filesystem / 2048, at least 64 MiB), at the middle of the device; xfs always has a log: fsync forces it as one PREFLUSH|FUA log write when the inode has changes not on disk (fdatasync: not for times alone), otherwise it flushes the device's cache", nil},
	{"xfs.xfssyncd_centisecs", kInt, "3000", "fs.xfs.xfssyncd_centisecs: the log worker runs this often from the mount and forces what has been logged since the last force", nil},
	{"xfs.alloc_window", kSize, "8m", "delayed allocation: per-file contiguous window (speculative preallocation)", nil},
	{"ext4.alloc_window", kSize, "8m", "delayed allocation: per-file contiguous window (mballoc preallocation)", nil},
	{"ext4.journal", kBool, "true", "the jbd2 journal (mke2fs default; false: -O ^has_journal): writes log the inode's times (once per tick of host.hz), writeback allocations the bitmap, group descriptor and inode blocks; fsync commits the transaction holding the file's last change (descriptor and metadata blocks, then a PREFLUSH|FUA commit block) in a journal at the middle of the device, fdatasync only for size and allocation changes; otherwise it flushes the device's cache", nil},
	{"ext4.journal_size", kSize, "0", "journal size (0: mke2fs's default for the device, 4 MiB to 1 GiB)", nil},
	{"ext4.commit", kDuration, "5s", "commit= mount option: a transaction is committed this long after it starts", nil},
	{"ext4.parallel_dio_reads", kBool, "true", "DIO reads take i_rwsem shared across the IO (v4.9 commit 16c54688)", nil},
	{"ext4.dioread_nolock", kBool, "false", "dioread_nolock mount option (off: a journal commit first waits for the data of the blocks it allocated, data=ordered)", nil},
	{"ext4.iomap_dio", kBool, "false", "5.6+ iomap DIO locking (shared for reads and aligned overwrites)", nil},
	{"device.profile", kString, "p3600", "device profile: an embedded name (testdata/devices/NAME.toml) or a .toml path", nil},
	{"queue.max_sectors_kb", kInt, "0", "request size cap in KiB (0: the device's max_hw_sectors_kb)", nil},
	{"queue.max_hw_sectors_kb", kInt, "0", "the device's request size limit in KiB (0: the profile's); overrides device.max_hw_sectors_kb", nil},
	{"queue.nr_requests", kInt, "0", "requests in flight per hardware queue (0: the device's queue depth)", nil},
	{"queue.max_segments", kInt, "0", "scatter-gather segments per request (0: the device's, else 128)", nil},
	{"queue.max_segment_size", kInt, "0", "largest segment in bytes (0: 65536); segments are single 4 KiB pages here (DIO and page-cache pages are not physically contiguous), so only a value below 4096 (rejected) could bind", nil},
	{"queue.nomerges", kInt, "0", "0: all merges, 1: the elevator tries only its one-hit candidate (plug merges are unchanged), 2: no merges (sysfs nomerges)", nil},
	{"queue.scheduler", kString, "none", "IO scheduler (cfq: the legacy single-queue CFQ of kernels up to 4.20)", []string{"none", "mq-deadline", "cfq"}},
	{"queue.quantum", kInt, "8", "cfq: requests in flight from the served queue", nil},
	{"queue.slice_sync", kDuration, "100ms", "cfq: time slice of a process's sync queue", nil},
	{"queue.slice_async", kDuration, "40ms", "cfq: time slice of the async queue", nil},
	{"queue.low_latency", kBool, "true", "cfq: low_latency mode, which shrinks slices so that the busy queues' slices fit target_latency (not below twice slice_idle)", nil},
	{"queue.target_latency", kDuration, "300ms", "cfq: low_latency's target for serving every busy queue once (0: 300ms)", nil},
	{"queue.slice_idle", kDuration, "auto", "cfq: idle wait for the served process's next sync request (0: no idling; auto: the kernel's default, 8ms on a rotational device and 0 on a non-rotational one, as since 4.12; set 8ms for the flash behaviour of older kernels)", []string{"auto"}},
	{"queue.nr_hw_queues", kInt, "0", "hardware queues (0: the device's, else 1); a task's CPU picks its queue", nil},
	{"queue.read_expire", kDuration, "500ms", "mq-deadline: read FIFO expiry", nil},
	{"queue.write_expire", kDuration, "5s", "mq-deadline: write FIFO expiry", nil},
	{"queue.writes_starved", kInt, "2", "mq-deadline: read batches before writes are served", nil},
	{"queue.fifo_batch", kInt, "16", "mq-deadline: requests per batch", nil},
	{"queue.front_merges", kBool, "true", "mq-deadline: try front merges", nil},
	{"host.profile", kString, "default", "host profile: an embedded name (testdata/hosts/NAME.toml) or a .toml path; host.* keys set in the stack or with --set override its values", nil},
	{"host.cpus", kInt, "16", "simulated CPUs", nil},
	{"host.wake_latency", kDuration, "3us", "from waking a sleeping task to it running", nil},
	{"host.context_switch", kDuration, "1us", "CPU time to switch a task back in after it slept", nil},
	{"host.spin_handoff", kDuration, "150ns", "from a lock's release to a spinning waiter taking it", nil},
	{"host.spin", kDuration, "0", "CPU time of one spin-loop iteration (owner check, cpu_relax); a spinner sees a release at its next iteration (0: at once)", nil},
	{"host.cache_line", kDuration, "0", "cache-line transfer between CPUs: charged to a lock acquisition on a CPU other than the previous owner's", nil},
	{"host.wake_step", kDuration, "0", "waker CPU time per extra reader in an rwsem batch wake (try_to_wake_up + IPI, one after another); the k-th reader runs k steps later", nil},
	{"host.syscall", kDuration, "2us", "CPU time of a read/write syscall outside the filesystem: entry and exit (with the 2018+ speculation mitigations), VFS checks, fsnotify", nil},
	{"host.dio_setup", kDuration, "1500ns", "direct-IO setup CPU time (checks, mapping, bio submission)", nil},
	{"host.dio_per_page", kDuration, "40ns", "direct-IO CPU time per 4 KiB page (pinning, bio_add_page)", nil},
	{"host.bio_submit", kDuration, "2us", "CPU time to submit one bio to the driver (block layer, queue_rq, doorbell)", nil},
	{"host.dio_complete", kDuration, "500ns", "direct-IO completion CPU time after the bios end", nil},
	{"host.copy_per_kib", kDuration, "175ns", "CPU time to copy 1 KiB between user memory and the page cache", nil},
	{"host.copy_per_page", kDuration, "700ns", "CPU time to copy one 4 KiB page between user memory and the page cache; when set, wins over 4 x host.copy_per_kib", nil},
	{"host.pagecache_lookup", kDuration, "0", "CPU time to find or insert one page in the page cache (buffered read and write)", nil},
	{"host.dirty_page", kDuration, "300ns", "CPU time to dirty a page (accounting, tags)", nil},
	{"host.write_checks", kDuration, "0", "buffered write CPU time per call under the inode lock before the copy (write checks, timestamp update, block mapping: xfs_file_write_checks, iomap_begin/end)", nil},
	{"host.update_time", kDuration, "3us", "DAX paths: CPU time of a timestamp update (xfs: a transaction logging the inode, under the ILOCK exclusive)", nil},
	{"host.block_map", kDuration, "300ns", "DAX paths: CPU time of mapping an IO's blocks (extent lookup; xfs: under the ILOCK shared)", nil},
	{"host.hz", kInt, "250", "timer ticks per second: the coarse clock that file timestamps follow (CONFIG_HZ)", nil},
	{"host.write_folio", kDuration, "0", "buffered write CPU time per page before its copy, beyond the lookup: write_begin/write_end (folio lock and reference, uptodate and dirty bookkeeping, dirty ratelimit); readers have no such work", nil},
	{"host.write_page", kDuration, "1us", "writepages CPU time per page (lock, clear dirty, allocate, add to bio)", nil},
	{"host.app_per_io", kDuration, "1500ns", "CPU time of the application (fio's io_u bookkeeping, offset generation, latency accounting) between two IOs", nil},
	{"rwsem.writer_spin", kBool, "true", "writers spin while a running writer owns an rwsem", nil},
	{"rwsem.reader_spin", kBool, "false", "readers spin while a running writer owns an rwsem (2016 RFC)", nil},
	{"rwsem.handoff_timeout", kDuration, "4ms", "first-waiter wait after which lock stealing stops (0: never)", nil},
	{"rwsem.wake_any_readers", kBool, "false", "wake up to 256 readers from anywhere in the queue (5.3+)", nil},
	{"integrity.check", kBool, "true", "atomicity oracle: count torn and stale reads from the data stamps on every file that jobs both read and write (costs up to ~25% of simulation speed on 4k random IO; does not change the simulated run)", nil},
	{"rwsem.writer_spin_readers", kDuration, "0", "a spinning writer also spins on a lock owned by readers for at most this long (0: never, 4.8-5.2; 5.3+ spins 10-25us; 4.7 and the 2016 reader-spinning RFC's base spun a few us while the owner field was empty)", nil},
	{"rwsem.spin_limit", kDuration, "0", "longest optimistic spin before a spinner sleeps (0: until the owner sleeps)", nil},
	{"fault.op", kString, "none", "fault injection: fail device requests in this direction (read, write or any; none: off). The device is wrapped in blockdev.FaultDevice between the queue and the device model; a failed request never reaches the device (a failed write stores nothing) and completes with fault.errno; it shows in blktrace completions with the errno and counts in the disk stats", []string{"none", "read", "write", "any"}},
	{"fault.sectors", kString, "all", "fault injection: only requests overlapping START-END, the half-open range [START, END) in 512-byte sectors, or in bytes with a size suffix (1m-2m); all: anywhere", nil},
	{"fault.after", kInt, "0", "fault injection: let the first N matching requests (direction and range) through", nil},
	{"fault.every", kInt, "1", "fault injection: after fault.after, fail every Nth matching request (1: each one)", nil},
	{"fault.probability", kString, "1", "fault injection: fail each request chosen by the keys above with this probability (0 to 1), drawn from the engine's seeded random source: the same --seed gives the same faults", nil},
	{"fault.count", kInt, "0", "fault injection: fail at most N requests (0: no limit)", nil},
	{"fault.errno", kString, "EIO", "fault injection: the error of a failed request: EIO (a failed command), ENOSPC (a thin-provisioned device out of space) or ETIMEDOUT (a command timeout); the syscall or fsync that sees it returns it", []string{"EIO", "ENOSPC", "ETIMEDOUT"}},
	{"fault.latency", kDuration, "0", "fault injection: how long a failed request takes to complete (0: at once)", nil},
	{"wall.spin", kDuration, "100us", "real device runs (--device): how close to an event's time the wall clock stops sleeping and polls (timers overshoot by tens of microseconds; polling burns a CPU but is exact); ignored by simulated runs", nil},
	{"wall.idle_spin_inflight", kInt, "1048576", "real device runs (--device): the wall clock polls while idle (wall.idle_spin) only when at most this many IOs are in flight, else it sleeps at once and leaves the CPU to the kernel's completion work (measured on 2 CPUs with the reaper goroutine, blockdev/realdev/FIO.md: 1 lifted io_uring iodepth=32 by ~15% and slowed 8 psync jobs by ~25%); ignored by simulated runs", nil},
	{"wall.reaper", kBool, "false", "real device runs (--device): collect completions on a reaper goroutine that posts them to the engine, instead of the engine waiting for them in io_uring_enter itself (the default where the kernel supports a timeout there, 5.11+); ignored by simulated runs", nil},
	{"wall.idle_spin", kDuration, "200us", "real device runs (--device): how long the wall clock polls for completions (on the io_uring completion ring when the engine reaps), with no event due, before it sleeps until one arrives (0: sleep at once); ignored by simulated runs", nil},
}

// patternKeys document the key families whose names hold a variable part.
var patternKeys = []KeyDoc{
	{"rwsem.<class>.reader_spin", "(rwsem.reader_spin)", "rwsem.reader_spin for the rwsems of one lock class (the part of a lock's name after the filesystem, e.g. i_rwsem)"},
	{"rwsem.<class>.writer_spin", "(rwsem.writer_spin)", "rwsem.writer_spin for one lock class"},
}

// PatternKeys documents the stack keys with a variable part (per lock
// class). device.<key> is documented with the device profiles.
func PatternKeys() []KeyDoc { return append([]KeyDoc(nil), patternKeys...) }

// classKey splits "rwsem.CLASS.reader_spin" (or writer_spin) into its
// class and option; ok is false for any other key.
func classKey(key string) (class, opt string, ok bool) {
	rest, found := strings.CutPrefix(key, "rwsem.")
	if !found {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return "", "", false
	}
	class, opt = rest[:i], rest[i+1:]
	if opt != "reader_spin" && opt != "writer_spin" {
		return "", "", false
	}
	for _, r := range class {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return "", "", false
		}
	}
	return class, opt, true
}

func lookupKey(name string) (*keyDef, bool) {
	for i := range keyDefs {
		if keyDefs[i].name == name {
			return &keyDefs[i], true
		}
	}
	return nil, false
}

// KeyDoc is one key's name, default and description, for help output.
type KeyDoc struct {
	Name, Default, Doc string
}

// Keys documents every stack key (device keys come from the profile).
func Keys() []KeyDoc {
	out := make([]KeyDoc, len(keyDefs))
	for i, k := range keyDefs {
		out[i] = KeyDoc{k.name, k.def, k.doc}
	}
	return out
}

// Config is a stack's keys and values. The zero value is not usable; start
// from Default or Load.
type Config struct {
	vals  map[string]string
	where map[string]string
	// dir resolves relative device and host profile paths.
	dir string
	// host holds the host profile's values by stack key ("host.cpus");
	// they stand for every host.* key still at its default.
	host map[string]profileValue
	// real, if set, is the real target Build opens instead of the
	// profile's model (SetRealDevice, realdev.go).
	real *realTarget
}

// profileValue is a value from a host profile and where it was read.
type profileValue struct{ text, where string }

// Default returns the default stack: ext4 on kernel 5.2 with default mount
// options on the P3600 profile.
func Default() *Config {
	c := &Config{vals: make(map[string]string), where: make(map[string]string)}
	for _, k := range keyDefs {
		c.vals[k.name] = k.def
		c.where[k.name] = "default"
	}
	return c
}

// Load reads a stack file over the defaults.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	c := Default()
	c.dir = filepath.Dir(path)
	if err := c.merge(path, data); err != nil {
		return nil, err
	}
	return c, nil
}

// Parse reads stack file data (named name in errors) over the defaults;
// relative profile paths resolve against dir.
func Parse(name string, data []byte, dir string) (*Config, error) {
	c := Default()
	c.dir = dir
	if err := c.merge(name, data); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Config) merge(name string, data []byte) error {
	kv, err := tomlkv.Parse(name, data)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return kv[keys[i]].Line < kv[keys[j]].Line || kv[keys[i]].Line == kv[keys[j]].Line && keys[i] < keys[j]
	})
	for _, k := range keys {
		v := kv[k]
		if err := c.Set(k, v.Text, fmt.Sprintf("%s:%d", name, v.Line)); err != nil {
			return err
		}
	}
	return nil
}

// Set assigns key = value, checking the key exists and the value has its
// type; where ("file:line" or "--set") is kept for later errors. A where
// that starts with "--" ("--set KEY", compare's "--variant NAME" and
// "--sweep KEY") is a command-line option: a profile path it gives is
// relative to the working directory; any other where's is relative to the
// stack file's directory.
func (c *Config) Set(key, value, where string) error {
	if _, _, ok := classKey(key); ok {
		if _, err := units.ParseBool(value); err != nil {
			return fmt.Errorf("%s: %w: key %q: %v", where, ErrConfig, key, err)
		}
		c.vals[key] = value
		c.where[key] = where
		return nil
	}
	if strings.HasPrefix(key, "device.") && key != "device.profile" {
		if len(key) == len("device.") {
			return fmt.Errorf("%s: %w: empty device key", where, ErrConfig)
		}
		c.vals[key] = value
		c.where[key] = where
		return nil
	}
	def, ok := lookupKey(key)
	if !ok {
		return fmt.Errorf("%s: %w: unknown key %q (see 'blksim keys')", where, ErrConfig, key)
	}
	if err := checkValue(def, value); err != nil {
		return fmt.Errorf("%s: %w: key %q: %v", where, ErrConfig, key, err)
	}
	if key == "host.profile" {
		host, err := c.loadHostProfile(value, where)
		if err != nil {
			return err
		}
		c.host = host
	}
	c.vals[key] = value
	c.where[key] = where
	return nil
}

// fromCommandLine reports whether where (as given to Set) is a
// command-line option rather than a file.
func fromCommandLine(where string) bool { return strings.HasPrefix(where, "--") }

// SetArg applies a "KEY=VALUE" command-line override.
func (c *Config) SetArg(arg string) error {
	k, v, ok := strings.Cut(arg, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("--set %s: %w: want KEY=VALUE", arg, ErrConfig)
	}
	return c.Set(strings.TrimSpace(k), strings.TrimSpace(v), "--set "+strings.TrimSpace(k))
}

// intMin holds the integer keys whose smallest value is above 0.
var intMin = map[string]int64{"host.cpus": 1, "fault.every": 1}

// intMax holds the integer keys whose largest value is above 1<<20 (the
// rest's).
var intMax = map[string]int64{"fault.after": 1 << 62, "fault.every": 1 << 62, "fault.count": 1 << 62}

// checks hold the keys whose values need more than their kind's check.
var checks = map[string]func(string) error{
	"fault.sectors": func(v string) error {
		_, _, err := blockdev.ParseSectorRange(v)
		return err
	},
	"fault.probability": func(v string) error {
		p, err := units.ParseFloat(v)
		if err == nil && p > 1 {
			err = fmt.Errorf("%q is not a probability (0 to 1)", v)
		}
		return err
	},
}

func checkValue(def *keyDef, v string) error {
	var err error
	switch def.kind {
	case kBool:
		_, err = units.ParseBool(v)
	case kInt:
		_, err = units.ParseInt(v, intMin[def.name], intMaxOf(def.name))
	case kSize:
		_, err = units.ParseSize(v)
	case kDuration:
		if def.enum != nil && contains(def.enum, v) {
			break // a word the key allows besides durations
		}
		if _, err = units.ParseDuration(v); err != nil && def.enum != nil {
			err = fmt.Errorf("%w, nor one of %s", err, strings.Join(def.enum, ", "))
		}
	case kString:
		if def.enum != nil && !contains(def.enum, v) {
			err = fmt.Errorf("%q is not one of %s", v, strings.Join(def.enum, ", "))
		}
	}
	if check := checks[def.name]; err == nil && check != nil {
		err = check(v)
	}
	return err
}

func intMaxOf(key string) int64 {
	if m, ok := intMax[key]; ok {
		return m
	}
	return 1 << 20
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// Get returns a key's value ("" if unset). A host.* key left at its
// default has the host profile's value, if the profile sets it.
func (c *Config) Get(key string) string {
	if p, ok := c.fromProfile(key); ok {
		return p.text
	}
	return c.vals[key]
}

// Where returns where a key was set: "default", "file:line" (of the stack
// file or of the host profile) or "--set KEY".
func (c *Config) Where(key string) string {
	if p, ok := c.fromProfile(key); ok {
		return p.where
	}
	return c.where[key]
}

// fromProfile returns the host profile's value of key when key is at its
// default and the profile sets it.
func (c *Config) fromProfile(key string) (profileValue, bool) {
	if c.host == nil || c.where[key] != "default" {
		return profileValue{}, false
	}
	p, ok := c.host[key]
	return p, ok
}

// Clone returns an independent copy.
func (c *Config) Clone() *Config {
	n := &Config{vals: make(map[string]string, len(c.vals)), where: make(map[string]string, len(c.where)), dir: c.dir, host: c.host, real: c.real}
	for k, v := range c.vals {
		n.vals[k] = v
	}
	for k, v := range c.where {
		n.where[k] = v
	}
	return n
}

// Sorted returns every key=value pair, sorted by key.
func (c *Config) Sorted() [][2]string {
	out := make([][2]string, 0, len(c.vals))
	for k := range c.vals {
		out = append(out, [2]string{k, c.Get(k)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// The typed getters below are used after validation; a parse failure
// there would be a bug in Set, so they fall back to the zero value.

func (c *Config) boolean(key string) bool { b, _ := units.ParseBool(c.Get(key)); return b }
func (c *Config) integer(key string) int {
	n, _ := units.ParseInt(c.Get(key), 0, 1<<20)
	return int(n)
}
func (c *Config) integer64(key string) int64 {
	n, _ := units.ParseInt(c.Get(key), 0, intMaxOf(key))
	return n
}
func (c *Config) size(key string) int64 {
	n, _ := units.ParseSize(c.Get(key))
	return n
}
func (c *Config) duration(key string) time.Duration {
	d, _ := units.ParseDuration(c.Get(key))
	return d
}

package stack

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/blksim/blksim"
	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/blockdev/realdev"
	"github.com/blksim/blksim/fsmodel"
	"github.com/blksim/blksim/internal/tomlkv"
	"github.com/blksim/blksim/internal/units"
	"github.com/blksim/blksim/pagecache"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/sim/wallclock"
	"github.com/blksim/blksim/writeback"
)

// Stack is a built stack: the engine and every layer on it.
type Stack struct {
	Engine *sim.Engine
	Device blockdev.Device
	Queue  *blockdev.Queue
	FS     *fsmodel.FS
	Config *Config
	// Costs are the CPU costs of the filesystem paths.
	Costs fsmodel.Costs
	// AppPerIO is the application's CPU time between two IOs.
	AppPerIO time.Duration
	// Wall and Real are set when the stack runs on a real device
	// (Config.SetRealDevice): the engine's wall clock and the device.
	Wall *wallclock.Clock
	Real *realdev.Device
	// IntegrityCheck is the key integrity.check: whether runs on this
	// stack use the atomicity oracle (workload.RunOptions.NoIntegrity is
	// its negation).
	IntegrityCheck bool
}

// Close stops the writeback flusher, every task and the page cache's
// helpers, and closes a real device. It returns the first error of
// closing the filesystem, the engine (the run's first panic, as
// sim.Engine.Close returns it) and the real device, else nil. It is
// idempotent.
func (s *Stack) Close() error {
	err := s.FS.Close()
	if e := s.Engine.Close(); err == nil {
		err = e
	}
	if c := s.FS.Cache(); c != nil {
		c.Close()
	}
	if s.Real != nil {
		if e := s.Real.Close(); err == nil {
			err = e
		}
	}
	return err
}

// Build creates an engine seeded with seed and the stack c describes.
func Build(c *Config, seed uint64) (_ *Stack, err error) {
	host, err := c.hostOf()
	if err != nil {
		return nil, err
	}
	lockOpt, lockClasses := c.lockOptions()
	var wall *wallclock.Clock
	var real *realdev.Device
	opt := sim.Options{Seed: seed, Host: host, LockClasses: lockClasses}
	if c.real != nil {
		wall = c.NewWallClock()
		opt.Clock = wall
	}
	e := sim.New(opt)
	var dev blockdev.Device
	if c.real != nil {
		real, err = c.openReal(e, wall)
		dev = real
	} else {
		dev, err = c.buildDevice(e)
	}
	if err != nil {
		return nil, err
	}
	if real != nil {
		defer func() {
			if err != nil {
				real.Close()
			}
		}()
	}
	if c.Get("fault.op") != "none" {
		if c.boolean("dax") {
			return nil, fmt.Errorf("%s: %w: key \"fault.op\": a DAX mount has no block layer to inject faults into (key \"dax\" at %s)", c.Where("fault.op"), ErrConfig, c.Where("dax"))
		}
		dev = c.faultSpec().Wrap(e, dev)
	}
	if c.integer("queue.nomerges") > 2 {
		return nil, fmt.Errorf("%s: %w: key \"queue.nomerges\" must be 0, 1 or 2", c.Where("queue.nomerges"), ErrConfig)
	}
	q, err := blockdev.NewQueue(e, dev, blockdev.QueueOptions{
		MaxSectorsKB:   c.integer("queue.max_sectors_kb"),
		NrRequests:     c.integer("queue.nr_requests"),
		MaxSegments:    c.integer("queue.max_segments"),
		MaxSegmentSize: c.integer("queue.max_segment_size"),
		NoMerges:       c.integer("queue.nomerges"),
		Scheduler:      c.Get("queue.scheduler"),
		HWQueues:       c.integer("queue.nr_hw_queues"),
		Deadline: blockdev.DeadlineOptions{
			ReadExpire:    c.duration("queue.read_expire"),
			WriteExpire:   c.duration("queue.write_expire"),
			WritesStarved: c.integer("queue.writes_starved"),
			FifoBatch:     c.integer("queue.fifo_batch"),
			NoFrontMerges: !c.boolean("queue.front_merges"),
		},
		CFQ: blockdev.CFQOptions{
			Quantum:    c.integer("queue.quantum"),
			SliceSync:  c.duration("queue.slice_sync"),
			SliceAsync: c.duration("queue.slice_async"),
			SliceIdle:  c.cfqIdle(),

			TargetLatency: c.duration("queue.target_latency"),
			NoLowLatency:  !c.boolean("queue.low_latency"),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	costs := fsmodel.Costs{
		Syscall:         c.duration("host.syscall"),
		DIOSetup:        c.duration("host.dio_setup"),
		DIOPerPage:      c.duration("host.dio_per_page"),
		DIOComplete:     c.duration("host.dio_complete"),
		BioSubmit:       c.duration("host.bio_submit"),
		PageCacheLookup: c.duration("host.pagecache_lookup"),
	}
	var policy fsmodel.LockPolicy
	switch c.Get("fs") {
	case "ext4":
		policy = fsmodel.Ext4{
			ParallelDIOReads: c.boolean("ext4.parallel_dio_reads"),
			DioreadNolock:    c.boolean("ext4.dioread_nolock"),
			IomapDIO:         c.boolean("ext4.iomap_dio"),
		}
	case "f2fs":
		policy = fsmodel.F2FS{}
	case "xfs":
		policy = fsmodel.XFS{}
	default:
		return nil, fmt.Errorf("%s: %w: unknown fs %q", c.Where("fs"), ErrConfig, c.Get("fs"))
	}
	journal, err := c.journal()
	if err != nil {
		return nil, err
	}
	fsys, err := fsmodel.New(e, q, fsmodel.Options{Policy: policy, Lock: lockOpt, Costs: costs, Name: c.Get("fs"), Journal: journal})
	if err != nil {
		return nil, err
	}
	if err := c.enableBuffered(fsys); err != nil {
		return nil, err
	}
	if c.boolean("dax") {
		if err := c.enableDAX(fsys); err != nil {
			fsys.Close()
			return nil, err
		}
	}
	return &Stack{Engine: e, Device: dev, Queue: q, FS: fsys, Config: c, Costs: costs,
		AppPerIO: c.duration("host.app_per_io"), Wall: wall, Real: real,
		IntegrityCheck: c.boolean("integrity.check")}, nil
}

// buildDevice loads the profile and applies device.* overrides.
func (c *Config) buildDevice(e *sim.Engine) (blockdev.Device, error) {
	name := c.Get("device.profile")
	var data []byte
	var err error
	src := name
	if strings.HasSuffix(name, ".toml") || strings.ContainsRune(name, os.PathSeparator) {
		path := name
		// Fix (tests): only a path written in the stack file is relative to
		// the file's directory; a --set (or compare --variant/--sweep) path
		// is relative to the working directory, as every other
		// command-line path.
		if !filepath.IsAbs(path) && c.dir != "" && !fromCommandLine(c.Where("device.profile")) {
			path = filepath.Join(c.dir, path)
		}
		src = path
		data, err = os.ReadFile(path)
	} else {
		src = "testdata/devices/" + name + ".toml"
		data, err = fs.ReadFile(blksim.Testdata, src)
		if err != nil {
			err = fmt.Errorf("no embedded device profile %q (have: %s)", name, strings.Join(EmbeddedProfiles(), ", "))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: device.profile: %v", c.Where("device.profile"), ErrConfig, err)
	}
	kv, err := tomlkv.Parse(src, data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	vals := make(map[string]blockdev.ProfileValue, len(kv))
	for k, v := range kv {
		vals[k] = blockdev.ProfileValue{Text: v.Text, Where: fmt.Sprintf("%s:%d", src, v.Line)}
	}
	for k, v := range c.vals {
		if dk, ok := strings.CutPrefix(k, "device."); ok && k != "device.profile" {
			vals[dk] = blockdev.ProfileValue{Text: v, Where: c.where[k], Override: true}
		}
	}
	if kb := c.Get("queue.max_hw_sectors_kb"); kb != "" && kb != "0" {
		vals["max_hw_sectors_kb"] = blockdev.ProfileValue{Text: kb, Where: c.where["queue.max_hw_sectors_kb"], Override: true}
	}
	dev, err := blockdev.NewFromProfile(e, vals)
	if err != nil {
		if _, ok := vals["kind"]; !ok {
			// No key to name: name the profile (not a device profile at
			// all, perhaps a host profile).
			return nil, fmt.Errorf("%s: %w: %v", src, ErrConfig, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return dev, nil
}

// EmbeddedProfiles lists the device profiles built into the binary.
func EmbeddedProfiles() []string {
	ents, _ := fs.ReadDir(blksim.Testdata, "testdata/devices")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".toml"); ok {
			out = append(out, n)
		}
	}
	return out
}

// journal returns the filesystem's journal options: ext4's jbd2 unless
// ext4.journal is off, xfs's log; none on f2fs and on a DAX mount (not
// modelled there).
func (c *Config) journal() (fsmodel.JournalOptions, error) {
	var o fsmodel.JournalOptions
	if c.boolean("dax") {
		return o, nil
	}
	hz := c.integer("host.hz")
	if hz <= 0 {
		return o, fmt.Errorf("%s: %w: key \"host.hz\" must be positive", c.Where("host.hz"), ErrConfig)
	}
	o.Tick = time.Second / time.Duration(hz)
	switch c.Get("fs") {
	case "ext4":
		if !c.boolean("ext4.journal") {
			return o, nil
		}
		o.Kind, o.Bytes, o.Interval = fsmodel.JBD2, c.size("ext4.journal_size"), c.duration("ext4.commit")
		o.Ordered = !c.boolean("ext4.dioread_nolock")
		if o.Interval <= 0 {
			return o, fmt.Errorf("%s: %w: key \"ext4.commit\" must be positive", c.Where("ext4.commit"), ErrConfig)
		}
	case "xfs":
		cs := c.integer("xfs.xfssyncd_centisecs")
		if cs <= 0 {
			return o, fmt.Errorf("%s: %w: key \"xfs.xfssyncd_centisecs\" must be positive", c.Where("xfs.xfssyncd_centisecs"), ErrConfig)
		}
		o.Kind, o.Bytes, o.Interval = fsmodel.XFSLog, c.size("xfs.log_size"), time.Duration(cs)*10*time.Millisecond
	}
	return o, nil
}

// enableBuffered gives the filesystem its page cache and writeback.
func (c *Config) enableBuffered(fsys *fsmodel.FS) error {
	limit := c.size("pagecache.limit") / 4096
	if limit < 64 {
		return fmt.Errorf("%s: %w: key \"pagecache.limit\" must be at least 256k", c.Where("pagecache.limit"), ErrConfig)
	}
	cache, err := pagecache.New(pagecache.Options{LimitPages: int(limit), Policy: c.Get("pagecache.policy")})
	if err != nil {
		return fmt.Errorf("%s: %w: %v", c.Where("pagecache.policy"), ErrConfig, err)
	}
	lim := writeback.Limits{
		DirtyRatio:           c.integer("writeback.dirty_ratio"),
		DirtyBackgroundRatio: c.integer("writeback.dirty_background_ratio"),
		DirtyBytes:           c.size("writeback.dirty_bytes"),
		DirtyBackgroundBytes: c.size("writeback.dirty_background_bytes"),
		DirtyExpire:          time.Duration(c.integer("writeback.dirty_expire_centisecs")) * 10 * time.Millisecond,
		DirtyWriteback:       time.Duration(c.integer("writeback.dirty_writeback_centisecs")) * 10 * time.Millisecond,
	}
	if err := lim.Validate(); err != nil {
		cache.Close()
		return fmt.Errorf("%w: writeback: %v", ErrConfig, err)
	}
	pol := writeback.Default{}
	opt := fsmodel.BufferedOptions{
		Cache: cache, Limits: lim, AvailablePages: limit,
		AllocWindow: c.size("ext4.alloc_window"), BioMax: c.size("writeback.bio_max"),
		ReadaheadKB: int64(c.integer("pagecache.read_ahead_kb")),
		CopyPerPage: c.copyPerPage(), DirtyPage: c.duration("host.dirty_page"),
		WritePage: c.duration("host.write_page"), WriteChecks: c.duration("host.write_checks"),
		WriteFolio: c.duration("host.write_folio"),
	}
	if c.Get("fs") == "xfs" {
		opt.AllocWindow = c.size("xfs.alloc_window")
		opt.ReadLockShared = c.boolean("xfs.buffered_read_lock")
	}
	if c.Get("fs") == "f2fs" {
		opt.Alloc = fsmodel.AllocLog
		opt.WritepagesMutex = c.boolean("f2fs.writepages_mutex")
		rule := writeback.F2FSv419
		if c.Get("f2fs.writepages_rule") == "merged" {
			rule = writeback.F2FSMerged
		}
		// The sync-request skip and yield (v4.18, "avoid IO split due
		// to mixed WB_SYNC_ALL and WB_SYNC_NONE") predate the mutex, so
		// without the mutex the rule is v4.18's.
		if !opt.WritepagesMutex {
			rule = writeback.F2FSv418
		}
		pol.Serializer = writeback.F2FSSerialize{Rule: rule}
	}
	opt.Policy = pol
	if err := fsys.EnableBuffered(opt); err != nil {
		cache.Close()
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return nil
}

// enableDAX mounts the filesystem with DAX.
func (c *Config) enableDAX(fsys *fsmodel.FS) error {
	if c.real != nil {
		return fmt.Errorf("%s: %w: key \"dax\": a real device has no DAX path in blksim", c.Where("dax"), ErrConfig)
	}
	hz := c.integer("host.hz")
	if hz <= 0 {
		return fmt.Errorf("%s: %w: key \"host.hz\" must be positive", c.Where("host.hz"), ErrConfig)
	}
	err := fsys.EnableDAX(fsmodel.DAXOptions{
		BlockMap:    c.duration("host.block_map"),
		WriteChecks: c.duration("host.write_checks"),
		UpdateTime:  c.duration("host.update_time"),
		IVersion:    c.Get("fs") == "xfs" && c.boolean("xfs.i_version"),
		Tick:        time.Second / time.Duration(hz),
	})
	if err != nil {
		return fmt.Errorf("%s: %w: key \"dax\": %v (device.profile %q)", c.Where("dax"), ErrConfig, err, c.Get("device.profile"))
	}
	return nil
}

// cfqIdle is queue.slice_idle as CFQOptions.SliceIdle: auto is the
// scheduler's default (0), and 0 (no idling) is "disabled" (-1).
func (c *Config) cfqIdle() time.Duration {
	if c.Get("queue.slice_idle") == "auto" {
		return 0
	}
	if d := c.duration("queue.slice_idle"); d != 0 {
		return d
	}
	return -1
}

// faultSpec is the fault.* keys (validated by Set) as a FaultSpec.
func (c *Config) faultSpec() blockdev.FaultSpec {
	s := blockdev.FaultSpec{
		After: c.integer64("fault.after"), Every: c.integer64("fault.every"),
		Count: c.integer64("fault.count"), Errno: blockdev.FaultErrnos[c.Get("fault.errno")],
		Latency: c.duration("fault.latency"),
	}
	switch c.Get("fault.op") {
	case "read":
		s.Op = blockdev.OpRead
	case "write":
		s.Op = blockdev.OpWrite
	default:
		s.Any = true
	}
	s.Start, s.End, _ = blockdev.ParseSectorRange(c.Get("fault.sectors"))
	s.Probability, _ = units.ParseFloat(c.Get("fault.probability"))
	return s
}

package blockdev

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/blksim/blksim/internal/units"
	"github.com/blksim/blksim/sim"
)

// ErrProfile is wrapped by every error about a device profile.
var ErrProfile = errors.New("bad device profile")

// ProfileValue is one profile key's text and where it was set (for
// errors: "p3600.toml:12" or "--set").
type ProfileValue struct {
	Text  string
	Where string
	// Override marks a value set over the profile (a stack file's or the
	// command line's device.<key>) rather than in it. A key that only
	// matters with a feature on is then left unused, not an error, when
	// an override turns the feature off: --set device.write_cache=false
	// works on a profile that sizes its write cache.
	Override bool
}

// profileKey is one settable parameter of a device kind.
type profileKey[P any] struct {
	doc string
	set func(p *P, v string) error
}

func sizeKey[P any](doc string, f func(*P) *int64) profileKey[P] {
	return profileKey[P]{doc, func(p *P, v string) error {
		n, err := units.ParseSize(v)
		*f(p) = n
		return err
	}}
}

func intKey[P any](doc string, f func(*P) *int) profileKey[P] {
	return profileKey[P]{doc, func(p *P, v string) error {
		n, err := units.ParseInt(v, 0, 1<<30)
		*f(p) = int(n)
		return err
	}}
}

func durKey[P any](doc string, f func(*P) *time.Duration) profileKey[P] {
	return profileKey[P]{doc, func(p *P, v string) error {
		d, err := units.ParseDuration(v)
		*f(p) = d
		return err
	}}
}

func floatKey[P any](doc string, f func(*P) *float64) profileKey[P] {
	return profileKey[P]{doc, func(p *P, v string) error {
		x, err := units.ParseFloat(v)
		*f(p) = x
		return err
	}}
}

func strKey[P any](doc string, f func(*P) *string) profileKey[P] {
	return profileKey[P]{doc, func(p *P, v string) error {
		*f(p) = v
		return nil
	}}
}

func boolKey[P any](doc string, f func(*P) *bool) profileKey[P] {
	return profileKey[P]{doc, func(p *P, v string) error {
		b, err := units.ParseBool(v)
		*f(p) = b
		return err
	}}
}

// flashKeys are the keys of the NAND flash kinds (nvme, ufs, sata-ssd).
var flashKeys = map[string]profileKey[NVMeParams]{
	"name":               strKey("kernel device name (nvme: nvme0n1; ufs, sata-ssd: sda)", func(p *NVMeParams) *string { return &p.Name }),
	"capacity":           sizeKey("size in bytes (k/m/g/t suffixes, binary)", func(p *NVMeParams) *int64 { return &p.Capacity }),
	"logical_block_size": intKey("logical block size in bytes, 512 or 4096 (nvme, sata-ssd: 512; ufs: 4096)", func(p *NVMeParams) *int { return &p.LogicalBlockSize }),
	"max_hw_sectors_kb":  intKey("largest request in KiB (nvme: 128, the controller's MDTS; ufs, sata-ssd: 512)", func(p *NVMeParams) *int { return &p.MaxHWSectorsKB }),
	"queue_depth":        intKey("requests the device holds at once (nvme: 1023, at most 65535; ufs, sata-ssd: 32, at most 32)", func(p *NVMeParams) *int { return &p.QueueDepth }),
	"channels":           intKey("NAND channels", func(p *NVMeParams) *int { return &p.Channels }),
	"dies_per_channel":   intKey("NAND dies per channel", func(p *NVMeParams) *int { return &p.DiesPerChannel }),
	"page_size":          sizeKey("NAND page size (read unit)", func(p *NVMeParams) *int64 { return &p.PageSize }),
	"planes":             intKey("planes programmed together", func(p *NVMeParams) *int { return &p.Planes }),
	"read_time":          durKey("NAND page read time tR", func(p *NVMeParams) *time.Duration { return &p.ReadTime }),
	"program_time":       durKey("NAND multi-plane program time tPROG", func(p *NVMeParams) *time.Duration { return &p.ProgramTime }),
	"channel_mbps":       floatKey("NAND channel rate, MB/s", func(p *NVMeParams) *float64 { return &p.ChannelMBps }),
	"host_mbps":          floatKey("host link rate, MB/s (nvme: 3200; ufs: 1050; sata-ssd: 550, at most 600)", func(p *NVMeParams) *float64 { return &p.HostMBps }),
	"read_overhead":      durKey("controller latency per read command", func(p *NVMeParams) *time.Duration { return &p.ReadOverhead }),
	"write_overhead":     durKey("controller latency per write command", func(p *NVMeParams) *time.Duration { return &p.WriteOverhead }),
	"command_time":       durKey("controller time per command, one command at a time (0: none)", func(p *NVMeParams) *time.Duration { return &p.CommandTime }),
	"write_buffer":       sizeKey("DRAM write buffer size", func(p *NVMeParams) *int64 { return &p.WriteBuffer }),
	"stream_min":         sizeKey("writes this large bypass the buffer", func(p *NVMeParams) *int64 { return &p.StreamMin }),
	"program_queue":      intKey("cap on programs issued to one die (0: none)", func(p *NVMeParams) *int { return &p.ProgramQueue }),
	"volatile_cache":     boolKey("the write buffer is volatile (no power-loss protection): cache flushes wait for it (false)", func(p *NVMeParams) *bool { return &p.VolatileCache }),
}

var hddKeys = map[string]profileKey[HDDParams]{
	"name":               strKey("kernel device name (sda)", func(p *HDDParams) *string { return &p.Name }),
	"capacity":           sizeKey("size in bytes", func(p *HDDParams) *int64 { return &p.Capacity }),
	"logical_block_size": intKey("logical block size in bytes, 512 (default) or 4096", func(p *HDDParams) *int { return &p.LogicalBlockSize }),
	"max_hw_sectors_kb":  intKey("largest request in KiB (512)", func(p *HDDParams) *int { return &p.MaxHWSectorsKB }),
	"queue_depth":        intKey("requests the drive holds at once (32 with ncq, at most 32; 1 without)", func(p *HDDParams) *int { return &p.QueueDepth }),
	"rpm":                intKey("spindle speed, revolutions per minute", func(p *HDDParams) *int { return &p.RPM }),
	"track_to_track":     durKey("seek to the adjacent track (and track switch)", func(p *HDDParams) *time.Duration { return &p.TrackToTrack }),
	"average_seek":       durKey("mean seek between random positions", func(p *HDDParams) *time.Duration { return &p.AverageSeek }),
	"full_stroke":        durKey("seek across the whole stroke", func(p *HDDParams) *time.Duration { return &p.FullStroke }),
	"outer_mbps":         floatKey("media rate at the first LBA (outer tracks), MB/s", func(p *HDDParams) *float64 { return &p.OuterMBps }),
	"inner_mbps":         floatKey("media rate at the last LBA (inner tracks), MB/s", func(p *HDDParams) *float64 { return &p.InnerMBps }),
	"ncq":                boolKey("reorder queued work shortest-positioning-time-first (true) or serve it in arrival order", func(p *HDDParams) *bool { return &p.NCQ }),
	"write_cache":        boolKey("complete writes once in the drive's cache and destage them later (true)", func(p *HDDParams) *bool { return &p.WriteCache }),
	"write_cache_size":   sizeKey("dirty data the write cache holds (8m)", func(p *HDDParams) *int64 { return &p.WriteCacheSize }),
	"readahead":          sizeKey("how far the head reads ahead after a read, into the read cache (1m; 0: no read cache)", func(p *HDDParams) *int64 { return &p.Readahead }),
	"cache_segments":     intKey("read cache segments (16)", func(p *HDDParams) *int { return &p.CacheSegments }),
	"command_overhead":   durKey("drive latency per command before it is queued (0)", func(p *HDDParams) *time.Duration { return &p.CommandOverhead }),
	"host_mbps":          floatKey("SATA link rate for cached data, MB/s (550)", func(p *HDDParams) *float64 { return &p.HostMBps }),
}

var nullKeys = map[string]profileKey[NullParams]{
	"name":               strKey("kernel device name (nullb0)", func(p *NullParams) *string { return &p.Name }),
	"capacity":           sizeKey("size in bytes (250g, null_blk's gb=250)", func(p *NullParams) *int64 { return &p.Capacity }),
	"logical_block_size": intKey("logical block size in bytes, 512 (default, null_blk's bs) or 4096", func(p *NullParams) *int { return &p.LogicalBlockSize }),
	"max_hw_sectors_kb":  intKey("largest request in KiB (255 sectors rounded down to the block size, as null_blk's max_sectors=0)", func(p *NullParams) *int { return &p.MaxHWSectorsKB }),
	"hw_queue_depth":     intKey("tags per hardware queue (64)", func(p *NullParams) *int { return &p.HWQueueDepth }),
	"submit_queues":      intKey("hardware queues (1)", func(p *NullParams) *int { return &p.SubmitQueues }),
	"completion_nsec":    durKey("time from submission to completion, ns or a duration (10000)", func(p *NullParams) *time.Duration { return &p.CompletionNsec }),
	"mbps":               floatKey("bandwidth cap in MiB/s, as null_blk (0: none)", func(p *NullParams) *float64 { return &p.MBps }),
	"memory_backed":      boolKey("keep written data (false: writes are discarded, reads return the zero stamp)", func(p *NullParams) *bool { return &p.MemoryBacked }),
}

var memKeys = map[string]profileKey[MemParams]{
	"name":               strKey("kernel device name", func(p *MemParams) *string { return &p.Name }),
	"capacity":           sizeKey("size in bytes", func(p *MemParams) *int64 { return &p.Capacity }),
	"logical_block_size": intKey("logical block size in bytes", func(p *MemParams) *int { return &p.LogicalBlockSize }),
	"max_hw_sectors_kb":  intKey("largest request in KiB", func(p *MemParams) *int { return &p.MaxHWSectorsKB }),
	"queue_depth":        intKey("requests the device holds at once", func(p *MemParams) *int { return &p.QueueDepth }),
	"latency":            durKey("latency of every request", func(p *MemParams) *time.Duration { return &p.Latency }),
	"mbps":               floatKey("transfer rate per request, MB/s (0: free)", func(p *MemParams) *float64 { return &p.MBps }),
}

var pmemKeys = map[string]profileKey[PMemParams]{
	"name":               strKey("kernel device name (pmem0)", func(p *PMemParams) *string { return &p.Name }),
	"capacity":           sizeKey("namespace size in bytes (16g)", func(p *PMemParams) *int64 { return &p.Capacity }),
	"logical_block_size": intKey("logical block size in bytes, 512 (the pmem driver's) or 4096", func(p *PMemParams) *int { return &p.LogicalBlockSize }),
	"max_hw_sectors_kb":  intKey("largest request through the block layer in KiB (4096)", func(p *PMemParams) *int { return &p.MaxHWSectorsKB }),
	"read_mbps":          floatKey("one CPU's copy rate from the device, MB/s (6000)", func(p *PMemParams) *float64 { return &p.ReadMBps }),
	"write_mbps":         floatKey("one CPU's copy rate to the device with persistence flushes, MB/s (4000)", func(p *PMemParams) *float64 { return &p.WriteMBps }),
	"latency":            durKey("fixed time added to each copy (0)", func(p *PMemParams) *time.Duration { return &p.Latency }),
}

func speedupKey[P any](doc string, f func(*P) *Speedup) profileKey[P] {
	return profileKey[P]{doc, func(p *P, v string) error {
		c, err := ParseSpeedup(v)
		*f(p) = c
		return err
	}}
}

var flatKeys = map[string]profileKey[FlatParams]{
	"name":               strKey("kernel device name (flat0)", func(p *FlatParams) *string { return &p.Name }),
	"capacity":           sizeKey("size in bytes (required)", func(p *FlatParams) *int64 { return &p.Capacity }),
	"logical_block_size": intKey("logical block size in bytes, 512 (default) or 4096", func(p *FlatParams) *int { return &p.LogicalBlockSize }),
	"max_hw_sectors_kb":  intKey("largest request in KiB (1024)", func(p *FlatParams) *int { return &p.MaxHWSectorsKB }),
	"queue_depth":        intKey("commands the device holds at once (64)", func(p *FlatParams) *int { return &p.QueueDepth }),
	"read_latency":       durKey("command part of a read at depth 1: its latency less its data part (required)", func(p *FlatParams) *time.Duration { return &p.ReadLatency }),
	"write_latency":      durKey("command part of a write at depth 1 (required)", func(p *FlatParams) *time.Duration { return &p.WriteLatency }),
	"read_mbps":          floatKey("data rate of reads, MB/s, at every depth (0: data is free)", func(p *FlatParams) *float64 { return &p.ReadMBps }),
	"write_mbps":         floatKey("data rate of writes, MB/s (0: data is free)", func(p *FlatParams) *float64 { return &p.WriteMBps }),
	"read_speedup":       speedupKey("how many times faster a read's command part is served at each depth, as DEPTH:FACTOR points (\"1:1, 4:1.9, 16:3.3\"; default: 1 at every depth)", func(p *FlatParams) *Speedup { return &p.ReadSpeedup }),
	"write_speedup":      speedupKey("as read_speedup, for writes", func(p *FlatParams) *Speedup { return &p.WriteSpeedup }),
	"switch_time":        durKey("added to a command whose direction differs from the command served before it, at every depth (0)", func(p *FlatParams) *time.Duration { return &p.SwitchTime }),
}

// kindDef is one device kind a profile may name.
type kindDef struct {
	keys  func() [][2]string
	build func(e *sim.Engine, vals map[string]ProfileValue) (Device, error)
}

var kinds = map[string]kindDef{
	"nvme":     flashKind("nvme"),
	"ufs":      flashKind("ufs"),
	"sata-ssd": flashKind("sata-ssd"),
	"hdd": {keyDocs(hddKeys), func(e *sim.Engine, vals map[string]ProfileValue) (Device, error) {
		p := DefaultHDDParams()
		if err := applyKeys(&p, hddKeys, vals); err != nil {
			return nil, err
		}
		// A size with the cache off is a contradiction, unless the
		// profile sized the cache and an override turned it off (as
		// hdparm -W0 does to a drive): the size is then unused.
		if v, ok := vals["write_cache_size"]; ok && !p.WriteCache && !(vals["write_cache"].Override && !v.Override) {
			return nil, fmt.Errorf("%s: %w: hdd: key %q: has no effect with write_cache = false", v.Where, ErrProfile, "write_cache_size")
		}
		return checked(NewHDD(e, p))
	}},
	"flat": {keyDocs(flatKeys), func(e *sim.Engine, vals map[string]ProfileValue) (Device, error) {
		p := DefaultFlatParams()
		if err := applyKeys(&p, flatKeys, vals); err != nil {
			return nil, err
		}
		return checked(NewFlat(e, p))
	}},
	"null": {keyDocs(nullKeys), func(e *sim.Engine, vals map[string]ProfileValue) (Device, error) {
		p := DefaultNullParams()
		if err := applyKeys(&p, nullKeys, vals); err != nil {
			return nil, err
		}
		return checked(NewNull(e, p))
	}},
	"pmem": {keyDocs(pmemKeys), func(e *sim.Engine, vals map[string]ProfileValue) (Device, error) {
		p := DefaultPMemParams()
		if err := applyKeys(&p, pmemKeys, vals); err != nil {
			return nil, err
		}
		return checked(NewPMem(e, p))
	}},
	"memory": {keyDocs(memKeys), func(e *sim.Engine, vals map[string]ProfileValue) (Device, error) {
		var p MemParams
		if err := applyKeys(&p, memKeys, vals); err != nil {
			return nil, err
		}
		if err := p.Validate(); err != nil {
			return nil, err
		}
		return NewMemDevice(e, p), nil
	}},
}

func flashKind(kind string) kindDef {
	return kindDef{keyDocs(flashKeys), func(e *sim.Engine, vals map[string]ProfileValue) (Device, error) {
		p := FlashDefaults(kind)
		if err := applyKeys(&p, flashKeys, vals); err != nil {
			return nil, err
		}
		return checked(NewNVMe(e, p))
	}}
}

// checked turns a constructor's typed nil into a nil Device on error.
func checked[D Device](d D, err error) (Device, error) {
	if err != nil {
		return nil, err
	}
	return d, nil
}

func keyDocs[P any](table map[string]profileKey[P]) func() [][2]string {
	return func() [][2]string {
		out := make([][2]string, 0, len(table))
		for k, v := range table {
			out = append(out, [2]string{k, v.doc})
		}
		sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
		return out
	}
}

// Kinds lists the device kinds a profile may name.
func Kinds() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ProfileKeys returns the keys (besides "kind") a profile of kind accepts,
// sorted, with their descriptions.
func ProfileKeys(kind string) ([][2]string, error) {
	k, ok := kinds[kind]
	if !ok {
		return nil, fmt.Errorf("%w: unknown kind %q (want one of %s)", ErrProfile, kind, strings.Join(Kinds(), ", "))
	}
	return k.keys(), nil
}

// NewFromProfile builds the device a profile describes. vals maps profile
// keys ("kind", "capacity", ...) to their values; every key must be known
// for the kind and every value valid, and the values together must
// describe a working device, or the error names the key at fault and
// where it was set (or that it was not set).
func NewFromProfile(e *sim.Engine, vals map[string]ProfileValue) (Device, error) {
	kind, ok := vals["kind"]
	if !ok {
		return nil, fmt.Errorf("%w: no \"kind\" key (want one of %s)", ErrProfile, strings.Join(Kinds(), ", "))
	}
	k, ok := kinds[kind.Text]
	if !ok {
		return nil, fmt.Errorf("%s: %w: unknown kind %q (want one of %s)", kind.Where, ErrProfile, kind.Text, strings.Join(Kinds(), ", "))
	}
	d, err := k.build(e, vals)
	if err == nil {
		return d, nil
	}
	if errors.Is(err, ErrProfile) {
		return nil, err
	}
	var pe *paramError
	if errors.As(err, &pe) {
		if v, ok := vals[pe.key]; ok {
			return nil, fmt.Errorf("%s: %w: %s: key %q = %q: %v", v.Where, ErrProfile, kind.Text, pe.key, v.Text, err)
		}
		return nil, fmt.Errorf("%s: %w: %s: key %q (not set): %v", kind.Where, ErrProfile, kind.Text, pe.key, err)
	}
	return nil, fmt.Errorf("%s: %w: %s: %v", kind.Where, ErrProfile, kind.Text, err)
}

func applyKeys[P any](p *P, table map[string]profileKey[P], vals map[string]ProfileValue) error {
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "kind" {
			continue
		}
		v := vals[k]
		def, ok := table[k]
		if !ok {
			return fmt.Errorf("%s: %w: unknown key %q for kind %s", v.Where, ErrProfile, k, vals["kind"].Text)
		}
		if err := def.set(p, v.Text); err != nil {
			return fmt.Errorf("%s: %w: key %q: %v", v.Where, ErrProfile, k, err)
		}
	}
	return nil
}

// paramError is a parameter validation error that names the profile key
// at fault, so NewFromProfile can say where that key was set.
type paramError struct {
	key string
	msg string
}

func (e *paramError) Error() string { return e.msg }

// keyErr returns a validation error about key.
func keyErr(key, format string, args ...any) error {
	return &paramError{key: key, msg: fmt.Sprintf(format, args...)}
}

// Bounds on the rates and times of every device kind. A rate below
// minDeviceMBps or a time above maxDeviceTime is a unit mistake, not a
// device, and the bounds keep every service time far inside the int64
// nanoseconds of the simulated clock (the largest request, 32 MiB, takes
// about nine hours at minDeviceMBps); beyond them a time could wrap
// negative and the device serve faster than at any sane value.
const (
	minDeviceMBps = 0.001 // 1 kB/s
	maxDeviceTime = time.Hour
)

// checkRate checks the rate of key: finite and at least minDeviceMBps, or
// 0 where zeroOK (data costs nothing).
func checkRate(key string, v float64, zeroOK bool) error {
	switch {
	case zeroOK && v == 0:
		return nil
	case v >= minDeviceMBps && !math.IsInf(v, 0): // also rejects NaN
		return nil
	case zeroOK:
		return keyErr(key, "%s must be 0 or a finite rate of at least %g, not %g", key, minDeviceMBps, v)
	}
	return keyErr(key, "%s must be a finite rate of at least %g, not %g", key, minDeviceMBps, v)
}

// checkTime checks the time of key: between 0 and maxDeviceTime.
func checkTime(key string, d time.Duration) error {
	if d < 0 || d > maxDeviceTime {
		return keyErr(key, "times must be between 0 and %v; %s is %v", maxDeviceTime, key, d)
	}
	return nil
}

// validateCommon checks the limits every device kind has; depthKey names
// the key that sets the queue depth.
func validateCommon(capacity int64, lbs, maxKB, depth int, depthKey string) error {
	switch {
	case capacity <= 0:
		return keyErr("capacity", "capacity must be positive")
	case lbs != 512 && lbs != 4096:
		return keyErr("logical_block_size", "logical_block_size must be 512 or 4096, not %d", lbs)
	case capacity%int64(lbs) != 0:
		return keyErr("capacity", "capacity %d is not a multiple of the logical block size", capacity)
	case maxKB <= 0 || int64(maxKB)*1024%int64(lbs) != 0:
		return keyErr("max_hw_sectors_kb", "max_hw_sectors_kb must be a positive multiple of the logical block size")
	case depth <= 0:
		return keyErr(depthKey, "%s must be positive", depthKey)
	}
	return nil
}

package blockdev

import (
	"errors"
	"fmt"
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

var nvmeKeys = map[string]profileKey[NVMeParams]{
	"name":               strKey("kernel device name", func(p *NVMeParams) *string { return &p.Name }),
	"capacity":           sizeKey("size in bytes (k/m/g/t suffixes, binary)", func(p *NVMeParams) *int64 { return &p.Capacity }),
	"logical_block_size": intKey("logical block size in bytes (512 or 4096)", func(p *NVMeParams) *int { return &p.LogicalBlockSize }),
	"max_hw_sectors_kb":  intKey("largest request in KiB (the controller's MDTS)", func(p *NVMeParams) *int { return &p.MaxHWSectorsKB }),
	"queue_depth":        intKey("requests the device holds at once", func(p *NVMeParams) *int { return &p.QueueDepth }),
	"channels":           intKey("NAND channels", func(p *NVMeParams) *int { return &p.Channels }),
	"dies_per_channel":   intKey("NAND dies per channel", func(p *NVMeParams) *int { return &p.DiesPerChannel }),
	"page_size":          sizeKey("NAND page size (read unit)", func(p *NVMeParams) *int64 { return &p.PageSize }),
	"planes":             intKey("planes programmed together", func(p *NVMeParams) *int { return &p.Planes }),
	"read_time":          durKey("NAND page read time tR", func(p *NVMeParams) *time.Duration { return &p.ReadTime }),
	"program_time":       durKey("NAND multi-plane program time tPROG", func(p *NVMeParams) *time.Duration { return &p.ProgramTime }),
	"channel_mbps":       floatKey("NAND channel rate, MB/s", func(p *NVMeParams) *float64 { return &p.ChannelMBps }),
	"host_mbps":          floatKey("host link rate, MB/s", func(p *NVMeParams) *float64 { return &p.HostMBps }),
	"read_overhead":      durKey("controller latency per read command", func(p *NVMeParams) *time.Duration { return &p.ReadOverhead }),
	"write_overhead":     durKey("controller latency per write command", func(p *NVMeParams) *time.Duration { return &p.WriteOverhead }),
	"write_buffer":       sizeKey("DRAM write buffer size", func(p *NVMeParams) *int64 { return &p.WriteBuffer }),
	"stream_min":         sizeKey("writes this large bypass the buffer", func(p *NVMeParams) *int64 { return &p.StreamMin }),
	"program_queue":      intKey("cap on programs issued to one die (0: none)", func(p *NVMeParams) *int { return &p.ProgramQueue }),
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

// Kinds lists the device kinds a profile may name.
func Kinds() []string { return []string{"memory", "nvme"} }

// ProfileKeys returns the keys (besides "kind") a profile of kind accepts,
// sorted, with their descriptions.
func ProfileKeys(kind string) ([][2]string, error) {
	var out [][2]string
	switch kind {
	case "nvme":
		for k, v := range nvmeKeys {
			out = append(out, [2]string{k, v.doc})
		}
	case "memory":
		for k, v := range memKeys {
			out = append(out, [2]string{k, v.doc})
		}
	default:
		return nil, fmt.Errorf("%w: unknown kind %q (want one of %s)", ErrProfile, kind, strings.Join(Kinds(), ", "))
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out, nil
}

// NewFromProfile builds the device a profile describes. vals maps profile
// keys ("kind", "capacity", ...) to their values; every key must be known
// for the kind and every value valid, or the error names the key and where
// it was set.
func NewFromProfile(e *sim.Engine, vals map[string]ProfileValue) (Device, error) {
	kind, ok := vals["kind"]
	if !ok {
		return nil, fmt.Errorf("%w: no \"kind\" key (want one of %s)", ErrProfile, strings.Join(Kinds(), ", "))
	}
	switch kind.Text {
	case "nvme":
		var p NVMeParams
		if err := applyKeys(&p, nvmeKeys, vals); err != nil {
			return nil, err
		}
		d, err := NewNVMe(e, p)
		if err != nil {
			return nil, fmt.Errorf("%w: nvme: %v", ErrProfile, err)
		}
		return d, nil
	case "memory":
		var p MemParams
		if err := applyKeys(&p, memKeys, vals); err != nil {
			return nil, err
		}
		if p.Capacity <= 0 {
			return nil, fmt.Errorf("%w: memory: capacity must be positive", ErrProfile)
		}
		return NewMemDevice(e, p), nil
	}
	return nil, fmt.Errorf("%s: %w: unknown kind %q (want one of %s)", kind.Where, ErrProfile, kind.Text, strings.Join(Kinds(), ", "))
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

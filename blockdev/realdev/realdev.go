// Package realdev is the real device backend (DESIGN.md section 3): a
// blockdev.Device over an O_DIRECT file or block device, driven from the
// engine's wall clock (package sim/wallclock).
//
// Targets are named by a spec: "file:PATH[,size=N]" (a regular file, created
// and filled if absent) or "blk:/dev/NAME" (a whole block device or
// partition). Requests go to the target with O_DIRECT through an io_uring
// submitted from the engine goroutine. The engine goroutine also collects
// the completions, waiting for them in io_uring_enter when it has nothing
// else due (the device is the wall clock's Poller); on kernels before 5.11,
// or with Options.Reaper, a reaper goroutine does. Either way completions
// go through the wall clock's inbox, so they run as engine events.
// Alignment comes from statx's STATX_DIOALIGN.
//
// Data is carried as stamps: every 512-byte sector written begins with a
// header (magic, sector number, writer, generation, sequence, CRC-32C of the
// header; the generation is random per Open, so data of earlier runs is told
// apart and reads as never written),
// and every read decodes the headers of what it read and hands the stamps to
// the bios as the memory device does. A sector without the magic was never
// written by blksim and reads as the zero stamp; a sector with the magic
// whose CRC or sector number is wrong is corrupt: the request fails with an
// error wrapping ErrCorrupt and EIO, and Stats counts it.
//
// Safety: a block device that is mounted or held (/proc/mounts, sysfs
// holders, an O_EXCL open) is refused, and so is one that carries a
// filesystem, partition table, swap, LVM, RAID or LUKS signature at the
// offsets blkid reads (Signature), and an existing file that blksim did
// not create (it marks its files with the xattr "user.blksim"), unless
// Options.Force is set. Nothing is written outside the target's
// capacity.
//
// Only Linux is supported; elsewhere Open returns ErrNotSupported.
package realdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"syscall"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/internal/units"
)

// Errors. Each is wrapped with the target's name; test with errors.Is.
var (
	// ErrNotSupported: real devices need Linux (and io_uring or O_DIRECT
	// support from the kernel).
	ErrNotSupported = errors.New("realdev: real devices are not supported on this platform")
	// ErrBadSpec: a device spec that does not parse.
	ErrBadSpec = errors.New("bad device spec")
	// ErrNoDirectIO: the filesystem (or device) refuses O_DIRECT, e.g.
	// tmpfs on older kernels.
	ErrNoDirectIO = errors.New("O_DIRECT is not supported here")
	// ErrNotOurs: an existing file that blksim did not create; pass Force
	// to use (and overwrite) it.
	ErrNotOurs = errors.New("refusing to overwrite a file blksim did not create (use --force)")
	// ErrInUse: a block device that is mounted or held by another user.
	ErrInUse = errors.New("block device is mounted or in use (use --force to override)")
	// ErrHasData: a block device that carries a filesystem or another
	// on-disk format (Signature).
	ErrHasData = errors.New("refusing to overwrite a block device that holds data (use --force)")
	// ErrCorrupt: a read found a sector whose blksim header is damaged or
	// names another sector. It wraps EIO.
	ErrCorrupt = errors.Join(errors.New("realdev: corrupt sector header"), syscall.EIO)
)

// Kind is the type of target.
type Kind uint8

// Target kinds.
const (
	KindFile Kind = iota + 1
	KindBlock
)

// Spec is a parsed device spec.
type Spec struct {
	Kind Kind
	// Path is the file or device node.
	Path string
	// Size is the file's size in bytes (file: only; 0 means the existing
	// file's size).
	Size int64
}

// String returns the spec in the form ParseSpec reads.
func (s Spec) String() string {
	if s.Kind == KindBlock {
		return "blk:" + s.Path
	}
	if s.Size > 0 {
		return fmt.Sprintf("file:%s,size=%d", s.Path, s.Size)
	}
	return "file:" + s.Path
}

// ParseSpec reads "file:PATH[,size=N]" or "blk:/dev/NAME". Errors wrap
// ErrBadSpec.
func ParseSpec(s string) (Spec, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Spec{}, fmt.Errorf("%w %q: want file:PATH[,size=N] or blk:/dev/NAME", ErrBadSpec, s)
	}
	switch kind {
	case "file":
		path, opts, _ := strings.Cut(rest, ",")
		if path == "" {
			return Spec{}, fmt.Errorf("%w %q: empty path", ErrBadSpec, s)
		}
		sp := Spec{Kind: KindFile, Path: path}
		if opts != "" {
			for _, o := range strings.Split(opts, ",") {
				k, v, _ := strings.Cut(o, "=")
				switch k {
				case "size":
					n, err := units.ParseSize(v)
					if err != nil || n <= 0 {
						return Spec{}, fmt.Errorf("%w %q: size=%q: want a positive size like 256m", ErrBadSpec, s, v)
					}
					if n%4096 != 0 {
						return Spec{}, fmt.Errorf("%w %q: size=%q: must be a multiple of 4096", ErrBadSpec, s, v)
					}
					sp.Size = n
				default:
					return Spec{}, fmt.Errorf("%w %q: unknown option %q (want size=N)", ErrBadSpec, s, k)
				}
			}
		}
		return sp, nil
	case "blk":
		if !strings.HasPrefix(rest, "/dev/") || len(rest) == len("/dev/") || strings.Contains(rest, ",") {
			return Spec{}, fmt.Errorf("%w %q: want blk:/dev/NAME", ErrBadSpec, s)
		}
		return Spec{Kind: KindBlock, Path: rest}, nil
	}
	return Spec{}, fmt.Errorf("%w %q: unknown kind %q (want file: or blk:)", ErrBadSpec, s, kind)
}

// Options tune Open.
type Options struct {
	// Force allows an existing file blksim did not create, or a block
	// device that looks in use. Its data is overwritten.
	Force bool
	// QueueDepth is the most requests in flight (0: 64); it is the
	// device's queue depth as the block layer sees it.
	QueueDepth int
	// MaxHWSectorsKB caps one request (0: 1024, or the block device's
	// max_hw_sectors_kb if smaller).
	MaxHWSectorsKB int
	// NoFill leaves a newly created file unwritten (fallocated only):
	// faster to create, but reads of never-written blocks then do not
	// reach the device on most filesystems.
	NoFill bool
	// Reaper makes a reaper goroutine collect completions, as on kernels
	// before 5.11, instead of the engine goroutine (see Device).
	Reaper bool
}

// Stats are a device's counters since Open.
type Stats struct {
	// Backend is how IO reaches the kernel: "io_uring", or "io_uring
	// (engine reaps)" when the engine goroutine collects completions.
	Backend string
	// LogicalBlockSize and MemAlign are the direct-IO offset and memory
	// alignments (statx STATX_DIOALIGN).
	LogicalBlockSize, MemAlign int
	// Created reports that Open created (and filled) the file.
	Created bool
	// Reads, Writes, ReadBytes and WriteBytes count requests issued;
	// Flushes the cache flushes (fdatasyncs of the target).
	Reads, Writes, ReadBytes, WriteBytes, Flushes uint64
	// Enters counts the io_uring_enter calls that handed requests to
	// the kernel (fewer than requests when they went in batches).
	Enters uint64
	// Errors counts requests that failed (kernel errors, short transfers,
	// refused requests); corrupt reads are counted in CorruptSectors.
	Errors uint64
	// CorruptSectors counts sectors read with a damaged or misdirected
	// blksim header; FirstCorrupt (-1: none) and FirstCorruptWhy describe
	// the first.
	CorruptSectors  uint64
	FirstCorrupt    int64
	FirstCorruptWhy string
	// ForeignSectors counts sectors read that blksim never wrote (no magic:
	// zeros from the file's creation, or another program's data), and
	// StaleSectors those written by an earlier Open (another run); both
	// read as the zero stamp, since the model starts empty.
	ForeignSectors, StaleSectors uint64
}

// Sector header layout (little endian), at the start of every 512-byte
// sector blksim writes; the rest of the sector is zero.
const (
	headerMagic = 0x0031_4d49_534b_4c42 // "BLKSIM1\0"
	offMagic    = 0
	offSector   = 8
	offWriter   = 16
	offGen      = 20
	offSeq      = 24
	offCRC      = 32
	headerLen   = 36
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// putHeader writes the header of sector sec carrying stamp s, written in
// generation gen (one per Open), into b (one sector) and zeroes the rest.
func putHeader(b []byte, sec int64, s blockdev.Stamp, gen uint32) {
	clear(b[:blockdev.SectorSize])
	binary.LittleEndian.PutUint64(b[offMagic:], headerMagic)
	binary.LittleEndian.PutUint64(b[offSector:], uint64(sec))
	binary.LittleEndian.PutUint32(b[offWriter:], s.Writer)
	binary.LittleEndian.PutUint32(b[offGen:], gen)
	binary.LittleEndian.PutUint64(b[offSeq:], s.Seq)
	binary.LittleEndian.PutUint32(b[offCRC:], crc32.Checksum(b[:offCRC], castagnoli))
}

// sectorState is what a read found in one sector.
type sectorState uint8

const (
	sectorStamped sectorState = iota
	sectorForeign             // no blksim magic: never written by blksim
	sectorStale               // an intact header of an earlier generation
	sectorCorrupt
)

// getHeader decodes sector sec's header from b, expecting generation gen.
// A sector of another generation (an earlier run, or a copy another
// program made of one) holds nothing the model wrote: it reads as the zero
// stamp, as a sector never written does. Damage is corruption whatever the
// generation.
func getHeader(b []byte, sec int64, gen uint32) (blockdev.Stamp, sectorState, string) {
	if binary.LittleEndian.Uint64(b[offMagic:]) != headerMagic {
		return blockdev.Stamp{}, sectorForeign, ""
	}
	if got, want := binary.LittleEndian.Uint32(b[offCRC:]), crc32.Checksum(b[:offCRC], castagnoli); got != want {
		return blockdev.Stamp{}, sectorCorrupt, fmt.Sprintf("sector %d: header CRC %#x, computed %#x", sec, got, want)
	}
	if binary.LittleEndian.Uint32(b[offGen:]) != gen {
		return blockdev.Stamp{}, sectorStale, ""
	}
	if got := int64(binary.LittleEndian.Uint64(b[offSector:])); got != sec {
		return blockdev.Stamp{}, sectorCorrupt, fmt.Sprintf("sector %d: header names sector %d (misdirected write)", sec, got)
	}
	return blockdev.Stamp{Writer: binary.LittleEndian.Uint32(b[offWriter:]), Seq: binary.LittleEndian.Uint64(b[offSeq:])}, sectorStamped, ""
}

package fsmodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The four IOs a policy is asked about. Aligned means aligned to the
// filesystem block size (4 KiB); extending means ending past i_size.
var (
	ioRead      = IORequest{Offset: 8192, Length: 4096, Aligned: true}
	ioOverwrite = IORequest{Offset: 8192, Length: 4096, Aligned: true}
	ioUnaligned = IORequest{Offset: 8192 + 512, Length: 1024, Aligned: false}
	ioExtending = IORequest{Offset: 1 << 20, Length: 4096, Aligned: true, Extending: true}
)

func TestExt4LockSpans(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy Ext4
		// read, aligned overwrite, unaligned write, extending write
		want [4]LockSpan
	}{
		// 4.8, or 4.9-5.5 with 16c54688 reverted ("w/o"): reads go
		// through __blockdev_direct_IO with DIO_LOCKING, which takes
		// inode_lock (exclusive) to flush and submit, and unlocks before
		// waiting for the bios; ext4_file_write_iter holds inode_lock
		// exclusive around every DIO write, device time included.
		{"w/o", Ext4{},
			[4]LockSpan{SpanExclusiveSubmit, SpanExclusiveIO, SpanExclusiveIO, SpanExclusiveIO}},
		// 4.9-5.5 default mount ("w/", commit 16c54688):
		// ext4_direct_IO_read takes inode_lock_shared across
		// flush, submission and completion; writes exclusive as before.
		{"w/", Ext4{ParallelDIOReads: true},
			[4]LockSpan{SpanSharedIO, SpanExclusiveIO, SpanExclusiveIO, SpanExclusiveIO}},
		// "w/o + dioread_nolock": reads skip DIO_LOCKING and only pin
		// the inode with inode_dio_begin; an aligned overwrite of
		// written blocks (ext4_overwrite_io) takes inode_lock, drops it
		// in ext4_direct_IO_write around the IO and re-takes it to
		// finish; unaligned and extending writes keep it exclusive.
		{"w/o + dioread_nolock", Ext4{DioreadNolock: true},
			[4]LockSpan{SpanNone, SpanExclusiveRelock, SpanExclusiveIO, SpanExclusiveIO}},
		// 4.9-5.5 with dioread_nolock: ext4_direct_IO_read takes the
		// shared lock whatever the mount option; the write side is the
		// dioread_nolock overwrite path.
		{"w/ + dioread_nolock", Ext4{ParallelDIOReads: true, DioreadNolock: true},
			[4]LockSpan{SpanSharedIO, SpanExclusiveRelock, SpanExclusiveIO, SpanExclusiveIO}},
		// 5.6+ iomap DIO: ext4_dio_read_iter holds inode_lock_shared
		// across iomap_dio_rw; ext4_dio_write_checks keeps the shared
		// lock for aligned, non-extending overwrites and takes it
		// exclusive for unaligned or extending writes. The older knobs
		// no longer matter.
		{"iomap", Ext4{IomapDIO: true},
			[4]LockSpan{SpanSharedIO, SpanSharedIO, SpanExclusiveIO, SpanExclusiveIO}},
		{"iomap, parallel reads set", Ext4{IomapDIO: true, ParallelDIOReads: true},
			[4]LockSpan{SpanSharedIO, SpanSharedIO, SpanExclusiveIO, SpanExclusiveIO}},
		{"iomap, dioread_nolock set", Ext4{IomapDIO: true, DioreadNolock: true},
			[4]LockSpan{SpanSharedIO, SpanSharedIO, SpanExclusiveIO, SpanExclusiveIO}},
		{"iomap, both set", Ext4{IomapDIO: true, ParallelDIOReads: true, DioreadNolock: true},
			[4]LockSpan{SpanSharedIO, SpanSharedIO, SpanExclusiveIO, SpanExclusiveIO}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.policy
			got := [4]LockSpan{p.DIORead(ioRead), p.DIOWrite(ioOverwrite), p.DIOWrite(ioUnaligned), p.DIOWrite(ioExtending)}
			assert.Equal(t, tc.want, got, "read, overwrite, unaligned write, extending write: %v", got)
			// Reads do not depend on alignment or size.
			assert.Equal(t, tc.want[0], p.DIORead(ioUnaligned))
			// A write that is both unaligned and extending is exclusive.
			assert.Equal(t, SpanExclusiveIO, p.DIOWrite(IORequest{Offset: 1<<20 + 512, Length: 512, Extending: true}))
		})
	}
}

func TestExt4Names(t *testing.T) {
	names := map[string]Ext4{}
	for _, p := range []Ext4{{}, {ParallelDIOReads: true}, {DioreadNolock: true}, {ParallelDIOReads: true, DioreadNolock: true}, {IomapDIO: true}} {
		n := p.Name()
		assert.Contains(t, n, "ext4")
		_, dup := names[n]
		assert.False(t, dup, "name %q used twice", n)
		names[n] = p
	}
	assert.Equal(t, Ext4{IomapDIO: true}.Name(), Ext4{IomapDIO: true, DioreadNolock: true, ParallelDIOReads: true}.Name(), "iomap overrides the other fields")
}

func TestLockSpanString(t *testing.T) {
	for span, want := range map[LockSpan]string{
		SpanNone:            "none",
		SpanSharedIO:        "shared-across-io",
		SpanExclusiveIO:     "exclusive-across-io",
		SpanExclusiveSubmit: "exclusive-submit",
		SpanExclusiveRelock: "exclusive-relock",
		LockSpan(200):       "invalid",
	} {
		assert.Equal(t, want, span.String())
	}
}

// xfs (xfs_file_dio_read / xfs_file_dio_write): reads shared across the
// IO; a write is shared only when aligned, not extending and the file has
// no cached pages (unaligned IO needs the exclusive lock to serialize
// sub-block zeroing; cached pages must be invalidated under it).
func TestXFSLockSpans(t *testing.T) {
	cached := ioOverwrite
	cached.Cached = true
	for _, tc := range []struct {
		name string
		io   IORequest
		read bool
		want LockSpan
	}{
		{"read", ioRead, true, SpanSharedIO},
		{"read of a cached file", cached, true, SpanSharedIO},
		{"aligned overwrite", ioOverwrite, false, SpanSharedIO},
		{"aligned overwrite with cached pages", cached, false, SpanExclusiveIO},
		{"unaligned write", ioUnaligned, false, SpanExclusiveIO},
		{"extending write", ioExtending, false, SpanExclusiveIO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.read {
				assert.Equal(t, tc.want, XFS{}.DIORead(tc.io))
				return
			}
			assert.Equal(t, tc.want, XFS{}.DIOWrite(tc.io))
		})
	}
	assert.Equal(t, "xfs", XFS{}.Name())
}

// f2fs 4.19 (f2fs_direct_IO): __blockdev_direct_IO with DIO_LOCKING |
// DIO_SKIP_HOLES, so a read takes inode_lock exclusive to flush and
// submit and unlocks before waiting for the bios (not shared across the
// IO); f2fs_file_write_iter holds inode_lock exclusive around every DIO
// write, device time included.
func TestF2FSLockSpans(t *testing.T) {
	p := F2FS{}
	for _, io := range []IORequest{ioRead, ioUnaligned} {
		assert.Equal(t, SpanExclusiveSubmit, p.DIORead(io), "read %+v", io)
	}
	for _, io := range []IORequest{ioOverwrite, ioUnaligned, ioExtending} {
		assert.Equal(t, SpanExclusiveIO, p.DIOWrite(io), "write %+v", io)
	}
	assert.Equal(t, "f2fs", p.Name())
}

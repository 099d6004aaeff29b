package fsmodel

// LockSpan says how an IO path holds the inode lock (i_rwsem) and across
// which part of the IO.
type LockSpan uint8

// Lock spans, named after what the kernel paths do.
const (
	// SpanNone takes no inode lock; the IO pins the inode with its
	// in-flight direct-IO count instead (ext4 dioread_nolock reads).
	SpanNone LockSpan = iota
	// SpanSharedIO holds the lock shared from before submission until the
	// device IO has completed.
	SpanSharedIO
	// SpanExclusiveIO holds the lock exclusive from before submission until
	// the device IO has completed.
	SpanExclusiveIO
	// SpanExclusiveSubmit holds the lock exclusive while the IO is mapped
	// and submitted, then waits for the device with no lock held (the old
	// DIO_LOCKING read path).
	SpanExclusiveSubmit
	// SpanExclusiveRelock holds the lock exclusive for submission, drops
	// it across the device IO and re-takes it exclusive briefly afterwards
	// (ext4's dioread_nolock overwrite path before 5.6).
	SpanExclusiveRelock
)

var spanNames = [...]string{"none", "shared-across-io", "exclusive-across-io", "exclusive-submit", "exclusive-relock"}

// String names the span.
func (s LockSpan) String() string {
	if int(s) < len(spanNames) {
		return spanNames[s]
	}
	return "invalid"
}

// IORequest describes one file IO to a lock policy.
type IORequest struct {
	// Offset and Length are in bytes.
	Offset, Length int64
	// Aligned is true when both are multiples of the filesystem block
	// size.
	Aligned bool
	// Extending is true when the IO ends beyond the file's size.
	Extending bool
	// Cached is true when the file has pages in the page cache (the
	// inode's mapping->nrpages is not zero).
	Cached bool
}

// LockPolicy decides the inode lock span of each direct-IO path. A policy
// must be a pure function of its arguments (it is consulted on every IO).
type LockPolicy interface {
	// Name describes the policy for reports, e.g. "ext4 (5.2, parallel DIO reads)".
	Name() string
	// DIORead returns the span of a direct-IO read.
	DIORead(io IORequest) LockSpan
	// DIOWrite returns the span of a direct-IO write.
	DIOWrite(io IORequest) LockSpan
}

// Ext4 is ext4's inode locking for direct IO. The zero value is a kernel
// 4.8 (or a 4.9-5.5 kernel with commit 16c54688 reverted) with default
// mount options.
type Ext4 struct {
	// ParallelDIOReads is commit 16c54688 (v4.9): DIO reads take i_rwsem
	// shared across the whole IO.
	ParallelDIOReads bool
	// DioreadNolock is the dioread_nolock mount option: without parallel
	// DIO reads, reads take no inode lock; aligned overwrites drop the
	// lock around the device IO.
	DioreadNolock bool
	// IomapDIO is the iomap direct-IO path of 5.6 and later: reads and
	// aligned non-extending overwrites shared across the IO, other writes
	// exclusive. It overrides the other two fields.
	IomapDIO bool
}

// Name describes the configuration.
func (p Ext4) Name() string {
	switch {
	case p.IomapDIO:
		return "ext4 (5.6+ iomap DIO)"
	case p.ParallelDIOReads && p.DioreadNolock:
		return "ext4 (parallel DIO reads, dioread_nolock)"
	case p.ParallelDIOReads:
		return "ext4 (parallel DIO reads)"
	case p.DioreadNolock:
		return "ext4 (DIO_LOCKING reads, dioread_nolock)"
	}
	return "ext4 (DIO_LOCKING reads)"
}

// DIORead returns the read span.
func (p Ext4) DIORead(IORequest) LockSpan {
	switch {
	case p.IomapDIO, p.ParallelDIOReads:
		return SpanSharedIO
	case p.DioreadNolock:
		return SpanNone
	}
	return SpanExclusiveSubmit
}

// DIOWrite returns the write span.
func (p Ext4) DIOWrite(io IORequest) LockSpan {
	overwrite := io.Aligned && !io.Extending
	switch {
	case p.IomapDIO && overwrite:
		return SpanSharedIO
	case p.IomapDIO:
		return SpanExclusiveIO
	case p.DioreadNolock && overwrite:
		return SpanExclusiveRelock
	}
	return SpanExclusiveIO
}

// F2FS is f2fs's inode locking for direct IO (4.19): f2fs_direct_IO
// calls __blockdev_direct_IO with DIO_LOCKING, so a read takes the inode
// lock exclusive to flush and submit and waits for the device with no
// lock held (SpanExclusiveSubmit, as ext4's old read path); a write runs
// under the exclusive lock f2fs_file_write_iter holds across the IO.
type F2FS struct{}

// Name describes the policy.
func (F2FS) Name() string { return "f2fs" }

// DIORead returns the read span.
func (F2FS) DIORead(IORequest) LockSpan { return SpanExclusiveSubmit }

// DIOWrite returns the write span.
func (F2FS) DIOWrite(IORequest) LockSpan { return SpanExclusiveIO }

// XFS is xfs's inode locking (the iolock, i_rwsem since 4.7) for direct
// IO, as of kernels 4.x to 6.x: reads shared across the IO; aligned,
// non-extending writes to a file with no cached pages shared across the
// IO; other writes exclusive across it (xfs_file_dio_write's
// unaligned/cached-pages rule). Buffered reads take the iolock shared
// across the read unless BufferedOptions.ReadLockShared is off (the
// December 2024 patch); buffered writes take it exclusive. The DAX paths
// follow the same rules (see File.DAXRead).
type XFS struct{}

// Name describes the policy.
func (XFS) Name() string { return "xfs" }

// DIORead returns the read span.
func (XFS) DIORead(IORequest) LockSpan { return SpanSharedIO }

// DIOWrite returns the write span.
func (XFS) DIOWrite(io IORequest) LockSpan {
	if io.Aligned && !io.Extending && !io.Cached {
		return SpanSharedIO
	}
	return SpanExclusiveIO
}

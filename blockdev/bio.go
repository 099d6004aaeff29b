package blockdev

import (
	"strconv"

	"github.com/blksim/blksim/sim"
)

// Op is the direction of a bio or request.
type Op uint8

// Operations.
const (
	OpRead Op = iota
	OpWrite
)

// String returns "read" or "write" ("Op(N)" for any other value).
func (o Op) String() string {
	switch o {
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// BioEnder receives a bio's completion. EndBio runs on the engine goroutine
// (from a handler, never inside Submit); b.Err is nil or the errno error.
type BioEnder interface {
	EndBio(b *Bio)
}

// Bio is one block IO as a filesystem submits it: a direction, a start
// sector and a length in bytes (a multiple of SectorSize). A write carries
// the Stamp its sectors get; a read receives the stamps it found in Data.
//
// Bios are owned by the submitter until End is called; the queue may split
// a bio into pieces that complete the parent when all are done.
type Bio struct {
	Op     Op
	Sector int64
	Bytes  int64
	// Stamp is stored on every sector of a write, unless WriteRuns is set.
	Stamp Stamp
	// WriteRuns, for a write whose sectors come from several writes (a
	// page-cache writeback bio), gives each sector's stamp, in absolute
	// sectors covering the bio; it overrides Stamp.
	WriteRuns []StampRun
	// Data receives the stamps a read found (appended, in sector order)
	// when CollectData is set.
	Data        []StampRun
	CollectData bool
	// Err is set before End runs if the IO failed.
	Err error
	// End is told when the bio completes; Private is for its use.
	End     BioEnder
	Private any
	// Submitted is the time the bio entered the queue.
	Submitted sim.Time
	// Issuer is the task the bio is submitted for (traces, statistics).
	Issuer Issuer
	// Sync is the REQ_SYNC flag: set on direct-IO writes and on
	// writeback for fsync, and traced as blkparse's "S". Reads are
	// synchronous whether or not it is set (op_is_sync), and the kernel's
	// direct and buffered reads do not set it.
	Sync bool
	// NoIdle marks a sync write that does not expect another soon: the
	// kernel's REQ_SYNC without REQ_IDLE (fsync writeback; direct-IO
	// writes carry both). cfq does not idle for a queue after one.
	NoIdle bool
	// Rahead is the REQ_RAHEAD flag: the read is readahead, which the
	// caller could do without (blkparse's "A"). It changes no scheduling
	// or merging here.
	Rahead bool
	// Flush is REQ_PREFLUSH. On an empty write (Op OpWrite, Bytes 0, as
	// blkdev_issue_flush sends) the device's volatile write cache is
	// written out before the bio completes. On a write with data (a
	// journal commit block) the cache is written out before the data
	// is. Either way the bio is never merged and bypasses the scheduler
	// and any plug (blk_insert_flush); on a device without a volatile
	// cache the flag is dropped, as submit_bio_noacct drops it.
	Flush bool
	// FUA is REQ_FUA on a write with data: the bio completes only once
	// its data is on stable media. On a device with a volatile cache the
	// device does it if it advertises FUA (Limits.FUA), else the queue
	// follows the data with a cache flush (blk-flush's
	// REQ_FSEQ_POSTFLUSH); without a volatile cache the flag is dropped.
	// Traced as blkparse's "F" after the direction.
	FUA bool
	// Meta is REQ_META: filesystem metadata (blkparse's "M"). It changes
	// no scheduling or merging here.
	Meta bool

	parent    *Bio
	remaining int
	// noMerge marks the front pieces of a split bio (REQ_NOMERGE).
	noMerge bool
}

// Sectors returns the bio's length in sectors.
func (b *Bio) Sectors() int64 { return b.Bytes / SectorSize }

// Reset clears b for reuse, keeping Data's capacity.
func (b *Bio) Reset() {
	data, runs := b.Data[:0], b.WriteRuns[:0]
	*b = Bio{Data: data, WriteRuns: runs}
}

// Request is what the queue dispatches to a device: a contiguous range in
// one direction, built from one or more bios (or pieces of a split bio).
type Request struct {
	Op     Op
	Sector int64
	Bytes  int64
	Bios   []*Bio
	// Tag is the request's tag on its hardware queue while dispatched
	// (-1 otherwise), HWQueue the queue.
	Tag     int
	HWQueue int
	// Queued is when the request was allocated (G), Started when it was
	// issued to the device (D).
	Queued  sim.Time
	Started sim.Time
	Err     error
	// Issuer is the task of the request's first bio; Sync, NoIdle,
	// Rahead and Meta as its first bio's. Flush marks a cache flush
	// request, which carries no data (an empty REQ_PREFLUSH bio's, or one
	// the queue makes before or after a PREFLUSH or FUA write); a write
	// with data never has it.
	Issuer Issuer
	Sync   bool
	NoIdle bool
	Rahead bool
	Flush  bool
	Meta   bool
	// FUA is REQ_FUA on a write sent to a device whose Limits have FUA:
	// the device completes it once its data is on stable media.
	FUA bool

	// The flush sequence (blk-flush) of an empty flush or a PREFLUSH or
	// FUA write: fstep is what the request does once the flush it waits
	// for completes; post says the write, once done, waits for a
	// postflush that ends its bios; seqPre and seqFUA are the bio's
	// PREFLUSH and FUA, traced until the write is issued; inSeq marks a
	// write that bypassed the scheduler; seqData one that a waiting flush
	// holds back for (blk-flush's flush_data_in_flight).
	fstep                uint8
	post, inSeq, seqData bool
	seqPre, seqFUA       bool

	segs     int       // scatter-gather segments of its bios
	noMerge  bool      // holds a split-off piece: never merged into
	deadline sim.Time  // mq-deadline FIFO expiry
	cfqq     *cfqQueue // cfq: the queue the request belongs to
}

// Sectors returns the request's length in sectors.
func (r *Request) Sectors() int64 { return r.Bytes / SectorSize }

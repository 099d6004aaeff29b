package fsmodel

import (
	"fmt"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
)

// This file is the asynchronous direct-IO path: what io_submit(2) and
// io_uring_enter(2) do with each iocb or SQE of a direct-IO file. The
// system calls themselves (their entry and exit, the completion ring,
// io_getevents) belong to the caller; see workload's async engines.

// AIOHandler is told when an asynchronous direct IO has completed.
type AIOHandler interface {
	// AIODone runs on the engine goroutine, from the event that ended the
	// IO's last bio (never inside DirectAIO), with cb.Err set. It runs in
	// handler context: it must not block, though it may wake tasks. The
	// IOCB may be reused from AIODone on.
	AIODone(cb *IOCB)
}

// IOCB is one asynchronous direct IO, the kernel's kiocb of an io_submit
// iocb or an io_uring SQE. It is owned by the caller, who sets Handler and
// may reuse the IOCB for another IO once its Handler has run; reusing IOCBs
// keeps the path free of allocations (an IOCB keeps its bios). The zero
// value with Handler set is ready for use.
type IOCB struct {
	// Handler is told when the IO has completed. It must not be nil.
	Handler AIOHandler
	// Err is nil, or the error the IO failed with (EIO from the device,
	// wrapped with the file, direction and range); set before Handler
	// runs.
	Err error
	// Completed is when the IO's last bio ended; set before Handler runs.
	Completed sim.Time
	// CollectData makes a read gather the stamps it found into Data (in
	// file order, replacing Data's contents) before Handler runs.
	// Collecting costs simulator time, not simulated time.
	CollectData bool
	// Data receives a read's stamps when CollectData is set.
	Data []blockdev.StampRun

	d        dio
	file     *File
	op       blockdev.Op
	off, n   int64
	inFlight bool
}

// InFlight reports whether the IO has been submitted and not yet completed.
func (cb *IOCB) InFlight() bool { return cb.inFlight }

// complete finishes the IO when its last bio has ended: inode_dio_end,
// then the handler (aio_complete).
func (cb *IOCB) complete() {
	f := cb.file
	f.inode.dioCount--
	cb.Completed = f.fs.e.Now()
	if cb.d.err != nil {
		cb.Err = fmt.Errorf("%s %s at %d+%d: %w", f.name, cb.op, cb.off, cb.n, cb.d.err)
	}
	if cb.CollectData {
		cb.Data = cb.d.stamps(cb.Data[:0])
	}
	cb.inFlight = false
	cb.Handler.AIODone(cb)
}

// DirectAIO submits an asynchronous direct IO of [off, off+n) on behalf of
// t and returns once its bios are submitted (op is OpRead or OpWrite; a
// write stamps its sectors with s). It blocks t only for the submission:
// the inode lock, the CPU time of setting up the IO and submitting its
// bios (Costs DIOSetup, DIOPerPage and BioSubmit, as the synchronous path
// charges them). The system call's own cost (Costs.Syscall) and the
// completion work when the caller reaps the event (Costs.DIOComplete) are
// the caller's to charge. cb.Handler is told when the IO completes.
//
// As for the kernel's AIO direct IO (__blockdev_direct_IO and iomap_dio_rw
// return -EIOCBQUEUED and the file's read_iter or write_iter unlocks), the
// inode lock is held only while the IO is submitted, in the mode the
// policy gives its span: shared for SpanSharedIO, exclusive for the
// exclusive spans, none for SpanNone. The IO is counted in the inode's
// in-flight direct IOs (inode_dio_begin) until it completes.
//
// If t has an open Batch, the bios join its plug; otherwise they go
// through a plug of their own. A misaligned IO fails with an error
// matching syscall.EINVAL and one beyond the end of the file with
// ErrBeyondEOF, before anything is submitted; the handler is then not
// called. On a DAX filesystem DirectAIO fails with ErrDAX (the kernel
// runs such IO synchronously; callers use ReadIter and WriteIter).
// DirectAIO panics if cb has no Handler or is still in flight.
func (f *File) DirectAIO(t *sim.Task, op blockdev.Op, off, n int64, s blockdev.Stamp, cb *IOCB) error {
	if cb.Handler == nil {
		panic("fsmodel: DirectAIO with an IOCB that has no Handler")
	}
	if cb.inFlight {
		panic("fsmodel: DirectAIO with an IOCB that is still in flight")
	}
	fs := f.fs
	if fs.dax != nil {
		return fmt.Errorf("%s %s at %d+%d: %w: IO on a DAX file completes inside the call; use ReadIter or WriteIter", f.name, op, off, n, ErrDAX)
	}
	span, err := f.checkDirect(op, off, n)
	if err != nil {
		return err
	}
	cb.Err = nil
	cb.file, cb.op, cb.off, cb.n = f, op, off, n
	d := &cb.d
	d.aio = cb
	d.err = nil
	d.used = 0
	d.collect = cb.CollectData
	plug := fs.batchPlug(t)
	lock := f.inode.Lock
	switch span {
	case SpanNone:
		f.startAIO(t, cb, op, off, n, s, plug)
	case SpanSharedIO:
		lock.DownRead(t)
		f.startAIO(t, cb, op, off, n, s, plug)
		lock.UpRead(t)
	case SpanExclusiveIO, SpanExclusiveSubmit, SpanExclusiveRelock:
		lock.DownWrite(t)
		f.startAIO(t, cb, op, off, n, s, plug)
		lock.UpWrite(t)
	default:
		panic(fmt.Sprintf("fsmodel: policy %s returned invalid span %d", fs.opt.Policy.Name(), span))
	}
	return nil
}

// startAIO counts the IO in flight and submits its bios.
func (f *File) startAIO(t *sim.Task, cb *IOCB, op blockdev.Op, off, n int64, s blockdev.Stamp, plug *blockdev.Plug) {
	cb.inFlight = true
	f.inode.dioCount++
	f.submit(t, &cb.d, op, off, n, s, plug)
}

// Batch is a group of asynchronous direct IOs that one task submits under
// one block plug, as io_submit(2) and io_uring_enter(2) do when they submit
// more than two iocbs (blk_start_plug around the loop): consecutive bios of
// the batch merge in the plug before they reach the queue. A Batch is
// owned by its task; get one from FS.StartBatch.
type Batch struct {
	fs   *FS
	t    *sim.Task
	plug *blockdev.Plug
}

// StartBatch opens a submission batch for t: DirectAIO calls by t until
// Finish send their bios to the batch's plug. The plug is flushed by
// Finish, when it is full (blockdev.Plug's rules) and whenever t sleeps,
// for instance on an inode lock. StartBatch first runs the CPU time
// charged to t. A task has at most one open batch; StartBatch panics if
// t already has one.
func (fs *FS) StartBatch(t *sim.Task) *Batch {
	if fs.batchPlug(t) != nil {
		panic("fsmodel: task " + t.Name() + " already has an open batch")
	}
	t.Flush()
	var b *Batch
	if n := len(fs.freeBatches); n > 0 {
		b = fs.freeBatches[n-1]
		fs.freeBatches = fs.freeBatches[:n-1]
	} else {
		b = &Batch{fs: fs}
	}
	b.t = t
	b.plug = fs.q.StartPlug(t, IssuerOf(t))
	fs.batches = append(fs.batches, b)
	return b
}

// Finish flushes the batch's plug to the queue and closes the batch
// (blk_finish_plug). The Batch must not be used afterwards.
func (b *Batch) Finish() {
	fs := b.fs
	i := 0
	for i < len(fs.batches) && fs.batches[i] != b {
		i++
	}
	if i == len(fs.batches) {
		panic("fsmodel: Finish of a batch that is not open")
	}
	last := len(fs.batches) - 1
	copy(fs.batches[i:], fs.batches[i+1:])
	fs.batches[last] = nil
	fs.batches = fs.batches[:last]
	b.plug.Finish()
	b.t, b.plug = nil, nil
	fs.freeBatches = append(fs.freeBatches, b)
}

// batchPlug returns the plug of t's open batch, or nil.
func (fs *FS) batchPlug(t *sim.Task) *blockdev.Plug {
	for _, b := range fs.batches {
		if b.t == t {
			return b.plug
		}
	}
	return nil
}

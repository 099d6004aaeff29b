package workload

import (
	"cmp"
	"fmt"
	"slices"
	"syscall"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/fsmodel"
)

// This file is fio's data verification (verify.c) on blksim's stamps. A
// write of a verifying job stamps its sectors with (job, sequence); the job
// keeps a log of its writes (fio's io_piece list) and, after the write
// phase (do_verify) or every verify_backlog writes, reads them back and
// checks that every sector holds the stamp it last wrote there (fio's
// header and numberio checks). A job that only reads, with verify=, checks
// each read against the run's register of verified writes: the block must
// hold one write of a verifying job, made to exactly this place with the
// same verify type (fio's header checks: magic, offset, length, type).
// Every checksum type checks the same thing, since the stamps identify the
// data exactly; verify=null reads back without checking.

// verifyCheck says how a read is checked.
type verifyCheck int

const (
	checkNone    verifyCheck = iota
	checkOwn                 // against the job's own last writes
	checkWritten             // against the run's register of verified writes
)

// writeRec is where a verified write went.
type writeRec struct {
	file *fsmodel.File
	off  int64
	n    int64
	mode string
}

// piece is a logged write (fio's io_piece).
type piece struct {
	file   *jobFile
	off, n int64 // in the file
}

// verifyState is a job's verification.
type verifyState struct {
	j *job
	// writes: the job logs its writes and reads them back.
	logs bool
	// checkReads: the job checks every read against the register.
	checkReads bool
	// own: the job checks what it reads back against its own last writes
	// (each file's jobFile.expect).
	own     bool
	pending []piece // logged, not yet verified
	queue   []piece // the verify phase's reads, in file and offset order
	inPhase bool
	// backlog: reads left in the current verify_backlog batch.
	batch       int64
	lastWasRead bool

	want []blockdev.StampRun
}

func newVerifyState(j *job) *verifyState {
	s := j.spec
	v := &verifyState{j: j}
	if s.RW.HasWrite() {
		v.logs = true
		if !s.VerifyOnly && verifies(s) {
			v.own = true
			// One map per file, shared by the job's names for it.
			maps := map[*fsmodel.File]*blockdev.StampMap{}
			for _, f := range j.files {
				m := maps[f.file]
				if m == nil || f.file == nil {
					m = blockdev.NewStampMap()
					maps[f.file] = m
				}
				f.expect = m
			}
		}
	} else {
		v.checkReads = s.Verify != "null"
	}
	r := j.r
	if r != nil && r.written == nil {
		for _, o := range r.jobs {
			if o.spec.Verify != "" && o.spec.Verify != "null" && (!o.spec.RW.HasWrite() || o.spec.VerifyOnly) {
				r.written = map[blockdev.Stamp]writeRec{}
				break
			}
		}
	}
	return v
}

// logWrite records a completed write of n bytes at offset off of file f
// with stamp st.
func (v *verifyState) logWrite(f *jobFile, off, n int64, st blockdev.Stamp) {
	v.lastWasRead = false
	if !v.logs {
		return
	}
	j := v.j
	if r := j.r; r != nil && r.written != nil && j.spec.Verify != "null" {
		r.written[st] = writeRec{file: f.file, off: off, n: n, mode: j.spec.Verify}
	}
	if f.expect != nil {
		f.expect.Write(off/blockdev.SectorSize, n/blockdev.SectorSize, st)
	}
	if s := j.spec; s.NoDoVerify && s.VerifyBacklog == 0 {
		// No verify phase and no backlog: nothing reads the log.
		return
	}
	v.pending = append(v.pending, piece{f, off, n})
}

// nextBacklogRead returns a verify read of the oldest logged write when a
// verify_backlog batch is due (fio io_u.c get_io_u).
func (v *verifyState) nextBacklogRead() (ioReq, bool) {
	s := v.j.spec
	if s.VerifyBacklog <= 0 || len(v.pending) == 0 {
		return ioReq{}, false
	}
	if v.batch == 0 && int64(len(v.pending)) >= s.VerifyBacklog && !v.lastWasRead {
		v.batch = s.VerifyBacklogBatch
		if v.batch == 0 {
			v.batch = s.VerifyBacklog
		}
	}
	if v.batch == 0 {
		return ioReq{}, false
	}
	v.batch--
	p := v.pending[0]
	v.pending = v.pending[1:]
	return v.readOf(p), true
}

// readOf is the verify read of p.
func (v *verifyState) readOf(p piece) ioReq {
	c := checkOwn
	switch {
	case v.j.spec.Verify == "null":
		c = checkNone
	case !v.own:
		c = checkWritten
	}
	v.lastWasRead = true
	return ioReq{dir: blockdev.OpRead, file: p.file, off: p.off - p.file.regionOff, bs: p.n, check: c}
}

// phaseDue reports whether a verify phase has anything to read back.
func (v *verifyState) phaseDue() bool {
	s := v.j.spec
	return v.logs && !s.NoDoVerify && len(v.pending) > 0
}

// startPhase begins the verify phase: the logged writes, in file and
// offset order (fio's io_piece tree), each place once.
func (v *verifyState) startPhase() {
	q := slices.Clone(v.pending)
	v.pending = v.pending[:0]
	slices.SortStableFunc(q, func(a, b piece) int {
		return cmp.Or(cmp.Compare(a.file.num, b.file.num), cmp.Compare(a.off, b.off))
	})
	q = slices.CompactFunc(q, func(a, b piece) bool { return a == b })
	v.queue = q
	v.inPhase = true
}

// endPhase ends the verify phase.
func (v *verifyState) endPhase() {
	v.inPhase = false
	v.queue = nil
}

// nextRead returns the verify phase's next read, or false when it is done.
func (v *verifyState) nextRead() (ioReq, bool) {
	if len(v.queue) == 0 {
		return ioReq{}, false
	}
	p := v.queue[0]
	v.queue = v.queue[1:]
	return v.readOf(p), true
}

// check checks what a read found. It returns "" if the block is good,
// else why it is bad.
func (v *verifyState) check(io ioReq, data []blockdev.StampRun) string {
	f := io.file
	off := f.regionOff + io.off
	var msg string
	switch io.check {
	case checkOwn:
		v.want = f.expect.Read(v.want[:0], off/blockdev.SectorSize, io.bs/blockdev.SectorSize)
		msg = compareRuns(v.want, data)
	case checkWritten:
		msg = v.checkRegister(f, off, io.bs, data)
	}
	if msg == "" {
		return ""
	}
	return fmt.Sprintf("verify: bad block at offset %d, length %d, of file %s: %s", off, io.bs, f.name, msg)
}

// checkRegister checks a block of file f against the run's register of
// verified writes.
func (v *verifyState) checkRegister(f *jobFile, off, n int64, data []blockdev.StampRun) string {
	j := v.j
	if len(data) == 0 {
		return "nothing read"
	}
	st := data[0].Stamp
	for _, r := range data[1:] {
		if r.Stamp != st {
			return "it holds parts of several writes (torn)"
		}
	}
	if st == (blockdev.Stamp{}) {
		return "it was never written (fio: bad magic header)"
	}
	rec, ok := j.r.written[st]
	switch {
	case !ok:
		return fmt.Sprintf("it holds a write of job %d that was not verified data (fio: bad magic header)", st.Writer-1)
	case rec.file != f.file || rec.off != off || rec.n != n:
		return fmt.Sprintf("it holds a write of %d bytes to offset %d (fio: bad header offset)", rec.n, rec.off)
	case rec.mode != j.spec.Verify:
		return fmt.Sprintf("it was written with verify=%s, not %s (fio: verify type mismatch)", rec.mode, j.spec.Verify)
	}
	return ""
}

// compareRuns compares the stamps a read found with those expected, as
// sequences of sectors (the read's runs are device sectors, the expected
// ones file sectors). It returns "" if they match.
func compareRuns(want, got []blockdev.StampRun) string {
	i, k := 0, 0
	var wLeft, gLeft int64
	if len(want) > 0 {
		wLeft = want[0].Sectors
	}
	if len(got) > 0 {
		gLeft = got[0].Sectors
	}
	var pos int64
	for i < len(want) && k < len(got) {
		w, g := want[i].Stamp, got[k].Stamp
		if w != g {
			switch {
			case g == (blockdev.Stamp{}):
				return fmt.Sprintf("sector %d was never written, want write %d of job %d (fio: bad magic header)", pos, w.Seq, w.Writer-1)
			case g.Writer != w.Writer:
				return fmt.Sprintf("sector %d holds write %d of job %d, want write %d of job %d", pos, g.Seq, g.Writer-1, w.Seq, w.Writer-1)
			default:
				return fmt.Sprintf("sector %d holds write %d, want write %d (fio: bad numberio)", pos, g.Seq, w.Seq)
			}
		}
		step := min(wLeft, gLeft)
		pos += step
		wLeft -= step
		gLeft -= step
		if wLeft == 0 {
			if i++; i < len(want) {
				wLeft = want[i].Sectors
			}
		}
		if gLeft == 0 {
			if k++; k < len(got) {
				gLeft = got[k].Sectors
			}
		}
	}
	if i < len(want) || k < len(got) {
		return "the read returned a different length"
	}
	return ""
}

// verifyFailed handles a block that failed its check (msg says why), as
// fio 3.33's io_completed handles verify_io_u's EILSEQ: unless
// continue_on_error covers verify errors, it is the job's error at once
// and the job stops at this block, the read counted; if it does, it is
// counted (total_err, first_error) and the job goes on, unless
// verify_fatal ends it there (fio_mark_td_terminate). It returns false
// if the job must stop.
func (j *job) verifyFailed(msg string) bool {
	if j.spec.ContinueOnError&ErrorTypeVerify != 0 {
		j.res.TotalErr++
		if j.res.TotalErr == 1 {
			j.res.FirstError = int(syscall.EILSEQ)
		}
		return !j.spec.VerifyFatal
	}
	if j.res.Error == 0 {
		j.res.Error = int(syscall.EILSEQ)
		j.res.ErrorMsg = msg
	}
	return false
}

// dryRun is fio's do_dry_run for verify_only: the job's writes are
// generated and logged, but not issued, for the verify phase to read back.
func (j *job) dryRun() {
	s := j.spec
	v := j.verify
	for s.NumberIOs == 0 || j.ios < s.NumberIOs {
		if j.bytes >= j.ioLimit {
			break
		}
		if j.multi() {
			if r := j.pickFile(); r == pickNone {
				break
			} else if r == pickBusy {
				continue
			}
		}
		dir := j.pickDir()
		var off, bs int64
		if j.multi() {
			var r pickResult
			if off, bs, r = j.nextFileOffset(dir); r == pickNone {
				break
			} else if r == pickBusy {
				continue
			}
		} else {
			var ok bool
			if off, bs, ok = j.nextOffset(dir); !ok {
				break
			}
		}
		j.bytes += bs
		j.ios++
		if dir == blockdev.OpWrite {
			v.pending = append(v.pending, piece{j.cur, j.cur.regionOff + off, bs})
		}
	}
}

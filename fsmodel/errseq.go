package fsmodel

import "syscall"

// errSeq is the kernel's errseq_t (lib/errseq.c): the last writeback
// error of a file (its mapping's wb_err) and a counter of errors, so that
// every open file description (struct file's f_wb_err) that samples it
// learns of each new error exactly once.
//
// Layout as the kernel's: the errno in the low 12 bits, a "seen" flag,
// then a counter that advances when an error is recorded after the last
// one was seen.
type errSeq uint32

const (
	errSeqErrnoBits = 12
	errSeqErrnoMask = 1<<errSeqErrnoBits - 1
	errSeqSeen      = 1 << errSeqErrnoBits
	errSeqCtrInc    = 1 << (errSeqErrnoBits + 1)
)

// set records errno (errseq_set): the counter advances only if the
// previous error was seen, so a burst of errors nobody looked at is
// reported once, with the latest errno.
func (e *errSeq) set(errno syscall.Errno) {
	if errno == 0 {
		return
	}
	old := *e
	n := old&^(errSeqErrnoMask|errSeqSeen) | errSeq(errno)&errSeqErrnoMask
	if old&errSeqSeen != 0 {
		n += errSeqCtrInc
	}
	*e = n
}

// sample is what a new open file description starts from
// (errseq_sample): the current value if its error was seen already, else
// 0, so that an error nobody has seen is reported to it.
func (e *errSeq) sample() errSeq {
	if *e&errSeqSeen == 0 {
		return 0
	}
	return *e
}

// checkAndAdvance reports the error recorded since *since, once
// (errseq_check_and_advance): it returns the errno if e moved on from
// *since, marks the error seen and advances *since to it; else 0.
func (e *errSeq) checkAndAdvance(since *errSeq) syscall.Errno {
	if *e == *since {
		return 0
	}
	*e |= errSeqSeen
	*since = *e
	return syscall.Errno(*e & errSeqErrnoMask)
}

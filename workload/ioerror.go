package workload

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/blksim/blksim/blockdev"
)

// fioVerrorLine is the io_u.c line fio 3.33 names in the td_verror text
// of an IO error (td_verror(td, io_u->error, "io_u error")): 1876 in
// Debian's fio 3.33 for a write failing with ENOSPC, whatever the engine.
const fioVerrorLine = 1876

// Strerror is glibc's strerror text for errno (fio prints it), for the
// errnos blksim's IO paths return; others get Go's text, capitalized.
func Strerror(errno int) string {
	switch syscall.Errno(errno) {
	case 0:
		return "Success"
	case syscall.EIO:
		return "Input/output error"
	case syscall.ENOSPC:
		return "No space left on device"
	case syscall.ETIMEDOUT:
		return "Connection timed out"
	case syscall.EINVAL:
		return "Invalid argument"
	case syscall.EILSEQ:
		return "Invalid or incomplete multibyte or wide character"
	}
	s := syscall.Errno(errno).Error()
	if s == "" {
		return fmt.Sprintf("Unknown error %d", errno)
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ioVerror is fio's td_verror text of an IO error, the job's ErrorMsg
// (the err= line of the normal output).
func ioVerror(errno int) string {
	return fmt.Sprintf("file:io_u.c:%d, func=io_u error, error=%s", fioVerrorLine, Strerror(errno))
}

// ddirName is fio's io_ddir_name of a direction.
func ddirName(op blockdev.Op) string {
	if op == blockdev.OpWrite {
		return "write"
	}
	return "read"
}

// ioFailed handles an IO or sync of the job that failed with err, as
// fio's break_on_this_error does: ddir is fio's direction name ("read",
// "write", "sync", "datasync"), file the file's name, off and buflen the
// IO's. An error of a type the job's continue_on_error covers (reads;
// writes and syncs; verify errors, EILSEQ) is counted in TotalErr
// (update_error_count); if it is also one of fio's non-fatal errnos (EIO,
// EILSEQ: td_non_fatal_error's default list) the job goes on: ioFailed
// returns true and the IO is not accounted in the job's figures. Any
// other error is logged as io_u_log_error logs it and, if it is the
// job's first, becomes the job's error; ioFailed returns false and the
// job must stop.
func (j *job) ioFailed(err error, ddir, file string, off, buflen int64) bool {
	errno := errnoOf(err)
	etype := ErrorTypeWrite
	switch {
	case errno == int(syscall.EILSEQ):
		etype = ErrorTypeVerify
	case ddir == "read":
		etype = ErrorTypeRead
	}
	if j.spec.ContinueOnError&etype != 0 {
		j.res.TotalErr++
		if j.res.TotalErr == 1 {
			j.res.FirstError = errno
		}
		if errno == int(syscall.EIO) || errno == int(syscall.EILSEQ) {
			return true
		}
	}
	j.res.ErrorLog = append(j.res.ErrorLog, fmt.Sprintf("fio: io_u error on file %s: %s: %s offset=%d, buflen=%d",
		file, Strerror(errno), ddir, off, buflen))
	if j.res.Error == 0 {
		j.res.Error = errno
		j.res.ErrorMsg = ioVerror(errno)
	}
	return false
}

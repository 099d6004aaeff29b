package workload

import (
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runFaulty runs src on the default stack with the fault.* keys kvs.
func runFaulty(t *testing.T, src string, kvs ...string) []JobResult {
	t.Helper()
	return allJobs(runOn(t, newStackWith(t, 1, kvs...), src))
}

// TestDirectIOErrorFailsJob: a direct IO whose request the device fails
// returns EIO from the syscall, and the job stops there with fio's err=5
// and io_u error text (sync and async engines alike).
func TestDirectIOErrorFailsJob(t *testing.T) {
	for _, engine := range []string{"psync", "libaio", "io_uring"} {
		t.Run(engine, func(t *testing.T) {
			src := "[j]\nrw=write\nbs=4k\nsize=1m\ndirect=1\nfilename=f\niodepth=4\nioengine=" + engine + "\n"
			jobs := runFaulty(t, src, "fault.op=write", "fault.after=10")
			require.Len(t, jobs, 1)
			j := jobs[0]
			assert.Equal(t, int(syscall.EIO), j.Error)
			assert.Equal(t, "file:io_u.c:1876, func=io_u error, error=Input/output error", j.ErrorMsg)
			require.NotEmpty(t, j.ErrorLog)
			assert.Equal(t, "fio: io_u error on file f: Input/output error: write offset=40960, buflen=4096", j.ErrorLog[0])
			assert.Equal(t, uint64(10), j.Write.IOs, "the IOs before the error are accounted, the failed one not")
			assert.False(t, j.ContinueOnError)
		})
	}
}

func TestDirectIOErrnoReachesJob(t *testing.T) {
	tests := []struct {
		errno syscall.Errno
		text  string
	}{
		{syscall.ENOSPC, "No space left on device"},
		{syscall.ETIMEDOUT, "Connection timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			jobs := runFaulty(t, "[j]\nrw=read\nbs=4k\nsize=1m\ndirect=1\nfilename=f\n",
				"fault.op=read", "fault.errno="+map[syscall.Errno]string{syscall.ENOSPC: "ENOSPC", syscall.ETIMEDOUT: "ETIMEDOUT"}[tt.errno])
			assert.Equal(t, int(tt.errno), jobs[0].Error)
			assert.Contains(t, jobs[0].ErrorMsg, "error="+tt.text)
			assert.Equal(t, "fio: io_u error on file f: "+tt.text+": read offset=0, buflen=4096", jobs[0].ErrorLog[0])
		})
	}
}

// TestContinueOnError: fio's break_on_this_error. An error of a type in
// the mask is counted (update_error_count); if its errno is also one of
// the non-fatal ones (EIO, EILSEQ) the job goes on, without accounting
// the failed IO, else it stops there. The report shows the first counted
// error as the job's (fio's ts->error = first_error) although the job
// ran to its end.
func TestContinueOnError(t *testing.T) {
	tests := []struct {
		name      string
		coe       string
		kvs       []string
		wantErr   int // the job's own error (exit status)
		wantShown int // the error its report shows
		wantTot   uint64
		wantFirst int
		wantIOs   uint64 // read+write IOs accounted
		wantFail  bool
	}{
		{"none stops at the first", "none", []string{"fault.op=write", "fault.every=4"}, 5, 5, 0, 0, 3, true},
		{"write goes on past write errors", "write", []string{"fault.op=write", "fault.every=4"}, 0, 5, 64, 5, 192, false},
		{"io covers writes too", "io", []string{"fault.op=write", "fault.every=4"}, 0, 5, 64, 5, 192, false},
		{"all (1) likewise", "1", []string{"fault.op=write", "fault.every=4"}, 0, 5, 64, 5, 192, false},
		{"read does not cover writes", "read", []string{"fault.op=write", "fault.every=4"}, 5, 5, 0, 0, 3, true},
		{"ENOSPC is fatal even with all, and counted", "all", []string{"fault.op=write", "fault.every=4", "fault.errno=ENOSPC"}, 28, 28, 1, 28, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "[j]\nrw=write\nbs=4k\nsize=1m\ndirect=1\nfilename=f\ncontinue_on_error=" + tt.coe + "\n"
			j := runFaulty(t, src, tt.kvs...)[0]
			assert.Equal(t, tt.wantErr, j.Error, j.ErrorMsg)
			shown, msg := j.ReportedError()
			assert.Equal(t, tt.wantShown, shown)
			if shown != 0 {
				assert.Contains(t, msg, "error="+Strerror(shown))
			}
			assert.Equal(t, tt.wantTot, j.TotalErr)
			assert.Equal(t, tt.wantFirst, j.FirstError)
			assert.Equal(t, tt.wantIOs, j.Read.IOs+j.Write.IOs)
			assert.Equal(t, tt.coe != "none", j.ContinueOnError)
			assert.Equal(t, tt.wantFail, len(j.ErrorLog) > 0, "fio logs only the error it stops at")
		})
	}
}

func TestContinueOnErrorOption(t *testing.T) {
	for v, want := range map[string]int{"none": 0, "0": 0, "read": ErrorTypeRead, "write": ErrorTypeWrite,
		"io": ErrorTypeRead | ErrorTypeWrite, "verify": ErrorTypeVerify, "all": ErrorTypeAny, "1": ErrorTypeAny} {
		assert.Equal(t, want, parseString(t, "[j]\ncontinue_on_error="+v+"\n")[0].ContinueOnError, v)
	}
	// Words are matched exactly, as fio's strncmp does.
	for _, bad := range []string{"sometimes", "Write", "ALL"} {
		_, err := ParseWith("t.fio", strings.NewReader("[j]\ncontinue_on_error="+bad+"\n"), ParseOptions{})
		require.Error(t, err, bad)
		assert.ErrorIs(t, err, ErrBadValue)
		assert.Contains(t, err.Error(), "t.fio:2")
	}
}

// TestFaultsDeterministic: the same seed gives the same faults, so the
// same job result.
func TestFaultsDeterministic(t *testing.T) {
	src := "[j]\nrw=randrw\nbs=4k\nsize=2m\ndirect=1\nfilename=f\ncontinue_on_error=io\n"
	a := runFaulty(t, src, "fault.op=any", "fault.probability=0.1")[0]
	b := runFaulty(t, src, "fault.op=any", "fault.probability=0.1")[0]
	assert.Positive(t, a.TotalErr)
	assert.Equal(t, a.TotalErr, b.TotalErr)
	assert.Equal(t, a.Read.IOs, b.Read.IOs)
	assert.Equal(t, a.Write.Clat.Mean(), b.Write.Clat.Mean())
}

// TestBufferedWriteErrorFailsFsync: buffered writes succeed into the page
// cache; the writeback the fsync starts fails, and the fsync (fsync=N or
// end_fsync) returns EIO, failing the job with err=5 as fio's sync io_u.
func TestBufferedWriteErrorFailsFsync(t *testing.T) {
	for _, opt := range []string{"fsync=16", "end_fsync=1"} {
		t.Run(opt, func(t *testing.T) {
			src := "[j]\nrw=write\nbs=4k\nsize=256k\ndirect=0\nfilename=f\n" + opt + "\n"
			j := runFaulty(t, src, "fault.op=write")[0]
			assert.Equal(t, int(syscall.EIO), j.Error)
			assert.Equal(t, "file:io_u.c:1876, func=io_u error, error=Input/output error", j.ErrorMsg)
			require.NotEmpty(t, j.ErrorLog)
			assert.Equal(t, "fio: io_u error on file f: Input/output error: sync offset=0, buflen=0", j.ErrorLog[0])
			if opt == "fsync=16" {
				assert.Equal(t, uint64(16), j.Write.IOs, "the writes before the failed fsync are accounted")
			} else {
				assert.Equal(t, uint64(64), j.Write.IOs)
				assert.Equal(t, "fio: end_fsync failed for file f", j.ErrorLog[1])
			}
		})
	}
}

// group_reporting adds the errors its jobs went on after (fio's
// sum_thread_stats), keeps the first error, and gathers the error lines.
func TestContinueOnErrorGroupReporting(t *testing.T) {
	src := "[j]\nrw=write\nbs=4k\nsize=1m\ndirect=1\ncontinue_on_error=write\nnumjobs=2\nfilename_format=f.$jobnum\n"
	alone := runFaulty(t, src, "fault.op=write", "fault.every=4")
	require.Len(t, alone, 2)
	merged := runFaulty(t, src+"group_reporting\n", "fault.op=write", "fault.every=4")
	require.Len(t, merged, 1)
	assert.Equal(t, 2, merged[0].Jobs)
	assert.Equal(t, alone[0].TotalErr+alone[1].TotalErr, merged[0].TotalErr)
	assert.Positive(t, merged[0].TotalErr)
	assert.Equal(t, int(syscall.EIO), merged[0].FirstError)
}

// A job's open file description samples the file's writeback error when
// the job opens the file, at its start: job b's fsync reports the error
// of a writeback job a's fsync saw first (b's description was opened
// before it; it used to be opened at b's first fsync, after a had seen
// the error, and b's fsync returned 0).
func TestWritebackErrorReachesEveryJobsFsync(t *testing.T) {
	src := "[global]\nbs=4k\nsize=256k\ndirect=0\nfilename=f\nrw=write\n[a]\nfsync=8\n[b]\nfsync=32\n"
	jobs := runFaulty(t, src, "fault.op=write", "fault.count=1")
	require.Len(t, jobs, 2)
	for _, j := range jobs {
		assert.Equal(t, int(syscall.EIO), j.Error, "job %s: %s", j.Name, j.ErrorMsg)
	}
}

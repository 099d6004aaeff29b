package workload

import (
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Space on a 64 MiB device. A buffered write that needs a block the
// device does not have fails at write() with ENOSPC (the delayed
// allocation reservation of ext4_da_write_begin), not later in
// writeback; files whose allocation windows would overrun the device
// still fit when their data does; and f2fs's log, overwritten more than
// the device holds, reuses invalid blocks. Every run verifies its data.
func TestBufferedSpace(t *testing.T) {
	for _, tc := range []struct {
		name, fs, job string
		errno         syscall.Errno
	}{
		{"ext4 past the device", "ext4", "[w]\nrw=write\nbs=1m\nsize=128m\ndirect=0\nend_fsync=1\n", syscall.ENOSPC},
		{"ext4 three files in 64m", "ext4", "[w]\nrw=write\nbs=256k\nsize=20m\nnumjobs=3\nfilename_format=f.$jobnum\ndirect=0\nend_fsync=1\nverify=crc32c\n", 0},
		{"f2fs overwrites twice the device", "f2fs", "[w]\nrw=randwrite\nbs=64k\nsize=32m\nloops=4\nfsync=32\ndirect=0\nverify=crc32c\n", 0},
		// Every block valid but a few: an overwrite reuses the block it
		// invalidates (the log ran past the device's end, EIO).
		{"f2fs overwrites a file filling the device", "f2fs", "[w]\nrw=randwrite\nbs=64k\nsize=63m\nloops=2\nfsync=32\ndirect=0\nverify=crc32c\n", 0},
		// The file's node blocks (the inode and 16 direct nodes) do not
		// fit beside a file the device's size.
		{"f2fs file the device's size", "f2fs", "[w]\nrw=write\nbs=64k\nsize=64m\nend_fsync=1\ndirect=0\n", syscall.ENOSPC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStackWith(t, 1, "fs="+tc.fs, "device.capacity=64m")
			res := runOn(t, st, tc.job)
			for _, j := range allJobs(res) {
				if tc.errno != 0 {
					assert.Equal(t, int(tc.errno), j.Error, j.ErrorMsg)
					assert.Contains(t, j.ErrorMsg, "No space left on device")
					continue
				}
				require.Zero(t, j.Error, j.ErrorMsg)
			}
		})
	}
}

// fio fallocates a file that its first job only writes (fallocate=native,
// the default): on ext4 four files written at once are one extent each;
// with fallocate=none their blocks come from delayed allocation's 8 MiB
// windows, taken in turn as the writers go, so each file is in several.
// A fallocate that finds no room is only logged by fio: the job then
// allocates as it writes (and fails with ENOSPC past the device); with
// fallocate=keep it fails the job's setup.
func TestWriteJobsPreallocate(t *testing.T) {
	for _, tc := range []struct {
		opt     string
		extents int
	}{{"", 1}, {"fallocate=none\n", 2}} {
		st := newStackWith(t, 1, "fs=ext4")
		runOn(t, st, "[w]\nrw=write\nbs=256k\nsize=32m\nnumjobs=4\nfilename_format=f.$jobnum\ndirect=0\nend_fsync=1\n"+tc.opt)
		for _, f := range st.FS.Files() {
			if tc.extents == 1 {
				assert.Len(t, f.Layout(), 1, "%q %s", tc.opt, f.Name())
			} else {
				assert.GreaterOrEqual(t, len(f.Layout()), tc.extents, "%q %s", tc.opt, f.Name())
			}
		}
	}
	_, err := Parse("f.fio", strings.NewReader("[j]\nfallocate=sometimes\n"), noEnv)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `f.fio:2: option "fallocate": bad value "sometimes": expected none, native, posix, keep, truncate, 0 or 1`)

	// fio 3.33 on a 64 MiB ext4: a runs, w fails in its setup.
	st := newStackWith(t, 1, "fs=ext4", "device.capacity=64m")
	res := runOn(t, st, "[a]\nfilename=small\nrw=write\nbs=4k\nsize=4m\ndirect=0\n"+
		"[w]\nfilename=shf\nrw=write\nbs=4k\nsize=80m\ndirect=0\nfallocate=keep\n")
	jobs := allJobs(res)
	require.Len(t, jobs, 2)
	assert.Zero(t, jobs[0].Error, jobs[0].ErrorMsg)
	assert.Equal(t, int(syscall.ENOSPC), jobs[1].Error)
	assert.Equal(t, "file:filesetup.c:93, func=fallocate, error=No space left on device", jobs[1].ErrorMsg)
	assert.Zero(t, jobs[1].Write.IOs)

	// Every job's setup counts, in order (fio 3.33, strace): keep's
	// failure fails its job even when a later job sets the file up
	// again, a failed native preallocation leaves the file short for
	// the next job, and each clone of a keep job fails its own setup.
	const setupFailed = int(syscall.ENOSPC)
	for _, tc := range []struct {
		name, job string
		failed    []bool // per job, a setup failure
	}{
		{"keep then native", "[w1]\nfallocate=keep\n[w2]\nfallocate=native\n", []bool{true, false}},
		{"native then keep", "[w1]\nfallocate=native\n[w2]\nfallocate=keep\n", []bool{false, true}},
		{"keep clones", "[w]\nfallocate=keep\nnumjobs=2\n", []bool{true, true}},
		// Across files, in job order: B's keep takes the room A's
		// second setup (it unlinks A's 4 MiB first) would need.
		{"across files", "[j1]\nfilename=A\nsize=4m\n[j2]\nfilename=B\nsize=34m\nfallocate=keep\n[j3]\nfilename=A\nsize=34m\nfallocate=keep\n", []bool{false, false, true}},
	} {
		st := newStackWith(t, 1, "fs=ext4", "device.capacity=64m")
		jobs := allJobs(runOn(t, st, "[global]\nfilename=shf\nrw=write\nbs=4k\nsize=80m\ndirect=0\n"+tc.job))
		require.Len(t, jobs, len(tc.failed), tc.name)
		for i, failed := range tc.failed {
			if failed {
				assert.Equal(t, setupFailed, jobs[i].Error, "%s: job %d", tc.name, i)
				assert.Contains(t, jobs[i].ErrorMsg, "func=fallocate", "%s: job %d", tc.name, i)
			} else {
				assert.NotContains(t, jobs[i].ErrorMsg, "func=fallocate", "%s: job %d", tc.name, i)
			}
		}
	}
}

// A file one job writes in part and a later one reads whole: after
// fallocate=native, posix or truncate the file has its size when fio
// sets up the reader, which reads the pages never written as zeros
// (without IO here: unwritten or unallocated); after none, 0 or keep it is
// still empty, so fio lays it out whole for the reader, which then reads
// every page from the device (fio 3.33 --debug=file: "layout unlink").
func TestLaterReaderLaysOutAnEmptyFile(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		layout bool
		// fallocate= of a second writer, which sets the file up again if
		// the first left it empty (fio: unlink, then its own mode).
		second string
	}{{"native", false, ""}, {"posix", false, ""}, {"1", false, ""}, {"truncate", false, ""}, {"none", true, ""}, {"0", true, ""}, {"keep", true, ""},
		{"none", false, "native"}, {"keep", false, "native"}, {"native", false, "none"}} {
		st := newStackWith(t, 1, "fs=ext4")
		second := ""
		if tc.second != "" {
			second = "[w2]\nrw=randwrite\nio_size=4k\nfallocate=" + tc.second + "\n"
		}
		runOn(t, st, "[global]\nfilename=shf\nsize=4m\nbs=4k\ndirect=0\nfallocate="+tc.mode+"\n"+
			"[w]\nrw=randwrite\nio_size=256k\nend_fsync=1\n"+second+"[r]\nstonewall\nrw=read\n")
		read := st.Queue.Stats().Sectors[0] * 512
		if tc.layout {
			assert.Equal(t, uint64(4<<20), read, "%s %s: the whole laid-out file is read", tc.mode, tc.second)
		} else {
			assert.LessOrEqual(t, read, uint64(256<<10+4096), "%s %s: only the pages written are read", tc.mode, tc.second)
			if tc.mode != "truncate" {
				assert.Len(t, st.FS.Files()[0].Layout(), 1, "%s %s: preallocated in one run", tc.mode, tc.second)
			}
		}
	}
}

// A direct-IO file that does not fit on the device fails only the jobs
// that use it, with fio 3.33's error (on a 64 MiB ext4, loop-mounted): a
// job that reads it fails laying it out ("fio: ENOSPC on laying out file,
// stopping", err=28 at filesetup.c:240, func=write), one that only writes
// it at its IO (err=28 at io_u.c:1876); the other jobs run.
func TestDirectFileWithoutRoom(t *testing.T) {
	for _, tc := range []struct {
		name, rw, extra string
		want            string
	}{
		{"reader", "randread", "", "file:filesetup.c:240, func=write, error=No space left on device"},
		{"verifying writer", "write", "verify=crc32c\n", "file:filesetup.c:240, func=write, error=No space left on device"},
		{"writer", "randwrite", "", "file:io_u.c:1876, func=io_u error, error=No space left on device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStackWith(t, 1, "fs=ext4", "device.capacity=64m")
			res := runOn(t, st, "[global]\ndirect=1\nbs=4k\nrw="+tc.rw+"\n"+tc.extra+
				"[small]\nfilename=a\nsize=4m\n[huge]\nfilename=b\nsize=200m\n[again]\nfilename=b\nsize=200m\n")
			jobs := allJobs(res)
			require.Len(t, jobs, 3)
			assert.Zero(t, jobs[0].Error, jobs[0].ErrorMsg)
			assert.GreaterOrEqual(t, jobs[0].Read.Issued+jobs[0].Write.Issued, uint64(1024), "small runs whole")
			for _, j := range jobs[1:] {
				assert.Equal(t, int(syscall.ENOSPC), j.Error, j.Name)
				assert.Equal(t, tc.want, j.ErrorMsg, j.Name)
				assert.Zero(t, j.Read.Issued+j.Write.Issued, j.Name)
			}
		})
	}
}

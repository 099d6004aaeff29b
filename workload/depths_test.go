package workload

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fio's queue-depth accounting (io_u_mark_depth, io_u_mark_submit,
// io_u_mark_complete) and issued counts, per engine.
func TestIODepthAccounting(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      IODepthDist
		issued    [2]uint64 // read, write
		syncs     [2]uint64 // fsync, fdatasync
	}{{
		// A sync engine: every IO is one unit in use, one submitting and
		// one reaping call of one IO, whatever iodepth says.
		name:   "psync ignores iodepth",
		src:    "[j]\nrw=randread\nbs=4k\nsize=256k\niodepth=32\ndirect=1\n",
		want:   IODepthDist{Level: [7]uint64{64}, Submit: [7]uint64{0, 64}, Complete: [7]uint64{0, 64}, Submits: 64, Completes: 64},
		issued: [2]uint64{64, 0},
	}, {
		// fsync=4 over 64 writes: 15 syncs in the loop, each counted as
		// an IO at depth 1 (fio 3.33: issued 0,64,0,15).
		name:   "fsync=4",
		src:    "[j]\nrw=write\nbs=4k\nsize=256k\nfsync=4\n",
		want:   IODepthDist{Level: [7]uint64{64 + 15}, Submit: [7]uint64{0, 79}, Complete: [7]uint64{0, 79}, Submits: 79, Completes: 79},
		issued: [2]uint64{0, 64},
		syncs:  [2]uint64{15, 0},
	}, {
		// fdatasync=8: 7 syncs, no end-of-job fsync.
		name:   "fdatasync=8",
		src:    "[j]\nrw=write\nbs=4k\nsize=256k\nfdatasync=8\n",
		want:   IODepthDist{Level: [7]uint64{64 + 7}, Submit: [7]uint64{0, 71}, Complete: [7]uint64{0, 71}, Submits: 71, Completes: 71},
		issued: [2]uint64{0, 64},
		syncs:  [2]uint64{0, 7},
	}, {
		// libaio at iodepth 8, one IO per io_submit: the first seven go
		// in at depths 1 to 7, the rest with the queue full; each of
		// those fills the queue, so a reap of one follows it
		// (iodepth_batch_complete_max 1), and the end reaps the seven
		// left in one call.
		name:   "libaio iodepth=8",
		src:    "[j]\nioengine=libaio\niodepth=8\nrw=randread\nbs=4k\nsize=1m\ndirect=1\n",
		want:   IODepthDist{Level: [7]uint64{1, 2, 4, 249}, Submit: [7]uint64{0, 256}, Complete: [7]uint64{0, 249, 1}, Submits: 256, Completes: 250},
		issued: [2]uint64{256, 0},
	}, {
		// iodepth_batch_submit=4 at iodepth 16: the loop commits 4 at
		// depths 4, 8, 12 and 16; then each IO queued into the full queue
		// is submitted on the way to reap one, and fio's count of queued
		// units, which that does not reset, makes every fourth of them a
		// commit at depth 16 that counts all four (as fio 3.33 prints:
		// 4=0.1%, 8=0.1%, 16=99.9% over 8192 IOs). Each of the last 241
		// IOs fills the queue and a reap of one follows; the end reaps
		// the 15 left.
		name:   "io_uring iodepth_batch_submit=4",
		src:    "[j]\nioengine=io_uring\niodepth=16\niodepth_batch_submit=4\nrw=randread\nbs=4k\nsize=1m\ndirect=1\n",
		want:   IODepthDist{Level: [7]uint64{0, 0, 4, 8, 244}, Submit: [7]uint64{0, 244}, Complete: [7]uint64{0, 241, 0, 1}, Submits: 244, Completes: 242},
		issued: [2]uint64{256, 0},
	}, {
		// Batches of 4 submitted at depths 4, 8, 12 and 16 until the
		// queue is full, then (reaping 2 to 8 at a time) refilled.
		name: "libaio batches",
		src: "[j]\nioengine=libaio\niodepth=16\niodepth_batch_submit=4\niodepth_batch_complete_min=2\n" +
			"iodepth_batch_complete_max=8\nrw=randwrite\nbs=4k\nsize=1m\ndirect=1\n",
		issued: [2]uint64{0, 256},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStack(t, 1)
			j := onlyJob(t, runOn(t, st, tc.src))
			require.Zero(t, j.Error, j.ErrorMsg)
			assert.Equal(t, tc.issued, [2]uint64{j.Read.Issued, j.Write.Issued})
			assert.Equal(t, tc.issued, [2]uint64{j.Read.IOs, j.Write.IOs}, "no IO failed")
			assert.Equal(t, tc.syncs, [2]uint64{j.Sync.IssuedFsync, j.Sync.IssuedDatasync})
			d := j.Depths
			if tc.want != (IODepthDist{}) {
				assert.Equal(t, tc.want, d)
				return
			}
			// Every batch of 4 is counted once, at the depth it brought
			// the job to: 4 (bucket 4-7) first, then 8 or more.
			var level, submit, complete uint64
			for i := range d.Level {
				level += d.Level[i]
				submit += d.Submit[i]
				complete += d.Complete[i]
			}
			assert.Equal(t, uint64(256), level)
			assert.Equal(t, uint64(4), d.Level[2])
			assert.Zero(t, d.Level[0]+d.Level[1]+d.Level[5]+d.Level[6])
			assert.Equal(t, [7]uint64{0, 64}, d.Submit, "each io_submit takes a batch of 4")
			assert.Equal(t, d.Submits, submit)
			assert.Equal(t, d.Completes, complete)
			assert.Zero(t, d.Complete[0]+d.Complete[1], "each reap waits for 2 and more")
		})
	}
}

// The syncs of fsync=N and fdatasync=N across loops and io_size rounds,
// and end_fsync at the end of each, as fio 3.33 issues them (counts from
// its "issued rwts" line, and strace for the end fsyncs): the write count
// runs on across loops; a loop that another follows still issues the
// sync due after its last write, and the next loop starts with it again
// (fio clears last_was_sync); the job's last loop does not. fsync=N does
// not fsync at the end; end_fsync=1 does, per loop, for a writing job.
func TestSyncsAcrossLoops(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		fsyncs    uint64 // in-loop fsync=N syncs
		datasyncs uint64 // in-loop fdatasync=N syncs
		submits   uint64 // IOs, in-loop syncs and end fsyncs
	}{
		{"fsync=16, one loop", "size=64k\nfsync=16\n", 0, 0, 16},
		{"fsync=16, 3 loops", "size=64k\nloops=3\nfsync=16\n", 4, 0, 48 + 4},
		{"fsync=6, 3 loops", "size=64k\nloops=3\nfsync=6\n", 7, 0, 48 + 7},
		{"fdatasync=4, 2 loops", "size=64k\nloops=2\nfdatasync=4\n", 0, 8, 32 + 8},
		{"fsync=16, io_size rounds", "size=64k\nio_size=192k\nfsync=16\n", 4, 0, 48 + 4},
		{"end_fsync, io_size rounds", "size=64k\nio_size=192k\nend_fsync=1\n", 0, 0, 48 + 3},
		{"end_fsync, 3 loops", "size=64k\nloops=3\nend_fsync=1\n", 0, 0, 48 + 3},
		{"end_fsync after a sync", "size=64k\nloops=2\nfsync=16\nend_fsync=1\n", 2, 0, 32 + 2 + 1},
		{"read-only", "rw=read\nsize=64k\nloops=3\nend_fsync=1\n", 0, 0, 48},
		{"verify, 2 loops", "size=256k\nloops=2\nfsync=5\nverify=crc32c\n", 25, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStack(t, 1)
			j := onlyJob(t, runOn(t, st, "[j]\nrw=write\nbs=4k\n"+tc.src))
			require.Zero(t, j.Error, j.ErrorMsg)
			assert.Equal(t, tc.fsyncs, j.Sync.IssuedFsync)
			assert.Equal(t, tc.datasyncs, j.Sync.IssuedDatasync)
			if tc.submits != 0 {
				assert.Equal(t, tc.submits, j.Depths.Submits)
			}
		})
	}
}

// A time_based job keeps making fsync=N and fdatasync=N syncs past its
// first pass over the file: fio's do_io loop runs on while time_based,
// whatever was issued (fio 3.33, size=100k rate_iops=200 runtime=1
// fdatasync=4: 201 writes, 50 fdatasyncs).
func TestTimeBasedSyncsKeepComing(t *testing.T) {
	st := newStack(t, 1)
	j := onlyJob(t, runOn(t, st, "[j]\nrw=write\nbs=4k\nsize=100k\ntime_based\nruntime=1\nrate_iops=200\nfdatasync=4\n"))
	require.Zero(t, j.Error, j.ErrorMsg)
	writes := j.Write.Issued
	assert.Greater(t, writes, uint64(150), "the rate, not the file, bounds the writes")
	assert.Equal(t, writes/4, j.Sync.IssuedDatasync)
}

// io_uring queues end_fsync's fsync (IORING_OP_FSYNC), so fio counts it
// as a unit at depth 1 with a submit and a reap; libaio fsyncs inside the
// submitting call, and fio counts nothing (fio 3.33: io_uring iodepth=4
// over 64 writes shows 1=3.1% with end_fsync=1, 1=1.6% without).
func TestEndFsyncDepthByEngine(t *testing.T) {
	for _, tc := range []struct {
		engine string
		level1 uint64
	}{{"io_uring", 2}, {"libaio", 1}} {
		st := newStack(t, 1)
		j := onlyJob(t, runOn(t, st, "[j]\nioengine="+tc.engine+"\niodepth=4\nrw=write\nbs=4k\nsize=256k\nend_fsync=1\n"))
		require.Zero(t, j.Error, j.ErrorMsg)
		assert.Equal(t, tc.level1, j.Depths.Level[0], tc.engine)
	}
}

// fio's bandwidth and IOPS samples: one per bwavgtime (iopsavgtime)
// interval from the job's start after ramp_time, each the interval's
// amount over its length. An interval counts only if the job still issued
// IO at its end, so a runtime ending on an interval's end loses that one,
// as fio 3.33 does (2 s of 500 ms intervals give 3 samples, 2.2 s give 4,
// 1 s gives 1).
func TestRateSamples(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		runtimeMS   uint64
		avgMS       uint64
		samples     uint64
	}{
		{"default 500 ms", "", 2000, 500, 3},
		{"bwavgtime=250", "bwavgtime=250\niopsavgtime=250\n", 2000, 250, 7},
		{"ramp_time", "ramp_time=1s\n", 2000, 500, 3},
		{"runtime not a multiple", "runtime=2200ms\n", 2200, 500, 4},
		{"1 s", "runtime=1s\n", 1000, 500, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStack(t, 1)
			j := onlyJob(t, runOn(t, st, "[j]\nrw=randread\nbs=4k\nsize=64m\ndirect=1\ntime_based\nruntime=2s\n"+tc.extra))
			require.Zero(t, j.Error, j.ErrorMsg)
			r := &j.Read
			assert.Equal(t, tc.samples, r.BW.N)
			assert.Equal(t, tc.samples, r.IOPS.N)
			assert.Zero(t, j.Write.BW.N+j.Write.IOPS.N, "no writes, no samples")
			// Each IOPS sample is an interval's IOs times 1000 over its
			// length in ms: together the IOs of the sampled intervals,
			// at this steady rate their share of the runtime's.
			ios := math.Round(r.IOPS.Mean*float64(r.IOPS.N)) * float64(tc.avgMS) / 1000
			share := float64(tc.samples*tc.avgMS) / float64(tc.runtimeMS)
			assert.InEpsilon(t, float64(r.IOs)*share, ios, 0.02)
			// The same intervals in KiB/s: 4 KiB per IO.
			assert.InDelta(t, 4*r.IOPS.Mean, r.BW.Mean, 1)
			assert.LessOrEqual(t, r.IOPS.Min, r.IOPS.Max)
			assert.Greater(t, r.IOPS.Min, uint64(0))
		})
	}
}

// Verify reads are not sampled; an async engine's completions are sampled
// when reaped, as fio counts them.
func TestRateSamplesVerifyAndAsync(t *testing.T) {
	st := newStack(t, 1)
	j := onlyJob(t, runOn(t, st, "[j]\nrw=write\nbs=4k\nsize=32m\ndirect=1\nverify=crc32c\n"))
	require.Zero(t, j.Error, j.ErrorMsg)
	assert.NotZero(t, j.Read.IOs, "verify read the file back")
	assert.Zero(t, j.Read.BW.N, "verify reads are not sampled")

	st = newStack(t, 1)
	j = onlyJob(t, runOn(t, st, "[j]\nioengine=libaio\niodepth=16\nrw=randread\nbs=4k\nsize=64m\ndirect=1\ntime_based\nruntime=1s\n"))
	require.Zero(t, j.Error, j.ErrorMsg)
	// 1 s of 500 ms intervals: the second ends as the job stops issuing.
	assert.Equal(t, uint64(1), j.Read.IOPS.N)
	assert.InEpsilon(t, float64(j.Read.IOs)/2, j.Read.IOPS.Mean/2, 0.02)
}

// Issued reads, writes and syncs of 4 KiB write jobs as fio 3.33 counts
// them ("issued rwts" on a scratch file): io_size rounds with verify
// (each round verified, the bytes read counting towards io_size),
// number_ios counting verify reads, loops before io_size rounds, syncs
// never in a verify phase and after verify_backlog's reads, a synchronous
// time_based job that never verifies.
func TestIssuedCountsMatchFio(t *testing.T) {
	for _, tc := range []struct {
		src   string
		want  [3]uint64 // reads, writes, fsyncs
		async bool
	}{
		{"size=64k\nio_size=192k\nverify=crc32c\n", [3]uint64{32, 32, 0}, false},
		{"size=64k\nio_size=320k\nverify=crc32c\n", [3]uint64{48, 48, 0}, false},
		{"rw=randwrite\nsize=64k\nio_size=160k\nverify=crc32c\n", [3]uint64{32, 32, 0}, false},
		{"ioengine=libaio\niodepth=8\nsize=256k\nio_size=768k\nverify=crc32c\n", [3]uint64{128, 128, 0}, true},
		{"size=64k\nio_size=192k\nnumber_ios=40\nverify=crc32c\n", [3]uint64{24, 24, 0}, false},
		{"size=64k\nnumber_ios=10\nverify=crc32c\n", [3]uint64{10, 10, 0}, false},
		{"size=64k\nloops=2\nio_size=192k\n", [3]uint64{0, 48, 0}, false},
		{"size=64k\nloops=2\nio_size=96k\n", [3]uint64{0, 32, 0}, false},
		{"size=64k\nloops=2\nio_size=96k\nfsync=5\n", [3]uint64{0, 32, 6}, false},
		{"size=64k\nfsync=16\nverify=crc32c\n", [3]uint64{16, 16, 0}, false},
		{"size=64k\nfsync=4\nverify=crc32c\nverify_backlog=4\n", [3]uint64{16, 16, 3}, false},
		{"size=64k\nloops=3\nfsync=16\nverify=crc32c\n", [3]uint64{48, 48, 4}, false},
		{"size=64k\nloops=2\nnumber_ios=8\nfsync=4\n", [3]uint64{0, 16, 3}, false},
	} {
		t.Run(strings.ReplaceAll(tc.src, "\n", " "), func(t *testing.T) {
			st := newStack(t, 1)
			src := "[j]\nrw=write\nbs=4k\n" + tc.src
			if tc.async {
				src += "direct=1\n"
			}
			j := onlyJob(t, runOn(t, st, src))
			require.Zero(t, j.Error, j.ErrorMsg)
			assert.Equal(t, tc.want, [3]uint64{j.Read.Issued, j.Write.Issued, j.Sync.IssuedFsync})
		})
	}
}

// A buffered file whose first job reads it is laid out as fio lays it out
// (written whole before the job, extend_file's new_layout): with the
// default invalidate=1 its reads go to the device, with invalidate=0 they
// find it cached. A file a job writes first is not laid out.
func TestBufferedReadOfFreshFile(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		devReads  bool
	}{
		{"invalidated", "[r]\nrw=randread\nbs=4k\nsize=1m\n", true},
		{"kept cached", "[r]\nrw=randread\nbs=4k\nsize=1m\ninvalidate=0\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStack(t, 1)
			j := onlyJob(t, runOn(t, st, tc.src))
			require.Zero(t, j.Error, j.ErrorMsg)
			assert.Equal(t, uint64(256), j.Read.IOs)
			got := st.Queue.Stats().IOs[0]
			if tc.devReads {
				assert.Greater(t, got, uint64(128), "reads reach the device")
			} else {
				assert.Zero(t, got)
			}
		})
	}
	st := newStack(t, 1)
	res := runOn(t, st, "[w]\nrw=write\nbs=4k\nsize=1m\nend_fsync=1\n[r]\nstonewall\nrw=read\nbs=4k\nsize=1m\nfilename=w.0.0\n")
	for _, g := range res.Groups {
		for _, j := range g.Jobs {
			require.Zero(t, j.Error, j.ErrorMsg)
		}
	}
	f, err := st.FS.Create("w.0.0") // the existing file
	require.NoError(t, err)
	assert.Equal(t, 256, len(f.Blocks()), "the writer's blocks, allocated at writeback")
}

// fsync and fdatasync end with a cache flush (blkdev_issue_flush) on a
// device with a volatile write cache, direct-IO files included: without
// a journal, one flush request per sync; none on a device without one,
// where the sync of a direct-IO file costs nothing on the device. With
// ext4's journal a sync whose transaction must be committed sends no
// flush of its own: the commit block's PREFLUSH|FUA is a flush before
// it, and the disk honours the FUA.
func TestSyncsFlushTheWriteCache(t *testing.T) {
	for _, tc := range []struct {
		name, set, job string
		flushes        uint64
	}{
		// fio makes no sync after the last write of the last loop.
		{"hdd direct fsync=4", "device.profile=hdd-7200\next4.journal=false", "direct=1\nfsync=4\n", 7},
		{"hdd buffered fdatasync=8 end_fsync", "device.profile=hdd-7200\next4.journal=false", "direct=0\nfdatasync=8\nend_fsync=1\n", 3 + 1},
		{"hdd write_cache=false", "device.profile=hdd-7200\ndevice.write_cache=false", "direct=1\nfsync=4\n", 0},
		{"p3600", "device.profile=p3600", "direct=1\nfsync=4\n", 0},
		// Every fsync finds the file's times changed (its writes took a
		// new tick of the coarse clock), so it commits: one flush. The
		// times the last writes changed are committed after the run.
		{"hdd journal direct fsync=4", "device.profile=hdd-7200", "direct=1\nfsync=4\n", 7},
		// fdatasync after buffered writes: their allocation at writeback
		// must be committed; after an overwrite, times alone, it is not.
		{"hdd journal buffered fdatasync=8 end_fsync", "device.profile=hdd-7200", "direct=0\nfdatasync=8\nend_fsync=1\n", 3 + 1},
		{"hdd journal direct fdatasync=4", "device.profile=hdd-7200", "direct=1\nfdatasync=4\n", 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStackWith(t, 1, strings.Split(tc.set, "\n")...)
			j := onlyJob(t, runOn(t, st, "[j]\nrw=randwrite\nbs=4k\nsize=128k\nnumber_ios=32\n"+tc.job))
			require.Zero(t, j.Error, j.ErrorMsg)
			assert.Equal(t, tc.flushes, st.Queue.Stats().Flushes)
		})
	}
}

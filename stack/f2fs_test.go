package stack_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/stack"
	"github.com/blksim/blksim/workload"
)

const f2fsDir = "../testdata/experiments/f2fs-writepages"

// runExperiment runs an experiment directory's job file on one of its
// stacks (seed 1, job options overridden as on the command line) and
// returns the result (with the engine's lock table, as blksim run fills
// it) and the device counters.
func runExperiment(t *testing.T, dir, job, stackFile string, over ...workload.CommandLineOption) (*workload.Result, blockdev.DiskStats) {
	t.Helper()
	specs, err := workload.ParseFileWith(filepath.Join(dir, job), workload.ParseOptions{Overrides: over})
	require.NoError(t, err)
	cfg, err := stack.Load(filepath.Join(dir, stackFile))
	require.NoError(t, err)
	st, err := stack.Build(cfg, 1)
	require.NoError(t, err)
	defer st.Close()
	res, err := workload.Run(st.Engine, st.FS, specs, workload.RunOptions{AppPerIO: st.AppPerIO})
	require.NoError(t, err)
	res.Locks = st.Engine.LockStats()
	return res, st.Queue.Stats()
}

// runTiotest runs the shipped tiotest job on one stack and returns the
// read group's result and the device counters.
func runTiotest(t *testing.T, stackFile string) (workload.JobResult, blockdev.DiskStats) {
	t.Helper()
	res, stats := runExperiment(t, f2fsDir, "tiotest.fio", stackFile)
	require.Len(t, res.Groups, 2)
	return res.Groups[1].Jobs[0], stats
}

// share is the fraction of requests in sizes whose size satisfies keep.
func share(sizes map[int64]uint64, keep func(int64) bool) float64 {
	var n, all uint64
	for s, c := range sizes {
		all += c
		if keep(s) {
			n += c
		}
	}
	if all == 0 {
		return 0
	}
	return float64(n) / float64(all)
}

// EXPERIMENTS.md section 3: without the writepages mutex, concurrent
// fsyncs interleave f2fs's per-page allocations and the files read back
// in 4 KiB requests; with it they read back in 512 KiB requests; writes
// are mostly 512 KiB either way. The with-mutex read throughput is within
// 20% of the published 758 MiB/s. The without-mutex throughput is within
// 20% of 185 on the shipped stacks too, but from 2.4 times the published
// count of 4 KiB reads served twice as fast (see
// testdata/experiments/f2fs-writepages/PUBLISHED.md), so this test does not
// hold the model to that figure.
func TestF2FSWritepagesExperiment(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 2 GiB of buffered IO; skipped with -short")
	}
	small := func(s int64) bool { return s <= 8<<10 }
	big := func(s int64) bool { return s == 512<<10 }

	read, st := runTiotest(t, "without-mutex.toml")
	mibs := float64(read.Read.Bytes) / (float64(read.Runtime) / 1e9) / (1 << 20)
	t.Logf("without mutex: read %.0f MiB/s (published 185), read requests %v", mibs, st.DispatchedSizes[blockdev.OpRead])
	assert.GreaterOrEqual(t, share(st.DispatchedSizes[blockdev.OpRead], small), 0.85, "read requests <= 8 KiB")
	assert.GreaterOrEqual(t, share(st.DispatchedSizes[blockdev.OpWrite], big), 0.75, "write requests 512 KiB")

	read, st = runTiotest(t, "with-mutex.toml")
	mibs = float64(read.Read.Bytes) / (float64(read.Runtime) / 1e9) / (1 << 20)
	t.Logf("with mutex: read %.0f MiB/s (published 758), read requests %v", mibs, st.DispatchedSizes[blockdev.OpRead])
	assert.GreaterOrEqual(t, share(st.DispatchedSizes[blockdev.OpRead], big), 0.75, "read requests 512 KiB")
	assert.GreaterOrEqual(t, share(st.DispatchedSizes[blockdev.OpWrite], big), 0.75, "write requests 512 KiB")
	assert.InEpsilon(t, 758, mibs, 0.20)
}

// countSleeps counts the block layer's S events (a submitter sleeping for
// a request).
type countSleeps struct{ n int }

func (c *countSleeps) Trace(ev *blockdev.TraceEvent) {
	if ev.Action == blockdev.TraceSleep {
		c.n++
	}
}

// TestF2FSFullRequestList runs the tiotest job, shrunk, on cfq with a
// request list of 4, so that writeback and readahead submitters sleep for
// requests (get_request) while f2fs's merged write bio is in use: a
// submitter holds io_rwsem across its sleep, the others wait, and every
// page still reaches the device (no job blocks forever) and reads back
// with its stamp. Before io_rwsem was modelled, others appended pages to
// a bio that was already being submitted and the fsyncs waited forever.
func TestF2FSFullRequestList(t *testing.T) {
	for _, stackFile := range []string{"without-mutex.toml", "with-mutex.toml"} {
		t.Run(stackFile, func(t *testing.T) {
			specs, err := workload.ParseFileWith(filepath.Join(f2fsDir, "tiotest.fio"), workload.ParseOptions{
				Overrides: []workload.CommandLineOption{{Name: "size", Value: "2m", HasValue: true}},
			})
			require.NoError(t, err)
			cfg, err := stack.Load(filepath.Join(f2fsDir, stackFile))
			require.NoError(t, err)
			require.NoError(t, cfg.SetArg("queue.nr_requests=4"))
			st, err := stack.Build(cfg, 1)
			require.NoError(t, err)
			defer st.Close()
			sleeps := &countSleeps{}
			st.Queue.SetTracer(sleeps)
			res, err := workload.Run(st.Engine, st.FS, specs, workload.RunOptions{AppPerIO: st.AppPerIO})
			require.NoError(t, err)
			require.Len(t, res.Groups, 2)
			for _, g := range res.Groups {
				for _, j := range g.Jobs {
					assert.Zero(t, j.Error, j.ErrorMsg)
				}
			}
			assert.Positive(t, sleeps.n, "no submitter slept for a request")
			assert.Equal(t, uint64(64<<20), res.Groups[1].Jobs[0].Read.Bytes)
			assert.True(t, res.Integrity.On)
			assert.Positive(t, res.Integrity.Reads)
			assert.Zero(t, res.Integrity.StaleReads, "reads of pages whose write never reached the device")
		})
	}
}

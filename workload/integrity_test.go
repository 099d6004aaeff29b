package workload

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/stack"
)

// oracleStep is one event of a synthetic history: a write call's start
// ("ws") or end ("we"), a read's start ("rs") or its check ("rc") with
// the stamps it found.
type oracleStep struct {
	op     string
	writer uint32
	seq    uint64
	off, n int64 // bytes (ws)
	read   int   // which read (rs, rc)
	found  []found
}

// found is a run of 512-byte sectors holding one write's stamp (writer 0:
// never written) in a read's data, in file order.
type found struct {
	writer  uint32
	seq     uint64
	sectors int64
}

func ws(w uint32, seq uint64, off, n int64) oracleStep {
	return oracleStep{op: "ws", writer: w, seq: seq, off: off, n: n}
}
func we(w uint32, seq uint64) oracleStep { return oracleStep{op: "we", writer: w, seq: seq} }
func rs(read int) oracleStep             { return oracleStep{op: "rs", read: read} }

// rc checks read number read, which started at file offset off.
func rc(read int, off int64, f ...found) oracleStep {
	return oracleStep{op: "rc", read: read, off: off, found: f}
}

// pages of 4 KiB, in sectors.
func pg(n int64) int64 { return n * sectorsPerPage }

func TestOracleSyntheticHistories(t *testing.T) {
	tests := []struct {
		name  string
		steps []oracleStep
		want  IntegrityStats
	}{{
		name: "torn: an in-flight write seen in one page, not the other",
		steps: []oracleStep{ws(1, 1, 0, 8192), rs(0),
			rc(0, 0, found{1, 1, pg(1)}, found{0, 0, pg(1)})},
		want: IntegrityStats{Reads: 1, TornReads: 1, TornPages: 1},
	}, {
		name: "torn inside a page (a page copy half done)",
		steps: []oracleStep{ws(1, 1, 0, 4096), rs(0),
			rc(0, 0, found{1, 1, 3}, found{0, 0, 5})},
		want: IntegrityStats{Reads: 1, TornReads: 1, TornPages: 1},
	}, {
		name: "torn: a new write over an older one, partly landed",
		steps: []oracleStep{ws(1, 1, 0, 16384), we(1, 1), ws(2, 1, 0, 16384), rs(0),
			rc(0, 0, found{2, 1, pg(1)}, found{1, 1, pg(3)})},
		want: IntegrityStats{Reads: 1, TornReads: 1, TornPages: 3},
	}, {
		name: "not torn: a newer write overwrote part of a completed one",
		steps: []oracleStep{ws(1, 1, 0, 8192), we(1, 1), ws(2, 1, 4096, 4096), rs(0),
			rc(0, 0, found{1, 1, pg(1)}, found{2, 1, pg(1)})},
		want: IntegrityStats{Reads: 1},
	}, {
		name: "not torn: the read saw none of the in-flight write",
		steps: []oracleStep{ws(1, 1, 0, 8192), we(1, 1), ws(2, 1, 0, 8192), rs(0),
			rc(0, 0, found{1, 1, pg(2)})},
		want: IntegrityStats{Reads: 1},
	}, {
		name: "a page torn against two writes counts once",
		steps: []oracleStep{ws(1, 1, 0, 4096), ws(2, 1, 0, 4096), rs(0),
			rc(0, 0, found{1, 1, 2}, found{0, 0, 2}, found{2, 1, 2}, found{0, 0, 2})},
		want: IntegrityStats{Reads: 1, TornReads: 1, TornPages: 1},
	}, {
		name: "stale: a write that completed before another started and completed",
		steps: []oracleStep{ws(1, 1, 0, 4096), we(1, 1), ws(2, 1, 0, 4096), we(2, 1), rs(0),
			rc(0, 0, found{1, 1, pg(1)})},
		want: IntegrityStats{Reads: 1, StaleReads: 1, StalePages: 1},
	}, {
		name: "stale: never-written data after a completed write",
		steps: []oracleStep{ws(1, 1, 4096, 4096), we(1, 1), rs(0),
			rc(0, 0, found{0, 0, pg(1)}, found{0, 0, pg(1)})},
		want: IntegrityStats{Reads: 1, StaleReads: 1, StalePages: 1},
	}, {
		name: "not stale: concurrent writes complete in either order",
		steps: []oracleStep{ws(1, 1, 0, 4096), ws(2, 1, 0, 4096), we(2, 1), we(1, 1), rs(0),
			rc(0, 0, found{2, 1, pg(1)})},
		want: IntegrityStats{Reads: 1},
	}, {
		name: "not stale: the newer write completed after the read started",
		steps: []oracleStep{ws(1, 1, 0, 4096), we(1, 1), rs(0), ws(2, 1, 0, 4096), we(2, 1),
			rc(0, 0, found{1, 1, pg(1)})},
		want: IntegrityStats{Reads: 1},
	}, {
		name: "not stale: nothing completed before the read started",
		steps: []oracleStep{rs(0), ws(1, 1, 0, 4096), we(1, 1),
			rc(0, 0, found{0, 0, pg(1)})},
		want: IntegrityStats{Reads: 1},
	}, {
		name: "stale and not: one read started before the second write, one after",
		steps: []oracleStep{ws(1, 1, 0, 4096), we(1, 1), rs(0), ws(1, 2, 0, 4096), we(1, 2), rs(1),
			rc(0, 0, found{1, 1, pg(1)}), rc(1, 0, found{1, 1, pg(1)})},
		want: IntegrityStats{Reads: 2, StaleReads: 1, StalePages: 1},
	}, {
		name: "torn and stale: a completed write half lost",
		steps: []oracleStep{ws(1, 1, 0, 8192), we(1, 1), rs(0),
			rc(0, 0, found{1, 1, pg(1)}, found{0, 0, pg(1)})},
		want: IntegrityStats{Reads: 1, TornReads: 1, TornPages: 1, StaleReads: 1, StalePages: 1},
	}, {
		name: "unaligned read: pages are file-aligned",
		steps: []oracleStep{ws(1, 1, 0, 8192), rs(0),
			rc(0, 2048, found{1, 1, 4}, found{0, 0, 4})},
		want: IntegrityStats{Reads: 1, TornReads: 1, TornPages: 1},
	}, {
		name: "a failed write is not judged",
		steps: []oracleStep{ws(1, 1, 0, 8192), {op: "wf", writer: 1, seq: 1}, rs(0),
			rc(0, 0, found{1, 1, pg(1)}, found{0, 0, pg(1)})},
		want: IntegrityStats{Reads: 1},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := newOracle(4)
			h := o.watch()
			starts := map[int]uint64{}
			var got IntegrityStats
			for _, s := range tc.steps {
				st := blockdev.Stamp{Writer: s.writer, Seq: s.seq}
				switch s.op {
				case "ws":
					o.writeStart(h, st, s.off, s.n)
				case "we":
					o.writeEnd(st, true)
				case "wf":
					o.writeEnd(st, false)
				case "rs":
					starts[s.read] = o.readStart()
				case "rc":
					var data []blockdev.StampRun
					for _, f := range s.found {
						data = append(data, blockdev.StampRun{Sectors: f.sectors, Stamp: blockdev.Stamp{Writer: f.writer, Seq: f.seq}})
					}
					o.checkRead(h, starts[s.read], s.off/blockdev.SectorSize, data, &got)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// A writer's old calls are pruned; a read that finds one of them where a
// later write (started after it ended) completed is still stale.
func TestOraclePrunedWriterStillStale(t *testing.T) {
	o := newOracle(2)
	h := o.watch()
	o.writeStart(h, blockdev.Stamp{Writer: 1, Seq: 1}, 0, 4096)
	o.writeEnd(blockdev.Stamp{Writer: 1, Seq: 1}, true)
	for seq := uint64(2); seq < 2+2*writerKeep; seq++ {
		o.writeStart(h, blockdev.Stamp{Writer: 1, Seq: seq}, 1<<20, 4096)
		o.writeEnd(blockdev.Stamp{Writer: 1, Seq: seq}, true)
	}
	require.Nil(t, o.writers[0].at(1), "seq 1 should have been pruned")
	require.LessOrEqual(t, o.writers[0].n, writerKeep)
	o.writeStart(h, blockdev.Stamp{Writer: 2, Seq: 1}, 0, 4096)
	o.writeEnd(blockdev.Stamp{Writer: 2, Seq: 1}, true)
	var got IntegrityStats
	o.checkRead(h, o.readStart(), 0, []blockdev.StampRun{{Sectors: 8, Stamp: blockdev.Stamp{Writer: 1, Seq: 1}}}, &got)
	assert.Equal(t, IntegrityStats{Reads: 1, StaleReads: 1, StalePages: 1}, got)
}

func TestFileHistoryRuns(t *testing.T) {
	h := newOracle(1).watch()
	h.complete(0, 16, 0, 1)    // [0,16) m=0 at=1
	h.complete(4, 8, 1, 2)     // [4,12) m=1 at=2, prev m=0 at=1
	h.complete(2040, 16, 0, 3) // across a chunk boundary; m=0 keeps nothing older
	got := h.runsIn(nil, 0, 4096)
	want := []histRun{
		{0, 4, histVal{m: 0, at: 1}},
		{4, 12, histVal{m: 1, at: 2, pm: 0, pat: 1}},
		{12, 16, histVal{m: 0, at: 1}},
		{2040, 2048, histVal{m: 0, at: 3}},
		{2048, 2056, histVal{m: 0, at: 3}},
	}
	assert.Equal(t, want, got)
	assert.Equal(t, []histRun{{5, 6, histVal{m: 1, at: 2, pm: 0, pat: 1}}}, h.runsIn(nil, 5, 6))
	m, ok := histVal{m: 1, at: 2, pm: 0, pat: 1}.asOf(1)
	assert.True(t, ok)
	assert.Zero(t, m)
	_, ok = histVal{m: 3, at: 5, pm: 1, pat: 4}.asOf(3)
	assert.False(t, ok, "both values set after the read started")
}

// runIntegrity runs src on a default stack with the given keys set.
func runIntegrity(t *testing.T, src string, keys ...string) *Result {
	t.Helper()
	cfg := stack.Default()
	for _, k := range keys {
		require.NoError(t, cfg.SetArg(k))
	}
	st, err := stack.Build(cfg, 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	res, err := Run(st.Engine, st.FS, parseString(t, src), RunOptions{AppPerIO: st.AppPerIO, NoIntegrity: !st.IntegrityCheck})
	require.NoError(t, err)
	return res
}

// tearJob: one job rewrites a 1 MiB range with 1 MiB direct writes while
// three read it with 1 MiB direct reads (psync or libaio).
const tearJob = `
[global]
direct=1
bs=1M
size=1M
filename=shared.dat
time_based
runtime=20ms
thread
[writer]
rw=write
ioengine=psync
[reader]
rw=read
numjobs=3
ioengine=%s
iodepth=2
`

func TestOracleEndToEndTornDIO(t *testing.T) {
	tests := []struct {
		name   string
		engine string
		keys   []string
		torn   bool
	}{
		// dioread_nolock: reads take no inode lock, and a 1 MiB write split
		// into 8 requests of 128 KiB lands piece by piece under them.
		{"dioread_nolock psync", "psync", []string{"ext4.parallel_dio_reads=false", "ext4.dioread_nolock=true", "queue.max_sectors_kb=128"}, true},
		{"dioread_nolock libaio", "libaio", []string{"ext4.parallel_dio_reads=false", "ext4.dioread_nolock=true", "queue.max_sectors_kb=128"}, true},
		// 5.2 defaults: reads shared and writes exclusive across the IO.
		{"ext4 defaults psync", "psync", []string{"queue.max_sectors_kb=128"}, false},
		// An asynchronous direct read holds i_rwsem only while it is
		// submitted (the read_iter returns -EIOCBQUEUED and unlocks) and
		// writes do not wait for it (no inode_dio_wait): tearing, as in
		// Linux.
		{"ext4 defaults libaio", "libaio", []string{"queue.max_sectors_kb=128"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := runIntegrity(t, fmt.Sprintf(tearJob, tc.engine), tc.keys...)
			in := res.Integrity
			require.True(t, in.On)
			require.NotZero(t, in.Reads)
			assert.Zero(t, in.StaleReads, "stale reads")
			if tc.torn {
				assert.NotZero(t, in.TornReads)
				assert.GreaterOrEqual(t, in.TornPages, in.TornReads)
			} else {
				assert.Zero(t, in.TornReads)
			}
			// The totals are the sum of the jobs'.
			var sum IntegrityStats
			for _, j := range allJobs(res) {
				assert.True(t, j.Integrity.On)
				sum.Merge(&j.Integrity)
			}
			assert.Equal(t, in, sum)
		})
	}
}

func TestOracleBufferedSharedFileClean(t *testing.T) {
	for _, engine := range []string{"psync", "libaio"} {
		t.Run(engine, func(t *testing.T) {
			res := runIntegrity(t, `
[global]
direct=0
bs=4k
size=1M
rw=randrw
filename=buf.dat
ioengine=`+engine+`
iodepth=4
numjobs=4
time_based
runtime=5ms
thread
group_reporting
[buf]
`)
			require.True(t, res.Integrity.On)
			assert.NotZero(t, res.Integrity.Reads)
			assert.Zero(t, res.Integrity.TornReads)
			assert.Zero(t, res.Integrity.StaleReads)
			j := onlyJob(t, res)
			assert.Equal(t, res.Integrity, j.Integrity, "group_reporting merges the jobs' counts")
		})
	}
}

func TestOracleOffWhenNotShared(t *testing.T) {
	src := `
[global]
direct=1
bs=4k
size=1M
number_ios=50
thread
[r]
rw=randread
filename=a.dat
[w]
rw=randwrite
filename=b.dat
`
	res := runIntegrity(t, src)
	assert.False(t, res.Integrity.On)
	for _, j := range allJobs(res) {
		assert.False(t, j.Integrity.On)
	}
	// Sharing the file turns it on; integrity.check=false turns it off.
	shared := `
[global]
direct=1
bs=4k
size=1M
number_ios=50
thread
filename=a.dat
[r]
rw=randread
[w]
rw=randwrite
`
	assert.True(t, runIntegrity(t, shared).Integrity.On)
	assert.False(t, runIntegrity(t, shared, "integrity.check=false").Integrity.On)
}

package stack_test

import (
	"strings"
	"testing"
	"time"

	"github.com/blksim/blksim/stack"
	"github.com/blksim/blksim/workload"
	"github.com/stretchr/testify/require"
)

// benchJob is the acceptance workload of the engine issue: 8 psync jobs,
// 4 KiB direct randrw on one shared file of the P3600 model.
const benchJob = `
[global]
direct=1
rw=randrw
ioengine=psync
bs=4k
size=20G
numjobs=8
thread
filename=bench.dat
group_reporting
time_based
runtime=%s
[bench]
`

// BenchmarkFullStackDIO4kRandRW runs the whole stack (engine, ext4 iomap
// locking, queue, NVMe model, fio job loop, and the atomicity oracle, on
// by default as the jobs read and write one file) and reports simulated
// IOs per wall second. Each iteration simulates one second.
func BenchmarkFullStackDIO4kRandRW(b *testing.B) {
	benchFullStack(b, workload.RunOptions{})
}

// BenchmarkFullStackDIO4kRandRWNoIntegrity is BenchmarkFullStackDIO4kRandRW
// with the atomicity oracle off: the difference is the oracle's cost.
func BenchmarkFullStackDIO4kRandRWNoIntegrity(b *testing.B) {
	benchFullStack(b, workload.RunOptions{NoIntegrity: true})
}

func benchFullStack(b *testing.B, opt workload.RunOptions) {
	specs, err := workload.Parse("bench.fio", strings.NewReader(strings.Replace(benchJob, "%s", "1", 1)), nil)
	require.NoError(b, err)
	cfg := stack.Default()
	require.NoError(b, cfg.SetArg("ext4.iomap_dio=true"))
	var ios uint64
	var wall time.Duration
	b.ReportAllocs()
	for b.Loop() {
		st, err := stack.Build(cfg, 1)
		require.NoError(b, err)
		start := time.Now()
		opt.AppPerIO = st.AppPerIO
		res, err := workload.Run(st.Engine, st.FS, specs, opt)
		wall += time.Since(start)
		require.NoError(b, err)
		ios += res.Engine.SimulatedIOs
		require.NoError(b, st.Engine.Close())
	}
	b.ReportMetric(float64(ios)/wall.Seconds(), "sim-IOs/s")
	b.ReportMetric(float64(ios)/float64(b.N), "IOs/op")
}

package report

import (
	"bytes"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/blksim/blksim/internal/latency"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/workload"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files under testdata/ from the current output")

// checkGolden compares got with testdata/name, or rewrites the file with
// -rewrite.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -rewrite to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run go test -rewrite to accept):\n%s", path, lineDiff(string(want), string(got)))
	}
}

// lineDiff shows the first differing line of two texts.
func lineDiff(want, got string) string {
	wl, gl := bytes.Split([]byte(want), []byte("\n")), bytes.Split([]byte(got), []byte("\n"))
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g []byte
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if !bytes.Equal(w, g) {
			return "line " + strconv.Itoa(i+1) + ":\nwant: " + string(w) + "\ngot:  " + string(g)
		}
	}
	return "(no line differs)"
}

// gen records n latencies into the direction: clat from clat(), slat from
// slat() when non-nil, lat = slat + clat.
func gen(d *workload.DirStats, n int, bs uint64, slat, clat func() int64) {
	for range n {
		var s int64
		if slat != nil {
			s = slat()
			d.Slat.Record(s)
		}
		c := clat()
		d.Clat.Record(c)
		d.ClatDist.Record(c)
		d.Lat.Record(s + c)
	}
	d.IOs += uint64(n)
	d.Issued += uint64(n)
	d.Bytes += uint64(n) * bs
}

// samples records n bandwidth and IOPS samples of a direction moving bs
// bytes per IO at about iops (stddev sd), as a run's 500 ms intervals give.
func samples(d *workload.DirStats, n int, bs uint64, iops, sd float64, rng *rand.Rand) {
	for range n {
		v := uint64(max(iops+rng.NormFloat64()*sd, 1))
		d.IOPS.Add(v)
		d.BW.Add(v * bs / 1024)
	}
}

// syncDepths fills a sync-engine job's queue-depth figures as a run does:
// one unit in use, one call to submit and one to reap per IO.
func syncDepths(j *workload.JobResult) {
	n := j.Read.Issued + j.Write.Issued + j.Sync.IssuedFsync + j.Sync.IssuedDatasync
	j.Depths = workload.IODepthDist{Level: [7]uint64{n}, Submit: [7]uint64{0, n}, Complete: [7]uint64{0, n}, Submits: n, Completes: n}
}

// sampleResult is a hand-built Result covering the report's cases: a sync
// read job (nsec/usec, no slat), two clones of an async mixed job in one
// group (slat in nsec, clat in usec, run=MIN-MAX), a merged group-reporting
// write job with an error and msec latencies, a job that failed without
// doing IO, and locks of every kind.
func sampleResult() *workload.Result {
	rng := rand.New(rand.NewPCG(7, 11))
	srng := rand.New(rand.NewPCG(3, 5)) // rate samples, drawn apart
	expo := func(base, mean float64) func() int64 {
		return func() int64 { return int64(base + rng.ExpFloat64()*mean) }
	}
	logn := func(median, sigma float64) func() int64 {
		return func() int64 { return int64(median * math.Exp(rng.NormFloat64()*sigma)) }
	}

	a := workload.JobResult{Name: "randread", JobID: 0, GroupID: 0, RW: "randread",
		BS: [2]int64{4096, 4096}, IOEngine: "psync", IODepth: 1, Runtime: 2_500_123_456,
		Options: []workload.OptionValue{{Name: "rw", Value: "randread"}, {Name: "bs", Value: "4k"}}}
	gen(&a.Read, 20000, 4096, nil, expo(80_000, 40_000))
	syncDepths(&a)
	samples(&a.Read, 5, 4096, 8000, 300, srng)
	a.CPU = workload.CPUUsage{User: 13_100_000, Sys: 97_800_000, Ctx: 20_011, Runtime: a.Runtime}

	b := workload.JobResult{Name: "mixed", JobID: 1, GroupID: 1, RW: "randrw",
		BS: [2]int64{4096, 16384}, IOEngine: "libaio", IODepth: 32, Runtime: 3_000_400_000,
		Options: []workload.OptionValue{{Name: "rw", Value: "randrw"}, {Name: "bs", Value: "4k,16k"},
			{Name: "ioengine", Value: "libaio"}, {Name: "iodepth", Value: "32"}, {Name: "new_group", Value: ""}}}
	gen(&b.Read, 30000, 4096, expo(900, 1500), logn(2_500_000, 0.4))
	gen(&b.Write, 12000, 16384, expo(1200, 2000), logn(3_000_000, 0.5))
	// libaio at iodepth 32: most IOs submitted with the queue nearly full,
	// reaped a few at a time.
	b.Depths = workload.IODepthDist{Level: [7]uint64{1, 1, 2, 4, 8, 41984, 0},
		Submit: [7]uint64{0, 42000}, Complete: [7]uint64{0, 9000, 1500, 40, 2}, Submits: 42000, Completes: 10542}
	samples(&b.Read, 6, 4096, 10000, 900, srng)
	samples(&b.Write, 6, 16384, 4000, 400, srng)
	b.CPU = workload.CPUUsage{User: 60_000_000, Sys: 400_900_000, Ctx: 9_001, Runtime: b.Runtime}
	c := b
	c.JobID = 2
	c.Read, c.Write = workload.DirStats{}, workload.DirStats{}
	c.Runtime = 3_100_000_000
	gen(&c.Read, 29000, 4096, expo(900, 1500), logn(2_600_000, 0.4))
	gen(&c.Write, 11000, 16384, expo(1200, 2000), logn(3_100_000, 0.5))
	c.Depths = workload.IODepthDist{Level: [7]uint64{1, 1, 2, 4, 8, 39984, 0},
		Submit: [7]uint64{0, 40000}, Complete: [7]uint64{0, 8800, 1400, 30}, Submits: 40000, Completes: 10230}
	samples(&c.Read, 6, 4096, 9400, 800, srng)
	samples(&c.Write, 6, 16384, 3500, 300, srng)
	c.CPU = workload.CPUUsage{User: 58_000_000, Sys: 390_000_000, Ctx: 8_700, Runtime: c.Runtime}

	d := workload.JobResult{Name: "fsync-writer", JobID: 3, GroupID: 2, RW: "write",
		BS: [2]int64{1 << 20, 1 << 20}, IOEngine: "sync", IODepth: 1, Runtime: 60_000_999_999,
		Error: 5, ErrorMsg: "file:io_u.c:1876, func=io_u error, error=Input/output error"}
	gen(&d.Write, 700, 1<<20, nil, logn(40_000_000, 0.9))
	d.Write.Issued++ // the write that failed
	syncDepths(&d)
	// group_reporting of 4 jobs: times and runtimes summed, as fio's.
	d.CPU = workload.CPUUsage{User: 4_000_000, Sys: 1_234_000_000, Ctx: 2_810, Runtime: 4 * d.Runtime}

	e := workload.JobResult{Name: "missing-file", JobID: 4, GroupID: 3, RW: "read",
		BS: [2]int64{8192, 8192}, IOEngine: "psync", IODepth: 1,
		Error: 2, ErrorMsg: "No such file or directory"}

	us := time.Microsecond
	locks := []sim.LockStats{
		{Name: "blk:tags:nvme0n1", Kind: "semaphore",
			Write: sim.LockModeStats{Acquisitions: 82000, Contentions: 1300,
				WaitTotal: 2600 * time.Millisecond, WaitMax: 9100 * us, WaitMin: 1500 * time.Nanosecond,
				HoldTotal: 205 * time.Second, HoldMax: 31 * time.Millisecond, HoldMin: 45 * us}},
		{Name: "ext4:i_rwsem:file0", Kind: "rwsem",
			Read: sim.LockModeStats{Acquisitions: 79000, Contentions: 4100,
				WaitTotal: 3900 * time.Millisecond, WaitMax: 12 * time.Millisecond, WaitMin: 800 * time.Nanosecond,
				HoldTotal: 190 * time.Second, HoldMax: 28 * time.Millisecond, HoldMin: 60 * us},
			Write: sim.LockModeStats{Acquisitions: 23700, Contentions: 9800,
				WaitTotal: 61 * time.Second, WaitMax: 95 * time.Millisecond, WaitMin: 2 * us,
				HoldTotal: 80 * time.Second, HoldMax: 600 * time.Millisecond, HoldMin: 90 * us,
				Spins: 310, SpinTime: 4 * time.Millisecond, AcqBounces: 20100, ConBounces: 9700},
			Handoffs: 17},
		{Name: "fs:s_umount", Kind: "rwsem",
			Read: sim.LockModeStats{Acquisitions: 5, HoldTotal: 50 * us, HoldMax: 12 * us, HoldMin: 9 * us}},
		{Name: "jbd2:j_state_lock", Kind: "mutex",
			Write: sim.LockModeStats{Acquisitions: 1400, Contentions: 3, WaitTotal: 7 * us,
				WaitMax: 4 * us, WaitMin: 1 * us, HoldTotal: 2100 * us, HoldMax: 3 * us, HoldMin: 1 * us,
				Spins: 3, SpinTime: 7 * us}},
		{Name: "unused", Kind: "mutex"},
	}

	ios := a.Read.IOs + b.Read.IOs + b.Write.IOs + c.Read.IOs + c.Write.IOs + d.Write.IOs
	return &workload.Result{
		GlobalOptions: []workload.OptionValue{{Name: "direct", Value: "1"}, {Name: "size", Value: "1g"}, {Name: "time_based", Value: ""}},
		Groups: []workload.GroupResult{
			{GroupID: 0, Jobs: []workload.JobResult{a}},
			{GroupID: 1, Jobs: []workload.JobResult{b, c}},
			{GroupID: 2, GroupReporting: true, Jobs: []workload.JobResult{d}},
			{GroupID: 3, Jobs: []workload.JobResult{e}},
		},
		Locks:  locks,
		Engine: workload.EngineFigures{SimulatedIOs: ios, Events: 1234567, WallSeconds: 1.75, SimulatedSeconds: 60.000999999, JobsSeconds: 59.2},
		Seed:   42,
		CPUs: []sim.CPUStat{
			{User: 70 * time.Millisecond, Sys: 1500 * time.Millisecond},
			{User: 65 * time.Millisecond, Sys: 640 * time.Millisecond},
			{},
			{Sys: 3 * time.Millisecond},
		},
		SpinTime: 4007 * us,
	}
}

// fioJob builds a one-job Result with n IOs of bs bytes in one direction
// and runtime msec, for checks against lines of real fio output.
func fioJob(write bool, n, bs uint64, msec int64, clat *latency.Histogram) *workload.Result {
	j := workload.JobResult{Name: "mytest", RW: "write", BS: [2]int64{int64(bs), int64(bs)},
		IOEngine: "sync", IODepth: 1, Runtime: msec * 1e6}
	d := &j.Read
	if write {
		d = &j.Write
	}
	d.IOs, d.Issued, d.Bytes = n, n, n*bs
	if clat != nil {
		d.Clat = *clat
	}
	syncDepths(&j)
	return &workload.Result{Groups: []workload.GroupResult{{Jobs: []workload.JobResult{j}}}}
}

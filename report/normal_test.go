package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/internal/latency"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/workload"
)

func TestWriteNormalGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteNormal(&b, sampleResult(), Options{OmitWall: true}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "normal.golden", b.Bytes())
}

func TestWriteNormalDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if err := WriteNormal(&a, sampleResult(), Options{OmitWall: true}); err != nil {
		t.Fatal(err)
	}
	if err := WriteNormal(&b, sampleResult(), Options{OmitWall: true}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two renderings of the same result differ")
	}
}

func TestEngineLine(t *testing.T) {
	r := &workload.Result{Engine: workload.EngineFigures{
		SimulatedIOs: 1000000, Events: 5000000, WallSeconds: 2.5, SimulatedSeconds: 600.0012}}
	tests := []struct {
		opt  Options
		want string
	}{
		{Options{}, "blksim engine: 1000000 simulated IOs, 5000000 events, 2.50 s wall, 600.00 s simulated, 400000 simulated IOs per wall second\n"},
		{Options{OmitWall: true}, "blksim engine: 1000000 simulated IOs, 5000000 events, 600.00 s simulated\n"},
	}
	for _, tt := range tests {
		var b strings.Builder
		if err := WriteNormal(&b, r, tt.opt); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(b.String(), "\n"+tt.want) {
			t.Errorf("OmitWall=%v: got\n%s\nwant suffix %q", tt.opt.OmitWall, b.String(), tt.want)
		}
	}
	// No wall time recorded: the rate is 0, not Inf.
	r.Engine.WallSeconds = 0
	var b strings.Builder
	if err := WriteNormal(&b, r, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), ", 0 simulated IOs per wall second") {
		t.Errorf("zero wall time: %s", b.String())
	}
}

// A direction is reported only if it moved bytes (a run under 1 ms counts
// as 1 ms: fio rounds runtimes up); slat only if it has samples; a job
// with neither IO nor error not at all.
func TestWhatIsLeftOut(t *testing.T) {
	var clat latency.Histogram
	clat.Record(5000)
	r := &workload.Result{Groups: []workload.GroupResult{{Jobs: []workload.JobResult{
		{Name: "short", Runtime: 999_999, Read: workload.DirStats{IOs: 1, Issued: 1, Bytes: 4096, Clat: clat, Lat: clat}},
		{Name: "idle", JobID: 1, Runtime: 5e9},
		{Name: "sync", JobID: 2, Runtime: 5e9, Write: workload.DirStats{IOs: 1, Issued: 1, Bytes: 4096, Clat: clat, Lat: clat}},
	}}}}
	var b strings.Builder
	if err := WriteNormal(&b, r, Options{OmitWall: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, absent := range []string{"idle: (groupid", "slat", "bw (", "lock_stat"} {
		if strings.Contains(out, absent) {
			t.Errorf("output has %q:\n%s", absent, out)
		}
	}
	for _, present := range []string{"short: (groupid=0", "  read: IOPS=1000, BW=4000KiB/s (4096kB/s)(4096B/1msec)",
		"sync: (groupid=0, jobs=1): err= 0: pid=2:",
		"  write: IOPS=0, BW=819B/s (819B/s)(4096B/5000msec)", "    clat (nsec): min=5000, max=5000, avg=5000.00, stdev= 0.00",
		"  WRITE: bw=819B/s (819B/s), 819B/s-819B/s (819B/s-819B/s), io=4096B (4096B), run=5000-5000msec"} {
		if !strings.Contains(out, present) {
			t.Errorf("output lacks %q:\n%s", present, out)
		}
	}
}

func TestNumjobsClonesInDescription(t *testing.T) {
	j := workload.JobResult{Name: "clone", RW: "read", BS: [2]int64{4096, 4096}, IOEngine: "psync", IODepth: 1}
	r := &workload.Result{Groups: []workload.GroupResult{{Jobs: []workload.JobResult{j, j, j}}}}
	var b strings.Builder
	if err := WriteNormal(&b, r, Options{OmitWall: true}); err != nil {
		t.Fatal(err)
	}
	// As fio 3.33 prints three clones: their line, "...", its version and
	// the processes it starts.
	want := "clone: (g=0): rw=read, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=psync, iodepth=1\n...\nblksim\nStarting 3 processes\n\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("got\n%s\nwant prefix\n%s", b.String(), want)
	}

	// group_reporting merged them: still "...", as fio prints it; threads
	// and processes counted apart.
	merged := j
	merged.Jobs = 3
	th := workload.JobResult{Name: "th", RW: "read", BS: [2]int64{4096, 4096}, IOEngine: "psync", IODepth: 1, Thread: true, Jobs: 2}
	r = &workload.Result{Groups: []workload.GroupResult{{Jobs: []workload.JobResult{merged, th}}}}
	b.Reset()
	require.NoError(t, WriteNormal(&b, r, Options{OmitWall: true}))
	want = "clone: (g=0): rw=read, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=psync, iodepth=1\n...\n" +
		"th: (g=0): rw=read, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=psync, iodepth=1\n...\n" +
		"blksim\nStarting 2 threads and 3 processes\n\n"
	assert.True(t, strings.HasPrefix(b.String(), want), "got\n%s\nwant prefix\n%s", b.String(), want)
}

type failingWriter struct{ n int }

var errWrite = errors.New("disk full")

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errWrite
	}
	f.n--
	return len(p), nil
}

func TestWriteErrorsAreReturned(t *testing.T) {
	r := sampleResult()
	if err := WriteNormal(&failingWriter{}, r, Options{}); !errors.Is(err, errWrite) {
		t.Errorf("WriteNormal: %v", err)
	}
	if err := WriteJSON(&failingWriter{}, r, Options{}); !errors.Is(err, errWrite) {
		t.Errorf("WriteJSON: %v", err)
	}
	if err := WriteLockStat(&failingWriter{}, r.Locks); !errors.Is(err, errWrite) {
		t.Errorf("WriteLockStat: %v", err)
	}
}

func TestWriteLockStat(t *testing.T) {
	var b strings.Builder
	if err := WriteLockStat(&b, nil); err != nil || b.Len() != 0 {
		t.Fatalf("no locks: %q, %v", b.String(), err)
	}
	if err := WriteLockStat(&b, []sim.LockStats{{Name: "idle", Kind: "mutex"}}); err != nil || b.Len() != 0 {
		t.Fatalf("never acquired: %q, %v", b.String(), err)
	}
	if err := WriteLockStat(&b, sampleResult().Locks); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	// Title, header, rule, then rows as /proc/lock_stat orders and names
	// them: an rwsem's -W row before its -R row, a lock only ever taken
	// shared "-R", mutex and semaphore rows unsuffixed; handoffs on the
	// lock's first row only.
	if len(lines) != 3+5 {
		t.Fatalf("got %d lines:\n%s", len(lines), b.String())
	}
	names := []string{"blk:tags:nvme0n1 ", "ext4:i_rwsem:file0-W ", "ext4:i_rwsem:file0-R ", "fs:s_umount-R ", "jbd2:j_state_lock "}
	for i, n := range names {
		if !strings.HasPrefix(lines[3+i], n) {
			t.Errorf("row %d = %q, want name %q", i, lines[3+i], n)
		}
	}
	for _, l := range lines[1:] {
		if len(l) != len(lines[1]) {
			t.Errorf("line %q is not as wide as the header", l)
		}
	}
	r := strings.Fields(lines[5]) // ext4:i_rwsem:file0-R
	want := []string{"ext4:i_rwsem:file0-R", "0", "4100", "0.80", "12000.00", "3900000.00", "951.22",
		"0", "79000", "60.00", "28000.00", "190000000.00", "2405.06", "0", "-"}
	if strings.Join(r, " ") != strings.Join(want, " ") {
		t.Errorf("row\n got %v\nwant %v", r, want)
	}
	if f := strings.Fields(lines[4]); f[len(f)-1] != "17" || f[len(f)-2] != "310" || f[1] != "9700" || f[7] != "20100" {
		t.Errorf("first row of a lock: %v", f)
	}
}

// An rwsem taken only exclusive prints one row without a suffix, as
// /proc/lock_stat does for a class with no read acquisitions; times are
// rounded half up at 10 ns (lockdep's snprint_time), and the average is
// the total over the count in whole nanoseconds.
func TestWriteLockStatWriteOnlyAndRounding(t *testing.T) {
	var b strings.Builder
	locks := []sim.LockStats{{Name: "xfs:i_rwsem:f", Kind: "rwsem", Write: sim.LockModeStats{
		Acquisitions: 3, Contentions: 2, WaitMin: 434574, WaitMax: 434575, WaitTotal: 869149,
		HoldMin: 5, HoldMax: 4, HoldTotal: 14,
	}}}
	require.NoError(t, WriteLockStat(&b, locks))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, 4, b.String())
	assert.Equal(t, []string{"xfs:i_rwsem:f", "0", "2", "434.57", "434.58", "869.15", "434.57",
		"0", "3", "0.01", "0.00", "0.01", "0.00", "0", "0"}, strings.Fields(lines[3]))
}

func TestWriteCPUUtil(t *testing.T) {
	var b strings.Builder
	require.NoError(t, WriteCPUUtil(&b, &workload.Result{}))
	assert.Empty(t, b.String(), "no CPU figures, no table")

	require.NoError(t, WriteCPUUtil(&b, sampleResult()))
	assert.Equal(t, `cpu_util (simulated; percent of 60.00 s on 4 CPUs):
cpu       usr      sys     idle
0        0.12     2.50    97.38
1        0.11     1.07    98.83
3        0.00     0.00   100.00
all      0.06     0.89    99.05
lock spinning, on no simulated CPU: 4.007 ms
`, b.String(), "an idle CPU has no row; all averages over every CPU")
	assert.ErrorIs(t, WriteCPUUtil(&failingWriter{}, sampleResult()), errWrite)
}

func TestCPULine(t *testing.T) {
	tests := []struct {
		name string
		c    workload.CPUUsage
		want string
	}{
		{"fio's example", workload.CPUUsage{User: 52 * time.Millisecond, Sys: 391 * time.Millisecond, Ctx: 4021, Runtime: 10_000_000_000},
			"  cpu          : usr=0.52%, sys=3.91%, ctx=4021, majf=0, minf=0\n"},
		{"whole msec only", workload.CPUUsage{User: 999 * time.Microsecond, Sys: 1999 * time.Microsecond, Runtime: 100_999_999},
			"  cpu          : usr=0.00%, sys=1.00%, ctx=0, majf=0, minf=0\n"},
		{"no runtime", workload.CPUUsage{User: time.Second, Ctx: 3, Runtime: 999_999},
			"  cpu          : usr=0.00%, sys=0.00%, ctx=3, majf=0, minf=0\n"},
		{"busy over 100%", workload.CPUUsage{Sys: 3 * time.Second, Runtime: 2e9},
			"  cpu          : usr=0.00%, sys=150.00%, ctx=0, majf=0, minf=0\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, cpuLine(&tc.c))
		})
	}
}

// TestDescriptionBlockSizeRange checks the bs= part of the description line
// for jobs with a range of block sizes (bsrange, bssplit): fio 3.33 prints
// the smallest and the largest size of each direction, e.g.
// "fio --name=j --rw=randrw --bsrange=4k-16k,8k-32k" prints
// "bs=(R) 4096B-16.0KiB, (W) 8192B-32.0KiB, (T) 8192B-32.0KiB".
func TestDescriptionBlockSizeRange(t *testing.T) {
	tests := []struct {
		name  string
		bs    [2]int64
		bsMax [2]int64
		want  string
	}{
		{"one size", [2]int64{4096, 4096}, [2]int64{}, "bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B,"},
		{"bsrange per direction", [2]int64{4096, 8192}, [2]int64{16384, 32768}, "bs=(R) 4096B-16.0KiB, (W) 8192B-32.0KiB, (T) 8192B-32.0KiB,"},
		{"bssplit reads only", [2]int64{4096, 8192}, [2]int64{65536, 0}, "bs=(R) 4096B-64.0KiB, (W) 8192B-8192B, (T) 8192B-8192B,"},
		{"bssplit 512 to 64k", [2]int64{512, 512}, [2]int64{65536, 65536}, "bs=(R) 512B-64.0KiB, (W) 512B-64.0KiB, (T) 512B-64.0KiB,"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := workload.JobResult{Name: "j", RW: "randrw", BS: tt.bs, BSMax: tt.bsMax, IOEngine: "psync", IODepth: 1}
			r := &workload.Result{Groups: []workload.GroupResult{{Jobs: []workload.JobResult{j}}}}
			var b strings.Builder
			require.NoError(t, WriteNormal(&b, r, Options{OmitWall: true}))
			first, _, _ := strings.Cut(b.String(), "\n")
			assert.Contains(t, first, tt.want)
		})
	}
}

// fio notes, once per job, that a synchronous engine caps an iodepth
// above 1 (its log_info after "Starting"); not for the async engines.
func TestSyncEngineDepthNote(t *testing.T) {
	const note = "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1\n"
	capped := workload.JobResult{Name: "p", RW: "read", BS: [2]int64{4096, 4096}, IOEngine: "psync", IODepth: 4, Jobs: 2}
	deep := workload.JobResult{Name: "a", RW: "read", BS: [2]int64{4096, 4096}, IOEngine: "libaio", IODepth: 32}
	one := workload.JobResult{Name: "s", RW: "read", BS: [2]int64{4096, 4096}, IOEngine: "sync", IODepth: 1}
	r := &workload.Result{Groups: []workload.GroupResult{{Jobs: []workload.JobResult{capped, deep, one}}}}
	var b strings.Builder
	require.NoError(t, WriteNormal(&b, r, Options{OmitWall: true}))
	assert.Contains(t, b.String(), "Starting 4 processes\n"+note+note+"\n")
	assert.Equal(t, 2, strings.Count(b.String(), note))
}

// With group_reporting, fio still describes each job as it starts (a
// "..." for clones) and notes each capped synchronous job: the lines come
// from the jobs as they ran, not from the merged entry (fio 3.33).
func TestGroupReportingDescribesEveryJob(t *testing.T) {
	const note = "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1\n"
	r1 := workload.JobResult{Name: "r", GroupID: 1, RW: "read", BS: [2]int64{4096, 4096}, IOEngine: "libaio", IODepth: 4, Jobs: 1}
	z := workload.JobResult{Name: "z", GroupID: 1, RW: "randread", BS: [2]int64{4096, 4096}, IOEngine: "sync", IODepth: 2, Jobs: 1}
	merged := r1
	merged.Jobs = 3
	r := &workload.Result{Groups: []workload.GroupResult{{GroupID: 1, GroupReporting: true,
		Jobs: []workload.JobResult{merged}, Members: []workload.JobResult{r1, r1, z}}}}
	var b strings.Builder
	require.NoError(t, WriteNormal(&b, r, Options{OmitWall: true}))
	assert.Contains(t, b.String(), "r: (g=1): rw=read, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=libaio, iodepth=4\n...\n"+
		"z: (g=1): rw=randread, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=sync, iodepth=2\nblksim\nStarting 3 processes\n"+note+"\n")
	assert.Equal(t, 1, strings.Count(b.String(), note))
}

// kb_base=1000 puts SI units first and IEC ones second in the bandwidth
// and size figures, and names the bandwidth samples' unit kB (their
// values stay KiB/s), as fio 3.33 prints this run: 244 4 KiB writes in
// 611 ms, one sample of 1608 KiB/s.
func TestKBBase1000PrintsSIUnitsFirst(t *testing.T) {
	r := fioJob(true, 244, 4096, 611, nil)
	j := &r.Groups[0].Jobs[0]
	j.KBBase = 1000
	j.Write.BW.Add(1608)
	var b strings.Builder
	require.NoError(t, WriteNormal(&b, r, Options{OmitWall: true}))
	out := b.String()
	assert.Contains(t, out, "  write: IOPS=399, BW=1636kB/s (1597KiB/s)(999kB/611msec); 0 zone resets\n")
	assert.Contains(t, out, "   bw (   kB/s): min= 1608, max= 1608, per=100.00%, avg=1608.00, stdev= 0.00, samples=1\n")
	assert.Contains(t, out, "  WRITE: bw=1636kB/s (1597KiB/s), 1636kB/s-1636kB/s (1597KiB/s-1597KiB/s), io=999kB (976KiB), run=611-611msec\n")
}

// fio prints a failed job's "fio: pid=" line when the job ends, so the
// lines follow the order the jobs ended in, not the job order.
func TestFailedJobLinesInEndOrder(t *testing.T) {
	late := workload.JobResult{Name: "w1", JobID: 0, RW: "write", BS: [2]int64{4096, 4096}, IOEngine: "psync", IODepth: 1,
		Error: 28, ErrorMsg: "file:io_u.c:1876, func=io_u error, error=No space left on device", Ended: 2e9}
	early := workload.JobResult{Name: "w2", JobID: 1, RW: "write", BS: [2]int64{4096, 4096}, IOEngine: "psync", IODepth: 1,
		Error: 28, ErrorMsg: "file:filesetup.c:93, func=fallocate, error=No space left on device"}
	r := &workload.Result{Groups: []workload.GroupResult{{Jobs: []workload.JobResult{late, early}}}}
	var b strings.Builder
	require.NoError(t, WriteNormal(&b, r, Options{OmitWall: true}))
	assert.Contains(t, b.String(), "Starting 2 processes\n"+
		"fio: pid=1, err=28/file:filesetup.c:93, func=fallocate, error=No space left on device\n"+
		"fio: pid=0, err=28/file:io_u.c:1876, func=io_u error, error=No space left on device\n\n")
}

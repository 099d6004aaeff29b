package report_test

import (
	"fmt"
	"os"
	"time"

	"github.com/blksim/blksim/internal/latency"
	"github.com/blksim/blksim/report"
	"github.com/blksim/blksim/workload"
)

// A sync write job: 5632 writes of 4 KiB in 1.173 s, each taking 10 to 21 us.
func ExampleWriteNormal() {
	var clat latency.Histogram
	var dist workload.LatencyDist
	for i := range int64(5632) {
		clat.Record(10_000 + i*2)
		dist.Record(10_000 + i*2)
	}
	job := workload.JobResult{
		Name: "mytest", RW: "write", BS: [2]int64{4096, 4096}, IOEngine: "sync", IODepth: 1,
		Runtime: 1_173_000_000,
		Write: workload.DirStats{IOs: 5632, Issued: 5632, Bytes: 5632 * 4096,
			Clat: clat, Lat: clat, ClatDist: dist},
		// A sync engine: one IO in flight, one call to submit and one to
		// reap each.
		Depths: workload.IODepthDist{Level: [7]uint64{5632}, Submit: [7]uint64{0, 5632},
			Complete: [7]uint64{0, 5632}, Submits: 5632, Completes: 5632},
		CPU: workload.CPUUsage{User: 17 * time.Millisecond, Sys: 121 * time.Millisecond, Ctx: 5650, Runtime: 1_173_000_000},
	}
	r := &workload.Result{
		Groups: []workload.GroupResult{{Jobs: []workload.JobResult{job}}},
		Engine: workload.EngineFigures{SimulatedIOs: 5632, Events: 22528, SimulatedSeconds: 1.173},
	}
	if err := report.WriteNormal(os.Stdout, r, report.Options{OmitWall: true}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// mytest: (g=0): rw=write, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=sync, iodepth=1
	// blksim
	// Starting 1 process
	//
	// mytest: (groupid=0, jobs=1): err= 0: pid=0: Thu Jan  1 00:00:00 1970
	//   write: IOPS=4801, BW=18.8MiB/s (19.7MB/s)(22.0MiB/1173msec); 0 zone resets
	//     clat (nsec): min=10000, max=21262, avg=15631.00, stdev=3251.93
	//      lat (nsec): min=10000, max=21262, avg=15631.00, stdev=3251.93
	//     clat percentiles (nsec):
	//      |  1.00th=[10176],  5.00th=[10560], 10.00th=[11072], 20.00th=[12224],
	//      | 30.00th=[13376], 40.00th=[14528], 50.00th=[15680], 60.00th=[16768],
	//      | 70.00th=[17792], 80.00th=[19072], 90.00th=[20096], 95.00th=[20608],
	//      | 99.00th=[21120], 99.50th=[21120], 99.90th=[21376], 99.95th=[21376],
	//      | 99.99th=[21376]
	//   lat (usec)   : 20=88.78%, 50=11.22%
	//   cpu          : usr=1.45%, sys=10.32%, ctx=5650, majf=0, minf=0
	//   IO depths    : 1=100.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, >=64=0.0%
	//      submit    : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
	//      complete  : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
	//      issued rwts: total=0,5632,0,0 short=0,0,0,0 dropped=0,0,0,0
	//      latency   : target=0, window=0, percentile=100.00%, depth=1
	//
	// Run status group 0 (all jobs):
	//   WRITE: bw=18.8MiB/s (19.7MB/s), 18.8MiB/s-18.8MiB/s (19.7MB/s-19.7MB/s), io=22.0MiB (23.1MB), run=1173-1173msec
	//
	// blksim engine: 5632 simulated IOs, 22528 events, 1.17 s simulated
}

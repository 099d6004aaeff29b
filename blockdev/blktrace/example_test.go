package blktrace_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/blockdev/blktrace"
)

// Trace a queue's events into a directory that blkparse -i nvme0n1 -D dir
// reads, then decode CPU 0's file.
func ExampleWriter() {
	dir, err := os.MkdirTemp("", "blktrace")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	w, err := blktrace.New(dir, "nvme0n1", blktrace.Dev(259, 0))
	if err != nil {
		panic(err)
	}
	// A Queue would call Trace: q.SetTracer(w).
	for _, ev := range []blockdev.TraceEvent{
		{Time: 1000, Action: blockdev.TraceQueue, Op: blockdev.OpWrite, Sync: true, Sector: 2048, Bytes: 4096, PID: 42, Comm: "fio"},
		{Time: 1500, Action: blockdev.TraceIssue, Op: blockdev.OpWrite, Sync: true, Sector: 2048, Bytes: 4096, PID: 42, Comm: "fio"},
		{Time: 9000, Action: blockdev.TraceComplete, Op: blockdev.OpWrite, Sync: true, Sector: 2048, Bytes: 4096},
	} {
		w.Trace(&ev)
	}
	if err := w.Close(); err != nil {
		panic(err)
	}

	f, err := os.Open(filepath.Join(dir, "nvme0n1.blktrace.0"))
	if err != nil {
		panic(err)
	}
	defer f.Close()
	recs, err := blktrace.Decode(f)
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		if r.IsNote() {
			fmt.Printf("note pid %d %q\n", r.PID, r.Comm())
			continue
		}
		fmt.Printf("seq %d %s %d+%d action %#08x\n", r.Sequence, r.TraceAction().Letter(), r.Sector, r.Bytes/512, r.Action)
	}
	// Output:
	// note pid 42 "fio"
	// seq 1 Q 2048+8 action 0x001a0001
	// seq 2 D 2048+8 action 0x014a0007
	// note pid 0 "swapper/0"
	// seq 3 C 2048+8 action 0x018a0008
}

package writeback_test

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/blksim/blksim/writeback"
)

// largestFirst is a tiny policy: whenever it writes, it writes whole
// inodes, the one with the most dirty pages first. It keeps Default's
// lock rule (never serialize) by embedding it.
type largestFirst struct{ writeback.Default }

func (largestFirst) Name() string { return "largest-first" }

func (largestFirst) Pick(p writeback.PassInfo) []writeback.Work {
	ins := p.Inodes
	switch p.Reason {
	case writeback.ReasonBackground:
		if p.Dirty <= p.Background {
			return nil
		}
	case writeback.ReasonPeriodic:
		ins = p.Expired()
	}
	slices.SortStableFunc(ins, func(a, b writeback.DirtyInode) int { return cmp.Compare(b.DirtyPages, a.DirtyPages) })
	var out []writeback.Work
	for _, in := range ins {
		out = append(out, writeback.Work{Inode: in.Inode, Pages: writeback.AllPages, SyncMode: writeback.SyncNone})
	}
	return out
}

// A policy test in a few lines: two writers dirty a small and a big file
// with 16 MiB of dirtyable memory (a background threshold of 409 pages).
// Once the threshold is crossed the policy writes the big file first;
// what is dirtied after that is written when it expires, at the first
// 5-second periodic wake-up 30 s or more after it was dirtied.
func Example_harness() {
	h := writeback.NewHarness(nil, writeback.HarnessOptions{Policy: largestFirst{}, AvailablePages: 4096})
	defer h.Close()
	small, big := h.File("small"), h.File("big")
	h.Writer("w1", small, writeback.WriterOptions{Pages: 64})
	h.Writer("w2", big, writeback.WriterOptions{Pages: 512})
	h.Run()

	for _, io := range h.IOs() {
		fmt.Printf("%-10s %-5s %3d KiB at %v\n", io.Reason, io.File, io.Bytes()>>10, io.At.Truncate(time.Second))
	}
	st := h.Stats()
	fmt.Println("pages written: background", st.Written[writeback.ReasonBackground], "periodic", st.Written[writeback.ReasonPeriodic])
	// Output:
	// background big   512 KiB at 0s
	// background big   512 KiB at 0s
	// background big   512 KiB at 0s
	// background small 256 KiB at 0s
	// periodic   big   512 KiB at 35s
	// pages written: background 448 periodic 128
}

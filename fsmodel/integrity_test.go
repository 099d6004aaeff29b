package fsmodel

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
)

// refFile is the reference model of a file's contents: the stamp of the
// last completed write to each sector, and which sectors have an IO in
// flight. The test's tasks never issue a write overlapping another IO in
// flight, nor a read overlapping a write in flight, so "the last
// completed write" is well defined at syscall granularity even under
// policies that let writes run concurrently.
type refFile struct {
	stamps  []blockdev.Stamp
	readers []int
	writing []bool
}

func newRefFile(size int64) *refFile {
	n := size / blockdev.SectorSize
	return &refFile{stamps: make([]blockdev.Stamp, n), readers: make([]int, n), writing: make([]bool, n)}
}

func (r *refFile) free(off, n int64, write bool) bool {
	for s := off / blockdev.SectorSize; s < (off+n)/blockdev.SectorSize; s++ {
		if r.writing[s] || (write && r.readers[s] > 0) {
			return false
		}
	}
	return true
}

func (r *refFile) hold(off, n int64, write bool, delta int) {
	for s := off / blockdev.SectorSize; s < (off+n)/blockdev.SectorSize; s++ {
		if write {
			r.writing[s] = delta > 0
		} else {
			r.readers[s] += delta
		}
	}
}

// check compares what a read of [off, off+n) returned (device sectors,
// starting at phys) with the reference.
func (r *refFile) check(t *testing.T, phys, off, n int64, got []blockdev.StampRun, what string) bool {
	t.Helper()
	pos := (phys + off) / blockdev.SectorSize
	var stamps []blockdev.Stamp
	for _, run := range got {
		if !assert.Equal(t, pos, run.Sector, "%s: runs sorted and contiguous", what) {
			return false
		}
		for range run.Sectors {
			stamps = append(stamps, run.Stamp)
		}
		pos += run.Sectors
	}
	first := off / blockdev.SectorSize
	return assert.Equal(t, r.stamps[first:first+n/blockdev.SectorSize], stamps, what)
}

// Random direct writes with unique stamps from several tasks, 4 KiB to
// 1 MiB (split by the queue into 128 KiB requests), some only
// sector-aligned, then reads of every block, each return exactly the
// stamp of the last completed write to each sector. Reads also run while
// writes are in flight elsewhere in the file.
func TestDIODataIntegrity(t *testing.T) {
	const (
		fileSize = 8 * MiB
		tasks    = 6
		writes   = 80
	)
	for _, policy := range []Ext4{{}, {ParallelDIOReads: true}, {DioreadNolock: true}, {ParallelDIOReads: true, DioreadNolock: true}, {IomapDIO: true}} {
		t.Run(policy.Name(), func(t *testing.T) {
			v := newEnv(t, policy, blockdev.MemParams{MaxHWSectorsKB: 128, QueueDepth: 32, Latency: 20 * us, MBps: 2000})
			// A small file first, so that the data file starts at a
			// device offset that is not chunk or 128 KiB aligned.
			_, err := v.fs.Open("pad", 12*KiB)
			require.NoError(t, err)
			f, err := v.fs.Open("data", fileSize)
			require.NoError(t, err)
			phys := f.Extents().Extents()[0].Physical
			require.Equal(t, 12*KiB, phys)
			ref := newRefFile(fileSize)

			var midReads, skipped int
			for w := range tasks {
				rng := v.e.NewRand(uint64(w + 1))
				v.spawn(fmt.Sprintf("w%d", w), time.Duration(w)*us, func(tk *sim.Task) {
					var data []blockdev.StampRun
					for i := range writes {
						var off, n int64
						switch k := rng.IntN(10); {
						case k < 5: // 4 KiB aligned
							off, n = rng.Int64N(fileSize/(4*KiB))*4*KiB, 4*KiB
						case k < 7: // sector-aligned, not block-aligned
							n = (1 + rng.Int64N(24)) * blockdev.SectorSize
							off = rng.Int64N((fileSize-n)/blockdev.SectorSize) * blockdev.SectorSize
						case k < 8: // 64 KiB
							off, n = rng.Int64N(fileSize/(64*KiB))*64*KiB, 64*KiB
						case k < 9: // 1 MiB, MiB-aligned in the file
							off, n = rng.Int64N(fileSize/MiB)*MiB, MiB
						default: // 1 MiB at a 4 KiB offset
							off, n = rng.Int64N((fileSize-MiB)/(4*KiB))*4*KiB, MiB
						}
						if !ref.free(off, n, true) {
							skipped++
							tk.Sleep(time.Duration(1+rng.IntN(50)) * us)
							continue
						}
						s := blockdev.Stamp{Writer: uint32(w + 1), Seq: uint64(i + 1)}
						ref.hold(off, n, true, 1)
						err := f.DirectWrite(tk, off, n, s)
						ref.hold(off, n, true, -1)
						if !assert.NoError(t, err) {
							return
						}
						for x := off / blockdev.SectorSize; x < (off+n)/blockdev.SectorSize; x++ {
							ref.stamps[x] = s
						}
						// Now and then read back a range nobody is writing.
						roff := rng.Int64N(fileSize/(4*KiB)) * 4 * KiB
						rn := min(fileSize-roff, (1+rng.Int64N(64))*4*KiB)
						if rng.IntN(3) == 0 && ref.free(roff, rn, false) {
							ref.hold(roff, rn, false, 1)
							data = data[:0]
							err := f.DirectRead(tk, roff, rn, &data)
							ref.hold(roff, rn, false, -1)
							if !assert.NoError(t, err) {
								return
							}
							ref.check(t, phys, roff, rn, data, fmt.Sprintf("read %d+%d during writes", roff, rn))
							midReads++
						}
					}
				})
			}
			v.run(t)
			require.Zero(t, v.e.Tasks())
			assert.Positive(t, midReads)
			assert.Less(t, skipped, tasks*writes/4)
			st := v.q.Stats()
			assert.Positive(t, st.Splits, "1 MiB writes were split by the queue")

			// Every block, in 4 KiB reads from 4 tasks, then the whole
			// file in 1 MiB reads (each split into 8 requests).
			const block = 4 * KiB
			for r := range int64(4) {
				v.spawn(fmt.Sprintf("r%d", r), 0, func(tk *sim.Task) {
					var data []blockdev.StampRun
					for off := r * block; off < fileSize; off += 4 * block {
						data = data[:0]
						if !assert.NoError(t, f.DirectRead(tk, off, block, &data)) ||
							!ref.check(t, phys, off, block, data, fmt.Sprintf("block at %d", off)) {
							return
						}
					}
				})
			}
			v.spawn("big", 0, func(tk *sim.Task) {
				var data []blockdev.StampRun
				for off := int64(0); off < fileSize; off += MiB {
					data = data[:0]
					if !assert.NoError(t, f.DirectRead(tk, off, MiB, &data)) ||
						!ref.check(t, phys, off, MiB, data, fmt.Sprintf("MiB at %d", off)) {
						return
					}
				}
				// One read of the whole file: 8 bios of 1 MiB.
				data = data[:0]
				if assert.NoError(t, f.DirectRead(tk, 0, fileSize, &data)) {
					ref.check(t, phys, 0, fileSize, data, "whole file")
				}
			})
			v.run(t)
			require.Zero(t, v.e.Tasks())
			// The device holds exactly the reference, seen directly.
			ref.check(t, phys, 0, fileSize, v.mem.Stamps().Read(nil, phys/blockdev.SectorSize, fileSize/blockdev.SectorSize), "device")
			// Nothing outside the file was written.
			assert.Equal(t, []blockdev.StampRun{{Sector: 0, Sectors: phys / blockdev.SectorSize}}, v.mem.Stamps().Read(nil, 0, phys/blockdev.SectorSize))
			assert.Equal(t, []blockdev.StampRun{{Sector: (phys + fileSize) / blockdev.SectorSize, Sectors: 2048}}, v.mem.Stamps().Read(nil, (phys+fileSize)/blockdev.SectorSize, 2048))
			t.Logf("%d writes skipped (overlap), %d reads during writes, %d splits, %v simulated", skipped, midReads, st.Splits, v.e.Now())
		})
	}
}

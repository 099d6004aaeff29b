package realdev

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/sim/wallclock"
)

// Probe measures reads, writes and mixes on a real file; what it wrote
// reads back through the engine as stamped by ProbeWriter, never corrupt.
func TestProbe(t *testing.T) {
	c := wallclock.New()
	e := sim.New(sim.Options{Clock: c})
	defer e.Close()
	d, _ := openTemp(t, e, c, "8m")
	var got done
	d.Attach(&got)
	for _, l := range []Load{
		{BS: 4 << 10, QD: 1, ReadPct: 100},
		{BS: 16 << 10, QD: 8, ReadPct: 0},
		{BS: 8 << 10, QD: 4, ReadPct: 50},
		{BS: 64 << 10, QD: 2, ReadPct: 100, Sequential: true},
	} {
		m, err := d.Probe(l, 4<<20, 20*time.Millisecond)
		require.NoError(t, err, l)
		assert.Positive(t, m.IOPS, l)
		assert.Positive(t, m.MeanLat, l)
		assert.Positive(t, m.IOs, l)
		assert.InEpsilon(t, m.IOPS*float64(l.BS)/1e6, m.MBps, 1e-9, l)
	}
	s := d.Stats()
	assert.Positive(t, s.Writes)
	assert.Zero(t, s.Errors)

	// Read back the probed region through the engine.
	rd := newReq(blockdev.OpRead, 0, 1<<20, blockdev.Stamp{})
	run(t, e, d, rd)
	require.NoError(t, rd.Err)
	writers := map[uint32]int{}
	for _, r := range rd.Bios[0].Data {
		writers[r.Stamp.Writer] += int(r.Sectors)
	}
	assert.Positive(t, writers[ProbeWriter], "sectors written by Probe read back as its stamps: %v", writers)
	assert.Zero(t, d.Stats().CorruptSectors)
}

func TestProbeBadLoads(t *testing.T) {
	c := wallclock.New()
	e := sim.New(sim.Options{Clock: c})
	defer e.Close()
	d, _ := openTemp(t, e, c, "4m")
	for _, l := range []Load{
		{BS: 0, QD: 1, ReadPct: 100},
		{BS: 4<<10 + 1, QD: 1, ReadPct: 100},
		{BS: 4 << 10, QD: 0, ReadPct: 100},
		{BS: 4 << 10, QD: 17, ReadPct: 100}, // beyond the queue depth of openTemp
		{BS: 2 << 20, QD: 1, ReadPct: 100},  // beyond the request size cap
	} {
		_, err := d.Probe(l, 0, 10*time.Millisecond)
		assert.ErrorContains(t, err, "bad load", l)
	}
	require.NoError(t, d.Close())
	_, err := d.Probe(Load{BS: 4 << 10, QD: 1, ReadPct: 100}, 0, 10*time.Millisecond)
	assert.ErrorContains(t, err, "closed")
}

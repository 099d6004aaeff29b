package blockdev

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// refStamps is a per-sector reference for StampMap.
type refStamps map[int64]Stamp

func (r refStamps) read(sector, n int64) []StampRun {
	var out []StampRun
	for s := sector; s < sector+n; s++ {
		st := r[s]
		if k := len(out) - 1; k >= 0 && out[k].Stamp == st {
			out[k].Sectors++
			continue
		}
		out = append(out, StampRun{Sector: s, Sectors: 1, Stamp: st})
	}
	return out
}

func TestStampMapMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := NewStampMap()
	ref := refStamps{}
	const span = 3 * chunkSectors
	for i := 0; i < 3000; i++ {
		sector := rng.Int64N(span)
		n := 1 + rng.Int64N(min(span-sector, 900))
		s := Stamp{Writer: uint32(rng.IntN(3)), Seq: uint64(i)}
		if rng.IntN(10) == 0 {
			s = Stamp{}
		}
		m.Write(sector, n, s)
		for x := sector; x < sector+n; x++ {
			if s == (Stamp{}) {
				delete(ref, x)
			} else {
				ref[x] = s
			}
		}
		rs := rng.Int64N(span)
		rn := 1 + rng.Int64N(span-rs)
		require.Equal(t, ref.read(rs, rn), m.Read(nil, rs, rn), "read %d+%d after write %d", rs, rn, i)
	}
}

func TestStampMapAlignedMiBWriteIsOneRun(t *testing.T) {
	m := NewStampMap()
	m.Write(4*chunkSectors, chunkSectors, Stamp{Writer: 1, Seq: 1})
	require.Equal(t, 1, m.Len())
	m.Write(4*chunkSectors+8, 8, Stamp{Writer: 2, Seq: 1})
	require.Equal(t, 3, m.Len())
	require.Equal(t, []StampRun{
		{Sector: 4*chunkSectors + 4, Sectors: 4, Stamp: Stamp{1, 1}},
		{Sector: 4*chunkSectors + 8, Sectors: 8, Stamp: Stamp{2, 1}},
		{Sector: 4*chunkSectors + 16, Sectors: 4, Stamp: Stamp{1, 1}},
	}, m.Read(nil, 4*chunkSectors+4, 16))
}

func BenchmarkStampMapRandom4kWrite(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := NewStampMap()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m.Write(rng.Int64N(40<<20/8)*8, 8, Stamp{Writer: 1, Seq: uint64(i)})
	}
}

package workload

import (
	"math"
	"math/rand/v2"

	"github.com/blksim/blksim/blockdev"
)

// This file holds the random offset generators other than the uniform
// one: fio's random_distribution (lib/zipf.c, lib/gauss.c, io_u.c's zoned
// distributions) and random_generator=lfsr. Like fio, none of them uses the
// random map.

// offsetGen picks random blocks.
type offsetGen interface {
	// next returns a block in [0, limit).
	next(limit int64) int64
	// reset starts the generator's sequence again (a new loop).
	reset()
}

// goldenRatio64 scatters a distribution's ranks over the region, as fio's
// __hash_u64 does, so that the hot blocks are not all at the start.
const goldenRatio64 = 0x61C8864680B583EB

// zipfMaxGen caps the terms of zeta(n), as fio's ZIPF_MAX_GEN.
const zipfMaxGen = 10000000

// newOffsetGen returns the generator of s's distribution for dir over a
// region of regionLen bytes, or nil for the uniform distribution.
func newOffsetGen(s *JobSpec, dir blockdev.Op, j *job, regionLen int64) offsetGen {
	d := s.Distribution[dir]
	if d.Kind == DistRandom || !s.RW.Random() {
		return nil
	}
	unit := max(j.unit, 1)
	bs := minBSDir(s, dir)
	n := max((regionLen-bs)/unit+1, 1)
	switch d.Kind {
	case DistZipf, DistPareto:
		var cache map[zetaKey]float64
		if j.r != nil {
			if j.r.zetas == nil {
				j.r.zetas = map[zetaKey]float64{}
			}
			cache = j.r.zetas
		}
		return newRankGen(d, n, j.aux, cache)
	case DistNormal:
		return newNormalGen(d, n, j.aux)
	case DistZoned, DistZonedAbs:
		return newZonedGen(d, n, unit, j.aux)
	}
	return nil
}

// rankGen is fio's zipf and pareto generators: a rank drawn from the
// distribution, scattered over the region (unless a center is given, in
// which case rank 0 is at the center).
type rankGen struct {
	d      Distribution
	n      int64
	rng    *rand.Rand
	off    int64
	scramb bool
	// zipf
	zetan, zeta2, alpha, eta float64
	// pareto
	pow float64
}

// zetaKey identifies a zipf zeta(n, theta), which the jobs of a run share
// (computing it takes up to 10M terms).
type zetaKey struct {
	n     int64
	theta float64
}

func newRankGen(d Distribution, n int64, rng *rand.Rand, cache map[zetaKey]float64) *rankGen {
	g := &rankGen{d: d, n: n, rng: rng, scramb: !d.HasCenter}
	if d.HasCenter {
		g.off = int64(float64(n) * d.Center)
	} else {
		g.off = int64(rng.Uint32())
	}
	if d.Kind == DistPareto {
		g.pow = math.Log(d.Param) / math.Log(1-d.Param)
		return g
	}
	theta := d.Param
	key := zetaKey{n, theta}
	if z, ok := cache[key]; ok {
		g.zetan = z
	} else {
		for i := int64(0); i < min(n, zipfMaxGen); i++ {
			g.zetan += math.Pow(1/float64(i+1), theta)
		}
		if cache != nil {
			cache[key] = g.zetan
		}
	}
	g.zeta2 = 1 + math.Pow(0.5, theta)
	g.alpha = 1 / (1 - theta)
	g.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - g.zeta2/g.zetan)
	return g
}

func (g *rankGen) uniform() float64 { return float64(g.rng.Uint32()) / math.MaxUint32 }

func (g *rankGen) next(limit int64) int64 {
	var rank int64
	u := g.uniform()
	if g.d.Kind == DistPareto {
		rank = int64(float64(g.n-1) * math.Pow(u, g.pow))
	} else {
		// Gray et al., "Quickly generating billion-record synthetic
		// databases" (fio lib/zipf.c zipf_next).
		z := u * g.zetan
		switch {
		case z < 1:
			rank = 0
		case z < 1+math.Pow(0.5, g.d.Param):
			rank = 1
		default:
			rank = int64(float64(g.n) * math.Pow(g.eta*u-g.eta+1, g.alpha))
		}
	}
	rank = min(max(rank, 0), g.n-1)
	v := uint64(rank)
	if g.scramb {
		v *= goldenRatio64
	}
	b := int64((v + uint64(g.off)) % uint64(g.n))
	return b % max(limit, 1)
}

func (g *rankGen) reset() {}

// normalGen is fio's normal distribution: a deviation of Param percent of
// the region around the center (the middle unless given), without
// scattering.
type normalGen struct {
	n      int64
	sigma  float64
	center float64
	rng    *rand.Rand
}

func newNormalGen(d Distribution, n int64, rng *rand.Rand) *normalGen {
	c := 0.5
	if d.HasCenter {
		c = d.Center
	}
	return &normalGen{n: n, sigma: float64(n) * d.Param / 100, center: c * float64(n), rng: rng}
}

func (g *normalGen) next(limit int64) int64 {
	// Irwin-Hall: twelve uniforms less 6 have mean 0 and deviation 1, as
	// fio's gauss_next sums twelve draws.
	sum := -6.0
	for range 12 {
		sum += g.rng.Float64()
	}
	v := int64(math.Floor(g.center + g.sigma*sum))
	v %= g.n
	if v < 0 {
		v += g.n
	}
	return v % max(limit, 1)
}

func (g *normalGen) reset() {}

// zonedGen is fio's zoned and zoned_abs distributions: a zone drawn by its
// share of the accesses, then a uniform block within it.
type zonedGen struct {
	access []int      // cumulative access percentages
	ranges [][2]int64 // block ranges [lo, hi)
	rng    *rand.Rand
}

func newZonedGen(d Distribution, n, unit int64, rng *rand.Rand) *zonedGen {
	g := &zonedGen{rng: rng}
	cum, start := 0, int64(0)
	var pct int64
	for _, z := range d.Zones {
		cum += z.AccessPercent
		var lo, hi int64
		if d.Kind == DistZonedAbs {
			lo = start
			hi = start + z.Size/unit
			start = hi
		} else {
			lo = n * pct / 100
			pct += int64(z.SizePercent)
			hi = n * pct / 100
		}
		lo, hi = min(lo, n-1), min(max(hi, lo+1), n)
		g.access = append(g.access, cum)
		g.ranges = append(g.ranges, [2]int64{lo, hi})
	}
	return g
}

func (g *zonedGen) next(limit int64) int64 {
	v := g.rng.IntN(100)
	i := 0
	for i < len(g.access)-1 && v >= g.access[i] {
		i++
	}
	r := g.ranges[i]
	b := r[0] + g.rng.Int64N(r[1]-r[0])
	return b % max(limit, 1)
}

func (g *zonedGen) reset() {}

// lfsrGen is random_generator=lfsr: every block of the region once per
// pass, in a scrambled order, without a map. Like fio's LFSR it walks a
// full-period sequence over a power-of-2 range and skips the values
// outside the region; here the sequence is a linear congruential one.
type lfsrGen struct {
	n, mask, x, seed uint64
	a, c             uint64
	// steps counts the steps of the current pass, 0..mask.
	steps uint64
}

func newLFSRGen(region, unit int64, rng *rand.Rand) *lfsrGen {
	n := uint64(max(region/max(unit, 1), 1))
	m := uint64(1)
	for m < n {
		m <<= 1
	}
	g := &lfsrGen{n: n, mask: m - 1, a: 6364136223846793005&(m-1) | 1, c: rng.Uint64()&(m-1) | 1}
	// a = 1 mod 4 and c odd give the full period (Hull-Dobell).
	g.a = (g.a &^ 3) | 1
	g.seed = rng.Uint64() & g.mask
	g.x = g.seed
	return g
}

func (g *lfsrGen) next(limit int64) int64 {
	lim := min(uint64(max(limit, 1)), g.n)
	for {
		if g.steps > g.mask {
			// The pass is over (the sequence is back at its seed): go on
			// into the next.
			g.steps = 0
		}
		g.step()
		if g.x < lim {
			return int64(g.x)
		}
	}
}

// tryNext is next within the current pass: false once the pass has been
// through the whole range (fio's lfsr_next failing).
func (g *lfsrGen) tryNext(limit int64) (int64, bool) {
	lim := min(uint64(max(limit, 1)), g.n)
	for g.steps <= g.mask {
		g.step()
		if g.x < lim {
			return int64(g.x), true
		}
	}
	return 0, false
}

// step moves to the sequence's next value; a pass is mask+1 steps.
func (g *lfsrGen) step() {
	g.x = (g.a*g.x + g.c) & g.mask
	g.steps++
}

func (g *lfsrGen) reset() { g.x, g.steps = g.seed, 0 }

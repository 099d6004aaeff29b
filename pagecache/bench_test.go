package pagecache

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// benchSteady fills a cache of limit pages, then measures one operation
// per iteration at steady state: a Find of a random page of a working set
// twice the cache (4 inodes), and on a miss an Add, which evicts.
func benchSteady(b *testing.B, policy string, limit int) {
	c, err := New(Options{LimitPages: limit, Policy: policy})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	span := int64(limit / 2) // per inode
	op := func() {
		ino, idx := InodeID(rng.IntN(4)), rng.Int64N(span)
		if c.Find(ino, idx) != nil {
			return
		}
		p, err := c.Add(ino, idx)
		if err != nil {
			b.Fatal(err)
		}
		p.SetUptodate()
		p.Unlock()
	}
	for range 4 * limit {
		op()
	}
	b.ReportAllocs()
	before := c.Evictions()
	b.ResetTimer()
	for range b.N {
		op()
	}
	b.StopTimer()
	b.ReportMetric(float64(c.Evictions()-before)/float64(b.N), "evictions/op")
}

func BenchmarkFindAddSteady(b *testing.B) {
	for _, bc := range []struct {
		policy string
		limit  int
	}{
		{PolicyLRU, 1 << 10},
		{PolicyLRU, 1 << 18}, // 1 GiB
		{PolicyTinyLFU, 1 << 10},
		{PolicyTinyLFU, 1 << 18},
	} {
		b.Run(bc.policy+"/"+strconv.Itoa(bc.limit), func(b *testing.B) { benchSteady(b, bc.policy, bc.limit) })
	}
}

// BenchmarkAddEvict measures Add when every Add evicts (a streaming read).
func BenchmarkAddEvict(b *testing.B) {
	for _, policy := range policies {
		b.Run(policy, func(b *testing.B) {
			c, err := New(Options{LimitPages: 4096, Policy: policy})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			b.ReportAllocs()
			for i := range int64(b.N) + 4096 {
				if i == 4096 {
					b.ResetTimer()
				}
				p, err := c.Add(1, i)
				if err != nil {
					b.Fatal(err)
				}
				p.SetUptodate()
				p.Unlock()
			}
		})
	}
}

// BenchmarkRangeTagged measures a tagged walk over 64 dirty pages among
// 64k clean ones.
func BenchmarkRangeTagged(b *testing.B) {
	c, err := New(Options{LimitPages: 1 << 16})
	if err != nil {
		b.Fatal(err)
	}
	for i := range int64(1 << 16) {
		p, _ := c.Add(1, i)
		p.SetUptodate()
		if i%1024 == 0 {
			p.SetDirty()
		}
		p.Unlock()
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for range b.N {
		c.RangeTagged(1, 0, MaxIndex, TagDirty, func(*Page) bool { n++; return true })
	}
	if n != 64*b.N {
		b.Fatal(n)
	}
}

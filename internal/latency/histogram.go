// Package latency records latency samples the way fio does: exact running
// figures (count, min, max, mean, standard deviation) plus fio's log-linear
// bucket array for percentiles, so that blksim's reports show the same
// numbers fio would for the same samples.
package latency

import (
	"math"
	"math/big"
	"math/bits"
)

// Bucket layout, as fio's io_u_plat array (stat.h: FIO_IO_U_PLAT_BITS,
// FIO_IO_U_PLAT_VAL, FIO_IO_U_PLAT_GROUP_NR). Values are nanoseconds.
//
// Values below 2*planVal (128 ns) have one bucket each. Above that, every
// power-of-two range [2^m, 2^(m+1)) is split into planVal equal buckets, so a
// bucket's width is at most 1/64 of its lower bound and its representative
// value (the bucket's midpoint) is within 1/128 of any value in it. Values of
// 2^34 ns (about 17.2 s) and more all land in the last bucket.
const (
	planBits    = 6
	planVal     = 1 << planBits
	planGroupNr = 29
	bucketCount = planGroupNr * planVal // 1856
)

// Histogram records latencies in nanoseconds: exactly for Count, Min, Max,
// Sum and Mean, with a running (Welford) variance for Stddev, and in fio's
// log-linear buckets for Percentile and Buckets.
//
// The zero value is an empty histogram ready to use. A Histogram is a plain
// value of about 15 KiB with no pointers; copying it copies the samples.
// It is not safe for concurrent use. Record does not allocate.
type Histogram struct {
	n        uint64
	min, max int64
	// sumHi:sumLo is the exact 128-bit sum of all samples.
	sumHi, sumLo uint64
	// mean and m2 are Welford's running mean and sum of squared
	// deviations from it, as fio's add_stat_sample keeps them.
	mean, m2 float64
	buckets  [bucketCount]uint64
}

// Record adds one sample of ns nanoseconds. Negative values are recorded as
// zero. Record does not allocate.
func (h *Histogram) Record(ns int64) {
	if ns < 0 {
		ns = 0
	}
	if h.n == 0 || ns < h.min {
		h.min = ns
	}
	if ns > h.max {
		h.max = ns
	}
	var carry uint64
	h.sumLo, carry = bits.Add64(h.sumLo, uint64(ns), 0)
	h.sumHi += carry

	v := float64(ns)
	if d := v - h.mean; d != 0 {
		h.mean += d / float64(h.n+1)
		h.m2 += d * (v - h.mean)
	}
	h.n++
	h.buckets[bucketIndex(uint64(ns))]++
}

// Merge adds all of o's samples to h, as if they had been recorded into h.
// Count, Min, Max, Sum and the buckets (hence Percentile) come out exactly
// as recording both would give; Mean is exact too, and Stddev agrees to
// floating-point rounding (fio's parallel-variance formula). o is not
// changed; h and o may be the same histogram.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if h == o {
		c := *o
		o = &c
	}
	if h.n == 0 {
		*h = *o
		return
	}
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
	var carry uint64
	h.sumLo, carry = bits.Add64(h.sumLo, o.sumLo, 0)
	h.sumHi, _ = bits.Add64(h.sumHi, o.sumHi, carry)

	na, nb := float64(h.n), float64(o.n)
	delta := o.mean - h.mean
	h.mean = (h.mean*na + o.mean*nb) / (na + nb)
	h.m2 += o.m2 + delta*delta*na*nb/(na+nb)
	h.n += o.n
	for i := range h.buckets {
		h.buckets[i] += o.buckets[i]
	}
}

// Count returns the number of samples recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Min returns the smallest sample, or 0 if there are none.
func (h *Histogram) Min() int64 { return h.min }

// Max returns the largest sample, or 0 if there are none.
func (h *Histogram) Max() int64 { return h.max }

// Sum returns the sum of all samples. The sum is kept exactly (in 128 bits);
// only the conversion to float64 rounds.
func (h *Histogram) Sum() float64 {
	return float64(h.sumHi)*0x1p64 + float64(h.sumLo)
}

// Mean returns the arithmetic mean of the samples (Sum/Count), or 0 if there
// are none.
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.Sum() / float64(h.n)
}

// Stddev returns the sample standard deviation, sqrt(Σ(x-mean)²/(n-1)), as
// fio reports it; 0 with fewer than two samples.
func (h *Histogram) Stddev() float64 {
	if h.n < 2 {
		return 0
	}
	return math.Sqrt(h.m2 / float64(h.n-1))
}

// Percentile returns fio's p-th percentile: the representative value of the
// first bucket, in increasing order, at which the cumulative count reaches
// p/100 of the samples. The comparison is exact, as fio's long double one
// is in practice: the float64 99.95 is slightly above 99.95, so the 99.95th
// percentile of 10000 samples is the 9996th smallest sample's bucket, where
// float64 arithmetic would give the 9995th's.
//
// The result is within 1/128 of a sample value in the same bucket, except
// for samples of 2^34 ns or more, which all report the last bucket's value
// (about 17.1 s), as fio does. It is not clamped to [Min, Max].
// p is clamped to 100; p ≤ 0 (or NaN) gives the lowest non-empty bucket.
// An empty histogram returns 0.
func (h *Histogram) Percentile(p float64) int64 {
	if h.n == 0 {
		return 0
	}
	need := threshold(p, h.n)
	var sum uint64
	for i, c := range h.buckets {
		sum += c
		if sum >= need {
			return int64(bucketValue(i))
		}
	}
	return int64(bucketValue(bucketCount - 1)) // unreachable: need <= n
}

// Buckets calls fn for every non-empty bucket in increasing order of value,
// with the bucket's representative value in nanoseconds (as fio's json+
// "bins" keys) and its sample count.
func (h *Histogram) Buckets(fn func(valueNs int64, count uint64)) {
	for i, c := range h.buckets {
		if c != 0 {
			fn(int64(bucketValue(i)), c)
		}
	}
}

// threshold returns the smallest integer count s with s >= p/100*n, computed
// exactly, and at least 1.
func threshold(p float64, n uint64) uint64 {
	if !(p > 0) {
		return 1
	}
	if p >= 100 {
		return n
	}
	r := new(big.Rat).SetFloat64(p) // exact: p is finite here
	r.Mul(r, new(big.Rat).SetUint64(n))
	r.Quo(r, big.NewRat(100, 1))
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	s := q.Uint64() // q <= n since p < 100
	return max(s, 1)
}

// NumBuckets is the number of buckets a Histogram keeps, fio's
// FIO_IO_U_PLAT_NR (the bins of a clat histogram log line).
const NumBuckets = bucketCount

// BucketIndex returns the bucket, 0 to NumBuckets-1, in which a latency of
// ns nanoseconds is counted (negative values count as zero), as fio's
// plat_val_to_idx picks it.
func BucketIndex(ns int64) int {
	return bucketIndex(uint64(max(ns, 0)))
}

// bucketIndex maps a value to its bucket, as fio's plat_val_to_idx.
func bucketIndex(v uint64) int {
	msb := bits.Len64(v) - 1 // -1 for v == 0
	if msb <= planBits {
		return int(v) // v < 128: one bucket per value
	}
	errBits := msb - planBits
	base := (errBits + 1) << planBits
	off := int(v>>errBits) & (planVal - 1)
	return min(base+off, bucketCount-1)
}

// bucketValue maps a bucket to its representative value, the midpoint of
// the values it holds (truncated), as fio's plat_idx_to_val.
func bucketValue(idx int) uint64 {
	if idx < 2*planVal {
		return uint64(idx)
	}
	errBits := uint(idx>>planBits) - 1
	base := uint64(1) << (errBits + planBits)
	k := uint64(idx % planVal)
	// base + (k+0.5)*2^errBits; errBits >= 1 here, so this is exact.
	return base + k<<errBits + uint64(1)<<(errBits-1)
}

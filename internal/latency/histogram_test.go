package latency

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func record(vals ...int64) *Histogram {
	h := new(Histogram)
	for _, v := range vals {
		h.Record(v)
	}
	return h
}

func closeTo(a, b, rel float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

func TestExactFigures(t *testing.T) {
	tests := []struct {
		name          string
		vals          []int64
		count         uint64
		min, max      int64
		sum           float64
		mean, stddev  float64
		stddevRelTol  float64
		percentile50  int64
		percentile100 int64
	}{
		{name: "empty"},
		{name: "one", vals: []int64{5000}, count: 1, min: 5000, max: 5000, sum: 5000,
			mean: 5000, stddev: 0, percentile50: 5024, percentile100: 5024},
		{name: "small", vals: []int64{1, 2, 3, 4}, count: 4, min: 1, max: 4, sum: 10,
			mean: 2.5, stddev: math.Sqrt(5.0 / 3.0), percentile50: 2, percentile100: 4},
		{name: "equal", vals: []int64{700, 700, 700}, count: 3, min: 700, max: 700, sum: 2100,
			mean: 700, stddev: 0, percentile50: 700, percentile100: 700},
		{name: "negative clamps to zero", vals: []int64{-5, 10}, count: 2, min: 0, max: 10, sum: 10,
			mean: 5, stddev: math.Sqrt(50), percentile50: 0, percentile100: 10},
		{name: "seconds", vals: []int64{1e9, 3e9}, count: 2, min: 1e9, max: 3e9, sum: 4e9,
			mean: 2e9, stddev: math.Sqrt(2e18), percentile50: 1002438656, percentile100: 3003121664},
		{name: "beyond the last bucket", vals: []int64{1 << 40}, count: 1, min: 1 << 40, max: 1 << 40,
			sum: 1 << 40, mean: 1 << 40, percentile50: 17112760320, percentile100: 17112760320},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := record(tt.vals...)
			if h.Count() != tt.count || h.Min() != tt.min || h.Max() != tt.max {
				t.Fatalf("count/min/max = %d/%d/%d, want %d/%d/%d",
					h.Count(), h.Min(), h.Max(), tt.count, tt.min, tt.max)
			}
			if h.Sum() != tt.sum || h.Mean() != tt.mean {
				t.Errorf("sum/mean = %v/%v, want %v/%v", h.Sum(), h.Mean(), tt.sum, tt.mean)
			}
			if !closeTo(h.Stddev(), tt.stddev, 1e-12) {
				t.Errorf("stddev = %v, want %v", h.Stddev(), tt.stddev)
			}
			if got := h.Percentile(50); got != tt.percentile50 {
				t.Errorf("p50 = %d, want %d", got, tt.percentile50)
			}
			if got := h.Percentile(100); got != tt.percentile100 {
				t.Errorf("p100 = %d, want %d", got, tt.percentile100)
			}
		})
	}
}

func TestSumCarriesPast64Bits(t *testing.T) {
	// Past 2^64 the 128-bit sum must carry.
	h := record(math.MaxInt64, math.MaxInt64, math.MaxInt64)
	if got, want := h.Sum(), 3*float64(math.MaxInt64); !closeTo(got, want, 1e-15) {
		t.Fatalf("sum = %v, want %v", got, want)
	}
}

func TestBucketLayout(t *testing.T) {
	tests := []struct {
		v   uint64
		idx int
		rep uint64 // representative value of the bucket
	}{
		{0, 0, 0},
		{1, 1, 1},
		{127, 127, 127},
		{128, 128, 129},
		{129, 128, 129},
		{130, 129, 131},
		{255, 191, 255},
		{256, 192, 258},
		{259, 192, 258},
		{260, 193, 262},
		{8192, 512, 8256},
		{11584, 538, 11584},
		{1<<34 - 1, 1855, 17112760320},
		{1 << 34, 1855, 17112760320},
		{math.MaxUint64, 1855, 17112760320},
	}
	for _, tt := range tests {
		if got := bucketIndex(tt.v); got != tt.idx {
			t.Errorf("bucketIndex(%d) = %d, want %d", tt.v, got, tt.idx)
		}
		if got := bucketValue(tt.idx); got != tt.rep {
			t.Errorf("bucketValue(%d) = %d, want %d", tt.idx, got, tt.rep)
		}
	}
	// Every bucket's representative value maps back to it, buckets are
	// contiguous and increasing, and the error is within 1/128.
	prev := uint64(0)
	for i := range bucketCount {
		v := bucketValue(i)
		if bucketIndex(v) != i {
			t.Fatalf("bucketIndex(bucketValue(%d)=%d) = %d", i, v, bucketIndex(v))
		}
		if i > 0 && v <= prev {
			t.Fatalf("bucketValue(%d) = %d not above %d", i, v, prev)
		}
		prev = v
	}
	for v := uint64(0); v < 1<<20; v += 7 {
		r := bucketValue(bucketIndex(v))
		if d := math.Abs(float64(r) - float64(v)); d > float64(v)/128 {
			t.Fatalf("value %d reported as %d: error %v above 1/128", v, r, d)
		}
	}
}

// Percentile values printed by real fio runs (fio-3.25, clat in nsec) are
// bucket representatives: each one maps to itself.
func TestFioReportedValuesAreRepresentatives(t *testing.T) {
	for _, v := range []uint64{11584, 11712, 11840, 12096, 12352, 12480, 12608,
		12992, 13632, 13888, 15424, 18560, 23168, 27264, 38656, 43264, 58112} {
		if got := bucketValue(bucketIndex(v)); got != v {
			t.Errorf("%d maps to %d", v, got)
		}
	}
}

func TestPercentileMatchesSortedSamples(t *testing.T) {
	ps := []float64{1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 100}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 10, 999, 1000, 10000, 123457} {
		vals := make([]int64, n)
		h := new(Histogram)
		for i := range vals {
			// Log-uniform over 50 ns .. 50 ms.
			vals[i] = int64(50 * math.Exp(rng.Float64()*math.Log(1e6)))
			h.Record(vals[i])
		}
		slices.Sort(vals)
		for _, p := range ps {
			// The sample of rank ceil(p/100*n) (computed exactly) decides.
			rank := threshold(p, uint64(n))
			exact := vals[rank-1]
			want := int64(bucketValue(bucketIndex(uint64(exact))))
			got := h.Percentile(p)
			if got != want {
				t.Errorf("n=%d p=%v: got %d, want %d (sample %d)", n, p, got, want, exact)
			}
			if d := math.Abs(float64(got - exact)); d > float64(exact)/128 {
				t.Errorf("n=%d p=%v: %d is more than 1/128 from %d", n, p, got, exact)
			}
		}
	}
}

// fio compares in long double; float64 would round 99.95/100*10000 to
// exactly 9995 and pick the wrong sample.
func TestPercentileThresholdIsExact(t *testing.T) {
	h := new(Histogram)
	for range 9995 {
		h.Record(100)
	}
	for range 5 {
		h.Record(1_000_000)
	}
	if got := h.Percentile(99.95); got != 1003520 {
		t.Fatalf("p99.95 = %d, want 1003520", got)
	}
	if got := h.Percentile(99.9); got != 100 {
		t.Fatalf("p99.9 = %d, want 100", got)
	}
	tests := []struct {
		p    float64
		n    uint64
		want uint64
	}{
		{99.95, 10000, 9996},
		{99.95, 2000, 2000},
		{50, 10, 5},
		{50, 11, 6},
		{1, 1, 1},
		{0, 100, 1},
		{-3, 100, 1},
		{math.NaN(), 100, 1},
		{100, 7, 7},
		{250, 7, 7},
		{1e-300, 5, 1},
	}
	for _, tt := range tests {
		if got := threshold(tt.p, tt.n); got != tt.want {
			t.Errorf("threshold(%v, %d) = %d, want %d", tt.p, tt.n, got, tt.want)
		}
	}
}

func TestPercentileEmpty(t *testing.T) {
	var h Histogram
	if h.Percentile(50) != 0 {
		t.Fatal("empty histogram percentile is not 0")
	}
	n := 0
	h.Buckets(func(int64, uint64) { n++ })
	if n != 0 {
		t.Fatal("empty histogram has buckets")
	}
}

func TestMergeEqualsRecordingBoth(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	gen := func(n int, scale float64) []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(rng.ExpFloat64() * scale)
		}
		return v
	}
	tests := []struct {
		name string
		a, b []int64
	}{
		{"both empty", nil, nil},
		{"empty into full", gen(100, 1e4), nil},
		{"full into empty", nil, gen(100, 1e4)},
		{"similar", gen(1000, 1e4), gen(2000, 1e4)},
		{"different scales", gen(500, 1e3), gen(700, 1e7)},
		{"single samples", []int64{10}, []int64{1e6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := record(tt.a...), record(tt.b...)
			both := record(append(slices.Clone(tt.a), tt.b...)...)
			a.Merge(b)
			if a.Count() != both.Count() || a.Min() != both.Min() || a.Max() != both.Max() ||
				a.Sum() != both.Sum() || a.Mean() != both.Mean() {
				t.Fatalf("merged %d/%d/%d/%v/%v, recorded %d/%d/%d/%v/%v",
					a.Count(), a.Min(), a.Max(), a.Sum(), a.Mean(),
					both.Count(), both.Min(), both.Max(), both.Sum(), both.Mean())
			}
			if !closeTo(a.Stddev(), both.Stddev(), 1e-9) {
				t.Errorf("stddev %v, want %v", a.Stddev(), both.Stddev())
			}
			if a.buckets != both.buckets {
				t.Errorf("buckets differ")
			}
			for _, p := range []float64{1, 50, 99, 99.99} {
				if a.Percentile(p) != both.Percentile(p) {
					t.Errorf("p%v: %d vs %d", p, a.Percentile(p), both.Percentile(p))
				}
			}
			if b.Count() != uint64(len(tt.b)) {
				t.Errorf("Merge changed its argument")
			}
		})
	}
}

func TestMergeSelf(t *testing.T) {
	h := record(1, 2, 3)
	h.Merge(h)
	want := record(1, 2, 3, 1, 2, 3)
	if h.Count() != 6 || h.Sum() != 12 || h.buckets != want.buckets ||
		!closeTo(h.Stddev(), want.Stddev(), 1e-12) {
		t.Fatalf("self merge: count %d sum %v stddev %v", h.Count(), h.Sum(), h.Stddev())
	}
}

func TestBucketsInOrder(t *testing.T) {
	h := record(5, 5, 300, 1e6, 200, 5)
	type bin struct {
		v int64
		c uint64
	}
	var got []bin
	h.Buckets(func(v int64, c uint64) { got = append(got, bin{v, c}) })
	want := []bin{{5, 3}, {201, 1}, {302, 1}, {1003520, 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("buckets %v, want %v", got, want)
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	h := new(Histogram)
	v := int64(1)
	allocs := testing.AllocsPerRun(1000, func() {
		h.Record(v)
		v = v*3 + 1
		if v > 1<<40 {
			v = 1
		}
	})
	if allocs != 0 {
		t.Fatalf("Record allocates: %v per call", allocs)
	}
}

func BenchmarkRecord(b *testing.B) {
	h := new(Histogram)
	for i := range b.N {
		h.Record(int64(i & 0xfffff))
	}
}

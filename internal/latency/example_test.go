package latency_test

import (
	"fmt"

	"github.com/blksim/blksim/internal/latency"
)

func ExampleHistogram() {
	var h latency.Histogram // the zero value is ready to use
	for i := int64(1); i <= 1000; i++ {
		h.Record(i * 1000) // 1 us .. 1 ms
	}
	fmt.Println(h.Count(), h.Min(), h.Max(), h.Mean())
	// Percentiles are fio's bucket values: within 1/128 of the sample.
	fmt.Println(h.Percentile(50), h.Percentile(99), h.Percentile(100))
	// Output:
	// 1000 1000 1000000 500500
	// 501760 987136 1003520
}

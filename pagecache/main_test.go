package pagecache

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a goroutine outlives the tests: "tinylfu"
// caches must stop ristretto's goroutines on Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package writeback_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a goroutine (a task coroutine of an engine
// that was not closed) outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

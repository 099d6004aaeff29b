package sim

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine (in particular a task coroutine
// of an engine that was not closed) is still alive when the tests end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

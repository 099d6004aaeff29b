package writeback

import (
	"fmt"
	"strings"
	"time"
)

// Stats are a Writeback's counters for reports. Arrays are indexed by
// Reason.
type Stats struct {
	// Written is the pages written per reason (NrToWrite consumed by
	// writepages calls).
	Written [NumReasons]int64
	// Calls is the writepages calls per reason.
	Calls [NumReasons]int64
	// Passes is the flusher passes per reason (Pick calls that returned
	// work).
	Passes [NumReasons]int64
	// Serialized counts writepages calls told LockSerialize; Skips those
	// told LockSkip, and SkippedPages the dirty pages they skipped.
	Serialized, Skips, SkippedPages int64
	// Errors counts writepages calls that returned an error.
	Errors int64
	// Pauses is the number of throttle pauses BalanceDirtyPages made
	// writers take, PauseTotal and PauseMax their total and longest, and
	// LimitPauses how many were taken at or above the dirty limit.
	Pauses      int64
	PauseTotal  time.Duration
	PauseMax    time.Duration
	LimitPauses int64
}

// TotalWritten returns the pages written for every reason.
func (s Stats) TotalWritten() int64 {
	var n int64
	for _, w := range s.Written {
		n += w
	}
	return n
}

// String renders the statistics on one line, e.g.
// "written background=1024 periodic=0 sync=0 fsync=256 passes=3 calls=5
// serialized=0 skips=0 errors=0 pauses=2 (total 12ms, max 10ms, 0 at
// limit)".
func (s Stats) String() string {
	var b strings.Builder
	b.WriteString("written")
	var passes, calls int64
	for r := range NumReasons {
		fmt.Fprintf(&b, " %s=%d", r, s.Written[r])
		passes += s.Passes[r]
		calls += s.Calls[r]
	}
	fmt.Fprintf(&b, " passes=%d calls=%d serialized=%d skips=%d errors=%d pauses=%d (total %v, max %v, %d at limit)",
		passes, calls, s.Serialized, s.Skips, s.Errors, s.Pauses, s.PauseTotal, s.PauseMax, s.LimitPauses)
	return b.String()
}

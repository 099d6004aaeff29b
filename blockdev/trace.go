package blockdev

import "github.com/blksim/blksim/sim"

// TraceAction is a block-layer event as blktrace names it. The values are
// the kernel's __BLK_TA_* numbers (include/uapi/linux/blktrace_api.h).
type TraceAction uint8

// Trace actions, with blkparse's letter.
const (
	TraceQueue       TraceAction = 1  // Q: a bio entered the queue
	TraceBackMerge   TraceAction = 2  // M: a bio was appended to a request
	TraceFrontMerge  TraceAction = 3  // F: a bio was prepended to a request
	TraceGetRequest  TraceAction = 4  // G: a request was allocated
	TraceSleep       TraceAction = 5  // S: the submitter waited for a request/tag
	TraceRequeue     TraceAction = 6  // R: a request went back to the queue
	TraceIssue       TraceAction = 7  // D: a request was issued to the device
	TraceComplete    TraceAction = 8  // C: a request completed
	TracePlug        TraceAction = 9  // P: a request started a plug's batch
	TraceUnplug      TraceAction = 10 // U: a plug was flushed (Extra: depth)
	TraceUnplugTimer TraceAction = 11 // UT: a plug was flushed by its task sleeping
	TraceInsert      TraceAction = 12 // I: a request was inserted in the scheduler
	TraceSplit       TraceAction = 13 // X: a bio was split (Extra: new sector)
)

// Letter returns blkparse's letter for a.
func (a TraceAction) Letter() string {
	switch a {
	case TraceQueue:
		return "Q"
	case TraceBackMerge:
		return "M"
	case TraceFrontMerge:
		return "F"
	case TraceGetRequest:
		return "G"
	case TraceSleep:
		return "S"
	case TraceRequeue:
		return "R"
	case TraceIssue:
		return "D"
	case TraceComplete:
		return "C"
	case TracePlug:
		return "P"
	case TraceUnplug:
		return "U"
	case TraceUnplugTimer:
		return "UT"
	case TraceInsert:
		return "I"
	case TraceSplit:
		return "X"
	}
	return "?"
}

// TraceEvent is one block-layer event. Sector and Bytes describe the bio or
// request; PID, Comm and CPU the task on whose behalf it happened (the
// submitter for Q, G, I, M, F, P, U, X and D when issued from a plug; the
// completing context for C).
type TraceEvent struct {
	Time   sim.Time
	Action TraceAction
	Op     Op
	// Sync is the IO's REQ_SYNC flag (Bio.Sync): direct-IO writes, fsync
	// writeback.
	Sync bool
	// Rahead is the IO's REQ_RAHEAD flag (Bio.Rahead): readahead.
	Rahead bool
	// Flush is the IO's REQ_PREFLUSH flag (Bio.Flush): a cache flush,
	// or a write preceded by one.
	Flush bool
	// FUA is the IO's REQ_FUA flag (Bio.FUA), Meta its REQ_META.
	FUA, Meta bool
	Sector    int64
	Bytes     int64
	PID       uint32
	Comm      string
	CPU       int
	// Error is the errno of a failed completion (positive), else 0.
	Error int
	// Extra is the plug depth for Unplug and the sector where the second
	// part starts for Split.
	Extra uint64
}

// Tracer receives block-layer events in time order. Trace runs on the
// engine goroutine; ev is valid only during the call.
type Tracer interface {
	Trace(ev *TraceEvent)
}

// Issuer identifies the task a bio is submitted for, for traces and
// statistics. The zero value is the kernel itself (PID 0).
type Issuer struct {
	PID  uint32
	Comm string
	CPU  int
}

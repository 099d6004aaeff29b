package blockdev

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/blksim/blksim/internal/units"
	"github.com/blksim/blksim/sim"
)

// ErrInjected is matched (errors.Is) by every error a FaultDevice
// injects, besides the errno it carries.
var ErrInjected = errors.New("blockdev: injected fault")

// InjectedError is the error of a request a FaultDevice failed: it
// matches its Errno and ErrInjected with errors.Is, and errors.As finds
// the syscall.Errno.
type InjectedError struct {
	Errno syscall.Errno
}

// Error names the errno, e.g. "blockdev: injected fault: input/output
// error".
func (e *InjectedError) Error() string { return "blockdev: injected fault: " + e.Errno.Error() }

// Is reports whether target is ErrInjected or e's errno.
func (e *InjectedError) Is(target error) bool { return target == ErrInjected || target == e.Errno }

// Unwrap returns the errno.
func (e *InjectedError) Unwrap() error { return e.Errno }

// Injector decides, per request, whether a FaultDevice fails it, like
// pebble's errorfs.Injector. MaybeError is called once for every request
// submitted to the device, in submission order, on the engine goroutine;
// it returns nil to let the request through to the delegate, or the
// error the request completes with. It may keep state (counters).
type Injector interface {
	MaybeError(r *Request) error
}

// InjectorFunc adapts a function to the Injector interface.
type InjectorFunc func(r *Request) error

// MaybeError calls f(r).
func (f InjectorFunc) MaybeError(r *Request) error { return f(r) }

// Predicate selects requests. Evaluate is called on the engine goroutine,
// in submission order; predicates that count (After, Every) or draw
// (Randomly) change state on every call, so a composite evaluates its
// parts in order and stops at the first that decides (And, Or).
type Predicate interface {
	Evaluate(r *Request) bool
	String() string
}

type predFunc struct {
	name string
	fn   func(r *Request) bool
}

func (p predFunc) Evaluate(r *Request) bool { return p.fn(r) }
func (p predFunc) String() string           { return p.name }

// OnOp matches requests in direction op.
func OnOp(op Op) Predicate {
	return predFunc{"op=" + op.String(), func(r *Request) bool { return r.Op == op }}
}

// InSectors matches requests that overlap the sectors [start, end).
func InSectors(start, end int64) Predicate {
	return predFunc{fmt.Sprintf("sectors=%d-%d", start, end), func(r *Request) bool {
		return r.Sector < end && r.Sector+r.Sectors() > start
	}}
}

// After is false for its first n evaluations and true from then on: in
// And(OnOp(OpWrite), After(3)) it lets the first three writes through.
func After(n int64) Predicate {
	seen := int64(0)
	return predFunc{fmt.Sprintf("after=%d", n), func(*Request) bool {
		seen++
		return seen > n
	}}
}

// Every is true for its nth, 2nth, 3nth ... evaluations (n <= 1: every
// one).
func Every(n int64) Predicate {
	seen := int64(0)
	return predFunc{fmt.Sprintf("every=%d", n), func(*Request) bool {
		seen++
		return n <= 1 || seen%n == 0
	}}
}

// Randomly is true with probability p on each evaluation, drawing from
// rng (use the engine's: sim.Engine.NewRand, so that the same seed gives
// the same faults). p >= 1 is always true without a draw, p <= 0 never.
func Randomly(p float64, rng *rand.Rand) Predicate {
	return predFunc{fmt.Sprintf("probability=%g", p), func(*Request) bool {
		switch {
		case p >= 1:
			return true
		case p <= 0:
			return false
		}
		return rng.Float64() < p
	}}
}

// And is true when every predicate is, evaluated in order up to the first
// false one (so a counting predicate counts only the requests the ones
// before it matched). And() is always true.
func And(ps ...Predicate) Predicate {
	return predFunc{joinPreds("and", ps), func(r *Request) bool {
		for _, p := range ps {
			if !p.Evaluate(r) {
				return false
			}
		}
		return true
	}}
}

// Or is true when one predicate is, evaluated in order up to the first
// true one. Or() is always false.
func Or(ps ...Predicate) Predicate {
	return predFunc{joinPreds("or", ps), func(r *Request) bool {
		for _, p := range ps {
			if p.Evaluate(r) {
				return true
			}
		}
		return false
	}}
}

// Not negates p.
func Not(p Predicate) Predicate {
	return predFunc{"not(" + p.String() + ")", func(r *Request) bool { return !p.Evaluate(r) }}
}

func joinPreds(op string, ps []Predicate) string {
	s := op + "("
	for i, p := range ps {
		if i > 0 {
			s += ", "
		}
		s += p.String()
	}
	return s + ")"
}

// Rule is an Injector: the requests When matches fail with Err (nil:
// EIO), at most Limit of them (0: no cap). When nil matches every
// request. A Rule counts what it injected; it must not be shared by two
// devices.
type Rule struct {
	When  Predicate
	Err   error
	Limit int64

	injected int64
}

// MaybeError returns the rule's error for a request When matches, until
// Limit requests have failed.
func (ru *Rule) MaybeError(r *Request) error {
	if ru.Limit > 0 && ru.injected >= ru.Limit {
		return nil
	}
	if ru.When != nil && !ru.When.Evaluate(r) {
		return nil
	}
	ru.injected++
	if ru.Err == nil {
		return &InjectedError{Errno: syscall.EIO}
	}
	return ru.Err
}

// Injected returns how many requests the rule has failed.
func (ru *Rule) Injected() int64 { return ru.injected }

// FaultDevice wraps a Device and fails the requests its Injector picks,
// like pebble's errorfs.FS: every other request, and every other method,
// goes to the delegate, which it holds as a named field (never embedded,
// so no method of the delegate escapes injection).
//
// A failed request never reaches the delegate: a write stores nothing
// (its sectors keep their stamps), a read returns no stamps. It completes
// with Request.Err set to the injector's error, Latency after its
// submission, from an engine event (never inside Submit), as the Device
// contract requires. With an injector that returns nil for every request
// the FaultDevice satisfies the Device contract exactly as its delegate
// does.
//
// Like every Device it runs on the engine goroutine only.
type FaultDevice struct {
	e        *sim.Engine
	delegate Device
	inj      Injector
	c        Completer
	slots    slotTable

	// Latency is how long after its submission an injected request
	// completes (0: at once, in the next event). Set it before the first
	// Submit.
	Latency time.Duration

	injected [2]uint64
}

// NewFaultDevice wraps dev; inj decides which requests fail (nil: none).
func NewFaultDevice(e *sim.Engine, dev Device, inj Injector) *FaultDevice {
	return &FaultDevice{e: e, delegate: dev, inj: inj}
}

// Unwrap returns the wrapped device.
func (d *FaultDevice) Unwrap() Device { return d.delegate }

// Name returns the delegate's name.
func (d *FaultDevice) Name() string { return d.delegate.Name() }

// Capacity returns the delegate's capacity.
func (d *FaultDevice) Capacity() int64 { return d.delegate.Capacity() }

// Limits returns the delegate's limits.
func (d *FaultDevice) Limits() Limits { return d.delegate.Limits() }

// Attach sets the completer of both the wrapper (for injected failures)
// and the delegate (for the requests it serves).
func (d *FaultDevice) Attach(c Completer) {
	d.c = c
	d.delegate.Attach(c)
}

// Submit asks the injector about r: a request it fails completes with
// the error after Latency; any other goes to the delegate.
func (d *FaultDevice) Submit(r *Request) {
	var err error
	if d.inj != nil {
		err = d.inj.MaybeError(r)
	}
	if err == nil {
		d.delegate.Submit(r)
		return
	}
	r.Err = err
	if r.Op <= OpWrite {
		d.injected[r.Op]++
	}
	d.e.After(d.Latency, d, uint64(d.slots.put(r)))
}

// Fire completes the failed request in slot arg.
func (d *FaultDevice) Fire(arg uint64) {
	d.c.CompleteRequest(d.slots.take(int(arg)))
}

// Injected returns how many reads and writes (indexed by Op) the device
// has failed.
func (d *FaultDevice) Injected() [2]uint64 { return d.injected }

// Stamps returns the delegate's stamp store (for verification), or nil
// if it keeps none.
func (d *FaultDevice) Stamps() *StampMap {
	if s, ok := d.delegate.(interface{ Stamps() *StampMap }); ok {
		return s.Stamps()
	}
	return nil
}

// FaultSpec is the common fault of blksim's stack keys (fault.*): the
// requests in one direction that overlap a sector range, after the first
// After of them, every Every-th one, each with probability Probability,
// at most Count of them, fail with Errno after Latency.
type FaultSpec struct {
	// Op is OpRead or OpWrite; Any matches both.
	Op  Op
	Any bool
	// Start and End are the sector range [Start, End); End 0 is the end
	// of the device.
	Start, End int64
	// After lets the first After matching requests through; Every fails
	// every Every-th matching request after them (0 or 1: each one).
	After, Every int64
	// Probability is the chance that a request chosen by the rules above
	// fails, drawn from the engine's seeded random source (1: always).
	Probability float64
	// Count caps the failures (0: no cap).
	Count int64
	// Errno is the error (0: EIO).
	Errno syscall.Errno
	// Latency is how long a failing request takes (0: at once).
	Latency time.Duration
}

// faultStream is the engine random stream of FaultSpec's probability.
const faultStream = 0xfa17

// Rule returns the spec's injector, its predicates in the order After and
// Every count: direction, then range, then After, Every, Probability.
// rng draws the probability (nil: e.NewRand on a stream of its own, so
// that the faults depend only on the engine's seed).
func (s FaultSpec) Rule(e *sim.Engine, rng *rand.Rand) *Rule {
	var ps []Predicate
	if !s.Any {
		ps = append(ps, OnOp(s.Op))
	}
	if s.Start > 0 || s.End > 0 {
		end := s.End
		if end <= 0 {
			end = 1 << 62
		}
		ps = append(ps, InSectors(s.Start, end))
	}
	if s.After > 0 {
		ps = append(ps, After(s.After))
	}
	if s.Every > 1 {
		ps = append(ps, Every(s.Every))
	}
	if s.Probability < 1 {
		if rng == nil {
			rng = e.NewRand(faultStream)
		}
		ps = append(ps, Randomly(s.Probability, rng))
	}
	errno := s.Errno
	if errno == 0 {
		errno = syscall.EIO
	}
	return &Rule{When: And(ps...), Err: &InjectedError{Errno: errno}, Limit: s.Count}
}

// Wrap returns dev wrapped in a FaultDevice that injects the spec's
// fault.
func (s FaultSpec) Wrap(e *sim.Engine, dev Device) *FaultDevice {
	d := NewFaultDevice(e, dev, s.Rule(e, nil))
	d.Latency = s.Latency
	return d
}

// FaultErrnos are the errnos a FaultSpec may inject, by name: a failed
// command (BLK_STS_IOERR), a thin-provisioned device out of space
// (BLK_STS_NOSPC) and a command timeout (BLK_STS_TIMEOUT).
var FaultErrnos = map[string]syscall.Errno{"EIO": syscall.EIO, "ENOSPC": syscall.ENOSPC, "ETIMEDOUT": syscall.ETIMEDOUT}

// ParseSectorRange reads "START-END", the half-open range [START, END):
// plain numbers are 512-byte sectors, numbers with a size suffix (k, m,
// g, t) bytes, which must be whole sectors. "all" is the whole device
// (0, 0).
func ParseSectorRange(s string) (start, end int64, err error) {
	s = strings.TrimSpace(s)
	if s == "all" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("%q: want START-END (sectors, or bytes with a k/m/g suffix) or all", s)
	}
	if start, err = parseSector(a); err != nil {
		return 0, 0, err
	}
	if end, err = parseSector(b); err != nil {
		return 0, 0, err
	}
	if end <= start {
		return 0, 0, fmt.Errorf("%q: the end must be above the start", s)
	}
	return start, end, nil
}

func parseSector(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return n, nil
	}
	n, err := units.ParseSize(s)
	if err != nil {
		return 0, err
	}
	if n%SectorSize != 0 {
		return 0, fmt.Errorf("%q is not a whole number of 512-byte sectors", s)
	}
	return n / SectorSize, nil
}

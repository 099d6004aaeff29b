package workload

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// RWMode is fio's rw= value: the direction and pattern of a job's IO.
// The zero value is RWRead, fio's default.
type RWMode int

const (
	// RWRead is sequential reads (rw=read).
	RWRead RWMode = iota
	// RWWrite is sequential writes (rw=write).
	RWWrite
	// RWRandRead is random reads (rw=randread).
	RWRandRead
	// RWRandWrite is random writes (rw=randwrite).
	RWRandWrite
	// RWReadWrite is mixed sequential reads and writes (rw=rw or
	// rw=readwrite), in the proportion JobSpec.RWMixRead.
	RWReadWrite
	// RWRandRW is mixed random reads and writes (rw=randrw), in the
	// proportion JobSpec.RWMixRead.
	RWRandRW
)

var rwNames = [...]string{
	RWRead:      "read",
	RWWrite:     "write",
	RWRandRead:  "randread",
	RWRandWrite: "randwrite",
	RWReadWrite: "rw",
	RWRandRW:    "randrw",
}

// String returns fio's spelling of m: read, write, randread, randwrite, rw
// or randrw; "RWMode(N)" for a value that is not one of the constants.
func (m RWMode) String() string {
	if m >= 0 && int(m) < len(rwNames) {
		return rwNames[m]
	}
	return fmt.Sprintf("RWMode(%d)", int(m))
}

// Random reports whether m picks random offsets (randread, randwrite,
// randrw).
func (m RWMode) Random() bool {
	return m == RWRandRead || m == RWRandWrite || m == RWRandRW
}

// HasRead reports whether m issues reads.
func (m RWMode) HasRead() bool {
	return m == RWRead || m == RWRandRead || m == RWReadWrite || m == RWRandRW
}

// HasWrite reports whether m issues writes.
func (m RWMode) HasWrite() bool {
	return m == RWWrite || m == RWRandWrite || m == RWReadWrite || m == RWRandRW
}

// DefaultRandSeed is fio's default randseed (options.c: def "0x89").
const DefaultRandSeed uint64 = 0x89

// JobSpec is one job section of a job file after [global] inheritance and
// defaults are applied. A JobSpec describes numjobs clones of the job; the
// runner makes the clones.
type JobSpec struct {
	// Name is the section name, or the job's own name= option.
	Name string
	// File is the job file's path as given to Parse; Line is the 1-based
	// line of the section header.
	File string
	Line int

	// RW is the IO pattern; default RWRead.
	RW RWMode
	// RWMixRead is the percentage of reads for mixed modes, 0..100;
	// default 50. rwmixwrite=N sets it to 100-N.
	RWMixRead int
	// BS is the block size in bytes for reads (BS[0]) and writes (BS[1]);
	// default 4096 each. "bs=4k" sets both; "bs=4k,8k" sets read then write,
	// and an empty side ("bs=,8k") keeps its value. Always positive.
	BS [2]int64
	// Size is the number of bytes of IO per job (fio's size=); 0 means not
	// given, and the runner must then know a file size or fail.
	Size int64
	// Filename is the raw filename= value; "" means fio's default name
	// (jobname.jobnum.filenum).
	Filename string
	// NumJobs is the number of clones of this job, 1..4096; default 1.
	NumJobs int
	// Thread is fio's thread option (threads instead of processes).
	Thread bool
	// IOEngine is one of the synchronous engines psync (the default), sync
	// and pvsync, or the asynchronous libaio and io_uring.
	IOEngine string
	// IODepth is the number of IOs in flight per job, at least 1; default
	// 1. fio ignores iodepth for synchronous engines, so it is 1 for them
	// after parsing, whatever the file says.
	IODepth int
	// IODepthBatchSubmit is fio's iodepth_batch_submit (alias
	// iodepth_batch): how many prepared IOs an asynchronous engine submits
	// in one call; default 1. After parsing it is 1..IODepth: fio's 0, and
	// values above IODepth, mean IODepth.
	IODepthBatchSubmit int
	// IODepthBatchCompleteMin is fio's iodepth_batch_complete_min (alias
	// iodepth_batch_complete): the fewest completions a reap waits for;
	// default 1. 0 makes fio poll for completions without sleeping.
	IODepthBatchCompleteMin int
	// IODepthBatchCompleteMax is fio's iodepth_batch_complete_max: the most
	// completions one reap takes. After parsing it is at least
	// IODepthBatchCompleteMin, which is fio's default for it.
	IODepthBatchCompleteMax int
	// IODepthLow is fio's iodepth_low: once the queue is full, fio reaps
	// until no more than IODepthLow IOs are in flight before it queues
	// again. After parsing it is 1..IODepth: fio's default 0, and values
	// above IODepth, mean IODepth (keep the queue full).
	IODepthLow int
	// Direct is O_DIRECT (direct=1, or buffered=0).
	Direct bool
	// Runtime is the time limit; 0 means none.
	Runtime time.Duration
	// TimeBased makes the job run for Runtime even when Size is done.
	TimeBased bool
	// RampTime is run before statistics are collected; 0 means none.
	RampTime time.Duration
	// RandSeed seeds the job's random generators; DefaultRandSeed unless
	// given, and RandSeedSet reports whether it was given.
	RandSeed    uint64
	RandSeedSet bool
	// GroupReporting reports the job's clones as one.
	GroupReporting bool
}

// defaultJobSpec returns fio's defaults for the options blksim models.
func defaultJobSpec() JobSpec {
	return JobSpec{
		RW:        RWRead,
		RWMixRead: 50,
		BS:        [2]int64{4096, 4096},
		NumJobs:   1,
		IOEngine:  "psync",
		IODepth:   1,
		RandSeed:  DefaultRandSeed,

		IODepthBatchSubmit:      1,
		IODepthBatchCompleteMin: 1,
	}
}

// Errors wrapped in ParseError.Err. Test for them with errors.Is.
var (
	// ErrUnknownOption means an option blksim does not know: either not an
	// fio option at all, or an fio option blksim does not model yet.
	ErrUnknownOption = errors.New("unknown option")
	// ErrBadValue means an option's value is malformed or out of range.
	ErrBadValue = errors.New("bad value")
	// ErrSyntax means a line that is neither a section header, an option
	// nor a comment, an option outside any section, or a file without jobs.
	ErrSyntax = errors.New("syntax error")
	// ErrNotModelled means valid fio input that blksim cannot simulate,
	// such as ioengine=posixaio or rw=randread:8.
	ErrNotModelled = errors.New("not modelled by blksim")
)

// ParseError reports bad input in a job file.
type ParseError struct {
	// File is the name given to Parse (the path for ParseFile).
	File string
	// Line is the 1-based line the error is about; at least 1 in errors
	// from Parse (the last line for a file without jobs).
	Line int
	// Option is the option the error is about, as written (after ${VAR}
	// expansion); "" for errors about a line that is not an option.
	Option string
	// Err describes the problem and wraps one of ErrUnknownOption,
	// ErrBadValue, ErrSyntax or ErrNotModelled.
	Err error
}

// Error returns `FILE:LINE: option "OPT": MSG`, where MSG is Err's text.
// The option part is left out when Option is empty, and when MSG already
// begins with it (as in `option "OPT" is not modelled by blksim`).
func (e *ParseError) Error() string {
	msg := "<nil>"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	prefix := fmt.Sprintf("%s:%d: ", e.File, e.Line)
	if e.Option != "" {
		opt := fmt.Sprintf("option %q", e.Option)
		if !strings.HasPrefix(msg, opt) {
			prefix += opt + ": "
		}
	}
	return prefix + msg
}

// Unwrap returns e.Err.
func (e *ParseError) Unwrap() error { return e.Err }

// kindError is an error with its own message that wraps one of the
// sentinels without repeating the sentinel's text.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// badValue returns an ErrBadValue error: `bad value "RAW": DETAIL`.
func badValue(raw, format string, args ...any) error {
	return &kindError{kind: ErrBadValue, msg: fmt.Sprintf("bad value %q: ", raw) + fmt.Sprintf(format, args...)}
}

// notModelled returns an ErrNotModelled error with the given message.
func notModelled(format string, args ...any) error {
	return &kindError{kind: ErrNotModelled, msg: fmt.Sprintf(format, args...)}
}

// syntaxError returns an ErrSyntax error: "syntax error: DETAIL".
func syntaxError(format string, args ...any) error {
	return &kindError{kind: ErrSyntax, msg: "syntax error: " + fmt.Sprintf(format, args...)}
}

// unknownOption returns an ErrUnknownOption error naming the option.
func unknownOption(name string) error {
	return &kindError{kind: ErrUnknownOption, msg: fmt.Sprintf("option %q is not modelled by blksim", name)}
}

// fioKeywords are the $words fio replaces with host facts (options.c,
// fio_keywords) before handing the result to bc for arithmetic.
var fioKeywords = []string{"$pagesize", "$mb_memory", "$ncpus"}

// Parse reads an fio job file from r and returns its jobs in file order.
// name is used in errors and JobSpec.File. env looks up ${VAR} references;
// nil means os.LookupEnv.
//
// The syntax is fio 3.x's:
//   - "[name]" starts a section. A section whose name begins with "global"
//     (fio compares the first six characters) sets defaults for the job
//     sections after it; a later one changes the defaults of later jobs
//     only. Any other section is a job.
//   - "key=value" or a bare "key" sets an option; whitespace around the
//     line and around "=" is ignored. Option names are case-sensitive.
//   - ';' or '#' starts a comment anywhere on a line, as in fio, so a value
//     cannot contain them. Blank lines are ignored.
//   - "${VAR}" in an option line is replaced by env's value, or by nothing
//     when VAR is undefined. It is done after comments are removed and is
//     not recursive.
//
// Options are applied in file order, a later one overriding an earlier one.
// Parse stops at the first problem. Every error about the input is a
// *ParseError wrapping ErrUnknownOption, ErrBadValue, ErrSyntax or
// ErrNotModelled; an error reading r is returned wrapped with name, and is
// not a *ParseError. Parse does not panic on any input, and may be called
// from several goroutines at once.
func Parse(name string, r io.Reader, env func(string) (string, bool)) ([]JobSpec, error) {
	if env == nil {
		env = os.LookupEnv
	}
	p := &parser{file: name, env: env, defaults: defaultJobSpec()}
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			p.line++
			if perr := p.parseLine(line); perr != nil {
				return nil, perr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("workload: reading job file %s: %w", name, err)
		}
	}
	p.endSection()
	if len(p.jobs) == 0 {
		return nil, &ParseError{File: name, Line: max(p.line, 1),
			Err: syntaxError("no job sections: a job file needs at least one [jobname] section besides [global]")}
	}
	return p.jobs, nil
}

// ParseFile opens the job file at path and parses it with Parse, naming
// it path in errors. An error opening or reading the file is not a
// *ParseError.
func ParseFile(path string, env func(string) (string, bool)) ([]JobSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	return Parse(path, f, env)
}

// parser is the state of one Parse call.
type parser struct {
	file string
	env  func(string) (string, bool)
	line int // number of the line being parsed, 1-based

	defaults  JobSpec  // [global] options so far
	inSection bool     // a section header has been seen
	job       *JobSpec // the job section being parsed; nil in [global]
	jobs      []JobSpec
	unset     []string // ${VAR}s of the current line that were undefined
}

// parseLine parses one line, terminator included.
func (p *parser) parseLine(raw string) *ParseError {
	// fio (init.c, parse.c strip_blank_end) cuts every line at its first
	// ';' or '#', then trims blanks and control characters.
	if i := strings.IndexAny(raw, ";#"); i >= 0 {
		raw = raw[:i]
	}
	text := trimLine(raw)
	if text == "" {
		return nil
	}
	if text[0] == '[' {
		return p.parseHeader(text)
	}

	text, p.unset = expandVars(text, p.env, p.unset[:0])
	key, value, hasValue := strings.Cut(text, "=")
	key = trimLine(key)
	value = trimLine(value)
	if !p.inSection {
		return p.errorf(key, syntaxError("option outside of any section: add a [global] or [jobname] header above it"))
	}
	if key == "" {
		return p.errorf("", syntaxError("%q has no option name before \"=\"", text))
	}
	opt, ok := lookupOption(key)
	if !ok {
		if !hasValue {
			// "include file" and similar: name the first word.
			if f := strings.Fields(key); len(f) > 1 {
				if _, known := lookupOption(f[0]); known {
					return p.errorf(f[0], syntaxError("expected %s=VALUE, got %q", f[0], key))
				}
				return p.errorf(f[0], unknownOption(f[0]))
			}
		}
		return p.errorf(key, unknownOption(key))
	}
	for _, kw := range fioKeywords {
		if strings.Contains(value, kw) {
			return p.errorf(key, notModelled("fio keyword %s in %q is not modelled by blksim", kw, value))
		}
	}
	target := &p.defaults
	if p.job != nil {
		target = p.job
	}
	if err := opt.apply(target, value, !hasValue); err != nil {
		return p.errorf(key, err)
	}
	return nil
}

// parseHeader handles a "[name]" line.
func (p *parser) parseHeader(text string) *ParseError {
	if len(text) < 2 || text[len(text)-1] != ']' {
		return p.errorf("", syntaxError("section header %q must end with \"]\"", text))
	}
	name := text[1 : len(text)-1]
	if strings.TrimSpace(name) == "" {
		return p.errorf("", syntaxError("empty section name %q", text))
	}
	p.endSection()
	p.inSection = true
	if strings.HasPrefix(name, "global") {
		return nil
	}
	js := p.defaults
	// name= in [global] does not name jobs: fio names each job after its
	// section when it creates it (init.c get_new_job).
	js.Name = name
	js.File = p.file
	js.Line = p.line
	p.job = &js
	return nil
}

// endSection finishes the job section being parsed, if any.
func (p *parser) endSection() {
	if p.job == nil {
		return
	}
	js := *p.job
	p.job = nil
	if syncEngines[js.IOEngine] {
		// fio ignores iodepth for synchronous engines.
		js.IODepth = 1
	}
	fixupDepths(&js)
	p.jobs = append(p.jobs, js)
}

// fixupDepths applies fio's rules for the batching options once the job's
// iodepth is known (fio init.c fixup_options).
func fixupDepths(js *JobSpec) {
	if js.IODepthLow == 0 || js.IODepthLow > js.IODepth {
		js.IODepthLow = js.IODepth
	}
	if js.IODepthBatchSubmit == 0 || js.IODepthBatchSubmit > js.IODepth {
		js.IODepthBatchSubmit = js.IODepth
	}
	if js.IODepthBatchCompleteMax < js.IODepthBatchCompleteMin {
		js.IODepthBatchCompleteMax = js.IODepthBatchCompleteMin
	}
}

func (p *parser) errorf(option string, err error) *ParseError {
	if len(p.unset) > 0 {
		// An empty value from an undefined variable is the likely cause.
		err = fmt.Errorf("%w (${%s} is not set)", err, strings.Join(p.unset, "}, ${"))
	}
	return &ParseError{File: p.file, Line: p.line, Option: option, Err: err}
}

// trimLine trims ASCII blanks from both ends of s and control characters
// (such as the '\r' of CRLF files) from its end, as fio does.
func trimLine(s string) string {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	return strings.TrimRightFunc(s, func(r rune) bool {
		return r == ' ' || r < 0x20 || r == 0x7f
	})
}

// expandVars replaces each ${NAME} in s with lookup's value for NAME, or
// with nothing when NAME is undefined (fio options.c option_dup_subs).
// A "${" without a closing "}" is kept as is. The names of undefined
// variables are appended to unset, which is returned.
func expandVars(s string, lookup func(string) (string, bool), unset []string) (string, []string) {
	if !strings.Contains(s, "${") {
		return s, unset
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			break
		}
		b.WriteString(s[:i])
		name := s[i+2 : i+2+j]
		if v, ok := lookup(name); ok {
			b.WriteString(v)
		} else {
			unset = append(unset, name)
		}
		s = s[i+2+j+1:]
	}
	b.WriteString(s)
	return b.String(), unset
}

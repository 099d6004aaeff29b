package workload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/blksim/blksim/blockdev"
)

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
	// File is the name given to Parse (the path for ParseFile), the path
	// of an included file, or CommandLine for a command-line option.
	File string
	// Line is the 1-based line the error is about; at least 1 in errors
	// about a file (the last line for a file without jobs), 0 for the
	// command line.
	Line int
	// Option is the option the error is about, as written (after ${VAR}
	// expansion); "" for errors about a line that is not an option.
	Option string
	// Err describes the problem and wraps one of ErrUnknownOption,
	// ErrBadValue, ErrSyntax or ErrNotModelled.
	Err error
}

// Error returns `FILE:LINE: option "OPT": MSG`, where MSG is Err's text
// (`FILE: ...` when Line is 0, as for the command line).
// The option part is left out when Option is empty, and when MSG already
// begins with it (as in `option "OPT" is not modelled by blksim`).
func (e *ParseError) Error() string {
	msg := "<nil>"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	prefix := fmt.Sprintf("%s:%d: ", e.File, e.Line)
	if e.Line == 0 && e.File != "" {
		prefix = e.File + ": "
	}
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

// unknownOption returns an ErrUnknownOption error naming the option and
// saying why blksim does not take it.
func unknownOption(name string) error {
	return &kindError{kind: ErrUnknownOption, msg: fmt.Sprintf("option %q is not modelled by blksim (%s)", name, unknownReason(name))}
}

// CommandLine is the File of errors about, and jobs defined by, fio
// options given on the command line.
const CommandLine = "command line"

// Host holds what fio's keywords report about the machine: $pagesize,
// $ncpus and $mb_memory. For blksim that is the simulated host.
type Host struct {
	// PageSize is $pagesize; 0 means 4096.
	PageSize int64
	// CPUs is $ncpus, the stack's host.cpus; 0 means not known, and $ncpus
	// is then an error.
	CPUs int
	// MemoryMB is $mb_memory; 0 means not known, and $mb_memory is then an
	// error.
	MemoryMB int64
}

// ParseOptions configure ParseWith, ParseFileWith and ParseCommandLine.
// The zero value is usable: the process environment, no host facts but
// the page size, no overrides, includes read from the file system.
type ParseOptions struct {
	// Env looks up ${VAR} references; nil means os.LookupEnv.
	Env func(string) (string, bool)
	// Host is what $pagesize, $ncpus and $mb_memory report.
	Host Host
	// Overrides are command-line options applied to every job after the
	// job's own options, as if each job section ended with them.
	Overrides []CommandLineOption
	// ReadFile reads an included file; nil reads regular files of at most
	// 16 MiB from the file system.
	ReadFile func(path string) ([]byte, error)
}

// CommandLineOption is an fio job option given on the command line as
// --NAME=VALUE or --NAME.
type CommandLineOption struct {
	Name     string
	Value    string
	HasValue bool
}

// String returns the option as it is written on the command line.
func (o CommandLineOption) String() string {
	if o.HasValue {
		return "--" + o.Name + "=" + o.Value
	}
	return "--" + o.Name
}

// maxIncludeBytes bounds an included file; maxIncludeDepth bounds nesting.
const (
	maxIncludeBytes = 16 << 20
	maxIncludeDepth = 32
)

// Parse reads an fio job file from r and returns its jobs in file order.
// name is used in errors and JobSpec.File. env looks up ${VAR} references;
// nil means os.LookupEnv. It is ParseWith with only Env set: $ncpus and
// $mb_memory are not known to it.
func Parse(name string, r io.Reader, env func(string) (string, bool)) ([]JobSpec, error) {
	return ParseWith(name, r, ParseOptions{Env: env})
}

// ParseFile opens the job file at path and parses it with Parse, naming
// it path in errors. An error opening or reading the file is not a
// *ParseError.
func ParseFile(path string, env func(string) (string, bool)) ([]JobSpec, error) {
	return ParseFileWith(path, ParseOptions{Env: env})
}

// ParseFileWith opens the job file at path and parses it with ParseWith.
func ParseFileWith(path string, opt ParseOptions) ([]JobSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	return ParseWith(path, f, opt)
}

// ParseWith reads an fio job file from r and returns its jobs in file
// order; name is used in errors and JobSpec.File, and includes are
// relative to its directory.
//
// The syntax is fio 3.x's:
//   - "[name]" starts a section. A section whose name begins with "global"
//     (fio compares the first six characters) sets defaults for the job
//     sections after it; a later one changes the defaults of later jobs
//     only. Any other section is a job.
//   - "key=value" or a bare "key" sets an option; whitespace around the
//     line and around "=" is ignored. Option names are case-sensitive.
//     fio 3.33 keeps a blank after "=" in the value and then reads only
//     its leading number ("size= 4k" is 4 bytes there), so a numeric
//     value with a unit or a '%' after a blank, and an expression after
//     one, are bad values here.
//     A section's options take effect when it ends, kb_base first (fio
//     sorts them by priority), then in file order, a later one overriding
//     an earlier one; then opt.Overrides, for job sections.
//   - "include FILE" reads FILE (relative to the including file) in place
//     of the line, sections and all; an include cycle is an error.
//   - ';' or '#' starts a comment anywhere on a line, as in fio, so a value
//     cannot contain them. Blank lines are ignored.
//   - "${VAR}" in an option line is replaced by opt.Env's value, or by
//     nothing when VAR is undefined. It is done after comments are removed
//     and is not recursive.
//   - $pagesize, $ncpus and $mb_memory in a value are replaced by
//     opt.Host's; if the value then holds + - * or /, it is computed as bc
//     computes it (integers), as fio does.
//   - A numeric value starting with "(" is an expression of fio's
//     arithmetic parser: + - * / % ^, parentheses, decimals and unit
//     suffixes, such as size=(2*4k+512).
//
// Parse stops at the first problem. Every error about the input is a
// *ParseError wrapping ErrUnknownOption, ErrBadValue, ErrSyntax or
// ErrNotModelled; an error reading r is returned wrapped with name, and is
// not a *ParseError. ParseWith does not panic on any input, and may be
// called from several goroutines at once.
func ParseWith(name string, r io.Reader, opt ParseOptions) ([]JobSpec, error) {
	p := newParser(opt)
	p.files = []string{includeKey(name)}
	if err := p.read(name, r); err != nil {
		return nil, err
	}
	if perr := p.endSection(); perr != nil {
		return nil, perr
	}
	if len(p.jobs) == 0 {
		return nil, &ParseError{File: name, Line: max(p.lines[name], 1),
			Err: syntaxError("no job sections: a job file needs at least one [jobname] section besides [global]")}
	}
	return p.jobs, nil
}

// ParseCommandLine builds jobs from fio options given on the command line
// without a job file, as fio does: options before the first --name are
// global, --name=NAME starts a job (or, for a name beginning with
// "global", a global section) and the options after it belong to it.
// Errors name CommandLine as their file; opt.Overrides is ignored.
func ParseCommandLine(opts []CommandLineOption, opt ParseOptions) ([]JobSpec, error) {
	opt.Overrides = nil
	p := newParser(opt)
	p.sec = &section{global: true, file: CommandLine}
	for _, o := range opts {
		if o.Name == "name" {
			if !o.HasValue || o.Value == "" {
				return nil, &ParseError{File: CommandLine, Option: o.Name, Err: badValue(o.Value, "a value is required: expected a job name")}
			}
			if perr := p.endSection(); perr != nil {
				return nil, perr
			}
			p.sec = &section{global: strings.HasPrefix(o.Value, "global"), name: o.Value, file: CommandLine}
			continue
		}
		po, perr := p.pendingOption(CommandLine, 0, o.Name, o.Value, o.HasValue, nil)
		if perr != nil {
			return nil, perr
		}
		p.sec.opts = append(p.sec.opts, po)
	}
	if perr := p.endSection(); perr != nil {
		return nil, perr
	}
	if len(p.jobs) == 0 {
		return nil, &ParseError{File: CommandLine, Option: "name",
			Err: syntaxError("no job: give --name=NAME before a job's options (or a job file)")}
	}
	return p.jobs, nil
}

// parser is the state of one parse.
type parser struct {
	opt   ParseOptions
	env   func(string) (string, bool)
	files []string       // the include chain, outermost first
	lines map[string]int // lines read per file, for "no job sections"

	global sectionState // [global] options so far
	// globalAt is where each [global] option (by table name) was last
	// set, and globalOpts the [global] options in order.
	globalAt   map[string]optPos
	globalOpts []OptionValue
	sec        *section // the section being read; nil before the first
	jobs       []JobSpec
	names      map[string]bool // job names so far, for wait_for
}

// sectionState is what a section's options set: a job spec and the
// section's kb_base, which only changes how its sizes are read.
type sectionState struct {
	spec   JobSpec
	kbBase int64
}

// section is a section being read: its header and its options, applied
// when it ends.
type section struct {
	global bool
	name   string
	file   string
	line   int
	opts   []pendingOpt
}

// pendingOpt is an option line waiting for its section to end.
type pendingOpt struct {
	o     *option
	key   string // as written, after ${VAR} expansion
	value string
	bare  bool
	file  string
	line  int
	unset []string // ${VAR}s of the line that were undefined
}

func newParser(opt ParseOptions) *parser {
	env := opt.Env
	if env == nil {
		env = os.LookupEnv
	}
	return &parser{opt: opt, env: env, lines: map[string]int{},
		global: sectionState{spec: defaultJobSpec(), kbBase: defaultKBBase},
		names:  map[string]bool{}}
}

// read parses the lines of one file (the job file or an included one).
func (p *parser) read(name string, r io.Reader) error {
	br := bufio.NewReader(r)
	line := 0
	for {
		text, err := br.ReadString('\n')
		if text != "" {
			line++
			p.lines[name] = line
			if perr := p.parseLine(name, line, text); perr != nil {
				return perr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("workload: reading job file %s: %w", name, err)
		}
	}
}

// parseLine parses one line, terminator included.
func (p *parser) parseLine(file string, line int, raw string) error {
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
		return p.parseHeader(file, line, text)
	}
	if rest, ok := strings.CutPrefix(text, "include"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
		return p.include(file, line, trimLine(rest))
	}

	text, unset := expandVars(text, p.env, nil)
	key, value, hasValue := strings.Cut(text, "=")
	key = trimLine(key)
	blankAfterEq := value != "" && (value[0] == ' ' || value[0] == '\t')
	value = trimLine(value)
	errAt := func(option string, err error) *ParseError {
		return withUnset(&ParseError{File: file, Line: line, Option: option, Err: err}, unset)
	}
	if p.sec == nil {
		return errAt(key, syntaxError("option outside of any section: add a [global] or [jobname] header above it"))
	}
	if key == "" {
		return errAt("", syntaxError("%q has no option name before \"=\"", text))
	}
	if _, known := lookupOption(key); !known && !hasValue {
		// "bs 4k" and similar: name the first word.
		if f := strings.Fields(key); len(f) > 1 {
			if _, known := lookupOption(f[0]); known {
				return errAt(f[0], syntaxError("expected %s=VALUE, got %q", f[0], key))
			}
			return errAt(f[0], unknownOption(f[0]))
		}
	}
	if o, ok := lookupOption(key); ok && blankAfterEq && value != "" && o.kind != kindString {
		if err := checkBlankValue(value); err != nil {
			return errAt(key, err)
		}
	}
	po, perr := p.pendingOption(file, line, key, value, hasValue, unset)
	if perr != nil {
		return perr
	}
	p.sec.opts = append(p.sec.opts, po)
	return nil
}

// pendingOption looks key up, replaces fio's keywords in value and returns
// the option for its section to apply.
func (p *parser) pendingOption(file string, line int, key, value string, hasValue bool, unset []string) (pendingOpt, *ParseError) {
	errAt := func(err error) *ParseError {
		return withUnset(&ParseError{File: file, Line: line, Option: key, Err: err}, unset)
	}
	o, ok := lookupOption(key)
	if !ok {
		return pendingOpt{}, errAt(unknownOption(key))
	}
	value, err := p.keywords(value)
	if err != nil {
		return pendingOpt{}, errAt(err)
	}
	// Check the value now, so that errors come in line order; it is
	// applied when the section ends (kb_base changes the sizes read, not
	// whether they are valid).
	scratch := p.global.spec
	kb := p.global.kbBase
	if err := o.apply(&scratch, &kb, value, !hasValue); err != nil {
		return pendingOpt{}, errAt(err)
	}
	return pendingOpt{o: o, key: key, value: value, bare: !hasValue, file: file, line: line, unset: unset}, nil
}

// withUnset adds the undefined ${VAR}s of the line to an error: an empty
// value from an undefined variable is the likely cause.
func withUnset(pe *ParseError, unset []string) *ParseError {
	if len(unset) > 0 && !errors.Is(pe.Err, ErrUnknownOption) {
		pe.Err = fmt.Errorf("%w (${%s} is not set)", pe.Err, strings.Join(unset, "}, ${"))
	}
	return pe
}

// parseHeader handles a "[name]" line.
func (p *parser) parseHeader(file string, line int, text string) error {
	errAt := func(err error) *ParseError { return &ParseError{File: file, Line: line, Err: err} }
	if len(text) < 2 || text[len(text)-1] != ']' {
		return errAt(syntaxError("section header %q must end with \"]\"", text))
	}
	name := text[1 : len(text)-1]
	if strings.TrimSpace(name) == "" {
		return errAt(syntaxError("empty section name %q", text))
	}
	if perr := p.endSection(); perr != nil {
		return perr
	}
	p.sec = &section{global: strings.HasPrefix(name, "global"), name: name, file: file, line: line}
	return nil
}

// include reads the file an "include FILE" line names, in place of the
// line.
func (p *parser) include(file string, line int, arg string) error {
	errAt := func(err error) *ParseError {
		return &ParseError{File: file, Line: line, Option: "include", Err: err}
	}
	if arg == "" {
		return errAt(badValue(arg, "a value is required: expected the path of a job file to include"))
	}
	path := arg
	if !filepath.IsAbs(path) {
		// fio: relative to the including job file.
		path = filepath.Join(filepath.Dir(file), path)
	}
	key := includeKey(path)
	if i := slices.Index(p.files, key); i >= 0 {
		chain := append(slices.Clone(p.files[i:]), key)
		return errAt(badValue(arg, "include cycle: %s", strings.Join(chain, " -> ")))
	}
	if len(p.files) >= maxIncludeDepth {
		return errAt(badValue(arg, "includes nested more than %d deep", maxIncludeDepth))
	}
	read := p.opt.ReadFile
	if read == nil {
		read = readIncluded
	}
	data, err := read(path)
	if err != nil {
		return errAt(badValue(arg, "%v", err))
	}
	p.files = append(p.files, key)
	defer func() { p.files = p.files[:len(p.files)-1] }()
	return p.read(path, bytes.NewReader(data))
}

// includeKey names a file for include-cycle detection: its absolute,
// cleaned path when that can be found.
func includeKey(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}

// readIncluded reads a regular file of at most maxIncludeBytes.
func readIncluded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > maxIncludeBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxIncludeBytes)
	}
	return io.ReadAll(io.LimitReader(f, maxIncludeBytes+1))
}

// endSection applies the options of the section being read: to the
// [global] defaults, or to a new job, which it checks and adds.
func (p *parser) endSection() *ParseError {
	sec := p.sec
	if sec == nil {
		return nil
	}
	p.sec = nil
	if sec.global {
		where, perr := p.applyAll(&p.global, sec.opts)
		if p.globalAt == nil {
			p.globalAt = map[string]optPos{}
		}
		maps.Copy(p.globalAt, where)
		p.globalOpts = appendOptionValues(p.globalOpts, sortedByPrio(sec))
		return perr
	}
	st := p.global
	js := &st.spec
	// name= in [global] does not name jobs: fio names each job after its
	// section when it creates it (init.c get_new_job).
	js.Name = sec.name
	js.File = sec.file
	js.Line = sec.line
	opts := sec.opts
	js.Options = appendOptionValues(nil, sortedByPrio(sec))
	if sec.file == CommandLine {
		// fio records a command-line job's --name with its options.
		js.Options = append([]OptionValue{{Name: "name", Value: sec.name}}, js.Options...)
	}
	js.GlobalOptions = slices.Clone(p.globalOpts)
	for _, o := range p.opt.Overrides {
		po, perr := p.pendingOption(CommandLine, 0, o.Name, o.Value, o.HasValue, nil)
		if perr != nil {
			return perr
		}
		if po.o.name == "name" {
			return &ParseError{File: CommandLine, Option: o.Name,
				Err: syntaxError("--name defines a job; it cannot be combined with a job file (give either)")}
		}
		opts = append(opts[:len(opts):len(opts)], po)
		js.GlobalOptions = appendOptionValues(js.GlobalOptions, []pendingOpt{po})
		// The job ran with the command line's value: its own setting
		// is not reported as its option.
		js.Options = slices.DeleteFunc(js.Options, func(v OptionValue) bool { return v.Name == po.o.name })
	}
	own, perr := p.applyAll(&st, opts)
	if perr != nil {
		return perr
	}
	where := maps.Clone(p.globalAt)
	if where == nil {
		where = map[string]optPos{}
	}
	maps.Copy(where, own)
	js.where = where
	if perr := p.checkJob(js, where); perr != nil {
		return perr
	}
	fixupDepths(js)
	fixupRandomMap(js)
	p.jobs = append(p.jobs, *js)
	p.names[js.Name] = true
	return nil
}

// sortedByPrio returns a section's options in the order fio parses (and
// reports) them: a job file's sorted by their priority, kb_base and
// lockfile first and filename last, the rest in order (fio's
// sort_options); the command line's as given.
func sortedByPrio(sec *section) []pendingOpt {
	if sec.file == CommandLine {
		return sec.opts
	}
	prio := func(po pendingOpt) int {
		switch po.o.name {
		case "kb_base", "lockfile":
			return 1
		case "filename":
			return -1
		}
		return 0
	}
	opts := slices.Clone(sec.opts)
	slices.SortStableFunc(opts, func(a, b pendingOpt) int { return prio(b) - prio(a) })
	return opts
}

// appendOptionValues appends opts to vs as fio's JSON reports them: the
// option's table name and its value as written.
func appendOptionValues(vs []OptionValue, opts []pendingOpt) []OptionValue {
	for _, po := range opts {
		vs = append(vs, OptionValue{Name: po.o.name, Value: po.value})
	}
	return vs
}

// optPos is where an option was set.
type optPos struct {
	file string
	line int
	key  string
}

// applyAll applies opts to st: kb_base first, as fio's option priorities
// order them, then the rest in order. It returns where each option (by
// its table name) was last set.
func (p *parser) applyAll(st *sectionState, opts []pendingOpt) (map[string]optPos, *ParseError) {
	var where map[string]optPos
	for pass := 0; pass < 2; pass++ {
		for i := range opts {
			po := &opts[i]
			if (po.o.name == "kb_base") != (pass == 0) {
				continue
			}
			if err := po.o.apply(&st.spec, &st.kbBase, po.value, po.bare); err != nil {
				return nil, withUnset(&ParseError{File: po.file, Line: po.line, Option: po.key, Err: err}, po.unset)
			}
			if where == nil {
				where = map[string]optPos{}
			}
			where[po.o.name] = optPos{po.file, po.line, po.key}
		}
	}
	return where, nil
}

// checkJob checks what one option alone cannot: wait_for names an earlier
// job, and fill_device has one file to fill.
func (p *parser) checkJob(js *JobSpec, where map[string]optPos) *ParseError {
	errAt := func(name string, err error) *ParseError {
		pos, ok := where[name]
		if !ok {
			return &ParseError{File: js.File, Line: js.Line, Option: name, Err: err}
		}
		return &ParseError{File: pos.file, Line: pos.line, Option: pos.key, Err: err}
	}
	if w := js.WaitFor; w != "" {
		switch {
		case w == js.Name:
			return errAt("wait_for", badValue(w, "a job cannot wait for itself"))
		case !p.names[w]:
			// fio: "waitee job X unknown" (it must be defined earlier).
			return errAt("wait_for", badValue(w, "no job named %q before this one (fio: waitee job %s unknown)", w, w))
		}
	}
	for d, dir := range [2]string{"read", "write"} {
		// fio's fixup_options: "minimum rate exceeds rate".
		if js.Rate[d] > 0 && js.Rate[d] < js.RateMin[d] {
			return errAt("rate_min", badValue(strconv.FormatInt(js.RateMin[d], 10), "the %s minimum rate exceeds rate=%d (fio: minimum rate exceeds rate)", dir, js.Rate[d]))
		}
		if js.RateIOPS[d] > 0 && js.RateIOPS[d] < js.RateIOPSMin[d] {
			return errAt("rate_iops_min", badValue(strconv.FormatInt(js.RateIOPSMin[d], 10), "the %s minimum rate exceeds rate_iops=%d (fio: minimum rate exceeds rate)", dir, js.RateIOPS[d]))
		}
	}
	if js.SubmitOffload && js.IOEngine == "io_uring" {
		// fio 3.33's io_uring refuses it when it loads.
		return errAt("io_submit_mode", notModelled("io_uring can't be used with offloaded submit (fio: use a sync engine)"))
	}
	if err := checkStrided(js, errAt); err != nil {
		return err
	}
	if js.FillDevice && nrFiles(js) > 1 {
		return errAt("nrfiles", notModelled("nrfiles=%d with fill_device is not modelled by blksim (fio grows every file until the device is full; blksim lays files out before the job)", js.NrFiles))
	}
	return nil
}

// keywords replaces fio's keywords ($pagesize, $ncpus, $mb_memory) in
// value with the host's facts and, if it replaced any and the value then
// holds + - * or /, computes it as fio's bc call does (options.c
// fio_keyword_replace, bc_calc).
func (p *parser) keywords(value string) (string, error) {
	if !strings.Contains(value, "$") {
		return value, nil
	}
	replaced := false
	for _, kw := range fioKeywords {
		if !strings.Contains(value, kw) {
			continue
		}
		var n int64
		switch kw {
		case "$pagesize":
			n = p.opt.Host.PageSize
			if n == 0 {
				n = 4096
			}
		case "$ncpus":
			n = int64(p.opt.Host.CPUs)
			if n == 0 {
				return "", notModelled("fio keyword $ncpus in %q is not modelled by blksim here (the simulated host's CPU count is not known to this parse; blksim run takes it from host.cpus)", value)
			}
		case "$mb_memory":
			n = p.opt.Host.MemoryMB
			if n == 0 {
				return "", notModelled("fio keyword $mb_memory in %q is not modelled by blksim (the simulated host has no memory size)", value)
			}
		}
		value = strings.ReplaceAll(value, kw, strconv.FormatInt(n, 10))
		replaced = true
	}
	if !replaced || !strings.ContainsAny(value, "+-*/") || strings.Contains(value, "'") {
		return value, nil
	}
	n, err := bcEval(value)
	if err != nil {
		return "", badValue(value, "after fio's keyword replacement, fio computes the value with bc: %v", err)
	}
	return strconv.FormatInt(n, 10), nil
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

// fixupRandomMap applies fio's rule that a block alignment other than a
// direction's smallest block size turns off the random map (fio init.c
// fixup_options: "fio: Any use of blockalign= turns off randommap").
func fixupRandomMap(js *JobSpec) {
	for d := range 2 {
		if a := js.BlockAlign[d]; a != 0 && a != minBSDir(js, blockdev.Op(d)) {
			js.NoRandomMap = true
		}
	}
}

// fioKeywords are the $words fio replaces with host facts (options.c,
// fio_keywords).
var fioKeywords = []string{"$pagesize", "$mb_memory", "$ncpus"}

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

// checkBlankValue rejects a value that fio 3.33 misreads because a blank
// follows the "=": fio hands the option " 4k", and its number parsers
// then read only the leading number, dropping what follows it ("size= 4k"
// is 4 bytes there, "runtime= 2m" 2 seconds, "size= 50%" 50 bytes), and
// reject an expression. Values that are a plain number, a hex number or
// do not start with a digit read the same either way.
func checkBlankValue(v string) error {
	if v[0] == '(' {
		return badValue(v, `fio 3.33 rejects an expression after a blank after "="; remove the blank`)
	}
	if isHex(v) {
		return nil
	}
	i := countDigits(v)
	if i == 0 || i == len(v) {
		return nil
	}
	return badValue(v, `fio 3.33 reads a value with a blank after "=" as its leading number, %s, dropping %q; remove the blank`, v[:i], v[i:])
}

// checkStrided checks zonemode=strided's options as fio's fixup_options
// does (zonesize is required, and is bad input without the mode), and
// rejects what blksim does not model with it; zonerange defaults to
// zonesize. errAt places an error at an option.
func checkStrided(js *JobSpec, errAt func(string, error) *ParseError) *ParseError {
	if !js.Strided {
		if js.ZoneSize > 0 {
			return errAt("zonesize", badValue(strconv.FormatInt(js.ZoneSize, 10), "zonesize needs zonemode=strided (fio: --zonemode=none and --zonesize are not compatible)"))
		}
		return nil
	}
	switch {
	case js.ZoneSize <= 0:
		return errAt("zonemode", badValue("strided", "zonemode=strided needs a zonesize (fio: --zonesize must be specified when using --zonemode=strided)"))
	case nrFiles(js) > 1:
		return errAt("zonemode", notModelled("zonemode=strided with several files is not modelled by blksim"))
	case js.RW.Random() && (js.Distribution[0].Kind != DistRandom || js.Distribution[1].Kind != DistRandom):
		return errAt("zonemode", notModelled("zonemode=strided with a random_distribution other than random is not modelled by blksim"))
	case js.RW.Random() && js.RandomGenerator == "lfsr":
		return errAt("zonemode", notModelled("zonemode=strided with random_generator=lfsr is not modelled by blksim"))
	}
	if js.ZoneRange == 0 {
		js.ZoneRange = js.ZoneSize
	}
	return nil
}

package workload

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// This file holds the job-file option table: which fio options blksim
// understands, how their values are parsed and where they land in a JobSpec.
// Supporting another fio option means adding one row to optionTable (and a
// JobSpec field for it); the parser in jobfile.go does not change.

// optionKind says how an option's text is parsed before its setter runs.
// The kinds mirror fio's option types (parse.h FIO_OPT_*).
type optionKind int

const (
	// kindString is any non-empty text, passed on raw (fio FIO_OPT_STR_STORE).
	kindString optionKind = iota
	// kindSize is a non-negative integer with an optional size suffix
	// (fio FIO_OPT_STR_VAL / FIO_OPT_ULL); see parseSize.
	kindSize
	// kindInt is an integer within [min, max]. fio parses its integer
	// options like sizes, so "iodepth=1k" is 1024 there and here.
	kindInt
	// kindBool is 0 or 1 (fio FIO_OPT_BOOL). fio requires the value; blksim
	// also accepts the bare name as 1.
	kindBool
	// kindFlag is set by its bare name, or given 0 or 1 (fio FIO_OPT_STR_SET).
	kindFlag
	// kindTime is a non-negative integer with an optional time suffix, in
	// seconds when there is none (fio FIO_OPT_STR_VAL_TIME, is_seconds).
	kindTime
	// kindRaw hands the non-empty text to the setter, which parses it
	// itself (lists, enumerations with modifiers).
	kindRaw
)

// optionValue is a parsed option value. Raw is always set (the value after
// ${VAR} expansion, "" for a bare option); the other field that is set
// depends on the option's kind: Int for kindSize and kindInt, Bool for
// kindBool and kindFlag, Dur for kindTime.
type optionValue struct {
	Raw  string
	Int  int64
	Bool bool
	Dur  time.Duration
}

// option is one row of the option table.
type option struct {
	// name is fio's option name; aliases are fio's other names for it.
	name    string
	aliases []string
	kind    optionKind
	// min and max bound a kindInt value, inclusive.
	min, max int64
	// set stores v into js. It returns an error made by badValue or
	// notModelled when the value is acceptable to fio but not to blksim,
	// or is wrong in a way the kind cannot see.
	set func(js *JobSpec, v optionValue) error
}

// maxJobs is fio's limit on the number of jobs (REAL_MAX_JOBS in fio.h).
const maxJobs = 4096

// syncEngines are the synchronous IO engines blksim models. They issue one
// IO at a time per job, so fio ignores iodepth for them.
var syncEngines = map[string]bool{"psync": true, "sync": true, "pvsync": true}

// asyncEngines are the asynchronous IO engines blksim models: up to iodepth
// IOs in flight per job, submitted and reaped in batches.
var asyncEngines = map[string]bool{"libaio": true, "io_uring": true}

// modelledEngines names the engines blksim models, for error messages.
const modelledEngines = "psync, sync, pvsync, libaio, io_uring"

// optionTable lists every option blksim understands, with fio's aliases.
// Facts about fio come from its options.c (names, aliases, types, bounds).
var optionTable = []option{
	{name: "name", kind: kindString, set: func(js *JobSpec, v optionValue) error {
		js.Name = v.Raw
		return nil
	}},
	{name: "rw", aliases: []string{"readwrite"}, kind: kindRaw, set: func(js *JobSpec, v optionValue) error {
		m, err := parseRW(v.Raw)
		if err != nil {
			return err
		}
		js.RW = m
		return nil
	}},
	{name: "rwmixread", kind: kindInt, min: 0, max: 100, set: func(js *JobSpec, v optionValue) error {
		js.RWMixRead = int(v.Int)
		return nil
	}},
	{name: "rwmixwrite", kind: kindInt, min: 0, max: 100, set: func(js *JobSpec, v optionValue) error {
		js.RWMixRead = 100 - int(v.Int)
		return nil
	}},
	{name: "bs", aliases: []string{"blocksize"}, kind: kindRaw, set: func(js *JobSpec, v optionValue) error {
		return parseBS(v.Raw, &js.BS)
	}},
	{name: "size", kind: kindRaw, set: func(js *JobSpec, v optionValue) error {
		switch {
		case strings.HasSuffix(v.Raw, "%"):
			return notModelled("size %q as a percentage of the file is not modelled by blksim", v.Raw)
		case strings.HasSuffix(v.Raw, "z"):
			return notModelled("size %q in zones is not modelled by blksim", v.Raw)
		}
		n, err := parseSize(v.Raw)
		if err != nil {
			return err
		}
		js.Size = n
		return nil
	}},
	{name: "filename", kind: kindString, set: func(js *JobSpec, v optionValue) error {
		js.Filename = v.Raw
		return nil
	}},
	{name: "numjobs", kind: kindInt, min: 1, max: maxJobs, set: func(js *JobSpec, v optionValue) error {
		js.NumJobs = int(v.Int)
		return nil
	}},
	{name: "thread", kind: kindFlag, set: func(js *JobSpec, v optionValue) error {
		js.Thread = v.Bool
		return nil
	}},
	{name: "ioengine", kind: kindString, set: func(js *JobSpec, v optionValue) error {
		if !syncEngines[v.Raw] && !asyncEngines[v.Raw] {
			return notModelled("ioengine %q is not modelled by blksim (modelled: %s)", v.Raw, modelledEngines)
		}
		js.IOEngine = v.Raw
		return nil
	}},
	{name: "iodepth", kind: kindInt, min: 1, max: math.MaxInt32, set: func(js *JobSpec, v optionValue) error {
		js.IODepth = int(v.Int)
		return nil
	}},
	// fio's batching options (options.c); 0 and values above iodepth are
	// fixed up when the job section ends, as fio's fixup_options does.
	{name: "iodepth_batch", aliases: []string{"iodepth_batch_submit"}, kind: kindInt, min: 0, max: math.MaxInt32, set: func(js *JobSpec, v optionValue) error {
		js.IODepthBatchSubmit = int(v.Int)
		return nil
	}},
	{name: "iodepth_batch_complete_min", aliases: []string{"iodepth_batch_complete"}, kind: kindInt, min: 0, max: math.MaxInt32, set: func(js *JobSpec, v optionValue) error {
		js.IODepthBatchCompleteMin = int(v.Int)
		return nil
	}},
	{name: "iodepth_batch_complete_max", kind: kindInt, min: 0, max: math.MaxInt32, set: func(js *JobSpec, v optionValue) error {
		js.IODepthBatchCompleteMax = int(v.Int)
		return nil
	}},
	{name: "iodepth_low", kind: kindInt, min: 0, max: math.MaxInt32, set: func(js *JobSpec, v optionValue) error {
		js.IODepthLow = int(v.Int)
		return nil
	}},
	{name: "direct", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.Direct = v.Bool
		return nil
	}},
	{name: "buffered", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		// fio: buffered is direct negated (options.c, .neg = 1).
		js.Direct = !v.Bool
		return nil
	}},
	{name: "runtime", aliases: []string{"timeout"}, kind: kindTime, set: func(js *JobSpec, v optionValue) error {
		js.Runtime = v.Dur
		return nil
	}},
	{name: "time_based", kind: kindFlag, set: func(js *JobSpec, v optionValue) error {
		js.TimeBased = v.Bool
		return nil
	}},
	{name: "ramp_time", kind: kindTime, set: func(js *JobSpec, v optionValue) error {
		js.RampTime = v.Dur
		return nil
	}},
	{name: "randseed", kind: kindSize, set: func(js *JobSpec, v optionValue) error {
		js.RandSeed = uint64(v.Int)
		js.RandSeedSet = true
		return nil
	}},
	{name: "group_reporting", kind: kindFlag, set: func(js *JobSpec, v optionValue) error {
		js.GroupReporting = v.Bool
		return nil
	}},
}

// optionIndex maps every option name and alias to its table row.
var optionIndex = buildOptionIndex(optionTable)

func buildOptionIndex(table []option) map[string]*option {
	idx := make(map[string]*option, 2*len(table))
	for i := range table {
		o := &table[i]
		for _, n := range append([]string{o.name}, o.aliases...) {
			if _, dup := idx[n]; dup {
				panic("workload: option " + n + " is in the option table twice")
			}
			idx[n] = o
		}
	}
	return idx
}

// lookupOption returns the table row for an option name or alias. Names
// are case-sensitive, as in fio.
func lookupOption(name string) (*option, bool) {
	o, ok := optionIndex[name]
	return o, ok
}

// apply parses raw according to o's kind and stores it into js. bare means
// the option was given without "=" (raw is then "").
func (o *option) apply(js *JobSpec, raw string, bare bool) error {
	v := optionValue{Raw: raw}
	switch o.kind {
	case kindBool, kindFlag:
		if bare {
			v.Bool = true
			break
		}
		n, err := parseInteger(raw)
		if err != nil || n > 1 {
			return badValue(raw, "expected 0 or 1")
		}
		v.Bool = n == 1
	default:
		if bare || raw == "" {
			return badValue(raw, "a value is required: %s", o.expect())
		}
	}
	switch o.kind {
	case kindSize:
		n, err := parseSize(raw)
		if err != nil {
			return err
		}
		v.Int = n
	case kindInt:
		n, err := parseSize(raw)
		if err != nil {
			return err
		}
		if n < o.min || n > o.max {
			return badValue(raw, "%s", o.expect())
		}
		v.Int = n
	case kindTime:
		d, err := parseTime(raw)
		if err != nil {
			return err
		}
		v.Dur = d
	}
	return o.set(js, v)
}

// expect describes a good value for o, for error messages.
func (o *option) expect() string {
	switch o.kind {
	case kindSize:
		return "expected " + sizeExpect
	case kindInt:
		if o.max >= math.MaxInt32 {
			return fmt.Sprintf("expected an integer >= %d", o.min)
		}
		return fmt.Sprintf("expected an integer from %d to %d", o.min, o.max)
	case kindBool, kindFlag:
		return "expected 0 or 1"
	case kindTime:
		return "expected " + timeExpect
	}
	switch o.name {
	case "rw":
		return "expected " + rwExpect
	case "bs":
		return "expected " + bsExpect
	case "size":
		return "expected " + sizeExpect
	}
	return "expected a non-empty string"
}

const (
	sizeExpect = "a non-negative integer with an optional suffix k, m, g, t, p (1024-based) or kib, mib, ... (1000-based), e.g. 4k"
	timeExpect = "a non-negative integer with an optional suffix us, ms, s, m, h or d (seconds if none), e.g. 30s"
	rwExpect   = "one of read, write, randread, randwrite, rw, readwrite, randrw"
	bsExpect   = "a positive size such as 4k, or comma-separated read,write sizes such as 4k,64k"
)

// parseRW parses an rw= value. fio's spellings are case-sensitive.
func parseRW(raw string) (RWMode, error) {
	base, mod, hasMod := strings.Cut(raw, ":")
	var m RWMode
	switch base {
	case "read":
		m = RWRead
	case "write":
		m = RWWrite
	case "randread":
		m = RWRandRead
	case "randwrite":
		m = RWRandWrite
	case "rw", "readwrite":
		m = RWReadWrite
	case "randrw":
		m = RWRandRW
	case "trim", "randtrim", "trimwrite", "randtrimwrite":
		return 0, notModelled("rw=%s: trim is not modelled by blksim", base)
	default:
		return 0, badValue(raw, "expected %s", rwExpect)
	}
	if hasMod {
		return 0, notModelled("rw modifier %q (fio's rw=%s:N) is not modelled by blksim", ":"+mod, base)
	}
	return m, nil
}

// parseBS parses a bs= value into bs (read, write). fio's form is
// "READ[,WRITE[,TRIM]]": one size sets every direction; with more, each
// side is set separately and an empty side keeps its current value. A
// single trailing comma is ignored, as fio does. The trim size is checked
// but not kept.
func parseBS(raw string, bs *[2]int64) error {
	parts := strings.Split(raw, ",")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 3 {
		return badValue(raw, "at most three comma-separated sizes (read,write,trim)")
	}
	var vals [3]int64
	given := false
	for i, p := range parts {
		if p == "" {
			continue
		}
		n, err := parseSize(p)
		if err != nil {
			return err
		}
		if n == 0 {
			return badValue(raw, "block size must be positive")
		}
		vals[i] = n
		given = true
	}
	if !given {
		return badValue(raw, "expected %s", bsExpect)
	}
	if len(parts) == 1 {
		bs[0], bs[1] = vals[0], vals[0]
		return nil
	}
	for i := 0; i < 2; i++ {
		if vals[i] != 0 {
			bs[i] = vals[i]
		}
	}
	return nil
}

// sizeSuffixes maps a lower-cased size suffix to its multiplier.
//
// Source: fio parse.c, __get_mult_bytes, with fio's default kb_base=1024.
// k/m/g/t/p, with or without a trailing b, are powers of 1024. The IEC
// spellings kib/mib/gib/tib/pib are powers of 1000: fio's "compatibility
// mode", documented in its HOWTO under kb_base, deliberately reverses the
// IEC meaning. fio matches "kib" exactly but "k" as a prefix, so "ki"
// (without the b) is 1024. A lone "b" means bytes. fio ignores anything
// after a recognised prefix ("4kfoo" is 4096 there); blksim rejects it.
var sizeSuffixes = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "ki": 1 << 10, "kib": 1e3,
	"m": 1 << 20, "mb": 1 << 20, "mi": 1 << 20, "mib": 1e6,
	"g": 1 << 30, "gb": 1 << 30, "gi": 1 << 30, "gib": 1e9,
	"t": 1 << 40, "tb": 1 << 40, "ti": 1 << 40, "tib": 1e12,
	"p": 1 << 50, "pb": 1 << 50, "pi": 1 << 50, "pib": 1e15,
}

// parseSize parses fio's size type: a decimal integer with an optional
// case-insensitive suffix from sizeSuffixes, or a hexadecimal integer with
// a 0x prefix and no suffix. The result fits in an int64.
func parseSize(raw string) (int64, error) {
	if err := checkNumeric(raw); err != nil {
		return 0, err
	}
	if isHex(raw) {
		n, err := parseInteger(raw)
		if err != nil {
			return 0, badValue(raw, "expected %s", sizeExpect)
		}
		return n, nil
	}
	i := countDigits(raw)
	if i == 0 {
		return 0, badValue(raw, "expected %s", sizeExpect)
	}
	n, err := strconv.ParseInt(raw[:i], 10, 64)
	if err != nil {
		return 0, badValue(raw, "number too large")
	}
	mult, ok := sizeSuffixes[strings.ToLower(raw[i:])]
	if !ok {
		return 0, badValue(raw, "unknown size suffix %q: expected %s", raw[i:], sizeExpect)
	}
	if n > math.MaxInt64/mult {
		return 0, badValue(raw, "number too large")
	}
	return n * mult, nil
}

// timeUnits maps a lower-cased time suffix to its unit.
//
// Source: fio parse.c, get_mult_time: us, ms, s, m (minutes), h and d,
// case-insensitive, and seconds when there is no suffix for options such as
// runtime and ramp_time (is_seconds). fio takes any other suffix, even
// "sec" or "min", as microseconds; blksim reads "sec", "min", "usec" and
// "msec" as their names say and rejects unknown suffixes.
var timeUnits = map[string]time.Duration{
	"":   time.Second,
	"us": time.Microsecond, "usec": time.Microsecond,
	"ms": time.Millisecond, "msec": time.Millisecond,
	"s": time.Second, "sec": time.Second,
	"m": time.Minute, "min": time.Minute,
	"h": time.Hour,
	"d": 24 * time.Hour,
}

// parseTime parses fio's time type: a decimal integer with an optional
// suffix from timeUnits.
func parseTime(raw string) (time.Duration, error) {
	if err := checkNumeric(raw); err != nil {
		return 0, err
	}
	i := countDigits(raw)
	if i == 0 {
		return 0, badValue(raw, "expected %s", timeExpect)
	}
	n, err := strconv.ParseInt(raw[:i], 10, 64)
	if err != nil {
		return 0, badValue(raw, "number too large")
	}
	unit, ok := timeUnits[strings.ToLower(raw[i:])]
	if !ok {
		return 0, badValue(raw, "unknown time suffix %q: expected %s", raw[i:], timeExpect)
	}
	if n > math.MaxInt64/int64(unit) {
		return 0, badValue(raw, "duration too long")
	}
	return time.Duration(n) * unit, nil
}

// checkNumeric rejects numeric values blksim does not model or that are
// negative, with a clearer message than a generic parse failure.
func checkNumeric(raw string) error {
	switch {
	case raw == "":
		return badValue(raw, "a number is required")
	case raw[0] == '(':
		// fio evaluates "(...)" as an arithmetic expression.
		return notModelled("arithmetic expression %q is not modelled by blksim", raw)
	case raw[0] == '-':
		return badValue(raw, "must not be negative")
	}
	return nil
}

// parseInteger parses a plain non-negative integer: decimal, or hexadecimal
// with a 0x prefix (fio's check_int and strtoll accept both).
func parseInteger(raw string) (int64, error) {
	digits, base := raw, 10
	if isHex(raw) {
		digits, base = raw[2:], 16
	}
	if digits == "" || digits[0] == '+' || digits[0] == '-' {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseInt(digits, base, 64)
}

func isHex(s string) bool {
	return len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')
}

func countDigits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

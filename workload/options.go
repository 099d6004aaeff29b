package workload

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// This file holds the job-file option table: which fio options blksim
// understands, how their values are parsed and where they land in a JobSpec.
// Supporting another fio option means adding one row to optionTable (and a
// JobSpec field for it, and honouring it in the runner); the parser in
// jobfile.go does not change.

// optionKind says how an option's text is parsed before its setter runs.
// The kinds mirror fio's option types (parse.h FIO_OPT_*).
type optionKind int

const (
	// kindString is any non-empty text, passed on raw (fio FIO_OPT_STR_STORE).
	kindString optionKind = iota
	// kindSize is a non-negative integer with an optional size suffix
	// (fio FIO_OPT_STR_VAL / FIO_OPT_ULL); see parseSizeKB.
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
	// kindTimeUS is kindTime in microseconds when there is no suffix (fio
	// options with is_time but not is_seconds, such as thinktime).
	kindTimeUS
	// kindRaw hands the non-empty text to the setter, which parses it
	// itself (lists, enumerations with modifiers).
	kindRaw
)

// optionValue is a parsed option value. Raw is always set (the value after
// ${VAR} expansion, "" for a bare option); the other field that is set
// depends on the option's kind: Int for kindSize and kindInt, Bool for
// kindBool and kindFlag, Dur for kindTime and kindTimeUS.
type optionValue struct {
	Raw  string
	Int  int64
	Bool bool
	Dur  time.Duration
	// kb is the section's kb_base, for setters that parse sizes; kb_base's
	// own setter stores through it.
	kb *int64
}

// KB returns the kb_base sizes are read with.
func (v optionValue) KB() int64 {
	if v.kb == nil || *v.kb == 0 {
		return defaultKBBase
	}
	return *v.kb
}

// option is one row of the option table.
type option struct {
	// name is fio's option name; aliases are fio's other names for it.
	name    string
	aliases []string
	kind    optionKind
	// min and max bound a kindInt value, inclusive.
	min, max int64
	// expectText, if set, describes a good kindRaw or kindString value.
	expectText string
	// emptyOK lets a kindString option be given bare or empty (Raw is
	// then ""), as fio's write_*_log options are.
	emptyOK bool
	// set stores v into js. It returns an error made by badValue or
	// notModelled when the value is acceptable to fio but not to blksim,
	// or is wrong in a way the kind cannot see.
	set func(js *JobSpec, v optionValue) error
}

// maxJobs is fio's limit on the number of jobs (REAL_MAX_JOBS in fio.h).
const maxJobs = 4096

// maxNrFiles bounds nrfiles. fio takes any int; blksim keeps the state of
// every file of every job in memory, and a million files per job is far
// beyond what a simulated run can use.
const maxNrFiles = 1 << 20

// syncEngines are the synchronous IO engines blksim models. They issue one
// IO at a time per job: fio keeps one IO in flight whatever iodepth says
// (and notes "queue depth will be capped at 1"), but reports iodepth as
// given.
var syncEngines = map[string]bool{"psync": true, "sync": true, "pvsync": true}

// SyncEngine reports whether engine is one of the synchronous engines
// (one IO in flight per job).
func SyncEngine(engine string) bool { return syncEngines[engine] }

// asyncEngines are the asynchronous IO engines blksim models: up to iodepth
// IOs in flight per job, submitted and reaped in batches.
var asyncEngines = map[string]bool{"libaio": true, "io_uring": true}

// modelledEngines names the engines blksim models, for error messages.
const modelledEngines = "psync, sync, pvsync, libaio, io_uring"

// verifyModes are fio's verify= checksum types (options.c). blksim's
// stamps check the same thing for all of them.
var verifyModes = map[string]bool{
	"md5": true, "crc64": true, "crc32": true, "crc32c": true, "crc32c-intel": true,
	"crc16": true, "crc7": true, "sha1": true, "sha256": true, "sha512": true,
	"sha3-224": true, "sha3-256": true, "sha3-384": true, "sha3-512": true,
	"xxhash": true, "meta": true, "null": true,
}

// optionTable lists every option blksim understands, with fio's aliases.
// Facts about fio come from its options.c (names, aliases, types, bounds)
// and from fio 3.33 itself (fio --cmdhelp, --debug=parse).
var optionTable = []option{
	{name: "name", kind: kindString, set: func(js *JobSpec, v optionValue) error {
		js.Name = v.Raw
		return nil
	}},
	{name: "description", kind: kindString, set: func(js *JobSpec, v optionValue) error {
		js.Description = v.Raw
		return nil
	}},
	{name: "rw", aliases: []string{"readwrite"}, kind: kindRaw, expectText: rwExpect, set: setRW},
	{name: "rw_sequencer", kind: kindRaw, expectText: "sequential or identical", set: func(js *JobSpec, v optionValue) error {
		switch v.Raw {
		case "sequential":
			js.RWSequencerIdentical = false
		case "identical":
			js.RWSequencerIdentical = true
		default:
			return badValue(v.Raw, "expected sequential or identical")
		}
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
	{name: "bs", aliases: []string{"blocksize"}, kind: kindRaw, expectText: bsExpect, set: func(js *JobSpec, v optionValue) error {
		return parseBS(v.Raw, v.KB(), js)
	}},
	{name: "bsrange", aliases: []string{"blocksize_range"}, kind: kindRaw, expectText: bsrangeExpect, set: setBSRange},
	{name: "bssplit", kind: kindRaw, expectText: bssplitExpect, set: setBSSplit},
	{name: "ba", aliases: []string{"blockalign"}, kind: kindRaw, expectText: "a positive size, or comma-separated read,write sizes", set: func(js *JobSpec, v optionValue) error {
		vals, set, err := parseDirList(v.Raw, "a positive size", func(s string) (int64, error) {
			n, err := parseSizeKB(s, v.KB())
			if err == nil && n == 0 {
				err = badValue(v.Raw, "block alignment must be positive")
			}
			return n, err
		})
		if err != nil {
			return err
		}
		for d := range 2 {
			if set[d] {
				js.BlockAlign[d] = vals[d]
			}
		}
		return nil
	}},
	{name: "size", kind: kindRaw, expectText: sizePercentExpect, set: func(js *JobSpec, v optionValue) error {
		if strings.HasSuffix(v.Raw, "z") && countDigits(v.Raw) == len(v.Raw)-1 {
			return notModelled("size %q in zones is not modelled by blksim (zoned block devices, zonemode=zbd, are not modelled)", v.Raw)
		}
		n, pct, err := parseSizePercentKB(v.Raw, v.KB())
		if err != nil {
			return err
		}
		js.Size, js.SizePercent = n, pct
		return nil
	}},
	{name: "filesize", kind: kindRaw, expectText: "a size, or a range such as 1m-4m", set: func(js *JobSpec, v optionValue) error {
		lo, hi, err := parseSizeRange(v.Raw, v.KB())
		if err != nil {
			return err
		}
		if lo == 0 {
			return badValue(v.Raw, "a file size must be positive")
		}
		js.FileSize = [2]int64{lo, hi}
		return nil
	}},
	{name: "io_size", aliases: []string{"io_limit"}, kind: kindRaw, expectText: sizeExpect, set: func(js *JobSpec, v optionValue) error {
		n, pct, err := parseSizePercentKB(v.Raw, v.KB())
		if err != nil {
			return err
		}
		if pct != 0 {
			return notModelled("io_size %q as a percentage is not modelled by blksim; give it in bytes", v.Raw)
		}
		js.IOSize = n
		return nil
	}},
	{name: "number_ios", kind: kindSize, set: func(js *JobSpec, v optionValue) error {
		js.NumberIOs = v.Int
		return nil
	}},
	{name: "offset", aliases: []string{"fileoffset"}, kind: kindRaw, expectText: sizePercentExpect, set: func(js *JobSpec, v optionValue) error {
		n, pct, err := parseSizePercentKB(v.Raw, v.KB())
		if err != nil {
			return err
		}
		js.Offset, js.OffsetPercent = n, pct
		return nil
	}},
	{name: "offset_increment", kind: kindRaw, expectText: sizePercentExpect, set: func(js *JobSpec, v optionValue) error {
		n, pct, err := parseSizePercentKB(v.Raw, v.KB())
		if err != nil {
			return err
		}
		js.OffsetIncrement, js.OffsetIncrementPercent = n, pct
		return nil
	}},
	{name: "fill_device", aliases: []string{"fill_fs"}, kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.FillDevice = v.Bool
		return nil
	}},
	{name: "filename", kind: kindString, set: func(js *JobSpec, v optionValue) error {
		js.Filename = v.Raw
		return nil
	}},
	{name: "directory", kind: kindString, set: func(js *JobSpec, v optionValue) error {
		if strings.ContainsRune(v.Raw, ':') {
			return notModelled("several directories (%q) are not modelled by blksim (one file per job)", v.Raw)
		}
		js.Directory = v.Raw
		return nil
	}},
	{name: "filename_format", kind: kindString, set: func(js *JobSpec, v optionValue) error {
		js.FilenameFormat = v.Raw
		return nil
	}},
	{name: "nrfiles", aliases: []string{"nr_files"}, kind: kindInt, min: 0, max: maxNrFiles, set: func(js *JobSpec, v optionValue) error {
		js.NrFiles = int(v.Int)
		return nil
	}},
	{name: "openfiles", kind: kindInt, min: 0, max: math.MaxInt32, set: func(js *JobSpec, v optionValue) error {
		js.OpenFiles = int(v.Int)
		return nil
	}},
	{name: "file_service_type", kind: kindRaw, expectText: fileServiceExpect, set: setFileService},
	{name: "numjobs", kind: kindInt, min: 1, max: maxJobs, set: func(js *JobSpec, v optionValue) error {
		js.NumJobs = int(v.Int)
		return nil
	}},
	{name: "thread", kind: kindFlag, set: func(js *JobSpec, v optionValue) error {
		js.Thread = v.Bool
		return nil
	}},
	// fio registers its tiobench profile's options with the job options,
	// so fio accepts threads=N in any job file and ignores it outside
	// --profile=tiobench; blksim does the same.
	{name: "threads", kind: kindInt, min: 0, max: math.MaxInt32, set: func(*JobSpec, optionValue) error { return nil }},
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
	{name: "fallocate", kind: kindRaw, expectText: "none, native, posix, keep, truncate, 0 or 1", set: func(js *JobSpec, v optionValue) error {
		switch v.Raw {
		case "native", "posix", "keep", "truncate", "none":
			js.Fallocate = v.Raw
		case "1":
			js.Fallocate = "posix"
		case "0":
			js.Fallocate = "none"
		default:
			return badValue(v.Raw, "expected none, native, posix, keep, truncate, 0 or 1")
		}
		return nil
	}},
	{name: "io_submit_mode", kind: kindRaw, expectText: "inline or offload", set: func(js *JobSpec, v optionValue) error {
		switch v.Raw {
		case "inline":
			js.SubmitOffload = false
		case "offload":
			js.SubmitOffload = true
		default:
			return badValue(v.Raw, "expected inline or offload")
		}
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
	{name: "fsync", kind: kindInt, min: 0, max: 1 << 30, set: func(js *JobSpec, v optionValue) error {
		js.Fsync = int(v.Int)
		return nil
	}},
	{name: "fdatasync", kind: kindInt, min: 0, max: 1 << 30, set: func(js *JobSpec, v optionValue) error {
		js.Fdatasync = int(v.Int)
		return nil
	}},
	{name: "end_fsync", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.EndFsync = v.Bool
		return nil
	}},
	{name: "invalidate", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.Invalidate = v.Bool
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
	{name: "startdelay", kind: kindRaw, expectText: "a time such as 5s (seconds if no unit), or a range such as 1-5", set: func(js *JobSpec, v optionValue) error {
		lo, hi, err := parseTimeRange(v.Raw, time.Second)
		if err != nil {
			return err
		}
		js.StartDelay = [2]time.Duration{lo, hi}
		return nil
	}},
	{name: "loops", kind: kindInt, min: 0, max: math.MaxInt32, set: func(js *JobSpec, v optionValue) error {
		// fio: loops=0 runs once, as loops=1 does.
		js.Loops = int(v.Int)
		return nil
	}},
	{name: "randseed", kind: kindSize, set: func(js *JobSpec, v optionValue) error {
		js.RandSeed = uint64(v.Int)
		js.RandSeedSet = true
		return nil
	}},
	{name: "randrepeat", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.NoRandRepeat = !v.Bool
		return nil
	}},
	{name: "norandommap", kind: kindFlag, set: func(js *JobSpec, v optionValue) error {
		js.NoRandomMap = v.Bool
		return nil
	}},
	{name: "percentage_random", kind: kindRaw, expectText: "a percentage from 0 to 100, or comma-separated read,write percentages", set: func(js *JobSpec, v optionValue) error {
		vals, set, err := parseDirList(v.Raw, "a percentage from 0 to 100", func(s string) (int64, error) {
			n, err := parseInt(s, v.KB())
			if err == nil && n > 100 {
				err = badValue(v.Raw, "expected a percentage from 0 to 100")
			}
			return n, err
		})
		if err != nil {
			return err
		}
		for d := range 2 {
			if set[d] {
				js.PercentSequential[d] = 100 - int(vals[d])
			}
		}
		return nil
	}},
	{name: "random_distribution", kind: kindRaw, expectText: distExpect, set: setDistribution},
	{name: "random_generator", kind: kindRaw, expectText: "tausworthe, tausworthe64 or lfsr", set: func(js *JobSpec, v optionValue) error {
		switch v.Raw {
		case "tausworthe":
			js.RandomGenerator = ""
		case "tausworthe64", "lfsr":
			js.RandomGenerator = v.Raw
		default:
			return badValue(v.Raw, "expected tausworthe, tausworthe64 or lfsr")
		}
		return nil
	}},
	{name: "rate", kind: kindRaw, expectText: rateExpect, set: func(js *JobSpec, v optionValue) error {
		return setDirSizes(v, &js.Rate)
	}},
	{name: "rate_iops", kind: kindRaw, expectText: rateExpect, set: func(js *JobSpec, v optionValue) error {
		return setDirSizes(v, &js.RateIOPS)
	}},
	{name: "rate_min", aliases: []string{"ratemin"}, kind: kindRaw, expectText: rateExpect, set: func(js *JobSpec, v optionValue) error {
		return setDirSizes(v, &js.RateMin)
	}},
	{name: "rate_iops_min", kind: kindRaw, expectText: rateExpect, set: func(js *JobSpec, v optionValue) error {
		return setDirSizes(v, &js.RateIOPSMin)
	}},
	{name: "rate_cycle", aliases: []string{"ratecycle"}, kind: kindInt, min: 0, max: math.MaxInt32, set: func(js *JobSpec, v optionValue) error {
		// fio: milliseconds.
		js.RateCycle = time.Duration(v.Int) * time.Millisecond
		return nil
	}},
	{name: "rate_process", kind: kindRaw, expectText: "linear or poisson", set: func(js *JobSpec, v optionValue) error {
		switch v.Raw {
		case "linear":
			js.RatePoisson = false
		case "poisson":
			js.RatePoisson = true
		default:
			return badValue(v.Raw, "expected linear or poisson")
		}
		return nil
	}},
	{name: "thinktime", kind: kindTimeUS, set: func(js *JobSpec, v optionValue) error {
		js.ThinkTime = v.Dur
		return nil
	}},
	{name: "thinktime_spin", kind: kindTimeUS, set: func(js *JobSpec, v optionValue) error {
		js.ThinkTimeSpin = v.Dur
		return nil
	}},
	{name: "thinktime_blocks", kind: kindInt, min: 1, max: math.MaxInt32, set: func(js *JobSpec, v optionValue) error {
		js.ThinkTimeBlocks = int(v.Int)
		return nil
	}},
	// fio's rate-sample intervals, integers in milliseconds.
	{name: "bwavgtime", kind: kindInt, min: 1, max: math.MaxInt32, set: func(js *JobSpec, v optionValue) error {
		js.BWAvgTime = time.Duration(v.Int) * time.Millisecond
		return nil
	}},
	{name: "iopsavgtime", kind: kindInt, min: 1, max: math.MaxInt32, set: func(js *JobSpec, v optionValue) error {
		js.IOPSAvgTime = time.Duration(v.Int) * time.Millisecond
		return nil
	}},
	// fio's log files (iolog.go).
	{name: "write_bw_log", kind: kindString, emptyOK: true, set: func(js *JobSpec, v optionValue) error {
		js.Logs.BW = LogRequest{Write: true, Name: v.Raw}
		return nil
	}},
	{name: "write_lat_log", kind: kindString, emptyOK: true, set: func(js *JobSpec, v optionValue) error {
		js.Logs.Lat = LogRequest{Write: true, Name: v.Raw}
		return nil
	}},
	{name: "write_iops_log", kind: kindString, emptyOK: true, set: func(js *JobSpec, v optionValue) error {
		js.Logs.IOPS = LogRequest{Write: true, Name: v.Raw}
		return nil
	}},
	{name: "write_hist_log", kind: kindString, emptyOK: true, set: func(js *JobSpec, v optionValue) error {
		js.Logs.Hist = LogRequest{Write: true, Name: v.Raw}
		return nil
	}},
	{name: "log_avg_msec", kind: kindInt, min: 0, max: math.MaxUint32, set: func(js *JobSpec, v optionValue) error {
		js.Logs.AvgMsec = v.Int
		return nil
	}},
	{name: "log_max_value", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.Logs.MaxValue = v.Bool
		return nil
	}},
	{name: "log_offset", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.Logs.Offset = v.Bool
		return nil
	}},
	{name: "log_prio", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.Logs.Prio = v.Bool
		return nil
	}},
	{name: "per_job_logs", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.Logs.Shared = !v.Bool
		return nil
	}},
	{name: "log_hist_msec", kind: kindInt, min: 0, max: math.MaxUint32, set: func(js *JobSpec, v optionValue) error {
		js.Logs.HistMsec = v.Int
		return nil
	}},
	// fio's help gives 0 to 6; fio's range check lets larger values
	// through, which group more bins than a histogram has.
	{name: "log_hist_coarseness", kind: kindInt, min: 0, max: 6, set: func(js *JobSpec, v optionValue) error {
		js.Logs.HistCoarseness = int(v.Int)
		return nil
	}},
	// How many entries fio allocates at first: the logs do not change.
	{name: "log_entries", kind: kindInt, min: 1024, max: 1 << 20, set: func(*JobSpec, optionValue) error { return nil }},
	{name: "log_store_compressed", kind: kindBool, set: rejectTrue("log_store_compressed=1 is not modelled by blksim: it writes its logs as text, not as fio's compressed .fz files")},
	{name: "log_unix_epoch", kind: kindBool, set: rejectTrue("log_unix_epoch=1 is not modelled by blksim: simulated time has no wall-clock epoch, so log times count from the job's start")},
	{name: "log_alternate_epoch", kind: kindBool, set: rejectTrue("log_alternate_epoch=1 is not modelled by blksim: simulated time has no wall-clock epoch, so log times count from the job's start")},
	// Only read with log_unix_epoch or log_alternate_epoch, which blksim
	// rejects.
	{name: "log_alternate_epoch_clock_id", kind: kindInt, min: 0, max: math.MaxUint32, set: func(*JobSpec, optionValue) error { return nil }},
	{name: "percentile_list", kind: kindRaw, expectText: "percentages from 0 to 100 separated by ':', at most 20", set: func(js *JobSpec, v optionValue) error {
		ps, prec, err := parsePercentiles(v.Raw)
		if err != nil {
			return err
		}
		js.Percentiles, js.PercentilePrecision = ps, prec
		return nil
	}},
	{name: "thinktime_blocks_type", kind: kindRaw, expectText: "complete or issue", set: func(js *JobSpec, v optionValue) error {
		switch v.Raw {
		case "complete":
			js.ThinkTimeIssue = false
		case "issue":
			js.ThinkTimeIssue = true
		default:
			return badValue(v.Raw, "expected complete or issue")
		}
		return nil
	}},
	{name: "exitall", kind: kindFlag, set: func(js *JobSpec, v optionValue) error {
		js.ExitAll = v.Bool
		return nil
	}},
	// continue_on_error (fio options.c): none, read, write, io, verify,
	// all, and 0 (none) and 1 (all) for compatibility.
	{name: "continue_on_error", kind: kindRaw, expectText: "none, read, write, io, verify, all, 0 or 1", set: func(js *JobSpec, v optionValue) error {
		switch v.Raw { // fio matches the words exactly (strncmp)
		case "none", "0":
			js.ContinueOnError = 0
		case "read":
			js.ContinueOnError = ErrorTypeRead
		case "write":
			js.ContinueOnError = ErrorTypeWrite
		case "io":
			js.ContinueOnError = ErrorTypeRead | ErrorTypeWrite
		case "verify":
			js.ContinueOnError = ErrorTypeVerify
		case "all", "1":
			js.ContinueOnError = ErrorTypeAny
		default:
			return badValue(v.Raw, "expected none, read, write, io, verify, all, 0 or 1")
		}
		return nil
	}},
	{name: "exitall_on_error", kind: kindFlag, set: func(js *JobSpec, v optionValue) error {
		js.ExitAllOnError = v.Bool
		return nil
	}},
	// gtod_reduce=1 turns off what needs the clock per IO (fio options.c
	// str_gtod_reduce_cb); 0 leaves the other options alone.
	{name: "gtod_reduce", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		if v.Bool {
			js.DisableLat, js.DisableClat, js.DisableSlat, js.DisableBW = true, true, true, true
			js.NoClatPercentiles = true
		}
		return nil
	}},
	{name: "disable_lat", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.DisableLat = v.Bool
		return nil
	}},
	{name: "disable_clat", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.DisableClat = v.Bool
		return nil
	}},
	{name: "disable_slat", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.DisableSlat = v.Bool
		return nil
	}},
	// fio 3.33 still takes and reports its interval bandwidth and IOPS
	// samples with disable_bw_measurement (and gtod_reduce) set; only
	// the per-IO samples of a per-IO bandwidth log stop.
	{name: "disable_bw_measurement", aliases: []string{"disable_bw"}, kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.DisableBW = v.Bool
		return nil
	}},
	{name: "zonemode", kind: kindRaw, expectText: zoneModeExpect, set: func(js *JobSpec, v optionValue) error {
		switch v.Raw {
		case "none":
			js.Strided = false
		case "strided":
			js.Strided = true
		case "zbd":
			return notModelled("zonemode=zbd is not modelled by blksim: zoned block devices are not modelled")
		default:
			return badValue(v.Raw, "expected %s", zoneModeExpect)
		}
		return nil
	}},
	{name: "zonesize", kind: kindSize, set: func(js *JobSpec, v optionValue) error {
		js.ZoneSize = v.Int
		return nil
	}},
	{name: "zonerange", kind: kindSize, set: func(js *JobSpec, v optionValue) error {
		js.ZoneRange = v.Int
		return nil
	}},
	{name: "zoneskip", kind: kindSize, set: func(js *JobSpec, v optionValue) error {
		js.ZoneSkip = v.Int
		return nil
	}},
	{name: "unified_rw_reporting", kind: kindRaw, expectText: unifiedRWExpect, set: func(js *JobSpec, v optionValue) error {
		switch v.Raw {
		case "none", "0":
			js.UnifiedRW = 0
		case "mixed", "1":
			js.UnifiedRW = 1
		case "both", "2":
			js.UnifiedRW = 2
		default:
			return badValue(v.Raw, "expected %s", unifiedRWExpect)
		}
		return nil
	}},
	{name: "clat_percentiles", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.NoClatPercentiles = !v.Bool
		return nil
	}},
	{name: "lat_percentiles", kind: kindBool, set: rejectTrue("lat_percentiles=1 is not modelled by blksim (its reports have completion latency percentiles only)")},
	{name: "slat_percentiles", kind: kindBool, set: rejectTrue("slat_percentiles=1 is not modelled by blksim (its reports have completion latency percentiles only)")},
	// The simulation has one clock, whichever fio would read; the cost of
	// reading it is in the stack's per-IO application time.
	{name: "clocksource", kind: kindRaw, expectText: "gettimeofday, clock_gettime or cpu", set: func(js *JobSpec, v optionValue) error {
		switch v.Raw {
		case "gettimeofday", "clock_gettime", "cpu":
			return nil
		}
		return badValue(v.Raw, "expected gettimeofday, clock_gettime or cpu")
	}},
	// Buffer contents: blksim carries data as stamps and its devices do
	// not look at contents, so what fio fills its buffers with changes
	// nothing; the per-IO scramble is fio's default and in the stack's
	// per-IO application time. (refill_buffers, buffer_compress_* and
	// dedupe_* are rejected: fio refills every write buffer for them, a
	// per-IO CPU cost blksim does not model.) fio's pattern syntax is not
	// checked.
	{name: "buffer_pattern", kind: kindString, set: func(*JobSpec, optionValue) error { return nil }},
	{name: "zero_buffers", kind: kindFlag, set: func(*JobSpec, optionValue) error { return nil }},
	{name: "scramble_buffers", kind: kindBool, set: func(*JobSpec, optionValue) error { return nil }},
	{name: "exit_what", kind: kindRaw, expectText: "group, stonewall or all", set: func(js *JobSpec, v optionValue) error {
		switch v.Raw {
		case "group", "stonewall", "all":
			js.ExitWhat = v.Raw
		default:
			return badValue(v.Raw, "expected group, stonewall or all")
		}
		return nil
	}},
	{name: "stonewall", aliases: []string{"wait_for_previous"}, kind: kindFlag, set: func(js *JobSpec, v optionValue) error {
		js.Stonewall = v.Bool
		return nil
	}},
	{name: "new_group", kind: kindFlag, set: func(js *JobSpec, v optionValue) error {
		js.NewGroup = v.Bool
		return nil
	}},
	{name: "wait_for", kind: kindString, set: func(js *JobSpec, v optionValue) error {
		js.WaitFor = v.Raw
		return nil
	}},
	{name: "group_reporting", kind: kindFlag, set: func(js *JobSpec, v optionValue) error {
		js.GroupReporting = v.Bool
		return nil
	}},
	{name: "verify", kind: kindRaw, expectText: verifyExpect, set: func(js *JobSpec, v optionValue) error {
		switch {
		case v.Raw == "0":
			js.Verify = ""
		case v.Raw == "pattern":
			return notModelled("verify=pattern is not modelled by blksim (blksim carries data as stamps, not contents; use a checksum type)")
		case verifyModes[v.Raw]:
			js.Verify = v.Raw
		default:
			return badValue(v.Raw, "expected %s", verifyExpect)
		}
		return nil
	}},
	{name: "do_verify", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.NoDoVerify = !v.Bool
		return nil
	}},
	{name: "verify_only", kind: kindFlag, set: func(js *JobSpec, v optionValue) error {
		js.VerifyOnly = v.Bool
		return nil
	}},
	{name: "verify_fatal", kind: kindBool, set: func(js *JobSpec, v optionValue) error {
		js.VerifyFatal = v.Bool
		return nil
	}},
	{name: "verify_backlog", kind: kindSize, set: func(js *JobSpec, v optionValue) error {
		js.VerifyBacklog = v.Int
		return nil
	}},
	{name: "verify_backlog_batch", kind: kindSize, set: func(js *JobSpec, v optionValue) error {
		js.VerifyBacklogBatch = v.Int
		return nil
	}},
	{name: "kb_base", kind: kindRaw, expectText: "1024 or 1000", set: func(js *JobSpec, v optionValue) error {
		var n int64
		switch v.Raw {
		case "1024":
			n = 1024
		case "1000":
			n = 1000
		default:
			return badValue(v.Raw, "expected 1024 or 1000")
		}
		if v.kb != nil {
			*v.kb = n
		}
		js.KBBase = n
		return nil
	}},
	// fio lays files out (writes them) before a job starts; blksim creates
	// them laid out at no simulated cost, so laying them out one at a time
	// or all at once takes the same (no) time.
	{name: "create_serialize", kind: kindBool, set: func(*JobSpec, optionValue) error { return nil }},
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

// apply parses raw according to o's kind and stores it into js; kb is the
// section's kb_base (nil: 1024). bare means the option was given without
// "=" (raw is then "").
func (o *option) apply(js *JobSpec, kb *int64, raw string, bare bool) error {
	v := optionValue{Raw: raw, kb: kb}
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
		if (bare || raw == "") && !o.emptyOK {
			return badValue(raw, "a value is required: %s", o.expect())
		}
	}
	switch o.kind {
	case kindSize:
		n, err := parseSizeKB(raw, v.KB())
		if err != nil {
			return err
		}
		v.Int = n
	case kindInt:
		n, err := parseInt(raw, v.KB())
		if err != nil {
			return err
		}
		if n < o.min || n > o.max {
			return badValue(raw, "%s", o.expect())
		}
		v.Int = n
	case kindTime, kindTimeUS:
		unit := time.Second
		if o.kind == kindTimeUS {
			unit = time.Microsecond
		}
		d, err := parseTimeUnit(raw, unit)
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
		return fmt.Sprintf("expected an integer from %d to %d", o.min, o.max)
	case kindBool, kindFlag:
		return "expected 0 or 1"
	case kindTime:
		return "expected " + timeExpect
	case kindTimeUS:
		return "expected " + timeUSExpect
	}
	if o.expectText != "" {
		return "expected " + o.expectText
	}
	return "expected a non-empty string"
}

const (
	sizeExpect        = "a non-negative integer with an optional suffix k, m, g, t, p (1024-based) or kib, mib, ... (1000-based), e.g. 4k"
	sizePercentExpect = "a size such as 4k, or a percentage such as 50%"
	timeExpect        = "a non-negative integer with an optional suffix us, ms, s, m, h or d (seconds if none), e.g. 30s"
	timeUSExpect      = "a non-negative integer with an optional suffix us, ms, s, m, h or d (microseconds if none), e.g. 500"
	rwExpect          = "one of read, write, randread, randwrite, rw, readwrite, randrw, optionally with :N"
	bsExpect          = "a positive size such as 4k, or comma-separated read,write sizes such as 4k,64k"
	bsrangeExpect     = "a range such as 4k-16k, or comma-separated read,write ranges such as 4k-16k,8k-64k"
	bssplitExpect     = "SIZE/PERCENT entries separated by ':', such as 4k/60:64k/40, optionally a list per direction separated by ','"
	rateExpect        = "a number (bytes or IOs per second) with an optional suffix, or comma-separated read,write values"
	distExpect        = "random, zipf[:theta[:center]], pareto[:h[:center]], normal[:deviation[:center]], zoned:ACCESS/RANGE:... or zoned_abs:ACCESS/SIZE:..."
	fileServiceExpect = "roundrobin[:N], sequential, random[:N], zipf[:theta[:center]], pareto[:h[:center]], normal[:deviation[:center]] or gauss[:deviation[:center]]"
	verifyExpect      = "0, md5, crc64, crc32, crc32c, crc32c-intel, crc16, crc7, sha1, sha256, sha512, sha3-224, sha3-256, sha3-384, sha3-512, xxhash, meta or null"
	unifiedRWExpect   = "none, mixed or both (or 0, 1 or 2)"
	zoneModeExpect    = "none, strided or zbd"
)

// setRW parses an rw= value and its optional ":N" modifier. fio's
// spellings are case-sensitive. For the sequential modes N is a size added
// to each offset (negative to go backwards); for the random modes it is
// the number of IOs per random offset (fio options.c str_rw_cb).
func setRW(js *JobSpec, v optionValue) error {
	raw := v.Raw
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
		return notModelled("rw=%s: trim is not modelled by blksim", base)
	default:
		return badValue(raw, "expected %s", rwExpect)
	}
	js.RW = m
	js.SeqAdd, js.SeqNr = 0, 0
	if !hasMod {
		return nil
	}
	if m.Random() {
		n, err := parseInteger(mod)
		if err != nil || n < 1 || n > math.MaxInt32 {
			return badValue(raw, "the :N of a random mode is the number of IOs per random offset, an integer >= 1")
		}
		js.SeqNr = int(n)
		return nil
	}
	neg := strings.HasPrefix(mod, "-")
	n, err := parseSizeKB(strings.TrimPrefix(mod, "-"), v.KB())
	if err != nil {
		return badValue(raw, "the :N of a sequential mode is a size to skip after each IO, such as 4k or -8k")
	}
	if neg {
		n = -n
	}
	js.SeqAdd = n
	return nil
}

// parseDirList parses fio's per-direction list "READ[,WRITE[,TRIM]]" with
// one: a value without a comma sets every direction; otherwise each
// non-empty part sets its own direction (fio 3.33: "8k," sets reads only).
// The trim part is checked but not kept.
func parseDirList(raw, expect string, one func(string) (int64, error)) (vals [2]int64, set [2]bool, err error) {
	parts := strings.Split(raw, ",")
	if len(parts) > 3 {
		return vals, set, badValue(raw, "at most three comma-separated values (read,write,trim)")
	}
	given := false
	for i, p := range parts {
		if p == "" {
			continue
		}
		n, err := one(p)
		if err != nil {
			return vals, set, err
		}
		given = true
		if i < 2 {
			vals[i], set[i] = n, true
		}
	}
	if !given {
		return vals, set, badValue(raw, "expected %s", expect)
	}
	if len(parts) == 1 {
		vals[1], set[1] = vals[0], true
	}
	return vals, set, nil
}

// parseBS parses a bs= value into js.BS (read, write); a direction it
// sets loses its bsrange, which fio keeps in the same fields.
func parseBS(raw string, kb int64, js *JobSpec) error {
	vals, set, err := parseDirList(raw, bsExpect, func(s string) (int64, error) {
		n, err := parseSizeKB(s, kb)
		if err == nil && n == 0 {
			err = badValue(raw, "block size must be positive")
		}
		return n, err
	})
	if err != nil {
		return err
	}
	for d := range 2 {
		if set[d] {
			js.BS[d] = vals[d]
			js.BSRange[d] = [2]int64{}
		}
	}
	return nil
}

// setDirSizes parses a per-direction list of sizes (rate=, rate_iops=, ...).
func setDirSizes(v optionValue, dst *[2]int64) error {
	vals, set, err := parseDirList(v.Raw, rateExpect, func(s string) (int64, error) { return parseSizeKB(s, v.KB()) })
	if err != nil {
		return err
	}
	for d := range 2 {
		if set[d] {
			dst[d] = vals[d]
		}
	}
	return nil
}

// parseSizeRange parses "SIZE" or "LOW-HIGH" (or "LOW:HIGH"), swapping a
// reversed range as fio does.
func parseSizeRange(raw string, kb int64) (lo, hi int64, err error) {
	a, b, isRange := cutRange(raw)
	if lo, err = parseSizeKB(a, kb); err != nil {
		return 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = parseSizeKB(b, kb); err != nil {
			return 0, 0, err
		}
	}
	if lo > hi {
		lo, hi = hi, lo
	}
	return lo, hi, nil
}

// parseTimeRange parses "TIME" or "LOW-HIGH" times in unit.
func parseTimeRange(raw string, unit time.Duration) (lo, hi time.Duration, err error) {
	a, b, isRange := cutRange(raw)
	if lo, err = parseTimeUnit(a, unit); err != nil {
		return 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = parseTimeUnit(b, unit); err != nil {
			return 0, 0, err
		}
	}
	if lo > hi {
		lo, hi = hi, lo
	}
	return lo, hi, nil
}

// cutRange splits "A-B" or "A:B" (fio FIO_OPT_RANGE); an expression in
// parentheses is not split.
func cutRange(raw string) (a, b string, ok bool) {
	if strings.HasPrefix(raw, "(") {
		return raw, "", false
	}
	if i := strings.IndexAny(raw, "-:"); i > 0 {
		return raw[:i], raw[i+1:], true
	}
	return raw, "", false
}

// setBSRange parses bsrange=LOW-HIGH[,LOW-HIGH[,LOW-HIGH]].
func setBSRange(js *JobSpec, v optionValue) error {
	parts := strings.Split(v.Raw, ",")
	if len(parts) > 3 {
		return badValue(v.Raw, "at most three comma-separated ranges (read,write,trim)")
	}
	var ranges [2][2]int64
	var set [2]bool
	for i, p := range parts {
		if p == "" {
			continue
		}
		if _, _, ok := cutRange(p); !ok {
			return badValue(v.Raw, "expected %s", bsrangeExpect)
		}
		lo, hi, err := parseSizeRange(p, v.KB())
		if err != nil {
			return err
		}
		if lo == 0 {
			return badValue(v.Raw, "block size must be positive")
		}
		if i < 2 {
			ranges[i], set[i] = [2]int64{lo, hi}, true
		}
	}
	if !set[0] && !set[1] {
		return badValue(v.Raw, "expected %s", bsrangeExpect)
	}
	if len(parts) == 1 {
		ranges[1], set[1] = ranges[0], true
	}
	for d := range 2 {
		if set[d] {
			js.BSRange[d] = ranges[d]
		}
	}
	return nil
}

// splitEntry is one parsed ":"-separated entry of bssplit or a zoned
// distribution: VAL1[/VAL2]; val2 is -1 when missing (or 0, for the
// percentage forms, as fio's atoi gives).
type splitEntry struct {
	val1, val2 int64
}

// parseSplit parses one direction's "A/B:C/D:..." list as fio's
// split_parse_ddir does: val1 is a size (or a plain number read as one);
// val2 is a percentage (atoi, capped at 100, 0 or missing meaning
// "missing"), or with absolute a size (missing: 0).
func parseSplit(raw, list string, kb int64, absolute bool, maxEntries int) ([]splitEntry, error) {
	var out []splitEntry
	for _, e := range strings.Split(list, ":") {
		if e == "" {
			break
		}
		a, b, hasB := strings.Cut(e, "/")
		v1, err := parseSizeKB(a, kb)
		if err != nil {
			return nil, err
		}
		v2 := int64(-1)
		switch {
		case absolute && hasB:
			if v2, err = parseSizeKB(b, kb); err != nil {
				return nil, err
			}
		case absolute:
			v2 = 0
		case hasB:
			if b != "" {
				n, err := parseInteger(b)
				if err != nil {
					return nil, badValue(raw, "percentage %q is not an integer", b)
				}
				v2 = min(n, 100)
				if v2 == 0 {
					v2 = -1
				}
			}
		}
		out = append(out, splitEntry{v1, v2})
		if len(out) == maxEntries {
			return nil, badValue(raw, "more than %d entries", maxEntries-1)
		}
	}
	return out, nil
}

// splitDirs splits a per-direction list "READ,WRITE[,TRIM]" as fio's
// str_split_parse does: without a comma the list is for every direction.
func splitDirs(raw string) (lists [2]string, err error) {
	parts := strings.Split(raw, ",")
	switch len(parts) {
	case 1:
		return [2]string{raw, raw}, nil
	case 2, 3:
		return [2]string{parts[0], parts[1]}, nil
	}
	return lists, badValue(raw, "at most three comma-separated lists (read,write,trim)")
}

// setBSSplit parses bssplit= (fio options.c bssplit_ddir).
func setBSSplit(js *JobSpec, v optionValue) error {
	lists, err := splitDirs(v.Raw)
	if err != nil {
		return err
	}
	var out [2][]BSSplitEntry
	for d, list := range lists {
		entries, err := parseSplit(v.Raw, list, v.KB(), false, 65)
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			continue
		}
		perc, missing := 0, 0
		for _, e := range entries {
			if e.val1 == 0 {
				return badValue(v.Raw, "block size must be positive")
			}
			if e.val2 < 0 {
				missing++
			} else {
				perc += int(e.val2)
			}
		}
		if perc > 100 && missing > 1 {
			return badValue(v.Raw, "bssplit percentages add to more than 100%%")
		}
		split := make([]BSSplitEntry, len(entries))
		for i, e := range entries {
			p := int(e.val2)
			if e.val2 < 0 {
				// The entries without a percentage share what is left.
				p = max(100-perc, 0) / missing
			}
			split[i] = BSSplitEntry{BS: e.val1, Percent: p}
		}
		// fio sorts the entries by percentage (a stable sort); a draw
		// whose entry does not fit before the region's end takes the next
		// one that does (pickBSIn).
		slices.SortStableFunc(split, func(a, b BSSplitEntry) int { return a.Percent - b.Percent })
		out[d] = split
	}
	if out[0] == nil && out[1] == nil {
		return badValue(v.Raw, "expected %s", bssplitExpect)
	}
	for d := range 2 {
		if out[d] != nil {
			js.BSSplit[d] = out[d]
		}
	}
	return nil
}

// Default parameters of fio's distributions (fio.h FIO_DEF_ZIPF,
// FIO_DEF_PARETO).
const (
	defZipfTheta = 1.1
	defParetoH   = 0.2
)

// setDistribution parses random_distribution= (fio options.c
// str_random_distribution_cb, parse_zoned_distribution).
func setDistribution(js *JobSpec, v optionValue) error {
	raw := v.Raw
	kind, rest, _ := strings.Cut(raw, ":")
	var d Distribution
	switch kind {
	case "random":
		if rest != "" {
			return badValue(raw, "random takes no parameter")
		}
		js.Distribution = [2]Distribution{}
		return nil
	case "zipf", "pareto", "normal":
		switch kind {
		case "zipf":
			d = Distribution{Kind: DistZipf, Param: defZipfTheta}
		case "pareto":
			d = Distribution{Kind: DistPareto, Param: defParetoH}
		default:
			d = Distribution{Kind: DistNormal}
		}
		var err error
		d.Param, d.Center, d.HasCenter, err = parseDistParams(raw, kind, rest, d.Param, distExpect)
		if err != nil {
			return err
		}
		js.Distribution = [2]Distribution{d, d}
		return nil
	case "zoned", "zoned_abs":
		abs := kind == "zoned_abs"
		lists, err := splitDirs(rest)
		if err != nil {
			return err
		}
		var out [2]Distribution
		for dir, list := range lists {
			zd, err := parseZones(raw, list, v.KB(), abs)
			if err != nil {
				return err
			}
			out[dir] = zd
		}
		if out[0].Zones == nil && out[1].Zones == nil {
			return badValue(raw, "expected %s", distExpect)
		}
		for dir := range 2 {
			if out[dir].Zones == nil {
				out[dir] = Distribution{}
			}
		}
		js.Distribution = out
		return nil
	}
	if kind == "sequence" || kind == "gauss" {
		return notModelled("random_distribution=%s is not modelled by blksim", kind)
	}
	return badValue(raw, "expected %s", distExpect)
}

// parseDistParams parses the ":PARAM[:CENTER]" that follows zipf, pareto
// and normal (rest, without the first colon; "" keeps param, the
// default) and checks the values as fio does (options.c
// split_parse_distr, str_random_distribution_cb, str_fst_cb). expect
// describes the whole option for the error of a value that is not a
// number.
func parseDistParams(raw, kind, rest string, param float64, expect string) (p, center float64, hasCenter bool, err error) {
	p = param
	if rest != "" {
		ps, cs, hasC := strings.Cut(rest, ":")
		f, ok := parseFloat(ps)
		if !ok {
			return 0, 0, false, badValue(raw, "expected %s", expect)
		}
		p = f
		if hasC {
			if center, ok = parseFloat(cs); !ok || center > 1 {
				return 0, 0, false, badValue(raw, "the distribution's center must be from 0 to 1")
			}
			hasCenter = true
		}
	}
	switch {
	case kind == "zipf" && p == 1:
		return 0, 0, false, badValue(raw, "zipf theta must be different from 1.0")
	case kind == "pareto" && (p <= 0 || p >= 1):
		return 0, 0, false, badValue(raw, "pareto input must be between 0 and 1 (exclusive)")
	case (kind == "normal" || kind == "gauss") && p >= 100:
		return 0, 0, false, badValue(raw, "normal deviation must be from 0 to below 100")
	}
	return p, center, hasCenter, nil
}

// setFileService parses file_service_type= (fio options.c str_fst_cb):
// roundrobin, sequential and random take ":N", the IOs to issue to a file
// before choosing the next (fio reads it with atoi; blksim wants an
// integer >= 1); zipf, pareto and normal (gauss) take their distribution's
// parameter and center, as random_distribution= does.
func setFileService(js *JobSpec, v optionValue) error {
	raw := v.Raw
	kind, rest, hasRest := strings.Cut(raw, ":")
	fs := FileService{}
	switch kind {
	case "roundrobin", "sequential", "random":
		switch kind {
		case "sequential":
			fs.Kind = FileServiceSequential
		case "random":
			fs.Kind = FileServiceRandom
		}
		if hasRest {
			n, err := parseInteger(rest)
			if err != nil || n < 1 || n > math.MaxInt32 {
				return badValue(raw, "the :N of %s is the number of IOs to issue to a file before switching, an integer >= 1", kind)
			}
			fs.Switch = int(n)
		}
	case "zipf", "pareto", "normal", "gauss":
		switch kind {
		case "zipf":
			fs.Kind, fs.Param = FileServiceZipf, defZipfTheta
		case "pareto":
			fs.Kind, fs.Param = FileServicePareto, defParetoH
		default:
			fs.Kind = FileServiceNormal
		}
		if hasRest && rest == "" {
			return badValue(raw, "expected %s", fileServiceExpect)
		}
		var err error
		fs.Param, fs.Center, fs.HasCenter, err = parseDistParams(raw, kind, rest, fs.Param, fileServiceExpect)
		if err != nil {
			return err
		}
	default:
		return badValue(raw, "expected %s", fileServiceExpect)
	}
	js.FileService = fs
	return nil
}

// parseZones parses one direction's zone list (fio zone_split_ddir).
func parseZones(raw, list string, kb int64, abs bool) (Distribution, error) {
	entries, err := parseSplit(raw, list, kb, abs, 257)
	if err != nil {
		return Distribution{}, err
	}
	if len(entries) == 0 {
		return Distribution{}, nil
	}
	perc, sperc, smissing := 0, 0, 0
	for _, e := range entries {
		if e.val1 > 100 {
			return Distribution{}, badValue(raw, "an access percentage must be at most 100")
		}
		perc += int(e.val1)
		if !abs {
			if e.val2 < 0 {
				smissing++
			} else {
				sperc += int(e.val2)
			}
		}
	}
	if perc > 100 || sperc > 100 {
		return Distribution{}, badValue(raw, "zone percentages add to more than 100%%")
	}
	if perc < 100 {
		return Distribution{}, badValue(raw, "access percentages add up to %d, not 100", perc)
	}
	d := Distribution{Kind: DistZoned}
	if abs {
		d.Kind = DistZonedAbs
	}
	d.Zones = make([]Zone, len(entries))
	for i, e := range entries {
		z := Zone{AccessPercent: int(e.val1)}
		switch {
		case abs:
			z.Size = e.val2
		case e.val2 < 0:
			z.SizePercent = (100 - sperc) / smissing
		default:
			z.SizePercent = int(e.val2)
		}
		d.Zones[i] = z
	}
	return d, nil
}

// rejectTrue is the setter of a boolean option blksim does not model when
// it is on: true fails with msg (notModelled), false is fio's default and
// changes nothing.
func rejectTrue(msg string) func(*JobSpec, optionValue) error {
	return func(_ *JobSpec, v optionValue) error {
		if v.Bool {
			return notModelled("%s", msg)
		}
		return nil
	}
}

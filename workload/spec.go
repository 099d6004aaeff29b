package workload

import (
	"fmt"
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

// OptionValue is one option as a job file or the command line gave it:
// fio's name for the option (an alias is reported under it: blockalign
// as ba) and the value as written after ${VAR} expansion, "" for a flag
// given bare.
type OptionValue struct {
	Name, Value string
}

// fio's error types (td_error.h enum error_type), the bits of
// JobSpec.ContinueOnError.
const (
	ErrorTypeRead   = 1 << 0
	ErrorTypeWrite  = 1 << 1
	ErrorTypeVerify = 1 << 2
	ErrorTypeAny    = 0xffff
)

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
	// where is where each option the job has (by table name) was set,
	// its own section's or [global]'s, for errors about it.
	where map[string]optPos
	// Options are the options the job's own section (or the command
	// line: its --name, then the options after it) gave, in the order
	// fio parses them (in a job file kb_base first and filename last), and
	// GlobalOptions those of [global] sections and of the command line
	// outside jobs (options that override a job file's included): what
	// fio's JSON "job options" and "global options" are made of (the
	// report leaves bare flags out, as fio does).
	Options, GlobalOptions []OptionValue

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
	// 1. A synchronous engine keeps one IO in flight whatever it says;
	// as in fio, the value stays as given for the reports (the job line's
	// iodepth=, the latency line's depth=).
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
	// Direct is O_DIRECT (direct=1, or buffered=0). Buffered jobs
	// (direct=0, fio's default) go through the page cache; they need a
	// sync engine.
	Direct bool
	// Fsync and Fdatasync issue an fsync (fdatasync) after every that many
	// writes (0: never), as the loop's next IO; EndFsync fsyncs each file
	// at the end of every loop of a job that writes.
	Fsync, Fdatasync int
	EndFsync         bool
	// Invalidate drops the file's clean cached pages before the job
	// starts (fio's default, invalidate=1).
	Invalidate bool
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
	// DisableLat, DisableClat and DisableSlat are fio's disable_lat,
	// disable_clat and disable_slat: the job records no total, completion
	// or submission latencies (nor, without clat, the latency
	// distribution). NoClatPercentiles is clat_percentiles=0: reports
	// leave out the completion latency percentiles. gtod_reduce=1 sets all
	// four, as in fio.
	DisableLat, DisableClat, DisableSlat bool
	NoClatPercentiles                    bool
	// UnifiedRW is fio's unified_rw_reporting: 0 (none) reports reads and
	// writes apart, 1 (mixed) reports them summed as one "mixed"
	// direction, 2 (both) reports them apart and then summed.
	UnifiedRW int
	// Strided is fio's zonemode=strided: the job's IO goes to zones of
	// ZoneRange bytes (zonerange; zonesize if not given), ZoneSize bytes
	// of IO (zonesize) in each before it moves on to the next zone,
	// ZoneRange + ZoneSkip (zoneskip) further into the file, starting
	// over at the region's start past its end. Within a zone the IO is
	// sequential or random as usual, over the zone. ZoneSize without
	// Strided is bad input, as in fio (zonemode=none).
	Strided                       bool
	ZoneSize, ZoneRange, ZoneSkip int64
	// Percentiles is fio's percentile_list: the percentiles the reports
	// show, ascending (nil: fio's default list); PercentilePrecision the
	// decimals they are printed with, the most any value was written
	// with (fio's percentile_precision; 2 for the default list).
	Percentiles         []float64
	PercentilePrecision int
	// KBBase is kb_base, 1000 or 1024 (0: fio's default, 1024): the
	// base sizes are read with and the units reported first.
	KBBase int64
	// ExitAllOnError is fio's exitall_on_error: when the job ends with an
	// error, every other job is told to end.
	ExitAllOnError bool
	// ContinueOnError is fio's continue_on_error as its bit mask of error
	// types (td_error.h): ErrorTypeRead, ErrorTypeWrite (writes and
	// fsyncs), ErrorTypeVerify; 0 is none. An IO that fails with an error
	// of a type in the mask, and one of fio's non-fatal errnos (EIO,
	// EILSEQ), is counted (JobResult.TotalErr) and the job goes on; any
	// other error ends the job.
	ContinueOnError int
	// GroupReporting reports the job's clones as one.
	GroupReporting bool

	// The fields below are zero unless the job file sets them; their zero
	// values are fio's defaults.

	// Description is fio's description= text.
	Description string
	// Directory is fio's directory=: the directory of the job's files,
	// which it prefixes to their names.
	Directory string
	// FilenameFormat is fio's filename_format= for jobs without filename=;
	// "" is fio's default "$jobname.$jobnum.$filenum".
	FilenameFormat string
	// NrFiles is fio's nrfiles= (nr_files): how many files the job spreads
	// its IO over, named by FilenameFormat with $filenum 0, 1, ...; 0
	// means 1. Size is the total of the files (each gets Size/NrFiles, the
	// first ones a block more when it does not divide), unless FileSize
	// gives each its own size. A job with filename= has that one file and
	// ignores NrFiles, as fio does.
	NrFiles int
	// OpenFiles is fio's openfiles=: how many of the job's files may be
	// open at once (a file is opened when first serviced and closed when
	// the job is done with it); 0, or more than NrFiles, means all.
	OpenFiles int
	// FileService is fio's file_service_type=: which of the job's files
	// the next IO goes to. The zero value is fio's default, roundrobin.
	FileService FileService
	// SizePercent is size= given as a percentage (1..100) of the file's
	// size, FileSize; Size is then 0. Without FileSize the job's setup
	// fails, as fio's does for a file that does not exist yet.
	SizePercent int
	// FileSize is fio's filesize=: the size of the job's file, a range
	// [min, max] from which each clone draws its own (equal ends for a
	// fixed size); zero when not given. With it the file is FileSize long,
	// the IO region runs from the offset to the file's end, and Size only
	// limits how many bytes are transferred.
	FileSize [2]int64
	// IOSize is fio's io_size= (io_limit): the bytes to transfer per loop,
	// which may be more than the region (offsets wrap) or less; 0 means
	// Size.
	IOSize int64
	// NumberIOs is fio's number_ios=: a loop also ends after this many
	// IOs; 0 means no limit.
	NumberIOs int64
	// Offset is fio's offset=: where the IO region starts in the file.
	// OffsetPercent, when not 0, gives it as a percentage of the file size
	// instead (aligned down to the block size).
	Offset        int64
	OffsetPercent int
	// OffsetIncrement is fio's offset_increment=: clone N of the job starts
	// N*OffsetIncrement further. OffsetIncrementPercent gives it as a
	// percentage of the file size instead.
	OffsetIncrement        int64
	OffsetIncrementPercent int
	// FillDevice is fio's fill_device= (fill_fs): the file takes all the
	// device's free space and the job runs until it has covered it; it
	// overrides Size.
	FillDevice bool

	// BSRange is fio's bsrange=: per direction (read, write) the smallest
	// and largest block size, each IO drawing its size from the range (a
	// multiple of the smallest); zero for a direction that has none, which
	// then uses BS.
	BSRange [2][2]int64
	// BSSplit is fio's bssplit=: per direction the block sizes and the
	// share of IOs of each, by increasing share as fio sorts them; nil for
	// a direction that has none. It takes precedence over BSRange and BS,
	// as in fio.
	BSSplit [2][]BSSplitEntry
	// BlockAlign is fio's blockalign= (ba): per direction the alignment of
	// random offsets; 0 means the smallest block size in use.
	BlockAlign [2]int64

	// SeqAdd is the N of rw=read:N, rw=write:N and rw=rw:N: bytes added to
	// each sequential offset after the previous IO's end (negative reads
	// backwards); 0 for none.
	SeqAdd int64
	// SeqNr is the N of rw=randread:N and the other random modes: a new
	// random offset every N IOs, the IOs in between following on as
	// RWSequencer says; 0 means 1 (every IO random).
	SeqNr int
	// RWSequencerIdentical is fio's rw_sequencer=identical: the IOs between
	// two random offsets of SeqNr repeat the last offset instead of
	// following it.
	RWSequencerIdentical bool
	// NoRandomMap is fio's norandommap: random offsets may repeat within a
	// pass over the region.
	NoRandomMap bool
	// PercentSequential is 100 minus fio's percentage_random=, per
	// direction: the share of a random job's IOs that follow on from the
	// previous IO instead.
	PercentSequential [2]int
	// Distribution is fio's random_distribution= per direction; the zero
	// value is uniform (random).
	Distribution [2]Distribution
	// RandomGenerator is fio's random_generator=: "" (tausworthe, the
	// default; blksim draws from its own seeded generator), "tausworthe64"
	// (the same) or "lfsr" (each block once per pass, without a map).
	RandomGenerator string
	// NoRandRepeat is fio's randrepeat=0: the job's random stream depends
	// on the run's seed only, not on randseed.
	NoRandRepeat bool

	// Rate is fio's rate= per direction in bytes per second; 0 means no
	// limit. RateIOPS is rate_iops=, in IOs per second.
	Rate     [2]int64
	RateIOPS [2]int64
	// RateMin is fio's rate_min= (ratemin) per direction in bytes per
	// second, and RateIOPSMin is rate_iops_min=: a job that falls below
	// either over a RateCycle fails, as fio's does.
	RateMin     [2]int64
	RateIOPSMin [2]int64
	// RateCycle is fio's rate_cycle= (ratecycle): the period over which
	// RateMin is checked; 0 means fio's 1s.
	RateCycle time.Duration
	// RatePoisson is fio's rate_process=poisson: exponentially distributed
	// gaps between IOs instead of even ones.
	RatePoisson bool
	// SubmitOffload is fio's io_submit_mode=offload: the job keeps its
	// rate without first waiting for its IOs in flight.
	SubmitOffload bool
	// Fallocate is fallocate=: "native" (or "", the default), "posix",
	// "keep", "truncate" or "none" (0 is none, 1 posix). It decides how a
	// buffered file the job writes first is set up: native and posix
	// preallocate it (fsmodel.File.Preallocate), truncate only sizes it,
	// keep preallocates it without sizing it and none does neither; a file
	// left at size 0 by keep or none is laid out whole by a later job
	// that reads it, as fio's setup of that job does.
	Fallocate string

	// ThinkTime is fio's thinktime=: the job stalls this long after every
	// ThinkTimeBlocks IOs (0 means 1), spinning on a CPU for the first
	// ThinkTimeSpin of it (thinktime_spin) and sleeping for the rest.
	// ThinkTimeIssue is thinktime_blocks_type=issue (count issued IOs
	// instead of completed ones).
	ThinkTime       time.Duration
	ThinkTimeSpin   time.Duration
	ThinkTimeBlocks int
	ThinkTimeIssue  bool
	// BWAvgTime and IOPSAvgTime are fio's bwavgtime and iopsavgtime (in
	// whole milliseconds in a job file): the intervals of the job's
	// bandwidth and IOPS samples (DirStats.BW and IOPS); 0 means fio's
	// default, 500 ms.
	BWAvgTime, IOPSAvgTime time.Duration
	// DisableBW is fio's disable_bw_measurement (disable_bw), which
	// gtod_reduce=1 sets too. fio 3.33 takes its interval bandwidth
	// samples all the same; it only stops the per-IO bandwidth samples
	// (and log entries) of a write_bw_log job without log_avg_msec.
	DisableBW bool
	// Logs are fio's log file options: write_bw_log, write_lat_log,
	// write_iops_log, write_hist_log and the options that shape them.
	Logs LogOptions
	// StartDelay is fio's startdelay=: the job starts this long after the
	// run does, a range [min, max] from which each clone draws its own.
	StartDelay [2]time.Duration
	// Loops is fio's loops=: how many times the job runs its workload;
	// 0 means 1.
	Loops int
	// ExitAll is fio's exitall: when this job ends, the jobs ExitWhat names
	// end too. ExitWhat is fio's exit_what=: "" or "group" (the jobs of
	// this job's group), "stonewall" (every running job) or "all".
	ExitAll  bool
	ExitWhat string
	// Stonewall is fio's stonewall (wait_for_previous): the job starts when
	// every job before it has ended, and starts a new reporting group.
	// NewGroup is fio's new_group: a new reporting group without waiting.
	Stonewall bool
	NewGroup  bool
	// WaitFor is fio's wait_for=: the job starts when every job of that
	// name (defined earlier) has ended.
	WaitFor string

	// Verify is fio's verify= checksum type ("" for none). blksim carries
	// data as stamps, so every type checks the same thing: that each
	// sector read back holds what this job (or, for a job that only reads,
	// some verifying writer) last wrote there; "null" reads back without
	// checking, as fio's pretend mode does.
	Verify string
	// NoDoVerify is fio's do_verify=0: no verify phase after the writes.
	NoDoVerify bool
	// VerifyOnly is fio's verify_only: the job issues no writes; it reads
	// back and checks what its writes would have covered.
	VerifyOnly bool
	// VerifyFatal is fio's verify_fatal: stop at the first bad block
	// instead of checking everything first.
	VerifyFatal bool
	// VerifyBacklog is fio's verify_backlog=: verify after every this many
	// writes instead of after the write phase; VerifyBacklogBatch is
	// verify_backlog_batch= (0 means VerifyBacklog).
	VerifyBacklog      int64
	VerifyBacklogBatch int64
}

// BSSplitEntry is one entry of fio's bssplit=: a block size and the
// percentage of IOs that use it.
type BSSplitEntry struct {
	BS      int64
	Percent int
}

// FileServiceKind is the kind of a file_service_type=.
type FileServiceKind int

const (
	// FileServiceRoundRobin takes the job's files in turn (fio's default,
	// roundrobin).
	FileServiceRoundRobin FileServiceKind = iota
	// FileServiceSequential finishes a file before moving on to the next
	// (sequential).
	FileServiceSequential
	// FileServiceRandom picks a file uniformly at random (random).
	FileServiceRandom
	// FileServiceZipf picks a file from a zipf distribution (zipf).
	FileServiceZipf
	// FileServicePareto picks a file from a pareto distribution (pareto).
	FileServicePareto
	// FileServiceNormal picks a file from fio's normal distribution
	// (normal, or its alias gauss).
	FileServiceNormal
)

var fileServiceNames = [...]string{"roundrobin", "sequential", "random", "zipf", "pareto", "normal"}

// String returns fio's name of k.
func (k FileServiceKind) String() string {
	if k >= 0 && int(k) < len(fileServiceNames) {
		return fileServiceNames[k]
	}
	return fmt.Sprintf("FileServiceKind(%d)", int(k))
}

// NonUniform reports whether k draws files from a skewed distribution.
// fio never finishes with a file then: a file whose region is used up
// starts over (io_u.c set_io_u_file), and the job ends by its size.
func (k FileServiceKind) NonUniform() bool {
	return k == FileServiceZipf || k == FileServicePareto || k == FileServiceNormal
}

// FileService is a file_service_type=.
type FileService struct {
	// Kind is how the next file is chosen.
	Kind FileServiceKind
	// Switch is the :N of roundrobin and random: how many IOs go to a file
	// before the next one is chosen; 0 means 1. sequential accepts it and,
	// as in fio, stays on a file until it is done whatever it says.
	Switch int
	// Param is zipf's theta (default 1.1), pareto's h (default 0.2) or
	// normal's deviation as a percentage of the files (default 0); Center,
	// when HasCenter, moves the most likely file to that fraction (0..1)
	// of the files.
	Param     float64
	Center    float64
	HasCenter bool
}

// DistKind is the kind of a random_distribution=.
type DistKind int

const (
	// DistRandom is a uniform distribution (fio's default, "random").
	DistRandom DistKind = iota
	// DistZipf is fio's zipf:theta.
	DistZipf
	// DistPareto is fio's pareto:h.
	DistPareto
	// DistNormal is fio's normal:sigma (a percentage of the region).
	DistNormal
	// DistZoned is fio's zoned:access/range:... with ranges in percent.
	DistZoned
	// DistZonedAbs is fio's zoned_abs:access/size:... with sizes in bytes.
	DistZonedAbs
)

var distNames = [...]string{"random", "zipf", "pareto", "normal", "zoned", "zoned_abs"}

// String returns fio's name of k.
func (k DistKind) String() string {
	if k >= 0 && int(k) < len(distNames) {
		return distNames[k]
	}
	return fmt.Sprintf("DistKind(%d)", int(k))
}

// Distribution is a random_distribution= for one direction.
type Distribution struct {
	// Kind is the distribution.
	Kind DistKind
	// Param is zipf's theta, pareto's h or normal's deviation in percent.
	Param float64
	// Center, when HasCenter, moves the distribution's most likely value
	// to this fraction (0..1) of the region (fio's optional second
	// value).
	Center    float64
	HasCenter bool
	// Zones are a zoned or zoned_abs distribution's zones, in order.
	Zones []Zone
}

// Zone is one zone of a zoned distribution: AccessPercent of the IOs go to
// the next SizePercent of the region (zoned) or the next Size bytes
// (zoned_abs).
type Zone struct {
	AccessPercent int
	SizePercent   int
	Size          int64
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
		// fio's invalidate=1
		Invalidate: true,

		IODepthBatchSubmit:      1,
		IODepthBatchCompleteMin: 1,
	}
}

// Command blksim runs fio job files on a simulated Linux IO stack.
//
//	blksim run [--stack FILE] [--set KEY=VALUE]... [--seed N]
//	           [--output-format normal|terse|json|json+[,...]] [--terse-version N] [--minimal]
//	           [--append-terse] [--output FILE] [--blktrace DIR] [--layout] [--cpuprofile FILE]
//	           [--eta always|never|auto] [--eta-newline TIME] [--eta-interval TIME]
//	           [--device file:PATH[,size=N]|blk:/dev/NAME [--force]]
//	           [--FIO-OPTION[=VALUE]]... [JOBFILE]
//	blksim compare [JOBFILE] --variant NAME:KEY=VALUE[,KEY=VALUE]... [--variant ...]
//	           [--sweep KEY=V1,V2,...] [--stack FILE] [--set KEY=VALUE]...
//	           [--seed N] [--output-format normal|json] [--output FILE]
//	blksim reproduce [NAME]... [--dir DIR] [--seed N] [--parallel N]
//	           [--output-format normal|json] [--output FILE]
//	blksim keys
//	blksim calibrate TARGET [--out FILE] [--measure direct|engine] [--time D]
//	           [--repeat N] [--region SIZE] [--set wall.KEY=VALUE]... [--force]
//
// Without JOBFILE, run and compare use the embedded default: the ext4
// parallel-DIO experiment (testdata/experiments/ext4-dio) with BS=4k unless
// BS is set. Any other --NAME=VALUE (or --NAME) of run is an fio job
// option, as on fio's command line: with --name=JOB among them they define
// the jobs (options before the first --name are global); otherwise each
// overrides that option in every job of the job file (or the default job),
// so "blksim run --runtime=1 --size=16m FILE" runs any job file short.
// compare runs every variant (stack keys, or env.NAME for a
// job-file ${NAME}, over the base stack) at every sweep value and prints
// one table; reproduce runs the shipped experiments
// (testdata/experiments/*/published.toml) and compares them with the
// published numbers; calibrate measures a real target and writes a device
// profile fitted to it. --output FILE writes the output to FILE,
// atomically, once it is complete. run also writes the log files of jobs
// with fio's write_bw_log, write_lat_log, write_iops_log or
// write_hist_log, under fio's names, once the run is over: all of them or
// none (a log file that cannot be written is bad input, found before the
// run). Bad input exits with status 2 and one message naming
// the file and line, or the key; a failed run exits 1, as does a reproduce
// run with a row outside its tolerance.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime/pprof"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/blksim/blksim"
	"github.com/blksim/blksim/blockdev/blktrace"
	"github.com/blksim/blksim/fsmodel"
	"github.com/blksim/blksim/internal/units"
	"github.com/blksim/blksim/report"
	"github.com/blksim/blksim/stack"
	"github.com/blksim/blksim/workload"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailed  = 1
	exitBadArgs = 2
)

// defaultJob is the embedded job the README's main command runs.
const defaultJob = "testdata/experiments/ext4-dio/ext4-dio.fio"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv))
}

// usageError is bad input: exit status 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func bad(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func run(args []string, stdout, stderr io.Writer, env func(string) (string, bool)) (status int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "blksim: internal error: %v\n", r)
			status = exitFailed
		}
	}()
	if len(args) == 0 {
		usage(stderr)
		return exitBadArgs
	}
	var err error
	switch args[0] {
	case "run":
		err = cmdRun(args[1:], stdout, env)
	case "compare":
		err = cmdCompare(args[1:], stdout, env)
	case "reproduce":
		err = cmdReproduce(args[1:], stdout, env)
	case "keys":
		err = cmdKeys(args[1:], stdout)
	case "calibrate":
		err = cmdCalibrate(args[1:], stdout)
	case "help", "-h", "--help":
		usage(stdout)
		return exitOK
	default:
		err = bad("unknown command %q (want run, compare, reproduce, calibrate or keys)", args[0])
	}
	if err == nil {
		return exitOK
	}
	var jf *jobFailedError
	if errors.As(err, &jf) {
		for _, l := range jf.log {
			fmt.Fprintln(stderr, l)
		}
	}
	fmt.Fprintf(stderr, "blksim: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitBadArgs
	}
	if errors.As(err, new(interruptedError)) {
		return exitInterrupted
	}
	return exitFailed
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  blksim run [--stack FILE] [--set KEY=VALUE]... [--seed N]
             [--output-format normal|terse|json|json+[,...]] [--terse-version 2|3|4|5] [--minimal]
             [--append-terse] [--output FILE] [--blktrace DIR] [--layout] [--cpuprofile FILE]
             [--eta always|never|auto] [--eta-newline TIME] [--eta-interval TIME]
             [--FIO-OPTION[=VALUE]]... [JOBFILE]
      run a fio job file on a simulated stack (default: the embedded
      ext4 parallel-DIO experiment, BS=4k). Other --NAME=VALUE options are
      fio job options: with --name=JOB they define jobs as on fio's command
      line; otherwise they override that option in every job of the file.
      --layout prints each file's extents on the device after the results;
      --cpuprofile writes a Go CPU profile of blksim itself; fio's --eta
      flags are taken and change nothing (no ETA line is printed), and
      --status-interval (periodic reports) is rejected
  blksim compare [JOBFILE] --variant NAME:KEY=VALUE[,KEY=VALUE]... [--variant ...]
             [--sweep KEY=V1,V2,...] [--stack FILE] [--set KEY=VALUE]... [--seed N]
             [--output-format normal|json] [--output FILE]
      run the job once per variant (stack keys over the base stack; env.NAME
      sets the job file's ${NAME}) and per sweep value, and print one table:
      READ/WRITE MiB/s, IOPS and mean latency per variant, and each
      variant's bandwidth as a multiple of the first's
  blksim reproduce [NAME]... [--dir DIR] [--seed N] [--parallel N]
             [--output-format normal|json] [--output FILE]
      run the shipped experiments (or those named) and print the published
      numbers beside the simulated ones; exit status 1 if a row is off by
      more than its tolerance. --dir reads experiments from DIR instead
  blksim keys
      list the stack keys, their defaults and meanings
  blksim run --device file:PATH[,size=N]|blk:/dev/NAME [--force] ...
      run the stack over a real O_DIRECT target on the wall clock
  blksim calibrate TARGET [--out FILE] [--measure direct|engine] [--time D]
                   [--repeat N] [--region SIZE] [--set wall.KEY=VALUE]... [--force]
      measure a real target (latency by size alone, 4k IO by depth, larger
      IO at depth, a read/write mix; N interleaved runs each, medians) and
      write a flat device profile fitted to it (and FILE.stack.toml) whose
      simulation predicts real runs: fio's (--measure direct, timed as fio
      times IO) or blksim run --device's (--measure engine)
`)
}

// multiFlag collects repeated --set flags.
type multiFlag []string

func (m *multiFlag) String() string     { return fmt.Sprint(*m) }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// runFlags are blksim's own flags of the run command, and whether each
// takes a value; every other --NAME[=VALUE] is an fio job option.
var runFlags = map[string]bool{
	"stack": true, "set": true, "seed": true, "output-format": true, "output": true,
	"blktrace": true, "cpuprofile": true, "layout": false, "h": false, "help": false,
	"minimal": false, "append-terse": false, "terse-version": true,
	"device": true, "force": false,
	"eta": true, "eta-newline": true, "eta-interval": true, "status-interval": true,
}

// splitRunArgs separates the run command's arguments into blksim's own
// flags (for the flag package), fio job options (--NAME=VALUE or --NAME,
// as fio takes them on its command line) and positional arguments. Flags
// and options may come before or after the job file; everything after
// "--" is positional.
func splitRunArgs(args []string) (flags []string, fio []workload.CommandLineOption, pos []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, fio, append(pos, args[i+1:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if takesValue, ok := runFlags[name]; ok {
			flags = append(flags, a)
			if takesValue && !hasValue && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
			continue
		}
		fio = append(fio, workload.CommandLineOption{Name: name, Value: value, HasValue: hasValue})
	}
	return flags, fio, pos
}

func cmdRun(args []string, stdout io.Writer, env func(string) (string, bool)) error {
	fl := flag.NewFlagSet("run", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	stackFile := fl.String("stack", "", "stack TOML file")
	var sets multiFlag
	fl.Var(&sets, "set", "override a stack key: KEY=VALUE (repeatable)")
	seed := fl.Uint64("seed", 1, "engine seed")
	format := fl.String("output-format", "normal", "normal, terse, json or json+ (json with latency buckets), or several separated by commas")
	minimal := fl.Bool("minimal", false, "fio's --minimal: terse output only")
	appendTerse := fl.Bool("append-terse", false, "fio's --append-terse: terse output as well")
	terseVersion := fl.Int("terse-version", report.DefaultTerseVersion, "terse format version: 2, 3, 4 or 5")
	cpuprofile := fl.String("cpuprofile", "", "write a Go CPU profile of the run to this file")
	traceDir := fl.String("blktrace", "", "write blktrace files (<device>.blktrace.<cpu>) for blkparse/btt to this directory")
	layout := fl.Bool("layout", false, "after the results, print each file's extents on the device")
	output := fl.String("output", "", "write the output to this file")
	eta := fl.String("eta", "auto", "fio's --eta: always, never or auto (blksim prints no ETA line)")
	fl.String("eta-newline", "", "fio's --eta-newline=TIME (no ETA line is printed)")
	fl.String("eta-interval", "", "fio's --eta-interval=TIME (no ETA line is printed)")
	fl.String("status-interval", "", "fio's --status-interval=TIME: not modelled")
	realFl := addRealFlags(fl)
	flagArgs, fioOpts, pos := splitRunArgs(args)
	if err := fl.Parse(flagArgs); err != nil {
		// Fix (tests): "run -h" failed with "flag: help requested".
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return nil
		}
		return bad("run: %v", err)
	}
	formats, err := parseOutputFormats(*format)
	if err != nil {
		return err
	}
	if err := checkProgressFlags(fl, *eta); err != nil {
		return err
	}
	if *minimal {
		formats = outputFormats{terse: true}
	}
	formats.terse = formats.terse || *appendTerse
	if *terseVersion < 2 || *terseVersion > 5 {
		return bad("run: --terse-version %d: want 2, 3, 4 or 5", *terseVersion)
	}
	if len(pos) > 1 {
		return bad("run: one job file expected, got %d", len(pos))
	}
	if err := checkOutputPath("run", *output); err != nil {
		return err
	}
	cfg := stack.Default()
	if *stackFile != "" {
		c, err := stack.Load(*stackFile)
		if err != nil {
			return usageError{err}
		}
		cfg = c
	}
	for _, s := range sets {
		if err := cfg.SetArg(s); err != nil {
			return usageError{err}
		}
	}
	if err := realFl.apply(cfg); err != nil {
		return err
	}
	popt := workload.ParseOptions{Env: env, Overrides: fioOpts, Host: simulatedHost(cfg)}
	var specs []workload.JobSpec
	switch {
	case len(pos) == 1:
		specs, err = workload.ParseFileWith(pos[0], popt)
	case definesJob(fioOpts):
		// fio-style: the command line is the job file.
		specs, err = workload.ParseCommandLine(fioOpts, popt)
	default:
		specs, err = parseEmbeddedWith(defaultJob, popt)
	}
	if err != nil {
		return usageError{err}
	}
	// A log file that cannot be written is bad input, found before the
	// run.
	if err := workload.CheckLogFiles(specs, logPathChecker()); err != nil {
		return usageError{err}
	}
	st, err := stack.Build(cfg, *seed)
	if err != nil {
		return usageError{err}
	}
	defer st.Close()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return bad("run: --cpuprofile: %v", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return bad("run: --cpuprofile: %v", err)
		}
		defer pprof.StopCPUProfile()
	}
	var tracer *blktrace.Writer
	if *traceDir != "" {
		tracer, err = blktrace.New(*traceDir, st.Device.Name(), deviceNumber(st.Device.Name()))
		if err != nil {
			return bad("run: --blktrace: %v", err)
		}
		// A run that fails before the trace is closed leaves the
		// directory as it was (Abort is a no-op after Close).
		defer tracer.Abort()
		st.Queue.SetTracer(tracer)
	}
	wall := time.Now()
	// On a real device the run ends with its jobs, as fio does, rather
	// than wait in real time for periodic writeback.
	ropt := workload.RunOptions{AppPerIO: st.AppPerIO, NoIntegrity: !st.IntegrityCheck, EndWithJobs: st.Real != nil}
	defer watchInterrupt(st, &ropt)()
	res, err := workload.Run(st.Engine, st.FS, specs, ropt)
	if err != nil {
		var pe *workload.ParseError
		if errors.As(err, &pe) || errors.Is(err, workload.ErrJob) {
			return usageError{err}
		}
		return err
	}
	res.Engine.WallSeconds = time.Since(wall).Seconds()
	if tracer != nil {
		if err := tracer.Close(); err != nil {
			return fmt.Errorf("run: --blktrace: %w", err)
		}
	}
	addStackFigures(st, res)
	res.Seed = *seed
	// Render to memory first so a failure leaves nothing half-written.
	var out bytes.Buffer
	opt := report.Options{OmitWall: omitWall(env), Bins: formats.jsonPlus, TerseVersion: *terseVersion, Real: realReport(st)}
	// In fio's order: the lines fio prints as it starts the jobs (with
	// normal output only, after blksim's stack line), then terse, then
	// json, then the rest of normal.
	if formats.normal {
		out.WriteString(stackLine(st, cfg))
		if cfg.Get("pagecache.policy") == "tinylfu" {
			fmt.Fprintf(&out, "note: pagecache.policy=tinylfu uses ristretto's admission and eviction, which are not deterministic: the same job, stack and seed may give different results\n")
		}
		if err := report.WriteNormalHeader(&out, res); err != nil {
			return err
		}
	}
	if formats.terse {
		if err := report.WriteTerse(&out, res, opt); err != nil {
			return err
		}
	}
	if formats.json {
		if err := report.WriteJSON(&out, res, opt); err != nil {
			return err
		}
	}
	if formats.normal {
		if err := report.WriteNormalResults(&out, res, opt); err != nil {
			return err
		}
		if *layout {
			writeLayout(&out, st.FS)
		}
		writeRealStats(&out, st)
	}
	// Like fio, a run in which a job failed exits non-zero, its report
	// written all the same (to --output FILE too: a failed job's figures
	// and error are results).
	jobErr := failedJob(res)
	if jobErr == nil {
		jobErr = realRunError(st)
	}
	// The log files (write_bw_log, ...), as fio writes them for failed
	// jobs too; the report is written even if they cannot be.
	logErr := writeLogs(res.Logs)
	if err := emit(stdout, *output, out.Bytes()); err != nil {
		return err
	}
	if logErr != nil {
		return logErr
	}
	return jobErr
}

// checkProgressFlags checks fio's flags for its running output: --eta
// (always, never or auto), --eta-newline and --eta-interval (times) are
// taken and change nothing, as blksim prints no ETA line; --status-interval,
// fio's periodic full report, is not modelled and is rejected.
func checkProgressFlags(fl *flag.FlagSet, eta string) error {
	switch eta {
	case "always", "never", "auto":
	default:
		return bad("run: --eta %q: want always, never or auto", eta)
	}
	var err error
	fl.Visit(func(f *flag.Flag) {
		if err != nil {
			return
		}
		switch f.Name {
		case "eta-newline", "eta-interval":
			if _, perr := units.ParseDuration(f.Value.String()); perr != nil {
				err = bad("run: --%s %q: %v", f.Name, f.Value.String(), perr)
			}
		case "status-interval":
			err = bad("run: --status-interval %q: fio's periodic status reports are not modelled by blksim (it reports once, when the run is over)", f.Value.String())
		}
	})
	return err
}

// outputFormats are the outputs a run prints, from fio's
// --output-format list.
type outputFormats struct {
	normal, terse, json, jsonPlus bool
}

// parseOutputFormats parses fio's --output-format value: normal, terse,
// json or json+ (json with latency buckets), or several of them separated
// by commas, as fio 3.33 takes them.
func parseOutputFormats(s string) (outputFormats, error) {
	var f outputFormats
	for _, name := range strings.Split(s, ",") {
		switch name {
		case "normal":
			f.normal = true
		case "terse":
			f.terse = true
		case "json":
			f.json = true
		case "json+":
			f.json, f.jsonPlus = true, true
		default:
			return f, bad("run: --output-format %q: want normal, terse, json or json+, or several separated by commas", s)
		}
	}
	return f, nil
}

// deviceNumber picks the Linux major:minor a device of that name would
// have, so blkparse prints familiar numbers: nvme 259, mmcblk 179, null_blk
// 252, otherwise SCSI disks (8, as sd*/UFS).
func deviceNumber(name string) uint32 {
	switch {
	case strings.HasPrefix(name, "nvme"):
		return blktrace.Dev(259, 0)
	case strings.HasPrefix(name, "mmcblk"):
		return blktrace.Dev(179, 0)
	case strings.HasPrefix(name, "nullb"):
		return blktrace.Dev(252, 0)
	}
	return blktrace.Dev(8, 0)
}

// omitWall drops wall-clock figures (which differ run to run) when
// BLKSIM_DETERMINISTIC is set, so outputs can be compared byte for byte.
func omitWall(env func(string) (string, bool)) bool {
	v, ok := env("BLKSIM_DETERMINISTIC")
	return ok && v != "" && v != "0"
}

// simulatedHost is what fio's $ncpus and $mb_memory report on the stack
// cfg describes: host.cpus, and the memory the page cache may use
// (pagecache.limit), the simulated host's RAM as far as the stack models it.
func simulatedHost(cfg *stack.Config) workload.Host {
	var h workload.Host
	h.CPUs, _ = strconv.Atoi(cfg.Get("host.cpus"))
	if n, err := units.ParseSize(cfg.Get("pagecache.limit")); err == nil {
		h.MemoryMB = n >> 20
	}
	return h
}

// definesJob reports whether command-line fio options define a job
// (--name=...) rather than override the options of a job file's jobs.
func definesJob(opts []workload.CommandLineOption) bool {
	for _, o := range opts {
		if o.Name == "name" {
			return true
		}
	}
	return false
}

// parseEmbeddedWith parses a job file shipped in the binary with parse
// options (the command line's overrides, the host's facts); BS defaults
// to 4k for the default experiment.
func parseEmbeddedWith(name string, opt workload.ParseOptions) ([]workload.JobSpec, error) {
	data, err := fs.ReadFile(blksim.Testdata, name)
	if err != nil {
		return nil, err
	}
	env := opt.Env
	if env == nil {
		env = os.LookupEnv
	}
	withBS := func(k string) (string, bool) {
		if v, ok := env(k); ok {
			return v, true
		}
		if k == "BS" {
			return "4k", true
		}
		return "", false
	}
	opt.Env = withBS
	return workload.ParseWith("embedded:"+path.Base(name), bytes.NewReader(data), opt)
}

// cmdKeys prints every stack key with its default and meaning. It takes
// no arguments but -h/--help.
func cmdKeys(args []string, w io.Writer) error {
	if len(args) > 0 {
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			usage(w)
			return nil
		}
		return bad("keys: no arguments expected, got %q", strings.Join(args, " "))
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tDEFAULT\tMEANING")
	for _, k := range stack.Keys() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Name, k.Default, k.Doc)
	}
	for _, k := range stack.PatternKeys() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Name, k.Default, k.Doc)
	}
	fmt.Fprintln(tw, "device.<key>\t(profile)\toverride a key of the device profile (see testdata/devices/README.md)")
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\nValues: durations take a unit (ns, us, ms, s, m, h; a bare number is nanoseconds), sizes a binary suffix k, m, g or t (KiB, MiB...; a bare number is bytes), booleans true or false (also 1/0, yes/no, on/off).")
	return err
}

// writeLayout prints each file's extents (file offset, device offset and
// length in KiB), the "why" behind request sizes: an interleaved f2fs file
// has one extent per page, a contiguous one a single extent; then where
// the journal lies, if the filesystem has one.
func writeLayout(w io.Writer, fsys *fsmodel.FS) {
	fmt.Fprintf(w, "\nFile layout (extents: file offset -> device offset, KiB):\n")
	for _, f := range fsys.Files() {
		ext := f.Layout()
		noun := "extents"
		if len(ext) == 1 {
			noun = "extent"
		}
		fmt.Fprintf(w, "  %s: %d %s\n", f.Name(), len(ext), noun)
		for i, x := range ext {
			if i == 8 {
				fmt.Fprintf(w, "    ... %d more\n", len(ext)-8)
				break
			}
			fmt.Fprintf(w, "    %8d -> %10d  %8d\n", x.Logical>>10, x.Physical>>10, x.Length>>10)
		}
		if nodes := f.NodeBlocks(); len(nodes) > 0 {
			fmt.Fprintf(w, "    nodes: the inode and %d direct, %s\n", len(nodes)-1, nodeRuns(nodes))
		}
	}
	if js := fsys.JournalStats(); js.Length > 0 {
		fmt.Fprintf(w, "  journal (%s): device %d-%d\n", js.Kind, js.Start*fsmodel.BlockSize>>10, (js.Start+js.Length)*fsmodel.BlockSize>>10)
	}
}

// nodeRuns describes where an f2fs file's direct nodes were last
// written: runs of adjacent blocks as device KiB ranges, at most eight.
func nodeRuns(blocks []int64) string {
	var runs []string
	unwritten := 0
	for i := 0; i < len(blocks); {
		if blocks[i] < 0 {
			unwritten++
			i++
			continue
		}
		j := i + 1
		for j < len(blocks) && blocks[j] == blocks[j-1]+1 {
			j++
		}
		runs = append(runs, fmt.Sprintf("%d-%d", blocks[i]*fsmodel.BlockSize>>10, (blocks[j-1]+1)*fsmodel.BlockSize>>10))
		i = j
	}
	if len(runs) > 8 {
		runs = append(runs[:8], fmt.Sprintf("... %d more", len(runs)-8))
	}
	out := "none written"
	if len(runs) > 0 {
		out = "at device KiB " + strings.Join(runs, ", ")
	}
	if unwritten > 0 && len(runs) > 0 {
		out += fmt.Sprintf(" (%d not written)", unwritten)
	}
	return out
}

// Command blksim runs fio job files on a simulated Linux IO stack.
//
//	blksim run [--stack FILE] [--set KEY=VALUE]... [--seed N]
//	           [--output-format normal|json] [--output FILE] [JOBFILE]
//	blksim compare [JOBFILE] --variant NAME:KEY=VALUE[,KEY=VALUE]... [--variant ...]
//	           [--sweep KEY=V1,V2,...] [--stack FILE] [--set KEY=VALUE]...
//	           [--seed N] [--output-format normal|json] [--output FILE]
//	blksim reproduce [NAME]... [--dir DIR] [--seed N] [--parallel N]
//	           [--output-format normal|json] [--output FILE]
//	blksim keys
//
// Without JOBFILE, run and compare use the embedded default: the ext4
// parallel-DIO experiment (testdata/experiments/ext4-dio) with BS=4k unless
// BS is set. compare runs every variant (stack keys, or env.NAME for a
// job-file ${NAME}, over the base stack) at every sweep value and prints
// one table; reproduce runs the shipped experiments
// (testdata/experiments/*/published.toml) and compares them with the
// published numbers. --output FILE writes the output to FILE, atomically,
// once it is complete. Bad input exits with status 2 and one message naming
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
	"strings"
	"text/tabwriter"
	"time"

	"github.com/blksim/blksim"
	"github.com/blksim/blksim/blockdev/blktrace"
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
		err = cmdKeys(stdout)
	case "help", "-h", "--help":
		usage(stdout)
		return exitOK
	default:
		err = bad("unknown command %q (want run, compare, reproduce or keys)", args[0])
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "blksim: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitBadArgs
	}
	return exitFailed
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  blksim run [--stack FILE] [--set KEY=VALUE]... [--seed N] [--output-format normal|json]
             [--output FILE] [--blktrace DIR] [JOBFILE]
      run a fio job file on a simulated stack (default: the embedded
      ext4 parallel-DIO experiment, BS=4k)
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
`)
}

// multiFlag collects repeated --set flags.
type multiFlag []string

func (m *multiFlag) String() string     { return fmt.Sprint(*m) }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func cmdRun(args []string, stdout io.Writer, env func(string) (string, bool)) error {
	fl := flag.NewFlagSet("run", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	stackFile := fl.String("stack", "", "stack TOML file")
	var sets multiFlag
	fl.Var(&sets, "set", "override a stack key: KEY=VALUE (repeatable)")
	seed := fl.Uint64("seed", 1, "engine seed")
	format := fl.String("output-format", "normal", "normal or json")
	cpuprofile := fl.String("cpuprofile", "", "write a Go CPU profile of the run to this file")
	traceDir := fl.String("blktrace", "", "write blktrace files (<device>.blktrace.<cpu>) for blkparse/btt to this directory")
	output := fl.String("output", "", "write the output to this file")
	if err := fl.Parse(args); err != nil {
		// Fix (tests): "run -h" failed with "flag: help requested".
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return nil
		}
		return bad("run: %v", err)
	}
	if *format != "normal" && *format != "json" {
		return bad("run: --output-format %q: want normal or json", *format)
	}
	if fl.NArg() > 1 {
		return bad("run: one job file expected, got %d", fl.NArg())
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
	var specs []workload.JobSpec
	var err error
	if fl.NArg() == 1 {
		specs, err = workload.ParseFile(fl.Arg(0), env)
	} else {
		specs, err = parseEmbedded(defaultJob, env)
	}
	if err != nil {
		return usageError{err}
	}
	st, err := stack.Build(cfg, *seed)
	if err != nil {
		return usageError{err}
	}
	defer st.Engine.Close()
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
		st.Queue.SetTracer(tracer)
	}
	wall := time.Now()
	res, err := workload.Run(st.Engine, st.FS, specs, workload.RunOptions{AppPerIO: st.AppPerIO})
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
	res.Locks = st.Engine.LockStats()
	res.Disks = []workload.DiskResult{{Name: st.Device.Name(), Scheduler: st.Queue.Scheduler(),
		Stats: st.Queue.Stats(), Elapsed: time.Duration(res.Engine.SimulatedSeconds * 1e9)}}
	res.Seed = *seed
	// Render to memory first so a failure leaves nothing half-written.
	var out bytes.Buffer
	opt := report.Options{OmitWall: omitWall(env)}
	if *format == "json" {
		err = report.WriteJSON(&out, res, opt)
	} else {
		fmt.Fprintf(&out, "stack: %s on %s (%s)\n", st.FS.Policy().Name(), st.Device.Name(), cfg.Get("device.profile"))
		err = report.WriteNormal(&out, res, opt)
	}
	if err != nil {
		return err
	}
	// Like fio, a run in which a job failed exits non-zero; --output FILE
	// is then left alone (the report still goes to stdout without it).
	jobErr := failedJob(res)
	if jobErr != nil && *output != "" {
		return jobErr
	}
	if err := emit(stdout, *output, out.Bytes()); err != nil {
		return err
	}
	return jobErr
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

// parseEmbedded parses a job file shipped in the binary; BS defaults to 4k
// for the default experiment.
func parseEmbedded(name string, env func(string) (string, bool)) ([]workload.JobSpec, error) {
	data, err := fs.ReadFile(blksim.Testdata, name)
	if err != nil {
		return nil, err
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
	return workload.Parse("embedded:"+path.Base(name), bytes.NewReader(data), withBS)
}

func cmdKeys(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tDEFAULT\tMEANING")
	for _, k := range stack.Keys() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Name, k.Default, k.Doc)
	}
	fmt.Fprintln(tw, "device.<key>\t(profile)\toverride a key of the device profile (see testdata/devices/README.md)")
	return tw.Flush()
}

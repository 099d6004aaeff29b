package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/blksim/blksim/blockdev/realdev"
	"github.com/blksim/blksim/report"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/stack"
	"github.com/blksim/blksim/workload"
)

// exitInterrupted is the status of a real-device run stopped by SIGINT
// (128+2, as a shell reports a process killed by it): the results so far
// are printed first.
const exitInterrupted = 130

// interruptedError ends a run that SIGINT stopped.
type interruptedError struct{}

func (interruptedError) Error() string {
	return "interrupted: stopped issuing IO, waited for the IO in flight; results so far above"
}

// realFlags are run's flags for real devices.
type realFlags struct {
	device *string
	force  *bool
}

// addRealFlags declares --device and --force on fl.
func addRealFlags(fl *flag.FlagSet) realFlags {
	return realFlags{
		device: fl.String("device", "", "run on a real device: file:PATH[,size=N] or blk:/dev/NAME (O_DIRECT, wall clock)"),
		force:  fl.Bool("force", false, "with --device: allow a file blksim did not create, or a block device that looks in use (its data is overwritten)"),
	}
}

// apply makes cfg build on the real device named by --device, if any.
func (f realFlags) apply(cfg *stack.Config) error {
	if *f.device == "" {
		if *f.force {
			return bad("run: --force needs --device")
		}
		return nil
	}
	if err := cfg.SetRealDevice(*f.device, realdev.Options{Force: *f.force}); err != nil {
		return usageError{err}
	}
	return nil
}

// interruptHandler adapts a func to sim.Handler.
type interruptHandler func()

func (h interruptHandler) Fire(uint64) { h() }

// watchInterrupt makes SIGINT stop the jobs of a real-device run (they stop
// issuing IO, the IO in flight completes, the results so far are reported).
// A second SIGINT kills the process. It returns the function that stops
// watching; on a simulated stack it does nothing.
func watchInterrupt(st *stack.Stack, opt *workload.RunOptions) func() {
	if st.Wall == nil {
		return func() {}
	}
	var stopAll func()
	opt.Interrupt = func(f func()) { stopAll = f }
	st.Wall.OnInterrupt(interruptHandler(func() {
		if stopAll != nil {
			stopAll()
		}
	}), 0)
	sig := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(sig, os.Interrupt)
	go func() {
		select {
		case <-sig:
			st.Wall.Interrupt()
			signal.Stop(sig) // the next SIGINT kills, as usual
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
	}
}

// stackLine is the first line of a run's normal output.
func stackLine(st *stack.Stack, cfg *stack.Config) string {
	if sp, ok := cfg.RealDevice(); ok {
		s := st.Real.Stats()
		return fmt.Sprintf("stack: %s on %s (real device %s, O_DIRECT via %s, %d-byte blocks, wall clock)\n",
			st.FS.Policy().Name(), st.Device.Name(), sp, s.Backend, s.LogicalBlockSize)
	}
	mount := ""
	if st.FS.DAX() {
		mount = " mounted with dax"
	}
	return fmt.Sprintf("stack: %s%s on %s (%s)\n", st.FS.Policy().Name(), mount, st.Device.Name(), cfg.Get("device.profile"))
}

// realReport is the real device's figures for the report, or nil.
func realReport(st *stack.Stack) *report.RealDevice {
	if st.Real == nil {
		return nil
	}
	s := st.Real.Stats()
	return &report.RealDevice{Name: st.Device.Name(), Backend: s.Backend, Reads: s.Reads, Writes: s.Writes,
		ReadBytes: s.ReadBytes, WriteBytes: s.WriteBytes, Flushes: s.Flushes, Enters: s.Enters, Errors: s.Errors,
		CorruptSectors: s.CorruptSectors, ForeignSectors: s.ForeignSectors, StaleSectors: s.StaleSectors,
		FirstCorrupt: s.FirstCorrupt, FirstCorruptWhy: s.FirstCorruptWhy, Interrupted: st.Wall.Interrupted()}
}

// writeRealStats prints the real device's counters and its verification
// result after a run's report.
func writeRealStats(w io.Writer, st *stack.Stack) {
	if st.Real == nil {
		return
	}
	s := st.Real.Stats()
	flushes := ""
	if s.Flushes > 0 {
		flushes = fmt.Sprintf(", %d cache flushes (fdatasync)", s.Flushes)
	}
	fmt.Fprintf(w, "\nReal device %s: %d reads (%d KiB), %d writes (%d KiB)%s in %d io_uring_enter calls, %d errors; every sector read verified: %d corrupt, %d never written by blksim, %d from earlier runs\n",
		st.Device.Name(), s.Reads, s.ReadBytes>>10, s.Writes, s.WriteBytes>>10, flushes, s.Enters, s.Errors, s.CorruptSectors, s.ForeignSectors, s.StaleSectors)
	if s.CorruptSectors > 0 {
		fmt.Fprintf(w, "  first corrupt sector: %s\n", s.FirstCorruptWhy)
	}
	if st.Wall.Interrupted() {
		fmt.Fprintf(w, "  interrupted at %v: results cover the run up to then\n", sim.Time(st.Engine.Now()))
	}
}

// realRunError is the error a finished real-device run ends with: corrupt
// sectors fail it (never hidden), an interrupt gives status 130.
func realRunError(st *stack.Stack) error {
	if st.Real == nil {
		return nil
	}
	if s := st.Real.Stats(); s.CorruptSectors > 0 {
		return fmt.Errorf("real device %s: %d corrupt sectors read (first: %s): %w", st.Device.Name(), s.CorruptSectors, s.FirstCorruptWhy, realdev.ErrCorrupt)
	}
	if st.Wall.Interrupted() {
		return interruptedError{}
	}
	return nil
}

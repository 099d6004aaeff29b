package sim_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/blksim/blksim/sim"
)

// TestScripts runs the interaction scripts in testdata/. Regenerate the
// expected output with
//
//	go test ./sim/ -run TestScripts -rewrite
//
// (-rewrite is datadriven's own flag) and review the diff.
//
// Commands:
//
//	engine [cpus=N] [wake=D] [cs=D] [spin=D] [spin-iter=D] [cacheline=D]
//	       [writer-spin] [reader-spin] [spin-limit=D] [wake-any]
//	       [handoff=D] [mutex-spin] [writer-spin-readers=D]
//	    A new engine with one rwsem "sem" and one mutex "mu". spin is
//	    Host.SpinHandoff, spin-iter Host.SpinIteration, cacheline
//	    Host.CacheLine.
//	task name=NAME [at=D] [repeat=N] ops=(OP, ...)
//	    A task that starts at D and runs the ops N times. OPs: down_read,
//	    up_read, down_write, up_write, lock, unlock, cpu D, sleep D, yield.
//	run [until=D]
//	    Runs the engine and prints each lock operation as it returned:
//	    "<time> <task> <op>".
//	stats
//	    Prints the lockstat figures of sem and mu (min/max/total), with
//	    acquisition and contention bounces when there are any.
//	cpu
//	    Prints each CPU's usr/sys time and the tasks' spin total.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &scriptState{}
		t.Cleanup(s.close)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := s.cmd(t, td)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

type scriptState struct {
	e   *sim.Engine
	l   locks
	rec *recorder
}

func (s *scriptState) close() {
	if s.e != nil {
		_ = s.e.Close()
	}
}

func (s *scriptState) cmd(t *testing.T, td *datadriven.TestData) (string, error) {
	if td.Cmd != "engine" && s.e == nil {
		return "", fmt.Errorf("%s before engine", td.Cmd)
	}
	switch td.Cmd {
	case "engine":
		s.close()
		var h sim.Host
		var opt sim.RWSemOptions
		mutexSpin := false
		for _, a := range td.CmdArgs {
			var err error
			switch a.Key {
			case "cpus":
				h.CPUs, err = strconv.Atoi(a.SingleVal(t))
			case "wake":
				h.WakeLatency, err = time.ParseDuration(a.SingleVal(t))
			case "cs":
				h.ContextSwitch, err = time.ParseDuration(a.SingleVal(t))
			case "spin":
				h.SpinHandoff, err = time.ParseDuration(a.SingleVal(t))
			case "spin-iter":
				h.SpinIteration, err = time.ParseDuration(a.SingleVal(t))
			case "cacheline":
				h.CacheLine, err = time.ParseDuration(a.SingleVal(t))
			case "spin-limit":
				opt.SpinLimit, err = time.ParseDuration(a.SingleVal(t))
			case "handoff":
				opt.HandoffTimeout, err = time.ParseDuration(a.SingleVal(t))
			case "writer-spin-readers":
				opt.WriterSpinReaders, err = time.ParseDuration(a.SingleVal(t))
			case "writer-spin":
				opt.WriterSpin = true
			case "reader-spin":
				opt.ReaderSpin = true
			case "wake-any":
				opt.WakeAnyReaders = true
			case "mutex-spin":
				mutexSpin = true
			default:
				return "", fmt.Errorf("unknown engine argument %q", a.Key)
			}
			if err != nil {
				return "", fmt.Errorf("%s: %w", a.Key, err)
			}
		}
		s.e = sim.New(sim.Options{Seed: 1, Host: h})
		s.l = locks{
			sem: sim.NewRWSem(s.e, "sem", opt),
			mu:  sim.NewMutex(s.e, "mu", mutexSpin),
		}
		s.rec = &recorder{}
		return "", nil

	case "task":
		var name string
		var at time.Duration
		repeat := 1
		var ops []string
		for _, a := range td.CmdArgs {
			var err error
			switch a.Key {
			case "name":
				name = a.SingleVal(t)
			case "at":
				at, err = time.ParseDuration(a.SingleVal(t))
			case "repeat":
				repeat, err = strconv.Atoi(a.SingleVal(t))
			case "ops":
				ops = a.Vals
			default:
				return "", fmt.Errorf("unknown task argument %q", a.Key)
			}
			if err != nil {
				return "", fmt.Errorf("%s: %w", a.Key, err)
			}
		}
		if name == "" {
			return "", fmt.Errorf("task needs name=")
		}
		if at < time.Duration(s.e.Now()) {
			return "", fmt.Errorf("at=%v is before now (%v)", at, s.e.Now())
		}
		steps, err := parseOps(ops)
		if err != nil {
			return "", err
		}
		l, rec := s.l, s.rec
		spawn(s.e, name, at, func(t *sim.Task) {
			for range repeat {
				exec(t, l, rec, steps)
			}
		})
		return "", nil

	case "run":
		until := sim.Time(-1)
		if td.HasArg("until") {
			var v string
			td.ScanArgs(t, "until", &v)
			d, err := time.ParseDuration(v)
			if err != nil {
				return "", err
			}
			until = sim.Time(d)
		}
		err := s.e.Run(until)
		out := s.rec.String()
		s.rec.evs = nil
		if err != nil {
			out += fmt.Sprintf("run: %v\n", err)
		}
		if n := s.e.Tasks(); n > 0 {
			out += fmt.Sprintf("%v: %d task(s) blocked\n", s.e.Now(), n)
		}
		return out, nil

	case "stats":
		var b strings.Builder
		for _, st := range s.e.LockStats() {
			fmt.Fprintf(&b, "%s (%s) handoffs=%d\n", st.Name, st.Kind, st.Handoffs)
			for _, m := range []struct {
				mode string
				s    sim.LockModeStats
			}{{"read", st.Read}, {"write", st.Write}} {
				if m.s.Acquisitions == 0 {
					continue
				}
				fmt.Fprintf(&b, "  %-5s acq=%d cont=%d wait=%v/%v/%v hold=%v/%v/%v spins=%d spin=%v\n",
					m.mode, m.s.Acquisitions, m.s.Contentions,
					m.s.WaitMin, m.s.WaitMax, m.s.WaitTotal,
					m.s.HoldMin, m.s.HoldMax, m.s.HoldTotal,
					m.s.Spins, m.s.SpinTime)
				if m.s.AcqBounces > 0 {
					fmt.Fprintf(&b, "        bounces acq=%d con=%d\n", m.s.AcqBounces, m.s.ConBounces)
				}
			}
		}
		return b.String(), nil

	case "cpu":
		var b strings.Builder
		for id, c := range s.e.CPUStats() {
			if c.User+c.Sys > 0 {
				fmt.Fprintf(&b, "cpu%d usr=%v sys=%v\n", id, c.User, c.Sys)
			}
		}
		fmt.Fprintf(&b, "spinning=%v\n", s.e.SpinTime())
		return b.String(), nil

	default:
		return "", fmt.Errorf("unknown command %q", td.Cmd)
	}
}

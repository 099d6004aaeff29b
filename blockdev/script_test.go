package blockdev

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/internal/units"
	"github.com/blksim/blksim/sim"
)

// Scenario scripts for the block layer (testdata/scripts/*.txt, one per
// kernel rule; run with -rewrite to regenerate after checking a change).
//
// Commands:
//
//	queue [max_hw_sectors_kb=N] [max_sectors_kb=N] [max_segments=N]
//	      [nomerges=N] [scheduler=none|mq-deadline] [depth=N]
//	      [nr_requests=N] [hwqueues=N] [latency=DUR] [fifo_batch=N]
//	      [writes_starved=N] [read_expire=DUR] [write_expire=DUR]
//	      [front_merges=0|1] [quantum=N] [slice_idle=DUR]
//	      [slice_sync=DUR] [rotational=0|1] [noidle=0|1]
//	      [fault.op=read|write|any] [fault.sectors=START-END]
//	      [fault.after=N] [fault.every=N] [fault.count=N]
//	      [fault.errno=EIO|ENOSPC|ETIMEDOUT] [fault.latency=DUR]
//	    a memory device with the given limits and per-request latency
//	    (default 100us), and a queue on it; with fault.op, the device is
//	    wrapped in a FaultDevice (FaultSpec) and failed completions show
//	    "err=ERRNO".
//	run
//	    one line per action "TASK: OP [ARGS]"; each task runs its lines in
//	    order, all tasks start at time 0, in order of first appearance.
//	    OPs: plug, finish (the plug), read|write SECTOR SIZE [async] (async: no REQ_SYNC), sleep DUR,
//	    cpu DUR. The output is the block-layer trace, one event per line
//	    (time, blkparse letter, direction, sector+sectors, task), then the
//	    counters.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/scripts/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var s scriptQueue
			datadriven.RunTest(t, f, func(t *testing.T, d *datadriven.TestData) string {
				switch d.Cmd {
				case "queue":
					return s.setup(t, d)
				case "run":
					return s.run(t, d.Input)
				}
				t.Fatalf("unknown command %q", d.Cmd)
				return ""
			})
		})
	}
}

type scriptQueue struct {
	noIdle  bool // sync writes lack REQ_IDLE (fsync writeback)
	fault   *FaultSpec
	opt     QueueOptions
	mem     MemParams
	cpus    int
	created bool
}

// setup records the queue parameters (the queue is built per run).
func (s *scriptQueue) setup(t *testing.T, d *datadriven.TestData) string {
	*s = scriptQueue{mem: MemParams{Capacity: 1 << 30, Latency: 100 * time.Microsecond, MaxHWSectorsKB: 128, QueueDepth: 32}, cpus: 1, created: true}
	for _, a := range d.CmdArgs {
		v := ""
		if len(a.Vals) > 0 {
			v = a.Vals[0]
		}
		num := func() int {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, a.Key)
			return n
		}
		dur := func() time.Duration {
			x, err := units.ParseDuration(v)
			require.NoError(t, err, a.Key)
			return x
		}
		switch a.Key {
		case "max_hw_sectors_kb":
			s.mem.MaxHWSectorsKB = num()
		case "max_sectors_kb":
			s.opt.MaxSectorsKB = num()
		case "max_segments":
			s.opt.MaxSegments = num()
		case "nomerges":
			s.opt.NoMerges = num()
		case "scheduler":
			s.opt.Scheduler = v
		case "depth":
			s.mem.QueueDepth = num()
		case "nr_requests":
			s.opt.NrRequests = num()
		case "hwqueues":
			s.opt.HWQueues = num()
			s.cpus = s.opt.HWQueues
		case "latency":
			s.mem.Latency = dur()
		case "fifo_batch":
			s.opt.Deadline.FifoBatch = num()
		case "writes_starved":
			s.opt.Deadline.WritesStarved = num()
		case "read_expire":
			s.opt.Deadline.ReadExpire = dur()
		case "write_expire":
			s.opt.Deadline.WriteExpire = dur()
		case "quantum":
			s.opt.CFQ.Quantum = num()
		case "slice_idle":
			s.opt.CFQ.SliceIdle = dur()
			if s.opt.CFQ.SliceIdle == 0 {
				s.opt.CFQ.SliceIdle = -1 // no idling
			}
		case "noidle":
			s.noIdle = v == "1"
		case "slice_sync":
			s.opt.CFQ.SliceSync = dur()
		case "rotational":
			s.mem.Rotational = v == "1"
		case "front_merges":
			s.opt.Deadline.NoFrontMerges = v == "0"
		case "fault.op", "fault.sectors", "fault.after", "fault.every", "fault.count", "fault.errno", "fault.latency":
			if s.fault == nil {
				s.fault = &FaultSpec{Probability: 1}
			}
			f := s.fault
			switch a.Key {
			case "fault.op":
				f.Any = v == "any"
				f.Op = OpRead
				if v == "write" {
					f.Op = OpWrite
				}
			case "fault.sectors":
				var err error
				f.Start, f.End, err = ParseSectorRange(v)
				require.NoError(t, err)
			case "fault.after":
				f.After = int64(num())
			case "fault.every":
				f.Every = int64(num())
			case "fault.count":
				f.Count = int64(num())
			case "fault.errno":
				var ok bool
				f.Errno, ok = FaultErrnos[v]
				require.True(t, ok, "errno %q", v)
			case "fault.latency":
				f.Latency = dur()
			}
		default:
			t.Fatalf("unknown queue argument %q", a.Key)
		}
	}
	return ""
}

// traceLog formats trace events as script output.
type traceLog struct{ b strings.Builder }

// Trace appends one event.
func (l *traceLog) Trace(ev *TraceEvent) {
	fmt.Fprintf(&l.b, "%8s  %-2s", time.Duration(ev.Time), ev.Action.Letter())
	switch ev.Action {
	case TracePlug:
		fmt.Fprintf(&l.b, "  %s\n", ev.Comm)
		return
	case TraceUnplug, TraceUnplugTimer:
		fmt.Fprintf(&l.b, "  %s depth=%d\n", ev.Comm, ev.Extra)
		return
	}
	dir := "R"
	if ev.Op == OpWrite {
		dir = "W"
	}
	fmt.Fprintf(&l.b, " %s %d+%d %s", dir, ev.Sector, ev.Bytes/SectorSize, ev.Comm)
	if ev.Action == TraceSplit {
		fmt.Fprintf(&l.b, " at=%d", ev.Extra)
	}
	if ev.Error != 0 {
		fmt.Fprintf(&l.b, " err=%d", ev.Error)
	}
	l.b.WriteString("\n")
}

type scriptStep struct {
	op   string
	args []string
}

// run executes the task lines and returns the trace and counters.
func (s *scriptQueue) run(t *testing.T, input string) string {
	require.True(t, s.created, "run before queue")
	e := sim.New(sim.Options{Host: sim.Host{CPUs: s.cpus}})
	defer e.Close()
	var dev Device = NewMemDevice(e, s.mem)
	var fault *FaultDevice
	if s.fault != nil {
		fault = s.fault.Wrap(e, dev)
		dev = fault
	}
	q, err := NewQueue(e, dev, s.opt)
	require.NoError(t, err)
	log := &traceLog{}
	q.SetTracer(log)

	var order []string
	steps := map[string][]scriptStep{}
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		require.True(t, ok, "line %q: want TASK: OP ARGS", line)
		f := strings.Fields(rest)
		require.NotEmpty(t, f, "line %q", line)
		if _, seen := steps[name]; !seen {
			order = append(order, name)
		}
		steps[name] = append(steps[name], scriptStep{f[0], f[1:]})
	}
	var errs []string
	for i, name := range order {
		name, cpu := name, i%s.cpus
		e.Go(name, func(tk *sim.Task) {
			iss := Issuer{PID: uint32(i + 1), Comm: name, CPU: cpu}
			var plug *Plug
			for _, st := range steps[name] {
				switch st.op {
				case "plug":
					plug = q.StartPlug(tk, iss)
				case "finish":
					plug.Finish()
					plug = nil
				case "sleep", "cpu":
					d, err := units.ParseDuration(st.args[0])
					if err != nil {
						errs = append(errs, err.Error())
						return
					}
					if st.op == "sleep" {
						tk.Sleep(d)
					} else {
						tk.CPU(d)
					}
				case "read", "write":
					sector, err1 := strconv.ParseInt(st.args[0], 10, 64)
					size, err2 := units.ParseSize(st.args[1])
					if err1 != nil || err2 != nil {
						errs = append(errs, fmt.Sprintf("%s %v: bad sector or size", st.op, st.args))
						return
					}
					// A third argument "async" leaves REQ_SYNC off
					// (buffered readahead, background writeback).
					async := len(st.args) > 2 && st.args[2] == "async"
					b := &Bio{Op: OpRead, Sector: sector, Bytes: size, Issuer: iss, Sync: !async}
					if st.op == "write" {
						b.Op = OpWrite
						b.NoIdle = s.noIdle && b.Sync
					}
					if plug != nil {
						plug.Submit(b)
					} else {
						q.Submit(b)
					}
				default:
					errs = append(errs, "unknown op "+st.op)
					return
				}
			}
		})
	}
	require.NoError(t, e.Run(-1))
	require.Empty(t, errs)
	st := q.Stats()
	fmt.Fprintf(&log.b, "requests: read=%d write=%d merges=%d/%d splits=%d\n", st.IOs[0], st.IOs[1], st.Merges[0], st.Merges[1], st.Splits)
	if fault != nil {
		n := fault.Injected()
		fmt.Fprintf(&log.b, "injected: read=%d write=%d sectors: read=%d write=%d\n", n[0], n[1], st.Sectors[0], st.Sectors[1])
	}
	return log.b.String()
}

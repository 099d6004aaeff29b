package blktrace_test

import (
	"bufio"
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/blockdev/blktrace"
	"github.com/blksim/blksim/sim"
)

// workload is a synthetic event stream with the statistics blkparse and
// btt should derive from it, computed from the IOs that generated it
// rather than from the records.
type workload struct {
	events []blockdev.TraceEvent

	// counts is the number of events per blkparse letter.
	counts map[string]int
	// queued, dispatched, completed and merged count Q, D, C and M+F events
	// per direction (0 read, 1 write), as blkparse's summary does.
	queued, dispatched, completed, merged [2]int
	// q2c and d2c hold, for every bio that btt can follow, the time from its
	// Q and from its request's D to the request's C. btt follows a bio whose
	// sectors lie within the request that completes it; a bio split across
	// requests is not followed (its Q spans several D and C).
	q2c, d2c []sim.Time
	// qSizes and dSizes count Q and D events by size in sectors.
	qSizes, dSizes map[int64]int
}

type task struct {
	pid  uint32
	comm string
	cpu  int
}

// request describes one request: the bios it was built from (the first
// one allocated it, the others were merged at the back or the front) and
// when it was inserted, issued and completed.
type request struct {
	op      blockdev.Op
	sync    bool
	t       task
	sector  int64    // of the first bio
	sizes   []int64  // bytes of each bio
	front   []bool   // bio k>0 was front-merged
	queued  sim.Time // Q of the first bio; the others follow
	insert  sim.Time
	issue   sim.Time
	done    sim.Time
	doneCPU int
}

func newWorkload() *workload {
	return &workload{counts: map[string]int{}, qSizes: map[int64]int{}, dSizes: map[int64]int{}}
}

func dir(op blockdev.Op) int {
	if op == blockdev.OpWrite {
		return 1
	}
	return 0
}

func (w *workload) add(e blockdev.TraceEvent) {
	w.events = append(w.events, e)
	w.counts[e.Action.Letter()]++
	d := dir(e.Op)
	switch e.Action {
	case blockdev.TraceQueue:
		w.queued[d]++
		w.qSizes[e.Bytes/512]++
	case blockdev.TraceIssue:
		w.dispatched[d]++
		w.dSizes[e.Bytes/512]++
	case blockdev.TraceComplete:
		w.completed[d]++
	case blockdev.TraceBackMerge, blockdev.TraceFrontMerge:
		w.merged[d]++
	}
}

func (w *workload) event(tm sim.Time, a blockdev.TraceAction, op blockdev.Op, sync bool, sector, bytes int64, t task, extra uint64) {
	w.add(blockdev.TraceEvent{Time: tm, Action: a, Op: op, Sync: sync, Sector: sector, Bytes: bytes,
		PID: t.pid, Comm: t.comm, CPU: t.cpu, Extra: extra})
}

// request emits Q and G for the first bio, Q and M or F for the others,
// then I, D and C (C from PID 0 on doneCPU, as an interrupt would).
func (w *workload) request(r request) {
	start, end := r.sector, r.sector+r.sizes[0]/512
	tm := r.queued
	w.event(tm, blockdev.TraceQueue, r.op, r.sync, start, r.sizes[0], r.t, 0)
	w.event(tm+50, blockdev.TraceGetRequest, r.op, r.sync, start, r.sizes[0], r.t, 0)
	qs := []sim.Time{tm}
	for k := 1; k < len(r.sizes); k++ {
		tm += 200
		sec, a := end, blockdev.TraceBackMerge
		if r.front[k] {
			sec, a = start-r.sizes[k]/512, blockdev.TraceFrontMerge
			start = sec
		} else {
			end += r.sizes[k] / 512
		}
		w.event(tm, blockdev.TraceQueue, r.op, r.sync, sec, r.sizes[k], r.t, 0)
		w.event(tm+30, a, r.op, r.sync, sec, r.sizes[k], r.t, 0)
		qs = append(qs, tm)
	}
	bytes := (end - start) * 512
	w.event(r.insert, blockdev.TraceInsert, r.op, r.sync, start, bytes, r.t, 0)
	w.event(r.issue, blockdev.TraceIssue, r.op, r.sync, start, bytes, r.t, 0)
	w.event(r.done, blockdev.TraceComplete, r.op, r.sync, start, bytes, task{cpu: r.doneCPU}, 0)
	for _, q := range qs {
		w.q2c = append(w.q2c, r.done-q)
		w.d2c = append(w.d2c, r.done-r.issue)
	}
}

// split emits one Q for a bio of size bytes and, for each piece of at most
// max bytes, an X (but for the last piece), G, I, D and C, as the kernel
// traces a bio split to max_sectors_kb.
func (w *workload) split(op blockdev.Op, t task, sector, size, max int64, tm sim.Time, rng *rand.Rand) sim.Time {
	w.event(tm, blockdev.TraceQueue, op, true, sector, size, t, 0)
	for off := int64(0); off < size; off += max {
		sec := sector + off/512
		n := min(max, size-off)
		tm += 100
		if off+n < size {
			w.event(tm, blockdev.TraceSplit, op, true, sec, n, t, uint64(sec+n/512))
		}
		w.event(tm+10, blockdev.TraceGetRequest, op, true, sec, n, t, 0)
		w.event(tm+20, blockdev.TraceInsert, op, true, sec, n, t, 0)
		w.event(tm+30, blockdev.TraceIssue, op, true, sec, n, t, 0)
		w.event(tm+30+sim.Time(20_000+rng.IntN(200_000)), blockdev.TraceComplete, op, true, sec, n, task{cpu: t.cpu}, 0)
	}
	return tm
}

// mixedWorkload builds a few hundred requests of two tasks on CPUs 0 and 2
// (CPU 1 traces nothing): reads and writes of 4 to 64 KiB, some built from
// several bios merged at the back or the front, in plugged batches ended
// by an unplug (one by the timer), and two large reads split to 128 KiB.
func mixedWorkload() *workload {
	rng := rand.New(rand.NewPCG(1, 2))
	w := newWorkload()
	tasks := []task{{pid: 4242, comm: "fio", cpu: 0}, {pid: 977, comm: "kworker/u8:3", cpu: 2}}
	tm := sim.Time(1_000)
	sector := int64(2048)
	for batch := range 60 {
		t := tasks[batch%2]
		w.event(tm, blockdev.TracePlug, blockdev.OpRead, false, 0, 0, t, 0)
		tm += 100
		n := 1 + rng.IntN(5)
		var reqs []request
		for range n {
			r := request{op: blockdev.Op(rng.IntN(2)), sync: rng.IntN(3) > 0, t: t, queued: tm}
			bios := 1 + rng.IntN(3)
			for k := range bios {
				r.sizes = append(r.sizes, int64(4096<<rng.IntN(4)))
				r.front = append(r.front, k > 0 && rng.IntN(2) == 0)
			}
			r.sector = sector + 1024 // room for front merges
			sector += 4096
			tm += sim.Time(300 * bios)
			reqs = append(reqs, r)
		}
		unplug := blockdev.TraceUnplug
		if batch == 17 {
			unplug = blockdev.TraceUnplugTimer
		}
		w.event(tm, unplug, blockdev.OpRead, false, 0, 0, t, uint64(n))
		for i := range reqs {
			tm += 100
			reqs[i].insert = tm
			reqs[i].issue = tm + 40
			reqs[i].done = tm + sim.Time(30_000+rng.IntN(2_000_000))
			reqs[i].doneCPU = rng.IntN(2) * 2
			w.request(reqs[i])
		}
		tm += sim.Time(5_000 + rng.IntN(50_000))
		if batch == 20 || batch == 40 {
			tm = w.split(blockdev.OpRead, t, sector, 1<<20, 128<<10, tm, rng) + 1_000
			sector += 4096
		}
	}
	slices.SortStableFunc(w.events, func(a, b blockdev.TraceEvent) int { return int(a.Time - b.Time) })
	return w
}

func mean(ts []sim.Time) float64 {
	var sum float64
	for _, t := range ts {
		sum += float64(t)
	}
	return sum / float64(len(ts)) / 1e9
}

// writeTrace writes w's events as device "sdq" (8,32) into dir.
func writeTrace(t *testing.T, dir string, w *workload) {
	t.Helper()
	tw, err := blktrace.New(dir, "sdq", blktrace.Dev(8, 32))
	require.NoError(t, err)
	for i := range w.events {
		tw.Trace(&w.events[i])
	}
	require.NoError(t, tw.Close())
}

func run(t *testing.T, dir, name string, args ...string) (stdout string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &errb
	require.NoError(t, cmd.Run(), "%s %v: %s", name, args, errb.String())
	assert.Empty(t, errb.String(), "%s %v wrote to stderr", name, args)
	return out.String()
}

var (
	// An event line of blkparse's default format:
	// "  8,32   0       12     0.000123456  4242  Q  WS 3072 + 8 [fio]".
	eventLine = regexp.MustCompile(`^\s*(\d+),(\d+)\s+(\d+)\s+(\d+)\s+\d+\.\d+\s+(\d+)\s+([A-Z]+)\s+(\S+)\s*(.*)$`)
	// "CPU0 (sdq):" starts a per-CPU summary, "Total (sdq):" the sum.
	summaryHead = regexp.MustCompile(`^(CPU\d+|Total) \(sdq\):$`)
	// Two counters a line: " Reads Queued:    12,   48KiB	 Writes Queued: ...".
	summaryField = regexp.MustCompile(`([A-Za-z]+ [A-Za-z]+):\s+([\d,]+)`)
)

// TestBlkparse checks that blkparse reads the trace without a complaint and
// finds every event: its event lines and its summary count what the
// workload traced, per action and per direction, and every IO line names
// the task that issued it (from the process notes).
func TestBlkparse(t *testing.T) {
	if _, err := exec.LookPath("blkparse"); err != nil {
		t.Skip("blkparse not installed (apt-get install blktrace):", err)
	}
	w := mixedWorkload()
	dir := t.TempDir()
	writeTrace(t, dir, w)
	out := run(t, dir, "blkparse", "-i", "sdq", "-D", dir)

	counts := map[string]int{}
	summary := map[string]int{}
	var section string
	var lastCPU = map[int]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := eventLine.FindStringSubmatch(line); m != nil {
			assert.Equal(t, "8", m[1], line)
			assert.Equal(t, "32", m[2], line)
			cpu, _ := strconv.Atoi(m[3])
			seq, _ := strconv.Atoi(m[4])
			assert.Equal(t, lastCPU[cpu]+1, seq, "sequence on CPU %d: %s", cpu, line)
			lastCPU[cpu] = seq
			act, pid, rest := m[6], m[5], m[8]
			counts[act]++
			switch {
			case act == "C":
				assert.Regexp(t, `^\d+ \+ \d+ \[0\]$`, rest, "C ends with its error: %s", line)
			case pid == "4242":
				assert.True(t, strings.HasSuffix(rest, "[fio]") || strings.HasPrefix(rest, "[fio]"), line)
			case pid == "977":
				assert.Contains(t, rest, "[kworker/u8:3]", line)
			default:
				t.Errorf("unexpected PID: %s", line)
			}
			continue
		}
		if m := summaryHead.FindStringSubmatch(line); m != nil {
			section = m[1]
			continue
		}
		if section != "" && section != "Total" {
			for _, m := range summaryField.FindAllStringSubmatch(line, -1) {
				n, err := strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
				require.NoError(t, err)
				summary[m[1]] += n
			}
		}
	}
	assert.Equal(t, w.counts, counts, "events per action")
	assert.Equal(t, map[int]int{0: w.countCPU(0), 2: w.countCPU(2)}, lastCPU, "events per CPU")
	delete(summary, "Read depth") // the deepest queue, not a count
	delete(summary, "Write depth")
	assert.Equal(t, map[string]int{
		"Reads Queued": w.queued[0], "Writes Queued": w.queued[1],
		"Read Dispatches": w.dispatched[0], "Write Dispatches": w.dispatched[1],
		"Reads Requeued": 0, "Writes Requeued": 0,
		"Reads Completed": w.completed[0], "Writes Completed": w.completed[1],
		"Read Merges": w.merged[0], "Write Merges": w.merged[1],
		"IO unplugs": w.counts["U"], "Timer unplugs": w.counts["UT"],
	}, summary)
	assert.Contains(t, out, "Events (sdq): "+strconv.Itoa(len(w.events))+" entries")
	assert.Contains(t, out, "Skips: 0 forward")
	assert.Equal(t, 2, w.counts["X"]/7, "the two split reads show 7 X each")
}

func (w *workload) countCPU(cpu int) int {
	n := 0
	for _, e := range w.events {
		if e.CPU == cpu {
			n++
		}
	}
	return n
}

// TestBtt checks btt's view of the trace, read from blkparse's binary dump:
// its D2C and Q2C averages and counts equal the workload's within 1%, and
// its Q and D size histograms (btt -o: _qhist.dat, _dhist.dat) equal the
// sizes traced.
func TestBtt(t *testing.T) {
	for _, tool := range []string{"blkparse", "btt"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip(tool+" not installed (apt-get install blktrace):", err)
		}
	}
	w := mixedWorkload()
	dir := t.TempDir()
	writeTrace(t, dir, w)
	run(t, dir, "blkparse", "-q", "-i", "sdq", "-D", dir, "-d", "sdq.bin", "-o", os.DevNull)
	run(t, dir, "btt", "-i", "sdq.bin", "-o", "btt")

	avg, err := os.ReadFile(filepath.Join(dir, "btt.avg"))
	require.NoError(t, err)
	lat := func(name string) (float64, int) {
		m := regexp.MustCompile(`(?m)^` + name + `\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+(\d+)$`).FindSubmatch(avg)
		require.NotNil(t, m, "%s in btt.avg:\n%s", name, avg)
		v, err := strconv.ParseFloat(string(m[1]), 64)
		require.NoError(t, err)
		n, err := strconv.Atoi(string(m[2]))
		require.NoError(t, err)
		return v, n
	}
	d2c, nd := lat("D2C")
	q2c, nq := lat("Q2C")
	assert.Equal(t, len(w.d2c), nd, "D2C count")
	assert.Equal(t, len(w.q2c), nq, "Q2C count")
	assert.InEpsilon(t, mean(w.d2c), d2c, 0.01, "D2C average")
	assert.InEpsilon(t, mean(w.q2c), q2c, 0.01, "Q2C average")

	assert.Equal(t, bttBuckets(w.dSizes), histogram(t, filepath.Join(dir, "btt_dhist.dat")), "dispatch sizes")
	assert.Equal(t, bttBuckets(w.qSizes), histogram(t, filepath.Join(dir, "btt_qhist.dat")), "queue sizes")
	assert.Equal(t, 2, bttBuckets(w.qSizes)[math.MaxInt64], "the two 1 MiB reads are queued whole")
}

// bttBuckets folds sizes above 1024 sectors into btt's last bucket, which
// histogram returns under math.MaxInt64.
func bttBuckets(sizes map[int64]int) map[int64]int {
	h := map[int64]int{}
	for s, n := range sizes {
		if s > 1024 {
			s = math.MaxInt64
		}
		h[s] += n
	}
	return h
}

// histogram reads a btt size histogram: "<sectors> <count>" lines for
// 1..1024 sectors, then after a "# ... bucket for > 1024" comment one line
// counting the larger IOs, returned under key math.MaxInt64.
func histogram(t *testing.T, name string) map[int64]int {
	t.Helper()
	f, err := os.Open(name)
	require.NoError(t, err)
	defer f.Close()
	h := map[int64]int{}
	over := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			over = over || strings.Contains(line, "bucket for >")
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			continue
		}
		sectors, err := strconv.ParseInt(fields[0], 10, 64)
		require.NoError(t, err, line)
		n, err := strconv.Atoi(fields[1])
		require.NoError(t, err, line)
		if over {
			sectors = math.MaxInt64
		}
		if n > 0 {
			h[sectors] += n
		}
	}
	require.NoError(t, sc.Err())
	return h
}

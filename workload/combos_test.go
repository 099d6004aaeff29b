package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/stack"
)

// comboOptions are option lines the combination test draws from, by
// group: at most one line per group per job.
var comboOptions = [][]string{
	{"rw=read", "rw=write", "rw=randread", "rw=randwrite", "rw=rw", "rw=randrw", "rw=randread:4", "rw=write:4k", "rw=read:-8k", "rw=randrw:3"},
	{"bs=4k", "bs=8k,16k", "bsrange=4k-16k", "bssplit=4k/50:16k/50", "bssplit=4k/30:8k/,64k/100", "bs=512"},
	{"size=256k", "size=1m", "filesize=512k", "filesize=256k-1m", "size=50%\nfilesize=1m", "size=1m\nio_size=3m", "size=1m\nnumber_ios=37"},
	{"", "offset=64k", "offset=25%\nfilesize=1m", "offset_increment=128k", "offset_increment=10%"},
	{"", "numjobs=2", "numjobs=3"},
	{"", "ioengine=libaio\niodepth=8", "ioengine=io_uring\niodepth=4\niodepth_batch_submit=2", "ioengine=libaio\niodepth=16\niodepth_batch_complete_min=0"},
	{"", "rate_iops=20000", "rate=40m,20m", "rate_iops=30000\nrate_process=poisson", "rate_iops=10000\nio_submit_mode=offload", "rate=100m\nrate_min=1k"},
	{"", "thinktime=50", "thinktime=100\nthinktime_blocks=4", "thinktime=200\nthinktime_spin=50\nthinktime_blocks_type=issue"},
	{"", "startdelay=1ms", "startdelay=0-2ms", "loops=2", "loops=3"},
	{"", "verify=crc32c", "verify=md5\nverify_backlog=8", "verify=crc32c\ndo_verify=0", "verify=sha1\nverify_only", "verify=null", "verify=crc32c\nverify_fatal=1"},
	{"", "norandommap", "percentage_random=50", "random_distribution=zipf:1.2", "random_distribution=pareto:0.3", "random_distribution=normal:20",
		"random_distribution=zoned:60/10:40/", "random_distribution=zoned_abs:70/64k:30/128k", "random_generator=lfsr", "ba=8k", "rw_sequencer=identical"},
	{"", "runtime=3ms", "runtime=5ms\ntime_based", "ramp_time=1ms\nruntime=4ms\ntime_based"},
	{"", "stonewall", "new_group", "exitall", "exitall\nexit_what=stonewall", "exitall\nexit_what=all", "filename=shared", "wait_for=j0", "group_reporting"},
	{"", "nrfiles=3", "nrfiles=4\nfile_service_type=random:2", "nrfiles=2\nfile_service_type=sequential", "nrfiles=3\nopenfiles=1",
		"nrfiles=5\nfile_service_type=zipf:1.1", "nrfiles=3\nfile_service_type=normal:30\nopenfiles=2", "nrfiles=2\nfilename_format=sh.$filenum"},
}

// TestRunOptionCombinations runs random combinations of the modelled
// options: each must be rejected before running, or run to its end within
// a wall-clock bound, with no panic and no model deadlock. A job may end
// with fio's errors for its options (a failed verify, a rate_min not met).
func TestRunOptionCombinations(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 40
	}
	rng := rand.New(rand.NewPCG(42, 1))
	ran, rejected := 0, 0
	for i := range n {
		var b strings.Builder
		b.WriteString("[global]\ndirect=1\n")
		jobs := 1 + rng.IntN(3)
		for k := range jobs {
			fmt.Fprintf(&b, "[j%d]\n", k)
			for _, group := range comboOptions {
				if line := group[rng.IntN(len(group))]; line != "" {
					b.WriteString(line + "\n")
				}
			}
		}
		src := b.String()
		specs, err := Parse(fmt.Sprintf("combo%d.fio", i), strings.NewReader(src), noEnv)
		if err != nil {
			var pe *ParseError
			require.ErrorAs(t, err, &pe, src)
			rejected++
			continue
		}
		cfg := stack.Default()
		require.NoError(t, cfg.SetArg("device.capacity=256m"))
		st, err := stack.Build(cfg, uint64(i+1))
		require.NoError(t, err)
		done := make(chan error, 1)
		var res *Result
		go func() {
			var err error
			res, err = Run(st.Engine, st.FS, specs, RunOptions{AppPerIO: time.Microsecond})
			done <- err
		}()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("combination %d did not finish:\n%s", i, src)
		}
		_ = st.Engine.Close()
		if errors.Is(err, ErrJob) {
			rejected++
			continue
		}
		require.NoError(t, err, src)
		for _, g := range res.Groups {
			for _, j := range g.Jobs {
				switch j.Error {
				case 0, int(syscall.EILSEQ), int(syscall.EIO), int(syscall.ENOSPC):
				default:
					t.Fatalf("combination %d: job %s: error %d %s\n%s", i, j.Name, j.Error, j.ErrorMsg, src)
				}
			}
		}
		ran++
	}
	t.Logf("%d combinations: %d ran, %d rejected", n, ran, rejected)
	require.Greater(t, ran, n/2)
}

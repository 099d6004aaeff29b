package workload

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/stack"
	"github.com/blksim/blksim/writeback"
)

// stuckInode is an inode a stuck fsync announces itself on.
type stuckInode struct{}

func (stuckInode) ID() uint64        { return 1 << 40 }
func (stuckInode) DirtyPages() int64 { return 0 }

// A run whose last task is blocked forever while the flusher re-arms its
// periodic timer forever ends with the deadlock error instead of hanging.
// The shape is f2fs's: an fsync stuck while announced as a WB_SYNC_ALL
// writer makes every flusher pass skip the job's dirty file (the
// sync-request skip), so the flusher never cleans it and never stops.
func TestRunReportsStallAsDeadlock(t *testing.T) {
	cfg := stack.Default()
	require.NoError(t, cfg.SetArg("fs=f2fs"))
	st, err := stack.Build(cfg, 1)
	require.NoError(t, err)
	wb := st.FS.Writeback()
	require.NotNil(t, wb)
	st.Engine.Go("stuck-fsync", func(tk *sim.Task) {
		wb.BeginWritepages(stuckInode{}, &writeback.Control{SyncMode: writeback.SyncAll})
		var never sim.Completion
		never.Wait(tk)
	})
	specs := parseString(t, "[w]\nrw=write\nbs=4k\nsize=64k\nioengine=psync\n")

	// Without stall detection Run would never return; fail, rather than
	// hang, if it does not return soon.
	done := make(chan error, 1)
	go func() { _, err := Run(st.Engine, st.FS, specs, RunOptions{AppPerIO: st.AppPerIO}); done <- err }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("workload.Run hangs on a stalled run") // leaks the engine
	}
	t.Cleanup(func() { _ = st.Close() })

	var stall *sim.StallError
	require.ErrorAs(t, err, &stall)
	assert.Regexp(t, `^workload: 1 jobs blocked forever at [0-9.]+(µs|ms|s) \(a model deadlock\): stuck-fsync$`, err.Error())
	assert.Positive(t, wb.DirtyPages(), "the flusher never cleaned the job's file")
	assert.GreaterOrEqual(t, st.Engine.Now(), stall.Since+sim.Time(stallLimit-5*time.Second))
	assert.Zero(t, st.Engine.StallLimit(), "Run restores the engine's limit")
}

// daemonTimer re-arms itself every 5 s as daemon work, left more times
// (standing in for forever: without stall detection the engine drains at
// about 2.8 hours instead of hanging).
type daemonTimer struct {
	e    *sim.Engine
	left int
}

func (d *daemonTimer) Fire(uint64) {
	if d.left--; d.left > 0 {
		d.e.AfterDaemon(5*time.Second, d, 0)
	}
}

// runEngine turns a stall into the runner's deadlock error, keeps a
// limit the caller set, and still reports tasks left when the engine
// drains.
func TestRunEngineDeadlocks(t *testing.T) {
	tests := []struct {
		name   string
		limit  time.Duration // the caller's
		ticks  bool          // a daemon timer runs forever
		want   string
		stall  bool
		wantAt time.Duration // the clock at the end
	}{
		{
			name: "stall", ticks: true, stall: true,
			want:   "workload: 2 jobs blocked forever at 1s (a model deadlock): fio:a:0, fio:b:1",
			wantAt: time.Hour,
		},
		{
			name: "stall, the caller's limit", limit: time.Minute, ticks: true, stall: true,
			want:   "workload: 2 jobs blocked forever at 1s (a model deadlock): fio:a:0, fio:b:1",
			wantAt: time.Minute,
		},
		{
			name:   "drained",
			want:   "workload: 2 jobs blocked forever at 1s (a model deadlock)",
			wantAt: time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := sim.New(sim.Options{Seed: 1})
			t.Cleanup(func() { _ = e.Close() })
			e.SetStallLimit(tt.limit)
			var never sim.Completion
			for _, name := range []string{"fio:b:1", "fio:a:0"} {
				e.Go(name, func(tk *sim.Task) { tk.Sleep(time.Second); never.Wait(tk) })
			}
			if tt.ticks {
				e.AfterDaemon(0, &daemonTimer{e: e, left: 2000}, 0)
			}
			err := runEngine(e)
			require.EqualError(t, err, tt.want)
			assert.Equal(t, tt.stall, errors.As(err, new(*sim.StallError)))
			assert.Equal(t, sim.Time(tt.wantAt), e.Now())
			assert.Equal(t, tt.limit, e.StallLimit(), "the caller's limit is kept")
		})
	}
}

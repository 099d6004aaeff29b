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
// With a small dirty limit the job itself is not blocked but throttled:
// it pauses in balance_dirty_pages for ever, which is polling, not
// progress.
func TestRunReportsStallAsDeadlock(t *testing.T) {
	tests := []struct {
		name, size string
		set        []string
		paused     bool // the job is stuck in dirty-throttle pauses
	}{
		{name: "job done, flusher ticking", size: "64k"},
		{name: "job throttled at the dirty limit", size: "64m", set: []string{"writeback.dirty_bytes=4m"}, paused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := stack.Default()
			for _, a := range append([]string{"fs=f2fs"}, tt.set...) {
				require.NoError(t, cfg.SetArg(a))
			}
			st, err := stack.Build(cfg, 1)
			require.NoError(t, err)
			wb := st.FS.Writeback()
			require.NotNil(t, wb)
			st.Engine.Go("stuck-fsync", func(tk *sim.Task) {
				wb.BeginWritepages(stuckInode{}, &writeback.Control{SyncMode: writeback.SyncAll})
				var never sim.Completion
				never.Wait(tk)
			})
			specs := parseString(t, "[w]\nrw=write\nbs=4k\nsize="+tt.size+"\nioengine=psync\n")

			// Without stall detection Run would never return; fail, rather
			// than hang, if it does not return soon.
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
			assert.ErrorIs(t, err, ErrDeadlock)
			want := `^workload: 1 jobs blocked forever at [0-9.]+(µs|ms|s) \(a model deadlock\): stuck-fsync$`
			if tt.paused {
				want = `^workload: 2 jobs blocked forever at [0-9.]+(µs|ms|s) \(a model deadlock\): fio:w:0, stuck-fsync$`
				assert.Positive(t, wb.Stats().LimitPauses, "the job paused at the dirty limit")
			}
			assert.Regexp(t, want, err.Error())
			assert.Positive(t, wb.DirtyPages(), "the flusher never cleaned the job's file")
			assert.GreaterOrEqual(t, st.Engine.Now(), stall.Since+sim.Time(time.Hour-5*time.Second))
			assert.Zero(t, st.Engine.StallLimit(), "Run restores the engine's limit")
		})
	}
}

// The limit is an hour, or twice the longest wait for periodic writeback
// when the writeback settings make that longer.
func TestStallLimitFollowsWriteback(t *testing.T) {
	for _, tt := range []struct {
		set  []string
		want time.Duration
	}{
		{want: time.Hour},
		{set: []string{"writeback.dirty_expire_centisecs=360000", "writeback.dirty_writeback_centisecs=6000"}, want: 2 * (time.Hour + time.Minute)},
	} {
		cfg := stack.Default()
		for _, a := range append([]string{"fs=f2fs"}, tt.set...) {
			require.NoError(t, cfg.SetArg(a))
		}
		st, err := stack.Build(cfg, 1)
		require.NoError(t, err)
		assert.Equal(t, tt.want, stallLimit(st.FS), "%v", tt.set)
		require.NoError(t, st.Close())
	}
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
			err := runEngine(e, time.Hour)
			require.EqualError(t, err, tt.want)
			assert.ErrorIs(t, err, ErrDeadlock)
			assert.Equal(t, tt.stall, errors.As(err, new(*sim.StallError)))
			assert.Equal(t, sim.Time(tt.wantAt), e.Now())
			assert.Equal(t, tt.limit, e.StallLimit(), "the caller's limit is kept")
		})
	}
}

// A task left blocked when no event remains (nothing ticks, so no stall
// is detected) is a deadlock too, and matches ErrDeadlock.
func TestRunReportsBlockedTaskAsDeadlock(t *testing.T) {
	st, err := stack.Build(stack.Default(), 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	st.Engine.Go("stuck", func(tk *sim.Task) {
		var never sim.Completion
		never.Wait(tk)
	})
	specs := parseString(t, "[r]\nrw=randread\nbs=4k\nsize=64k\ndirect=1\nioengine=psync\n")
	_, err = Run(st.Engine, st.FS, specs, RunOptions{AppPerIO: st.AppPerIO})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrDeadlock)
	var stall *sim.StallError
	assert.False(t, errors.As(err, &stall), "no event was left: not a stall")
	assert.Regexp(t, `^workload: 1 jobs blocked forever at [0-9.]+(µs|ms|s) \(a model deadlock\)$`, err.Error())
}

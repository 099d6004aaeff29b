package stack

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev/realdev"
	"github.com/blksim/blksim/sim/wallclock"
	"github.com/blksim/blksim/workload"
)

// TestRealDeviceInterrupt runs a long time_based job on a real temporary
// file, interrupts it (as SIGINT does), and checks the run stops soon with
// results, and that the file then reads back without corruption.
func TestRealDeviceInterrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev.dat")
	c := Default()
	require.NoError(t, c.SetArg("ext4.iomap_dio=true"))
	require.NoError(t, c.SetRealDevice("file:"+path+",size=64m", realdev.Options{}))
	assert.Equal(t, "0", c.Get("host.syscall"), "real mode zeroes the host costs the device time contains")
	st, err := Build(c, 1)
	if errors.Is(err, realdev.ErrNoDirectIO) || errors.Is(err, realdev.ErrNotSupported) {
		t.Skipf("no real device here: %v", err)
	}
	require.NoError(t, err)
	defer st.Close()
	specs, err := workload.ParseCommandLine([]workload.CommandLineOption{
		{Name: "name", Value: "j", HasValue: true}, {Name: "rw", Value: "randrw", HasValue: true},
		{Name: "bs", Value: "4k", HasValue: true}, {Name: "size", Value: "32m", HasValue: true},
		{Name: "direct", Value: "1", HasValue: true}, {Name: "numjobs", Value: "4", HasValue: true},
		{Name: "filename", Value: "f", HasValue: true}, {Name: "verify", Value: "crc32c", HasValue: true},
		{Name: "runtime", Value: "30", HasValue: true}, {Name: "time_based", Value: "1", HasValue: true},
	}, workload.ParseOptions{})
	require.NoError(t, err)
	var stopAll func()
	st.Wall.OnInterrupt(handlerFunc(func(uint64) { stopAll() }), 0)
	go func() {
		time.Sleep(300 * time.Millisecond)
		st.Wall.Interrupt()
	}()
	start := time.Now()
	res, err := workload.Run(st.Engine, st.FS, specs, workload.RunOptions{Interrupt: func(f func()) { stopAll = f }})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 10*time.Second)
	var ios uint64
	for _, g := range res.Groups {
		for _, j := range g.Jobs {
			assert.Zero(t, j.Error, j.ErrorMsg)
			ios += j.Read.IOs + j.Write.IOs
		}
	}
	assert.Positive(t, ios)
	s := st.Real.Stats()
	assert.Zero(t, s.CorruptSectors)
	assert.Zero(t, s.Errors)
	assert.Zero(t, st.Wall.Outstanding(), "no IO left in flight")
}

type handlerFunc func(uint64)

func (f handlerFunc) Fire(a uint64) { f(a) }

func TestSetRealDeviceBadSpec(t *testing.T) {
	c := Default()
	err := c.SetRealDevice("disk:/dev/sda", realdev.Options{})
	assert.ErrorIs(t, err, ErrConfig)
	assert.ErrorIs(t, err, realdev.ErrBadSpec)
}

func TestWallClockKeys(t *testing.T) {
	c := Default()
	w := c.NewWallClock()
	assert.Equal(t, wallclock.DefaultSpin, w.Spin, "wall.spin defaults to the clock's own default")
	assert.Equal(t, wallclock.DefaultIdleSpin, w.IdleSpin, "wall.idle_spin defaults to the clock's own default")
	assert.Equal(t, wallclock.DefaultIdleSpinInFlight, w.IdleSpinInFlight, "wall.idle_spin_inflight defaults to the clock's own default")

	require.NoError(t, c.SetArg("wall.spin=20us"))
	require.NoError(t, c.SetArg("wall.idle_spin=0"))
	require.NoError(t, c.SetArg("wall.idle_spin_inflight=64"))
	w = c.NewWallClock()
	assert.Equal(t, 64, w.IdleSpinInFlight)
	assert.Equal(t, 20*time.Microsecond, w.Spin)
	assert.Zero(t, w.IdleSpin)

	c, err := Parse("s.toml", []byte("wall.spin = \"50us\"\nwall.idle_spin = \"1ms\"\n"), "")
	require.NoError(t, err)
	w = c.NewWallClock()
	assert.Equal(t, 50*time.Microsecond, w.Spin)
	assert.Equal(t, time.Millisecond, w.IdleSpin)

	for _, bad := range []string{"wall.spin=-1us", "wall.idle_spin=fast", "wall.poll=1us"} {
		err := Default().SetArg(bad)
		assert.ErrorIs(t, err, ErrConfig, bad)
		k, _, _ := strings.Cut(bad, "=")
		assert.Contains(t, err.Error(), k, "the error names the key")
	}
}

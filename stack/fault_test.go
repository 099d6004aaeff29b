package stack_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/stack"
)

func TestFaultKeysOffByDefault(t *testing.T) {
	st, err := build(t, stack.Default())
	require.NoError(t, err)
	_, wrapped := st.Device.(*blockdev.FaultDevice)
	assert.False(t, wrapped, "no fault.op: the device model is not wrapped")
}

// TestFaultKeysWrapDevice: with fault.op set, the queue sits on a
// FaultDevice over the device model, which fails what the keys select.
func TestFaultKeysWrapDevice(t *testing.T) {
	c := stack.Default()
	for _, kv := range []string{"fault.op=write", "fault.sectors=1m-2m", "fault.after=1", "fault.every=2",
		"fault.count=1", "fault.errno=ENOSPC", "fault.latency=2ms"} {
		require.NoError(t, c.SetArg(kv))
	}
	st, err := build(t, c)
	require.NoError(t, err)
	fd, ok := st.Device.(*blockdev.FaultDevice)
	require.True(t, ok, "%T", st.Device)
	assert.Same(t, fd, st.Queue.Device())
	assert.Equal(t, 2*time.Millisecond, fd.Latency)
	assert.Equal(t, fd.Unwrap().Name(), st.Device.Name())

	var errs []error
	e := st.Engine
	for i := range 5 {
		b := &blockdev.Bio{Op: blockdev.OpWrite, Sector: 2048 + int64(i)*8, Bytes: 4096, End: bioEnd(func(b *blockdev.Bio) { errs = append(errs, b.Err) })}
		e.AfterFunc(time.Duration(i)*10*time.Millisecond, func() { st.Queue.Submit(b) })
	}
	require.NoError(t, e.Run(-1))
	require.Len(t, errs, 5)
	var failed []int
	for i, err := range errs {
		if err != nil {
			assert.ErrorIs(t, err, syscall.ENOSPC)
			failed = append(failed, i)
		}
	}
	assert.Equal(t, []int{2}, failed, "after 1, every 2nd, at most 1")
	assert.Equal(t, [2]uint64{0, 1}, fd.Injected())
}

type bioEnd func(b *blockdev.Bio)

func (f bioEnd) EndBio(b *blockdev.Bio) { f(b) }

// TestFaultKeysSameSeedSameFaults: the probability draws come from the
// engine's seed.
func TestFaultKeysSameSeedSameFaults(t *testing.T) {
	faults := func(seed uint64) []int {
		c := stack.Default()
		require.NoError(t, c.SetArg("fault.op=any"))
		require.NoError(t, c.SetArg("fault.probability=0.25"))
		st, err := stack.Build(c, seed)
		require.NoError(t, err)
		defer st.Close()
		var failed []int
		for i := range 100 {
			b := &blockdev.Bio{Op: blockdev.Op(i % 2), Sector: int64(i) * 8, Bytes: 4096}
			b.End = bioEnd(func(b *blockdev.Bio) {
				if b.Err != nil {
					failed = append(failed, i)
				}
			})
			st.Engine.AfterFunc(time.Duration(i)*time.Millisecond, func() { st.Queue.Submit(b) })
		}
		require.NoError(t, st.Engine.Run(-1))
		return failed
	}
	a := faults(3)
	assert.Equal(t, a, faults(3))
	assert.NotEqual(t, a, faults(4))
	assert.NotEmpty(t, a)
}

func TestFaultKeysRejectDAX(t *testing.T) {
	c := stack.Default()
	require.NoError(t, c.SetArg("device.profile=pmem-nvdimm"))
	require.NoError(t, c.SetArg("dax=true"))
	require.NoError(t, c.SetArg("fault.op=read"))
	_, err := build(t, c)
	require.Error(t, err)
	assert.ErrorIs(t, err, stack.ErrConfig)
	assert.Contains(t, err.Error(), `--set fault.op: `)
	assert.Contains(t, err.Error(), `key "fault.op"`)
}

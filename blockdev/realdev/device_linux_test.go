package realdev

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/sim/wallclock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// done collects completed requests.
type done struct{ reqs []*blockdev.Request }

func (d *done) CompleteRequest(r *blockdev.Request) { d.reqs = append(d.reqs, r) }

// openTemp opens a new device file in a temporary directory, skipping the
// test where the directory's filesystem refuses O_DIRECT or io_uring is
// unavailable.
func openTemp(t *testing.T, e *sim.Engine, c *wallclock.Clock, size string) (*Device, string) {
	return openTempWith(t, e, c, size, Options{QueueDepth: 16})
}

// openTempWith is openTemp with options.
func openTempWith(t *testing.T, e *sim.Engine, c *wallclock.Clock, size string, opt Options) (*Device, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dev.dat")
	sp, err := ParseSpec("file:" + path + ",size=" + size)
	require.NoError(t, err)
	d, err := Open(e, c, sp, opt)
	if errors.Is(err, ErrNoDirectIO) || errors.Is(err, ErrNotSupported) {
		t.Skipf("no real device here: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d, path
}

// rig is a wall-clock engine with a new temporary device on it whose
// completions are collected in got.
type rig struct {
	e    *sim.Engine
	d    *Device
	got  *done
	path string
}

// newRig opens a rig's device of size with opt (QueueDepth 0 means 16),
// skipping as openTemp does.
func newRig(t *testing.T, size string, opt Options) rig {
	t.Helper()
	c := wallclock.New()
	e := sim.New(sim.Options{Clock: c})
	t.Cleanup(func() { e.Close() })
	if opt.QueueDepth == 0 {
		opt.QueueDepth = 16
	}
	d, path := openTempWith(t, e, c, size, opt)
	got := &done{}
	d.Attach(got)
	return rig{e: e, d: d, got: got, path: path}
}

func newReq(op blockdev.Op, sector, bytes int64, st blockdev.Stamp) *blockdev.Request {
	b := &blockdev.Bio{Op: op, Sector: sector, Bytes: bytes, Stamp: st, CollectData: op == blockdev.OpRead}
	return &blockdev.Request{Op: op, Sector: sector, Bytes: bytes, Bios: []*blockdev.Bio{b}}
}

// run submits reqs on the engine (all at once) and runs it to the end.
func run(t *testing.T, e *sim.Engine, d *Device, reqs ...*blockdev.Request) {
	t.Helper()
	e.AfterFunc(0, func() {
		for _, r := range reqs {
			d.Submit(r)
		}
	})
	require.NoError(t, e.Run(-1))
}

// Both ways of collecting completions (the engine goroutine in
// io_uring_enter, or a reaper goroutine) write, read back and verify the
// same stamps.
func TestWriteReadStamps(t *testing.T) {
	for _, reaper := range []bool{false, true} {
		t.Run(map[bool]string{false: "engine reaps", true: "reaper goroutine"}[reaper], func(t *testing.T) {
			testWriteReadStamps(t, reaper)
		})
	}
}

func testWriteReadStamps(t *testing.T, reaper bool) {
	rg := newRig(t, "4m", Options{Reaper: reaper})
	e, d, got := rg.e, rg.d, rg.got
	if !reaper && !d.polled {
		t.Skip("this kernel's io_uring_enter takes no timeout (before 5.11): only the reaper runs")
	}
	assert.Equal(t, reaper, !d.polled)
	assert.Equal(t, int64(4<<20), d.Capacity())
	lbs := int64(d.Limits().LogicalBlockSize)
	s1, s2 := blockdev.Stamp{Writer: 1, Seq: 10}, blockdev.Stamp{Writer: 2, Seq: 20}
	run(t, e, d, newReq(blockdev.OpWrite, 0, 64<<10, s1), newReq(blockdev.OpWrite, 256, 4096, s2))
	require.Len(t, got.reqs, 2)
	for _, r := range got.reqs {
		require.NoError(t, r.Err)
	}
	rd := newReq(blockdev.OpRead, 0, 1<<20, blockdev.Stamp{})
	run(t, e, d, rd)
	require.NoError(t, rd.Err)
	assert.Equal(t, []blockdev.StampRun{
		{Sector: 0, Sectors: 128, Stamp: s1},
		{Sector: 128, Sectors: 128},
		{Sector: 256, Sectors: 8, Stamp: s2},
		{Sector: 264, Sectors: 2048 - 264},
	}, rd.Bios[0].Data)
	st := d.Stats()
	assert.Equal(t, uint64(2), st.Writes)
	assert.Equal(t, uint64(1), st.Reads)
	assert.Zero(t, st.CorruptSectors)
	assert.True(t, st.Created)
	assert.Equal(t, uint64(2048-128-8), st.ForeignSectors)

	// Out of range: refused, never written.
	bad := newReq(blockdev.OpWrite, 4<<20/512-lbs/512, 2*lbs, s1)
	run(t, e, d, bad)
	assert.ErrorIs(t, bad.Err, syscall.EIO)
	assert.Equal(t, uint64(1), d.Stats().Errors)
}

func TestCorruptSectorIsReported(t *testing.T) {
	rg := newRig(t, "1m", Options{})
	e, d, path := rg.e, rg.d, rg.path
	run(t, e, d, newReq(blockdev.OpWrite, 0, 8192, blockdev.Stamp{Writer: 3, Seq: 1}))
	// Damage sector 5's header behind blksim's back (buffered, synced),
	// and copy sector 1 over sector 2 (a misdirected write).
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	sec1 := make([]byte, 512)
	_, err = f.ReadAt(sec1, 512)
	require.NoError(t, err)
	_, err = f.WriteAt(sec1, 2*512)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0xff}, 5*512+offSeq)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	rd := newReq(blockdev.OpRead, 0, 8192, blockdev.Stamp{})
	run(t, e, d, rd)
	require.Error(t, rd.Err)
	assert.ErrorIs(t, rd.Err, ErrCorrupt)
	assert.ErrorIs(t, rd.Err, syscall.EIO)
	st := d.Stats()
	assert.Equal(t, uint64(2), st.CorruptSectors)
	assert.Equal(t, int64(2), st.FirstCorrupt)
	assert.Contains(t, st.FirstCorruptWhy, "names sector 1")
}

func TestSafety(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "foreign.dat")
	require.NoError(t, os.WriteFile(foreign, make([]byte, 1<<20), 0o644))
	c := wallclock.New()
	e := sim.New(sim.Options{Clock: c})
	defer e.Close()
	_, err := Open(e, c, Spec{Kind: KindFile, Path: foreign}, Options{})
	if errors.Is(err, ErrNoDirectIO) {
		t.Skipf("no O_DIRECT here: %v", err)
	}
	assert.ErrorIs(t, err, ErrNotOurs)
	d, err := Open(e, c, Spec{Kind: KindFile, Path: foreign}, Options{Force: true})
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), d.Capacity())
	require.NoError(t, d.Close())

	// A file blksim created is reused without --force, at its size.
	mine := filepath.Join(dir, "mine.dat")
	d, err = Open(e, c, Spec{Kind: KindFile, Path: mine, Size: 1 << 20}, Options{NoFill: true})
	require.NoError(t, err)
	require.NoError(t, d.Close())
	d, err = Open(e, c, Spec{Kind: KindFile, Path: mine}, Options{})
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), d.Capacity())
	require.NoError(t, d.Close())

	// Missing file without a size; a device named as a file; a file as blk.
	_, err = Open(e, c, Spec{Kind: KindFile, Path: filepath.Join(dir, "none")}, Options{})
	assert.ErrorContains(t, err, "give its size")
	_, err = Open(e, c, Spec{Kind: KindFile, Path: "/dev/null"}, Options{})
	assert.Error(t, err)
	_, err = Open(e, c, Spec{Kind: KindBlock, Path: mine}, Options{})
	assert.ErrorContains(t, err, "not a block device")
}

// TestMountedDeviceRefused: the root filesystem's device is mounted.
func TestMountedDeviceRefused(t *testing.T) {
	b, err := os.ReadFile("/proc/mounts")
	require.NoError(t, err)
	var dev string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[1] == "/" && strings.HasPrefix(f[0], "/dev/") {
			dev = f[0]
		}
	}
	if dev == "" {
		t.Skip("the root filesystem is not on a /dev block device here")
	}
	c := wallclock.New()
	e := sim.New(sim.Options{Clock: c})
	defer e.Close()
	_, err = Open(e, c, Spec{Kind: KindBlock, Path: dev}, Options{})
	require.Error(t, err)
	if !errors.Is(err, ErrInUse) {
		assert.ErrorIs(t, err, os.ErrPermission, "want ErrInUse (or no permission to look)")
	}
}

// newLoop attaches a loop device (direct IO on) to an 8 MiB image whose
// contents are img (zeros if nil) and returns its path; the test skips
// when it cannot (not root, no losetup, no loop devices).
func newLoop(t *testing.T, img []byte) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loop devices need root")
	}
	if _, err := exec.LookPath("losetup"); err != nil {
		t.Skip("no losetup")
	}
	back := filepath.Join(t.TempDir(), "loop.img")
	b := make([]byte, 8<<20)
	copy(b, img)
	require.NoError(t, os.WriteFile(back, b, 0o644))
	out, err := exec.Command("losetup", "-f", "--show", "--direct-io=on", back).CombinedOutput()
	if err != nil {
		t.Skipf("losetup failed (no loop devices in this container?): %v: %s", err, out)
	}
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", loop).Run() })
	return loop
}

// A block device holding a filesystem is not scratch space even when it
// is not mounted: Open refuses it (ErrHasData, naming the format) unless
// Force is set.
func TestBlockDeviceWithFilesystemRefused(t *testing.T) {
	img := make([]byte, 4096)
	copy(img[0x438:], []byte{0x53, 0xEF}) // an ext4 superblock's magic
	loop := newLoop(t, img)
	c := wallclock.New()
	e := sim.New(sim.Options{Clock: c})
	defer e.Close()
	sp, err := ParseSpec("blk:" + loop)
	require.NoError(t, err)
	_, err = Open(e, c, sp, Options{})
	require.ErrorIs(t, err, ErrHasData)
	assert.ErrorContains(t, err, "ext2/3/4")
	d, err := Open(e, c, sp, Options{Force: true})
	require.NoError(t, err)
	require.NoError(t, d.Close())
}

// TestLoopDevice runs the write/read round trip on a loop device (root
// only).
func TestLoopDevice(t *testing.T) {
	loop := newLoop(t, nil)
	c := wallclock.New()
	e := sim.New(sim.Options{Clock: c})
	defer e.Close()
	sp, err := ParseSpec("blk:" + loop)
	require.NoError(t, err)
	d, err := Open(e, c, sp, Options{})
	require.NoError(t, err)
	defer d.Close()
	var got done
	d.Attach(&got)
	assert.Equal(t, int64(8<<20), d.Capacity())
	assert.Equal(t, filepath.Base(loop), d.Name())
	s := blockdev.Stamp{Writer: 9, Seq: 99}
	run(t, e, d, newReq(blockdev.OpWrite, 16, 16384, s))
	rd := newReq(blockdev.OpRead, 8, 32768, blockdev.Stamp{})
	run(t, e, d, rd)
	require.NoError(t, rd.Err)
	assert.Equal(t, []blockdev.StampRun{{Sector: 8, Sectors: 8}, {Sector: 16, Sectors: 32, Stamp: s}, {Sector: 48, Sectors: 24}}, rd.Bios[0].Data)
}

// A full queue submitted at one instant (more than maxBatch requests)
// goes to the kernel in batches; every request completes and reads back
// its own stamp.
func TestFullQueueAtOnce(t *testing.T) {
	rg := newRig(t, "4m", Options{})
	e, d, got := rg.e, rg.d, rg.got
	var w, r []*blockdev.Request
	for i := range int64(16) {
		w = append(w, newReq(blockdev.OpWrite, i*64, 4096, blockdev.Stamp{Writer: 7, Seq: uint64(i + 1)}))
		r = append(r, newReq(blockdev.OpRead, i*64, 4096, blockdev.Stamp{}))
	}
	run(t, e, d, w...)
	if d.polled {
		assert.Equal(t, uint64(16/maxBatch), d.Stats().Enters, "entered in batches of maxBatch")
	}
	run(t, e, d, r...)
	require.Len(t, got.reqs, 32)
	for i, rd := range r {
		require.NoError(t, rd.Err)
		assert.Equal(t, []blockdev.StampRun{{Sector: int64(i) * 64, Sectors: 8, Stamp: blockdev.Stamp{Writer: 7, Seq: uint64(i + 1)}}}, rd.Bios[0].Data)
	}
}

// When the ring itself fails (here its descriptor is closed under it), a
// polled device fails the requests it holds instead of leaving the run
// waiting for completions that cannot come.
func TestBrokenRingFailsRequests(t *testing.T) {
	rg := newRig(t, "1m", Options{})
	e, d, got := rg.e, rg.d, rg.got
	if !d.polled {
		t.Skip("this kernel's io_uring_enter takes no timeout (before 5.11): no polled device")
	}
	r := newReq(blockdev.OpWrite, 0, 4096, blockdev.Stamp{Writer: 1, Seq: 1})
	fd := d.ring.fd
	t.Cleanup(func() { syscall.Close(fd) })
	e.AfterFunc(0, func() {
		d.ring.fd = -1 // every io_uring_enter now fails with EBADF
		d.Submit(r)
	})
	require.NoError(t, e.Run(-1))
	require.Len(t, got.reqs, 1)
	assert.ErrorIs(t, r.Err, syscall.EIO)
	assert.ErrorIs(t, d.Close(), syscall.EBADF)
}

// Two devices on one clock: the first reaps on the engine goroutine, the
// second gets a reaper, and requests to both complete and verify.
func TestTwoDevicesOneClock(t *testing.T) {
	c := wallclock.New()
	e := sim.New(sim.Options{Clock: c})
	t.Cleanup(func() { e.Close() })
	d1, _ := openTempWith(t, e, c, "1m", Options{QueueDepth: 4})
	d2, _ := openTempWith(t, e, c, "1m", Options{QueueDepth: 4})
	if !d1.polled {
		t.Skip("this kernel's io_uring_enter takes no timeout (before 5.11): no polled device")
	}
	assert.False(t, d2.polled, "one poller per clock")
	var got1, got2 done
	d1.Attach(&got1)
	d2.Attach(&got2)
	st := blockdev.Stamp{Writer: 5, Seq: 1}
	w1, w2 := newReq(blockdev.OpWrite, 0, 4096, st), newReq(blockdev.OpWrite, 8, 4096, st)
	e.AfterFunc(0, func() { d1.Submit(w1); d2.Submit(w2) })
	require.NoError(t, e.Run(-1))
	r1, r2 := newReq(blockdev.OpRead, 0, 4096, blockdev.Stamp{}), newReq(blockdev.OpRead, 8, 4096, blockdev.Stamp{})
	e.AfterFunc(0, func() { d1.Submit(r1); d2.Submit(r2) })
	require.NoError(t, e.Run(-1))
	for _, r := range []*blockdev.Request{w1, w2, r1, r2} {
		require.NoError(t, r.Err)
	}
	assert.Equal(t, []blockdev.StampRun{{Sector: 0, Sectors: 8, Stamp: st}}, r1.Bios[0].Data)
	assert.Equal(t, []blockdev.StampRun{{Sector: 8, Sectors: 8, Stamp: st}}, r2.Bios[0].Data)
	assert.Len(t, got1.reqs, 2)
	assert.Len(t, got2.reqs, 2)
}

// A file target has a volatile cache (the filesystem's), so a flush
// reaches it and is an fdatasync of the file through io_uring: it
// completes without error, after the writes before it, and is counted
// apart from them.
func TestFlushIsFdatasync(t *testing.T) {
	rg := newRig(t, "1m", Options{Reaper: true})
	require.True(t, rg.d.Limits().VolatileCache)
	w := newReq(blockdev.OpWrite, 0, 64<<10, blockdev.Stamp{Writer: 1, Seq: 1})
	run(t, rg.e, rg.d, w)
	fl := &blockdev.Request{Op: blockdev.OpWrite, Flush: true, Bios: []*blockdev.Bio{{Op: blockdev.OpWrite, Flush: true}}}
	run(t, rg.e, rg.d, fl)
	require.NoError(t, w.Err)
	require.NoError(t, fl.Err)
	require.Len(t, rg.got.reqs, 2)
	st := rg.d.Stats()
	assert.Equal(t, uint64(1), st.Flushes)
	assert.Equal(t, uint64(1), st.Writes)
	assert.Zero(t, st.Errors)
}

package blktrace_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/blockdev/blktrace"
	"github.com/blksim/blksim/sim"
)

const (
	R = blockdev.OpRead
	W = blockdev.OpWrite
)

// TestActionWord pins the action field of every action against the values
// the kernel's blk_add_trace_* functions produce (kernel/trace/blktrace.c),
// written out from the BLK_TC_* bits of blktrace_api.h.
func TestActionWord(t *testing.T) {
	for _, tc := range []struct {
		a            blockdev.TraceAction
		op           blockdev.Op
		sync, rahead bool
		want         uint32
	}{
		{blockdev.TraceQueue, R, false, false, 0x0011_0001},       // QUEUE|READ
		{blockdev.TraceQueue, W, true, false, 0x001a_0001},        // QUEUE|WRITE|SYNC
		{blockdev.TraceBackMerge, W, false, false, 0x0012_0002},   // QUEUE|WRITE
		{blockdev.TraceFrontMerge, R, true, false, 0x0019_0003},   // QUEUE|READ|SYNC
		{blockdev.TraceGetRequest, R, false, false, 0x0011_0004},  // QUEUE|READ
		{blockdev.TraceSleep, W, false, false, 0x0012_0005},       // QUEUE|WRITE
		{blockdev.TraceRequeue, R, false, false, 0x0121_0006},     // REQUEUE|FS|READ
		{blockdev.TraceIssue, W, true, false, 0x014a_0007},        // ISSUE|FS|WRITE|SYNC
		{blockdev.TraceComplete, R, false, false, 0x0181_0008},    // COMPLETE|FS|READ
		{blockdev.TracePlug, W, true, false, 0x0011_0009},         // QUEUE|READ: traced with opf 0
		{blockdev.TraceUnplug, W, true, false, 0x0011_000a},       // QUEUE|READ
		{blockdev.TraceUnplugTimer, R, false, false, 0x0011_000b}, // QUEUE|READ
		{blockdev.TraceInsert, W, false, false, 0x0112_000c},      // QUEUE|FS|WRITE
		{blockdev.TraceSplit, W, true, false, 0x000a_000d},        // no category: WRITE|SYNC
		{blockdev.TraceSplit, R, false, false, 0x0001_000d},       // READ
		{blockdev.TraceQueue, R, false, true, 0x0811_0001},        // QUEUE|READ|AHEAD: readahead
		{blockdev.TraceComplete, R, false, true, 0x0981_0008},     // COMPLETE|FS|READ|AHEAD
		{blockdev.TraceUnplug, R, false, true, 0x0011_000a},       // QUEUE|READ: no IO, no flags
	} {
		t.Run(tc.a.Letter(), func(t *testing.T) {
			got := blktrace.ActionWord(tc.a, tc.op, tc.sync, tc.rahead)
			assert.Equal(t, tc.want, got, "%#08x", got)
		})
	}
	assert.Equal(t, uint32(0x0400_0000), blktrace.ProcessNote)
}

func TestDev(t *testing.T) {
	assert.Equal(t, uint32(8<<20|16), blktrace.Dev(8, 16))
	assert.Equal(t, uint32(259<<20|(1<<20-1)), blktrace.Dev(259, 1<<20-1))
	assert.Panics(t, func() { blktrace.Dev(1, 1<<20) })
	assert.Panics(t, func() { blktrace.Dev(1<<12, 0) })
}

// trace feeds events to a new Writer for device "sdt" (8,16) in a temporary
// directory and returns the directory after Close.
func trace(t *testing.T, evs ...blockdev.TraceEvent) string {
	t.Helper()
	dir := t.TempDir()
	w, err := blktrace.New(dir, "sdt", blktrace.Dev(8, 16))
	require.NoError(t, err)
	for i := range evs {
		w.Trace(&evs[i])
	}
	require.NoError(t, w.Close())
	return dir
}

// decodeCPU decodes the file of one CPU.
func decodeCPU(t *testing.T, dir string, cpu int) []blktrace.Record {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "sdt.blktrace."+strconv.Itoa(cpu)))
	require.NoError(t, err)
	defer f.Close()
	recs, err := blktrace.Decode(f)
	require.NoError(t, err)
	return recs
}

func ev(tm sim.Time, a blockdev.TraceAction, op blockdev.Op, sector, bytes int64, pid uint32, comm string, cpu int) blockdev.TraceEvent {
	return blockdev.TraceEvent{Time: tm, Action: a, Op: op, Sector: sector, Bytes: bytes, PID: pid, Comm: comm, CPU: cpu}
}

func TestWriterRecords(t *testing.T) {
	unplug := ev(350, blockdev.TraceUnplug, W, 7, 4096, 10, "fio", 0)
	unplug.Extra = 3
	split := ev(400, blockdev.TraceSplit, R, 2048, 128<<10, 10, "fio", 0)
	split.Extra = 2048 + 256
	split.Sync = true
	done := ev(900, blockdev.TraceComplete, W, 100, 8192, 0, "", 0)
	done.Error = 5 // EIO
	dir := trace(t,
		ev(100, blockdev.TracePlug, W, 0, 0, 10, "fio", 0),
		ev(200, blockdev.TraceQueue, W, 100, 4096, 10, "fio", 0),
		ev(250, blockdev.TraceQueue, W, 108, 4096, 20, "dd", 2),
		ev(300, blockdev.TraceBackMerge, W, 108, 4096, 20, "dd", 2),
		unplug,
		split,
		ev(500, blockdev.TraceIssue, W, 100, 8192, 20, "dd", 2),
		done,
	)

	// CPU 1 traced nothing: its file exists, empty, so blkparse reads on
	// to CPU 2; there is no CPU 3 file.
	st, err := os.Stat(filepath.Join(dir, "sdt.blktrace.1"))
	require.NoError(t, err)
	assert.Zero(t, st.Size())
	assert.NoFileExists(t, filepath.Join(dir, "sdt.blktrace.3"))

	recs := decodeCPU(t, dir, 0)
	require.Len(t, recs, 7)
	note := recs[0]
	assert.Equal(t, blktrace.ProcessNote, note.Action)
	assert.True(t, note.IsNote())
	assert.Equal(t, "fio", note.Comm())
	assert.Equal(t, []byte("fio\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), note.PDU)
	assert.Equal(t, blktrace.Record{Time: 100, Action: blktrace.ProcessNote, PID: 10, Device: 8<<20 | 16, CPU: 0, PDU: note.PDU}, note)

	assert.Equal(t, blktrace.Record{Sequence: 1, Time: 100, Action: 0x0011_0009, PID: 10, Device: 8<<20 | 16}, recs[1], "P: no sector, no size")
	assert.Equal(t, blktrace.Record{Sequence: 2, Time: 200, Sector: 100, Bytes: 4096, Action: 0x0012_0001, PID: 10, Device: 8<<20 | 16}, recs[2])
	assert.Equal(t, blktrace.Record{Sequence: 3, Time: 350, Action: 0x0011_000a, PID: 10, Device: 8<<20 | 16,
		PDU: []byte{0, 0, 0, 0, 0, 0, 0, 3}}, recs[3], "U: depth as __be64, no sector or size")
	depth, ok := recs[3].PDUInt()
	assert.True(t, ok)
	assert.Equal(t, uint64(3), depth)
	assert.Equal(t, blktrace.Record{Sequence: 4, Time: 400, Sector: 2048, Bytes: 128 << 10, Action: 0x0009_000d, PID: 10, Device: 8<<20 | 16,
		PDU: []byte{0, 0, 0, 0, 0, 0, 0x09, 0}}, recs[4], "X: new sector as __be64")

	// The completion of PID 0 (interrupt context) is noted as the idle task.
	assert.Equal(t, "swapper/0", recs[5].Comm())
	assert.Equal(t, uint32(0), recs[5].PID)
	c := recs[6]
	assert.Equal(t, uint32(5), c.Sequence, "notes take no sequence number")
	assert.Equal(t, uint32(0x0182_0008), c.Action)
	assert.Equal(t, uint16(0xfffb), c.Error, "-EIO in the 16-bit field")
	assert.Equal(t, 5, c.Errno())

	recs = decodeCPU(t, dir, 2)
	require.Len(t, recs, 4)
	assert.Equal(t, "dd", recs[0].Comm())
	for i, seq := range []uint32{0, 1, 2, 3} {
		assert.Equal(t, seq, recs[i].Sequence, "CPU 2 counts its own sequence from 1")
		assert.Equal(t, uint32(2), recs[i].CPU)
	}
	assert.Equal(t, blockdev.TraceQueue, recs[1].TraceAction())
	assert.Equal(t, blockdev.TraceBackMerge, recs[2].TraceAction())
	assert.Equal(t, blockdev.TraceIssue, recs[3].TraceAction())
}

// TestHeaderBytes pins the on-disk layout of one record on a little-endian
// machine: struct blk_io_trace's fields in order, 48 bytes, then the PDU.
func TestHeaderBytes(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("byte layout pinned for little-endian machines")
	}
	e := ev(0x0102030405, blockdev.TraceSplit, W, 0x0a0b0c0d0e, 0x1000, 0x4321, "x", 1)
	e.Extra = 0x1122334455667788
	dir := trace(t, e)
	raw, err := os.ReadFile(filepath.Join(dir, "sdt.blktrace.1"))
	require.NoError(t, err)
	require.Len(t, raw, 48+16+48+8)
	want := []byte{
		0x07, 0x74, 0x61, 0x65, // magic | version
		1, 0, 0, 0, // sequence
		0x05, 0x04, 0x03, 0x02, 0x01, 0, 0, 0, // time
		0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0, 0, 0, // sector
		0x00, 0x10, 0, 0, // bytes
		0x0d, 0x00, 0x02, 0x00, // action: SPLIT | WRITE<<16
		0x21, 0x43, 0, 0, // pid
		0x10, 0x00, 0x80, 0x00, // device 8,16
		1, 0, 0, 0, // cpu
		0, 0, // error
		8, 0, // pdu_len
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // big-endian new sector
	}
	assert.Equal(t, want, raw[64:])
	assert.Equal(t, []byte{0x07, 0x74, 0x61, 0x65, 0, 0, 0, 0}, raw[:8], "the note: magic, sequence 0")
	assert.Equal(t, []byte{0, 0, 16, 0}, raw[44:48], "the note: error 0, pdu_len 16")
}

func TestProcessNotes(t *testing.T) {
	dir := trace(t,
		ev(1, blockdev.TraceQueue, R, 0, 4096, 7, "fio", 0),
		ev(2, blockdev.TraceQueue, R, 8, 4096, 7, "fio", 0),          // same CPU: no note
		ev(3, blockdev.TraceQueue, R, 16, 4096, 8, "fio", 0),         // new PID: note
		ev(4, blockdev.TraceQueue, R, 24, 4096, 7, "fio", 1),         // new CPU: note
		ev(5, blockdev.TraceQueue, R, 32, 4096, 7, "fio-renamed", 0), // new name: note
		ev(6, blockdev.TraceQueue, R, 40, 4096, 9, "a-very-long-command-name", 0),
		ev(7, blockdev.TraceComplete, R, 0, 4096, 0, "", 1),
		ev(8, blockdev.TraceComplete, R, 8, 4096, 0, "irq", 0),
	)
	type note struct {
		pid  uint32
		comm string
		seq  uint32 // sequence of the event after it
	}
	notes := func(recs []blktrace.Record) []note {
		var out []note
		for i, r := range recs {
			if r.IsNote() {
				require.Less(t, i+1, len(recs), "a note precedes its event")
				require.Equal(t, r.PID, recs[i+1].PID)
				require.Equal(t, r.Time, recs[i+1].Time)
				out = append(out, note{r.PID, r.Comm(), recs[i+1].Sequence})
			}
		}
		return out
	}
	assert.Equal(t, []note{
		{7, "fio", 1}, {8, "fio", 3}, {7, "fio-renamed", 4}, {9, "a-very-long-com", 5}, {0, "irq", 6},
	}, notes(decodeCPU(t, dir, 0)))
	assert.Equal(t, []note{{7, "fio", 1}, {0, "swapper/1", 2}}, notes(decodeCPU(t, dir, 1)))
}

func TestCloseReplacesEarlierTrace(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"sdt.blktrace.0", "sdt.blktrace.5", "sdt.blktrace.x", "sdu.blktrace.0", "sdt.blktrace."} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("old"), 0o644))
	}
	w, err := blktrace.New(dir, "sdt", 0)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"sdt.blktrace.", "sdt.blktrace.0", "sdt.blktrace.x", "sdu.blktrace.0"}, names)
	st, err := os.Stat(filepath.Join(dir, "sdt.blktrace.0"))
	require.NoError(t, err)
	assert.Zero(t, st.Size(), "a trace without events is one empty file")
}

func TestNewNames(t *testing.T) {
	dir := t.TempDir()
	_, err := blktrace.New(dir, "", 0)
	assert.Error(t, err)

	w, err := blktrace.New(filepath.Join(dir, "sub", "dir"), "mapper/vg-lv", 0)
	require.NoError(t, err, "the directory is created")
	assert.Equal(t, filepath.Join(dir, "sub", "dir", "mapper_vg-lv.blktrace.3"), w.Path(3))
	require.NoError(t, w.Close())
	assert.FileExists(t, filepath.Join(dir, "sub", "dir", "mapper_vg-lv.blktrace.0"))

	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = blktrace.New(file, "sdt", 0)
	assert.Error(t, err, "dir is a file")
}

func TestWriterErrors(t *testing.T) {
	for _, bad := range []blockdev.TraceEvent{
		ev(1, blockdev.TraceQueue, R, 0, 4096, 1, "a", -1),
		ev(1, blockdev.TraceQueue, R, 0, 4096, 1, "a", blktrace.MaxCPUs),
		ev(-1, blockdev.TraceQueue, R, 0, 4096, 1, "a", 0),
		ev(1, blockdev.TraceQueue, R, -8, 4096, 1, "a", 0),
		ev(1, blockdev.TraceQueue, R, 0, 1<<32, 1, "a", 0),
		ev(1, blockdev.TraceQueue, R, 0, -1, 1, "a", 0),
	} {
		dir := t.TempDir()
		w, err := blktrace.New(dir, "sdt", 0)
		require.NoError(t, err)
		good := ev(0, blockdev.TraceQueue, R, 0, 4096, 1, "a", 0)
		w.Trace(&good)
		w.Trace(&bad)
		assert.ErrorIs(t, w.Err(), blktrace.ErrEvent)
		w.Trace(&good) // dropped
		err = w.Close()
		assert.ErrorIs(t, err, blktrace.ErrEvent)
		assert.Empty(t, dirNames(t, dir), "no half-written trace is left")
	}

	w, err := blktrace.New(t.TempDir(), "sdt", 0)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.ErrorIs(t, w.Close(), blktrace.ErrClosed)
	late := ev(0, blockdev.TraceQueue, R, 0, 4096, 1, "a", 0)
	w.Trace(&late)
	assert.ErrorIs(t, w.Err(), blktrace.ErrClosed)
}

func TestWriterFileError(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sdt.blktrace.0"), []byte("old"), 0o644))
	w, err := blktrace.New(dir, "sdt", 0)
	require.NoError(t, err)
	// A directory where CPU 1's file must go makes Close fail; the earlier
	// trace stays and the temporary files go.
	require.NoError(t, os.Mkdir(w.Path(1), 0o755))
	e := ev(0, blockdev.TraceQueue, R, 0, 4096, 1, "a", 1)
	w.Trace(&e)
	assert.Error(t, w.Close())
	assert.Equal(t, []string{"sdt.blktrace.0", "sdt.blktrace.1"}, dirNames(t, dir))
	old, err := os.ReadFile(filepath.Join(dir, "sdt.blktrace.0"))
	require.NoError(t, err)
	assert.Equal(t, "old", string(old))
}

// dirNames lists the names in dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A run that fails before its trace is closed (Abort), or whose trace
// cannot be written, leaves the directory as it was: the earlier trace
// intact, nothing half-written, no temporary files.
func TestAbortKeepsEarlierTrace(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sdt.blktrace.0"), []byte("old"), 0o644))
	w, err := blktrace.New(dir, "sdt", 0)
	require.NoError(t, err)
	e := ev(0, blockdev.TraceQueue, R, 0, 4096, 1, "a", 2)
	w.Trace(&e)
	require.NoError(t, w.Err())
	assert.NoFileExists(t, w.Path(2), "records stay in temporary files until Close")
	w.Abort()
	w.Abort() // a no-op, as after Close
	assert.ErrorIs(t, w.Close(), blktrace.ErrClosed)
	assert.Equal(t, []string{"sdt.blktrace.0"}, dirNames(t, dir))
	old, err := os.ReadFile(filepath.Join(dir, "sdt.blktrace.0"))
	require.NoError(t, err)
	assert.Equal(t, "old", string(old))

	bad := ev(1, blockdev.TraceQueue, R, -8, 4096, 1, "a", 0)
	w, err = blktrace.New(dir, "sdt", 0)
	require.NoError(t, err)
	w.Trace(&bad)
	assert.ErrorIs(t, w.Close(), blktrace.ErrEvent)
	assert.Equal(t, []string{"sdt.blktrace.0"}, dirNames(t, dir))
}

// New fails at once on a directory it cannot write into, rather than
// after the run at the first event.
func TestNewUnwritableDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ro")
	require.NoError(t, os.Mkdir(dir, 0o555))
	if os.Geteuid() == 0 {
		// Root writes through the mode bits; sysfs refuses it files.
		dir = "/sys/kernel"
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Skip("running as root and no /sys/kernel")
		}
	}
	_, err := blktrace.New(dir, "sdt", 0)
	assert.Error(t, err)
	assert.NoFileExists(t, filepath.Join(dir, "sdt.blktrace.0"))
}

// TestTraceAllocs checks that tracing allocates nothing once every CPU's
// file exists and every task has been noted, so a traced run keeps the
// block layer's no-allocation-per-IO property.
func TestTraceAllocs(t *testing.T) {
	w, err := blktrace.New(t.TempDir(), "sdt", 0)
	require.NoError(t, err)
	defer w.Close()
	evs := []blockdev.TraceEvent{
		ev(1, blockdev.TraceQueue, W, 0, 4096, 7, "fio", 0),
		ev(2, blockdev.TraceUnplug, W, 0, 0, 7, "fio", 0),
		ev(3, blockdev.TraceSplit, W, 0, 4096, 7, "fio", 1),
		ev(4, blockdev.TraceComplete, W, 0, 4096, 0, "", 1),
	}
	for i := range evs {
		w.Trace(&evs[i])
	}
	allocs := testing.AllocsPerRun(1000, func() {
		for i := range evs {
			w.Trace(&evs[i])
		}
	})
	assert.Zero(t, allocs)
	require.NoError(t, w.Err())
}

func TestDecodeErrors(t *testing.T) {
	dir := trace(t, ev(1, blockdev.TraceUnplug, R, 0, 0, 7, "fio", 0))
	good, err := os.ReadFile(filepath.Join(dir, "sdt.blktrace.0"))
	require.NoError(t, err)
	require.Len(t, good, 48+16+48+8)

	recs, err := blktrace.Decode(bytes.NewReader(good))
	require.NoError(t, err)
	assert.Len(t, recs, 2)

	recs, err = blktrace.Decode(bytes.NewReader(good[:len(good)-3]))
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut in the PDU")
	assert.Len(t, recs, 1, "the records before the error are returned")

	_, err = blktrace.Decode(bytes.NewReader(good[:64+20]))
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut in the header")

	bad := bytes.Clone(good)
	bad[64+2] = 0 // magic of the second record
	recs, err = blktrace.Decode(bytes.NewReader(bad))
	assert.ErrorIs(t, err, blktrace.ErrBadMagic)
	assert.Len(t, recs, 1)

	bad = bytes.Clone(good)
	binary.NativeEndian.PutUint32(bad, blktrace.Magic|6)
	_, err = blktrace.Decode(bytes.NewReader(bad))
	assert.ErrorIs(t, err, blktrace.ErrBadVersion)

	r := blktrace.NewReader(bytes.NewReader(bad))
	_, err = r.Next()
	_, err2 := r.Next()
	assert.Equal(t, err, err2, "errors are sticky")

	recs, err = blktrace.Decode(bytes.NewReader(nil))
	assert.NoError(t, err)
	assert.Empty(t, recs)
}

// TestDecodeOtherEndian decodes a record written in the other byte order,
// as blkparse does for traces taken on another machine.
func TestDecodeOtherEndian(t *testing.T) {
	var order binary.ByteOrder = binary.BigEndian
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 {
		order = binary.LittleEndian
	}
	b := make([]byte, 48+8)
	order.PutUint32(b[0:], blktrace.Magic|blktrace.Version)
	order.PutUint32(b[4:], 9)
	order.PutUint64(b[8:], 1234)
	order.PutUint64(b[16:], 4096)
	order.PutUint32(b[24:], 512)
	order.PutUint32(b[28:], 0x000a_000d)
	order.PutUint32(b[32:], 77)
	order.PutUint32(b[36:], 8<<20|1)
	order.PutUint32(b[40:], 3)
	order.PutUint16(b[44:], 0xfffb)
	order.PutUint16(b[46:], 8)
	binary.BigEndian.PutUint64(b[48:], 4097)
	recs, err := blktrace.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, blktrace.Record{Sequence: 9, Time: 1234, Sector: 4096, Bytes: 512, Action: 0x000a_000d, PID: 77,
		Device: 8<<20 | 1, CPU: 3, Error: 0xfffb, PDU: b[48:]}, recs[0])
	sec, ok := recs[0].PDUInt()
	assert.True(t, ok)
	assert.Equal(t, uint64(4097), sec)
}

func TestRecordAccessors(t *testing.T) {
	r := blktrace.Record{Action: blktrace.ActionWord(blockdev.TraceComplete, W, true, false), PDU: []byte("x")}
	assert.False(t, r.IsNote())
	assert.Equal(t, "", r.Comm(), "not a process note")
	_, ok := r.PDUInt()
	assert.False(t, ok)
	assert.Equal(t, blktrace.CatComplete|blktrace.CatFS|blktrace.CatWrite|blktrace.CatSync, r.Categories())
	assert.Equal(t, 0, r.Errno())
	r = blktrace.Record{Action: blktrace.ProcessNote, PDU: []byte("sixteen-byte-cmd")}
	assert.Equal(t, "sixteen-byte-cmd", r.Comm(), "no NUL: the whole payload")
}

func FuzzDecode(f *testing.F) {
	var e1, e2 blockdev.TraceEvent = ev(1, blockdev.TraceUnplug, R, 0, 0, 7, "fio", 0), ev(2, blockdev.TraceIssue, W, 8, 4096, 7, "fio", 0)
	e1.Extra = 4
	dir := f.TempDir()
	w, err := blktrace.New(dir, "sdt", 0)
	require.NoError(f, err)
	w.Trace(&e1)
	w.Trace(&e2)
	require.NoError(f, w.Close())
	seed, err := os.ReadFile(filepath.Join(dir, "sdt.blktrace.0"))
	require.NoError(f, err)
	f.Add(seed)
	f.Add(seed[:50])
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0x07, 0x74, 0x61, 0x65}, 30))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := blktrace.Decode(bytes.NewReader(data))
		n := 0
		for _, r := range recs {
			n += blktrace.HeaderSize + len(r.PDU)
			r.Comm()
			r.PDUInt()
			r.Errno()
		}
		if n > len(data) {
			t.Fatalf("decoded %d bytes from %d", n, len(data))
		}
		if err == nil && n != len(data) {
			t.Fatalf("clean end after %d of %d bytes", n, len(data))
		}
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, blktrace.ErrBadMagic) && !errors.Is(err, blktrace.ErrBadVersion) {
			t.Fatalf("unexpected error %v", err)
		}
	})
}

// categories returns the trace categories of the records (not the notes)
// of CPU 0's file in dir.
func categories(t *testing.T, dir string) []uint32 {
	t.Helper()
	var cats []uint32
	for _, r := range decodeCPU(t, dir, 0) {
		if !r.IsNote() {
			cats = append(cats, r.Categories())
		}
	}
	return cats
}

// A flush (REQ_PREFLUSH, no data) carries BLK_TC_FLUSH, which blkparse
// prints as the "F" of "FWS".
func TestWriterFlushCategory(t *testing.T) {
	q := ev(100, blockdev.TraceQueue, W, 0, 0, 10, "fio", 0)
	q.Sync, q.Flush = true, true
	c := ev(900, blockdev.TraceComplete, W, 0, 0, 0, "", 0)
	c.Sync, c.Flush = true, true
	assert.Equal(t, []uint32{
		blktrace.CatQueue | blktrace.CatWrite | blktrace.CatSync | blktrace.CatFlush,
		blktrace.CatComplete | blktrace.CatFS | blktrace.CatWrite | blktrace.CatSync | blktrace.CatFlush,
	}, categories(t, trace(t, q, c)))
}

// A journal commit block (REQ_PREFLUSH|REQ_FUA|REQ_META|REQ_SYNC) carries
// BLK_TC_FLUSH, BLK_TC_FUA and BLK_TC_META: blkparse's "FWFSM".
func TestWriterFUAAndMetaCategories(t *testing.T) {
	q := ev(100, blockdev.TraceQueue, W, 64, 4096, 10, "jbd2/sda-8", 0)
	q.Sync, q.Flush, q.FUA, q.Meta = true, true, true, true
	d := ev(200, blockdev.TraceIssue, W, 64, 4096, 10, "jbd2/sda-8", 0)
	d.Sync, d.Meta = true, true
	assert.Equal(t, []uint32{
		blktrace.CatQueue | blktrace.CatWrite | blktrace.CatSync | blktrace.CatFlush | blktrace.CatFUA | blktrace.CatMeta,
		blktrace.CatIssue | blktrace.CatFS | blktrace.CatWrite | blktrace.CatSync | blktrace.CatMeta,
	}, categories(t, trace(t, q, d)))
}

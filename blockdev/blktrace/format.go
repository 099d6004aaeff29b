// Package blktrace writes blksim's block-layer events in the kernel's
// blktrace binary format, so that blkparse and btt read them as they read a
// trace of a real device, and decodes such files back.
//
// The format is the kernel's struct blk_io_trace, version 7
// (include/uapi/linux/blktrace_api.h): a 48-byte header in native byte
// order followed by pdu_len bytes of payload. Records are written the way
// kernel/trace/blktrace.c writes them: the same category bits for each
// action, the same payloads (big-endian unplug depth and split sector), a
// per-CPU sequence starting at 1, and a BLK_TN_PROCESS note carrying the
// command name before a task's first event.
package blktrace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/blksim/blksim/blockdev"
)

// Format constants of struct blk_io_trace.
const (
	// Magic is BLK_IO_TRACE_MAGIC; the low byte of a record's magic field
	// holds the version.
	Magic = 0x65617400
	// Version is BLK_IO_TRACE_VERSION, the only version written and read.
	Version = 0x07
	// HeaderSize is sizeof(struct blk_io_trace).
	HeaderSize = 48
	// CommLen is TASK_COMM_LEN, the size of a process note's payload: the
	// command name, NUL-padded, at most CommLen-1 bytes of it.
	CommLen = 16
)

// Trace categories (enum blktrace_cat). A record's action field carries
// them shifted left by CategoryShift, above the action number.
const (
	CatRead     uint32 = 1 << 0  // BLK_TC_READ
	CatWrite    uint32 = 1 << 1  // BLK_TC_WRITE
	CatFlush    uint32 = 1 << 2  // BLK_TC_FLUSH
	CatSync     uint32 = 1 << 3  // BLK_TC_SYNC
	CatQueue    uint32 = 1 << 4  // BLK_TC_QUEUE
	CatRequeue  uint32 = 1 << 5  // BLK_TC_REQUEUE
	CatIssue    uint32 = 1 << 6  // BLK_TC_ISSUE
	CatComplete uint32 = 1 << 7  // BLK_TC_COMPLETE
	CatFS       uint32 = 1 << 8  // BLK_TC_FS
	CatPC       uint32 = 1 << 9  // BLK_TC_PC
	CatNotify   uint32 = 1 << 10 // BLK_TC_NOTIFY
	CatAhead    uint32 = 1 << 11 // BLK_TC_AHEAD
	CatMeta     uint32 = 1 << 12 // BLK_TC_META
	CatDiscard  uint32 = 1 << 13 // BLK_TC_DISCARD
	CatDrvData  uint32 = 1 << 14 // BLK_TC_DRV_DATA
	CatFUA      uint32 = 1 << 15 // BLK_TC_FUA

	// CategoryShift is BLK_TC_SHIFT.
	CategoryShift = 16
)

// Notify actions (enum blktrace_notify). With CatNotify in the category
// bits they form BLK_TN_PROCESS, BLK_TN_TIMESTAMP and BLK_TN_MESSAGE.
const (
	NotifyProcess   uint32 = 0 // __BLK_TN_PROCESS: PDU is the command name
	NotifyTimestamp uint32 = 1 // __BLK_TN_TIMESTAMP: PDU is wall time
	NotifyMessage   uint32 = 2 // __BLK_TN_MESSAGE: PDU is text
)

// ProcessNote is the full action word of a BLK_TN_PROCESS record.
const ProcessNote = NotifyProcess | CatNotify<<CategoryShift

// Dev encodes a device number the way the kernel's dev_t does
// (MKDEV: major in the high 12 bits, minor in the low 20), which is what
// blkparse prints as "major,minor". It panics if minor does not fit in 20
// bits or major in 12, as those numbers cannot be encoded. Avoid majors 9
// (md) and 253 (device mapper): btt treats them as remapping devices and
// leaves their dispatches out of its D histogram.
func Dev(major, minor uint32) uint32 {
	if major >= 1<<12 || minor >= 1<<20 {
		panic(fmt.Sprintf("blktrace: device %d,%d does not fit in a dev_t", major, minor))
	}
	return major<<20 | minor
}

// ActionWord returns the action field the kernel writes for action a on an
// IO with direction op and the REQ_SYNC and REQ_RAHEAD flags: the
// __BLK_TA_* number in the low 16 bits and, above them, the categories
// that __blk_add_trace and its callers in kernel/trace/blktrace.c add:
//
//   - READ or WRITE from the direction, SYNC for REQ_SYNC and AHEAD for
//     readahead (REQ_RAHEAD);
//   - QUEUE for Q, M, F, G, S, I, P, U and UT; REQUEUE for R; ISSUE for D;
//     COMPLETE for C; nothing for X (BLK_TA_SPLIT has no category);
//   - FS for the request events I, D, C and R (blk_add_trace_rq), not for
//     the bio events Q, M, F, G, S and X;
//   - P, U and UT are traced without an IO (opf 0), so they carry READ and
//     never WRITE, SYNC or AHEAD, whatever op and the flags say.
func ActionWord(a blockdev.TraceAction, op blockdev.Op, sync, rahead bool) uint32 {
	var cat uint32
	switch a {
	case blockdev.TraceQueue, blockdev.TraceBackMerge, blockdev.TraceFrontMerge,
		blockdev.TraceGetRequest, blockdev.TraceSleep:
		cat = CatQueue
	case blockdev.TraceInsert:
		cat = CatQueue | CatFS
	case blockdev.TraceRequeue:
		cat = CatRequeue | CatFS
	case blockdev.TraceIssue:
		cat = CatIssue | CatFS
	case blockdev.TraceComplete:
		cat = CatComplete | CatFS
	case blockdev.TracePlug, blockdev.TraceUnplug, blockdev.TraceUnplugTimer:
		return uint32(a) | (CatQueue|CatRead)<<CategoryShift
	case blockdev.TraceSplit:
		cat = 0
	}
	if op == blockdev.OpWrite {
		cat |= CatWrite
	} else {
		cat |= CatRead
	}
	if sync {
		cat |= CatSync
	}
	if rahead {
		cat |= CatAhead
	}
	return uint32(a) | cat<<CategoryShift
}

// Record is one decoded blk_io_trace record. Magic and version are checked
// by the decoder and not kept; every other header field is as stored.
type Record struct {
	Sequence uint32 // per-CPU sequence, from 1; 0 in notes
	Time     uint64 // nanoseconds
	Sector   uint64 // 512-byte sectors
	Bytes    uint32
	Action   uint32 // action number | categories << CategoryShift
	PID      uint32
	Device   uint32 // dev_t, see Dev
	CPU      uint32
	Error    uint16 // as the kernel stores it: the negative errno truncated
	PDU      []byte // the payload, pdu_len bytes
}

// Categories returns the category bits of r's action (Cat* values).
func (r *Record) Categories() uint32 { return r.Action >> CategoryShift }

// IsNote reports whether r is a notify record (process name, timestamp or
// message) rather than an IO event.
func (r *Record) IsNote() bool { return r.Categories()&CatNotify != 0 }

// TraceAction returns the __BLK_TA_* number of an IO event. For a note it
// returns the notify number (NotifyProcess etc.) converted, which is not a
// trace action; check IsNote first.
func (r *Record) TraceAction() blockdev.TraceAction {
	return blockdev.TraceAction(r.Action & 0xffff)
}

// Comm returns the command name of a process note: the payload up to its
// first NUL. For other records it returns "".
func (r *Record) Comm() string {
	if r.Action != ProcessNote {
		return ""
	}
	for i, c := range r.PDU {
		if c == 0 {
			return string(r.PDU[:i])
		}
	}
	return string(r.PDU)
}

// PDUInt returns the big-endian 64-bit payload of an unplug (depth) or
// split (sector where the second part starts) record, and false if the
// payload is not exactly 8 bytes.
func (r *Record) PDUInt() (uint64, bool) {
	if len(r.PDU) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(r.PDU), true
}

// Errno returns the positive errno of a failed completion, 0 on success.
func (r *Record) Errno() int { return -int(int16(r.Error)) }

// Decoding errors.
var (
	// ErrBadMagic reports a record whose magic is not BLK_IO_TRACE_MAGIC
	// in either byte order.
	ErrBadMagic = errors.New("blktrace: bad magic")
	// ErrBadVersion reports a record of a version other than Version.
	ErrBadVersion = errors.New("blktrace: unsupported version")
)

// Reader decodes blk_io_trace records from a stream, one at a time. The
// byte order is taken from the first record's magic, as blkparse does, so
// traces written on a machine of the other endianness decode too. A Reader
// is not safe for concurrent use.
type Reader struct {
	r     *bufio.Reader
	order binary.ByteOrder
	hdr   [HeaderSize]byte
	err   error
}

// NewReader returns a Reader decoding from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReader(r)}
}

// Next returns the next record. At the clean end of the stream it returns
// io.EOF; a stream that ends inside a record returns io.ErrUnexpectedEOF,
// a corrupt header ErrBadMagic or ErrBadVersion (wrapped, with the record's
// offset). After an error every later call returns the same error.
func (d *Reader) Next() (Record, error) {
	if d.err != nil {
		return Record{}, d.err
	}
	rec, err := d.next()
	if err != nil {
		d.err = err
	}
	return rec, err
}

func (d *Reader) next() (Record, error) {
	if _, err := io.ReadFull(d.r, d.hdr[:]); err != nil {
		return Record{}, err
	}
	if d.order == nil {
		switch {
		case binary.LittleEndian.Uint32(d.hdr[0:])&^0xff == Magic:
			d.order = binary.LittleEndian
		case binary.BigEndian.Uint32(d.hdr[0:])&^0xff == Magic:
			d.order = binary.BigEndian
		default:
			return Record{}, fmt.Errorf("%w %#x", ErrBadMagic, binary.NativeEndian.Uint32(d.hdr[0:]))
		}
	}
	o := d.order
	magic := o.Uint32(d.hdr[0:])
	if magic&^0xff != Magic {
		return Record{}, fmt.Errorf("%w %#x", ErrBadMagic, magic)
	}
	if magic&0xff != Version {
		return Record{}, fmt.Errorf("%w %d", ErrBadVersion, magic&0xff)
	}
	rec := Record{
		Sequence: o.Uint32(d.hdr[4:]),
		Time:     o.Uint64(d.hdr[8:]),
		Sector:   o.Uint64(d.hdr[16:]),
		Bytes:    o.Uint32(d.hdr[24:]),
		Action:   o.Uint32(d.hdr[28:]),
		PID:      o.Uint32(d.hdr[32:]),
		Device:   o.Uint32(d.hdr[36:]),
		CPU:      o.Uint32(d.hdr[40:]),
		Error:    o.Uint16(d.hdr[44:]),
	}
	if n := o.Uint16(d.hdr[46:]); n > 0 {
		rec.PDU = make([]byte, n)
		if _, err := io.ReadFull(d.r, rec.PDU); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return Record{}, err
		}
	}
	return rec, nil
}

// Decode reads every record from r until its end. It returns the records
// decoded before the first error together with that error (see
// Reader.Next); a stream that ends cleanly returns a nil error.
func Decode(r io.Reader) ([]Record, error) {
	d := NewReader(r)
	var recs []Record
	for {
		rec, err := d.Next()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return recs, err
		}
		recs = append(recs, rec)
	}
}

// putHeader encodes a header into b (at least HeaderSize bytes) in native
// byte order, with pdu_len set to pduLen.
func putHeader(b []byte, r *Record, pduLen int) {
	o := binary.NativeEndian
	o.PutUint32(b[0:], Magic|Version)
	o.PutUint32(b[4:], r.Sequence)
	o.PutUint64(b[8:], r.Time)
	o.PutUint64(b[16:], r.Sector)
	o.PutUint32(b[24:], r.Bytes)
	o.PutUint32(b[28:], r.Action)
	o.PutUint32(b[32:], r.PID)
	o.PutUint32(b[36:], r.Device)
	o.PutUint32(b[40:], r.CPU)
	o.PutUint16(b[44:], r.Error)
	o.PutUint16(b[46:], uint16(pduLen))
}

package realdev

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
)

// Load is one measurement of Measure: a block size, a number of requests
// kept in flight and the share of reads, at random offsets aligned to the
// block size (or sequential ones with Sequential).
type Load struct {
	BS         int64
	QD         int
	ReadPct    int
	Sequential bool
}

// String describes the load as fio would ("randread 4k QD1").
func (l Load) String() string {
	rw := "randrw"
	switch l.ReadPct {
	case 100:
		rw = "randread"
	case 0:
		rw = "randwrite"
	}
	if l.Sequential {
		rw = rw[len("rand"):]
	}
	if rw == "randrw" || rw == "rw" {
		rw = fmt.Sprintf("%s%d", rw, l.ReadPct)
	}
	return fmt.Sprintf("%s %dk QD%d", rw, l.BS>>10, l.QD)
}

// Measured is what Measure saw: requests completed per second of the
// measuring window, their mean latency (submission to completion, as
// fio's clat on the device) and throughput.
type Measured struct {
	IOPS    float64
	MeanLat time.Duration
	MBps    float64
	IOs     int
}

// Measurer drives a load straight at a device (no filesystem, no queue),
// as fio does on a raw device, and records what completes. Engine
// goroutine only.
type Measurer struct {
	e      *sim.Engine
	d      blockdev.Device
	region int64
	rng    *rand.Rand
	seq    uint64

	load     Load
	deadline sim.Time
	next     int64
	ios      int
	bytes    int64
	latSum   sim.Time
	start    sim.Time
	err      error
}

// NewMeasurer returns a measurer of d on engine e over the first region
// bytes of d (0: all of it).
func NewMeasurer(e *sim.Engine, d blockdev.Device, region int64) *Measurer {
	if region <= 0 || region > d.Capacity() {
		region = d.Capacity()
	}
	m := &Measurer{e: e, d: d, region: region, rng: rand.New(rand.NewPCG(1, 2))}
	d.Attach(m)
	return m
}

// Measure runs l for a warm-up of dur/10 and then a window of dur
// (stretched to the first completion if none falls inside it), and
// returns what completed in the window. A failed request ends the
// measurement with its error.
func (m *Measurer) Measure(l Load, dur time.Duration) (Measured, error) {
	if l.BS <= 0 || l.BS%int64(m.d.Limits().LogicalBlockSize) != 0 || l.BS > m.region || l.QD < 1 {
		return Measured{}, fmt.Errorf("realdev: bad load %v", l)
	}
	m.load, m.err = l, nil
	warm := m.e.Now() + sim.Time(dur/10)
	m.deadline = warm + sim.Time(dur)
	m.ios, m.bytes, m.latSum, m.start = 0, 0, 0, warm
	for range l.QD {
		m.e.AfterFunc(0, m.issue)
	}
	if err := m.e.Run(-1); err != nil {
		return Measured{}, err
	}
	if m.err != nil {
		return Measured{}, m.err
	}
	el := time.Duration(m.deadline - m.start)
	if m.ios == 0 || el <= 0 {
		return Measured{}, fmt.Errorf("realdev: %v: nothing completed", l)
	}
	return Measured{IOPS: float64(m.ios) / el.Seconds(), MeanLat: time.Duration(m.latSum) / time.Duration(m.ios),
		MBps: float64(m.bytes) / el.Seconds() / 1e6, IOs: m.ios}, nil
}

// issue starts one request of the load.
func (m *Measurer) issue() {
	l := m.load
	op := blockdev.OpRead
	if m.rng.IntN(100) >= l.ReadPct {
		op = blockdev.OpWrite
	}
	var off int64
	if l.Sequential {
		off = m.next
		m.next += l.BS
		if m.next+l.BS > m.region {
			m.next = 0
		}
	} else {
		off = m.rng.Int64N(m.region/l.BS) * l.BS
	}
	m.seq++
	b := &blockdev.Bio{Op: op, Sector: off / blockdev.SectorSize, Bytes: l.BS, Stamp: blockdev.Stamp{Writer: 0xCA11, Seq: m.seq}}
	r := &blockdev.Request{Op: op, Sector: b.Sector, Bytes: l.BS, Bios: []*blockdev.Bio{b}, Started: m.e.Now()}
	m.d.Submit(r)
}

// CompleteRequest records r and keeps the depth until the deadline.
func (m *Measurer) CompleteRequest(r *blockdev.Request) {
	now := m.e.Now()
	if r.Err != nil && m.err == nil {
		m.err = r.Err
	}
	if now >= m.start && (now <= m.deadline || m.ios == 0) {
		// A loaded machine may complete nothing within the window:
		// then the window stretches to the first completion after it,
		// so a slow target measures slow rather than failing.
		m.deadline = max(m.deadline, now)
		m.ios++
		m.bytes += r.Bytes
		m.latSum += now - r.Started
	}
	if now < m.deadline && m.err == nil {
		m.issue()
	}
}

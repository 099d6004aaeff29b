package writeback_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/blksim/blksim/sim"
	"github.com/blksim/blksim/writeback"
)

// inode is a bare Inode for policy tests.
type inode struct {
	id    uint64
	dirty int64
	dir   bool
}

func (i *inode) ID() uint64        { return i.id }
func (i *inode) DirtyPages() int64 { return i.dirty }
func (i *inode) Regular() bool     { return !i.dir }

const sec = sim.Time(time.Second)

// pass builds a PassInfo with default limits over inodes dirtied at the
// given times.
func pass(reason writeback.Reason, now sim.Time, dirty, bg int64, ins ...writeback.DirtyInode) writeback.PassInfo {
	return writeback.PassInfo{
		Reason: reason, Now: now, Limits: writeback.DefaultLimits(),
		Background: bg, DirtyLimit: 2 * bg, Dirty: dirty, Inodes: ins,
	}
}

func ids(ws []writeback.Work) []uint64 {
	var out []uint64
	for _, w := range ws {
		out = append(out, w.Inode.ID())
	}
	return out
}

// Background writeback: oldest first, a chunk each, WB_SYNC_NONE and
// range_cyclic, as many inodes as cover the excess over the background
// threshold; nothing at or below it.
func TestDefaultPickBackground(t *testing.T) {
	a, b, c := &inode{id: 1, dirty: 300}, &inode{id: 2, dirty: 5000}, &inode{id: 3, dirty: 10}
	ins := []writeback.DirtyInode{{a, 0, 300}, {b, 1, 5000}, {c, 2, 10}}
	p := writeback.Default{}

	ws := p.Pick(pass(writeback.ReasonBackground, 10*sec, 5310, 1000, ins...))
	assert.Equal(t, []uint64{1, 2, 3}, ids(ws), "a 4310-page excess: every inode gets a chunk")
	for _, w := range ws {
		assert.Equal(t, int64(writeback.MaxWritebackPages), w.Pages)
		assert.Equal(t, writeback.SyncNone, w.SyncMode)
		assert.True(t, w.RangeCyclic)
	}

	ws = p.Pick(pass(writeback.ReasonBackground, 10*sec, 5310, 5000, ins...))
	assert.Equal(t, []uint64{1, 2}, ids(ws), "310 excess: a's 300 are not enough, b's chunk is")
	ws = p.Pick(pass(writeback.ReasonBackground, 10*sec, 5310, 5100, ins...))
	assert.Equal(t, []uint64{1}, ids(ws), "210 excess: a's 300 cover it")
	assert.Empty(t, p.Pick(pass(writeback.ReasonBackground, 10*sec, 5310, 5310, ins...)), "not above the threshold")

	ws = writeback.Default{ChunkPages: 64}.Pick(pass(writeback.ReasonBackground, 10*sec, 5310, 5000, ins...))
	assert.Equal(t, []uint64{1, 2, 3}, ids(ws), "64-page chunks: 64+64+10 < 310, all three")
	assert.Equal(t, int64(64), ws[0].Pages)
}

// Periodic (kupdate) writeback picks only inodes dirtied at least
// dirty_expire ago, oldest first.
func TestDefaultPickPeriodic(t *testing.T) {
	a, b, c := &inode{id: 1, dirty: 1}, &inode{id: 2, dirty: 1}, &inode{id: 3, dirty: 1}
	ins := []writeback.DirtyInode{{a, 0, 1}, {b, 10 * sec, 1}, {c, 20 * sec, 1}}
	p := writeback.Default{}
	assert.Empty(t, p.Pick(pass(writeback.ReasonPeriodic, 29*sec, 3, 1000, ins...)))
	assert.Equal(t, []uint64{1}, ids(p.Pick(pass(writeback.ReasonPeriodic, 30*sec, 3, 1000, ins...))), "exactly 30 s old has expired")
	ws := p.Pick(pass(writeback.ReasonPeriodic, 45*sec, 3, 1000, ins...))
	assert.Equal(t, []uint64{1, 2}, ids(ws))
	assert.Equal(t, writeback.SyncNone, ws[0].SyncMode)
	assert.Equal(t, int64(writeback.MaxWritebackPages), ws[0].Pages)
}

// sync writes every inode whole with WB_SYNC_ALL.
func TestDefaultPickSync(t *testing.T) {
	a, b := &inode{id: 1, dirty: 1}, &inode{id: 2, dirty: 9999}
	ws := writeback.Default{}.Pick(pass(writeback.ReasonSync, sec, 10000, 1<<30, writeback.DirtyInode{Inode: a}, writeback.DirtyInode{Inode: b}))
	assert.Equal(t, []uint64{1, 2}, ids(ws))
	for _, w := range ws {
		assert.Equal(t, writeback.SyncAll, w.SyncMode)
		assert.Equal(t, int64(writeback.AllPages), w.Pages)
		assert.False(t, w.RangeCyclic)
	}
}

// f2fs's lock rule, both variants (EXPERIMENTS.md section 3).
func TestF2FSSerialize(t *testing.T) {
	file := &inode{id: 1}
	dir := &inode{id: 2, dir: true}
	q := func(ino *inode, mode writeback.SyncMode, dirty int64, syncWriters int) writeback.LockQuery {
		return writeback.LockQuery{
			Inode: ino, Control: &writeback.Control{SyncMode: mode}, DirtyPages: dirty,
			Regular: !ino.dir, SyncWriters: syncWriters,
		}
	}
	const (
		none = writeback.LockNone
		ser  = writeback.LockSerialize
		skip = writeback.LockSkip
	)
	tests := []struct {
		name               string
		q                  writeback.LockQuery
		v419, merged, v418 writeback.LockDecision
	}{
		{"fsync, alone", q(file, writeback.SyncAll, 10, 1), ser, none, none},
		{"fsync, 512 dirty pages", q(file, writeback.SyncAll, 512, 1), ser, ser, none},
		{"fsync beside another", q(file, writeback.SyncAll, 10, 2), ser, none, none},
		{"flusher, no sync writer", q(file, writeback.SyncNone, 10, 0), ser, ser, none},
		{"flusher while a sync writer runs", q(file, writeback.SyncNone, 10000, 1), skip, skip, skip},
		{"flusher, directory", q(dir, writeback.SyncNone, 10, 0), ser, none, none},
		{"fsync, big directory", q(dir, writeback.SyncAll, 1000, 1), ser, none, none},
	}
	v419 := writeback.F2FSSerialize{}
	merged := writeback.F2FSSerialize{Rule: writeback.F2FSMerged}
	v418 := writeback.F2FSSerialize{Rule: writeback.F2FSv418}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.v419, v419.Serialize(tc.q), "v4.19")
			assert.Equal(t, tc.merged, merged.Serialize(tc.q), "merged")
			assert.Equal(t, tc.v418, v418.Serialize(tc.q), "v4.18")
		})
	}
	assert.Equal(t, "default[f2fs-v4.18]", writeback.Default{Serializer: v418}.Name())
	for _, r := range []writeback.F2FSSerialize{v419, merged, v418} {
		assert.True(t, writeback.Default{Serializer: r}.YieldsToSync(), r.Name())
	}
	assert.False(t, writeback.Default{}.YieldsToSync())
	small := writeback.F2FSSerialize{Rule: writeback.F2FSMerged, MinSeqBlocks: 8}
	assert.Equal(t, writeback.LockSerialize, small.Serialize(q(file, writeback.SyncAll, 8, 1)))

	assert.Equal(t, "default[f2fs-v4.19]", writeback.Default{Serializer: v419}.Name())
	assert.Equal(t, "default[f2fs-merged]", writeback.Default{Serializer: merged}.Name())
	assert.Equal(t, writeback.LockNone, writeback.Default{}.Serialize(q(file, writeback.SyncAll, 1000, 1)))
}

// The kernel's names, for reports and traces.
func TestNames(t *testing.T) {
	assert.Equal(t, "WB_SYNC_NONE", writeback.SyncNone.String())
	assert.Equal(t, "WB_SYNC_ALL", writeback.SyncAll.String())
	var names []string
	for r := range writeback.NumReasons {
		names = append(names, r.String())
	}
	assert.Equal(t, []string{"background", "periodic", "sync", "fsync"}, names)
	assert.Equal(t, "invalid", writeback.NumReasons.String())
	assert.Equal(t, []string{"none", "serialize", "skip"}, []string{
		writeback.LockNone.String(), writeback.LockSerialize.String(), writeback.LockSkip.String(),
	})
}

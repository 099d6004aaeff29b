package fsmodel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/sim"
)

// A buffered read that takes no inode lock (ext4's) and copies pages
// while a buffered write copies into them sees the pages the writer has
// finished new and the rest old. Page copies cost 1 us each here: a write
// of 4 pages from t=0 copies page i during [i, i+1) us (after its 1 us
// syscall entry half: [1+i, 2+i)).
func TestUnlockedReadSeesWriteInProgress(t *testing.T) {
	old, upd := blockdev.Stamp{Writer: 1, Seq: 1}, blockdev.Stamp{Writer: 2, Seq: 1}
	for _, tc := range []struct {
		name    string
		readAt  time.Duration // when the reader starts (its 4-page read)
		wantNew int           // leading pages the reader sees new
	}{
		{"read before the write", 0, 0},
		{"read after the write", 20 * time.Microsecond, 4},
		// The reader copies page i during [r+0.5+i, r+1.5+i) us (its
		// syscall entry half first), behind or beside the writer.
		{"read during the write", 2 * time.Microsecond, 4},
		// Dirtying costs the writer 2 us more per page: its page i
		// copies during [0.5+3i, 1.5+3i) us. A reader starting at 1 us
		// copies page 0 after the writer (new) and catches up by page 1
		// (old): a torn read.
		{"reader overtakes a slower writer", time.Microsecond, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newBufStack(t, AllocDelayed, false, 0, 4096)
			if tc.wantNew == 1 {
				s.fs.buf.opt.DirtyPage = 2 * time.Microsecond
			}
			f, err := s.fs.Create("a")
			require.NoError(t, err)
			s.e.Go("setup", func(tk *sim.Task) {
				require.NoError(t, f.BufferedWrite(tk, 0, 4*4096, old))
			})
			require.NoError(t, s.e.Run(-1))
			var data []blockdev.StampRun
			s.e.Go("w", func(tk *sim.Task) {
				require.NoError(t, f.BufferedWrite(tk, 0, 4*4096, upd))
			})
			s.e.Go("r", func(tk *sim.Task) {
				tk.Sleep(tc.readAt)
				require.NoError(t, f.BufferedRead(tk, 0, 4*4096, &data))
			})
			require.NoError(t, s.e.Run(-1))
			t.Logf("%v", data)
			var sectorsNew int64
			for _, r := range data {
				if r.Stamp == upd {
					sectorsNew += r.Sectors
				}
			}
			assert.Equal(t, int64(tc.wantNew*8), sectorsNew)
		})
	}
}

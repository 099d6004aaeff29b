package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/fsmodel"
)

// The journal's line in the normal output and "blksim"."journal" in
// JSON, only for a run that committed to it.
func TestWriteJournal(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteNormal(&b, sampleResult(), Options{OmitWall: true}))
	assert.NotContains(t, b.String(), "Journal")
	r := sampleResult()
	r.Journal = &fsmodel.JournalStats{Kind: fsmodel.JBD2, Commits: 7, Blocks: 21, Start: 13107200, Length: 131072}
	b.Reset()
	require.NoError(t, WriteNormal(&b, r, Options{OmitWall: true}))
	assert.Contains(t, b.String(), "\nJournal (jbd2): commits=7, blocks written=21 (84 KiB), at 51200 MiB, 512 MiB long\n")

	var doc struct {
		Blksim struct {
			Journal *struct {
				Kind            string
				Commits, Blocks int64
				Offset          int64 `json:"offset_bytes"`
				Size            int64 `json:"size_bytes"`
			}
		}
	}
	b.Reset()
	require.NoError(t, WriteJSON(&b, r, Options{OmitWall: true}))
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	require.NotNil(t, doc.Blksim.Journal)
	assert.Equal(t, "jbd2", doc.Blksim.Journal.Kind)
	assert.Equal(t, int64(7), doc.Blksim.Journal.Commits)
	assert.Equal(t, int64(21), doc.Blksim.Journal.Blocks)
	assert.Equal(t, int64(50<<30), doc.Blksim.Journal.Offset)
	assert.Equal(t, int64(512<<20), doc.Blksim.Journal.Size)
}

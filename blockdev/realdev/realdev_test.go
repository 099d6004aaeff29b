package realdev

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/blockdev"
)

func TestParseSpec(t *testing.T) {
	good := map[string]Spec{
		"file:/x/y.dat":          {Kind: KindFile, Path: "/x/y.dat"},
		"file:rel.dat,size=256m": {Kind: KindFile, Path: "rel.dat", Size: 256 << 20},
		"blk:/dev/loop3":         {Kind: KindBlock, Path: "/dev/loop3"},
	}
	for in, want := range good {
		got, err := ParseSpec(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		again, err := ParseSpec(got.String())
		require.NoError(t, err)
		assert.Equal(t, got, again)
	}
	for _, in := range []string{"", "file:", "nvme0n1", "disk:/dev/sda", "file:x,size=", "file:x,size=-1",
		"file:x,size=1000", "file:x,bogus=1", "blk:sda", "blk:/dev/", "blk:/dev/sda,size=1m"} {
		_, err := ParseSpec(in)
		assert.ErrorIs(t, err, ErrBadSpec, in)
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	b := make([]byte, blockdev.SectorSize)
	s := blockdev.Stamp{Writer: 7, Seq: 1 << 40}
	putHeader(b, 1234, s, 77)
	got, state, _ := getHeader(b, 1234, 77)
	assert.Equal(t, sectorStamped, state)
	assert.Equal(t, s, got)
	// Another generation (an earlier run): intact, but nothing this run
	// wrote.
	got, state, _ = getHeader(b, 1234, 78)
	assert.Equal(t, sectorStale, state)
	assert.Zero(t, got)
	// Misdirected: read back at another sector.
	_, state, why := getHeader(b, 1235, 77)
	assert.Equal(t, sectorCorrupt, state)
	assert.Contains(t, why, "names sector 1234")
	// A flipped bit in the header.
	b[offSeq] ^= 1
	_, state, why = getHeader(b, 1234, 77)
	assert.Equal(t, sectorCorrupt, state)
	assert.Contains(t, why, "CRC")
	// No magic: never written by blksim.
	got, state, _ = getHeader(make([]byte, blockdev.SectorSize), 1, 77)
	assert.Equal(t, sectorForeign, state)
	assert.Zero(t, got)
}

package realdev

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/blksim/blksim/blockdev"
)

// Each format is recognised by its magic at its offset, and nothing else
// is: not zeros, not a magic at the wrong place, not a magic cut off by
// the end of the buffer, and not the sectors blksim itself writes.
func TestSignature(t *testing.T) {
	at := func(off int, magic ...byte) []byte {
		b := make([]byte, SignatureBytes)
		copy(b[off:], magic)
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"zeros", make([]byte, SignatureBytes), ""},
		{"empty", nil, ""},
		{"ext4", at(0x438, 0x53, 0xEF), "ext2/3/4"},
		{"ext4 magic one byte off", at(0x439, 0x53, 0xEF), ""},
		{"xfs", at(0, 'X', 'F', 'S', 'B'), "xfs"},
		{"f2fs", at(0x400, 0x10, 0x20, 0xF5, 0xF2), "f2fs"},
		{"btrfs", at(0x10040, []byte("_BHRfS_M")...), "btrfs"},
		{"btrfs past a short buffer", at(0x10040, []byte("_BHRfS_M")...)[:0x10044], ""},
		{"gpt before its protective mbr", append(at(510, 0x55, 0xAA)[:512], []byte("EFI PART")...), "GPT partition table"},
		{"mbr", at(510, 0x55, 0xAA), "MBR partition table or boot sector"},
		{"swap", at(4086, []byte("SWAPSPACE2")...), "swap"},
		{"lvm", at(0x218, []byte("LVM2 001")...), "LVM2 physical volume"},
		{"md 1.2", at(0x1000, 0xfc, 0x4e, 0x2b, 0xa9), "md RAID (1.2)"},
		{"luks", at(0, 'L', 'U', 'K', 'S', 0xba, 0xbe), "LUKS"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, Signature(tc.b)) })
	}

	// A device blksim has stamped is blksim's scratch space: its sector
	// headers (magic, numbers, CRC, then zeros) match no format.
	b := make([]byte, SignatureBytes)
	for sec := 0; sec < SignatureBytes/blockdev.SectorSize; sec++ {
		s := blockdev.Stamp{Writer: ^uint32(0), Seq: ^uint64(0) >> 1}
		putHeader(b[sec*blockdev.SectorSize:], int64(sec), s, ^uint32(0))
	}
	assert.Empty(t, Signature(b))
}

package realdev

import (
	"bytes"
	"encoding/binary"
)

// SignatureBytes is how much of a device's start Signature needs: up to
// btrfs's superblock magic at 64 KiB + 64.
const SignatureBytes = 68 << 10

// signature is an on-disk format's magic: its bytes at an offset from the
// start of the device, as blkid's probes look for them.
type signature struct {
	name  string
	off   int
	magic []byte
}

// signatures are checked in order; the first match names the format.
// Offsets and magics are the formats' own (their superblock or label
// definitions); the MBR boot signature also covers FAT and NTFS boot
// sectors, which end with it.
var signatures = []signature{
	{"GPT partition table", 512, []byte("EFI PART")},
	{"LUKS", 0, []byte("LUKS\xba\xbe")},
	{"xfs", 0, []byte("XFSB")},
	{"ext2/3/4", 0x438, le16(0xEF53)},
	{"f2fs", 0x400, le32(0xF2F52010)},
	{"btrfs", 0x10040, []byte("_BHRfS_M")},
	{"LVM2 physical volume", 0x218, []byte("LVM2 001")},
	{"md RAID (1.1)", 0, le32(0xa92b4efc)},
	{"md RAID (1.2)", 0x1000, le32(0xa92b4efc)},
	{"swap", 4086, []byte("SWAPSPACE2")},
	{"swap", 4086, []byte("SWAP-SPACE")},
	{"MBR partition table or boot sector", 510, []byte{0x55, 0xAA}},
}

func le16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// Signature returns the name of the first on-disk format whose magic b
// (the first bytes of a device) carries, or "" if none: a filesystem
// (ext2/3/4, xfs, btrfs, f2fs), a partition table (GPT, MBR), swap, an
// LVM physical volume, an md RAID member (superblocks 1.1 and 1.2) or a
// LUKS header. Magics past the end of b are not checked.
func Signature(b []byte) string {
	for _, s := range signatures {
		if end := s.off + len(s.magic); end <= len(b) && bytes.Equal(b[s.off:end], s.magic) {
			return s.name
		}
	}
	return ""
}

package blockdev

import "sort"

// The NAND flash model (NVMe, in nvme.go) serves three kinds of device that
// differ in their host interface, not in their media: the kind fixes the
// defaults of the interface keys and the limits the interface imposes.
//
//   - "nvme": PCIe NVMe. Defaults: nvme0n1, 512-byte blocks, 128 KiB
//     requests (MDTS 5 with 4 KiB pages, common on NVMe SSDs of the
//     P3600's generation), 1023 tags (the Linux driver's io_queue_depth of
//     1024 less the one slot a full ring leaves empty), PCIe 3.0 x4 after
//     encoding and protocol overhead (3200 MB/s). At most 65535 tags.
//   - "ufs": UFS 2.1. Defaults: sda (a SCSI LU), 4096-byte blocks (UFS
//     logical units use 4 KiB blocks), 512 KiB requests, one queue of 32
//     tags (the UFS host controller's 32 transfer request slots), and an
//     M-PHY HS-G3 x2 link: 2 x 5.83 Gb/s, 8b/10b, 1166 MB/s on the wire,
//     about 1050 MB/s after UniPro framing and UPIU headers. At most 32
//     tags.
//   - "sata-ssd": SATA 3. Defaults: sda, 512-byte blocks, 512 KiB
//     requests, NCQ's 32 tags, and the 6 Gb/s link: 600 MB/s after 8b/10b,
//     about 550 MB/s after FIS framing. At most 32 tags, 600 MB/s and
//     32767 KiB requests (LBA48's 65535 sectors: what libata reports as
//     max_hw_sectors_kb). The default is 512 KiB rather than 32767: the
//     block layer caps requests at max_sectors_kb (512 until 2015,
//     1280 since), so requests larger than that never reach a SATA disk
//     unless the cap is raised, and 512 KiB is the largest request drives
//     are rated with.
//
// The NAND geometry and timing keys have no defaults: they describe a
// particular drive.
var flashDefaults = map[string]NVMeParams{
	"nvme": {Kind: "nvme", Name: "nvme0n1", LogicalBlockSize: 512, MaxHWSectorsKB: 128, QueueDepth: 1023, HostMBps: 3200},
	"ufs":  {Kind: "ufs", Name: "sda", LogicalBlockSize: 4096, MaxHWSectorsKB: 512, QueueDepth: 32, HostMBps: 1050},
	"sata-ssd": {Kind: "sata-ssd", Name: "sda", LogicalBlockSize: 512, MaxHWSectorsKB: 512, QueueDepth: 32,
		HostMBps: 550},
}

// Interface limits of the flash kinds.
const (
	nvmeMaxQueueDepth = 65535 // 64Ki entries per queue, one left empty
	ufsMaxQueueDepth  = 32    // UTP transfer request slots (UFSHCI 2.1)
	ncqMaxQueueDepth  = 32    // SATA NCQ tags
	sataMaxMBps       = 600   // 6 Gb/s after 8b/10b
	sataMaxHWKB       = 32767 // LBA48: 65535 sectors per command
)

// FlashKinds lists the device kinds the NAND flash model serves.
func FlashKinds() []string {
	out := make([]string, 0, len(flashDefaults))
	for k := range flashDefaults {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// FlashDefaults returns the parameters a profile of the flash kind starts
// from (an empty kind is "nvme"): the interface defaults above, with the
// NAND keys zero. An unknown kind returns zero parameters with that Kind.
func FlashDefaults(kind string) NVMeParams {
	if kind == "" {
		kind = "nvme"
	}
	if p, ok := flashDefaults[kind]; ok {
		return p
	}
	return NVMeParams{Kind: kind}
}

// validateInterface checks the limits of the parameters' kind.
func (p *NVMeParams) validateInterface() error {
	switch p.Kind {
	case "", "nvme":
		if p.QueueDepth > nvmeMaxQueueDepth {
			return keyErr("queue_depth", "queue_depth %d exceeds NVMe's %d entries per queue", p.QueueDepth, nvmeMaxQueueDepth)
		}
	case "ufs":
		if p.QueueDepth > ufsMaxQueueDepth {
			return keyErr("queue_depth", "queue_depth %d exceeds the %d transfer request slots of a UFS host controller", p.QueueDepth, ufsMaxQueueDepth)
		}
	case "sata-ssd":
		switch {
		case p.QueueDepth > ncqMaxQueueDepth:
			return keyErr("queue_depth", "queue_depth %d exceeds SATA NCQ's %d tags", p.QueueDepth, ncqMaxQueueDepth)
		case p.HostMBps > sataMaxMBps:
			return keyErr("host_mbps", "host_mbps %g exceeds the %d MB/s of a 6 Gb/s SATA link", p.HostMBps, sataMaxMBps)
		case p.MaxHWSectorsKB > sataMaxHWKB:
			return keyErr("max_hw_sectors_kb", "max_hw_sectors_kb %d exceeds SATA's %d (65535 sectors per LBA48 command)", p.MaxHWSectorsKB, sataMaxHWKB)
		}
	}
	return nil
}

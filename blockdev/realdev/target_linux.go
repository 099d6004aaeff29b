package realdev

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// markXattr is the extended attribute blksim puts on the files it creates.
const markXattr = "user.blksim"

// target is an open O_DIRECT target.
type target struct {
	fd       int
	name     string
	size     int64
	lbs      int // offset alignment (logical block size)
	memAlign int
	maxKB    int  // 0: no limit known
	rot      bool // a block device that says it is rotational
	// volatile: writes may sit in a cache a flush must write out: always
	// for a file (the filesystem's and its device's), for a block device
	// if sysfs queue/write_cache says "write back".
	volatile bool
	created  bool
}

// openTarget opens sp with O_DIRECT after the safety checks.
func openTarget(sp Spec, opt Options) (*target, error) {
	var t *target
	var err error
	if sp.Kind == KindBlock {
		t, err = openBlock(sp, opt)
	} else {
		t, err = openFile(sp, opt)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sp, err)
	}
	return t, nil
}

func openFile(sp Spec, opt Options) (*target, error) {
	path := sp.Path
	st, err := os.Stat(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	t := &target{name: fileDeviceName(path), volatile: true}
	if !exists {
		if sp.Size == 0 {
			return nil, fmt.Errorf("%s does not exist; give its size to create it (file:%s,size=N)", path, path)
		}
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_DIRECT|unix.O_CLOEXEC, 0o644)
		if err != nil {
			if err == unix.EINVAL {
				os.Remove(path)
				return nil, fmt.Errorf("%w: the filesystem of %s refuses O_DIRECT (tmpfs on kernels before 6.6 does): put the file on a disk filesystem (%v)", ErrNoDirectIO, filepath.Dir(path), err)
			}
			return nil, err
		}
		t.fd, t.created, t.size = fd, true, sp.Size
		// The mark first, so that an interrupted creation leaves a file
		// blksim may reuse or remove.
		if err := unix.Fsetxattr(fd, markXattr, []byte("created by blksim"), 0); err != nil && err != unix.ENOTSUP {
			t.close()
			os.Remove(path)
			return nil, fmt.Errorf("setting xattr %s: %w", markXattr, err)
		}
		if err := t.align(); err != nil {
			t.close()
			os.Remove(path)
			return nil, err
		}
		if err := t.grow(0, sp.Size, !opt.NoFill); err != nil {
			t.close()
			os.Remove(path)
			return nil, err
		}
		return t, nil
	}
	if !st.Mode().IsRegular() {
		if st.Mode()&fs.ModeDevice != 0 {
			return nil, fmt.Errorf("%s is a device: name it blk:%s", path, path)
		}
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.EINVAL {
			return nil, fmt.Errorf("%w: the filesystem of %s refuses O_DIRECT (tmpfs on kernels before 6.6 does): put the file on a disk filesystem (%v)", ErrNoDirectIO, path, err)
		}
		return nil, err
	}
	t.fd, t.size = fd, st.Size()
	buf := make([]byte, 64)
	if _, err := unix.Fgetxattr(fd, markXattr, buf); err != nil && !opt.Force {
		t.close()
		return nil, ErrNotOurs
	}
	if err := t.align(); err != nil {
		t.close()
		return nil, err
	}
	switch {
	case sp.Size > t.size:
		if err := t.grow(t.size, sp.Size, !opt.NoFill); err != nil {
			t.close()
			return nil, err
		}
		t.size = sp.Size
	case sp.Size > 0:
		t.size = sp.Size // use the first Size bytes; never truncate
	}
	t.size -= t.size % int64(t.lbs)
	if t.size == 0 {
		t.close()
		return nil, fmt.Errorf("%s is empty; give a size (file:%s,size=N)", path, path)
	}
	return t, nil
}

// fileDeviceName is the device name a file target reports: its base name
// without dots (so blktrace file names stay simple).
func fileDeviceName(path string) string {
	n := strings.Map(func(r rune) rune {
		if r == '.' || r == '/' || r == ' ' {
			return '_'
		}
		return r
	}, filepath.Base(path))
	if n == "" {
		return "file0"
	}
	return n
}

// align reads the direct-IO alignment with statx(STATX_DIOALIGN).
func (t *target) align() error {
	var sx unix.Statx_t
	if err := unix.Statx(t.fd, "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &sx); err != nil || sx.Mask&unix.STATX_DIOALIGN == 0 {
		// An older kernel: the common case, 512-byte sectors, page-aligned
		// buffers (ours always are).
		t.lbs, t.memAlign = 512, 512
		return nil
	}
	if sx.Dio_offset_align == 0 {
		return fmt.Errorf("%w: statx reports no direct-IO support (STATX_DIOALIGN offset alignment 0)", ErrNoDirectIO)
	}
	t.lbs, t.memAlign = max(int(sx.Dio_offset_align), 512), int(sx.Dio_mem_align)
	if t.memAlign > 4096 {
		return fmt.Errorf("%w: direct IO needs %d-byte aligned memory (more than a page)", ErrNoDirectIO, t.memAlign)
	}
	return nil
}

// grow allocates [from, to) and, if fill, writes zeros over it with
// O_DIRECT so that later reads reach the device (fio lays files out the
// same way).
func (t *target) grow(from, to int64, fill bool) error {
	if err := unix.Fallocate(t.fd, 0, from, to-from); err != nil {
		if err != unix.EOPNOTSUPP {
			return fmt.Errorf("fallocate: %w", err)
		}
		if err := unix.Ftruncate(t.fd, to); err != nil {
			return fmt.Errorf("ftruncate: %w", err)
		}
	}
	if !fill {
		return nil
	}
	const chunk = 1 << 20
	buf, err := alignedBuf(chunk)
	if err != nil {
		return err
	}
	defer unix.Munmap(buf)
	for off := from; off < to; off += chunk {
		n := min(int64(chunk), to-off)
		if _, err := unix.Pwrite(t.fd, buf[:n], off); err != nil {
			if err == unix.EINVAL {
				return fmt.Errorf("%w: O_DIRECT write failed with EINVAL: %v", ErrNoDirectIO, err)
			}
			return fmt.Errorf("filling the file: %w", err)
		}
	}
	return unix.Fdatasync(t.fd)
}

func openBlock(sp Spec, opt Options) (*target, error) {
	path, err := filepath.EvalSymlinks(sp.Path)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return nil, fmt.Errorf("%s is not a block device (for a file, name it file:%s)", path, path)
	}
	name := filepath.Base(path)
	if !opt.Force {
		if err := checkUnused(path, name, st.Rdev); err != nil {
			return nil, err
		}
	}
	flags := unix.O_RDWR | unix.O_DIRECT | unix.O_CLOEXEC
	if !opt.Force {
		flags |= unix.O_EXCL // the kernel refuses a mounted or claimed device
	}
	fd, err := unix.Open(path, flags, 0)
	if err != nil {
		if err == unix.EBUSY {
			return nil, fmt.Errorf("%w: open O_EXCL: %v", ErrInUse, err)
		}
		if err == unix.EINVAL {
			return nil, fmt.Errorf("%w: %v", ErrNoDirectIO, err)
		}
		return nil, err
	}
	t := &target{fd: fd, name: name}
	var size uint64
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.BLKGETSIZE64, uintptr(unsafe.Pointer(&size))); errno != 0 {
		t.close()
		return nil, fmt.Errorf("BLKGETSIZE64: %w", errno)
	}
	t.size = int64(size)
	if err := t.align(); err != nil {
		t.close()
		return nil, err
	}
	if lbs, err := unix.IoctlGetInt(fd, unix.BLKSSZGET); err == nil && lbs > t.lbs {
		t.lbs = lbs
	}
	t.size -= t.size % int64(t.lbs)
	if !opt.Force {
		if err := t.checkNoData(path); err != nil {
			t.close()
			return nil, err
		}
	}
	t.maxKB = sysfsInt(devSysfs(st.Rdev), "queue/max_hw_sectors_kb")
	t.rot = sysfsInt(devSysfs(st.Rdev), "queue/rotational") == 1
	wc, err := os.ReadFile(filepath.Join(devSysfs(st.Rdev), "queue/write_cache"))
	t.volatile = err != nil || strings.TrimSpace(string(wc)) != "write through"
	if t.size == 0 {
		t.close()
		return nil, fmt.Errorf("%s has no capacity", path)
	}
	return t, nil
}

// checkNoData refuses a device whose first bytes carry an on-disk format
// (Signature): a filesystem someone made is not scratch space, mounted or
// not.
func (t *target) checkNoData(path string) error {
	n := min(int64(SignatureBytes), t.size)
	n -= n % int64(t.lbs)
	if n <= 0 {
		return nil
	}
	buf, err := alignedBuf(int(n))
	if err != nil {
		return err
	}
	defer unix.Munmap(buf)
	got, err := unix.Pread(t.fd, buf, 0)
	if err != nil {
		return fmt.Errorf("%s: reading its first %d bytes for signatures: %w", path, n, err)
	}
	if sig := Signature(buf[:got]); sig != "" {
		return fmt.Errorf("%w: %s holds %s", ErrHasData, path, sig)
	}
	return nil
}

// devSysfs is the sysfs directory of the block device numbered rdev.
func devSysfs(rdev uint64) string {
	return fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(rdev), unix.Minor(rdev))
}

func sysfsInt(dir, name string) int {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// checkUnused refuses a device that is mounted (or a partition of it is),
// or has holders (device-mapper, md, a claimed swap).
func checkUnused(path, name string, rdev uint64) error {
	dir := devSysfs(rdev)
	devs := map[string]bool{name: true}
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), "partition")); err == nil {
				devs[e.Name()] = true
			}
		}
	}
	f, err := os.Open("/proc/mounts")
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			src, mnt, _ := strings.Cut(sc.Text(), " ")
			if !strings.HasPrefix(src, "/dev/") {
				continue
			}
			real, err := filepath.EvalSymlinks(src)
			if err != nil {
				real = src
			}
			if devs[filepath.Base(real)] {
				mnt, _, _ = strings.Cut(mnt, " ")
				return fmt.Errorf("%w: %s is mounted on %s", ErrInUse, real, mnt)
			}
		}
	}
	if hs, err := os.ReadDir(filepath.Join(dir, "holders")); err == nil && len(hs) > 0 {
		return fmt.Errorf("%w: %s is held by %s", ErrInUse, path, hs[0].Name())
	}
	if b, err := os.ReadFile("/proc/swaps"); err == nil && strings.Contains(string(b), path+" ") {
		return fmt.Errorf("%w: %s is a swap device", ErrInUse, path)
	}
	return nil
}

func (t *target) close() {
	if t.fd >= 0 {
		unix.Close(t.fd)
		t.fd = -1
	}
}

// alignedBuf returns n bytes of page-aligned anonymous memory (unmap with
// unix.Munmap).
func alignedBuf(n int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", n, err)
	}
	return b, nil
}

package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/blksim/blksim/blockdev"
	"github.com/blksim/blksim/fsmodel"
)

// This file holds a job's files: how many it has and their names (fio's
// nrfiles, filename_format), how its size is split between them
// (filesetup.c setup_files), and which file each IO goes to
// (file_service_type, openfiles: io_u.c get_next_file and
// set_io_u_file).
//
// A job with several files works on each as a job with one file works on
// its file: each has its own region, sequential positions, random map and
// offset generators. Before each IO the job chooses a file; when the
// chosen file's region is used up (the next sequential IO does not fit,
// or the random map or lfsr sequence is exhausted), the file is done and
// closed, and another is chosen. When every file is done the loop is over
// (fio's do_io gets no more IO units), unless io_size asks for more bytes:
// then the job goes over its files again. With a zipf, pareto or normal
// service a file is never done: one used up starts over, and the loop
// ends by its size, as in fio.

// jobFile is one of a job's files (fio's struct fio_file) and the job's
// state in it.
type jobFile struct {
	num  int // fio's file number, $filenum
	name string
	file *fsmodel.File
	// regionOff and regionLen are the part of the file the job works on
	// (fio's file_offset and io_size).
	regionOff, regionLen int64
	// seq is the next sequential offset per direction, in the region;
	// lastStart is the offset of the last IO per direction (for
	// rw_sequencer=identical).
	seq, lastStart [2]int64
	// zoneStart is where the current zone of a zonemode=strided job
	// starts, in the region (fio moves its file_offset instead).
	zoneStart int64
	rmap      randomMap
	dist      [2]offsetGen
	// hist is the oracle's history of the file, nil if the oracle does
	// not watch it.
	hist *fileHistory
	// expect holds, for a job that verifies its own writes, the stamp it
	// last wrote to each sector of the file, indexed by file sector
	// (shared by the job's entries that name the same file).
	expect *blockdev.StampMap
	// open and done are fio's FIO_FILE_open and FIO_FILE_done, for a job
	// with several files: a file opens when it is first chosen in a loop
	// and is done when its region is used up; a done file closes when its
	// last IO in flight completes (inflight counts them).
	open, done bool
	inflight   int
	// handle is the job's open file description of file (buffered
	// reads' readahead state), nil while the file is closed.
	handle *fsmodel.Handle
}

// reader returns the job's open file description of f, opening one if
// it has none: every fio job opens the file itself, so each has its own
// readahead state and its own view of writeback errors (fsync reports
// one once per description), and a file closed and opened again starts
// afresh.
func (f *jobFile) reader() *fsmodel.Handle {
	if f.handle == nil {
		f.handle = f.file.OpenHandle()
	}
	return f.handle
}

// close marks f closed; its open file description is dropped.
func (f *jobFile) close() {
	f.open = false
	f.handle = nil
}

// reset starts the file's offsets over (fio's fio_file_reset): the
// sequential positions, the random map and the offset generators.
func (f *jobFile) reset() {
	f.seq = [2]int64{}
	f.lastStart = [2]int64{}
	f.rmap.clear()
	for _, g := range f.dist {
		if g != nil {
			g.reset()
		}
	}
}

// nrFiles is the number of files of a job of s: one with filename= (fio
// counts the names it gives, and blksim takes one), else nrfiles.
func nrFiles(s *JobSpec) int {
	if s.Filename != "" {
		return 1
	}
	return max(s.NrFiles, 1)
}

// newJobFiles returns the files of clone c of s, named.
func newJobFiles(s *JobSpec, c int) []*jobFile {
	files := make([]*jobFile, nrFiles(s))
	for n := range files {
		files[n] = &jobFile{num: n, name: fileNameFor(s, c, n)}
	}
	return files
}

// fileNameFor returns the name of file n of clone c: filename=, or fio's
// filename_format (default $jobname.$jobnum.$filenum), in directory=.
func fileNameFor(s *JobSpec, c, n int) string {
	name := s.Filename
	if name == "" {
		if s.FilenameFormat == "" {
			name = fmt.Sprintf("%s.%d.%d", s.Name, c, n)
		} else {
			name = strings.NewReplacer("$jobname", s.Name, "$jobnum", strconv.Itoa(c), "$filenum", strconv.Itoa(n), "$clientuid", "").Replace(s.FilenameFormat)
		}
	}
	if s.Directory != "" {
		name = strings.TrimRight(s.Directory, "/") + "/" + name
	}
	return name
}

// splitSize gives the job's files their share of size, as fio's
// setup_files does without filesize=: size divided by the number of
// files, and a block more (the smallest block size) for each of the
// first files while what does not divide lasts.
func (j *job) splitSize(size int64) {
	s := j.spec
	n := int64(len(j.files))
	each := size / n
	unit := min(minBSDir(s, blockdev.OpRead), minBSDir(s, blockdev.OpWrite))
	extra := int64(0)
	if unit > 0 {
		extra = (size - each*n) / unit
	}
	for i, f := range j.files {
		f.regionLen = each
		if int64(i) < extra {
			f.regionLen += unit
		}
	}
}

// multi reports whether the job has several files to choose from.
func (j *job) multi() bool { return len(j.files) > 1 }

// pickResult is the outcome of choosing a file for the next IO.
type pickResult int

const (
	// picked: j.cur is the file.
	picked pickResult = iota
	// pickBusy: the file to choose is not open and openfiles files are
	// (fio's EBUSY from get_next_file); try again, after a completion if
	// IO is in flight.
	pickBusy
	// pickNone: every file is done; the loop is over.
	pickNone
)

// fileServiceShift is fio's FIO_FSERVICE_SHIFT: the zipf, pareto and
// normal file services draw from nrfiles<<10 values and take the file
// from the high bits.
const fileServiceShift = 10

// fileService is a job's choice of files, for a job with several.
type fileService struct {
	next  int // fio's next_file: where round robin looks next
	left  int // fio's file_service_left: IOs still to issue to cur
	nOpen int
	nDone int
	limit int        // openfiles
	rng   *rand.Rand // fio's next_file_state
	gen   fileGen    // zipf, pareto, normal
}

// fileGen draws a value in [0, nrfiles<<fileServiceShift) for a
// non-uniform file service.
type fileGen interface {
	draw() int64
}

// init prepares the choice among n files for s, drawing from rng.
func (sv *fileService) init(s *JobSpec, n int, rng *rand.Rand) {
	sv.rng = rng
	sv.limit = n
	if o := s.OpenFiles; o > 0 && o < n {
		sv.limit = o
	}
	fs := s.FileService
	nr := int64(n) << fileServiceShift
	switch fs.Kind {
	case FileServiceZipf, FileServicePareto:
		kind := DistZipf
		if fs.Kind == FileServicePareto {
			kind = DistPareto
		}
		d := Distribution{Kind: kind, Param: fs.Param, Center: fs.Center, HasCenter: fs.HasCenter}
		g := newRankGen(d, nr, rng, nil)
		// fio disables the hash for files (zipf_disable_hash): the most
		// likely files are neighbours.
		g.scramb = false
		sv.gen = rankDraw{g}
	case FileServiceNormal:
		sv.gen = newFileGauss(nr, fs, rng)
	}
}

// rankDraw draws from a zipf or pareto rankGen over its whole range.
type rankDraw struct{ g *rankGen }

func (r rankDraw) draw() int64 { return r.g.next(r.g.n) }

// fileGauss is fio's normal distribution as the file service uses it
// (lib/gauss.c with the hash disabled): the mean of twelve uniform draws
// over the range, moved by a uniform deviation of up to Param percent of
// the range, around the middle or the center given.
type fileGauss struct {
	n, stddev, off int64
	rng            *rand.Rand
}

func newFileGauss(n int64, fs FileService, rng *rand.Rand) *fileGauss {
	g := &fileGauss{n: n, rng: rng}
	if fs.Param != 0 {
		g.stddev = min(int64(math.Ceil(float64(n)*fs.Param/100)), n/2)
	}
	if fs.HasCenter {
		g.off = int64(float64(n) * (fs.Center - 0.5))
	}
	return g
}

func (g *fileGauss) draw() int64 {
	const iters = 12
	sum := int64(0)
	for range iters {
		sum += int64(g.rng.Uint32() % uint32(g.n+1))
	}
	sum = (sum + iters - 1) / iters
	if g.stddev > 0 {
		dev := int64(float64(g.stddev)*(float64(g.rng.Uint32())/(math.MaxUint32+1.0))) - g.stddev/2
		for dev+sum >= g.n {
			dev /= 2
		}
		sum += dev
	}
	v := (sum + g.off) % g.n
	if v < 0 {
		v += g.n
	}
	return v
}

// pickFile makes j.cur the file the next IO goes to, as fio's
// get_next_file chooses it: the current file while it is open and has IOs
// left of its :N (sequential: until it is done), else the next file in
// round-robin order, or one drawn at random, skipping done files and
// opening the file chosen if openfiles allows.
func (j *job) pickFile() pickResult {
	s := j.spec
	sv := &j.svc
	if sv.nDone >= len(j.files) {
		j.filesDone()
		return pickNone
	}
	if f := j.cur; f.open && !f.done {
		if s.FileService.Kind == FileServiceSequential {
			return picked
		}
		if sv.left > 0 {
			sv.left--
			return picked
		}
	}
	var f *jobFile
	switch s.FileService.Kind {
	case FileServiceRoundRobin, FileServiceSequential:
		f = j.nextFileRR()
	default:
		f = j.nextFileRand()
	}
	if f == nil {
		return pickBusy
	}
	j.cur = f
	sv.left = max(s.FileService.Switch, 1) - 1
	return picked
}

// nextFileRR is fio's get_next_file_rr: the next file from next_file on
// that is not done, opened if it is not open; nil if that file cannot be
// opened now.
func (j *job) nextFileRR() *jobFile {
	sv := &j.svc
	for range len(j.files) {
		f := j.files[sv.next]
		sv.next = (sv.next + 1) % len(j.files)
		if f.done {
			continue
		}
		return j.openFile(f)
	}
	return nil
}

// nextFileRand is fio's get_next_file_rand: files drawn until one is not
// done, opened if it is not open; nil if that file cannot be opened now.
func (j *job) nextFileRand() *jobFile {
	sv := &j.svc
	n := len(j.files)
	for {
		var k int
		if sv.gen != nil {
			k = int(sv.gen.draw() >> fileServiceShift)
		} else {
			k = sv.rng.IntN(n)
		}
		if f := j.files[min(k, n-1)]; !f.done {
			return j.openFile(f)
		}
	}
}

// openFile opens f if it is not open and openfiles allows, and returns
// it; nil if it cannot be opened now.
func (j *job) openFile(f *jobFile) *jobFile {
	if f.open {
		return f
	}
	sv := &j.svc
	if sv.nOpen >= sv.limit {
		return nil
	}
	f.open = true
	sv.nOpen++
	return f
}

// fileDone marks f done (fio's fio_file_set_done) and closes it, now or
// when its last IO in flight completes.
func (j *job) fileDone(f *jobFile) {
	f.done = true
	j.svc.nDone++
	j.closeIfIdle(f)
}

// closeIfIdle closes a done file that has no IO in flight.
func (j *job) closeIfIdle(f *jobFile) {
	if f.done && f.open && f.inflight == 0 {
		f.close()
		j.svc.nOpen--
	}
}

// ioEnded is called when an IO to f ends (or was never submitted).
func (j *job) ioEnded(f *jobFile) {
	f.inflight--
	j.closeIfIdle(f)
}

// filesDone notes, as the phase ends, that every file is done: the job's
// loops then decide whether io_size asks for another round over them.
func (j *job) filesDone() {
	j.filesExhausted = true
}

// resetFiles starts every file over, closed and not done: a new loop.
func (j *job) resetFiles() {
	for _, f := range j.files {
		f.reset()
		f.done = false
		if f.inflight == 0 {
			f.close()
		}
	}
	j.svc.nDone = 0
	j.svc.nOpen = 0
	for _, f := range j.files {
		if f.open {
			j.svc.nOpen++
		}
	}
}

// nextFileOffset returns the offset in j.cur and the size of the next IO
// in direction dir (offsetIn). When j.cur's region is used up it is done
// (or, for a non-uniform service, starts over) and another file is
// chosen, as fio's set_io_u_file does.
func (j *job) nextFileOffset(dir blockdev.Op) (off, bs int64, r pickResult) {
	for {
		if off, bs, ok := j.offsetIn(j.cur, dir, true); ok {
			return off, bs, picked
		}
		if j.spec.FileService.Kind.NonUniform() {
			j.cur.reset()
		} else {
			j.fileDone(j.cur)
		}
		if r := j.pickFile(); r != picked {
			return 0, 0, r
		}
	}
}

// pickStop is the stopReason of a failed pick: the loop is done, or the
// caller tries again (running).
func pickStop(r pickResult) stopReason {
	if r == pickNone {
		return stopDone
	}
	return running
}

package workload

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/internal/latency"
)

// Tests for fio's log files: write_bw_log, write_lat_log, write_iops_log,
// write_hist_log and the options that shape them.

func TestParseLogOptions(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      LogOptions
	}{
		{"none", "", LogOptions{}},
		{"bare", "write_bw_log\nwrite_lat_log\nwrite_iops_log\nwrite_hist_log",
			LogOptions{BW: LogRequest{Write: true}, Lat: LogRequest{Write: true}, IOPS: LogRequest{Write: true}, Hist: LogRequest{Write: true}}},
		{"empty", "write_bw_log=", LogOptions{BW: LogRequest{Write: true}}},
		{"named", "write_lat_log=sub/lat\nwrite_iops_log=foo", LogOptions{Lat: LogRequest{true, "sub/lat"}, IOPS: LogRequest{true, "foo"}}},
		// fio takes any value as the name, 0 too.
		{"zero is a name", "write_bw_log=0", LogOptions{BW: LogRequest{true, "0"}}},
		{"shaping", "log_avg_msec=250\nlog_max_value=1\nlog_offset=1\nlog_prio=1\nper_job_logs=0",
			LogOptions{AvgMsec: 250, MaxValue: true, Offset: true, Prio: true, Shared: true}},
		{"per_job_logs=1", "per_job_logs=1", LogOptions{}},
		{"histograms", "log_hist_msec=10\nlog_hist_coarseness=6", LogOptions{HistMsec: 10, HistCoarseness: 6}},
		{"no-ops", "log_entries=4096\nlog_store_compressed=0\nlog_unix_epoch=0\nlog_alternate_epoch=0\nlog_alternate_epoch_clock_id=1", LogOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, parseOne(t, "[j]\n"+tc.src+"\n").Logs)
		})
	}
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{"", false}, {"disable_bw=1", true}, {"disable_bw_measurement=1", true}, {"gtod_reduce=1", true}, {"gtod_reduce=1\ndisable_bw=0", false},
	} {
		assert.Equal(t, tc.want, parseOne(t, "[j]\n"+tc.src+"\n").DisableBW, tc.src)
	}

	for _, tc := range []struct {
		src  string
		kind error
		opt  string
		msg  string
	}{
		{"log_avg_msec=-1", ErrBadValue, "log_avg_msec", ""},
		{"log_avg_msec=x", ErrBadValue, "log_avg_msec", ""},
		{"log_max_value=2", ErrBadValue, "log_max_value", "0 or 1"},
		{"log_offset=yes", ErrBadValue, "log_offset", "0 or 1"},
		{"per_job_logs=2", ErrBadValue, "per_job_logs", "0 or 1"},
		{"log_hist_coarseness=7", ErrBadValue, "log_hist_coarseness", "from 0 to 6"},
		{"log_entries=10", ErrBadValue, "log_entries", "from 1024 to 1048576"},
		{"log_store_compressed=1", ErrNotModelled, "log_store_compressed", ".fz"},
		{"log_unix_epoch=1", ErrNotModelled, "log_unix_epoch", "no wall-clock epoch"},
		{"log_alternate_epoch=1", ErrNotModelled, "log_alternate_epoch", "no wall-clock epoch"},
		{"log_compression=1m", ErrUnknownOption, "log_compression", "the log files are the same without it"},
		{"log_compression_cpus=0", ErrUnknownOption, "log_compression_cpus", "CPU affinity"},
	} {
		t.Run(tc.src, func(t *testing.T) {
			pe := requireOptionError(t, tc.src, tc.kind, tc.opt, tc.msg)
			assert.Equal(t, 2, pe.Line)
		})
	}
}

// logPaths returns the log files the jobs of src write, as CheckLogFiles
// lists them.
func logPaths(t *testing.T, src string) []string {
	t.Helper()
	var out []string
	require.NoError(t, CheckLogFiles(parseString(t, src), func(p string) error {
		out = append(out, p)
		return nil
	}))
	return out
}

// TestLogFileNames: fio 3.33's names, as it wrote them for these jobs.
func TestLogFileNames(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"default name is the job's", "[job1]\nwrite_bw_log\nwrite_lat_log\nwrite_iops_log\n",
			[]string{"job1_lat.1.log", "job1_slat.1.log", "job1_clat.1.log", "job1_bw.1.log", "job1_iops.1.log"}},
		{"name= names the job", "[x]\nname=mx\nwrite_lat_log=\nwrite_bw_log\n",
			[]string{"mx_lat.1.log", "mx_slat.1.log", "mx_clat.1.log", "mx_bw.1.log"}},
		// The number counts every job and clone of the run.
		{"numbers run on over jobs and clones", "[ja]\nnumjobs=2\nwrite_iops_log=foo\n[jb]\nwrite_bw_log\nwrite_lat_log=sub/lat\n",
			[]string{"foo_iops.1.log", "foo_iops.2.log", "sub/lat_lat.3.log", "sub/lat_slat.3.log", "sub/lat_clat.3.log", "jb_bw.3.log"}},
		{"group_reporting changes nothing", "[g]\nnumjobs=2\ngroup_reporting\nwrite_bw_log\n", []string{"g_bw.1.log", "g_bw.2.log"}},
		{"per_job_logs=0 shares a file", "[global]\nper_job_logs=0\n[ja]\nnumjobs=2\nwrite_iops_log\n[jb]\nwrite_iops_log=nodir/x\n",
			[]string{"ja_iops.log", "nodir/x_iops.log"}},
		{"values are names", "[z]\nwrite_bw_log=0\nwrite_iops_log=1\n", []string{"0_bw.1.log", "1_iops.1.log"}},
		{"disabled latencies have no log", "[d]\ndisable_slat=1\ndisable_lat=1\nwrite_lat_log\n", []string{"d_clat.1.log"}},
		{"gtod_reduce", "[gr]\ngtod_reduce=1\nwrite_lat_log\nwrite_bw_log\nwrite_iops_log\n", []string{"gr_bw.1.log", "gr_iops.1.log"}},
		{"histograms", "[h]\nwrite_hist_log=hcx\n", []string{"hcx_clat_hist.1.log"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, logPaths(t, tc.src))
		})
	}
}

// TestCheckLogFilesError: a file that cannot be written is an error
// naming the option that asks for it and where it was set.
func TestCheckLogFilesError(t *testing.T) {
	specs := parseString(t, "[global]\nwrite_bw_log=nodir/x\n[a]\n[b]\nwrite_iops_log=ok\nwrite_lat_log=bad\n")
	var asked []string
	err := CheckLogFiles(specs, func(p string) error {
		asked = append(asked, p)
		if strings.HasPrefix(p, "bad") {
			return os.ErrPermission
		}
		return nil
	})
	require.ErrorIs(t, err, ErrJob)
	assert.Contains(t, err.Error(), `test.fio:6: option "write_lat_log"`)
	assert.Contains(t, err.Error(), "log file bad_lat.2.log: permission denied")
	assert.Equal(t, []string{"nodir/x_bw.1.log", "bad_lat.2.log"}, asked)
}

func TestLogWriteTo(t *testing.T) {
	entries := []LogEntry{
		{TimeMS: 0, Value: 252464, Dir: 0, BS: 4096, Offset: 12288},
		{TimeMS: 23, Value: 106215, Dir: 1, BS: 4096, Offset: 65536},
	}
	for _, tc := range []struct {
		name string
		log  IOLog
		want string
	}{
		{"default", IOLog{Entries: entries}, "0, 252464, 0, 4096, 0\n23, 106215, 1, 4096, 0\n"},
		{"log_offset", IOLog{Offset: true, Entries: entries}, "0, 252464, 0, 4096, 12288, 0\n23, 106215, 1, 4096, 65536, 0\n"},
		{"log_prio", IOLog{Prio: true, Entries: entries}, "0, 252464, 0, 4096, 0x0000\n23, 106215, 1, 4096, 0x0000\n"},
		{"both", IOLog{Offset: true, Prio: true, Entries: entries[:1]}, "0, 252464, 0, 4096, 12288, 0x0000\n"},
		{"empty", IOLog{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			n, err := tc.log.WriteTo(&b)
			require.NoError(t, err)
			assert.Equal(t, tc.want, b.String())
			assert.Equal(t, int64(len(tc.want)), n)
		})
	}

	// A histogram line: time, direction, block size and the bins, each
	// 2^coarseness of fio's buckets added up.
	h := IOLog{Kind: LogHist, Coarseness: 4, Hist: []HistEntry{{TimeMS: 104, Dir: 1, BS: 4096,
		Bins: []HistBin{{0, 1}, {15, 2}, {16, 3}, {latency.NumBuckets - 1, 5}}}}}
	var b bytes.Buffer
	_, err := h.WriteTo(&b)
	require.NoError(t, err)
	fields := strings.Split(strings.TrimSuffix(b.String(), "\n"), ", ")
	require.Len(t, fields, 3+latency.NumBuckets/16)
	assert.Equal(t, []string{"104", "1", "4096", "3", "3", "0"}, fields[:6])
	assert.Equal(t, "5", fields[len(fields)-1])
	assert.True(t, strings.HasSuffix(b.String(), ", 0, 5\n"))
}

// TestLogWindows: log_avg_msec's windows as fio 3.33 closes them. The
// times and counts are those fio 3.33 logged for the same IO times.
func TestLogWindows(t *testing.T) {
	type sample struct {
		ms  uint64
		v   uint64
		dir int
	}
	run := func(avg uint64, maxValue bool, samples []sample, end uint64) []LogEntry {
		l := &logRec{log: &IOLog{}, avgMsec: avg, maxValue: maxValue}
		for _, s := range samples {
			l.add(s.ms, s.v, s.dir, 4096, 8192)
		}
		l.finish(end)
		return l.log.Entries
	}
	// Writes every 60 ms in 100 ms windows: a window closes at the
	// first write at or past its end, the next starts at the last
	// multiple of 100 (fio: 121, 242, 302, 423, 543, 604, ...).
	var w []sample
	for i := range uint64(11) {
		w = append(w, sample{i * 60, 10 * (i + 1), 1})
	}
	got := run(100, false, w, 620)
	assert.Equal(t, []LogEntry{
		{TimeMS: 120, Value: 20, Dir: 1}, // (10+20+30)/3
		{TimeMS: 240, Value: 45, Dir: 1},
		{TimeMS: 300, Value: 60, Dir: 1},
		{TimeMS: 420, Value: 75, Dir: 1},
		{TimeMS: 540, Value: 95, Dir: 1},
		{TimeMS: 600, Value: 110, Dir: 1},
		// The end at 620 finds the window empty: no entry.
	}, got)

	// Each direction's window closes on its own: a burst of writes then
	// reads at 251 closes the writes at 251, the reads at 252 (fio 3.33
	// logged exactly this order), one entry each.
	got = run(100, false, []sample{{0, 10, 1}, {0, 20, 0}, {251, 30, 1}, {251, 50, 1}, {252, 40, 0}, {252, 60, 0}}, 300)
	assert.Equal(t, []LogEntry{
		{TimeMS: 251, Value: 20, Dir: 1},
		{TimeMS: 252, Value: 30, Dir: 0},
		// The job's end takes what is left, reads first.
		{TimeMS: 300, Value: 60, Dir: 0},
		{TimeMS: 300, Value: 50, Dir: 1},
	}, got)

	// log_max_value logs the window's largest value; the mean rounds.
	got = run(100, true, []sample{{0, 7, 0}, {50, 3, 0}, {100, 5, 0}}, 100)
	assert.Equal(t, []LogEntry{{TimeMS: 100, Value: 7, Dir: 0}}, got)
	got = run(100, false, []sample{{0, 1, 0}, {50, 2, 0}}, 100)
	assert.Equal(t, []LogEntry{{TimeMS: 100, Value: 2, Dir: 0}}, got, "1.5 rounds up")

	// Without a window every value is an entry with its IO's size and
	// offset, and the end adds nothing.
	got = run(0, false, []sample{{3, 9, 0}}, 10)
	assert.Equal(t, []LogEntry{{TimeMS: 3, Value: 9, Dir: 0, BS: 4096, Offset: 8192}}, got)
}

// TestHistWindows: log_hist_msec's windows. fio 3.33 with reads at 0, 2,
// 4 and 6 ms and log_hist_msec=1 logged entries at 4 (3 completions) and
// 6 (1): the first window starts at the first completion after the job's
// first millisecond, and each next one log_hist_msec after the last.
func TestHistWindows(t *testing.T) {
	h := &histRec{log: &IOLog{Kind: LogHist}, msec: 1}
	for _, ms := range []uint64{0, 2, 4, 6} {
		h.add(ms, 100_000, 0, 4096)
	}
	require.Len(t, h.log.Hist, 2)
	idx := latency.BucketIndex(100_000)
	assert.Equal(t, HistEntry{TimeMS: 4, Dir: 0, BS: 4096, Bins: []HistBin{{idx, 3}}}, h.log.Hist[0])
	assert.Equal(t, HistEntry{TimeMS: 6, Dir: 0, BS: 4096, Bins: []HistBin{{idx, 1}}}, h.log.Hist[1])

	// clat_percentiles=0: fio keeps no buckets; the entries count nothing.
	h = &histRec{log: &IOLog{Kind: LogHist}, msec: 1, noBins: true}
	for _, ms := range []uint64{0, 2, 4} {
		h.add(ms, 100_000, 1, 4096)
	}
	assert.Equal(t, []HistEntry{{TimeMS: 4, Dir: 1, BS: 4096}}, h.log.Hist)
}

// renderLogs returns the text of each log file of res, logs that share a
// path concatenated.
func renderLogs(t *testing.T, res *Result) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range res.Logs {
		var b bytes.Buffer
		_, err := l.WriteTo(&b)
		require.NoError(t, err)
		out[l.Path] += b.String()
	}
	return out
}

// lines splits a log's text into lines of fields.
func lines(text string) [][]string {
	var out [][]string
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if l != "" {
			out = append(out, strings.Split(l, ", "))
		}
	}
	return out
}

// TestLogsMatchFio runs testdata/fio-logs/logs.fio and compares its logs
// with those fio 3.33 wrote for it: the same files, the same number of
// lines where that does not depend on timing, the same columns, equal
// where fio's are the same on every line and unsigned integers
// otherwise, in time order.
func TestLogsMatchFio(t *testing.T) {
	const dir = "testdata/fio-logs"
	src, err := os.ReadFile(filepath.Join(dir, "logs.fio"))
	require.NoError(t, err)
	res, _ := runJobs(t, 1, string(src), RunOptions{AppPerIO: time.Microsecond})
	got := renderLogs(t, res)

	fioFiles, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	var want []string
	for _, f := range fioFiles {
		want = append(want, filepath.Base(f))
	}
	var names []string
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	require.Equal(t, want, names, "the files fio wrote")

	// Their entries depend on timing: a window's rate samples, a
	// histogram's windows.
	timed := map[string]bool{"window_bw.7.log": true, "hist_clat_hist.6.log": true}
	number := regexp.MustCompile(`^[0-9]+$`)
	for _, name := range want {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			fio, sim := lines(string(data)), lines(got[name])
			if len(fio) == 0 || !timed[name] {
				require.Len(t, sim, len(fio))
			}
			if len(fio) == 0 {
				return
			}
			assert.NotEmpty(t, sim)
			cols := len(fio[0])
			checked := cols
			if strings.Contains(name, "hist") {
				checked = 3 // the bins: counts, whichever they are
			}
			// Logs that share a file (no job number) start their time
			// over, job by job.
			ordered := regexp.MustCompile(`\.[0-9]+\.log$`).MatchString(name)
			var last uint64
			for i, l := range sim {
				require.Len(t, l, cols, "line %d: %q", i+1, l)
				assert.Regexp(t, number, l[0], "line %d: time", i+1)
				for c := 1; c < checked; c++ {
					same := true
					for _, f := range fio {
						same = same && f[c] == fio[0][c]
					}
					if same && len(fio) > 1 {
						assert.Equal(t, fio[0][c], l[c], "line %d column %d", i+1, c+1)
					} else if c < cols-1 || !strings.HasPrefix(fio[0][c], "0x") {
						assert.Regexp(t, number, l[c], "line %d column %d", i+1, c+1)
					}
				}
				if ms := parseUint(t, l[0]); ordered {
					assert.GreaterOrEqual(t, ms, last, "line %d: time order", i+1)
					last = ms
				}
			}
		})
	}
}

func parseUint(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := parseInteger(s)
	require.NoError(t, err)
	return uint64(n)
}

// TestRunLogs: what the logs record as a job runs, and how they change
// its bandwidth and IOPS samples as they change fio's.
func TestRunLogs(t *testing.T) {
	t.Run("per IO", func(t *testing.T) {
		res, _ := runJobs(t, 1, "[j]\nrw=randwrite\nbs=4k\nsize=256k\ndirect=1\nverify=crc32c\nwrite_bw_log\nwrite_lat_log\nwrite_iops_log\nlog_offset=1\n", RunOptions{})
		j := onlyJob(t, res)
		logs := map[LogKind]*IOLog{}
		for _, l := range res.Logs {
			logs[l.Kind] = l
		}
		require.Len(t, logs, 5)
		assert.Empty(t, logs[LogSlat].Entries, "a sync engine has no submission latency")
		// Every IO, the verify reads too, as fio logs them.
		ios := int(j.Read.IOs + j.Write.IOs)
		require.Equal(t, 128, ios)
		for _, k := range []LogKind{LogBW, LogLat, LogClat, LogIOPS} {
			assert.Len(t, logs[k].Entries, ios, k.String())
		}
		// The bandwidth and IOPS samples are per IO too (fio's
		// add_bw_sample): bytes*10^6 over the completion latency in ns.
		assert.Equal(t, j.Write.IOs, j.Write.BW.N)
		assert.Equal(t, j.Read.IOs, j.Read.IOPS.N)
		assert.Equal(t, uint64(1), j.Write.IOPS.Max)
		offsets := map[uint64]bool{}
		for i, e := range logs[LogClat].Entries {
			bw := logs[LogBW].Entries[i]
			assert.Equal(t, 4096*uint64(1e6)/e.Value, bw.Value)
			assert.Equal(t, e.Dir, bw.Dir)
			assert.Equal(t, uint64(4096), e.BS)
			if e.Dir == 1 {
				offsets[e.Offset] = true
			}
			assert.Equal(t, LogEntry{TimeMS: e.TimeMS, Value: 1, Dir: e.Dir, BS: 4096, Offset: e.Offset}, logs[LogIOPS].Entries[i])
		}
		assert.Len(t, offsets, 64, "every block written once, at its offset")
	})

	t.Run("windows", func(t *testing.T) {
		const job = "[j]\nrw=write\nbs=4k\nsize=64m\ndirect=1\nrate_iops=1000\nruntime=1s\ntime_based\nlog_avg_msec=100\nwrite_lat_log\nwrite_bw_log\nwrite_iops_log\n"
		res, _ := runJobs(t, 1, job, RunOptions{})
		j := onlyJob(t, res)
		// log_avg_msec is the samples' interval, as fio makes it when
		// bwavgtime and iopsavgtime are not given.
		assert.InDelta(t, 9, j.Write.BW.N, 1)
		assert.InDelta(t, 9, j.Write.IOPS.N, 1)
		for _, l := range res.Logs {
			switch l.Kind {
			case LogBW, LogIOPS:
				require.Len(t, l.Entries, int(j.Write.BW.N), l.Path)
				for i, e := range l.Entries {
					assert.Equal(t, LogEntry{TimeMS: uint64(i+1) * 100, Value: e.Value, Dir: 1}, e)
				}
				want := uint64(4000)
				if l.Kind == LogIOPS {
					want = 1000
				}
				assert.Equal(t, want, l.Entries[0].Value)
			case LogLat, LogClat:
				require.Len(t, l.Entries, 10, l.Path)
				for i, e := range l.Entries {
					assert.Equal(t, uint64(i+1)*100, e.TimeMS)
					assert.Zero(t, e.BS)
					assert.Zero(t, e.Offset)
				}
			}
		}

		// bwavgtime keeps its interval; the log's entries are its samples.
		res, _ = runJobs(t, 1, job+"bwavgtime=250\n", RunOptions{})
		j = onlyJob(t, res)
		assert.Equal(t, uint64(3), j.Write.BW.N)
		for _, l := range res.Logs {
			if l.Kind == LogBW {
				assert.Equal(t, []LogEntry{{TimeMS: 250, Value: 4000, Dir: 1}, {TimeMS: 500, Value: 4000, Dir: 1}, {TimeMS: 750, Value: 4000, Dir: 1}}, l.Entries)
			}
		}
	})

	t.Run("no log, no change", func(t *testing.T) {
		const job = "[j]\nrw=write\nbs=4k\nsize=64m\ndirect=1\nrate_iops=1000\nruntime=1s\ntime_based\n"
		plain, _ := runJobs(t, 1, job, RunOptions{})
		logged, _ := runJobs(t, 1, job+"write_lat_log\nlog_avg_msec=100\n", RunOptions{})
		assert.Empty(t, plain.Logs)
		assert.Equal(t, onlyJob(t, plain).Write.BW, onlyJob(t, logged).Write.BW, "a latency log leaves the rate samples alone")
	})

	t.Run("async", func(t *testing.T) {
		res, _ := runJobs(t, 1, "[a]\nrw=randread\nbs=4k\nsize=64k\ndirect=1\nioengine=libaio\niodepth=4\nwrite_lat_log\n", RunOptions{})
		for _, l := range res.Logs {
			require.Len(t, l.Entries, 16, l.Path)
		}
		byKind := map[LogKind][]LogEntry{}
		for _, l := range res.Logs {
			byKind[l.Kind] = l.Entries
		}
		var slat, clat, lat uint64
		for i := range 16 {
			slat += byKind[LogSlat][i].Value
			clat += byKind[LogClat][i].Value
			lat += byKind[LogLat][i].Value
		}
		assert.Positive(t, slat)
		assert.Equal(t, lat, slat+clat, "lat = slat + clat over all IOs")
	})

	t.Run("ramp and shared files", func(t *testing.T) {
		res, _ := runJobs(t, 1, "[r]\nrw=write\nbs=4k\nsize=64m\ndirect=1\nrate_iops=100\nramp_time=200ms\nruntime=500ms\ntime_based\nnumjobs=2\nper_job_logs=0\nwrite_iops_log\n", RunOptions{})
		require.Len(t, res.Logs, 2)
		for _, l := range res.Logs {
			assert.Equal(t, "r_iops.log", l.Path)
			require.Len(t, l.Entries, 50, "the IOs after the ramp")
			assert.Equal(t, uint64(0), l.Entries[0].TimeMS, "times count from the ramp's end")
		}
	})

	t.Run("deterministic", func(t *testing.T) {
		const job = "[a]\nrw=randrw\nbs=4k\nsize=1m\ndirect=1\nioengine=io_uring\niodepth=8\nwrite_lat_log\nwrite_bw_log\nwrite_hist_log\nlog_hist_msec=1\n"
		r1, _ := runJobs(t, 7, job, RunOptions{})
		r2, _ := runJobs(t, 7, job, RunOptions{})
		assert.Equal(t, renderLogs(t, r1), renderLogs(t, r2))
	})
}

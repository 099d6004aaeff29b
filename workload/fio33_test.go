package workload

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests pin how blksim reads sizes, times, ${VAR}s and fio's
// keywords to fio 3.33's behaviour. Each case states fio's value; where fio
// is installed (Debian's fio 3.33 was used to write them: apt-get install
// fio) the same line is also given to the real fio, and fio must agree.
// Tests that need fio skip when it is absent.

// fioBinary returns the installed fio, or skips the test.
func fioBinary(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("fio")
	if err != nil {
		t.Skip("fio is not installed")
	}
	return path
}

var (
	fioVersionOnce sync.Once
	fioVersion     string
)

// fioParsed runs fio --parse-only --debug=parse on a one-job file holding
// lines (in a directory of its own, with env added to the environment)
// and returns the value fio's parser stored for option (the "out=" of
// its __handle_option), and whether fio accepted it.
func fioParsed(t *testing.T, fio string, env map[string]string, option string, lines ...string) (int64, bool) {
	t.Helper()
	fioVersionOnce.Do(func() {
		out, _ := exec.Command(fio, "--version").Output()
		fioVersion = strings.TrimSpace(string(out))
	})
	// Not t.TempDir: its name holds the test's, and a "$pagesize" in the
	// filename= line would be fio keyword arithmetic too.
	dir, err := os.MkdirTemp("", "fio33")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	job := filepath.Join(dir, "j.fio")
	src := "[j]\nfilename=" + filepath.Join(dir, "data") + "\n" + strings.Join(lines, "\n") + "\n"
	require.NoError(t, os.WriteFile(job, []byte(src), 0o644))
	cmd := exec.Command(fio, "--parse-only", "--debug=parse", job)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("fio: %v: %.300s", err, out)
		return 0, false
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	found := false
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, "__handle_option="+option+",") {
			found = true
			continue
		}
		if !found {
			continue
		}
		if i := strings.Index(l, "ret="); i >= 0 {
			f := strings.Fields(strings.ReplaceAll(l[i:], ",", " "))
			if len(f) < 2 || f[0] != "ret=0" {
				return 0, false
			}
			v, err := strconv.ParseUint(strings.TrimPrefix(f[1], "out="), 10, 64)
			require.NoError(t, err, "%s", l)
			return int64(v), true
		}
	}
	return 0, false
}

// fioUnits says how to read an option's value out of a JobSpec in fio's
// units (bytes, microseconds or a count).
var fioUnits = map[string]func(JobSpec) int64{
	"size":      func(js JobSpec) int64 { return js.Size },
	"io_size":   func(js JobSpec) int64 { return js.IOSize },
	"offset":    func(js JobSpec) int64 { return js.Offset },
	"runtime":   func(js JobSpec) int64 { return js.Runtime.Microseconds() },
	"ramp_time": func(js JobSpec) int64 { return js.RampTime.Microseconds() },
	"thinktime": func(js JobSpec) int64 { return js.ThinkTime.Microseconds() },
	"iodepth":   func(js JobSpec) int64 { return int64(js.IODepth) },
	"numjobs":   func(js JobSpec) int64 { return int64(js.NumJobs) },
	"bs":        func(js JobSpec) int64 { return js.BS[0] },
}

type fioCase struct {
	lines  []string // the job's lines; the last sets option
	option string
	want   int64 // fio 3.33's value (bytes, microseconds or a count)
}

// checkFioCases parses each case with blksim (with env and host), checks
// blksim's value, and, with fio installed, fio's.
func checkFioCases(t *testing.T, cases []fioCase, env map[string]string, host Host) {
	t.Helper()
	fio, _ := exec.LookPath("fio")
	for _, tc := range cases {
		name := strings.Join(tc.lines, ";")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src := "[j]\nioengine=libaio\n" + strings.Join(tc.lines, "\n") + "\n"
			jobs, err := ParseWith("pin.fio", strings.NewReader(src), ParseOptions{Env: mapEnv(env), Host: host})
			require.NoError(t, err)
			require.Len(t, jobs, 1)
			assert.Equal(t, tc.want, fioUnits[tc.option](jobs[0]), "blksim")
			if fio == "" {
				return
			}
			got, ok := fioParsed(t, fio, env, tc.option, append([]string{"ioengine=libaio"}, tc.lines...)...)
			require.True(t, ok, "%s rejects %q", fioVersion, name)
			assert.Equal(t, tc.want, got, "%s", fioVersion)
		})
	}
}

func TestFio33SizeSuffixes(t *testing.T) {
	cases := []fioCase{
		{[]string{"size=512"}, "size", 512},
		{[]string{"size=512b"}, "size", 512},
		{[]string{"size=512B"}, "size", 512},
		{[]string{"size=4k"}, "size", 4 << 10},
		{[]string{"size=4K"}, "size", 4 << 10},
		{[]string{"size=4kb"}, "size", 4 << 10},
		{[]string{"size=4KB"}, "size", 4 << 10},
		{[]string{"size=4ki"}, "size", 4 << 10},
		// fio's "compatibility mode": the IEC spellings are powers of 1000.
		{[]string{"size=4kib"}, "size", 4000},
		{[]string{"size=4KiB"}, "size", 4000},
		{[]string{"size=3m"}, "size", 3 << 20},
		{[]string{"size=3mb"}, "size", 3 << 20},
		{[]string{"size=3mib"}, "size", 3000000},
		{[]string{"size=2g"}, "size", 2 << 30},
		{[]string{"size=2G"}, "size", 2 << 30},
		{[]string{"size=2gib"}, "size", 2000000000},
		{[]string{"size=1t"}, "size", 1 << 40},
		{[]string{"size=1tib"}, "size", 1000000000000},
		{[]string{"size=1p"}, "size", 1 << 50},
		{[]string{"size=1pib"}, "size", 1000000000000000},
		{[]string{"size=0x1000"}, "size", 4096},
		{[]string{"size=0X10"}, "size", 16},
		{[]string{"io_size=10m"}, "io_size", 10 << 20},
		{[]string{"offset=1g"}, "offset", 1 << 30},
		{[]string{"iodepth=1k"}, "iodepth", 1024},
		{[]string{"iodepth=0x10"}, "iodepth", 16},
		{[]string{"iodepth=010"}, "iodepth", 10}, // decimal, not octal
		{[]string{"numjobs=1K"}, "numjobs", 1024},
		{[]string{"size=010"}, "size", 10},
		{[]string{"size=1kB"}, "size", 1 << 10},
		{[]string{"size=1Kb"}, "size", 1 << 10},
		{[]string{"size=1KIB"}, "size", 1000},
		{[]string{"size=1kI"}, "size", 1 << 10},
		{[]string{"size=4k "}, "size", 4 << 10},
		// A blank before "=" is cut; one after it changes nothing for a
		// plain or hex number.
		{[]string{"size =4k"}, "size", 4 << 10},
		{[]string{"size= 4096"}, "size", 4096},
		{[]string{"size= 0x10"}, "size", 16},
		{[]string{"iodepth= 8"}, "iodepth", 8},
		// kb_base=1000 flips both spellings, wherever it is in the section
		// (fio applies it first).
		{[]string{"kb_base=1000", "size=1k"}, "size", 1000},
		{[]string{"kb_base=1000", "size=1kib"}, "size", 1024},
		{[]string{"kb_base=1000", "size=2m"}, "size", 2000000},
		{[]string{"kb_base=1000", "size=2MiB"}, "size", 2 << 20},
		{[]string{"size=1k", "kb_base=1000"}, "size", 1000},
		{[]string{"kb_base=1024", "size=1k"}, "size", 1024},
	}
	checkFioCases(t, cases, nil, Host{})
}

func TestFio33TimeSuffixes(t *testing.T) {
	cases := []fioCase{
		// runtime and ramp_time: a bare number is seconds.
		{[]string{"runtime=10"}, "runtime", 10e6},
		{[]string{"runtime=10s"}, "runtime", 10e6},
		{[]string{"runtime=10S"}, "runtime", 10e6},
		{[]string{"runtime=250ms"}, "runtime", 250e3},
		{[]string{"runtime=250MS"}, "runtime", 250e3},
		{[]string{"runtime=250msec"}, "runtime", 250e3},
		{[]string{"runtime=100us"}, "runtime", 100},
		{[]string{"runtime=100usec"}, "runtime", 100},
		{[]string{"runtime=5m"}, "runtime", 300e6},
		{[]string{"runtime=2h"}, "runtime", 7200e6},
		{[]string{"runtime=1d"}, "runtime", 86400e6},
		{[]string{"timeout=3"}, "runtime", 3e6},
		{[]string{"runtime=010"}, "runtime", 10e6},
		{[]string{"runtime=1M"}, "runtime", 60e6},
		{[]string{"runtime=1H"}, "runtime", 3600e6},
		{[]string{"runtime=1D"}, "runtime", 86400e6},
		{[]string{"runtime= 30"}, "runtime", 30e6},
		{[]string{"ramp_time=2s"}, "ramp_time", 2e6},
		// thinktime: a bare number is microseconds.
		{[]string{"thinktime=2000"}, "thinktime", 2000},
		{[]string{"thinktime=2ms"}, "thinktime", 2000},
		{[]string{"thinktime=1s"}, "thinktime", 1e6},
	}
	checkFioCases(t, cases, nil, Host{})
}

func TestFio33Substitution(t *testing.T) {
	env := map[string]string{"N": "4", "SIZE": "64m", "EMPTY": "", "UNIT": "k"}
	cases := []fioCase{
		{[]string{"size=${SIZE}"}, "size", 64 << 20},
		{[]string{"size=${N}k"}, "size", 4 << 10},
		{[]string{"size=${N}${UNIT}"}, "size", 4 << 10},
		{[]string{"size=${NOT_SET_ANYWHERE}8k"}, "size", 8 << 10},
		{[]string{"size=8${EMPTY}k"}, "size", 8 << 10},
		{[]string{"iodepth=${N}"}, "iodepth", 4},
		{[]string{"runtime=${N}"}, "runtime", 4e6},
		// $pagesize alone, and with bc arithmetic.
		{[]string{"size=$pagesize"}, "size", 4096},
		{[]string{"size=$pagesize*4"}, "size", 16384},
		{[]string{"size=(1+2)*$pagesize"}, "size", 12288},
		{[]string{"size=$pagesize*${N}"}, "size", 16384},
		{[]string{"size=$pagesize/3"}, "size", 1365},
		{[]string{"size=$pagesize-96"}, "size", 4000},
	}
	checkFioCases(t, cases, env, Host{})
}

// $ncpus and $mb_memory are the host's: with fio installed, the test asks
// fio for this machine's values and gives blksim the same host.
func TestFio33HostKeywords(t *testing.T) {
	fio := fioBinary(t)
	ncpus, ok := fioParsed(t, fio, nil, "iodepth", "ioengine=libaio", "iodepth=$ncpus")
	require.True(t, ok)
	mb, ok := fioParsed(t, fio, nil, "size", "size=$mb_memory")
	require.True(t, ok)
	require.Positive(t, ncpus)
	require.Positive(t, mb)
	host := Host{CPUs: int(ncpus), MemoryMB: mb}
	cases := []fioCase{
		{[]string{"iodepth=$ncpus"}, "iodepth", ncpus},
		{[]string{"iodepth=$ncpus*2"}, "iodepth", ncpus * 2},
		{[]string{"iodepth=$ncpus+$ncpus"}, "iodepth", ncpus * 2},
		{[]string{"numjobs=$ncpus"}, "numjobs", ncpus},
		{[]string{"size=$mb_memory"}, "size", mb},
		{[]string{"size=$mb_memory*1024*1024/8"}, "size", mb * 1024 * 1024 / 8},
		{[]string{"size=2*$pagesize*$ncpus"}, "size", 2 * 4096 * ncpus},
	}
	checkFioCases(t, cases, nil, host)
}

// Where fio silently reads less than was written, blksim reports a bad
// value; where fio reads a time suffix it does not know as microseconds
// ("sec", "min"), blksim reads it as named. The table states fio 3.33's
// value too, checked against the real fio when it is installed.
func TestFio33Deviations(t *testing.T) {
	tests := []struct {
		line   string
		option string
		fio    int64         // what fio 3.33 stores
		want   time.Duration // what blksim stores; 0: blksim rejects it
	}{
		{"size=4kx", "size", 4096, 0},
		{"size=1.5k", "size", 1, 0},
		{"size=4 k", "size", 4, 0},
		{"runtime=10sec", "runtime", 10, 10 * time.Second},
		{"runtime=2min", "runtime", 2, 2 * time.Minute},
		{"runtime=0x10", "runtime", 16, 0},
		{"runtime=1.5", "runtime", 1e6, 0},
		{"runtime=1ns", "runtime", 1, 0},
		{"size=1e", "size", 1, 0},
		{"size=1m2", "size", 1 << 20, 0},
		{"size=4kk", "size", 4096, 0},
		// A blank after "=" stays in the value fio parses, and its number
		// parsers then stop at the number: the unit is dropped.
		{"size= 4k", "size", 4, 0},
		{"size = 4k", "size", 4, 0},
		{"size=\t4k", "size", 4, 0},
		{"size= 50%", "size", 50, 0},
		{"runtime= 2m", "runtime", 2e6, 0},
		{"iodepth= 4k", "iodepth", 4, 0},
		{"bs= 8k", "bs", 8, 0},
	}
	fio, _ := exec.LookPath("fio")
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			jobs, err := Parse("dev.fio", strings.NewReader("[j]\n"+tt.line+"\n"), noEnv)
			if tt.want == 0 {
				assert.ErrorIs(t, err, ErrBadValue)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.want, jobs[0].Runtime)
			}
			if fio == "" {
				return
			}
			got, ok := fioParsed(t, fio, nil, tt.option, tt.line)
			require.True(t, ok)
			assert.Equal(t, tt.fio, got, "%s", fioVersion)
		})
	}
}

// fio's "(...)" arithmetic (exp/expression-parser.y, .l): Debian's fio 3.33
// is built without it (CONFIG_ARITHMETIC), so these values come from the
// grammar: its precedences (a unit suffix binds tighter than + and -,
// looser than * and /; % binds tighter than ^), its integer and double
// rules (a decimal before a unit is cut to its integer part: fio's
// "(long long) $1.dval * $2.dval"), "m" as minutes in times, and whole
// seconds for options counted in seconds.
func TestFioArithmetic(t *testing.T) {
	sizes := []struct {
		in   string
		want int64
	}{
		{"(1024*1024)", 1 << 20},
		{"(2*4k+512)", 8704},
		{"(1+2k)", 2049},
		{"(2*3k)", 6144},
		{"(2k*3)", 6144},
		{"(1+2)*4k", 12288},
		{"(10/3)", 3},
		{"(10.0/4)", 2},
		{"(2^10)", 1024},
		{"(2^3^2)", 512},
		{"(2^3%2)", 2},
		{"(7%4)", 3},
		{"(-4+8)", 4},
		{"(1.5k)", 1024},
		{"(1.5*1024)", 1536},
		{"(1m)", 1 << 20},
		{"(1mb)", 1 << 20},
		{"(1mib)", 1000000},
		{"(0x10*2)", 32},
		{"( 3 * 4 )", 12},
		{"(4k),8k", 4096},
	}
	for _, tt := range sizes {
		js := parseOne(t, "[j]\nsize="+tt.in+"\n")
		assert.Equal(t, tt.want, js.Size, tt.in)
	}
	times := []struct {
		opt, in string
		want    time.Duration
	}{
		{"runtime", "(10)", 10 * time.Second},
		{"runtime", "(1m+30s)", 90 * time.Second},
		{"runtime", "(1m)", time.Minute},
		{"runtime", "(1500ms)", time.Second}, // whole seconds
		{"runtime", "(2*1h)", 2 * time.Hour},
		{"thinktime", "(3ms)", 3 * time.Millisecond},
		{"thinktime", "(10)", 10 * time.Microsecond},
		{"thinktime", "(1ms/4)", 250 * time.Microsecond},
	}
	for _, tt := range times {
		js := parseOne(t, "[j]\n"+tt.opt+"="+tt.in+"\n")
		got := js.Runtime
		if tt.opt == "thinktime" {
			got = js.ThinkTime
		}
		assert.Equal(t, tt.want, got, tt.opt+"="+tt.in)
	}
	for _, bad := range []string{"(1/0)", "(1%0)", "(1.5%2)", "(", "()", "(1+)", "(1))", "(1 2)", "(4x)", "(99999999999)", "(4k-)", "(3000000000)", "(-1)"} {
		_, err := Parse("a.fio", strings.NewReader("[j]\nsize="+bad+"\n"), noEnv)
		assert.ErrorIs(t, err, ErrBadValue, bad)
	}
}

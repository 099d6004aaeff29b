package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/blksim/blksim/report"
)

// TestReproduceShipped is the showcase: every row of the shipped
// experiments but f2fs-writepages (TestReproduceF2FSGaps) is within its
// published tolerance.
func TestReproduceShipped(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 60 s of IO; skipped with -short")
	}
	r := runCLI(t, nil, "reproduce", "dax-reader-spin", "ext4-dio", "xfs-buffered-read")
	require.Equal(t, exitOK, r.status, "stdout:\n%s\nstderr: %s", r.stdout, r.stderr)
	assert.Empty(t, r.stderr)
	out := r.stdout
	assert.Contains(t, out, "\n\next4-dio: EXPERIMENTS.md section 1")
	for _, row := range []string{"4k-with", "4k-without", "4k-without-nolock", "1M-with", "1M-without", "1M-without-nolock"} {
		assert.Contains(t, out, "\n  "+row+" ")
	}
	assert.Contains(t, out, "6 of 6 rows within tolerance")
	assert.Contains(t, out, "\nxfs-buffered-read: EXPERIMENTS.md section 4")
	for _, row := range []string{"read-lock", "no-read-lock"} {
		assert.Contains(t, out, "\n  "+row+" ")
	}
	assert.Contains(t, out, "2 of 2 rows within tolerance")
	assert.Contains(t, out, "  ratio read-gain: read MiB/s of no-read-lock over read-lock: published 5.59")
	assert.True(t, strings.HasPrefix(out, "dax-reader-spin: EXPERIMENTS.md section 5"), out)
	assert.Contains(t, out, "  ratio write-gain: write MiB/s of reader-spin over no-reader-spin: published 1.60")
	assert.NotContains(t, out, "OFF")
	assert.True(t, strings.HasSuffix(out, "\nreproduce: OK, all 10 rows and 3 ratios of 3 experiments within tolerance\n"), out)
	// Rows appear in published.toml's order.
	assert.Less(t, strings.Index(out, "4k-without-nolock"), strings.Index(out, "1M-with"))
}

// The f2fs experiment runs with the others but does not reproduce yet:
// these are its metrics outside tolerance (PUBLISHED.md says why). The
// test pins the set, so that a change that closes a gap, or opens a new
// one, shows here.
func TestReproduceF2FSGaps(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 2 GiB of buffered IO; skipped with -short")
	}
	r := runCLI(t, deterministic, "reproduce", "f2fs-writepages", "--output-format", "json")
	require.Equal(t, exitFailed, r.status, "stderr: %s", r.stderr)
	var out reproduceJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	require.Len(t, out.Experiments, 1)
	var off []string
	for _, row := range out.Experiments[0].Rows {
		for _, m := range row.Metrics {
			if !m.OK {
				off = append(off, row.Name+"/"+m.Name)
			}
		}
	}
	assert.Equal(t, []string{"without-mutex/read_mibs", "without-mutex/read_requests_4k", "with-mutex/write_requests"}, off)
	// The request shapes the issue asks for hold: without the mutex at
	// least 85% of reads are 4 KiB, with it at least 75% are 512 KiB.
	rows := out.Experiments[0].Rows
	require.Len(t, rows, 2)
	value := func(row int, name string) float64 {
		for _, m := range rows[row].Metrics {
			if m.Name == name {
				return m.Simulated
			}
		}
		t.Fatalf("no metric %s in row %s", name, rows[row].Name)
		return 0
	}
	assert.GreaterOrEqual(t, value(0, "read_requests_4k")/value(0, "read_requests"), 0.85)
	assert.GreaterOrEqual(t, value(1, "read_requests_512k")/value(1, "read_requests"), 0.75)
	assert.Greater(t, value(0, "write_requests_512k")/value(0, "write_requests"), 0.5)
	assert.Greater(t, value(1, "write_requests_512k")/value(1, "write_requests"), 0.5)
}

// experiment writes an experiment directory named name under a new
// temporary directory and returns the parent. files maps file names to
// contents.
func experiment(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, name)
	require.NoError(t, os.Mkdir(dir, 0o755))
	for n, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(data), 0o644))
	}
	return root
}

// smallStack is the shipped "w/" stack.
const smallStack = "fs = \"ext4\"\ndevice.profile = \"p3600\"\n\n[ext4]\nparallel_dio_reads = true\n"

// offPublished has a row within a wide tolerance, with the format's
// extensions (job, env, a row tolerance, set), and a row whose read
// bandwidth is far from anything the run can reach.
const offPublished = `source = "a test"
tolerance = 0.15
job = "small.fio"
seed = 3

[env]
BS = "4k"

[rows.good]
stack = "stack.toml"
set = ["host.cpus=8"]
tolerance = 1000
read_mibs = 1
write_lat_us = 1

[rows.bad]
bs = "16k"
stack = "stack.toml"
read_mibs = 1000000
read_lat_us = 100
`

// reproduceJSON is the JSON of blksim reproduce.
type reproduceJSON struct {
	Experiments []struct {
		Name string `json:"name"`
		Job  string `json:"job"`
		Seed uint64 `json:"seed"`
		Rows []struct {
			Name      string            `json:"name"`
			Env       map[string]string `json:"env"`
			Set       []string          `json:"set"`
			Tolerance float64           `json:"tolerance"`
			OK        bool              `json:"ok"`
			Metrics   []struct {
				Name      string  `json:"name"`
				Published float64 `json:"published"`
				Simulated float64 `json:"simulated"`
				Error     float64 `json:"error"`
				OK        bool    `json:"ok"`
			} `json:"metrics"`
		} `json:"rows"`
	} `json:"experiments"`
	Rows    int  `json:"rows"`
	RowsOff int  `json:"rows_off"`
	OK      bool `json:"ok"`
}

func TestReproduceOff(t *testing.T) {
	root := experiment(t, "exp", map[string]string{
		"small.fio":      bsJob,
		"other.fio":      smallJob, // job = picks small.fio
		"stack.toml":     smallStack,
		"published.toml": offPublished,
	})
	// The caller's BS does not reach the rows.
	env := map[string]string{"BLKSIM_DETERMINISTIC": "1", "BS": "1M"}
	for _, dir := range []string{root, filepath.Join(root, "exp")} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			r := runCLI(t, env, "reproduce", "--dir", dir)
			require.Equal(t, exitFailed, r.status, "stdout:\n%s\nstderr: %s", r.stdout, r.stderr)
			out := r.stdout
			assert.True(t, strings.HasPrefix(out, "exp: a test\n  job small.fio, seed 3, tolerance ±15%\n"), out)
			lines := strings.Split(out, "\n")
			var bad string
			for _, l := range lines {
				if strings.HasPrefix(l, "  bad ") {
					bad = l
				}
			}
			assert.Equal(t, []string{"bad", "read", "MiB/s", "1000000.0"}, strings.Fields(bad)[:4], bad)
			assert.True(t, strings.HasSuffix(bad, " OFF"), bad)
			assert.Contains(t, out, "\n  good (±100000%)  ")
			assert.Contains(t, out, "1 of 2 rows within tolerance")
			assert.Contains(t, out, "\nreproduce: OFF, 1 of 2 rows outside tolerance: exp/bad (read MiB/s -100.0%, read lat us +")
			assert.True(t, strings.HasSuffix(out, "; tolerance ±15%)\n"), out)
			assert.Contains(t, r.stderr, "exp/bad (read MiB/s -100.0%")
		})
	}

	r := runCLI(t, env, "reproduce", "--dir", root, "--output-format", "json")
	require.Equal(t, exitFailed, r.status, "stderr: %s", r.stderr)
	var out reproduceJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	assert.Equal(t, 2, out.Rows)
	assert.Equal(t, 1, out.RowsOff)
	assert.False(t, out.OK)
	require.Len(t, out.Experiments, 1)
	e := out.Experiments[0]
	assert.Equal(t, "small.fio", e.Job)
	assert.Equal(t, uint64(3), e.Seed)
	require.Len(t, e.Rows, 2)
	good, bad := e.Rows[0], e.Rows[1]
	assert.Equal(t, "good", good.Name)
	assert.True(t, good.OK)
	assert.Equal(t, map[string]string{"BS": "4k"}, good.Env)
	assert.Equal(t, []string{"host.cpus=8"}, good.Set)
	assert.Equal(t, 1000.0, good.Tolerance)
	assert.Equal(t, []string{"read_mibs", "write_lat_us"}, []string{good.Metrics[0].Name, good.Metrics[1].Name})
	assert.Equal(t, "bad", bad.Name)
	assert.False(t, bad.OK)
	assert.Equal(t, map[string]string{"BS": "16k"}, bad.Env, "bs is env.BS")
	require.Len(t, bad.Metrics, 2)
	m := bad.Metrics[0]
	assert.Equal(t, "read_mibs", m.Name)
	assert.False(t, m.OK)
	assert.InDelta(t, m.Simulated/m.Published-1, m.Error, 1e-12)
	assert.Positive(t, m.Simulated)
	// The 16k row's read bandwidth over its IOPS is 16 KiB.
	good4k, bad16k := good.Metrics[0].Simulated, m.Simulated
	assert.NotEqual(t, good4k, bad16k)

	// --seed overrides published.toml's seed.
	r = runCLI(t, env, "reproduce", "--dir", root, "--output-format", "json", "--seed", "9")
	require.Equal(t, exitFailed, r.status, "stderr: %s", r.stderr)
	var reseeded reproduceJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &reseeded))
	assert.Equal(t, uint64(9), reseeded.Experiments[0].Seed)
	assert.NotEqual(t, out.Experiments[0].Rows[1].Metrics[0].Simulated, reseeded.Experiments[0].Rows[1].Metrics[0].Simulated)
}

// Rows run in parallel, but the output does not depend on how many.
func TestReproduceParallelDeterministic(t *testing.T) {
	root := experiment(t, "exp", map[string]string{
		"small.fio":      bsJob,
		"stack.toml":     smallStack,
		"published.toml": strings.Replace(offPublished, `job = "small.fio"`, "", 1),
	})
	one := runCLI(t, deterministic, "reproduce", "--dir", root, "--parallel", "1")
	two := runCLI(t, deterministic, "reproduce", "--dir", root, "--parallel", "2")
	require.Equal(t, exitFailed, one.status, "stderr: %s", one.stderr)
	assert.Equal(t, one, two)
}

func TestReproduceBadInputExitsTwo(t *testing.T) {
	files := func(published string, extra ...string) map[string]string {
		m := map[string]string{"small.fio": bsJob, "stack.toml": smallStack, "published.toml": published}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	row := "\n[rows.r]\nbs = \"4k\"\nstack = \"stack.toml\"\nread_mibs = 10\n"
	head := "source = \"s\"\ntolerance = 0.1\n"
	tests := []struct {
		name  string
		files map[string]string
		args  []string
		want  []string
	}{
		{name: "unknown key", files: files(head + row + "read_mib = 3\n"), want: []string{"published.toml", `"rows.r.read_mib"`}},
		{name: "no source", files: files("tolerance = 0.1\n" + row), want: []string{"published.toml", "source"}},
		{name: "no tolerance", files: files("source = \"s\"\n" + row), want: []string{"published.toml", "tolerance"}},
		{name: "no rows", files: files(head), want: []string{"published.toml", "rows"}},
		{name: "no metric", files: files(head + "[rows.r]\nbs = \"4k\"\nstack = \"stack.toml\"\n"), want: []string{"rows.r", "metric"}},
		{name: "zero metric", files: files(head + "[rows.r]\nstack = \"stack.toml\"\nread_mibs = 0\n"), want: []string{"rows.r", "read_mibs"}},
		{name: "missing stack", files: files(head + "[rows.r]\nstack = \"nope.toml\"\nread_mibs = 1\n"), want: []string{"rows.r", "nope.toml"}},
		{name: "bad stack key", files: files(head+row, "stack.toml", "[host]\ncpu = 4\n"), want: []string{"stack.toml:2:", `"host.cpu"`}},
		{name: "bad set", files: files(head + row + "set = [\"host.frob=1\"]\n"), want: []string{"rows.r.set", `"host.frob"`}},
		{name: "two job files", files: files(head+row, "other.fio", smallJob), want: []string{"published.toml", "other.fio", "small.fio"}},
		{name: "bs and env.BS", files: files(head + row + "env = { BS = \"8k\" }\n"), want: []string{"rows.r", "bs"}},
		{name: "bad job value", files: files(head + "[rows.r]\nbs = \"huge\"\nstack = \"stack.toml\"\nread_mibs = 1\n"), want: []string{"exp/r", "small.fio:8:", `"huge"`}},
		{name: "empty option name", files: files(head + "options = [\"=4k\"]\n" + row), want: []string{"options", `"=4k"`}},
		{name: "unknown job option", files: files(head + "options = [\"frob=1\"]\n" + row), want: []string{"exp/r", `"frob"`}},
		{name: "ratio of unknown row", files: files(head + row + "[ratios.g]\nof = \"r\"\nover = \"nope\"\nmetric = \"read_mibs\"\npublished = 2\n"), want: []string{"published.toml", "ratios.g", `row "nope"`}},
		{name: "ratio of a row over itself", files: files(head + row + "[ratios.g]\nof = \"r\"\nover = \"r\"\nmetric = \"read_mibs\"\npublished = 2\n"), want: []string{"ratios.g", "same row"}},
		{name: "ratio bad metric", files: files(head + row + "[ratios.g]\nof = \"r\"\nover = \"r2\"\nmetric = \"iops\"\npublished = 2\n[rows.r2]\nstack = \"stack.toml\"\nbs = \"8k\"\n"), want: []string{"ratios.g", `metric "iops"`}},
		{name: "ratio without value", files: files(head + row + "[ratios.g]\nof = \"r\"\nover = \"r2\"\nmetric = \"read_mibs\"\n[rows.r2]\nstack = \"stack.toml\"\nbs = \"8k\"\n"), want: []string{"ratios.g", "published"}},
		{name: "ratio bad tolerance", files: files(head + row + "[ratios.g]\nof = \"r\"\nover = \"r2\"\nmetric = \"read_mibs\"\npublished = 2\ntolerance = -1\n[rows.r2]\nstack = \"stack.toml\"\nbs = \"8k\"\n"), want: []string{"ratios.g", "tolerance"}},
		{name: "bad request size", files: files(head + row + "read_requests_4x = 3\n"), want: []string{"published.toml", "rows.r", `"read_requests_4x"`, `size "4x"`}},
		{name: "unaligned request size", files: files(head + row + "write_requests_1000 = 3\n"), want: []string{"rows.r", `"write_requests_1000"`, "multiple of 512"}},
		{name: "request size twice", files: files(head + row + "read_requests_4k = 3\nread_requests_4096 = 3\n"), want: []string{"rows.r", "read_requests_4096 and read_requests_4k name the same metric"}},
		{name: "request count not a number", files: files(head + row + "read_requests_4k = \"many\"\n"), want: []string{"rows.r", "read_requests_4k = many", "number above 0"}},
		{name: "zero request count", files: files(head + row + "write_requests_512k = 0\n"), want: []string{"rows.r", "write_requests_512k = 0"}},
		{name: "request size in the wrong table", files: files(head + "read_requests_4k = 3\n" + row), want: []string{"published.toml", `unknown key "read_requests_4k"`}},
		{name: "ratio bad request size", files: files(head + row + "[ratios.g]\nof = \"r\"\nover = \"r2\"\nmetric = \"read_requests_3\"\npublished = 2\n[rows.r2]\nstack = \"stack.toml\"\nbs = \"8k\"\n"), want: []string{"ratios.g", `metric "read_requests_3"`}},
		{name: "malformed toml", files: files(head + "[rows.r\n"), want: []string{"published.toml"}},
		{name: "unknown experiment", files: files(head + row), args: []string{"nope"}, want: []string{`"nope"`, "have: exp"}},
		{name: "bad output format", files: files(head + row), args: []string{"--output-format", "xml"}, want: []string{`"xml"`}},
		{name: "bad parallel", files: files(head + row), args: []string{"--parallel", "0"}, want: []string{"--parallel"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := experiment(t, "exp", tc.files)
			r := runCLI(t, deterministic, append([]string{"reproduce", "--dir", root}, tc.args...)...)
			assert.Equal(t, exitBadArgs, r.status, "stderr: %s", r.stderr)
			assert.Empty(t, r.stdout)
			for _, w := range tc.want {
				assert.Contains(t, r.stderr, w)
			}
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "stderr %q", r.stderr)
		})
	}

	// --dir without experiments, and a missing --dir.
	r := runCLI(t, deterministic, "reproduce", "--dir", t.TempDir())
	assert.Equal(t, exitBadArgs, r.status)
	assert.Contains(t, r.stderr, "no experiment")
	r = runCLI(t, deterministic, "reproduce", "--dir", "/nonexistent/experiments")
	assert.Equal(t, exitBadArgs, r.status)
	assert.Contains(t, r.stderr, "/nonexistent/experiments")
	// An unknown name among the embedded experiments.
	r = runCLI(t, deterministic, "reproduce", "nope")
	assert.Equal(t, exitBadArgs, r.status)
	assert.Contains(t, r.stderr, "have: dax-reader-spin, ext4-dio")
}

// The shipped published.toml parses and sets up with the extended format's
// reader (no simulation).
func TestShippedExperimentsLoad(t *testing.T) {
	dirs, err := experimentDirs("")
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	names := []string{}
	for i, d := range dirs {
		names = append(names, d.name)
		exp, runs, err := loadExperiment(d, i)
		require.NoError(t, err, d.name)
		assert.NotEmpty(t, exp.Source)
		assert.Positive(t, exp.Tolerance)
		assert.Len(t, runs, len(exp.Rows))
		for _, row := range exp.Rows {
			inRatio := slices.ContainsFunc(exp.Ratios, func(q report.ReproRatio) bool { return q.Of == row.Name || q.Over == row.Name })
			assert.True(t, len(row.Metrics) > 0 || inRatio, "%s/%s states a metric or is in a ratio", d.name, row.Name)
		}
	}
	assert.Contains(t, names, "ext4-dio")
	assert.Contains(t, names, "dax-reader-spin")
}

// Request-count metrics come from the device's dispatched requests, in
// display order after each direction's count, smallest size first.
func TestReproduceRequestMetrics(t *testing.T) {
	published := `source = "requests"
tolerance = 1e9

[rows.r]
stack = "stack.toml"
write_requests_4k = 1
read_requests_8k = 5
read_requests = 1
read_requests_4096 = 1
`
	root := experiment(t, "exp", map[string]string{"small.fio": smallJob, "stack.toml": smallStack, "published.toml": published})
	r := runCLI(t, deterministic, "reproduce", "--dir", root, "--output-format", "json")
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	var out reproduceJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	ms := out.Experiments[0].Rows[0].Metrics
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	assert.Equal(t, []string{"read_requests", "read_requests_4k", "read_requests_8k", "write_requests_4k"}, names)
	require.Len(t, ms, 4)
	assert.Zero(t, ms[2].Simulated, "a direct 4k job dispatches no 8k reads")
	assert.Equal(t, -1.0, ms[2].Error)

	// The counts are the run's: the disk's read IOs, all of 4 KiB.
	run := runCLI(t, deterministic, "run", "--stack", filepath.Join(root, "exp", "stack.toml"), "--output-format", "json", filepath.Join(root, "exp", "small.fio"))
	require.Equal(t, exitOK, run.status, "stderr: %s", run.stderr)
	var res struct {
		DiskUtil []struct {
			ReadIOs  float64 `json:"read_ios"`
			WriteIOs float64 `json:"write_ios"`
		} `json:"disk_util"`
	}
	require.NoError(t, json.Unmarshal([]byte(run.stdout), &res))
	require.Len(t, res.DiskUtil, 1)
	assert.Positive(t, res.DiskUtil[0].ReadIOs)
	assert.Equal(t, res.DiskUtil[0].ReadIOs, ms[0].Simulated)
	assert.Equal(t, res.DiskUtil[0].ReadIOs, ms[1].Simulated)
	assert.Positive(t, ms[3].Simulated)
	assert.LessOrEqual(t, ms[3].Simulated, res.DiskUtil[0].WriteIOs)

	// The text report labels them.
	r = runCLI(t, deterministic, "reproduce", "--dir", root)
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "  read requests 4k ")
	assert.Contains(t, r.stdout, "  write requests 4k ")

	// A ratio of a request-size metric keeps the canonical key.
	root = experiment(t, "exp", map[string]string{"small.fio": smallJob, "stack.toml": smallStack, "published.toml": published +
		"[rows.r2]\nstack = \"stack.toml\"\nset = [\"host.cpus=2\"]\n[ratios.q]\nof = \"r\"\nover = \"r2\"\nmetric = \"read_requests_4096\"\npublished = 1\ntolerance = 1e9\n"})
	r = runCLI(t, deterministic, "reproduce", "--dir", root, "--output-format", "json")
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	var withRatio struct {
		Experiments []struct {
			Ratios []struct {
				Metric string `json:"metric"`
			} `json:"ratios"`
		} `json:"experiments"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &withRatio), r.stdout)
	require.Len(t, withRatio.Experiments[0].Ratios, 1)
	assert.Equal(t, "read_requests_4k", withRatio.Experiments[0].Ratios[0].Metric)
}

// A row stated only in ratios has "metrics": [] in the JSON, a list like
// every other row's, not null.
func TestReproduceJSONEmptyMetrics(t *testing.T) {
	root := experiment(t, "exp", map[string]string{
		"small.fio": bsJob, "stack.toml": smallStack, "published.toml": `source = "s"
tolerance = 1000
[env]
BS = "4k"
[rows.a]
stack = "stack.toml"
[rows.b]
stack = "stack.toml"
set = ["host.cpus=8"]
read_mibs = 1
[ratios.r]
of = "b"
over = "a"
metric = "read_mibs"
published = 1
`})
	r := runCLI(t, deterministic, "reproduce", "--dir", root, "--output-format", "json")
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	assert.NotContains(t, r.stdout, `"metrics": null`)
	var out struct {
		Experiments []struct {
			Rows []struct {
				Metrics []any `json:"metrics"`
			} `json:"rows"`
		} `json:"experiments"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	require.Len(t, out.Experiments, 1)
	require.Len(t, out.Experiments[0].Rows, 2)
	assert.NotNil(t, out.Experiments[0].Rows[0].Metrics)
	assert.Empty(t, out.Experiments[0].Rows[0].Metrics)
}

// An unknown key, and a row's error, name the line of published.toml
// they are on (the key's, or the row's table header).
func TestReproducePublishedErrorLines(t *testing.T) {
	head := "source = \"s\"\ntolerance = 0.1\n"
	row := "\n[rows.r]\nbs = \"4k\"\nstack = \"stack.toml\"\nread_mibs = 10\n"
	for _, tc := range []struct{ published, want string }{
		{head + row + "read_mib = 3\n", `published.toml:8: unknown key "rows.r.read_mib"`},
		{head + "frob = 1\n" + row, `published.toml:3: unknown key "frob"`},
		{head + row + "tolerance = -1\n", "published.toml:4: rows.r: tolerance -1"},
		{head + "[rows.r]\nstack = \"nope.toml\"\nread_mibs = 1\n", `published.toml:3: rows.r: stack "nope.toml"`},
		{head + "[rows.r]\nstack = \"/etc/passwd\"\nread_mibs = 1\n", `published.toml:3: rows.r: stack "/etc/passwd": must name a file in the experiment's directory`},
		{head + "[rows.r]\nstack = \"../stack.toml\"\nread_mibs = 1\n", `stack "../stack.toml": must name a file in the experiment's directory`},
		{head + "job = \"/tmp/x.fio\"\n" + row, `job "/tmp/x.fio": must name a file in the experiment's directory`},
	} {
		root := experiment(t, "exp", map[string]string{"small.fio": bsJob, "stack.toml": smallStack, "published.toml": tc.published})
		r := runCLI(t, deterministic, "reproduce", "--dir", root)
		assert.Equal(t, exitBadArgs, r.status, "stderr: %s", r.stderr)
		assert.Contains(t, r.stderr, tc.want)
	}
}

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bsJob is a short 4-job randrw run whose block size is ${BS}.
const bsJob = `[global]
size=64m
runtime=200ms
numjobs=4
rw=randrw
direct=1
filename=x
bs=${BS}
group_reporting

[small]
`

// compareJSON is the JSON of blksim compare.
type compareJSON struct {
	Job      string `json:"job"`
	Seed     uint64 `json:"seed"`
	SweepKey string `json:"sweep_key"`
	Variants []struct {
		Name     string   `json:"name"`
		Settings []string `json:"settings"`
	} `json:"variant_settings"`
	Rows []struct {
		Sweep string `json:"sweep_value"`
		Cells []struct {
			Variant string `json:"variant"`
			Read    struct {
				MiBs  float64 `json:"bw_mibs"`
				IOPS  float64 `json:"iops"`
				LatUs float64 `json:"lat_mean_us"`
			} `json:"read"`
			Write struct {
				MiBs  float64 `json:"bw_mibs"`
				IOPS  float64 `json:"iops"`
				LatUs float64 `json:"lat_mean_us"`
			} `json:"write"`
			Total float64  `json:"total_bw_mibs"`
			Ratio *float64 `json:"bw_ratio_to_first"`
		} `json:"variants"`
	} `json:"rows"`
}

// compareArgs compares the 5.2 ext4 DIO read locking with its revert at
// two block sizes; the job file comes first, as in the usage line.
func compareArgs(job string, extra ...string) []string {
	return append([]string{"compare", job,
		"--variant", "w/:ext4.parallel_dio_reads=true",
		"--variant", "w/o:ext4.parallel_dio_reads=false",
		"--sweep", "env.BS=4k,64k"}, extra...)
}

func TestCompareTable(t *testing.T) {
	job := writeFile(t, "bs.fio", bsJob)
	r := runCLI(t, deterministic, compareArgs(job, "--seed", "5")...)
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	assert.Empty(t, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	// Title, two variant lines, blank, two header lines, two rows.
	require.Len(t, lines, 8, r.stdout)
	assert.Equal(t, "compare: "+job+", seed 5, sweep env.BS", lines[0])
	assert.Equal(t, []string{"w/:", "ext4.parallel_dio_reads=true"}, strings.Fields(lines[1]))
	assert.Equal(t, []string{"w/o:", "ext4.parallel_dio_reads=false"}, strings.Fields(lines[2]))
	assert.Empty(t, lines[3])
	head := strings.Split(lines[4], "|")
	require.Len(t, head, 3, lines[4])
	assert.Equal(t, "env.BS", strings.TrimSpace(head[0]))
	assert.Equal(t, "w/", strings.TrimSpace(head[1]))
	assert.Equal(t, "w/o", strings.TrimSpace(head[2]))
	assert.Equal(t, []string{"READ", "MiB/s", "IOPS", "lat", "us", "WRITE", "MiB/s", "IOPS", "lat", "us", "ratio"},
		strings.Fields(strings.Split(lines[5], "|")[1]))
	for i, bs := range []string{"4k", "64k"} {
		cells := strings.Split(lines[6+i], "|")
		require.Len(t, cells, 3, lines[6+i])
		assert.Equal(t, bs, strings.TrimSpace(cells[0]))
		for _, c := range cells[1:] {
			assert.Len(t, strings.Fields(c), 7, "cell %q", c)
		}
		assert.Equal(t, "1.00x", strings.Fields(cells[1])[6], "the first variant is the reference")
		assert.NotEqual(t, "1.00x", strings.Fields(cells[2])[6], "the revert changes the bandwidth")
	}

	// Deterministic: the same command gives the same table.
	again := runCLI(t, deterministic, compareArgs(job, "--seed", "5")...)
	assert.Equal(t, r.stdout, again.stdout)
}

func TestCompareJSON(t *testing.T) {
	job := writeFile(t, "bs.fio", bsJob)
	r := runCLI(t, deterministic, compareArgs(job, "--output-format", "json")...)
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	var out compareJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	assert.Equal(t, job, out.Job)
	assert.Equal(t, uint64(1), out.Seed)
	assert.Equal(t, "env.BS", out.SweepKey)
	require.Len(t, out.Variants, 2)
	assert.Equal(t, "w/o", out.Variants[1].Name)
	assert.Equal(t, []string{"ext4.parallel_dio_reads=false"}, out.Variants[1].Settings)
	require.Len(t, out.Rows, 2)
	for i, bs := range []string{"4k", "64k"} {
		row := out.Rows[i]
		assert.Equal(t, bs, row.Sweep)
		require.Len(t, row.Cells, 2)
		for _, c := range row.Cells {
			assert.Positive(t, c.Read.MiBs)
			assert.Positive(t, c.Read.IOPS)
			assert.Positive(t, c.Read.LatUs)
			assert.Positive(t, c.Write.MiBs)
			assert.InDelta(t, c.Read.MiBs+c.Write.MiBs, c.Total, 1e-9)
			require.NotNil(t, c.Ratio)
			assert.InDelta(t, c.Total/row.Cells[0].Total, *c.Ratio, 1e-9)
		}
		assert.Equal(t, 1.0, *row.Cells[0].Ratio)
	}
	// 64k IOs move more bytes per IO than 4k ones.
	assert.Greater(t, out.Rows[1].Cells[0].Read.MiBs/out.Rows[1].Cells[0].Read.IOPS,
		out.Rows[0].Cells[0].Read.MiBs/out.Rows[0].Cells[0].Read.IOPS)

	// Each cell is the run "blksim run" makes with the same stack, job
	// variables and seed.
	env := map[string]string{"BLKSIM_DETERMINISTIC": "1", "BS": "64k"}
	single := runCLI(t, env, "run", "--set", "ext4.parallel_dio_reads=false", "--output-format", "json", job)
	require.Equal(t, exitOK, single.status, "stderr: %s", single.stderr)
	var ref jsonOut
	require.NoError(t, json.Unmarshal([]byte(single.stdout), &ref))
	require.Len(t, ref.Jobs, 1)
	cell := out.Rows[1].Cells[1]
	assert.InDelta(t, ref.Jobs[0].Read.Lat.Mean/1e3, cell.Read.LatUs, 1e-3)
	assert.InDelta(t, ref.Jobs[0].Write.Lat.Mean/1e3, cell.Write.LatUs, 1e-3)
	// fio's IOPS divide by whole milliseconds of runtime.
	assert.InEpsilon(t, ref.Jobs[0].Read.IOPS, cell.Read.IOPS, 0.01)
}

// Without a sweep there is one row; a variant may be just a name (the
// base stack), and a variant may set a job variable with env.NAME; the
// base stack comes from --stack and --set.
func TestCompareNoSweep(t *testing.T) {
	job := writeFile(t, "bs.fio", bsJob)
	env := map[string]string{"BLKSIM_DETERMINISTIC": "1", "BS": "4k"}
	r := runCLI(t, env, "compare", "--set", "host.cpus=4", "--variant", "base:", "--variant", "big:env.BS=16k",
		"--output-format", "json", job)
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	var out compareJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.Empty(t, out.SweepKey)
	require.Len(t, out.Rows, 1)
	assert.Empty(t, out.Rows[0].Sweep)
	assert.Equal(t, []string{}, out.Variants[0].Settings)
	c := out.Rows[0].Cells
	require.Len(t, c, 2)
	// 4k vs 16k IOs.
	assert.InEpsilon(t, 4, c[0].Read.IOPS/c[0].Read.MiBs/(c[1].Read.IOPS/c[1].Read.MiBs), 1e-6)

	text := runCLI(t, env, "compare", "--set", "host.cpus=4", "--variant", "base:", "--variant", "big:env.BS=16k", job)
	require.Equal(t, exitOK, text.status, "stderr: %s", text.stderr)
	assert.Contains(t, text.stdout, "base:  (base stack)\n")
	lines := strings.Split(strings.TrimSuffix(text.stdout, "\n"), "\n")
	assert.Equal(t, 1, strings.Count(lines[len(lines)-1], "|"), "no sweep column: %q", lines[len(lines)-1])
}

// A stack key can be swept too.
func TestCompareSweepStackKey(t *testing.T) {
	job := writeFile(t, "bs.fio", bsJob)
	env := map[string]string{"BLKSIM_DETERMINISTIC": "1", "BS": "4k"}
	r := runCLI(t, env, "compare", job, "--variant", "w:", "--sweep", "device.read_time=80us,700us", "--output-format", "json")
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	var out compareJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	require.Len(t, out.Rows, 2)
	assert.Equal(t, "device.read_time", out.SweepKey)
	assert.Greater(t, out.Rows[1].Cells[0].Read.LatUs, 2*out.Rows[0].Cells[0].Read.LatUs)
}

func TestCompareBadInputExitsTwo(t *testing.T) {
	job := writeFile(t, "bs.fio", bsJob)
	v := "ok:ext4.iomap_dio=true"
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no variant", []string{"compare", job}, []string{"--variant"}},
		{"no colon", []string{"compare", job, "--variant", "withoutcolon"}, []string{`"withoutcolon"`, "NAME:KEY=VALUE"}},
		{"no name", []string{"compare", job, "--variant", ":ext4.iomap_dio=true"}, []string{`":ext4.iomap_dio=true"`}},
		{"setting without =", []string{"compare", job, "--variant", "x:ext4.iomap_dio"}, []string{"--variant x", `"ext4.iomap_dio"`, "KEY=VALUE"}},
		{"empty setting", []string{"compare", job, "--variant", "x:ext4.iomap_dio=true,"}, []string{"--variant x", "KEY=VALUE"}},
		{"unknown key", []string{"compare", job, "--variant", v, "--variant", "bad:ext4.frob=1"}, []string{"--variant bad", `"ext4.frob"`}},
		{"bad value", []string{"compare", job, "--variant", "bad:host.cpus=many"}, []string{"--variant bad", `"host.cpus"`, `"many"`}},
		{"unknown device key", []string{"compare", job, "--variant", "bad:device.frob=1"}, []string{"--variant bad", `"frob"`}},
		{"key twice", []string{"compare", job, "--variant", "bad:host.cpus=2,host.cpus=4"}, []string{"--variant bad", `"host.cpus"`, "twice"}},
		{"variant twice", []string{"compare", job, "--variant", v, "--variant", v}, []string{"--variant ok", "twice"}},
		{"empty env name", []string{"compare", job, "--variant", "bad:env.=4k"}, []string{"--variant bad", `"env.=4k"`}},
		{"sweep without =", []string{"compare", job, "--variant", v, "--sweep", "env.BS"}, []string{"--sweep", `"env.BS"`}},
		{"sweep empty value", []string{"compare", job, "--variant", v, "--sweep", "env.BS=4k,,8k"}, []string{"--sweep env.BS", "empty value"}},
		{"sweep value twice", []string{"compare", job, "--variant", v, "--sweep", "env.BS=4k,8k,4k"}, []string{"--sweep env.BS", `value "4k" given twice`}},
		{"variant name with a tab", []string{"compare", job, "--variant", "a\tb:env.BS=4k"}, []string{"--variant", "control character"}},
		{"sweep unknown key", []string{"compare", job, "--variant", v, "--sweep", "host.frob=1,2"}, []string{"--sweep host.frob", `"host.frob"`}},
		{"sweep bad value", []string{"compare", job, "--variant", v, "--sweep", "host.cpus=2,lots"}, []string{"--sweep host.cpus", `"lots"`}},
		{"two sweeps", []string{"compare", job, "--variant", v, "--sweep", "env.BS=4k", "--sweep", "host.cpus=2"}, []string{"one --sweep"}},
		{"variant sets the swept key", []string{"compare", job, "--variant", "x:env.BS=4k", "--sweep", "env.BS=4k,8k"}, []string{"--variant x", "env.BS", "--sweep"}},
		{"bad job value at a sweep value", []string{"compare", job, "--variant", v, "--sweep", "env.BS=4k,huge"}, []string{"variant ok, env.BS=huge", job + ":8:", `"bs"`}},
		{"two job files", []string{"compare", job, job, "--variant", v}, []string{"one job file"}},
		{"bad output format", []string{"compare", job, "--variant", v, "--output-format", "xml"}, []string{`"xml"`}},
		{"unknown flag", []string{"compare", job, "--variant", v, "--frob"}, []string{"frob"}},
		{"bad --set", []string{"compare", job, "--variant", v, "--set", "nokey=1"}, []string{`"nokey"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, deterministic, tc.args...)
			assert.Equal(t, exitBadArgs, r.status, "stderr: %s", r.stderr)
			assert.Empty(t, r.stdout)
			for _, w := range tc.want {
				assert.Contains(t, r.stderr, w)
			}
			assert.True(t, strings.HasPrefix(r.stderr, "blksim: "), "stderr %q", r.stderr)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "stderr %q", r.stderr)
		})
	}
}

func TestCompareAndReproduceHelp(t *testing.T) {
	for _, args := range [][]string{{"compare", "-h"}, {"reproduce", "--help"}, {"help"}} {
		r := runCLI(t, nil, args...)
		assert.Equal(t, exitOK, r.status, "%v: stderr: %s", args, r.stderr)
		assert.Contains(t, r.stdout, "blksim compare [JOBFILE] --variant NAME:KEY=VALUE")
		assert.Contains(t, r.stdout, "blksim reproduce [NAME]...")
		assert.Contains(t, r.stdout, "env.NAME")
		assert.Empty(t, r.stderr)
	}
}

// ncpusJob runs one job per simulated CPU: $ncpus is host.cpus.
const ncpusJob = `[j]
rw=randread
bs=4k
direct=1
size=16m
runtime=50ms
filename=x
group_reporting
numjobs=$ncpus
`

// compare and reproduce, like run, give a job file's $ncpus and
// $mb_memory the simulated host's values (each variant's or row's).
func TestCompareAndReproduceHostKeywords(t *testing.T) {
	job := writeFile(t, "ncpus.fio", ncpusJob)
	r := runCLI(t, deterministic, "compare", job, "--variant", "c1:host.cpus=1", "--variant", "c4:host.cpus=4", "--output-format", "json")
	require.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
	var cmp compareJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &cmp))
	require.Len(t, cmp.Rows, 1)
	require.Len(t, cmp.Rows[0].Cells, 2)
	// Four jobs on four CPUs do about four times one job's IO.
	assert.InDelta(t, 4, cmp.Rows[0].Cells[1].Read.IOPS/cmp.Rows[0].Cells[0].Read.IOPS, 0.5)

	root := experiment(t, "nc", map[string]string{
		"ncpus.fio": ncpusJob, "stack.toml": "host.cpus = 4\n",
		"published.toml": "source = \"s\"\ntolerance = 0.5\n[rows.a]\nstack = \"stack.toml\"\nread_iops = 38000\n",
	})
	r = runCLI(t, deterministic, "reproduce", "--dir", root)
	assert.Equal(t, exitOK, r.status, "stderr: %s", r.stderr)
}

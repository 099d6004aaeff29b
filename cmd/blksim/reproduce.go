package main

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/blksim/blksim"
	"github.com/blksim/blksim/internal/tomlkv"
	"github.com/blksim/blksim/internal/units"
	"github.com/blksim/blksim/report"
	"github.com/blksim/blksim/stack"
	"github.com/blksim/blksim/workload"
)

// experimentsRoot is the embedded tree of shipped experiments.
const experimentsRoot = "testdata/experiments"

// publishedName is the file that makes a directory an experiment.
const publishedName = "published.toml"

// publishedFile is an experiment's published.toml; the format is described
// in testdata/experiments/README.md.
type publishedFile struct {
	Source    string                    `toml:"source"`
	Tolerance *float64                  `toml:"tolerance"`
	Job       string                    `toml:"job"`
	Seed      *int64                    `toml:"seed"`
	Env       map[string]string         `toml:"env"`
	Options   []string                  `toml:"options"`
	Rows      map[string]publishedRow   `toml:"rows"`
	Ratios    map[string]publishedRatio `toml:"ratios"`
}

// publishedRatio is one [ratios.NAME] table: a published ratio of one
// metric between two rows.
type publishedRatio struct {
	Of        string   `toml:"of"`
	Over      string   `toml:"over"`
	Metric    string   `toml:"metric"`
	Published *float64 `toml:"published"`
	Tolerance *float64 `toml:"tolerance"`
}

// publishedRow is one [rows.NAME] table.
type publishedRow struct {
	BS         string            `toml:"bs"`
	Stack      string            `toml:"stack"`
	Env        map[string]string `toml:"env"`
	Set        []string          `toml:"set"`
	Tolerance  *float64          `toml:"tolerance"`
	ReadMiBs   *float64          `toml:"read_mibs"`
	ReadIOPS   *float64          `toml:"read_iops"`
	ReadLatUs  *float64          `toml:"read_lat_us"`
	WriteMiBs  *float64          `toml:"write_mibs"`
	WriteIOPS  *float64          `toml:"write_iops"`
	WriteLatUs *float64          `toml:"write_lat_us"`
	ReadReqs   *float64          `toml:"read_requests"`
	WriteReqs  *float64          `toml:"write_requests"`
}

// metric returns the row's published value of the metric key, nil if the
// row does not state it.
func (r *publishedRow) metric(key string) *float64 {
	switch key {
	case "read_mibs":
		return r.ReadMiBs
	case "read_iops":
		return r.ReadIOPS
	case "read_lat_us":
		return r.ReadLatUs
	case "write_mibs":
		return r.WriteMiBs
	case "write_iops":
		return r.WriteIOPS
	case "write_lat_us":
		return r.WriteLatUs
	case "read_requests":
		return r.ReadReqs
	case "write_requests":
		return r.WriteReqs
	}
	panic("blksim: published.toml has no field for metric " + key)
}

// experimentDir is where one experiment's files are.
type experimentDir struct {
	name string
	fsys fs.FS // rooted at the experiment's directory
	// display prefixes file names in messages ("embedded:testdata/experiments/ext4-dio/").
	display string
	// disk is the directory on disk, "" for an embedded experiment.
	disk string
}

// reproRun is one row, ready to run.
type reproRun struct {
	exp, row int // indexes into the report
	cfg      *stack.Config
	specs    []workload.JobSpec
	seed     uint64
}

func cmdReproduce(args []string, stdout io.Writer, env func(string) (string, bool)) error {
	fl := flag.NewFlagSet("reproduce", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	dir := fl.String("dir", "", "read experiments from this directory instead of the embedded ones")
	seed := fl.Uint64("seed", 0, "engine seed of every row (default: each published.toml's seed, or 1)")
	parallel := fl.Int("parallel", runtime.GOMAXPROCS(0), "rows simulated at once")
	format := fl.String("output-format", "normal", "normal or json")
	output := fl.String("output", "", "write the output to this file")
	names, err := parseInterspersed(fl, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return nil
		}
		return bad("reproduce: %v", err)
	}
	if *format != "normal" && *format != "json" {
		return bad("reproduce: --output-format %q: want normal or json", *format)
	}
	if *parallel < 1 {
		return bad("reproduce: --parallel %d: want at least 1", *parallel)
	}
	seedSet := false
	fl.Visit(func(f *flag.Flag) { seedSet = seedSet || f.Name == "seed" })
	if err := checkOutputPath("reproduce", *output); err != nil {
		return err
	}
	dirs, err := experimentDirs(*dir)
	if err != nil {
		return err
	}
	dirs, err = selectExperiments(dirs, names)
	if err != nil {
		return err
	}

	// Load every experiment and set up every row before running any.
	rep := &report.Reproduction{}
	var runs []reproRun
	for _, d := range dirs {
		exp, rr, err := loadExperiment(d, len(rep.Experiments))
		if err != nil {
			return err
		}
		if seedSet {
			exp.Seed = *seed
			for i := range rr {
				rr[i].seed = *seed
			}
		}
		rep.Experiments = append(rep.Experiments, exp)
		runs = append(runs, rr...)
	}

	// Rows are independent: each runs on its own engine, single-threaded,
	// so up to --parallel of them run at once. Results go to fixed slots,
	// keeping the output in file order.
	sums := make([]report.Summary, len(runs))
	errs := make([]error, len(runs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(*parallel, len(runs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				res, err := simulate(runs[i].cfg, runs[i].specs, runs[i].seed)
				if err != nil {
					errs[i] = err
					continue
				}
				sums[i] = report.Summarize(res)
			}
		}()
	}
	for i := range runs {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, r := range runs {
		if errs[i] != nil {
			return fmt.Errorf("reproduce: %s/%s: %w", rep.Experiments[r.exp].Name, rep.Experiments[r.exp].Rows[r.row].Name, errs[i])
		}
		row := &rep.Experiments[r.exp].Rows[r.row]
		for mi := range row.Metrics {
			m := &row.Metrics[mi]
			*m = report.NewReproMetric(metricByKey(m.Key), m.Published, metricByKey(m.Key).Value(sums[i]), row.Tolerance)
		}
	}
	for _, e := range rep.Experiments {
		for qi := range e.Ratios {
			q := &e.Ratios[qi]
			m := metricByKey(q.Key)
			q.SetSimulated(m.Value(sumOf(runs, sums, rep, e.Name, q.Of)), m.Value(sumOf(runs, sums, rep, e.Name, q.Over)))
		}
	}
	rep.Tally()

	var out bytes.Buffer
	if *format == "json" {
		err = report.WriteReproduceJSON(&out, rep)
	} else {
		err = report.WriteReproduce(&out, rep)
	}
	if err != nil {
		return err
	}
	// The output is complete even when rows are off: write it, then fail.
	if err := emit(stdout, *output, out.Bytes()); err != nil {
		return err
	}
	if !rep.OK {
		return errors.New(rep.Verdict())
	}
	return nil
}

// sumOf returns the summary of row of experiment exp.
func sumOf(runs []reproRun, sums []report.Summary, rep *report.Reproduction, exp, row string) report.Summary {
	for i, r := range runs {
		e := &rep.Experiments[r.exp]
		if e.Name == exp && e.Rows[r.row].Name == row {
			return sums[i]
		}
	}
	panic("blksim: reproduce: no run for " + exp + "/" + row)
}

// metricByKey returns the report metric named key, which loading
// checked.
func metricByKey(key string) report.Metric {
	m, err := report.MetricByKey(key)
	if err != nil {
		panic("blksim: " + err.Error())
	}
	return m
}

// experimentDirs lists the experiments: the embedded ones when dir is "";
// else the subdirectories of dir holding a published.toml, or dir itself
// if it holds one. The list is sorted by name.
func experimentDirs(dir string) ([]experimentDir, error) {
	if dir == "" {
		sub, err := fs.Sub(blksim.Testdata, experimentsRoot)
		if err != nil {
			return nil, err
		}
		return listExperiments(sub, "embedded:"+experimentsRoot+"/", "")
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, bad("reproduce: --dir: %v", err)
	}
	if !fi.IsDir() {
		return nil, bad("reproduce: --dir %s: not a directory", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, publishedName)); err == nil {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, bad("reproduce: --dir: %v", err)
		}
		return []experimentDir{{name: filepath.Base(abs), fsys: os.DirFS(dir), display: dir + string(filepath.Separator), disk: dir}}, nil
	}
	dirs, err := listExperiments(os.DirFS(dir), dir+string(filepath.Separator), dir)
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, bad("reproduce: --dir %s: no experiment (a directory with a %s) in it", dir, publishedName)
	}
	return dirs, nil
}

// notInside says why a job or stack path in published.toml was refused:
// an experiment is read as a directory of its own (the shipped ones from
// the binary), so its files are named relative to it.
const notInside = "must name a file in the experiment's directory (a relative path with slashes, no \"..\", not absolute)"

// listExperiments returns the subdirectories of root holding a
// published.toml.
func listExperiments(root fs.FS, display, disk string) ([]experimentDir, error) {
	ents, err := fs.ReadDir(root, ".")
	if err != nil {
		return nil, bad("reproduce: %s: %v", display, err)
	}
	var out []experimentDir
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if _, err := fs.Stat(root, path.Join(e.Name(), publishedName)); err != nil {
			continue
		}
		sub, err := fs.Sub(root, e.Name())
		if err != nil {
			return nil, err
		}
		d := experimentDir{name: e.Name(), fsys: sub, display: display + e.Name() + "/"}
		if disk != "" {
			d.disk = filepath.Join(disk, e.Name())
			d.display = d.disk + string(filepath.Separator)
		}
		out = append(out, d)
	}
	return out, nil
}

// selectExperiments keeps the experiments named in names (all if none),
// in the order of dirs.
func selectExperiments(dirs []experimentDir, names []string) ([]experimentDir, error) {
	if len(names) == 0 {
		return dirs, nil
	}
	have := make([]string, len(dirs))
	for i, d := range dirs {
		have[i] = d.name
	}
	want := map[string]bool{}
	for _, n := range names {
		found := false
		for _, h := range have {
			found = found || h == n
		}
		if !found {
			return nil, bad("reproduce: no experiment %q (have: %s)", n, strings.Join(have, ", "))
		}
		want[n] = true
	}
	var out []experimentDir
	for _, d := range dirs {
		if want[d.name] {
			out = append(out, d)
		}
	}
	return out, nil
}

// loadExperiment reads d's published.toml, job and stack files and returns
// the experiment's report skeleton (published values, no simulated ones
// yet) and its rows ready to run. Every problem is bad input naming the
// file, and the row or key.
func loadExperiment(d experimentDir, expIndex int) (report.ReproExperiment, []reproRun, error) {
	pubName := d.display + publishedName
	fail := func(format string, args ...any) (report.ReproExperiment, []reproRun, error) {
		return report.ReproExperiment{}, nil, bad("reproduce: %s: %s", pubName, fmt.Sprintf(format, args...))
	}
	data, err := fs.ReadFile(d.fsys, publishedName)
	if err != nil {
		return fail("%v", err)
	}
	var pub publishedFile
	md, err := toml.Decode(string(data), &pub)
	if err != nil {
		return fail("%v", err)
	}
	// The request-size metrics (read_requests_4k) have open-ended names:
	// the struct leaves them undecoded, and sizeMetrics reads (and
	// checks) them from this untyped view.
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return fail("%v", err)
	}
	// failAt is fail naming the line that sets key (or opens its table).
	failAt := func(key, format string, args ...any) (report.ReproExperiment, []reproRun, error) {
		if n := tomlkv.KeyLine(data, key); n > 0 {
			return report.ReproExperiment{}, nil, bad("reproduce: %s:%d: %s", pubName, n, fmt.Sprintf(format, args...))
		}
		return fail(format, args...)
	}
	for _, k := range md.Undecoded() {
		if len(k) != 3 || k[0] != "rows" || !isSizeMetricKey(k[2]) {
			return failAt(strings.Join(k, "."), "unknown key %q", k.String())
		}
	}
	if strings.TrimSpace(pub.Source) == "" {
		return fail("no source (where the published numbers come from)")
	}
	if pub.Tolerance == nil {
		return fail("no tolerance")
	}
	if !validTolerance(*pub.Tolerance) {
		return fail("tolerance %v: want a fraction above 0 (0.15 for 15%%)", *pub.Tolerance)
	}
	seed := uint64(1)
	if pub.Seed != nil {
		if *pub.Seed < 0 {
			return fail("seed %d: want 0 or more", *pub.Seed)
		}
		seed = uint64(*pub.Seed)
	}
	job := pub.Job
	if job == "" {
		fios, _ := fs.Glob(d.fsys, "*.fio")
		if len(fios) != 1 {
			return fail("no job key, and %d .fio files beside it (want exactly one): %s", len(fios), strings.Join(fios, ", "))
		}
		job = fios[0]
	}
	if !fs.ValidPath(job) {
		return fail("job %q: %s", job, notInside)
	}
	jobData, err := fs.ReadFile(d.fsys, job)
	if err != nil {
		return fail("job %q: %v", job, err)
	}
	rowNames := tableNames(md, "rows", pub.Rows)
	if len(rowNames) == 0 {
		return fail("no [rows.NAME] tables")
	}

	exp := report.ReproExperiment{Name: d.name, Source: pub.Source, Job: job, Seed: seed, Tolerance: *pub.Tolerance}
	var runs []reproRun
	for ri, name := range rowNames {
		row := pub.Rows[name]
		rowFail := func(format string, args ...any) (report.ReproExperiment, []reproRun, error) {
			return failAt("rows."+name, "rows.%s: %s", name, fmt.Sprintf(format, args...))
		}
		rep := report.ReproRow{Name: name, Stack: row.Stack, Env: map[string]string{}, Set: []string{}, Tolerance: *pub.Tolerance}
		if row.Tolerance != nil {
			if !validTolerance(*row.Tolerance) {
				return rowFail("tolerance %v: want a fraction above 0", *row.Tolerance)
			}
			rep.Tolerance = *row.Tolerance
		}
		for k, v := range pub.Env {
			rep.Env[k] = v
		}
		for k, v := range row.Env {
			rep.Env[k] = v
		}
		if row.BS != "" {
			if _, ok := row.Env["BS"]; ok {
				return rowFail("both bs and env.BS given")
			}
			rep.Env["BS"] = row.BS
		}
		for _, m := range report.Metrics() {
			v := row.metric(m.Key)
			if v == nil {
				continue
			}
			if !(*v > 0) || math.IsInf(*v, 0) {
				return rowFail("%s = %v: want a number above 0", m.Key, *v)
			}
			rep.Metrics = append(rep.Metrics, report.ReproMetric{Key: m.Key, Label: m.Label, Published: *v})
		}
		sized, err := sizeMetrics(raw, name)
		if err != nil {
			return rowFail("%v", err)
		}
		// An empty list, not null, in the JSON of a row stated only in ratios.
		rep.Metrics = orderMetrics(append([]report.ReproMetric{}, append(rep.Metrics, sized...)...))
		if len(rep.Metrics) == 0 && !inRatio(pub.Ratios, name) {
			return rowFail("no published metric (want some of %s, or a ratio naming the row)", metricKeys())
		}
		if row.Stack == "" {
			return rowFail("no stack file")
		}
		if !fs.ValidPath(row.Stack) {
			return rowFail("stack %q: %s", row.Stack, notInside)
		}
		stackData, err := fs.ReadFile(d.fsys, row.Stack)
		if err != nil {
			return rowFail("stack %q: %v", row.Stack, err)
		}
		cfg, err := stack.Parse(d.display+row.Stack, stackData, d.disk)
		if err != nil {
			return report.ReproExperiment{}, nil, usageError{fmt.Errorf("reproduce: %w", err)}
		}
		for _, s := range row.Set {
			k, v, ok := strings.Cut(s, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return rowFail("set %q: want KEY=VALUE", s)
			}
			if err := cfg.Set(strings.TrimSpace(k), strings.TrimSpace(v), pubName+": rows."+name+".set"); err != nil {
				return report.ReproExperiment{}, nil, usageError{fmt.Errorf("reproduce: %w", err)}
			}
			rep.Set = append(rep.Set, strings.TrimSpace(k)+"="+strings.TrimSpace(v))
		}
		if err := checkBuild(cfg); err != nil {
			return report.ReproExperiment{}, nil, fmt.Errorf("reproduce: %s/%s: %w", d.name, name, err)
		}
		// The rows' variables only: the caller's environment must not
		// change a published comparison.
		// $ncpus and $mb_memory are the row's simulated host's, as in run.
		lookup := overlayEnv(nil, rep.Env)
		popt := workload.ParseOptions{Env: lookup, Host: simulatedHost(cfg)}
		for _, o := range pub.Options {
			k, v, hasValue := strings.Cut(o, "=")
			k = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(k), "--"))
			if k == "" {
				return fail("options: %q: want NAME=VALUE or NAME", o)
			}
			popt.Overrides = append(popt.Overrides, workload.CommandLineOption{Name: k, Value: strings.TrimSpace(v), HasValue: hasValue})
		}
		var specs []workload.JobSpec
		if d.disk != "" {
			specs, err = workload.ParseFileWith(filepath.Join(d.disk, job), popt)
		} else {
			specs, err = workload.ParseWith(d.display+job, bytes.NewReader(jobData), popt)
		}
		if err != nil {
			return report.ReproExperiment{}, nil, usageError{fmt.Errorf("reproduce: %s/%s: %w", d.name, name, err)}
		}
		exp.Rows = append(exp.Rows, rep)
		runs = append(runs, reproRun{exp: expIndex, row: ri, cfg: cfg, specs: specs, seed: seed})
	}
	ratios, err := loadRatios(pub, md, rowNames)
	if err != nil {
		return fail("%v", err)
	}
	exp.Ratios = ratios
	return exp, runs, nil
}

// tableNames returns the names of the [kind.NAME] tables of m in file
// order, or sorted when they were not all written as tables (inline).
func tableNames[V any](md toml.MetaData, kind string, m map[string]V) []string {
	var names []string
	for _, k := range md.Keys() {
		if len(k) == 2 && k[0] == kind {
			names = append(names, k[1])
		}
	}
	if len(names) != len(m) {
		names = names[:0]
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	return names
}

// inRatio reports whether some ratio names row.
func inRatio(ratios map[string]publishedRatio, row string) bool {
	for _, q := range ratios {
		if q.Of == row || q.Over == row {
			return true
		}
	}
	return false
}

// loadRatios checks the [ratios.NAME] tables and returns them in file
// order.
func loadRatios(pub publishedFile, md toml.MetaData, rows []string) ([]report.ReproRatio, error) {
	var out []report.ReproRatio
	for _, name := range tableNames(md, "ratios", pub.Ratios) {
		q := pub.Ratios[name]
		for _, r := range []string{q.Of, q.Over} {
			if !slices.Contains(rows, r) {
				return nil, fmt.Errorf("ratios.%s: row %q: no such row (have %s)", name, r, strings.Join(rows, ", "))
			}
		}
		if q.Of == q.Over {
			return nil, fmt.Errorf("ratios.%s: of and over name the same row %q", name, q.Of)
		}
		m, err := report.MetricByKey(q.Metric)
		if err != nil {
			return nil, fmt.Errorf("ratios.%s: %v (want one of %s)", name, err, metricKeys())
		}
		if q.Published == nil || !(*q.Published > 0) || math.IsInf(*q.Published, 0) {
			return nil, fmt.Errorf("ratios.%s: published: want a number above 0", name)
		}
		tol := *pub.Tolerance
		if q.Tolerance != nil {
			if !validTolerance(*q.Tolerance) {
				return nil, fmt.Errorf("ratios.%s: tolerance %v: want a fraction above 0", name, *q.Tolerance)
			}
			tol = *q.Tolerance
		}
		out = append(out, report.ReproRatio{Name: name, Of: q.Of, Over: q.Over, Key: m.Key,
			Label: m.Label, Published: *q.Published, Tolerance: tol})
	}
	return out, nil
}

// validTolerance reports whether t is a usable tolerance fraction.
func validTolerance(t float64) bool { return t > 0 && !math.IsInf(t, 0) }

// metricKeys lists the metric keys of published.toml.
func metricKeys() string {
	var keys []string
	for _, m := range report.Metrics() {
		keys = append(keys, m.Key)
	}
	return strings.Join(keys, ", ") + ", " + report.RequestSizeKeys
}

// isSizeMetricKey reports whether a row's key is meant as a request-size
// metric (read_requests_4k); report.MetricByKey decides if it is one.
func isSizeMetricKey(k string) bool { return strings.Contains(k, "_requests_") }

// sizeMetrics returns the request-size metrics (read_requests_4k = N)
// that row name of the untyped published.toml states, in no particular
// order. Each value must be a number above 0, and no two keys may name
// the same metric (read_requests_4k and read_requests_4096).
func sizeMetrics(raw map[string]any, name string) ([]report.ReproMetric, error) {
	rows, _ := raw["rows"].(map[string]any)
	row, _ := rows[name].(map[string]any)
	keys := make([]string, 0, len(row))
	for k := range row {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []report.ReproMetric
	seen := map[string]string{}
	for _, k := range keys {
		if !isSizeMetricKey(k) {
			continue
		}
		m, err := report.MetricByKey(k)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[m.Key]; dup {
			return nil, fmt.Errorf("%s and %s name the same metric", prev, k)
		}
		seen[m.Key] = k
		var v float64
		switch x := row[k].(type) {
		case int64:
			v = float64(x)
		case float64:
			v = x
		default:
			return nil, fmt.Errorf("%s = %v: want a number above 0", k, row[k])
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s = %v: want a number above 0", k, v)
		}
		out = append(out, report.ReproMetric{Key: m.Key, Label: m.Label, Published: v})
	}
	return out, nil
}

// orderMetrics sorts a row's metrics for display: the fixed metrics in
// report.Metrics order, each direction's request-size metrics right after
// its request count, smallest size first.
func orderMetrics(ms []report.ReproMetric) []report.ReproMetric {
	fixed := report.Metrics()
	rank := func(m report.ReproMetric) (int, int64) {
		for i, f := range fixed {
			if f.Key == m.Key {
				return 2 * i, 0
			}
		}
		dir, size, _ := strings.Cut(m.Key, "_requests_")
		n, _ := units.ParseSize(size)
		for i, f := range fixed {
			if f.Key == dir+"_requests" {
				return 2*i + 1, n
			}
		}
		return 2 * len(fixed), n
	}
	slices.SortStableFunc(ms, func(a, b report.ReproMetric) int {
		ra, na := rank(a)
		rb, nb := rank(b)
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(na, nb))
	})
	return ms
}

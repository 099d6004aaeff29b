package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"

	"github.com/blksim/blksim/report"
	"github.com/blksim/blksim/stack"
	"github.com/blksim/blksim/workload"
)

// envPrefix marks a variant or sweep key that sets a job-file ${NAME}
// variable instead of a stack key.
const envPrefix = "env."

// variant is one parsed --variant NAME:KEY=VALUE[,KEY=VALUE]...
type variant struct {
	name string
	// settings are the KEY=VALUE pairs as given, for the report.
	settings []string
	// stackSets are the stack keys it sets, in order.
	stackSets [][2]string
	// env holds the job-file variables it sets (env.NAME=VALUE).
	env map[string]string
}

// parseVariant parses a --variant argument. A variant with no settings
// ("NAME:") runs the base stack.
func parseVariant(arg string) (variant, error) {
	name, rest, ok := strings.Cut(arg, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return variant{}, bad("compare: --variant %q: want NAME:KEY=VALUE[,KEY=VALUE]...", arg)
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return variant{}, bad("compare: --variant %q: the name has a control character (it heads a table row)", name)
	}
	v := variant{name: name, settings: []string{}, env: map[string]string{}}
	if strings.TrimSpace(rest) == "" {
		return v, nil
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(rest, ",") {
		k, val, ok := strings.Cut(kv, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		if !ok || k == "" {
			return variant{}, bad("compare: --variant %s: %q: want KEY=VALUE (variant syntax NAME:KEY=VALUE[,KEY=VALUE]...)", name, kv)
		}
		if seen[k] {
			return variant{}, bad("compare: --variant %s: key %q set twice", name, k)
		}
		seen[k] = true
		v.settings = append(v.settings, k+"="+val)
		if envName, ok := strings.CutPrefix(k, envPrefix); ok {
			if envName == "" {
				return variant{}, bad("compare: --variant %s: %q: empty variable name after %q", name, kv, envPrefix)
			}
			v.env[envName] = val
			continue
		}
		v.stackSets = append(v.stackSets, [2]string{k, val})
	}
	return v, nil
}

// sets reports whether the variant sets key (a stack key or env.NAME).
func (v *variant) sets(key string) bool {
	if envName, ok := strings.CutPrefix(key, envPrefix); ok {
		_, set := v.env[envName]
		return set
	}
	for _, kv := range v.stackSets {
		if kv[0] == key {
			return true
		}
	}
	return false
}

// sweep is a parsed --sweep KEY=v1,v2,...
type sweep struct {
	key    string
	values []string
}

// parseSweep parses a --sweep argument.
func parseSweep(arg string) (sweep, error) {
	k, vals, ok := strings.Cut(arg, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" || k == envPrefix {
		return sweep{}, bad("compare: --sweep %q: want KEY=VALUE[,VALUE]... (KEY a stack key or env.NAME)", arg)
	}
	s := sweep{key: k}
	for _, v := range strings.Split(vals, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			return sweep{}, bad("compare: --sweep %s: empty value in %q", k, vals)
		}
		if slices.Contains(s.values, v) {
			return sweep{}, bad("compare: --sweep %s: value %q given twice", k, v)
		}
		s.values = append(s.values, v)
	}
	return s, nil
}

// compareRun is one simulation of a comparison: one variant at one sweep
// value.
type compareRun struct {
	label string // "variant with, env.BS=4k": for errors
	cfg   *stack.Config
	specs []workload.JobSpec
}

func cmdCompare(args []string, stdout io.Writer, env func(string) (string, bool)) error {
	fl := flag.NewFlagSet("compare", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	stackFile := fl.String("stack", "", "base stack TOML file")
	var sets, variantArgs, sweepArgs multiFlag
	fl.Var(&sets, "set", "override a base stack key: KEY=VALUE (repeatable)")
	fl.Var(&variantArgs, "variant", "NAME:KEY=VALUE[,KEY=VALUE]... (repeatable)")
	fl.Var(&sweepArgs, "sweep", "KEY=VALUE[,VALUE]...: run every variant at each value")
	seed := fl.Uint64("seed", 1, "engine seed of every run")
	format := fl.String("output-format", "normal", "normal or json")
	output := fl.String("output", "", "write the output to this file")
	pos, err := parseInterspersed(fl, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return nil
		}
		return bad("compare: %v", err)
	}
	if *format != "normal" && *format != "json" {
		return bad("compare: --output-format %q: want normal or json", *format)
	}
	if len(pos) > 1 {
		return bad("compare: one job file expected, got %d", len(pos))
	}
	if len(variantArgs) == 0 {
		return bad("compare: at least one --variant NAME:KEY=VALUE[,KEY=VALUE]... is needed")
	}
	if len(sweepArgs) > 1 {
		return bad("compare: one --sweep expected, got %d", len(sweepArgs))
	}
	if err := checkOutputPath("compare", *output); err != nil {
		return err
	}

	base := stack.Default()
	if *stackFile != "" {
		c, err := stack.Load(*stackFile)
		if err != nil {
			return usageError{err}
		}
		base = c
	}
	for _, s := range sets {
		if err := base.SetArg(s); err != nil {
			return usageError{err}
		}
	}
	variants := make([]variant, len(variantArgs))
	names := map[string]bool{}
	for i, a := range variantArgs {
		v, err := parseVariant(a)
		if err != nil {
			return err
		}
		if names[v.name] {
			return bad("compare: --variant %s given twice", v.name)
		}
		names[v.name] = true
		variants[i] = v
	}
	sw := sweep{values: []string{""}}
	if len(sweepArgs) == 1 {
		if sw, err = parseSweep(sweepArgs[0]); err != nil {
			return err
		}
		for _, v := range variants {
			if v.sets(sw.key) {
				return bad("compare: --variant %s sets %s, which --sweep sweeps", v.name, sw.key)
			}
		}
	}

	// Set up every run before running any, so bad input fails at once.
	job := "embedded:" + defaultJob[strings.LastIndexByte(defaultJob, '/')+1:]
	if len(pos) == 1 {
		job = pos[0]
	}
	// Stacks first, so that a bad key is reported before a job-file error.
	runs := make([][]compareRun, len(sw.values))
	for si, sv := range sw.values {
		for _, v := range variants {
			r, err := compareStack(base, v, sw.key, sv)
			if err != nil {
				return err
			}
			runs[si] = append(runs[si], r)
		}
	}
	for si, sv := range sw.values {
		for vi, v := range variants {
			if err := runs[si][vi].parseJob(v, sw.key, sv, pos, env); err != nil {
				return err
			}
		}
	}

	cmp := &report.Comparison{Job: job, Seed: *seed, SweepKey: sw.key}
	for _, v := range variants {
		cmp.Variants = append(cmp.Variants, report.CompareVariant{Name: v.name, Settings: v.settings})
	}
	for si, row := range runs {
		sums := make([]report.Summary, len(row))
		for vi, r := range row {
			res, err := simulate(r.cfg, r.specs, *seed)
			if err != nil {
				return fmt.Errorf("compare: %s: %w", r.label, err)
			}
			sums[vi] = report.Summarize(res)
		}
		cmp.Rows = append(cmp.Rows, report.NewCompareRow(sw.values[si], cmp.Variants, sums))
	}

	var out bytes.Buffer
	if *format == "json" {
		err = report.WriteCompareJSON(&out, cmp)
	} else {
		err = report.WriteCompare(&out, cmp)
	}
	if err != nil {
		return err
	}
	return emit(stdout, *output, out.Bytes())
}

// compareStack prepares the stack of variant v at sweep value sv of
// sweepKey ("" for no sweep): the base stack, then the variant's keys, then
// the swept key if it is a stack key.
func compareStack(base *stack.Config, v variant, sweepKey, sv string) (compareRun, error) {
	r := compareRun{label: "variant " + v.name, cfg: base.Clone()}
	if sweepKey != "" {
		r.label += ", " + sweepKey + "=" + sv
	}
	where := "--variant " + v.name
	for _, kv := range v.stackSets {
		if err := r.cfg.Set(kv[0], kv[1], where); err != nil {
			return r, usageError{err}
		}
	}
	if sweepKey != "" && !strings.HasPrefix(sweepKey, envPrefix) {
		if err := r.cfg.Set(sweepKey, sv, "--sweep "+sweepKey); err != nil {
			return r, usageError{err}
		}
	}
	return r, checkBuild(r.cfg)
}

// parseJob parses the job (pos[0], or the embedded default job) for
// variant v at sweep value sv, with the variant's and the sweep's env.NAME
// variables over env.
func (r *compareRun) parseJob(v variant, sweepKey, sv string, pos []string, env func(string) (string, bool)) error {
	vars := make(map[string]string, len(v.env)+1)
	for k, val := range v.env {
		vars[k] = val
	}
	if envName, ok := strings.CutPrefix(sweepKey, envPrefix); ok {
		vars[envName] = sv
	}
	// $ncpus and $mb_memory are the variant's simulated host's, as in run.
	popt := workload.ParseOptions{Env: overlayEnv(env, vars), Host: simulatedHost(r.cfg)}
	var err error
	if len(pos) == 1 {
		r.specs, err = workload.ParseFileWith(pos[0], popt)
	} else {
		r.specs, err = parseEmbeddedWith(defaultJob, popt)
	}
	if err != nil {
		return usageError{fmt.Errorf("compare: %s: %w", r.label, err)}
	}
	return nil
}

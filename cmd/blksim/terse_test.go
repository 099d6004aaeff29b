package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// terseJob is a two-job file (one with a description) for the terse
// output tests.
const terseJob = `[global]
size=8m
runtime=20ms
direct=1
filename=t
[reader]
rw=randread
description=random reads
[writer]
rw=write
`

// TestRunTerse checks fio's terse output and its combinations with the
// others: fields per line as fio 3.33 prints them (5 + 2*41 + 5 + 7 + 10
// + 12 + 9 per disk for version 3, with trim's 41 more for version 4),
// and the outputs in fio 3.33's order: with normal output, the lines fio
// prints as it starts the jobs (after blksim's stack line) first, then
// terse, then json, then a blank line and the rest of normal.
func TestRunTerse(t *testing.T) {
	job := writeFile(t, "terse.fio", terseJob)
	const header = "reader: (g=0): rw=randread, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=psync, iodepth=1\n" +
		"writer: (g=0): rw=write, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=psync, iodepth=1\n" +
		"blksim\nStarting 2 processes\n"
	for _, tc := range []struct {
		name   string
		args   []string
		fields int    // in each terse line (+1 with the description)
		normal bool   // the normal header before the terse lines
		rest   string // what follows the terse lines: "", "json" or "normal"
	}{
		{"terse", []string{"--output-format=terse"}, 130, false, ""},
		{"minimal", []string{"--minimal"}, 130, false, ""},
		{"minimal overrides", []string{"--output-format=json", "--minimal"}, 130, false, ""},
		{"version 4", []string{"--output-format", "terse", "--terse-version", "4"}, 171, false, ""},
		{"version 5", []string{"--output-format=terse", "--terse-version=5"}, 189, false, ""},
		{"normal,terse", []string{"--output-format=normal,terse"}, 130, true, "normal"},
		{"terse,normal", []string{"--output-format=terse,normal"}, 130, true, "normal"},
		{"append-terse", []string{"--append-terse"}, 130, true, "normal"},
		{"json,terse", []string{"--output-format=json,terse"}, 130, false, "json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, deterministic, append(append([]string{"run"}, tc.args...), job)...)
			require.Equal(t, exitOK, r.status, r.stderr)
			out := r.stdout
			if tc.normal {
				stack, rest, ok := strings.Cut(out, "\n")
				require.True(t, ok)
				assert.True(t, strings.HasPrefix(stack, "stack: "), stack)
				require.True(t, strings.HasPrefix(rest, header), rest)
				out = strings.TrimPrefix(rest, header)
			}
			lines := strings.SplitN(out, "\n", 3)
			require.Len(t, lines, 3)
			reader, writer := strings.Split(lines[0], ";"), strings.Split(lines[1], ";")
			assert.Len(t, reader, tc.fields+1)
			assert.Len(t, writer, tc.fields)
			assert.Equal(t, []string{"reader", "writer"}, []string{reader[2], writer[2]})
			assert.Equal(t, "random reads", reader[len(reader)-1])
			switch tc.rest {
			case "":
				assert.Empty(t, lines[2])
			case "json":
				var v map[string]any
				require.NoError(t, json.Unmarshal([]byte(lines[2]), &v))
				assert.Contains(t, v, "jobs")
			case "normal":
				assert.True(t, strings.HasPrefix(lines[2], "\nreader: (groupid=0, jobs=1)"), lines[2])
				assert.Contains(t, lines[2], "Run status group 0")
			}
		})
	}
}

// TestRunNormalJSONOrder: with --output-format=normal,json, as fio 3.33
// prints it, the job lines and "Starting" come before the JSON and the
// job blocks after it, a blank line between.
func TestRunNormalJSONOrder(t *testing.T) {
	job := writeFile(t, "terse.fio", terseJob)
	r := runCLI(t, deterministic, "run", "--output-format=normal,json", job)
	require.Equal(t, exitOK, r.status, r.stderr)
	start := strings.Index(r.stdout, "Starting 2 processes\n{\n")
	end := strings.Index(r.stdout, "\n}\n\nreader: (groupid=0, jobs=1)")
	require.True(t, start > 0 && end > start, r.stdout)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout[start+len("Starting 2 processes\n"):end+2]), &v))
}

// TestRunTerseDeterministic: terse output is the same byte for byte on
// every run of the same job, stack and seed.
func TestRunTerseDeterministic(t *testing.T) {
	job := writeFile(t, "terse.fio", terseJob)
	a := runCLI(t, deterministic, "run", "--output-format=terse", job)
	b := runCLI(t, deterministic, "run", "--output-format=terse", job)
	require.Equal(t, exitOK, a.status, a.stderr)
	assert.Equal(t, a.stdout, b.stdout)
}

// TestRunETAFlags: fio's --eta, --eta-newline and --eta-interval shape
// only its running ETA line, which blksim does not print; they are taken
// (not read as job options) and leave the output as it is.
func TestRunETAFlags(t *testing.T) {
	job := writeFile(t, "terse.fio", terseJob)
	want := runCLI(t, deterministic, "run", "--minimal", job)
	require.Equal(t, exitOK, want.status, want.stderr)
	for _, args := range [][]string{
		{"--eta=never"},
		{"--eta", "always"},
		{"--eta=auto", "--eta-newline=2s", "--eta-interval=500ms"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := runCLI(t, deterministic, append(append([]string{"run", "--minimal"}, args...), job)...)
			require.Equal(t, exitOK, r.status, r.stderr)
			assert.Equal(t, want.stdout, r.stdout)
		})
	}
}

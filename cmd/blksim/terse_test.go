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
// and the outputs in fio's order, terse first, then json, then normal.
func TestRunTerse(t *testing.T) {
	job := writeFile(t, "terse.fio", terseJob)
	for _, tc := range []struct {
		name   string
		args   []string
		fields int    // in each terse line (+1 with the description)
		rest   string // what follows the terse lines: "", "json" or "normal"
	}{
		{"terse", []string{"--output-format=terse"}, 130, ""},
		{"minimal", []string{"--minimal"}, 130, ""},
		{"minimal overrides", []string{"--output-format=json", "--minimal"}, 130, ""},
		{"version 4", []string{"--output-format", "terse", "--terse-version", "4"}, 171, ""},
		{"version 5", []string{"--output-format=terse", "--terse-version=5"}, 189, ""},
		{"normal,terse", []string{"--output-format=normal,terse"}, 130, "normal"},
		{"terse,normal", []string{"--output-format=terse,normal"}, 130, "normal"},
		{"append-terse", []string{"--append-terse"}, 130, "normal"},
		{"json,terse", []string{"--output-format=json,terse"}, 130, "json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, deterministic, append(append([]string{"run"}, tc.args...), job)...)
			require.Equal(t, exitOK, r.status, r.stderr)
			lines := strings.SplitN(r.stdout, "\n", 3)
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
				assert.True(t, strings.HasPrefix(lines[2], "stack: "), lines[2])
				assert.Contains(t, lines[2], "Run status group 0")
			}
		})
	}
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

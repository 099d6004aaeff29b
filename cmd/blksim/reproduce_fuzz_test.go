package main

import (
	"errors"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// FuzzPublished feeds arbitrary published.toml texts to the experiment
// loader, beside a valid job and stack: it must never panic, and every
// rejection must be a usage error (exit status 2) naming published.toml
// or the row.
func FuzzPublished(f *testing.F) {
	f.Add("source = \"s\"\ntolerance = 0.1\n[rows.r]\nbs = \"4k\"\nstack = \"stack.toml\"\nread_mibs = 10\n")
	f.Add("source = \"s\"\ntolerance = 0.1\n[rows.a]\nbs = \"4k\"\nstack = \"stack.toml\"\n[rows.b]\nbs = \"8k\"\nstack = \"stack.toml\"\n[ratios.g]\nof = \"a\"\nover = \"b\"\nmetric = \"read_mibs\"\npublished = 2\ntolerance = 0.2\n")
	f.Add("source = \"s\"\ntolerance = 0.1\noptions = [\"size=1m\", \"=\", \"--x\"]\nseed = -1\n[rows.r]\nstack = \"stack.toml\"\nset = [\"host.cpus=0\"]\nenv = { BS = \"1k\" }\nwrite_lat_us = 1e309\n")
	f.Add("[ratios.g]\nof = \"\"\n[rows]\n")
	f.Add("source = \"s\"\ntolerance = 0.1\n[rows.r]\nstack = \"stack.toml\"\nread_requests = 3\nread_requests_4k = 2\n\"write_requests_0.5k\" = 1\nread_requests_4096 = 1.5\n[ratios.g]\nof = \"r\"\nover = \"r\"\nmetric = \"write_requests_512k\"\npublished = 1\n")
	f.Fuzz(func(t *testing.T, text string) {
		d := experimentDir{name: "exp", display: "exp/", fsys: fstest.MapFS{
			"published.toml": {Data: []byte(text)},
			"job.fio":        {Data: []byte(bsJob)},
			"stack.toml":     {Data: []byte(smallStack)},
		}}
		_, runs, err := loadExperiment(d, 0)
		if err != nil {
			var u usageError
			require.True(t, errors.As(err, &u), "not a usage error: %v", err)
			return
		}
		require.NotEmpty(t, runs)
	})
}

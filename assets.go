// Package blksim holds the data files shipped inside the blksim binary: the
// device profiles, host profiles and experiment job and stack files under
// testdata/, so that the default run needs no files on disk.
package blksim

import "embed"

// Testdata is the embedded testdata tree (devices/, hosts/ and
// experiments/).
//
//go:embed testdata/devices/*.toml testdata/hosts/*.toml testdata/experiments
var Testdata embed.FS

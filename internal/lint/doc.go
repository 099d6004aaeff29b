// Package lint holds no code: its test checks the rules DESIGN.md sets for
// model code (sim, blockdev, fsmodel, workload), which must run the same on
// the deterministic virtual clock every time: no wall clock, goroutines,
// channels, package sync, global math/rand, runtime.LockOSThread, and, in
// sim, no iteration over maps.
package lint

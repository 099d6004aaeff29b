//go:build race

package pagecache

// raceEnabled: under the race detector sync.Pool drops pooled objects at
// random, and ristretto keeps its access batches in a sync.Pool, so its
// frequency sketch sees almost no accesses.
const raceEnabled = true

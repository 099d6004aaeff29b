// Package blockdev is blksim's block layer and its devices: bios, requests,
// the request queue (splitting to the device's limits, tags) and device
// models that complete requests on the engine's clock.
//
// Data is carried as stamps, not payload bytes: every write stamps its
// sectors with (writer, sequence), run-length encoded, and every read
// returns the stamps it found, so stale, torn and lost data can be detected
// without copying payloads.
//
// Everything in this package runs on the engine goroutine.
package blockdev

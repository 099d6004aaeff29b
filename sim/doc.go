// Package sim is blksim's engine: a deterministic discrete-event simulator
// on which every model (devices, queues, filesystems, workloads) runs.
//
// One Engine owns a clock, a binary heap of value events ordered by (time,
// sequence number), a set of simulated CPUs and a seeded PCG random source.
// Simulated threads are Tasks: ordinary sequential Go functions run as
// iter.Pull coroutines that block only through engine primitives (Sleep,
// CPU, WaitQueue, Completion, Semaphore, Mutex, RWSem). Work with no stack of
// its own (device completions, timers) is a Handler fired by an event.
//
// An Engine and everything attached to it is single-threaded: all methods
// must be called from the goroutine that calls Run (or from tasks and
// handlers that Run dispatches). Model code must not use time.Now,
// time.Sleep, goroutines, channels, package sync or global math/rand; it
// gets time from Engine.Now and randomness from Engine.Rand.
package sim

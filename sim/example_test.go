package sim_test

import (
	"fmt"
	"time"

	"github.com/blksim/blksim/sim"
)

// Two tasks contend for a mutex on two simulated CPUs; the run is
// deterministic, so the times and lock figures are exact.
func Example() {
	e := sim.New(sim.Options{Seed: 1, Host: sim.Host{CPUs: 2, WakeLatency: time.Microsecond}})
	defer e.Close()
	mu := sim.NewMutex(e, "demo:lock", false)
	var tasks []*sim.Task
	for _, name := range []string{"a", "b"} {
		tasks = append(tasks, e.Go(name, func(t *sim.Task) {
			mu.Lock(t)
			t.CPU(10 * time.Microsecond) // work under the lock
			mu.Unlock(t)
			fmt.Printf("%s done at %v\n", t.Name(), t.Now())
		}))
	}
	if err := e.Run(-1); err != nil {
		fmt.Println(err)
		return
	}
	st := mu.Stats()
	fmt.Println("all done:", tasks[0].Done() && tasks[1].Done(), "unfinished:", e.Tasks())
	fmt.Printf("%s: %d acquisitions, %d contended, waited %v\n",
		st.Name, st.Write.Acquisitions, st.Write.Contentions, st.Write.WaitTotal)
	// Output:
	// a done at 10µs
	// b done at 21µs
	// all done: true unfinished: 0
	// demo:lock: 2 acquisitions, 1 contended, waited 11µs
}

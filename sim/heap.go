package sim

// Handler is work with no stack of its own, fired by an event. Fire runs on
// the engine goroutine at the event's time; arg is the value given when the
// event was scheduled. Handlers are long-lived objects (devices, queues,
// tasks), so scheduling an event allocates nothing.
type Handler interface {
	Fire(arg uint64)
}

// Voidable is a Handler whose events can be cancelled after they are
// scheduled: an event whose Void(arg) reports true when it is the next
// one due is dropped without firing, without the clock moving to it (on
// a wall clock, without waiting for it) and without being counted in
// Events. Void must not change the simulation's state.
type Voidable interface {
	Handler
	Void(arg uint64) bool
}

// event is one scheduled firing; events are values, never pointers.
// daemon marks daemon work (Engine.AfterDaemon, a daemon task's resume),
// which does not keep a stalled run going (Engine.SetStallLimit).
type event struct {
	at     Time
	seq    uint64
	h      Handler
	arg    uint64
	daemon bool
}

func (a *event) before(b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// eventHeap is a hand-written binary min-heap of events. It does not
// allocate once its backing array has grown to the steady-state size.
type eventHeap struct {
	items []event
}

func (h *eventHeap) len() int { return len(h.items) }

func (h *eventHeap) push(e event) {
	h.items = append(h.items, e)
	items := h.items
	i := len(items) - 1
	// Move parents down into the hole until e fits, then place e once.
	for i > 0 {
		p := (i - 1) / 2
		if !e.before(&items[p]) {
			break
		}
		items[i] = items[p]
		i = p
	}
	items[i] = e
}

func (h *eventHeap) peek() *event { return &h.items[0] }

func (h *eventHeap) pop() event {
	items := h.items
	top := items[0]
	n := len(items) - 1
	last := items[n]
	items[n] = event{}
	h.items = items[:n]
	if n == 0 {
		return top
	}
	// Move the smaller child up into the hole until last fits.
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && items[r].before(&items[l]) {
			m = r
		}
		if !items[m].before(&last) {
			break
		}
		items[i] = items[m]
		i = m
	}
	items[i] = last
	return top
}

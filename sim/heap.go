package sim

// Handler is work with no stack of its own, fired by an event. Fire runs on
// the engine goroutine at the event's time; arg is the value given when the
// event was scheduled. Handlers are long-lived objects (devices, queues,
// tasks), so scheduling an event allocates nothing.
type Handler interface {
	Fire(arg uint64)
}

// event is one scheduled firing; events are values, never pointers.
type event struct {
	at  Time
	seq uint64
	h   Handler
	arg uint64
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
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.items[i].before(&h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *eventHeap) peek() *event { return &h.items[0] }

func (h *eventHeap) pop() event {
	top := h.items[0]
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	h.items[n] = event{}
	h.items = h.items[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.items[r].before(&h.items[l]) {
			m = r
		}
		if !h.items[m].before(&h.items[i]) {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}

package supervisor

import "sync"

// mailbox is a worker's inbox: an unbounded FIFO of inputs: the core's
// (core.Input) and the worker's own (barrierInput, startDoneInput). put never
// blocks, so the reaper's exit callback, hook goroutines and API callers
// can all post without waiting for the worker; the worker drains it in
// order. Unbounded is safe here: every input is caused by a process, a
// request or a timer, all of which are finite per unit of time.
type mailbox struct {
	ready chan struct{} // holds a token while items may be non-empty

	mu    sync.Mutex
	items []any
	spare []any // a drained batch handed back by recycle, for the next puts
}

func newMailbox() *mailbox { return &mailbox{ready: make(chan struct{}, 1)} }

// put appends the inputs in one step: a drain gets all of them or none.
func (m *mailbox) put(in ...any) {
	m.mu.Lock()
	m.items = append(m.items, in...)
	m.mu.Unlock()
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

func (m *mailbox) drain() []any {
	m.mu.Lock()
	defer m.mu.Unlock()
	items := m.items
	m.items, m.spare = m.spare, nil
	return items
}

// recycle hands back a batch drain returned, once its items are handled,
// so that the puts of every restart do not grow a new slice.
func (m *mailbox) recycle(items []any) {
	clear(items) // keep no input alive
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.spare == nil && cap(items) <= maxRecycled {
		m.spare = items[:0]
	}
}

// maxRecycled bounds the batch kept for reuse: a mass exit's batch is not
// kept for the quiet afterwards.
const maxRecycled = 64

// barrierInput is answered by closing done once every input posted before
// it has been handled and the timer re-armed. Tests use it to know the
// worker is quiet; it changes no state.
type barrierInput struct{ done chan struct{} }

package supervisor

import (
	"context"
	"sync"
)

// History keeps the most recent events so that a reader arriving late (a
// `podsup events` without -f) sees what already happened, like
// `kubectl get events`. It is fed by its own Subscription and never blocks
// the supervisor.
type History struct {
	sub *Subscription

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every append
	events  []Event       // ring of at most max; oldest at head once full
	head    int
	max     int
}

// DefaultHistory is how many events History keeps.
const DefaultHistory = 1000

// NewHistory starts recording s's events, keeping the last max (default
// DefaultHistory). Call it before Run so the first events are kept.
func NewHistory(s *Supervisor, max int) *History {
	if max <= 0 {
		max = DefaultHistory
	}
	h := &History{sub: s.Subscribe(), max: max, changed: make(chan struct{})}
	go h.record()
	return h
}

func (h *History) record() {
	for {
		e, err := h.sub.Next(context.Background())
		if err != nil {
			h.mu.Lock()
			close(h.changed)
			h.changed = nil
			h.mu.Unlock()
			return
		}
		h.add(e)
	}
}

// add keeps e, forgetting the oldest event once max are kept, and wakes
// followers.
func (h *History) add(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.events) < h.max {
		h.events = append(h.events, e)
	} else {
		h.events[h.head] = e
		h.head = (h.head + 1) % h.max
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// Since returns the kept events with Seq > seq, and a channel closed when
// more arrive (nil once the history has ended).
func (h *History) Since(seq uint64) ([]Event, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Event
	for i := range h.events {
		if e := h.events[(h.head+i)%len(h.events)]; e.Seq > seq {
			out = append(out, e)
		}
	}
	return out, h.changed
}

// Follow calls fn for every kept event with Seq > seq and then for each new
// one, until ctx ends, the history ends, or fn returns false.
func (h *History) Follow(ctx context.Context, seq uint64, fn func(Event) bool) {
	for {
		evs, more := h.Since(seq)
		for _, e := range evs {
			if !fn(e) {
				return
			}
			seq = e.Seq
		}
		if more == nil {
			return
		}
		select {
		case <-more:
		case <-ctx.Done():
			return
		}
	}
}

// Close stops recording.
func (h *History) Close() { h.sub.Close() }

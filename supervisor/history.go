package supervisor

import (
	"cmp"
	"context"
	"github.com/podsup/podsup/supervisor/lifecycle"
	"slices"
	"sync"
)

// History keeps the most recent events so that a reader arriving late (a
// `podsup events` without -f) sees what already happened, like
// `kubectl get events`. It is fed by its own Subscription and never blocks
// the supervisor.
//
// It keeps one entry per event series (see Event): a repeat replaces the
// entry of its series and moves to the end, so a storm of identical events
// takes one place and pushes nothing else out, and entries stay in Seq
// order for Since and Follow.
type History struct {
	sub *Subscription

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every append
	// events is oldest first, in Seq order; the last max are kept (it is
	// trimmed back to max when it reaches a quarter more: each trim copies
	// max events, and every event beyond max is memory held for nothing).
	events []lifecycle.Event
	max    int
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

// add keeps e, replacing the entry of its series, forgetting the oldest
// once more than max are kept, and wakes followers.
func (h *History) add(e lifecycle.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.Count > 1 {
		if i := h.seriesIndex(e.Series); i >= 0 {
			h.events = slices.Delete(h.events, i, i+1)
		}
	}
	h.events = append(h.events, e)
	if len(h.events) >= h.max+max(h.max/4, 1) {
		h.events = slices.Delete(h.events, 0, len(h.events)-h.max)
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// seriesIndex finds the kept entry of a series, newest first (a repeating
// event is usually recent); -1 if none is kept.
func (h *History) seriesIndex(series uint64) int {
	for i := len(h.events) - 1; i >= max(len(h.events)-h.max, 0); i-- {
		if h.events[i].Series == series {
			return i
		}
	}
	return -1
}

// Since returns the kept events with Seq > seq, and a channel closed when
// more arrive (nil once the history has ended).
func (h *History) Since(seq uint64) ([]lifecycle.Event, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	kept := h.events[max(len(h.events)-h.max, 0):]
	i, _ := slices.BinarySearchFunc(kept, seq+1, func(e lifecycle.Event, s uint64) int { return cmp.Compare(e.Seq, s) })
	return slices.Clone(kept[i:]), h.changed
}

// Follow calls fn for every kept event with Seq > seq and then for each new
// one, until ctx ends, the history ends, or fn returns false.
func (h *History) Follow(ctx context.Context, seq uint64, fn func(lifecycle.Event) bool) {
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

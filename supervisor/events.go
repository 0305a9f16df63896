package supervisor

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/podsup/podsup/supervisor/lifecycle"
	"github.com/rs/zerolog"
)

// EventSeriesWindow is how long after its last occurrence an event still
// counts as a repeat: kubelet's correlator aggregates over ten minutes.
const EventSeriesWindow = 10 * time.Minute

// maxEventSeries bounds the series the correlator remembers (kubelet's
// correlator keeps an LRU cache of 4096).
const maxEventSeries = 4096

// correlator folds repeats of an identical event into a series. It is a
// pure function of the events it is shown, in order; their Time is the
// only clock it reads, so it runs the same on the fake clock.
type correlator struct {
	window time.Duration
	max    int
	series map[eventKey]*eventSeries
}

// eventKey is what makes two events identical: everything but the
// instance, pid and restart count, which kubelet's key leaves out too (its
// object is the pod's container, not one run of it).
type eventKey struct {
	typ                                      lifecycle.EventType
	reason, group, process, message, request string
}

type eventSeries struct {
	first, last time.Time
	count       int
	id          uint64
	// loggedAt is when a line of this series was last logged.
	loggedAt time.Time
}

// EventLogInterval is how often podsup's log repeats a line for an event
// that keeps happening: subscribers and History get every repeat, but a
// probe failing ten times a second must not write ten lines a second.
const EventLogInterval = time.Minute

func newCorrelator(window time.Duration, max int) *correlator {
	return &correlator{window: window, max: max, series: map[eventKey]*eventSeries{}}
}

// observe returns e (already numbered) as the next event of its series,
// Count, FirstTime and Series set, and whether to log it: the first of a
// series, a repeat whose count is a power of two (2, 4, 8, …: a burst
// shows quickly), and otherwise at most one repeat per EventLogInterval.
func (c *correlator) observe(e lifecycle.Event) (lifecycle.Event, bool) {
	k := eventKey{e.Type, e.Reason, e.Group, e.Process, e.Message, e.Request}
	s, ok := c.series[k]
	if ok && within(e.Time.Sub(s.last), c.window) {
		s.count++
		s.last = e.Time
	} else {
		if !ok {
			c.makeRoom(e.Time)
		}
		s = &eventSeries{first: e.Time, last: e.Time, count: 1, id: e.Seq}
		c.series[k] = s
	}
	e.Count, e.FirstTime, e.Series = s.count, s.first, s.id
	sinceLogged := e.Time.Sub(s.loggedAt)
	log := s.count == 1 || s.count&(s.count-1) == 0 || sinceLogged >= EventLogInterval || sinceLogged < 0
	if log {
		s.loggedAt = e.Time
	}
	return e, log
}

// within reports |d| <= window: the wall clock may step back, and a
// repeat a moment "earlier" is still a repeat.
func within(d, window time.Duration) bool { return d <= window && d >= -window }

// makeRoom forgets the series that ended more than a window before now,
// and when that is not enough the least recently seen quarter of them: one
// scan then makes room for many new series, where evicting one at a time
// scanned every series for every new one (10,000 processes stopping at
// once each start a series of their own).
func (c *correlator) makeRoom(now time.Time) {
	if len(c.series) < c.max {
		return
	}
	type seen struct {
		k    eventKey
		last time.Time
	}
	live := make([]seen, 0, len(c.series))
	for k, s := range c.series {
		if !within(now.Sub(s.last), c.window) {
			delete(c.series, k)
			continue
		}
		live = append(live, seen{k, s.last})
	}
	if len(c.series) < c.max {
		return
	}
	slices.SortFunc(live, func(a, b seen) int { return a.last.Compare(b.last) })
	for _, s := range live[:len(live)-c.max+max(c.max/4, 1)] {
		delete(c.series, s.k)
	}
}

// DefaultEventBuffer is how many events a subscriber may fall behind
// before the oldest are dropped.
const DefaultEventBuffer = 1024

// eventBus fans events out to subscribers and the logger. Publishing never
// blocks on a subscriber: each has a bounded buffer, and when it is full
// the oldest event is dropped and counted, so a slow reader loses history,
// never the worker's time.
type eventBus struct {
	log     zerolog.Logger
	bufSize int

	mu   sync.Mutex // guards seq, corr and subs, and orders log lines like Seq
	seq  uint64
	corr *correlator
	subs map[*Subscription]struct{}
}

func newEventBus(log zerolog.Logger, bufSize int) *eventBus {
	if bufSize <= 0 {
		bufSize = DefaultEventBuffer
	}
	return &eventBus{log: log, bufSize: bufSize, corr: newCorrelator(EventSeriesWindow, maxEventSeries), subs: map[*Subscription]struct{}{}}
}

func (b *eventBus) publish(e lifecycle.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	e.Seq = b.seq
	e, log := b.corr.observe(e)
	if log {
		b.logEvent(e)
	}
	for s := range b.subs {
		s.push(e)
	}
}

func (b *eventBus) logEvent(e lifecycle.Event) {
	ev := b.log.Info()
	if e.Type == lifecycle.EventWarning {
		ev = b.log.Warn()
	}
	ev = ev.Str("event", e.Reason).Str("group", e.Group)
	if e.Process != "" {
		ev = ev.Str("process", e.Process).Str("instance", e.InstanceID).Int("restart_count", e.RestartCount)
	}
	if e.Pid > 0 {
		ev = ev.Int("pid", e.Pid)
	}
	if e.Request != "" {
		ev = ev.Str("request", e.Request)
	}
	if e.Count > 1 {
		ev = ev.Int("count", e.Count).Time("first_time", e.FirstTime)
	}
	ev.Uint64("seq", e.Seq).Time("event_time", e.Time).Msg(e.Message)
}

func (b *eventBus) subscribe() *Subscription {
	s := &Subscription{bus: b, cap: b.bufSize, ready: make(chan struct{}, 1)}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Subscription receives events in publication order. Close it when done.
type Subscription struct {
	bus   *eventBus
	cap   int
	ready chan struct{} // has a token when buf may be non-empty

	mu      sync.Mutex
	buf     []lifecycle.Event
	dropped uint64
	closed  bool
}

func (s *Subscription) push(e lifecycle.Event) {
	s.mu.Lock()
	if len(s.buf) == s.cap {
		s.buf = s.buf[1:]
		s.dropped++
	}
	s.buf = append(s.buf, e)
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// ErrSubscriptionClosed is returned by Next after Close.
var ErrSubscriptionClosed = errorString("subscription closed")

type errorString string

func (e errorString) Error() string { return string(e) }

// Next returns the oldest undelivered event, waiting for one until ctx ends.
func (s *Subscription) Next(ctx context.Context) (lifecycle.Event, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return lifecycle.Event{}, ErrSubscriptionClosed
		}
		if len(s.buf) > 0 {
			e := s.buf[0]
			s.buf = s.buf[1:]
			s.mu.Unlock()
			return e, nil
		}
		s.mu.Unlock()
		select {
		case <-s.ready:
		case <-ctx.Done():
			return lifecycle.Event{}, ctx.Err()
		}
	}
}

// Dropped is how many events were discarded because this subscriber fell
// more than the buffer size behind.
func (s *Subscription) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Close ends the subscription; a pending Next returns ErrSubscriptionClosed.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	delete(s.bus.subs, s)
	s.bus.mu.Unlock()
	s.mu.Lock()
	s.closed = true
	s.buf = nil
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

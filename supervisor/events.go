package supervisor

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// EventType is kubelet's event type.
type EventType string

const (
	EventNormal  EventType = "Normal"
	EventWarning EventType = "Warning"
)

// Event reasons, in kubelet's vocabulary where it has a word for it.
const (
	EventStarted   = "Started"   // an instance is running
	EventFailed    = "Failed"    // an instance could not start
	EventKilling   = "Killing"   // a stop began, or escalated to SIGKILL
	EventBackOff   = "BackOff"   // a start must wait (B6.2)
	EventCompleted = "Completed" // an instance exited 0
	EventExited    = "Exited"    // an instance exited non-zero or by a signal
	EventUnhealthy = "Unhealthy" // a probe failed (probes issue)
	// EventCriticalExit is a critical process that ended for good (X11).
	EventCriticalExit = "CriticalExit"
	// EventFailedPreStopHook: the pre_stop hook failed; termination
	// continues (H4).
	EventFailedPreStopHook = "FailedPreStopHook"
	// EventRecovered: at start-up podsup found (and killed) what an
	// earlier podsup of the same instance left of a group when it died.
	EventRecovered = "Recovered"
)

// Event is one thing that happened to a process or group.
type Event struct {
	// Seq numbers events in publication order; a gap seen by a
	// subscriber means it dropped events.
	Seq          uint64
	Time         time.Time
	Type         EventType
	Reason       string
	Group        string
	Process      string
	InstanceID   string
	RestartCount int
	Pid          int
	Message      string
	// Request is the recreate request this event belongs to, if any.
	Request string
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

	mu   sync.Mutex // guards seq and subs, and orders log lines like Seq
	seq  uint64
	subs map[*Subscription]struct{}
}

func newEventBus(log zerolog.Logger, bufSize int) *eventBus {
	if bufSize <= 0 {
		bufSize = DefaultEventBuffer
	}
	return &eventBus{log: log, bufSize: bufSize, subs: map[*Subscription]struct{}{}}
}

func (b *eventBus) publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	e.Seq = b.seq
	b.logEvent(e)
	for s := range b.subs {
		s.push(e)
	}
}

func (b *eventBus) logEvent(e Event) {
	ev := b.log.Info()
	if e.Type == EventWarning {
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
	buf     []Event
	dropped uint64
	closed  bool
}

func (s *Subscription) push(e Event) {
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
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return Event{}, ErrSubscriptionClosed
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
			return Event{}, ctx.Err()
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

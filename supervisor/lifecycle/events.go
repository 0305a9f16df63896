package lifecycle

import "time"

// EventType is kubelet's event type.
type EventType string

const (
	EventNormal  EventType = "Normal"
	EventWarning EventType = "Warning"
)

// Event reasons, in kubelet's vocabulary where it has a word for it (E1).
// An instance's exit is no event, as in kubelet: its exit code and reason
// are in the status (E2).
const (
	EventCreated   = "Created"   // an instance is about to start, pre_start done
	EventStarted   = "Started"   // an instance is running
	EventFailed    = "Failed"    // an instance could not start
	EventKilling   = "Killing"   // a stop began, or a second stop request made it SIGKILL
	EventBackOff   = "BackOff"   // a start must wait (B6.2)
	EventUnhealthy = "Unhealthy" // a probe failed
	// EventCriticalExit is a critical process that ended for good (X11).
	EventCriticalExit = "CriticalExit"
	// EventBackoffLimitExceeded: a failure passed the group's
	// backoff_limit, and failed processes are no longer restarted (R7).
	EventBackoffLimitExceeded = "BackoffLimitExceeded"
	// EventFailedPreStopHook: the pre_stop hook failed; termination
	// continues (H4).
	EventFailedPreStopHook = "FailedPreStopHook"
	// EventRecovered: at start-up podsup found (and killed) what an
	// earlier podsup of the same instance left of a group when it died.
	EventRecovered = "Recovered"
)

// Event is one thing that happened to a process or group. The core fills
// in what happened (Time, Type, Reason, the process and instance, Message,
// Request); the supervisor numbers, folds and publishes it (Seq, Count,
// FirstTime, Series).
type Event struct {
	// Seq numbers events in publication order; a gap seen by a
	// subscriber means it dropped events.
	Seq uint64
	// Time is when it happened, the last time for a repeated event.
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

	// Count is how many times it happened in its series (1 the first).
	Count int
	// FirstTime is when the series began; equal to Time when Count is 1.
	FirstTime time.Time
	// Series is the Seq of the series' first publication.
	Series uint64
}

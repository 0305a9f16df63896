package lifecycle

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Recreate requests (docs/semantics.md part C with X8): the spec a caller
// fills, the status it reads back, and the static checks of C1. When each
// step below happens is the supervisor's decision core's to say.
//
// A request's life:
//
//	          accepted                 head of the group's queue (C2, X8)
//	  ────────────────► Pending ─────────────────────────► Recreating
//	                      │ deadline (C8)                     │ every process Succeeded or
//	                      ▼                                   │ Failed (C6), fail policy's
//	                  Completed ◄─────────────────────────────┘ first failure, deadline (C8),
//	                      │                                      shutdown
//	                      │ ttl_after_finished
//	                      ▼
//	                   removed
//
// A process inside a Recreating request:
//
//	Pending ── its turn (C5) and the unready grace spent (C3):
//	           kill through pre_stop and grace (C4), new instance at once (X7)
//	   └────► Recreating ── a new instance id, running, ready, and running
//	                        longer than min_started on the monotonic clock (C7, C9)
//	             └────────► Succeeded
//	             └────────► Failed: ended for good, stopped, removed, deadline

// FailurePolicy says what one failed process does to its request (C6).
type FailurePolicy string

const (
	// FailurePolicyFail completes the request at the first failure (default).
	FailurePolicyFail FailurePolicy = "fail"
	// FailurePolicyIgnore carries on with the other processes.
	FailurePolicyIgnore FailurePolicy = "ignore"
)

// MinimumRecreateDeadline is C1's lower bound for ActiveDeadline.
const MinimumRecreateDeadline = 3 * time.Second

// DefaultRecreateTTL is how long a completed request stays visible when its
// spec sets no TTLAfterFinished. Kruise keeps such objects forever; a
// daemon's memory should not grow with every request, so podsup forgets
// them after an hour.
const DefaultRecreateTTL = time.Hour

// RecreateSpec asks for new instances of some processes of a group while
// the others keep running (OpenKruise's ContainerRecreateRequest, part C).
// Durations are Go durations (X1, D7).
type RecreateSpec struct {
	Group string
	// Processes to recreate: at least one, each once, each a main process
	// of the group (C1).
	Processes []string
	// Ordered recreates one process at a time, in this order; the next is
	// killed only after the previous one has finished (C5). Otherwise all
	// are killed together.
	Ordered bool
	// FailurePolicy is "" (fail), fail or ignore (C6).
	FailurePolicy FailurePolicy
	// TerminationGracePeriod overrides the grace of K1 for the kills (K2,
	// C4); nil keeps the group's. K5's minimum still applies.
	TerminationGracePeriod *time.Duration
	// UnreadyGracePeriod, when set, holds the group's readiness false
	// first and kills only after this long (C3); the hold is released when
	// the request completes. nil: no unready step.
	UnreadyGracePeriod *time.Duration
	// MinStarted: a new instance counts as recreated once it has run, and
	// is ready, for strictly longer than this (C7).
	MinStarted time.Duration
	// ActiveDeadline, when not 0, completes the request this long after it
	// was accepted; processes not yet finished are Failed (C8). At least
	// MinimumRecreateDeadline (C1).
	ActiveDeadline time.Duration
	// TTLAfterFinished is how long the completed request stays visible;
	// nil means DefaultRecreateTTL, 0 forgets it as it completes.
	TTLAfterFinished *time.Duration
	// Requester names who asked, for events (X7).
	Requester string
}

// Policy is the failure policy in force: FailurePolicy, or
// FailurePolicyFail when that is empty.
func (s RecreateSpec) Policy() FailurePolicy {
	if s.FailurePolicy == "" {
		return FailurePolicyFail
	}
	return s.FailurePolicy
}

// TTL is how long the completed request stays visible: TTLAfterFinished,
// or DefaultRecreateTTL when that is nil.
func (s RecreateSpec) TTL() time.Duration {
	if s.TTLAfterFinished == nil {
		return DefaultRecreateTTL
	}
	return *s.TTLAfterFinished
}

// Clone is a deep copy of s: it shares no slice or pointer with s.
func (s RecreateSpec) Clone() RecreateSpec {
	s.Processes = append([]string(nil), s.Processes...)
	for _, d := range []**time.Duration{&s.TerminationGracePeriod, &s.UnreadyGracePeriod, &s.TTLAfterFinished} {
		if *d != nil {
			v := **d
			*d = &v
		}
	}
	return s
}

// RecreatePhase is a request's phase (C2).
type RecreatePhase string

const (
	RecreatePending    RecreatePhase = "Pending"
	RecreateRecreating RecreatePhase = "Recreating"
	RecreateCompleted  RecreatePhase = "Completed"
)

// ProcessRecreatePhase is one process's state inside a request (C2, C7).
type ProcessRecreatePhase string

const (
	ProcessRecreatePending    ProcessRecreatePhase = "Pending"
	ProcessRecreateRecreating ProcessRecreatePhase = "Recreating"
	ProcessRecreateSucceeded  ProcessRecreatePhase = "Succeeded"
	ProcessRecreateFailed     ProcessRecreatePhase = "Failed"
)

// RecreateStatus is a snapshot of one request. It is a copy.
type RecreateStatus struct {
	ID    string
	Spec  RecreateSpec
	Phase RecreatePhase
	// Message explains a completion that was not a full success.
	Message   string
	Processes []ProcessRecreateStatus
	// HoldsReadiness: the group's readiness is forced false by this
	// request (C3).
	HoldsReadiness bool
	// Wall-clock readings, for display only: no decision compares them
	// (C9).
	CreationTime   time.Time
	StartTime      time.Time
	CompletionTime time.Time
}

// ProcessRecreateStatus is one process of a request.
type ProcessRecreateStatus struct {
	Name    string
	Phase   ProcessRecreatePhase
	Message string
	// PreviousInstanceID is the instance the request replaces: the live
	// one when its kill was ordered, else the newest finished one.
	PreviousInstanceID string
	// InstanceID is the new instance that made the process Succeeded.
	InstanceID string
}

// Failed reports whether any process of a completed request failed.
func (s RecreateStatus) Failed() bool {
	for _, p := range s.Processes {
		if p.Phase == ProcessRecreateFailed {
			return true
		}
	}
	return false
}

// Clone is a deep copy of s: it shares no slice or pointer with s.
func (s RecreateStatus) Clone() RecreateStatus {
	s.Spec = s.Spec.Clone()
	s.Processes = append([]ProcessRecreateStatus(nil), s.Processes...)
	return s
}

// Errors of Recreate, besides ErrNotFound (no such group) and
// ErrShuttingDown.
var (
	// ErrInvalidRecreate: the spec breaks C1 (a *RecreateSpecError says how).
	ErrInvalidRecreate = errors.New("invalid recreate request")
	// ErrGroupInactive: the group is stopped, finished or failed, or the
	// process is stopped (C1: only an active pod's containers).
	ErrGroupInactive = errors.New("group is not active")
)

// RecreateSpecError lists every C1 problem of a spec.
type RecreateSpecError struct {
	Problems []string
}

func (e *RecreateSpecError) Error() string {
	return "invalid recreate request: " + strings.Join(e.Problems, "; ")
}

// Is makes errors.Is(err, ErrInvalidRecreate) true.
func (e *RecreateSpecError) Is(target error) bool { return target == ErrInvalidRecreate }

// Validate is C1's static part: what needs no knowledge of the group
// (whether the group exists and names these processes is the
// supervisor's check). It returns a *RecreateSpecError listing every
// problem, or nil.
func (s RecreateSpec) Validate() error {
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if s.Group == "" {
		add("group is empty")
	}
	if len(s.Processes) == 0 {
		add("no process to recreate: name at least one")
	}
	seen := map[string]bool{}
	for _, p := range s.Processes {
		switch {
		case p == "":
			add("a process name is empty")
		case seen[p]:
			add("process %q is listed twice", p)
		}
		seen[p] = true
	}
	switch s.FailurePolicy {
	case "", FailurePolicyFail, FailurePolicyIgnore:
	default:
		add("failure_policy %q is neither fail nor ignore", s.FailurePolicy)
	}
	neg := func(name string, d *time.Duration) {
		if d != nil && *d < 0 {
			add("%s %s is negative", name, *d)
		}
	}
	neg("termination_grace_period", s.TerminationGracePeriod)
	neg("unready_grace_period", s.UnreadyGracePeriod)
	neg("min_started", &s.MinStarted)
	neg("ttl_after_finished", s.TTLAfterFinished)
	if s.ActiveDeadline < 0 {
		add("active_deadline %s is negative", s.ActiveDeadline)
	} else if s.ActiveDeadline > 0 && s.ActiveDeadline < MinimumRecreateDeadline {
		add("active_deadline %s is below the minimum of %s", s.ActiveDeadline, MinimumRecreateDeadline)
	}
	if len(probs) > 0 {
		return &RecreateSpecError{Problems: probs}
	}
	return nil
}

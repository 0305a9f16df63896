package supervisor

import "github.com/podsup/podsup/supervisor/internal/core"

// The types and values below are defined by the decision core (package
// internal/core), which produces them; they are this package's API under
// the same names, and are the same types (aliases), so values pass between
// the two unchanged.

// EventType is kubelet's event type.
type EventType = core.EventType

const (
	EventNormal  = core.EventNormal
	EventWarning = core.EventWarning
)

// Event reasons, in kubelet's vocabulary where it has a word for it (E1).
// An instance's exit is no event, as in kubelet: its exit code, reason
// and times are in ProcessStatus (Terminated, LastTermination: E2).
const (
	EventCreated   = core.EventCreated   // an instance is about to start, pre_start done
	EventStarted   = core.EventStarted   // an instance is running
	EventFailed    = core.EventFailed    // an instance could not start
	EventKilling   = core.EventKilling   // a stop began, or a second stop request made it SIGKILL
	EventBackOff   = core.EventBackOff   // a start must wait (B6.2)
	EventUnhealthy = core.EventUnhealthy // a probe failed
	// EventCriticalExit is a critical process that ended for good (X11).
	EventCriticalExit = core.EventCriticalExit
	// EventFailedPreStopHook: the pre_stop hook failed; termination
	// continues (H4).
	EventFailedPreStopHook = core.EventFailedPreStopHook
	// EventRecovered: at start-up podsup found (and killed) what an
	// earlier podsup of the same instance left of a group when it died.
	EventRecovered = core.EventRecovered
	// The start order's events (W3–W5): a wait for a dependency began,
	// ended, cannot end (a completed dependency failed for good), or
	// timed out; and a readiness probe or protocol turned an instance
	// ready.
	EventWaiting           = core.EventWaiting
	EventDependenciesMet   = core.EventDependenciesMet
	EventDependencyFailed  = core.EventDependencyFailed
	EventDependencyTimeout = core.EventDependencyTimeout
	EventReady             = core.EventReady
)

// Event is one thing that happened to a process or group.
//
// Identical events (same group, process, type, reason, message and
// recreate request) that follow one another within EventSeriesWindow are
// one event that happened Count times, as kubelet's event correlator makes
// them: every repeat is published again, with the next Seq, a Count one
// higher, the FirstTime of the series and its own Time, and History keeps
// only its newest publication. A probe that fails at every period is one
// Unhealthy event with a growing count, not one event per failure. The
// Logger gets the first of a series, each power-of-two count and at most
// one other line per EventLogInterval.
type Event = core.Event

// State is a process's state in kubelet's terms (S1–S4).
type State = core.State

const (
	StateWaiting    = core.StateWaiting
	StateRunning    = core.StateRunning
	StateTerminated = core.StateTerminated
)

// Waiting and termination reasons, in kubelet's vocabulary.
const (
	ReasonContainerCreating = core.ReasonContainerCreating
	ReasonPodInitializing   = core.ReasonPodInitializing
	ReasonCrashLoopBackOff  = core.ReasonCrashLoopBackOff
	ReasonStopped           = core.ReasonStopped
	ReasonCompleted         = core.ReasonCompleted
	ReasonError             = core.ReasonError
	ReasonOOMKilled         = core.ReasonOOMKilled
	ReasonStartError        = core.ReasonStartError
	// ReasonDependencyWait: waiting for a dependency (W3);
	// ReasonDependencyTimeout: the wait timed out (W5).
	ReasonDependencyWait    = core.ReasonDependencyWait
	ReasonDependencyTimeout = core.ReasonDependencyTimeout
)

// GroupPhase summarises a group, like a pod's phase.
type GroupPhase = core.GroupPhase

const (
	PhasePending   = core.PhasePending
	PhaseRunning   = core.PhaseRunning
	PhaseSucceeded = core.PhaseSucceeded
	PhaseFailed    = core.PhaseFailed
	PhaseStopping  = core.PhaseStopping
	PhaseStopped   = core.PhaseStopped
)

// GroupStatus is one group's snapshot.
type GroupStatus = core.GroupStatus

// ProcessStatus is one process's snapshot, shaped like a container status.
type ProcessStatus = core.ProcessStatus

// Termination is how one instance ended.
type Termination = core.Termination

// Terminating is a stop under way or decided (ProcessStatus.Terminating:
// S6): why, who asked and since when.
type Terminating = core.Terminating

// ExitStatus is how an instance ended.
type ExitStatus = core.ExitStatus

// RuntimeEvent is something a runtime did to a group on its own account,
// published as one of the group's events.
type RuntimeEvent = core.RuntimeEvent

// KillReason says why an instance is being stopped. It selects the grace
// period (K1) and decides what happens after the exit.
type KillReason = core.KillReason

const (
	// KillStop is an explicit stop request (X7, K2 override allowed).
	KillStop = core.KillStop
	// KillRestart is an explicit restart request (X7).
	KillRestart = core.KillRestart
	// KillShutdown is podsup stopping everything (X9, X11).
	KillShutdown = core.KillShutdown
	// KillLiveness and KillStartup are probe failures (R4, P11); the
	// probe's own grace applies (K1.2).
	KillLiveness = core.KillLiveness
	KillStartup  = core.KillStartup
)

// KillPostStartHook is the kill after a failed post_start (H2): the
// group's grace, pre_stop included, and afterwards restart policy and
// back-off as for any exit.
const KillPostStartHook = core.KillPostStartHook

// Event reasons of hooks, in kubelet's vocabulary.
const (
	// EventFailedPreStartHook: pre_start failed or timed out; that start
	// failed (X5).
	EventFailedPreStartHook = core.EventFailedPreStartHook
	// EventFailedPostStartHook: post_start failed; the instance is killed
	// (H2).
	EventFailedPostStartHook = core.EventFailedPostStartHook
	// EventFailedPostStopHook: post_stop failed; nothing else changes (X5).
	EventFailedPostStopHook = core.EventFailedPostStopHook
)

// ReasonPreStartHookError is the termination reason of a start that its
// pre_start hook failed (X5, H5).
const ReasonPreStartHookError = core.ReasonPreStartHookError

// Defaults for the kill retries: the first retry comes this long after a
// SIGKILL that did not end the instance, each further one twice as late up
// to the cap; a shutdown gives up on an instance after so many SIGKILLs.
const (
	DefaultKillRetry    = core.DefaultKillRetry
	DefaultKillAttempts = core.DefaultKillAttempts
)

// EventFailedKill is a SIGKILL of an instance's tree that did not end it,
// or leftovers of an exited instance that could not be killed or removed.
// EventSandboxChanged is the runtime rebuilding a group's dead sandbox
// (kubelet's wording).
const (
	EventFailedKill     = core.EventFailedKill
	EventSandboxChanged = core.EventSandboxChanged
)

// ReasonUnkillable is the termination reason of an instance a shutdown
// gave up on: its tree survived every SIGKILL.
const ReasonUnkillable = core.ReasonUnkillable

// KillReload is a kill caused by a reload that removed or changed the
// process (R4: a spec change always restarts).
const KillReload = core.KillReload

// EventReloaded: a reload added, removed or changed a process.
const EventReloaded = core.EventReloaded

// FailurePolicy says what one failed process does to its request (C6).
type FailurePolicy = core.FailurePolicy

const (
	// FailurePolicyFail completes the request at the first failure (default).
	FailurePolicyFail = core.FailurePolicyFail
	// FailurePolicyIgnore carries on with the other processes.
	FailurePolicyIgnore = core.FailurePolicyIgnore
)

// MinimumRecreateDeadline is C1's lower bound for ActiveDeadline.
const MinimumRecreateDeadline = core.MinimumRecreateDeadline

// DefaultRecreateTTL is how long a completed request stays visible when its
// spec sets no TTLAfterFinished. Kruise keeps such objects forever; a
// daemon's memory should not grow with every request, so podsup forgets
// them after an hour.
const DefaultRecreateTTL = core.DefaultRecreateTTL

// RecreateSpec asks for new instances of some processes of a group while
// the others keep running (OpenKruise's ContainerRecreateRequest, part C).
// Durations are Go durations (X1, D7).
type RecreateSpec = core.RecreateSpec

// RecreatePhase is a request's phase (C2).
type RecreatePhase = core.RecreatePhase

const (
	RecreatePending    = core.RecreatePending
	RecreateRecreating = core.RecreateRecreating
	RecreateCompleted  = core.RecreateCompleted
)

// ProcessRecreatePhase is one process's state inside a request (C2, C7).
type ProcessRecreatePhase = core.ProcessRecreatePhase

const (
	ProcessRecreatePending    = core.ProcessRecreatePending
	ProcessRecreateRecreating = core.ProcessRecreateRecreating
	ProcessRecreateSucceeded  = core.ProcessRecreateSucceeded
	ProcessRecreateFailed     = core.ProcessRecreateFailed
)

// RecreateStatus is a snapshot of one request. It is a copy.
type RecreateStatus = core.RecreateStatus

// ProcessRecreateStatus is one process of a request.
type ProcessRecreateStatus = core.ProcessRecreateStatus

// Errors of Recreate, besides ErrNotFound (no such group) and
// ErrShuttingDown.
var (
	// ErrInvalidRecreate: the spec breaks C1 (a *RecreateSpecError says how).
	ErrInvalidRecreate = core.ErrInvalidRecreate
	// ErrGroupInactive: the group is stopped, finished or failed, or the
	// process is stopped (C1: only an active pod's containers).
	ErrGroupInactive = core.ErrGroupInactive
)

// RecreateSpecError lists every C1 problem of a spec.
type RecreateSpecError = core.RecreateSpecError

// Event reasons of recreate requests; every such event carries the
// request's id in Event.Request. The kill and the start of each process
// also report Killing and Started events, tagged with the request too.
const (
	// EventRecreatePending: accepted, queued behind another request (C2).
	EventRecreatePending = core.EventRecreatePending
	// EventRecreating: the request became active; with a Process, that
	// process's recreation began.
	EventRecreating = core.EventRecreating
	// EventRecreateUnready: the group's readiness is forced false (C3).
	EventRecreateUnready = core.EventRecreateUnready
	// EventRecreateSucceeded / EventRecreateFailed: one process finished.
	EventRecreateSucceeded = core.EventRecreateSucceeded
	EventRecreateFailed    = core.EventRecreateFailed
	// EventRecreateCompleted: the request completed (Warning when a
	// process failed).
	EventRecreateCompleted = core.EventRecreateCompleted
	// EventRecreateRemoved: ttl_after_finished passed; the request is gone.
	EventRecreateRemoved = core.EventRecreateRemoved
)

// KillRecreate is a kill ordered by a recreate request (C4, X7): the
// request's grace overrides K1 and the new instance starts at once.
const KillRecreate = core.KillRecreate

// EventInternalError is a Warning about a bug in the supervisor: an
// instance's state changed in a way its state machine does not allow.
// The group goes on; the event says what happened, for a bug report.
const EventInternalError = core.EventInternalError

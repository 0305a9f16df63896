package lifecycle

// Event and termination reasons of hooks, kills, the start order,
// reloads and recreate requests.

// Event reasons of hooks, in kubelet's vocabulary.
const (
	// EventFailedPreStartHook: pre_start failed or timed out; that start
	// failed (X5).
	EventFailedPreStartHook = "FailedPreStartHook"
	// EventFailedPostStartHook: post_start failed; the instance is killed
	// (H2).
	EventFailedPostStartHook = "FailedPostStartHook"
	// EventFailedPostStopHook: post_stop failed; nothing else changes (X5).
	EventFailedPostStopHook = "FailedPostStopHook"
)

// ReasonPreStartHookError is the termination reason of a start that its
// pre_start hook failed (X5, H5).
const ReasonPreStartHookError = "PreStartHookError"

// EventFailedKill is a SIGKILL of an instance's tree that did not end it,
// or leftovers of an exited instance that could not be killed or removed.
// EventSandboxChanged is the runtime rebuilding a group's dead sandbox
// (kubelet's wording).
const (
	EventFailedKill     = "FailedKill"
	EventSandboxChanged = "SandboxChanged"
)

// ReasonUnkillable is the termination reason of an instance a shutdown
// gave up on: its tree survived every SIGKILL.
const ReasonUnkillable = "Unkillable"

// EventReloaded: a reload added, removed or changed a process.
const EventReloaded = "Reloaded"

// Events of the start order.
const (
	// EventReady: a running instance's readiness probe or protocol turned
	// it ready (W3). kubelet shows this only as the Ready condition's
	// transition time; podsup's waits need it as an event.
	EventReady = "Ready"
	// EventWaiting: a process began to wait for a dependency (W3).
	EventWaiting = "Waiting"
	// EventDependenciesMet: the wait is over; the start follows (W3).
	EventDependenciesMet = "DependenciesMet"
	// EventDependencyFailed: a `completed` dependency ended for good with
	// a non-zero exit: the wait can only end by its timeout or a restart
	// of that dependency (W4).
	EventDependencyFailed = "DependencyFailed"
	// EventDependencyTimeout: the wait outlived a timeout; the process
	// failed and its restart policy applies (W5).
	EventDependencyTimeout = "DependencyTimeout"
)

// ReasonDependencyWait is the waiting reason of a process held back by a
// dependency; ReasonDependencyTimeout the termination reason recorded
// when the wait timed out.
const (
	ReasonDependencyWait    = "DependencyWait"
	ReasonDependencyTimeout = "DependencyTimeout"
)

// Event reasons of recreate requests; every such event carries the
// request's id in Event.Request. The kill and the start of each process
// also report Killing and Started events, tagged with the request too.
const (
	// EventRecreatePending: accepted, queued behind another request (C2).
	EventRecreatePending = "RecreatePending"
	// EventRecreating: the request became active; with a Process, that
	// process's recreation began.
	EventRecreating = "Recreating"
	// EventRecreateUnready: the group's readiness is forced false (C3).
	EventRecreateUnready = "RecreateUnready"
	// EventRecreateSucceeded / EventRecreateFailed: one process finished.
	EventRecreateSucceeded = "RecreateSucceeded"
	EventRecreateFailed    = "RecreateFailed"
	// EventRecreateCompleted: the request completed (Warning when a
	// process failed).
	EventRecreateCompleted = "RecreateCompleted"
	// EventRecreateRemoved: ttl_after_finished passed; the request is gone.
	EventRecreateRemoved = "RecreateRemoved"
)

// EventInternalError is a transition the table does not allow: a bug in
// the core, reported rather than crashing podsup.
const EventInternalError = "InternalError"

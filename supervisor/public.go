package supervisor

import "github.com/podsup/podsup/supervisor/internal/core"

// The types and values below are defined by the decision core (package
// internal/core): the recreate requests' types, which carry unexported
// methods the core uses, and the kill retries' defaults. They are this
// package's API under the same names, and are the same types (aliases).
// The lifecycle's vocabulary (events, states, reasons, phases, statuses,
// kill reasons) is package lifecycle's, declared once.

// Defaults for the kill retries: the first retry comes this long after a
// SIGKILL that did not end the instance, each further one twice as late up
// to the cap; a shutdown gives up on an instance after so many SIGKILLs.
const (
	DefaultKillRetry    = core.DefaultKillRetry
	DefaultKillAttempts = core.DefaultKillAttempts
)

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

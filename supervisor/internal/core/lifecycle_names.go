package core

import "github.com/podsup/podsup/supervisor/lifecycle"

// Temporary: the names this package used before they moved to package
// lifecycle; the rename commit that follows removes this file.

type EventType = lifecycle.EventType
type Event = lifecycle.Event
type KillReason = lifecycle.KillReason
type ExitStatus = lifecycle.ExitStatus
type RuntimeEvent = lifecycle.RuntimeEvent
type State = lifecycle.State
type GroupPhase = lifecycle.GroupPhase
type GroupStatus = lifecycle.GroupStatus
type ProcessStatus = lifecycle.ProcessStatus
type Terminating = lifecycle.Terminating
type Termination = lifecycle.Termination

const (
	EventNormal              = lifecycle.EventNormal
	EventWarning             = lifecycle.EventWarning
	EventCreated             = lifecycle.EventCreated
	EventStarted             = lifecycle.EventStarted
	EventFailed              = lifecycle.EventFailed
	EventKilling             = lifecycle.EventKilling
	EventBackOff             = lifecycle.EventBackOff
	EventUnhealthy           = lifecycle.EventUnhealthy
	EventCriticalExit        = lifecycle.EventCriticalExit
	EventFailedPreStopHook   = lifecycle.EventFailedPreStopHook
	EventRecovered           = lifecycle.EventRecovered
	KillPostStartHook        = lifecycle.KillPostStartHook
	KillReload               = lifecycle.KillReload
	KillRecreate             = lifecycle.KillRecreate
	KillGroupCompleted       = lifecycle.KillGroupCompleted
	KillStop                 = lifecycle.KillStop
	KillRestart              = lifecycle.KillRestart
	KillShutdown             = lifecycle.KillShutdown
	KillLiveness             = lifecycle.KillLiveness
	KillStartup              = lifecycle.KillStartup
	ReasonPreStartHookError  = lifecycle.ReasonPreStartHookError
	ReasonUnkillable         = lifecycle.ReasonUnkillable
	EventReloaded            = lifecycle.EventReloaded
	EventInternalError       = lifecycle.EventInternalError
	EventFailedPreStartHook  = lifecycle.EventFailedPreStartHook
	EventFailedPostStartHook = lifecycle.EventFailedPostStartHook
	EventFailedPostStopHook  = lifecycle.EventFailedPostStopHook
	EventFailedKill          = lifecycle.EventFailedKill
	EventSandboxChanged      = lifecycle.EventSandboxChanged
	EventReady               = lifecycle.EventReady
	EventWaiting             = lifecycle.EventWaiting
	EventDependenciesMet     = lifecycle.EventDependenciesMet
	EventDependencyFailed    = lifecycle.EventDependencyFailed
	EventDependencyTimeout   = lifecycle.EventDependencyTimeout
	ReasonDependencyWait     = lifecycle.ReasonDependencyWait
	ReasonDependencyTimeout  = lifecycle.ReasonDependencyTimeout
	EventRecreatePending     = lifecycle.EventRecreatePending
	EventRecreating          = lifecycle.EventRecreating
	EventRecreateUnready     = lifecycle.EventRecreateUnready
	EventRecreateSucceeded   = lifecycle.EventRecreateSucceeded
	EventRecreateFailed      = lifecycle.EventRecreateFailed
	EventRecreateCompleted   = lifecycle.EventRecreateCompleted
	EventRecreateRemoved     = lifecycle.EventRecreateRemoved
	StateWaiting             = lifecycle.StateWaiting
	StateRunning             = lifecycle.StateRunning
	StateTerminated          = lifecycle.StateTerminated
	ReasonContainerCreating  = lifecycle.ReasonContainerCreating
	ReasonPodInitializing    = lifecycle.ReasonPodInitializing
	ReasonCrashLoopBackOff   = lifecycle.ReasonCrashLoopBackOff
	ReasonStopped            = lifecycle.ReasonStopped
	ReasonCompleted          = lifecycle.ReasonCompleted
	ReasonError              = lifecycle.ReasonError
	ReasonOOMKilled          = lifecycle.ReasonOOMKilled
	ReasonStartError         = lifecycle.ReasonStartError
	PhasePending             = lifecycle.PhasePending
	PhaseRunning             = lifecycle.PhaseRunning
	PhaseSucceeded           = lifecycle.PhaseSucceeded
	PhaseFailed              = lifecycle.PhaseFailed
	PhaseStopping            = lifecycle.PhaseStopping
	PhaseStopped             = lifecycle.PhaseStopped
)

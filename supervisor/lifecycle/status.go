package lifecycle

import (
	"time"

	"github.com/podsup/podsup/spec"
)

// State is a process's state in kubelet's terms (S1–S4).
type State string

const (
	StateWaiting    State = "waiting"
	StateRunning    State = "running"
	StateTerminated State = "terminated"
)

// Waiting and termination reasons, in kubelet's vocabulary.
const (
	ReasonContainerCreating = "ContainerCreating"
	ReasonPodInitializing   = "PodInitializing"
	ReasonCrashLoopBackOff  = "CrashLoopBackOff"
	// ReasonStopped: waiting, a process not wanted (stopped before it
	// ran); terminated, an instance that a stop podsup was asked for or
	// decided on ended, whatever its exit code (X13): no failure.
	ReasonStopped    = "Stopped"
	ReasonCompleted  = "Completed"
	ReasonError      = "Error"
	ReasonOOMKilled  = "OOMKilled"
	ReasonStartError = "StartError"
)

// GroupPhase summarises a group, like a pod's phase.
type GroupPhase string

const (
	PhasePending   GroupPhase = "Pending"
	PhaseRunning   GroupPhase = "Running"
	PhaseSucceeded GroupPhase = "Succeeded"
	PhaseFailed    GroupPhase = "Failed"
	PhaseStopping  GroupPhase = "Stopping"
	PhaseStopped   GroupPhase = "Stopped"
)

// GroupStatus is one group's snapshot.
type GroupStatus struct {
	Name      string
	Phase     GroupPhase
	Init      []ProcessStatus
	Processes []ProcessStatus
	// Ready: every wanted main process is running and ready, and no
	// recreate request holds the group unready (C3).
	Ready bool
	// ReadinessHeldBy is the recreate request holding readiness false.
	ReadinessHeldBy string
}

// Process returns the named process's (or init's) status.
func (g GroupStatus) Process(name string) (ProcessStatus, bool) {
	for _, list := range [][]ProcessStatus{g.Processes, g.Init} {
		for _, p := range list {
			if p.Name == name {
				return p, true
			}
		}
	}
	return ProcessStatus{}, false
}

// ProcessStatus is one process's snapshot, shaped like a container status.
type ProcessStatus struct {
	Name string
	Init bool
	// Sidecar: an init with restart_policy "always", which keeps running
	// beside the main processes (O1).
	Sidecar bool
	// State is waiting, running or terminated; Reason and Message explain
	// waiting and terminated (e.g. CrashLoopBackOff, Completed, Error).
	State   State
	Reason  string
	Message string
	// Ready and Started are false whenever the process is not running
	// (S3, S4); without probes they become true when it starts. Ready is
	// false too from the moment a stop is decided (S6).
	Ready   bool
	Started bool
	// StatusText is the running instance's own status line (sd_notify
	// STATUS=), empty when it sent none.
	StatusText   string
	RestartCount int
	// OOMKills counts the instances the kernel's OOM killer ended, over
	// the process's life (podsup_oom_events_total).
	OOMKills int
	// InstanceID and Pid name the current (or last) instance.
	InstanceID string
	Pid        int
	// StartedAt is the running instance's start; with FinishedAt, the
	// terminated one's. Wall-clock readings, for display.
	StartedAt  time.Time
	FinishedAt time.Time
	// CreatedAt is when the core took the process on (its group's core
	// was made, or a reload added it), on the wall clock, for display:
	// kubectl's AGE is the pod's, not one container run's.
	CreatedAt time.Time
	// Terminated is set when State is terminated.
	Terminated *Termination
	// LastTermination is the previous instance's end (lastState).
	LastTermination *Termination
	// NextStartAt is when a process waiting in CrashLoopBackOff starts
	// again (X3).
	NextStartAt time.Time
	// Terminating is set while a stop of the instance is under way or
	// decided (S6): the state stays what it is (running, or waiting while
	// the start is in flight), and Ready is false.
	Terminating *Terminating
}

// Terminating is a stop under way, kubectl's "Terminating" (S6).
type Terminating struct {
	// Since is when the stop was decided, on the wall clock (display).
	Since time.Time
	// Reason is why: Stop, Restart, Shutdown, Reload, Recreate, a probe
	// (LivenessProbe, StartupProbe), FailedPostStartHook, GroupCompleted.
	Reason KillReason
	// By is who asked, when someone did.
	By string
}

// Termination is how one instance ended.
type Termination struct {
	InstanceID string
	ExitCode   int
	Signal     spec.Signal
	Reason     string
	Message    string
	StartedAt  time.Time
	FinishedAt time.Time
}

// Clone is a copy of t that shares nothing with it (nil for nil).
func (t *Termination) Clone() *Termination {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// Clone is a copy of p that shares nothing with it.
func (p ProcessStatus) Clone() ProcessStatus {
	p.Terminated = p.Terminated.Clone()
	p.LastTermination = p.LastTermination.Clone()
	if p.Terminating != nil {
		t := *p.Terminating
		p.Terminating = &t
	}
	return p
}

// Clone is a copy of g that shares nothing with it.
func (g GroupStatus) Clone() GroupStatus {
	c := g
	c.Init = make([]ProcessStatus, len(g.Init))
	for i, p := range g.Init {
		c.Init[i] = p.Clone()
	}
	c.Processes = make([]ProcessStatus, len(g.Processes))
	for i, p := range g.Processes {
		c.Processes[i] = p.Clone()
	}
	return c
}

package core

import (
	"errors"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// The inputs every group's core understands: requests, the outcome of
// starts and exits, the timer, pre_stop's end and probe results. Inputs
// that belong to one concern (hooks, faults, recreate requests, reloads,
// status lines) are declared next to their handling.

// Input is everything that can happen to a group.
type Input interface{ isInput() }

type CommandKind int

const (
	CmdStart CommandKind = iota + 1
	CmdStop
	CmdRestart
	CmdShutdown
)

func (k CommandKind) String() string {
	switch k {
	case CmdStart:
		return "start"
	case CmdStop:
		return "stop"
	case CmdRestart:
		return "restart"
	case CmdShutdown:
		return "shutdown"
	}
	return "unknown"
}

// CommandInput is a request from a user (X7) or from podsup itself (X9).
type CommandInput struct {
	Kind CommandKind
	// Process is "" for the whole group.
	Process string
	// Grace overrides K1 (K2).
	Grace *time.Duration
	// By says who asked, for events (X7).
	By string
	// Ordered makes a shutdown stop dependents first (W8); After names
	// the groups that depend on this one.
	Ordered bool
	After   []string
}

type StartedInput struct {
	Instance string
	Pid      int
}

// StartFailedInput is a start that failed before the program ran; code
// is the exit code the failure is recorded with (StartError.Code).
type StartFailedInput struct {
	Instance string
	Err      error
	Code     int
}

type ExitedInput struct {
	Instance string
	Status   lifecycle.ExitStatus
	// at is the instance's FinishedAt, read from the supervisor's clock.
	At time.Time
}

// TimerInput is the wake-up the last plan asked for. It carries nothing:
// the core re-evaluates every deadline against now, so an early or stale
// timer never makes anything happen early.
type TimerInput struct{}

// PreStopDoneInput reports that an instance's pre_stop hook returned.
// Err wraps ErrHookEndedWithInstance when the hook was still running at
// its instance's SIGKILL and was ended with it (K9).
type PreStopDoneInput struct {
	Instance string
	Err      error
}

// ErrHookEndedWithInstance is a hook that did not return by itself: it was
// ended with its instance, at the SIGKILL of the instance's tree (K9).
var ErrHookEndedWithInstance = errors.New("it was ended with the process")

// ProbeInput is a probe result that changed (P6: results publish only on
// change). The worker's probe workers send these, and so may a library
// user (Supervisor.ProbeResult).
type ProbeInput struct {
	Instance string
	Probe    spec.ProbeKind
	Success  bool
	Message  string
	// reported: each failed probe already had its Unhealthy event
	// (ProbeReportInput), so the threshold crossing adds none.
	Reported bool
}

func (CommandInput) isInput()     {}
func (StartedInput) isInput()     {}
func (StartFailedInput) isInput() {}
func (ExitedInput) isInput()      {}
func (TimerInput) isInput()       {}
func (PreStopDoneInput) isInput() {}
func (ProbeInput) isInput()       {}

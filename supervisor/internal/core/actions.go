package core

import (
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// The actions a step asks the worker to carry out, and the Plan that
// carries them with the next wake-up.

// Action is one thing the executor must do.
type Action interface{ isAction() }

type StartAction struct {
	Process  string
	Instance string
	Spec     spec.Process
}

// SignalAction sends the stop signal to the main process (K6).
type SignalAction struct {
	Process, Instance string
	Sig               spec.Signal
}

// KillTreeAction SIGKILLs everything the instance has (X10): after the
// grace, on escalation, and after every exit to remove leftovers. Its
// outcome comes back as KillDoneInput. exited: the instance has exited;
// once its tree is dead the worker removes it.
type KillTreeAction struct {
	Process, Instance string
	Exited            bool
}

// PreStopAction runs the pre_stop hook with a time budget (K3).
type PreStopAction struct {
	Process, Instance string
	Budget            time.Duration
}

type EmitAction struct{ Event lifecycle.Event }

// CriticalAction: a critical process ended for good (X11).
type CriticalAction struct {
	Process string
	Code    int
}

// ReleaseAction: a process a reload removed is gone for good; the runtime
// may drop what it kept for it (Runtime.ReleaseProcess).
type ReleaseAction struct{ Process string }

func (ReleaseAction) isAction()  {}
func (StartAction) isAction()    {}
func (SignalAction) isAction()   {}
func (KillTreeAction) isAction() {}
func (PreStopAction) isAction()  {}
func (EmitAction) isAction()     {}
func (CriticalAction) isAction() {}

// Plan is what one step decided.
type Plan struct {
	Actions []Action
	// wake is when the core must be stepped again; zero means never.
	Wake time.Time
}

package core

import (
	"fmt"
	"strings"

	"github.com/podsup/podsup/spec"
)

// This file is the core's side of lifecycle hooks (X5, H1–H4) and of probe
// reports: what each hook's end means, as pure state transitions. Running
// the hooks is the worker's (hookrun.go); the core only asks for them with
// actions and hears back through inputs.
//
// An instance's life with every hook:
//
//	start ─► pre_start ──ok──► process started ─► post_start ──ok──► running
//	            │ fails                 │ (the process runs meanwhile,   │
//	            ▼                       │  but is not running/started    │
//	   finished: PreStartHookError      │  and not probed: H1)           │
//	   (back-off as for a crash)        └── fails: kill (H2) ────────────┤
//	                                                                     ▼
//	   kill path: pre_stop ─► stop signal ─► SIGKILL ─► exit ─► post_stop (warn only)
//	   natural exit ───────────────────────────────────► exit ─► post_stop

// instHooks is where one instance stands in its start hooks.
type instHooks struct {
	// preStarting: pre_start runs; no process exists yet (X5).
	preStarting bool
	// postStarting: post_start runs; the process runs but counts as
	// neither running nor started, and is not probed (H1).
	postStarting bool
}

// KillPostStartHook is the kill after a failed post_start (H2): the
// group's grace, pre_stop included, and afterwards restart policy and
// back-off as for any exit.
const KillPostStartHook KillReason = "FailedPostStartHook"

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

// preStartFailureCode is the exit code a pre_start failure is recorded
// with: the program never ran, as for a start error that is neither 126
// nor 127.
const preStartFailureCode = 128

type PreStartDoneInput struct {
	Instance string
	Err      error
}

type PostStartDoneInput struct {
	Instance string
	Err      error
}

type PostStopDoneInput struct {
	Process, Instance string
	Err               error
}

// probeReportInput is one failed probe (not a threshold crossing): the
// kubelet records Unhealthy for each one.
type ProbeReportInput struct {
	Instance string
	Probe    spec.ProbeKind
	Message  string
}

func (PreStartDoneInput) isInput()  {}
func (PostStartDoneInput) isInput() {}
func (PostStopDoneInput) isInput()  {}
func (ProbeReportInput) isInput()   {}

// hookAction runs one hook of one instance; its end comes back as the
// point's done input.
type HookAction struct {
	Process, Instance string
	Point             spec.HookPoint
	// spec is the process as it was when the core asked: a reload may
	// change or remove it before the hook runs.
	Spec spec.Process
}

func (HookAction) isAction() {}

// launch is the last step of start: pre_start first when there is one,
// else the process itself.
func (g *Group) launch(p *proc) {
	if p.spec.PreStart != nil {
		p.inst.hooks.preStarting = true
		g.do(HookAction{Process: p.spec.Name, Instance: p.inst.id, Point: spec.PreStart, Spec: p.spec})
		return
	}
	g.startInstance(p)
}

// preStartDone starts the process, or fails the start (X5): the failed
// start is a finished instance, so restart policy and back-off apply to
// the next one as for a crash.
func (g *Group) preStartDone(in PreStartDoneInput) {
	p := g.procByInstance(in.Instance)
	if p == nil || !p.inst.hooks.preStarting {
		return
	}
	p.inst.hooks.preStarting = false
	if in.Err == nil {
		g.startInstance(p)
		return
	}
	g.emit(p, EventWarning, EventFailedPreStartHook, "PreStart hook for process %s failed, not starting it: %v", p.spec.Name, in.Err)
	g.finish(p, &Termination{
		InstanceID: p.inst.id, ExitCode: preStartFailureCode, Reason: ReasonPreStartHookError,
		Message: in.Err.Error(), FinishedAt: g.now,
	})
}

// abortPreStart is a stop, restart or shutdown that finds the instance
// still in its pre_start hook: there is no process to stop, so the start
// is dropped (the worker cancels the hook once the instance is gone). No
// termination is recorded; the instance id stays used.
func (g *Group) abortPreStart(p *proc, reason KillReason, by string, restart bool) {
	g.emit(p, EventNormal, EventKilling, "Cancelling the start of process %s during its pre_start hook: %s requested by %s", p.spec.Name, verb(reason), who(by))
	p.inst = nil
	if restart {
		p.startNow, p.startBy = true, by
	}
}

// beginPostStart holds a just-started instance out of running/started
// until its post_start returns (H1). The Started event has been emitted:
// the process does run.
func (g *Group) beginPostStart(p *proc) {
	if p.spec.PostStart == nil {
		return
	}
	p.inst.running = false
	p.inst.hooks.postStarting = true
	g.do(HookAction{Process: p.spec.Name, Instance: p.inst.id, Point: spec.PostStart, Spec: p.spec})
}

// postStartDone releases the instance into running (H1), or kills it
// through the normal stop path with the group's grace (H2).
func (g *Group) postStartDone(in PostStartDoneInput) {
	p := g.procByInstance(in.Instance)
	if p == nil || !p.inst.hooks.postStarting {
		return
	}
	p.inst.hooks.postStarting = false
	if p.inst.stop != nil {
		return // already stopping: it never shows as running
	}
	if in.Err == nil {
		p.inst.running = true
		return
	}
	g.emit(p, EventWarning, EventFailedPostStartHook, "PostStart hook for process %s failed: %v", p.spec.Name, in.Err)
	g.beginStop(p, KillPostStartHook, nil, nil, "", false)
}

// requestPostStop asks for post_start's counterpart once per exited
// instance, whatever ended it (X5). p.inst is the instance that exited.
func (g *Group) requestPostStop(p *proc) {
	if p.spec.PostStop != nil {
		g.do(HookAction{Process: p.spec.Name, Instance: p.inst.id, Point: spec.PostStop, Spec: p.spec})
	}
}

// postStopDone: a failure is a warning event and changes nothing (X5).
func (g *Group) postStopDone(in PostStopDoneInput) {
	if in.Err == nil {
		return
	}
	p, ok := g.byName[in.Process]
	if !ok {
		for _, q := range g.leaving { // removed by a reload, still stopping
			if q.spec.Name == in.Process {
				p, ok = q, true
			}
		}
	}
	if !ok {
		return
	}
	// The event names the instance that exited, not the one now running.
	g.do(EmitAction{Event{
		Time: g.now, Type: EventWarning, Reason: EventFailedPostStopHook, Group: g.name,
		Process: p.spec.Name, InstanceID: in.Instance, RestartCount: max(p.starts-1, 0),
		Message: fmt.Sprintf("PostStop hook for process %s failed: %v", p.spec.Name, in.Err),
	}})
}

// probeReport is one failed probe of the current, running instance: an
// Unhealthy event with the probe's output, as the kubelet records for
// each failure. The kill waits for the threshold (probeResult, P6).
func (g *Group) probeReport(in ProbeReportInput) {
	p := g.procByInstance(in.Instance)
	if p == nil || !p.inst.running || p.inst.stop != nil {
		return
	}
	g.emit(p, EventWarning, EventUnhealthy, "%s probe failed: %s", probeTitle(in.Probe), in.Message)
}

// probeTitle is the probe kind as kubelet's events spell it ("Liveness").
func probeTitle(k spec.ProbeKind) string {
	s := string(k)
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

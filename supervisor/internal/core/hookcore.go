package core

import (
	"fmt"
	"strings"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// This file is the core's side of lifecycle hooks (X5, H1–H4) and of probe
// reports: what each hook's end means, as pure state transitions. Running
// the hooks is the supervisor's worker's; the core only asks for them with
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

// preStartFailureCode is the exit code a pre_start failure is recorded
// with: the program never ran, as for a start error (E3).
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

// ProbeReportInput is one failed probe (not a threshold crossing): the
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

// HookAction runs one hook of one instance; its end comes back as the
// point's done input.
type HookAction struct {
	Process, Instance string
	Point             spec.HookPoint
	// spec is the process as it was when the core asked: a reload may
	// change or remove it before the hook runs.
	Spec spec.Process
}

func (HookAction) isAction() {}

// launch is a new instance's first transition: pre_start first when
// there is one, else the process itself.
func (g *Group) launch(p *proc, _ event) (phase, []event) {
	if p.spec.PreStart != nil {
		g.do(HookAction{Process: p.spec.Name, Instance: p.inst.id, Point: spec.PreStart, Spec: p.spec})
		return phasePreStart, nil
	}
	return g.startInstance(p), nil
}

// preStartDone hears pre_start's end: the process starts, or the start
// failed (X5).
func (g *Group) preStartDone(in PreStartDoneInput) {
	p := g.procByInstance(in.Instance)
	switch {
	case p == nil:
	case in.Err == nil:
		g.fire(p, event{on: onPreStartDone})
	default:
		g.fire(p, event{on: onPreStartFailed, err: in.Err})
	}
}

// preStartSucceeded starts the process itself.
func (g *Group) preStartSucceeded(p *proc, _ event) (phase, []event) {
	return g.startInstance(p), nil
}

// preStartFailed fails the start (X5): the failed start is a finished
// instance, so restart policy and back-off apply to the next one as for a
// crash.
func (g *Group) preStartFailed(p *proc, ev event) (phase, []event) {
	g.emit(p, lifecycle.EventWarning, lifecycle.EventFailedPreStartHook, "PreStart hook for process %s failed, not starting it: %v", p.spec.Name, ev.err)
	g.finish(p, &lifecycle.Termination{
		InstanceID: p.inst.id, ExitCode: preStartFailureCode, Reason: lifecycle.ReasonPreStartHookError,
		Message: ev.err.Error(), FinishedAt: g.now,
	})
	return phaseGone, nil
}

// abortPreStart is a stop, restart or shutdown that finds the instance
// still in its pre_start hook: there is no process to stop, so the start
// is dropped (the worker cancels the hook once the instance is gone). No
// termination is recorded; the instance id stays used.
func (g *Group) abortPreStart(p *proc, ev event) (phase, []event) {
	r := ev.stop
	g.emit(p, lifecycle.EventNormal, lifecycle.EventKilling, "Cancelling the start of process %s during its pre_start hook: %s requested by %s", p.spec.Name, verb(r.reason), who(r.by))
	p.inst = nil
	if r.restart {
		g.requestStart(p, r.by)
	}
	return phaseGone, nil
}

// beginPostStart holds a just-started instance out of running/started
// until its post_start returns (H1). The Started event has been emitted:
// the process does run.
func (g *Group) beginPostStart(p *proc) phase {
	g.do(HookAction{Process: p.spec.Name, Instance: p.inst.id, Point: spec.PostStart, Spec: p.spec})
	return phasePostStart
}

// postStartDone hears post_start's end. A result for an instance already
// stopping changes nothing: it never shows as running.
func (g *Group) postStartDone(in PostStartDoneInput) {
	p := g.procByInstance(in.Instance)
	switch {
	case p == nil:
	case in.Err == nil:
		g.fire(p, event{on: onPostStartDone})
	default:
		g.fire(p, event{on: onPostStartFailed, err: in.Err})
	}
}

// postStartSucceeded releases the instance into running (H1).
func (g *Group) postStartSucceeded(*proc, event) (phase, []event) { return phaseRunning, nil }

// postStartFailed kills the instance through the normal stop path with
// the group's grace (H2).
func (g *Group) postStartFailed(p *proc, ev event) (phase, []event) {
	g.emit(p, lifecycle.EventWarning, lifecycle.EventFailedPostStartHook, "PostStart hook for process %s failed: %v", p.spec.Name, ev.err)
	return phasePostStart, []event{{on: onStop, stop: stopRequest{reason: lifecycle.KillPostStartHook}}}
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
	g.do(EmitAction{lifecycle.Event{
		Time: g.now, Type: lifecycle.EventWarning, Reason: lifecycle.EventFailedPostStopHook, Group: g.name,
		Process: p.spec.Name, InstanceID: in.Instance, RestartCount: max(p.starts-1, 0),
		Message: fmt.Sprintf("PostStop hook for process %s failed: %v", p.spec.Name, in.Err),
	}})
}

// probeReport is one failed probe: an Unhealthy event with the probe's
// output, as the kubelet records for each failure, if the instance is
// the current, running one. The kill waits for the threshold
// (probeResult, P6).
func (g *Group) probeReport(in ProbeReportInput) {
	if p := g.procByInstance(in.Instance); p != nil {
		g.fire(p, event{on: onProbeReport, probe: ProbeInput{Instance: in.Instance, Probe: in.Probe, Message: in.Message}})
	}
}

func (g *Group) probeUnhealthy(p *proc, ev event) (phase, []event) {
	g.emit(p, lifecycle.EventWarning, lifecycle.EventUnhealthy, "%s probe failed: %s", probeTitle(ev.probe.Probe), ev.probe.Message)
	return phaseRunning, nil
}

// probeTitle is the probe kind as kubelet's events spell it ("Liveness").
func probeTitle(k spec.ProbeKind) string {
	s := string(k)
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

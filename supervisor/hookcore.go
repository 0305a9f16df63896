package supervisor

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

type preStartDoneInput struct {
	instance string
	err      error
}

type postStartDoneInput struct {
	instance string
	err      error
}

type postStopDoneInput struct {
	process, instance string
	err               error
}

// probeReportInput is one failed probe (not a threshold crossing): the
// kubelet records Unhealthy for each one.
type probeReportInput struct {
	instance string
	probe    spec.ProbeKind
	message  string
}

func (preStartDoneInput) isInput()  {}
func (postStartDoneInput) isInput() {}
func (postStopDoneInput) isInput()  {}
func (probeReportInput) isInput()   {}

// hookAction runs one hook of one instance; its end comes back as the
// point's done input.
type hookAction struct {
	process, instance string
	point             spec.HookPoint
	// spec is the process as it was when the core asked: a reload may
	// change or remove it before the hook runs.
	spec spec.Process
}

func (hookAction) isAction() {}

// launch is the last step of start: pre_start first when there is one,
// else the process itself.
func (g *groupCore) launch(p *proc) {
	if p.spec.PreStart != nil {
		p.inst.hooks.preStarting = true
		g.do(hookAction{process: p.spec.Name, instance: p.inst.id, point: spec.PreStart, spec: p.spec})
		return
	}
	g.startInstance(p)
}

// preStartDone starts the process, or fails the start (X5): the failed
// start is a finished instance, so restart policy and back-off apply to
// the next one as for a crash.
func (g *groupCore) preStartDone(in preStartDoneInput) {
	p := g.procByInstance(in.instance)
	if p == nil || !p.inst.hooks.preStarting {
		return
	}
	p.inst.hooks.preStarting = false
	if in.err == nil {
		g.startInstance(p)
		return
	}
	g.emit(p, EventWarning, EventFailedPreStartHook, "PreStart hook for process %s failed, not starting it: %v", p.spec.Name, in.err)
	g.finish(p, &Termination{
		InstanceID: p.inst.id, ExitCode: preStartFailureCode, Reason: ReasonPreStartHookError,
		Message: in.err.Error(), FinishedAt: g.now,
	})
}

// abortPreStart is a stop, restart or shutdown that finds the instance
// still in its pre_start hook: there is no process to stop, so the start
// is dropped (the worker cancels the hook once the instance is gone). No
// termination is recorded; the instance id stays used.
func (g *groupCore) abortPreStart(p *proc, reason KillReason, by string, restart bool) {
	g.emit(p, EventNormal, EventKilling, "Cancelling the start of process %s during its pre_start hook: %s requested by %s", p.spec.Name, verb(reason), who(by))
	p.inst = nil
	if restart {
		p.startNow, p.startBy = true, by
	}
}

// beginPostStart holds a just-started instance out of running/started
// until its post_start returns (H1). The Started event has been emitted:
// the process does run.
func (g *groupCore) beginPostStart(p *proc) {
	if p.spec.PostStart == nil {
		return
	}
	p.inst.running = false
	p.inst.hooks.postStarting = true
	g.do(hookAction{process: p.spec.Name, instance: p.inst.id, point: spec.PostStart, spec: p.spec})
}

// postStartDone releases the instance into running (H1), or kills it
// through the normal stop path with the group's grace (H2).
func (g *groupCore) postStartDone(in postStartDoneInput) {
	p := g.procByInstance(in.instance)
	if p == nil || !p.inst.hooks.postStarting {
		return
	}
	p.inst.hooks.postStarting = false
	if p.inst.stop != nil {
		return // already stopping: it never shows as running
	}
	if in.err == nil {
		p.inst.running = true
		return
	}
	g.emit(p, EventWarning, EventFailedPostStartHook, "PostStart hook for process %s failed: %v", p.spec.Name, in.err)
	g.beginStop(p, KillPostStartHook, nil, nil, "", false)
}

// requestPostStop asks for post_start's counterpart once per exited
// instance, whatever ended it (X5). p.inst is the instance that exited.
func (g *groupCore) requestPostStop(p *proc) {
	if p.spec.PostStop != nil {
		g.do(hookAction{process: p.spec.Name, instance: p.inst.id, point: spec.PostStop, spec: p.spec})
	}
}

// postStopDone: a failure is a warning event and changes nothing (X5).
func (g *groupCore) postStopDone(in postStopDoneInput) {
	if in.err == nil {
		return
	}
	p, ok := g.byName[in.process]
	if !ok {
		for _, q := range g.leaving { // removed by a reload, still stopping
			if q.spec.Name == in.process {
				p, ok = q, true
			}
		}
	}
	if !ok {
		return
	}
	// The event names the instance that exited, not the one now running.
	g.do(emitAction{Event{
		Time: g.now, Type: EventWarning, Reason: EventFailedPostStopHook, Group: g.name,
		Process: p.spec.Name, InstanceID: in.instance, RestartCount: max(p.starts-1, 0),
		Message: fmt.Sprintf("PostStop hook for process %s failed: %v", p.spec.Name, in.err),
	}})
}

// probeReport is one failed probe of the current, running instance: an
// Unhealthy event with the probe's output, as the kubelet records for
// each failure. The kill waits for the threshold (probeResult, P6).
func (g *groupCore) probeReport(in probeReportInput) {
	p := g.procByInstance(in.instance)
	if p == nil || !p.inst.running || p.inst.stop != nil {
		return
	}
	g.emit(p, EventWarning, EventUnhealthy, "%s probe failed: %s", probeTitle(in.probe), in.message)
}

// probeTitle is the probe kind as kubelet's events spell it ("Liveness").
func probeTitle(k spec.ProbeKind) string {
	s := string(k)
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

package core

import (
	"time"

	"github.com/podsup/podsup/spec"
)

// What the worker may read of the core between steps, besides Snapshot
// and RecreateSnapshot: enough to run probes and hooks, nothing to change.

// ShuttingDown reports that podsup is stopping the group for good (X9).
func (g *Group) ShuttingDown() bool { return g.shutdown }

// Spec is the group's spec as the last reload left it.
func (g *Group) Spec() spec.Group { return g.spec }

// Reloads counts the process-level reloads the core took.
func (g *Group) Reloads() int { return g.reloads }

// InstanceSpec is the spec of the process whose live instance is id; ok
// is false when id is no live instance.
func (g *Group) InstanceSpec(id string) (s spec.Process, ok bool) {
	if p := g.procByInstance(id); p != nil {
		return p.spec, true
	}
	return spec.Process{}, false
}

// ArmedRestart is the decision the core would take on an exit of the live
// instance id, taken in advance where it cannot depend on anything but the
// exit code (docs/semantics.md, R8): ok when that exit, stepped now, would
// be followed in the same step by the start of instance next with spec s
// and nothing else before it. anyExit says every exit restarts it
// (restart_policy "always"); otherwise only a non-zero code does
// ("on-failure"). The worker uses it to start the next instance on the
// reaper's goroutine the moment the exit is reaped (armed.go), and must
// take back that answer (disarm) before it steps any input that could
// change it.
//
// It answers ok only where the restart is certain whatever the count: a
// main process, wanted, running with no stop or stop request under way,
// under a back-off that is always zero (initial 0s) and no backoff_limit,
// with no pre_start, post_start or post_stop hook (they run between
// instances), no dependencies (W1), no reload (its new spec) or recreate
// under way, and in a group that is not shutting down, has no sandbox
// block (a start there may need the sandbox rebuilt, or a user
// namespace's holder), and whose process needs no readiness protocol,
// activation socket or journal stream (layers that make something per
// start). Anything else is stepped the usual way.
func (g *Group) ArmedRestart(id string) (next string, s spec.Process, anyExit, ok bool) {
	if g.shutdown {
		return "", spec.Process{}, false, false
	}
	p := g.procByInstance(id)
	if p == nil || !g.restartsAtOnce(p) || !p.want || p.done || g.initFailed || !g.mainsRan {
		return "", spec.Process{}, false, false
	}
	i := p.inst
	if i.phase != phaseRunning || i.stop != nil || i.deferred != nil || p.pendingStop != nil {
		return "", spec.Process{}, false, false
	}
	if p.between != (between{}) || p.recreateReq != "" || p.nextSpec != nil || len(g.leaving) > 0 || len(g.rc.reqs) > 0 {
		return "", spec.Process{}, false, false
	}
	return g.instanceID(p), p.spec, p.policy == spec.RestartAlways, true
}

// RestartsAtOnce reports whether process's restarts may be armed
// (ArmedRestart), as far as its configuration goes: the part of
// ArmedRestart's answer that does not change while it runs. The worker
// tells the runtime (StartRequest.RestartsAtOnce), which may keep ready
// what the next start needs.
func (g *Group) RestartsAtOnce(process string) bool {
	p := g.byName[process]
	return p != nil && g.restartsAtOnce(p)
}

func (g *Group) restartsAtOnce(p *proc) bool {
	if p.init || !g.backoff.alwaysZero() || g.spec.BackoffLimit != nil || g.spec.Sandbox != nil || g.hasDeps(p) {
		return false
	}
	ps := p.spec
	if ps.PreStart != nil || ps.PostStart != nil || ps.PostStop != nil || ps.Readiness != "" || len(ps.Sockets) > 0 || ps.Log.Journal {
		return false
	}
	return p.policy == spec.RestartAlways || p.policy == spec.RestartOnFailure
}

// MayChangeArmedRestart reports whether stepping in may change what
// ArmedRestart answered for an instance other than in's own: everything but
// what an instance's own life reports (its start, probes, status text, exit,
// the end of its tree kill) and the timer, whose deadlines concern no
// process ArmedRestart answers for (none has a stop, back-off wait,
// dependency wait or recreate under way). An input the core adds later
// is in the first group until shown otherwise.
func MayChangeArmedRestart(in Input) bool {
	switch in.(type) {
	case StartedInput, StartFailedInput, ExitedInput, KillDoneInput, ProbeInput, ProbeReportInput, StatusTextInput, TimerInput:
		return false
	}
	return true
}

// ProbeTarget is a main process whose probes the worker runs.
type ProbeTarget struct {
	Spec spec.Process
	// Pending: a reload changed the process and its new spec (with its
	// new probes) takes over once the old instance is gone.
	Pending bool
}

// ProbeTargets lists the group's sidecars (O5) and main processes in
// order: the processes whose probes run.
func (g *Group) ProbeTargets() []ProbeTarget {
	out := make([]ProbeTarget, 0, len(g.mains))
	for _, p := range g.inits {
		if p.sidecar {
			out = append(out, ProbeTarget{Spec: p.spec})
		}
	}
	for _, p := range g.mains {
		out = append(out, ProbeTarget{Spec: p.spec, Pending: p.nextSpec != nil})
	}
	return out
}

// ProbeView is the instance a process's probes see.
type ProbeView struct {
	// ID is the instance probed: the running one, or the newest finished
	// one (P8: its probes fail); "" when there is none to probe (no
	// instance yet, or one in its pre_start or post_start hook: H1).
	ID string
	// Running, StartedAt and Started describe a running instance.
	Running   bool
	StartedAt time.Time
	Started   bool
	// Starting: the instance's start is in flight.
	Starting bool
}

// ProbeViewOf is what the probes of the named main process or sidecar see; ok is
// false for a process the group does not have.
func (g *Group) ProbeViewOf(process string) (v ProbeView, ok bool) {
	p := g.byName[process]
	if p == nil {
		return ProbeView{}, false
	}
	switch inst := p.inst; {
	case inst != nil && inst.running():
		return ProbeView{ID: inst.id, Running: true, StartedAt: inst.startedAt, Started: inst.started}, true
	case inst != nil:
		return ProbeView{Starting: inst.starting()}, true
	case p.last != nil:
		return ProbeView{ID: p.last.InstanceID}, true
	}
	return ProbeView{}, true
}

// EndReason is the termination reason recorded for the finished instance
// id (Completed, Error, Stopped, ...); "" when no process's newest
// finished instance is id.
func (g *Group) EndReason(id string) string {
	for p := range g.procs() {
		if p.last != nil && p.last.InstanceID == id {
			return p.last.Reason
		}
	}
	return ""
}

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

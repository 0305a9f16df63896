package core

import (
	"fmt"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Snapshot builds the group's status from the core's state. The result
// shares nothing with the core.
func (g *Group) Snapshot() lifecycle.GroupStatus {
	gs := lifecycle.GroupStatus{Name: g.name, Phase: g.phase()}
	gs.Ready, gs.ReadinessHeldBy = g.readiness()
	// Sized at once: a worker keeps its group's last snapshot, and
	// append's doubling would keep up to twice the room per process.
	if len(g.inits) > 0 {
		gs.Init = make([]lifecycle.ProcessStatus, 0, len(g.inits))
	}
	for _, p := range g.inits {
		gs.Init = append(gs.Init, g.procStatus(p))
	}
	if len(g.mains) > 0 {
		gs.Processes = make([]lifecycle.ProcessStatus, 0, len(g.mains))
	}
	for _, p := range g.mains {
		gs.Processes = append(gs.Processes, g.procStatus(p))
	}
	return gs
}

func (g *Group) procStatus(p *proc) lifecycle.ProcessStatus {
	ps := lifecycle.ProcessStatus{Name: p.spec.Name, Init: p.init, Sidecar: p.sidecar, RestartCount: max(p.starts-1, 0), OOMKills: p.oomKills}
	ps.CreatedAt = p.created
	switch {
	case p.inst != nil && p.inst.running():
		ps.State = lifecycle.StateRunning
		ps.InstanceID, ps.Pid = p.inst.id, p.inst.pid
		ps.StartedAt = p.inst.startedAt
		ps.Ready, ps.Started = p.inst.ready, p.inst.started
		ps.StatusText = p.inst.statusText
		ps.LastTermination = p.last.Clone()
		if ps.Terminating = terminating(p); ps.Terminating != nil {
			ps.Ready = false // S6: not ready from the moment the stop is decided
		}
	case p.inst != nil:
		ps.State, ps.Reason = lifecycle.StateWaiting, lifecycle.ReasonContainerCreating
		ps.InstanceID = p.inst.id
		ps.LastTermination = p.last.Clone()
		ps.Terminating = terminating(p)
	case p.wait != nil:
		ps.State, ps.Reason = lifecycle.StateWaiting, lifecycle.ReasonDependencyWait // W3
		ps.Message = "waiting for " + p.wait.on
		if p.last != nil {
			ps.InstanceID = p.last.InstanceID
		}
		ps.LastTermination = p.last.Clone()
	case !p.nextStart.IsZero():
		ps.State, ps.Reason = lifecycle.StateWaiting, lifecycle.ReasonCrashLoopBackOff // S1
		ps.NextStartAt = p.nextStart
		ps.Message = fmt.Sprintf("back-off %s restarting failed process %s", g.backoff.Get(p.spec.Name), p.spec.Name)
		ps.InstanceID = p.last.InstanceID
		ps.LastTermination = p.last.Clone()
	case p.last != nil:
		ps.State = lifecycle.StateTerminated // S2
		ps.Reason, ps.Message = p.last.Reason, p.last.Message
		ps.InstanceID = p.last.InstanceID
		ps.StartedAt, ps.FinishedAt = p.last.StartedAt, p.last.FinishedAt
		ps.Terminated = p.last.Clone()
		ps.LastTermination = p.prev.Clone()
	default:
		ps.State = lifecycle.StateWaiting
		switch {
		case (!p.init || p.sidecar) && !p.want:
			ps.Reason = lifecycle.ReasonStopped
		case p.init || !g.mainsRan:
			ps.Reason = lifecycle.ReasonPodInitializing // I1: waiting for its turn
		default:
			ps.Reason = lifecycle.ReasonContainerCreating
		}
	}
	return ps
}

// terminating is S6: the stop of p's live instance that is under way, or
// decided and waiting (a start in flight, an ordered shutdown's turn);
// nil when none is.
func terminating(p *proc) *lifecycle.Terminating {
	inst := p.inst
	switch {
	case inst.stop != nil && inst.phase.stopping():
		return &lifecycle.Terminating{Since: inst.stopDecidedWall, Reason: inst.stop.reason, By: inst.stop.by}
	case inst.deferred != nil:
		return &lifecycle.Terminating{Since: inst.stopDecidedWall, Reason: inst.deferred.reason, By: inst.deferred.by}
	case p.pendingStop != nil:
		return &lifecycle.Terminating{Since: p.pendingStop.since, Reason: lifecycle.KillShutdown, By: p.pendingStop.by}
	}
	return nil
}

// phase summarises the group like a pod phase.
func (g *Group) phase() lifecycle.GroupPhase {
	alive, wanted, failed := false, false, false
	for p := range g.procs() {
		if p.inst != nil && p.inst.phase.stopping() {
			return lifecycle.PhaseStopping
		}
		if p.inst != nil {
			alive = true
		}
	}
	if g.initFailed {
		return lifecycle.PhaseFailed
	}
	for _, p := range g.mains {
		if p.want && !p.done {
			wanted = true
		}
		if p.done && p.last != nil && p.last.ExitCode != 0 {
			failed = true
		}
	}
	switch {
	case !g.mainsRan && (wanted || alive):
		return lifecycle.PhasePending
	case alive || wanted:
		return lifecycle.PhaseRunning
	}
	anyWantedDone := false
	for _, p := range g.mains {
		if p.want && p.done {
			anyWantedDone = true
		}
	}
	switch {
	case !anyWantedDone:
		return lifecycle.PhaseStopped
	case failed:
		return lifecycle.PhaseFailed
	default:
		return lifecycle.PhaseSucceeded
	}
}

package core

import (
	"fmt"

	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Snapshot builds the group's status from the core's state. The result
// shares nothing with the core.
func (g *Group) Snapshot() lifecycle.GroupStatus {
	return g.SnapshotSince(nil).Status()
}

// Published is a group's status as a worker publishes it after each batch
// of inputs: immutable once made, and cheap to make again from the last
// one. Each process's status is held by pointer, so a batch that changed
// one process of a hundred makes one process status and a list of a
// hundred pointers, where a list of statuses would copy all hundred (a
// status is some 300 bytes: at 10,000 processes stopping, the copies were
// most of the garbage podsup made). Readers take a copy of their own
// (Status), as they did before.
type Published struct {
	group        lifecycle.GroupStatus // Init and Processes unset
	inits, mains []*lifecycle.ProcessStatus
}

// Status is p as a status that shares nothing with p.
func (p *Published) Status() lifecycle.GroupStatus {
	gs := p.group
	gs.Init = cloneStatuses(p.inits)
	gs.Processes = cloneStatuses(p.mains)
	return gs
}

func cloneStatuses(ps []*lifecycle.ProcessStatus) []lifecycle.ProcessStatus {
	if ps == nil {
		return nil
	}
	out := make([]lifecycle.ProcessStatus, len(ps))
	for i, s := range ps {
		out[i] = s.Clone()
	}
	return out
}

// SnapshotSince is Snapshot for a caller that keeps the last status it
// published, prev (nil for none): it returns prev itself when the status
// equals it, and otherwise a new one that shares with prev the process
// statuses that did not change (a published status is never written to,
// so both may share them; neither shares anything with the core).
//
// A worker publishes its group's status after every batch of inputs, and
// a status is O(processes of the group): when a group of a hundred stops,
// most batches (a cleanup's outcome, say) change nothing, or one process,
// and copying every process's status for each was a good part of
// podsup's CPU and garbage in the stop.
func (g *Group) SnapshotSince(prev *Published) *Published {
	gs := lifecycle.GroupStatus{Name: g.name, Phase: g.phase()}
	gs.Ready, gs.ReadinessHeldBy = g.readiness()
	var prevInit, prevMains []*lifecycle.ProcessStatus
	if prev != nil {
		prevInit, prevMains = prev.inits, prev.mains
	}
	inits, initsSame := g.statuses(g.inits, prevInit)
	mains, mainsSame := g.statuses(g.mains, prevMains)
	if prev != nil && initsSame && mainsSame && gs.Name == prev.group.Name && gs.Phase == prev.group.Phase &&
		gs.Ready == prev.group.Ready && gs.ReadinessHeldBy == prev.group.ReadinessHeldBy {
		return prev
	}
	return &Published{group: gs, inits: inits, mains: mains}
}

// statuses is the status of each of procs, with prev the last published
// statuses of the same list; same reports that every status equals its
// entry of prev, and then the list is prev itself. A status that did not
// change is prev's, shared; only a changed one is copied from the core.
func (g *Group) statuses(procs []*proc, prev []*lifecycle.ProcessStatus) (out []*lifecycle.ProcessStatus, same bool) {
	if len(procs) == 0 {
		return nil, len(prev) == 0
	}
	start := 0 // procs before it have prev's status
	if len(prev) == len(procs) {
		for start < len(procs) && g.view(procs[start]).equals(*prev[start]) {
			start++
		}
		if start == len(procs) {
			return prev, true
		}
	}
	out = make([]*lifecycle.ProcessStatus, len(procs))
	copy(out, prev[:min(start, len(prev))])
	for i := start; i < len(procs); i++ {
		if v := g.view(procs[i]); i < len(prev) && v.equals(*prev[i]) {
			out[i] = prev[i]
		} else {
			s := v.status()
			out[i] = &s
		}
	}
	return out, false
}

// procView is a process's status as the core sees it: its Terminated
// and LastTermination point into the core and its Terminating is held
// apart, so that it can be compared with a published status without
// copying anything.
type procView struct {
	ps          lifecycle.ProcessStatus
	terminating lifecycle.Terminating
	stopping    bool // terminating applies
}

// status is v as a status that shares nothing with the core.
func (v procView) status() lifecycle.ProcessStatus {
	ps := v.ps
	ps.Terminated = ps.Terminated.Clone()
	ps.LastTermination = ps.LastTermination.Clone()
	if v.stopping {
		t := v.terminating
		ps.Terminating = &t
	}
	return ps
}

// equals reports whether ps, a published status, says what v says.
func (v procView) equals(ps lifecycle.ProcessStatus) bool {
	if v.stopping != (ps.Terminating != nil) || v.stopping && v.terminating != *ps.Terminating {
		return false
	}
	if !sameTermination(v.ps.Terminated, ps.Terminated) || !sameTermination(v.ps.LastTermination, ps.LastTermination) {
		return false
	}
	a := v.ps
	a.Terminated, a.LastTermination = nil, nil
	ps.Terminated, ps.LastTermination, ps.Terminating = nil, nil, nil
	return a == ps
}

func sameTermination(a, b *lifecycle.Termination) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// view is p's status as the core sees it.
func (g *Group) view(p *proc) procView {
	var v procView
	ps := lifecycle.ProcessStatus{Name: p.spec.Name, Init: p.init, Sidecar: p.sidecar, RestartCount: max(p.starts-1, 0), OOMKills: p.oomKills}
	ps.CreatedAt = p.created
	switch {
	case p.inst != nil && p.inst.running():
		ps.State = lifecycle.StateRunning
		ps.InstanceID, ps.Pid = p.inst.id, p.inst.pid
		ps.StartedAt = p.inst.startedAt
		ps.Ready, ps.Started = p.inst.ready, p.inst.started
		ps.StatusText = p.inst.statusText
		ps.LastTermination = p.last
		if v.terminating, v.stopping = terminating(p); v.stopping {
			ps.Ready = false // S6: not ready from the moment the stop is decided
		}
	case p.inst != nil:
		ps.State, ps.Reason = lifecycle.StateWaiting, lifecycle.ReasonContainerCreating
		ps.InstanceID = p.inst.id
		ps.LastTermination = p.last
		v.terminating, v.stopping = terminating(p)
	case p.wait != nil:
		ps.State, ps.Reason = lifecycle.StateWaiting, lifecycle.ReasonDependencyWait // W3
		ps.Message = "waiting for " + p.wait.on
		if p.last != nil {
			ps.InstanceID = p.last.InstanceID
		}
		ps.LastTermination = p.last
	case !p.nextStart.IsZero():
		ps.State, ps.Reason = lifecycle.StateWaiting, lifecycle.ReasonCrashLoopBackOff // S1
		ps.NextStartAt = p.nextStart
		ps.Message = fmt.Sprintf("back-off %s restarting failed process %s", g.backoff.Get(p.spec.Name), p.spec.Name)
		ps.InstanceID = p.last.InstanceID
		ps.LastTermination = p.last
	case p.last != nil:
		ps.State = lifecycle.StateTerminated // S2
		ps.Reason, ps.Message = p.last.Reason, p.last.Message
		ps.InstanceID = p.last.InstanceID
		ps.StartedAt, ps.FinishedAt = p.last.StartedAt, p.last.FinishedAt
		ps.Terminated = p.last
		ps.LastTermination = p.prev
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
	v.ps = ps
	return v
}

// terminating is S6: the stop of p's live instance that is under way, or
// decided and waiting (a start in flight, an ordered shutdown's turn);
// ok is false when none is.
func terminating(p *proc) (t lifecycle.Terminating, ok bool) {
	inst := p.inst
	switch {
	case inst.stop != nil && inst.phase.stopping():
		return lifecycle.Terminating{Since: inst.stopDecidedWall, Reason: inst.stop.reason, By: inst.stop.by}, true
	case inst.deferred != nil:
		return lifecycle.Terminating{Since: inst.stopDecidedWall, Reason: inst.deferred.reason, By: inst.deferred.by}, true
	case p.pendingStop != nil:
		return lifecycle.Terminating{Since: p.pendingStop.since, Reason: lifecycle.KillShutdown, By: p.pendingStop.by}, true
	}
	return lifecycle.Terminating{}, false
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

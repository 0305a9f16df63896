package core

import (
	"github.com/podsup/podsup/supervisor/lifecycle"
	"time"
)

// Stop order (W8, W9): with an ordered shutdown, a process is stopped
// only once every process that depends on it (in its group) and every
// group that depends on its group has no instance left; each stop then
// runs through K1–K6 with its own grace. A second shutdown request stops
// whatever still waits at once (X9's hurry).

// pendingStop is a shutdown stop that waits for the process's
// dependents to be gone.
type pendingStop struct {
	grace *time.Duration
	by    string
	// since is when the shutdown decided the stop, on the wall clock: the
	// process shows Terminating and not ready from then on (S6).
	since time.Time
}

// shutdownProc is CmdShutdown for one process: at once, or, in an
// ordered first shutdown, once its dependents are gone. A sidecar
// stopped with its group (inTurn) waits for its turn instead (O6), which
// comes after every main process has exited.
func (g *Group) shutdownProc(p *proc, c CommandInput, first, inTurn bool) {
	nothingWaits := len(g.stopAfter) == 0 && !g.dependedOn[p.spec.Name]
	if !first || !c.Ordered || inTurn || nothingWaits || p.inst == nil || p.inst.stop != nil {
		p.pendingStop = nil
		g.stopProc(p, lifecycle.KillShutdown, c.Grace, c.By, inTurn)
		return
	}
	p.want = false
	g.cancelStart(p)
	p.pendingStop = &pendingStop{grace: c.Grace, by: c.By, since: g.wallNow()}
}

// runPendingStops begins the pending stops whose dependents are gone.
func (g *Group) runPendingStops() {
	if !g.shutdown {
		return // only a shutdown defers stops; and this runs for every input
	}
	for p := range g.procs() {
		ps := p.pendingStop
		if ps == nil {
			continue
		}
		if p.inst == nil || p.inst.stop != nil {
			p.pendingStop = nil
			continue
		}
		if g.dependentsAlive(p) {
			continue
		}
		p.pendingStop = nil
		p.inst.decideStop(ps.since)
		g.beginStop(p, lifecycle.KillShutdown, ps.grace, nil, ps.by, false)
	}
}

// dependentsAlive reports an alive instance that depends on p: a process
// of the group naming it, or a group depending on this one (W8).
func (g *Group) dependentsAlive(p *proc) bool {
	for _, d := range g.stopAfter {
		if g.ext[d].Alive {
			return true
		}
	}
	for q := range g.procs() {
		if q.inst == nil || q == p {
			continue
		}
		for _, d := range q.spec.DependsOn {
			if d.Name == p.spec.Name {
				return true
			}
		}
	}
	return false
}

// namesDependedOn is the set of process names that some process of the
// group depends on.
func (g *Group) namesDependedOn() map[string]bool {
	names := map[string]bool{}
	for q := range g.procs() {
		for _, d := range q.spec.DependsOn {
			names[d.Name] = true
		}
	}
	return names
}

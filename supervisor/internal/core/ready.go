package core

import "github.com/podsup/podsup/supervisor/lifecycle"

// Readiness, in one place: an instance's (S3: started and its readiness
// verdict) and the group's (every wanted main process running and ready,
// unless a recreate request holds it false: C3). Probes and readiness
// protocols only deliver verdicts; what they mean is decided here.

// updateReady sets ready from readiness's verdict, held back until the
// instance has started (S3: kubelet's UpdatePodStatus leaves a container
// that has not started unready, whatever its readiness), and reports the
// moment it turns true.
func (g *Group) updateReady(p *proc) {
	ready := p.inst.started && p.inst.readyVerdict
	if ready && !p.inst.ready {
		// W3: the instant depends_on's "ready" is met, in the events.
		g.emit(p, lifecycle.EventNormal, lifecycle.EventReady, "Process %s is ready", p.spec.Name)
	}
	p.inst.ready = ready
}

// readiness is the group's readiness: every wanted main process running
// and ready, and no recreate request holding it false (C3).
func (g *Group) readiness() (ready bool, heldBy string) {
	heldBy = g.rc.holder
	n := 0
	for _, p := range g.mains {
		if !p.want || p.done {
			continue
		}
		n++
		if p.inst == nil || p.inst.phase != phaseRunning || !p.inst.ready {
			return false, heldBy
		}
	}
	if n > 0 && !g.sidecarsReady() { // O5
		return false, heldBy
	}
	return n > 0 && heldBy == "" && !g.shutdown, heldBy
}

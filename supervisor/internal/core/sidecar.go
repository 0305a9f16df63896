package core

import (
	"github.com/podsup/podsup/supervisor/lifecycle"
	"time"
)

// Sidecars (O1–O7): an init with restart_policy "always" is Kubernetes'
// restartable init container (KEP-753). What sets it apart from a plain
// init, and where the core decides it:
//
//	start     in init order; the next init (or the main processes) starts
//	          once it has started: post_start done, startup probe passed,
//	          not once it completed (passStartedSidecars, O2)
//	run       restarted with back-off whenever it ends, whatever the
//	          group's policy (keepSidecarsRunning, O3); probed like a main
//	          process, and its readiness is part of the group's (O5)
//	end       when every main process has ended for good, or an init
//	          failed the group, the sidecars are stopped (O4)
//	stop      with its group: its Killing event and pre_stop at once, its
//	          stop signal only in its turn, once the main processes and
//	          the later sidecars are gone, the wait charged to its grace
//	          (signalInTurn, takeTurn: O6, K4)

// over reports a group with nothing left to run beside its sidecars: the
// main processes ran and none is wanted any more, at least one of them
// having ended for good (O4), or an init failed the group (I2). A group
// whose main processes were all stopped by request is not over: its
// sidecars stay.
func (g *Group) over() bool {
	if g.initFailed {
		return true
	}
	if !g.mainsRan {
		return false
	}
	ended := false
	for _, p := range g.mains {
		if p.want && !p.done {
			return false
		}
		ended = ended || p.done
	}
	return ended
}

// stopSidecarsOfEndedGroup is O4: the sidecars of a group that is over
// are stopped, in their turn (O6), and not started again while it stays
// over. As in kubelet, whose computePodActions kills the pod and drops
// the sidecars' restarts once no regular container is left to run.
func (g *Group) stopSidecarsOfEndedGroup() {
	for _, p := range g.inits {
		if !p.sidecar || p.inst == nil || p.inst.stop != nil || p.inst.deferred != nil {
			continue
		}
		g.fireRest(p, restOnCancel)
		g.beginStopInTurn(p, lifecycle.KillGroupCompleted, nil, "podsup")
	}
	for _, p := range g.inits {
		if p.sidecar {
			p.nextStart = time.Time{} // no CrashLoopBackOff shown: nothing will start it
		}
	}
}

// keepSidecarsRunning is O3: a sidecar that the init order has passed is
// started again whenever it has no instance and is wanted, with back-off
// (B6), whatever the group's restart policy.
func (g *Group) keepSidecarsRunning() {
	for i, p := range g.inits {
		if i >= g.initNext && !g.mainsRan {
			return // not reached yet (I1, O2)
		}
		if p.sidecar && p.want && p.inst == nil {
			g.tryStart(p)
		}
	}
}

// passStartedSidecars is O2: a sidecar lets the init order go on once its
// instance has started (S4: startup probe passed, or readiness protocol
// heard) and is running (H1: post_start done). Its later ends and
// restarts hold nothing back.
func (g *Group) passStartedSidecars() {
	for g.initNext < len(g.inits) {
		p := g.inits[g.initNext]
		if !p.sidecar || p.inst == nil || p.inst.phase != phaseRunning || !p.inst.started {
			return
		}
		g.initNext++
	}
}

// sidecarsReady is O5's part of the group's readiness: every wanted
// sidecar runs and is ready.
func (g *Group) sidecarsReady() bool {
	for _, p := range g.inits {
		if p.sidecar && p.want && (p.inst == nil || p.inst.phase != phaseRunning || !p.inst.ready) {
			return false
		}
	}
	return true
}

// beginStopInTurn begins a sidecar's stop that waits for its turn before
// the stop signal (O6).
func (g *Group) beginStopInTurn(p *proc, reason lifecycle.KillReason, override *time.Duration, by string) {
	g.fire(p, event{on: onStop, stop: stopRequest{reason: reason, override: override, by: by, ordered: true}})
}

// signalInTurn sends the stop signal with what is left of the grace, or,
// for a sidecar stopped with its group whose turn has not come, waits for
// it in AwaitTurn at most that long. As kubelet's killContainer does: the
// wait comes after pre_stop and only when grace is left (O6, K4).
func (g *Group) signalInTurn(p *proc, grace time.Duration) phase {
	st := p.inst.stop
	if !st.ordered || grace <= 0 || g.turnCame(p) {
		return g.sendStopSignal(p, grace)
	}
	st.turnFrom, st.turnGrace = g.now, grace
	st.deadline = g.now.Add(grace)
	return phaseAwaitTurn
}

// turnCame reports that a sidecar may get its stop signal: no main
// process has an instance any more, and neither has any sidecar after it
// in init order (kubelet's terminationOrdering: each sidecar waits for
// every regular container and for the next sidecar).
func (g *Group) turnCame(p *proc) bool {
	for _, m := range g.mains {
		if m.inst != nil {
			return false
		}
	}
	for _, m := range g.leaving {
		if m.inst != nil {
			return false
		}
	}
	later := false
	for _, q := range g.inits {
		if q == p {
			later = true
			continue
		}
		if later && q.sidecar && q.inst != nil {
			return false
		}
	}
	return true
}

// takeTurn ends a sidecar's wait: the stop signal, with the time waited
// charged to the grace (K4) and the minimum still applying (K5).
func (g *Group) takeTurn(p *proc, _ event) (phase, []event) {
	st := p.inst.stop
	return g.sendStopSignal(p, ChargeTurnWait(st.turnGrace, g.now.Sub(st.turnFrom))), nil
}

// ChargeTurnWait is K4: the time a sidecar waited for its turn, truncated
// to whole seconds as kubelet's killContainer truncates what
// terminationOrdering.waitForTurn returns, is taken from its grace. The
// result may be zero; MinimumGrace lifts it (K5).
func ChargeTurnWait(grace, waited time.Duration) time.Duration {
	return grace - waited.Truncate(time.Second)
}

package core

import (
	"errors"
	"fmt"
	"github.com/podsup/podsup/supervisor/lifecycle"
	"time"
)

// Termination (K1–K6, X9, X12): a stop begins with pre_stop or the stop
// signal, and the grace's deadline ends in SIGKILL of the tree.

// beginStop starts a termination of p's instance: the stop signal after
// pre_stop, or, before there is a process, a cancelled start (the
// transitions of onStop).
func (g *Group) beginStop(p *proc, reason lifecycle.KillReason, override, probeGrace *time.Duration, by string, restart bool) {
	g.fire(p, event{on: onStop, stop: stopRequest{reason: reason, override: override, probeGrace: probeGrace, by: by, restart: restart}})
}

// stopBegin is a stop of a process that runs: K1/K2's grace, the Killing
// event, then pre_stop when there is grace to spend (K3), else the stop
// signal.
func (g *Group) stopBegin(p *proc, ev event) (phase, []event) {
	r := ev.stop
	grace := SelectGrace(r.reason, g.grace, r.probeGrace, r.override)
	st := &stopState{reason: r.reason, by: r.by, grace: grace, begun: g.now, restart: r.restart, shown: p.inst.phase == phaseRunning, ordered: r.ordered}
	p.inst.stop = st
	p.inst.decideStop(g.wallNow())
	switch r.reason {
	case lifecycle.KillLiveness, lifecycle.KillStartup:
		st.preKill = p.last
		probe := "liveness"
		if r.reason == lifecycle.KillStartup {
			probe = "startup"
		}
		if r.restart {
			g.emit(p, lifecycle.EventNormal, lifecycle.EventKilling, "Process %s failed %s probe, will be restarted (grace %s)", p.spec.Name, probe, grace)
		} else {
			g.emit(p, lifecycle.EventNormal, lifecycle.EventKilling, "Process %s failed %s probe, stopping (grace %s)", p.spec.Name, probe, grace)
		}
	case lifecycle.KillPostStartHook:
		g.emit(p, lifecycle.EventNormal, lifecycle.EventKilling, "Stopping process %s: its post_start hook failed (grace %s)", p.spec.Name, grace)
	case lifecycle.KillGroupCompleted:
		g.emit(p, lifecycle.EventNormal, lifecycle.EventKilling, "Stopping sidecar %s: every main process of the group has ended (grace %s)", p.spec.Name, grace)
	default:
		g.emit(p, lifecycle.EventNormal, lifecycle.EventKilling, "Stopping process %s: %s requested by %s (grace %s)", p.spec.Name, verb(r.reason), who(r.by), grace)
	}
	// K3: a pre_stop hook runs first when there is grace to spend.
	if p.spec.PreStop != nil && grace > 0 {
		st.deadline = g.now.Add(grace)
		g.do(PreStopAction{Process: p.spec.Name, Instance: p.inst.id, Budget: grace})
		return phasePreStop, nil
	}
	return g.signalInTurn(p, grace), nil
}

// sendStopSignal is K5 then K6: the stop signal now, SIGKILL after grace
// lifted to the minimum.
func (g *Group) sendStopSignal(p *proc, grace time.Duration) phase {
	st := p.inst.stop
	grace = MinimumGrace(grace, g.minGrace)
	st.deadline = g.now.Add(grace)
	g.do(SignalAction{Process: p.spec.Name, Instance: p.inst.id, Sig: p.spec.EffectiveStopSignal()})
	return phaseSignalled
}

// endPreStop is pre_stop's end, or its budget's: the stop signal, with
// the time the hook took charged to the grace (K3). A failed hook is a
// warning; the termination goes on (H4).
func (g *Group) endPreStop(p *proc, ev event) (phase, []event) {
	if ev.err != nil {
		g.emit(p, lifecycle.EventWarning, lifecycle.EventFailedPreStopHook, "PreStop hook for process %s failed: %v", p.spec.Name, ev.err)
	}
	st := p.inst.stop
	return g.signalInTurn(p, ChargePreStop(st.grace, g.now.Sub(st.begun))), nil
}

// escalate is a second stop request (X9): SIGKILL of the tree now.
func (g *Group) escalate(p *proc, ev event) (phase, []event) {
	g.emit(p, lifecycle.EventNormal, lifecycle.EventKilling, "Killing process %s now: second stop request by %s", p.spec.Name, who(ev.by))
	return g.killTree(p), nil
}

// graceExpired is K6's end: the grace is over, SIGKILL the tree. No
// second Killing event: kubelet's one Killing covers the whole stop, the
// runtime's SIGKILL included (E1).
func (g *Group) graceExpired(p *proc, _ event) (phase, []event) {
	return g.killTree(p), nil
}

// runStopDeadlines fires the deadlines of the stops under way: pre_stop's
// budget (K3), the grace (K6), and the look after a SIGKILL.
func (g *Group) runStopDeadlines() {
	for p := range g.procs() {
		if p.inst == nil || !p.inst.phase.stopping() {
			continue
		}
		st := p.inst.stop
		if p.inst.phase == phasePreStop && !g.now.Before(st.deadline) {
			g.fire(p, event{on: onPreStopDone}) // K3: the hook outlived the grace; stop waiting
		}
		switch ph := p.inst.phase; {
		case ph == phaseAwaitTurn && (g.turnCame(p) || !g.now.Before(st.deadline)):
			g.fire(p, event{on: onTurn}) // O6, K4
		case ph == phaseSignalled && !g.now.Before(st.deadline):
			g.fire(p, event{on: onGraceExpired})
		case (ph == phaseKilling || ph == phaseKilled) && !g.now.Before(st.deadline):
			g.fire(p, event{on: onKillDeadline})
		}
	}
}

// preStopDone hears that an instance's pre_stop hook returned. In the
// pre_stop phase that ends the phase (the table); a hook that outlived the
// grace (K9) ends later, when the instance is signalled, being killed or
// gone, and then only its failure is told: kubelet's hook goroutine
// records FailedPreStopHook whenever the hook fails, also after it
// stopped waiting, and an exec hook fails when the container's kill ends
// it.
func (g *Group) preStopDone(in PreStopDoneInput) {
	p := g.procByInstance(in.Instance)
	if p != nil && p.inst.phase == phasePreStop {
		g.fire(p, event{on: onPreStopDone, err: in.Err})
		return
	}
	if in.Err == nil {
		return
	}
	failed := func(p *proc) string {
		if errors.Is(in.Err, ErrHookEndedWithInstance) {
			return fmt.Sprintf("PreStop hook for process %s did not complete: %v", p.spec.Name, ErrHookEndedWithInstance)
		}
		return fmt.Sprintf("PreStop hook for process %s failed after the grace period: %v", p.spec.Name, in.Err)
	}
	if p != nil { // signalled, or being killed
		g.emit(p, lifecycle.EventWarning, lifecycle.EventFailedPreStopHook, "%s", failed(p))
		return
	}
	for q := range g.procs() { // gone: the event names the instance that ended
		if q.last != nil && q.last.InstanceID == in.Instance {
			g.do(EmitAction{lifecycle.Event{
				Time: g.wallNow(), Type: lifecycle.EventWarning, Reason: lifecycle.EventFailedPreStopHook, Group: g.name,
				Process: q.spec.Name, InstanceID: in.Instance, RestartCount: max(q.starts-1, 0), Request: q.recreateReq,
				Message: failed(q),
			}})
			return
		}
	}
}

func verb(r lifecycle.KillReason) string {
	switch r {
	case lifecycle.KillRestart:
		return "restart"
	case lifecycle.KillShutdown:
		return "shutdown"
	case lifecycle.KillRecreate:
		return "recreate"
	case lifecycle.KillReload:
		return "reload"
	default:
		return "stop"
	}
}

func who(by string) string {
	if by == "" {
		return "an unnamed caller"
	}
	return by
}

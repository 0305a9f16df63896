package core

import (
	"fmt"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// This file is the core's side of the runtime's slow and failing effects:
// starts in flight, tree kills that fail or hang, and what a runtime did on
// its own account (a sandbox rebuilt). The worker runs starts and kills in
// goroutines of their own; the core hears of their outcome as
// inputs and decides, like everything else, on its own deadlines.
//
//	Starting ──── started ────► PostStart or Running
//	   │ stop requested
//	   ▼
//	StartCancelled: the start's ctx is cancelled; the stop runs once
//	                the start returned (started), or the failed start ends it
//
//	Killing (SIGKILL of the tree in flight) ── returned ──► Killed
//	   ▲        fails: FailedKill warning                     │ deadline:
//	   └────────────── retried, the retry doubling ───────────┘ killed + retry
//	   under shutdown, after killAttempts: given up (Unkillable)

// maxKillRetry caps the doubling of the kill retries
// (lifecycle.DefaultKillRetry is the first one's default).
const maxKillRetry = time.Minute

// KillDoneInput is a tree kill effect's outcome. exited: the kill followed
// the instance's exit (X10), and removeErr is then the removal's.
type KillDoneInput struct {
	Process, Instance string
	Exited            bool
	Err, RemoveErr    error
}

// RuntimeEventInput is an event the runtime reports about the group.
type RuntimeEventInput struct{ Event lifecycle.RuntimeEvent }

func (KillDoneInput) isInput()     {}
func (RuntimeEventInput) isInput() {}

// CancelStartAction ends the ctx of an instance's start in flight: a stop
// was requested before it returned.
type CancelStartAction struct{ Instance string }

func (CancelStartAction) isAction() {}

// deferredStop is a stop requested while the instance's start was in
// flight: there is nothing to signal yet. It runs when the start returns.
type deferredStop struct {
	stopRequest
	// escalate: a second stop request came meanwhile (X9).
	escalate bool
}

func isStopRequest(r lifecycle.KillReason) bool {
	return r == lifecycle.KillStop || r == lifecycle.KillShutdown
}

// startInstance asks the worker to start p's instance; it is starting
// until the start's outcome comes back.
func (g *Group) startInstance(p *proc) phase {
	// E1: kubelet's Created comes after the container was created and its
	// internal pre-start step ran, before the start (Started or Failed).
	g.emit(p, lifecycle.EventNormal, lifecycle.EventCreated, "Created process %s", p.spec.Name)
	g.do(StartAction{Process: p.spec.Name, Instance: p.inst.id, Spec: p.spec})
	return phaseStarting
}

// deferStop records a stop for an instance whose start is in flight and
// cancels that start (a sandbox being created need not finish). A stop
// that comes while one is deferred replaces it, keeping grace overrides
// it does not give.
func (g *Group) deferStop(p *proc, ev event) (phase, []event) {
	r := ev.stop
	if d := p.inst.deferred; d != nil {
		d.escalate = d.escalate || (isStopRequest(d.reason) && isStopRequest(r.reason))
		d.reason, d.by, d.restart, d.ordered = r.reason, r.by, r.restart, r.ordered
		if r.override != nil {
			d.override = r.override
		}
		if r.probeGrace != nil {
			d.probeGrace = r.probeGrace
		}
		return phaseStartCancelled, nil
	}
	p.inst.deferred = &deferredStop{stopRequest: r}
	p.inst.decideStop(g.wallNow())
	g.emit(p, lifecycle.EventNormal, lifecycle.EventKilling, "Stopping process %s once its start returns: %s requested by %s", p.spec.Name, verb(r.reason), who(r.by))
	g.do(CancelStartAction{Instance: p.inst.id})
	return phaseStartCancelled, nil
}

// deferredAsStop turns a deferred stop of a start that failed into the
// stop state finish reads (a restart request still restarts).
func (g *Group) deferredAsStop(p *proc) {
	if d := p.inst.deferred; d != nil {
		p.inst.deferred = nil
		p.inst.stop = &stopState{reason: d.reason, by: d.by, restart: d.restart, begun: g.now}
	}
}

// killTree sends SIGKILL to the instance's tree, with a deadline to look
// again; the instance is then in the killing phase.
func (g *Group) killTree(p *proc) phase {
	st := p.inst.stop
	if ph := p.inst.phase; ph != phaseKilling && ph != phaseKilled {
		st.killedAt = g.now
	}
	st.deadline = g.now.Add(g.killRetryAfter(st.kills))
	st.kills++
	g.do(KillTreeAction{Process: p.spec.Name, Instance: p.inst.id})
	return phaseKilling
}

func (g *Group) killRetryAfter(kills int) time.Duration {
	d := g.killRetry
	for i := 1; i < kills && d < maxKillRetry; i++ {
		d *= 2
	}
	return min(d, maxKillRetry)
}

// killStillInFlight is the killing phase's deadline: the SIGKILL has not
// returned yet; look again later.
func (g *Group) killStillInFlight(p *proc, _ event) (phase, []event) {
	st := p.inst.stop
	st.deadline = g.now.Add(g.killRetryAfter(st.kills))
	return phaseKilling, nil
}

// killedDeadline is the killed phase's deadline: the instance outlived its
// SIGKILL. Retry, or under shutdown after killAttempts give up on it, so
// that podsup's shutdown ends.
func (g *Group) killedDeadline(p *proc, _ event) (phase, []event) {
	st := p.inst.stop
	if g.shutdown && st.kills >= g.killAttempts {
		g.abandon(p)
		return phaseGone, nil
	}
	g.emit(p, lifecycle.EventWarning, lifecycle.EventFailedKill, "Process %s is still alive %s after SIGKILL of its tree; killing it again", p.spec.Name, g.now.Sub(st.killedAt).Round(time.Millisecond))
	return g.killTree(p), nil
}

// abandon gives up on an instance whose tree survives SIGKILL (a task
// stuck in the kernel): it is recorded as ended so the group's worker can
// end, and whatever survives stays in its cgroup for the runtime's
// cleanup to try again.
func (g *Group) abandon(p *proc) {
	st := p.inst.stop
	msg := fmt.Sprintf("its tree survived %d SIGKILLs", st.kills)
	g.emit(p, lifecycle.EventWarning, lifecycle.EventFailedKill, "Giving up on process %s: %s; podsup stops without it", p.spec.Name, msg)
	g.finish(p, &lifecycle.Termination{
		InstanceID: p.inst.id, ExitCode: 128 + int(spec.SIGKILL), Signal: spec.SIGKILL,
		Reason: lifecycle.ReasonUnkillable, Message: msg, StartedAt: p.inst.startedAt, FinishedAt: g.now,
	})
}

// killDone hears how a tree kill went. A failure names what survives in a
// Warning event; the retry waits for the killed phase's deadline.
func (g *Group) killDone(in KillDoneInput) {
	if p := g.procByInstance(in.Instance); p != nil && !in.Exited {
		g.fire(p, event{on: onKillDone, err: in.Err})
		return
	}
	p := g.procNamed(in.Process)
	if in.Err != nil {
		g.emitFor(p, in.Process, in.Instance, lifecycle.EventWarning, lifecycle.EventFailedKill, fmt.Sprintf("SIGKILL of what process %s left behind failed: %v", in.Process, in.Err))
	}
	if in.RemoveErr != nil {
		g.emitFor(p, in.Process, in.Instance, lifecycle.EventWarning, lifecycle.EventFailedKill, fmt.Sprintf("Removing instance %s of process %s failed: %v", in.Instance, in.Process, in.RemoveErr))
	}
}

// killDoneAlive: the SIGKILL of a live instance's tree returned. A
// failure is a Warning naming what survives; the next look waits for the
// deadline.
func (g *Group) killDoneAlive(p *proc, ev event) (phase, []event) {
	if ev.err == nil {
		return phaseKilled, nil
	}
	st := p.inst.stop
	retry := g.killRetryAfter(st.kills)
	if g.shutdown && st.kills >= g.killAttempts {
		retry = g.killRetry
	}
	st.deadline = g.now.Add(retry)
	g.emit(p, lifecycle.EventWarning, lifecycle.EventFailedKill, "SIGKILL of process %s's tree did not end it (attempt %d, next look in %s): %v", p.spec.Name, st.kills, retry, ev.err)
	return phaseKilled, nil
}

// procNamed finds a process by name, among those a reload removed too.
func (g *Group) procNamed(name string) *proc {
	if p, ok := g.byName[name]; ok {
		return p
	}
	for _, q := range g.leaving {
		if q.spec.Name == name {
			return q
		}
	}
	return nil
}

// emitFor is an event about a finished instance, which may no longer be
// the process's newest.
func (g *Group) emitFor(p *proc, process, instance string, typ lifecycle.EventType, reason, msg string) {
	e := lifecycle.Event{Time: g.wallNow(), Type: typ, Reason: reason, Group: g.name, Process: process, InstanceID: instance, Message: msg}
	if p != nil {
		e.RestartCount = max(p.starts-1, 0)
		e.Request = p.recreateReq
	}
	g.do(EmitAction{e})
}

// runtimeEvent publishes what the runtime did on its own account.
func (g *Group) runtimeEvent(in RuntimeEventInput) {
	typ := in.Event.Type
	if typ == "" {
		typ = lifecycle.EventNormal
	}
	g.emit(nil, typ, in.Event.Reason, "%s", in.Event.Message)
}

// killAttemptsOrDefault and killRetryOrDefault fill Config's zero
// values.
func killRetryOrDefault(d time.Duration) time.Duration {
	if d <= 0 {
		return lifecycle.DefaultKillRetry
	}
	return d
}

func killAttemptsOrDefault(n int) int {
	if n <= 0 {
		return lifecycle.DefaultKillAttempts
	}
	return n
}

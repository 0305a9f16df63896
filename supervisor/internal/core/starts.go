package core

import (
	"fmt"
	"github.com/podsup/podsup/supervisor/lifecycle"
	"time"
)

// Reconciliation: which processes start now (I1–I3, R1, B6–B8, X3, X7)
// and when the core must be stepped again.

func (g *Group) reconcile() {
	g.runStopDeadlines()
	g.runPendingStops()
	if g.shutdown {
		return
	}
	if g.over() {
		g.stopSidecarsOfEndedGroup() // O4
		return
	}
	g.keepSidecarsRunning() // O3
	g.restartDependents()   // W7
	if !g.mainsRan && g.anyMainWanted() {
		if g.initFailed {
			return
		}
		g.passStartedSidecars()        // O2
		if g.initNext < len(g.inits) { // I1: one at a time, in order
			if p := g.inits[g.initNext]; p.inst == nil && (!p.sidecar || p.want) {
				g.tryStart(p)
			}
			return
		}
	}
	for _, p := range g.mains {
		if p.want && !p.done && p.inst == nil {
			g.tryStart(p)
		}
	}
}

// tryStart is kubelet's doBackOff (B6) with X7's bypass and B8's pre-kill
// check, followed by the start.
func (g *Group) tryStart(p *proc) {
	if !g.gateOpen(p) { // W1–W6
		return
	}
	if t := p.last; t != nil && t.Reason == lifecycle.ReasonDependencyTimeout {
		// W5: the back-off ran before the wait, not again after it.
		g.start(p)
		return
	}
	key := p.spec.Name
	if p.startRequested() {
		g.start(p)
		return
	}
	if b8 := p.b8; p.rest == restProbeKilled {
		g.fireRest(p, restOnB8Checked)
		if b8.ref == nil {
			g.start(p) // B6.1: no finished instance before the kill
			return
		}
		if !g.backoff.IsInBackOffSince(key, b8.ref.FinishedAt, g.now) {
			g.backoff.Next(key, b8.ref.FinishedAt, g.now)
			g.start(p)
			return
		}
		// The kill-sync's start fails; the fresh check below measures from
		// the killed instance's own FinishedAt (B8).
	}
	ref := p.last
	if ref == nil {
		g.start(p) // B6.1, B7: the first start never touches the back-off
		return
	}
	if g.backoff.IsInBackOffSince(key, ref.FinishedAt, g.now) {
		d := g.backoff.Get(key)
		next := ref.FinishedAt.Add(d) // X3: exactly F + back-off
		if !p.nextStart.Equal(next) {
			p.nextStart = next
			g.emit(p, lifecycle.EventWarning, lifecycle.EventBackOff, backOffMessage, p.spec.Name)
		}
		return
	}
	g.backoff.Next(key, ref.FinishedAt, g.now)
	g.start(p)
}

func (g *Group) start(p *proc) {
	p.inst = &instance{
		id:           g.instanceID(p),
		restartCount: p.starts, // R5
		startBy:      g.birth(p),
		startedAt:    g.now,
	}
	p.starts++
	if !p.init {
		g.mainsRan = true // I3
	}
	g.fire(p, event{on: onLaunch}) // pre_start, then the start (X5)
}

// instanceID is the id of p's next instance: unique per supervisor
// (g.idPrefix), per process added by a reload (p.idPrefix), and per start.
func (g *Group) instanceID(p *proc) string {
	return fmt.Sprintf("%s%s%s-%d", g.idPrefix, p.idPrefix, p.spec.Name, p.starts)
}

func (g *Group) nextWake() time.Time {
	var wake time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (wake.IsZero() || t.Before(wake)) {
			wake = t
		}
	}
	for p := range g.procs() {
		if p.inst != nil && p.inst.stop != nil {
			consider(p.inst.stop.deadline) // in the killed phase: the kill's retry
		}
		if p.inst == nil {
			consider(p.nextStart)
			consider(p.waitWake())
		}
	}
	consider(g.rc.wake)
	return wake
}

// backOffMessage is the BackOff event's message. It holds no delay, as
// kubelet's "Back-off restarting failed container %s in pod %s" has none
// (kuberuntime_manager.go, doBackOff): a message that changed with the
// growing delay made each BackOff an event of its own, where identical
// ones fold into one "(x12 over 5m)" (E4); the delay in force is in the
// status (CrashLoopBackOff's back-off and next start).
const backOffMessage = "Back-off restarting failed process %s"

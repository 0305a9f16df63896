package core

import (
	"fmt"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// What the runtime observed: an instance started, failed to start or
// exited; and what follows an instance's end (R1–R5, I2, X11).

// started hears that the runtime started an instance.
func (g *Group) started(in StartedInput) {
	if p := g.procByInstance(in.Instance); p != nil {
		g.fire(p, event{on: onStarted, pid: in.Pid})
	}
}

// recordStart notes a started instance and reports it (Started).
func (g *Group) recordStart(p *proc, pid int) {
	inst := p.inst
	inst.pid = pid
	inst.startedAt, inst.startedWall = g.now, g.wallNow()
	// S3, S4, P4, P5: without a probe the flag is true from the start.
	// A readiness protocol (sd_notify READY=1, a newline on fd N) holds
	// ready back, and started too unless a startup probe decides it.
	inst.readyVerdict = p.spec.ReadinessProbe == nil && p.spec.Readiness == ""
	inst.started = p.spec.StartupProbe == nil && p.spec.Readiness == ""
	inst.ready = inst.started && inst.readyVerdict
	if inst.startBy != "" && p.recreateReq != "" {
		g.emit(p, lifecycle.EventNormal, lifecycle.EventStarted, "Started process %s (recreate %s requested by %s)", p.spec.Name, p.recreateReq, inst.startBy)
	} else if inst.startBy != "" {
		g.emit(p, lifecycle.EventNormal, lifecycle.EventStarted, "Started process %s (requested by %s)", p.spec.Name, inst.startBy)
	} else {
		g.emit(p, lifecycle.EventNormal, lifecycle.EventStarted, "Started process %s", p.spec.Name)
	}
}

// startedRunning: the process runs; post_start holds it back from
// running when there is one (H1).
func (g *Group) startedRunning(p *proc, ev event) (phase, []event) {
	g.recordStart(p, ev.pid)
	if p.spec.PostStart != nil {
		return g.beginPostStart(p), nil
	}
	return phaseRunning, nil
}

// startedStopping: the process runs, but a stop came while its start was
// in flight. The stop runs now, without post_start; a second stop request
// meanwhile makes it SIGKILL at once (X9).
func (g *Group) startedStopping(p *proc, ev event) (phase, []event) {
	g.recordStart(p, ev.pid)
	d := p.inst.deferred
	p.inst.deferred = nil
	then := []event{{on: onStop, stop: d.stopRequest}}
	if d.escalate {
		then = append(then, event{on: onEscalate, by: d.by})
	}
	return phaseRunning, then
}

// startFailed hears that the runtime could not start an instance.
func (g *Group) startFailed(in StartFailedInput) {
	if p := g.procByInstance(in.Instance); p != nil {
		g.fire(p, event{on: onStartFailed, err: in.Err, code: in.Code})
	}
}

// startFailedEnd records a failed start as a finished instance: restart
// policy and back-off apply as for a crash; a stop requested meanwhile
// is what ended it.
func (g *Group) startFailedEnd(p *proc, ev event) (phase, []event) {
	g.emit(p, lifecycle.EventWarning, lifecycle.EventFailed, "Error: %v", ev.err)
	g.deferredAsStop(p)
	term := &lifecycle.Termination{
		InstanceID: p.inst.id, ExitCode: ev.code, Reason: lifecycle.ReasonStartError,
		Message: ev.err.Error(), FinishedAt: g.now,
	}
	g.finish(p, term)
	return phaseGone, nil
}

// exited hears that an instance's process exited.
func (g *Group) exited(in ExitedInput) {
	if p := g.procByInstance(in.Instance); p != nil {
		g.fire(p, event{on: onExited, exit: in.Status, at: in.At})
	}
}

// exitedEnd records the exit, has what the instance left behind killed
// (X10) and post_stop run (X5), and decides what follows.
func (g *Group) exitedEnd(p *proc, ev event) (phase, []event) {
	in := ExitedInput{Status: ev.exit, At: ev.at}
	term := &lifecycle.Termination{
		InstanceID: p.inst.id, ExitCode: in.Status.Code, Signal: in.Status.Signal,
		Reason: exitReason(in.Status), StartedAt: p.inst.startedAt, FinishedAt: in.At,
	}
	if g.stoppedOnRequest(p, term) {
		term.Reason = lifecycle.ReasonStopped // X13: a requested stop is no failure
	}
	// X10: whatever the instance left behind dies with it; then the
	// worker removes the instance.
	g.do(KillTreeAction{Process: p.spec.Name, Instance: p.inst.id, Exited: true})
	g.requestPostStop(p) // X5
	// E2: the exit is no event; it is the status's (Terminated, then
	// LastTermination), as kubelet shows it in State and Last State.
	if term.Signal != 0 {
		term.Message = fmt.Sprintf("killed by %s", spec.SignalName(term.Signal))
	}
	g.finish(p, term)
	return phaseGone, nil
}

func exitReason(s lifecycle.ExitStatus) string {
	switch {
	case s.OOMKilled:
		return lifecycle.ReasonOOMKilled
	case s.Code == 0:
		return lifecycle.ReasonCompleted
	default:
		return lifecycle.ReasonError
	}
}

// stoppedOnRequest is X13: the instance ended in a stop that someone
// asked for or that podsup decided on without a fault (stop, restart,
// shutdown, reload, recreate, a completed group's sidecars), whatever its
// exit code. A probe kill and a failed post_start are faults and keep
// kubelet's reasons (R4, H2); so does an OOM kill (the kernel's verdict),
// and a plain init that exited 0, which counts as completed (I3).
func (g *Group) stoppedOnRequest(p *proc, term *lifecycle.Termination) bool {
	st := p.inst.stop
	if st == nil || probeKill(st.reason) || st.reason == lifecycle.KillPostStartHook {
		return false
	}
	if term.Reason == lifecycle.ReasonOOMKilled {
		return false
	}
	return !(p.init && !p.sidecar && term.ExitCode == 0)
}

// finish records an instance's end and decides what follows it.
func (g *Group) finish(p *proc, term *lifecycle.Termination) {
	st := p.inst.stop
	p.inst = nil
	p.prev, p.last = p.last, term
	if term.Reason == lifecycle.ReasonOOMKilled {
		p.oomKills++
	}
	switch {
	case p.init && !p.sidecar && term.ExitCode == 0:
		g.initSucceeded(p) // a sidecar never completes: O3
	case st != nil && st.restart && probeKill(st.reason):
		g.probeKilled(p, st.preKill) // R4: decided before the kill
	case st != nil && st.restart:
		g.requestStart(p, st.by) // X7: not a crash
	case st != nil && probeKill(st.reason):
		g.endForGood(p, term) // R4 under Never
	case st != nil && st.reason == lifecycle.KillPostStartHook:
		g.naturalEnd(p, term) // H2: policy and back-off as for any exit
	case st != nil:
		// Stopped on request: not wanted, not ended for good.
	default:
		g.naturalEnd(p, term)
	}
}

func (g *Group) initSucceeded(p *proc) {
	p.done = true
	if i := g.indexOfInit(p); i == g.initNext {
		g.initNext++
	}
}

// naturalEnd is R1/R2 for an instance that ended on its own.
func (g *Group) naturalEnd(p *proc, term *lifecycle.Termination) {
	if g.shutdown {
		return
	}
	limited := g.spec.BackoffLimit != nil && term.ExitCode != 0 && !p.sidecar
	if p.init {
		if (limited && g.overBackoffLimit(p, term)) || (!limited && p.policy == spec.RestartNever) { // R7, I2
			g.initFailed = true
			g.endForGood(p, term)
		}
		return // I2: otherwise retried with back-off, in reconcile
	}
	if !p.want {
		return
	}
	if limited {
		if !g.overBackoffLimit(p, term) {
			return // R7: retried, under never too (the Job's new pod)
		}
	} else if shouldRestart(p.policy, term.ExitCode) {
		return // reconcile starts it, subject to back-off
	}
	g.endForGood(p, term)
}

// overBackoffLimit is R7: under the group's backoff_limit, a failure (a
// non-zero exit) of a process or plain init is counted over the whole
// group, as the Job controller counts a Job's failed pods; the failure
// that passes the limit, and every one after it, is not restarted, and
// the first says so (BackoffLimitExceeded, the Job condition's reason).
func (g *Group) overBackoffLimit(p *proc, term *lifecycle.Termination) bool {
	limit := g.spec.BackoffLimit
	if g.gaveUp {
		return true
	}
	g.failures++
	if g.failures <= *limit {
		return false
	}
	g.gaveUp = true
	g.emit(p, lifecycle.EventWarning, lifecycle.EventBackoffLimitExceeded, "Process %s failed (exit code %d): the group has failed %d times, more than its backoff_limit %d: no failed process is restarted", p.spec.Name, term.ExitCode, g.failures, *limit)
	return true
}

// shouldRestart is R1/R2: the exit code alone decides.
func shouldRestart(policy spec.RestartPolicy, exitCode int) bool {
	switch policy {
	case spec.RestartNever:
		return false
	case spec.RestartOnFailure:
		return exitCode != 0
	default:
		return true
	}
}

func (g *Group) endForGood(p *proc, term *lifecycle.Termination) {
	p.done = true
	if p.spec.Critical {
		g.emit(p, lifecycle.EventWarning, lifecycle.EventCriticalExit, "Critical process %s ended for good with exit code %d: stopping everything", p.spec.Name, term.ExitCode)
		g.do(CriticalAction{Process: p.spec.Name, Code: term.ExitCode})
	}
}

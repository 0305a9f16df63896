package core

import (
	"fmt"
	"github.com/podsup/podsup/supervisor/lifecycle"
	"slices"
	"time"
)

// An instance's life is one phase, and every change of phase is a
// transition of the table below: (phase, trigger) → the phases the
// instance may be in afterwards, and the handler that carries the
// transition out (its actions: start, signal, kill, hooks, events). A
// trigger a phase does not expect is ignored, explicitly, in the table;
// a handler that leaves the instance in a phase its row does not list is
// a bug, reported as an InternalError event (never a panic: podsup may be
// PID 1). The model is s6-supervise's state × event table.
//
//	PreStart ── pre_start ok ──► Starting ── started ──► PostStart ── post_start ok ──► Running
//	   │ pre_start failed,         │ stop      (without post_start: straight to Running) │
//	   │ or stop                   ▼                                                    │ stop, probe kill
//	   ▼                     StartCancelled ── started: the deferred stop runs ──┐      │ (or post_start
//	 (gone)                        │ start failed ──► (gone)                     ▼      ▼  failed)
//	                                                         PreStop ── pre_stop done ──► Signalled
//	                                                            │ second stop             │ grace over,
//	                                                            └─────────► Killing ◄─────┘ second stop
//	                                                   SIGKILL returned │   ▲ deadline: again
//	                                                                    ▼   │
//	                                                                  Killed ── shutdown, attempts spent ──► (gone)
//	from PostStart on, in every phase: exited ──► (gone)
//
// A sidecar stopped with its group (O6) waits between PreStop (or the
// stop's beginning, without pre_stop) and Signalled in AwaitTurn: its
// turn ──► Signalled, a second stop ──► Killing, exited ──► (gone).
//
// An instance is born in New and launched at once through the table:
// New ── launch ──► PreStart (with a pre_start hook) or Starting.
//
// A handler does not write the phase: it returns the phase it leaves
// the instance in, and fire, the one writer of a phase, sets it; a
// handler whose work goes on in another cell (a stop deferred during the
// start, a stop a failed post_start or a probe decides) returns the
// triggers that follow, which fire runs through the table in turn.

// phase is where an instance stands in its life.
type phase uint8

const (
	// phaseNew: the core has just made the instance; its launch
	// transition follows in the same step.
	phaseNew phase = iota
	// phasePreStart: the pre_start hook runs; no process exists yet (X5).
	phasePreStart
	// phaseStarting: the runtime's start is in flight (the worker runs it
	// in a goroutine of its own).
	phaseStarting
	// phaseStartCancelled: a stop came while the start was in flight; the
	// start's context is cancelled and the stop runs once it returns.
	phaseStartCancelled
	// phasePostStart: the process runs and so does its post_start hook
	// (H1): it is neither running nor started, and not probed.
	phasePostStart
	// phaseRunning: running, probed, counted for readiness.
	phaseRunning
	// phasePreStop: stopping; the pre_stop hook runs within the grace (K3).
	phasePreStop
	// phaseAwaitTurn: stopping; a sidecar waits for its turn to get the
	// stop signal (the main processes and the later sidecars gone: O6),
	// at most until the deadline, with the wait charged to its grace (K4).
	phaseAwaitTurn
	// phaseSignalled: stopping; the stop signal was sent, SIGKILL follows
	// at the deadline (K5, K6).
	phaseSignalled
	// phaseKilling: stopping; a SIGKILL of the tree is in flight (X10).
	phaseKilling
	// phaseKilled: stopping; the SIGKILL returned but the instance has not
	// exited (yet): the deadline is when to look again.
	phaseKilled

	numPhases
	// phaseGone is no phase of a live instance: as a transition's outcome
	// it says the instance ended (its process no longer has it).
	phaseGone = numPhases
)

var phaseNames = [...]string{
	phaseNew: "New", phasePreStart: "PreStart", phaseStarting: "Starting", phaseStartCancelled: "StartCancelled",
	phasePostStart: "PostStart", phaseRunning: "Running", phasePreStop: "PreStop", phaseAwaitTurn: "AwaitTurn",
	phaseSignalled: "Signalled", phaseKilling: "Killing", phaseKilled: "Killed", phaseGone: "gone",
}

func (p phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", p)
}

// stopping reports the phases of a termination in progress: those with a
// stopState.
func (p phase) stopping() bool { return p >= phasePreStop && p <= phaseKilled }

// trigger is what happens to an instance.
type trigger uint8

const (
	onLaunch          trigger = iota // the core made the instance: its pre_start, or its start
	onPreStartDone                   // pre_start returned 0
	onPreStartFailed                 // pre_start failed or timed out
	onStarted                        // the runtime started the process
	onStartFailed                    // the runtime could not start it
	onPostStartDone                  // post_start returned 0
	onPostStartFailed                // post_start failed
	onStop                           // a stop begins: request, restart, probe kill, reload, recreate, post_start failure
	onEscalate                       // a second stop request: SIGKILL now (X9)
	onPreStopDone                    // pre_stop returned, or its budget ran out (K3)
	onGraceExpired                   // the grace after the stop signal is over (K6)
	onKillDone                       // a SIGKILL of the tree returned
	onKillDeadline                   // the instance outlived its SIGKILL for the retry interval
	onExited                         // the process exited
	onProbeResult                    // a probe result changed (P6)
	onProbeReport                    // a probe failed once (an Unhealthy event)
	onTurn                           // a sidecar's turn to get the stop signal came, or its wait used up its grace (O6)

	numTriggers
)

var triggerNames = [...]string{
	onLaunch: "launch", onPreStartDone: "pre_start done", onPreStartFailed: "pre_start failed", onStarted: "started",
	onStartFailed: "start failed", onPostStartDone: "post_start done", onPostStartFailed: "post_start failed",
	onStop: "stop", onEscalate: "escalate", onPreStopDone: "pre_stop done", onGraceExpired: "grace expired",
	onKillDone: "kill done", onKillDeadline: "kill deadline", onExited: "exited",
	onProbeResult: "probe result", onProbeReport: "probe report", onTurn: "turn",
}

func (t trigger) String() string {
	if int(t) < len(triggerNames) {
		return triggerNames[t]
	}
	return fmt.Sprintf("trigger(%d)", t)
}

// event is a trigger with what its handler needs to know.
type event struct {
	on trigger
	// err is a hook's, a start's or a kill's failure.
	err error
	// pid is the started process's (onStarted); code the exit code a
	// failed start is recorded with (onStartFailed).
	pid, code int
	// exit and at are the exit's status and FinishedAt (onExited).
	exit lifecycle.ExitStatus
	at   time.Time
	// stop is the stop that begins (onStop).
	stop stopRequest
	// by is who sent the second stop request (onEscalate).
	by string
	// probe is the probe's news (onProbeResult, onProbeReport).
	probe ProbeInput
}

// transition is one cell of the table: the handler that carries the
// trigger out and the phases the instance may be in after it ran
// (phaseGone: it ended), or ignored. A zero cell is a pair the table
// forgot: fire reports it, and TestTransitionTableIsComplete fails.
type transition struct {
	to      []phase
	do      handler
	ignored bool
}

// handler carries out one transition: its actions, and the phase it
// leaves the instance in (phaseGone when the instance ended), with the
// triggers that follow at once (nil for most).
type handler func(g *Group, p *proc, ev event) (phase, []event)

// ignore is the cell of a trigger that means nothing in a phase: a late
// hook result, a probe result for an instance that is not running, a
// stop of an instance already stopping (its caller amends the stop
// instead), or something that cannot happen there (an exit before the
// start returned: the worker orders them).
var ignore = transition{ignored: true}

func to(next ...phase) []phase { return next }

// transitions is an instance's whole life: every (phase, trigger) pair.
var transitions [numPhases][numTriggers]transition

// The table is filled in init: its handlers fire transitions themselves,
// which a package-level initializer may not refer back to.
func init() {
	transitions = [numPhases][numTriggers]transition{
		phaseNew: {
			onLaunch:       {to: to(phasePreStart, phaseStarting), do: (*Group).launch},
			onPreStartDone: ignore, onPreStartFailed: ignore,
			onStarted: ignore, onStartFailed: ignore,
			onPostStartDone: ignore, onPostStartFailed: ignore,
			onStop: ignore, onEscalate: ignore, onPreStopDone: ignore, onGraceExpired: ignore,
			onKillDone: ignore, onKillDeadline: ignore, onExited: ignore,
			onProbeResult: ignore, onProbeReport: ignore, onTurn: ignore,
		},
		phasePreStart: {
			onLaunch:         ignore,
			onPreStartDone:   {to: to(phaseStarting), do: (*Group).preStartSucceeded},
			onPreStartFailed: {to: to(phaseGone), do: (*Group).preStartFailed},
			onStarted:        ignore, onStartFailed: ignore,
			onPostStartDone: ignore, onPostStartFailed: ignore,
			onStop:     {to: to(phaseGone), do: (*Group).abortPreStart},
			onEscalate: ignore, onPreStopDone: ignore, onGraceExpired: ignore,
			onKillDone: ignore, onKillDeadline: ignore, onExited: ignore,
			onProbeResult: ignore, onProbeReport: ignore, onTurn: ignore,
		},
		phaseStarting: {
			onLaunch:       ignore,
			onPreStartDone: ignore, onPreStartFailed: ignore,
			onStarted:       {to: to(phasePostStart, phaseRunning), do: (*Group).startedRunning},
			onStartFailed:   {to: to(phaseGone), do: (*Group).startFailedEnd},
			onPostStartDone: ignore, onPostStartFailed: ignore,
			onStop:     {to: to(phaseStartCancelled), do: (*Group).deferStop},
			onEscalate: ignore, onPreStopDone: ignore, onGraceExpired: ignore,
			onKillDone: ignore, onKillDeadline: ignore, onExited: ignore,
			onProbeResult: ignore, onProbeReport: ignore, onTurn: ignore,
		},
		phaseStartCancelled: {
			onLaunch:       ignore,
			onPreStartDone: ignore, onPreStartFailed: ignore,
			onStarted:       {to: to(phasePreStop, phaseAwaitTurn, phaseSignalled, phaseKilling), do: (*Group).startedStopping},
			onStartFailed:   {to: to(phaseGone), do: (*Group).startFailedEnd},
			onPostStartDone: ignore, onPostStartFailed: ignore,
			onStop:     {to: to(phaseStartCancelled), do: (*Group).deferStop},
			onEscalate: ignore, onPreStopDone: ignore, onGraceExpired: ignore,
			onKillDone: ignore, onKillDeadline: ignore, onExited: ignore,
			onProbeResult: ignore, onProbeReport: ignore, onTurn: ignore,
		},
		phasePostStart: {
			onLaunch:       ignore,
			onPreStartDone: ignore, onPreStartFailed: ignore, onStarted: ignore, onStartFailed: ignore,
			onPostStartDone:   {to: to(phaseRunning), do: (*Group).postStartSucceeded},
			onPostStartFailed: {to: to(phasePreStop, phaseSignalled), do: (*Group).postStartFailed},
			onStop:            {to: to(phasePreStop, phaseAwaitTurn, phaseSignalled), do: (*Group).stopBegin},
			onEscalate:        ignore, onPreStopDone: ignore, onGraceExpired: ignore,
			onKillDone: ignore, onKillDeadline: ignore,
			onExited:      {to: to(phaseGone), do: (*Group).exitedEnd},
			onProbeResult: ignore, onProbeReport: ignore, onTurn: ignore,
		},
		phaseRunning: {
			onLaunch:       ignore,
			onPreStartDone: ignore, onPreStartFailed: ignore, onStarted: ignore, onStartFailed: ignore,
			onPostStartDone: ignore, onPostStartFailed: ignore,
			onStop:     {to: to(phasePreStop, phaseAwaitTurn, phaseSignalled), do: (*Group).stopBegin},
			onEscalate: ignore, onPreStopDone: ignore, onGraceExpired: ignore,
			onKillDone: ignore, onKillDeadline: ignore,
			onExited:      {to: to(phaseGone), do: (*Group).exitedEnd},
			onProbeResult: {to: to(phaseRunning, phasePreStop, phaseSignalled), do: (*Group).probeReact},
			onProbeReport: {to: to(phaseRunning), do: (*Group).probeUnhealthy},
			onTurn:        ignore,
		},
		phasePreStop: {
			onLaunch:       ignore,
			onPreStartDone: ignore, onPreStartFailed: ignore, onStarted: ignore, onStartFailed: ignore,
			onPostStartDone: ignore, onPostStartFailed: ignore, onStop: ignore,
			onEscalate:     {to: to(phaseKilling), do: (*Group).escalate},
			onPreStopDone:  {to: to(phaseAwaitTurn, phaseSignalled), do: (*Group).endPreStop},
			onGraceExpired: ignore, onKillDone: ignore, onKillDeadline: ignore,
			onExited:      {to: to(phaseGone), do: (*Group).exitedEnd},
			onProbeResult: ignore, onProbeReport: ignore, onTurn: ignore,
		},
		phaseSignalled: {
			onLaunch:       ignore,
			onPreStartDone: ignore, onPreStartFailed: ignore, onStarted: ignore, onStartFailed: ignore,
			onPostStartDone: ignore, onPostStartFailed: ignore, onStop: ignore,
			onEscalate:     {to: to(phaseKilling), do: (*Group).escalate},
			onPreStopDone:  ignore,
			onGraceExpired: {to: to(phaseKilling), do: (*Group).graceExpired},
			onKillDone:     ignore, onKillDeadline: ignore,
			onExited:      {to: to(phaseGone), do: (*Group).exitedEnd},
			onProbeResult: ignore, onProbeReport: ignore, onTurn: ignore,
		},
		phaseKilling: {
			onLaunch:       ignore,
			onPreStartDone: ignore, onPreStartFailed: ignore, onStarted: ignore, onStartFailed: ignore,
			onPostStartDone: ignore, onPostStartFailed: ignore, onStop: ignore,
			onEscalate: ignore, onPreStopDone: ignore, onGraceExpired: ignore,
			onKillDone:     {to: to(phaseKilled), do: (*Group).killDoneAlive},
			onKillDeadline: {to: to(phaseKilling), do: (*Group).killStillInFlight},
			onExited:       {to: to(phaseGone), do: (*Group).exitedEnd},
			onProbeResult:  ignore, onProbeReport: ignore, onTurn: ignore,
		},
		phaseKilled: {
			onLaunch:       ignore,
			onPreStartDone: ignore, onPreStartFailed: ignore, onStarted: ignore, onStartFailed: ignore,
			onPostStartDone: ignore, onPostStartFailed: ignore, onStop: ignore,
			onEscalate: ignore, onPreStopDone: ignore, onGraceExpired: ignore, onKillDone: ignore,
			onKillDeadline: {to: to(phaseKilling, phaseGone), do: (*Group).killedDeadline},
			onExited:       {to: to(phaseGone), do: (*Group).exitedEnd},
			onProbeResult:  ignore, onProbeReport: ignore, onTurn: ignore,
		},
		phaseAwaitTurn: {
			onLaunch:       ignore,
			onPreStartDone: ignore, onPreStartFailed: ignore, onStarted: ignore, onStartFailed: ignore,
			onPostStartDone: ignore, onPostStartFailed: ignore, onStop: ignore,
			onEscalate:    {to: to(phaseKilling), do: (*Group).escalate},
			onPreStopDone: ignore, onGraceExpired: ignore, onKillDone: ignore, onKillDeadline: ignore,
			onExited:      {to: to(phaseGone), do: (*Group).exitedEnd},
			onProbeResult: ignore, onProbeReport: ignore,
			onTurn: {to: to(phaseSignalled), do: (*Group).takeTurn},
		},
	}
}

// fire is the one way an instance's phase changes, and the one writer of
// it: the table's handler for (phase, trigger) runs, the phase it returns
// must be one the table lists, and the triggers it hands on are fired in
// turn (the outcome checked against this cell is where they leave it).
func (g *Group) fire(p *proc, ev event) {
	inst := p.inst
	if inst == nil {
		return
	}
	from := inst.phase
	t := transitions[from][ev.on]
	if t.ignored {
		return
	}
	if t.do == nil {
		g.emit(p, lifecycle.EventWarning, lifecycle.EventInternalError, "Instance %s of process %s is %s and its transition table has no cell for %s", inst.id, p.spec.Name, from, ev.on)
		return
	}
	next, then := t.do(g, p, ev)
	if p.inst == inst && next != phaseGone {
		inst.phase = next
	}
	for _, e := range then {
		if p.inst != inst {
			break
		}
		g.fire(p, e)
	}
	got := phaseGone
	if p.inst == inst {
		got = inst.phase
	}
	if !slices.Contains(t.to, got) || (len(then) == 0 && got != next) {
		g.emit(p, lifecycle.EventWarning, lifecycle.EventInternalError, "Instance %s of process %s went from %s to %s on %s, which its transition table does not allow", inst.id, p.spec.Name, from, got, ev.on)
	}
}

// instance is one started process.
type instance struct {
	id           string
	restartCount int
	startBy      string
	pid          int
	startedAt    time.Time
	phase        phase
	// ready and started are the probes' verdicts on a running instance
	// (P4, P5, S3, S4): conditions of the Running phase, not phases.
	// ready is readiness's own verdict (readyVerdict: the readiness probe
	// or protocol, true without either) held back until started (S3).
	ready, started bool
	readyVerdict   bool
	// stop is the termination in progress in the stopping phases.
	stop *stopState
	// deferred is the stop requested while the start was in flight
	// (phaseStartCancelled).
	deferred *deferredStop

	// startedWall is startedAt on the wall clock, for display (C9).
	startedWall time.Time
	// stopDecidedWall is when the first stop of the instance was decided
	// (deferred or begun), on the wall clock: Terminating's Since (S6).
	stopDecidedWall time.Time
	// statusText is the instance's own status line (sd_notify STATUS=).
	statusText string
}

// running reports an instance shown as running: released into Running,
// and still so while a stop that began there is under way. An instance
// stopped during its post_start never showed as running (H1).
func (i *instance) running() bool {
	return i.phase == phaseRunning || (i.phase.stopping() && i.stop.shown)
}

// decideStop notes when the instance's first stop was decided (S6); a
// later stop of the same instance (a restart that becomes a stop) keeps
// it.
func (i *instance) decideStop(at time.Time) {
	if i.stopDecidedWall.IsZero() {
		i.stopDecidedWall = at
	}
}

// starting reports a start in flight, cancelled or not.
func (i *instance) starting() bool {
	return i.phase == phaseStarting || i.phase == phaseStartCancelled
}

// stopRequest is what a stop is about: why (K1's reason), who asked, the
// grace overrides (K2, K1.2), and whether a new instance follows.
type stopRequest struct {
	reason               lifecycle.KillReason
	override, probeGrace *time.Duration
	by                   string
	restart              bool
	// ordered: a sidecar stopped with its group, which gets its stop
	// signal only in its turn (O6).
	ordered bool
}

// stopState is a termination in progress (K1–K6).
type stopState struct {
	reason lifecycle.KillReason
	by     string
	// grace is K1/K2's choice, before K3's charge.
	grace time.Duration
	begun time.Time
	// deadline ends the current phase: pre_stop's budget, SIGKILL, or in
	// the killing phases when to look again.
	deadline time.Time
	// restart starts a new instance after the exit.
	restart bool
	// preKill is the newest finished instance when a probe kill began (B8).
	preKill *lifecycle.Termination
	// kills counts the SIGKILLs of the tree sent.
	kills int
	// killedAt is when the first SIGKILL of the tree was sent.
	killedAt time.Time
	// shown: the instance showed as running when the stop began.
	shown bool
	// ordered: the stop signal waits for the instance's turn (O6);
	// turnFrom is when the wait began and turnGrace the grace left then.
	ordered   bool
	turnFrom  time.Time
	turnGrace time.Duration
}

package core

import (
	"fmt"
	"time"

	"github.com/podsup/podsup/spec"
)

// This file is the group's state machine: the declarative core. It is
// deterministic and does no I/O. The worker feeds it inputs (values) with
// the current time; it returns a plan: the actions to carry out, in order,
// and the next time it wants to be woken (the kubelet's computePodActions
// and SyncPod, folded into one step: observe the input, then reconcile
// desired against observed state).
//
//	            command / exit / timer / probe result / hook done
//	                               │
//	                               ▼
//	        ┌──────────── groupCore.step(now, input) ────────────┐
//	        │ observe: record the exit, the request, the result  │
//	        │ reconcile: stop deadlines (K3, K5, K6), init order │
//	        │   (I1–I3), restart policy (R1–R5), back-off (B6)   │
//	        └──────────────────────┬──────────────────────────────┘
//	                               ▼
//	          plan{actions: start / signal / kill tree / pre_stop /
//	                        emit event / critical exit, wake: time}
//
// A process's life inside the core:
//
//	            start                     exit
//	waiting ───────────► running ───────────────────► terminated
//	  ▲                    │ stop request, probe kill     │
//	  │                    ▼                              │ policy says restart
//	  │              stopping: pre_stop → signalled →     │
//	  │                        killed ──── exit ──────────┤
//	  └───── CrashLoopBackOff (timer at F + back-off) ◄───┘

// Input is everything that can happen to a group.
type Input interface{ isInput() }

type CommandKind int

const (
	CmdStart CommandKind = iota + 1
	CmdStop
	CmdRestart
	CmdShutdown
)

func (k CommandKind) String() string {
	switch k {
	case CmdStart:
		return "start"
	case CmdStop:
		return "stop"
	case CmdRestart:
		return "restart"
	case CmdShutdown:
		return "shutdown"
	}
	return "unknown"
}

// CommandInput is a request from a user (X7) or from podsup itself (X9).
type CommandInput struct {
	Kind CommandKind
	// Process is "" for the whole group.
	Process string
	// Grace overrides K1 (K2).
	Grace *time.Duration
	// By says who asked, for events (X7).
	By string
}

type StartedInput struct {
	Instance string
	Pid      int
}

// startFailedInput is a start that failed before the program ran; code
// is the exit code the failure is recorded with (StartError.Code).
type StartFailedInput struct {
	Instance string
	Err      error
	Code     int
}

type ExitedInput struct {
	Instance string
	Status   ExitStatus
	// at is the instance's FinishedAt, read from the supervisor's clock.
	At time.Time
}

// timerInput is the wake-up the last plan asked for. It carries nothing:
// the core re-evaluates every deadline against now, so an early or stale
// timer never makes anything happen early.
type TimerInput struct{}

// preStopDoneInput reports that an instance's pre_stop hook returned.
type PreStopDoneInput struct {
	Instance string
	Err      error
}

// probeInput is a probe result that changed (P6: results publish only on
// change). The probes issue sends these.
type ProbeInput struct {
	Instance string
	Probe    spec.ProbeKind
	Success  bool
	Message  string
	// reported: each failed probe already had its Unhealthy event
	// (probeReportInput), so the threshold crossing adds none.
	Reported bool
}

func (CommandInput) isInput()     {}
func (StartedInput) isInput()     {}
func (StartFailedInput) isInput() {}
func (ExitedInput) isInput()      {}
func (TimerInput) isInput()       {}
func (PreStopDoneInput) isInput() {}
func (ProbeInput) isInput()       {}

// action is one thing the executor must do.
type Action interface{ isAction() }

type StartAction struct {
	Process  string
	Instance string
	Spec     spec.Process
}

// signalAction sends the stop signal to the main process (K6).
type SignalAction struct {
	Process, Instance string
	Sig               spec.Signal
}

// killTreeAction SIGKILLs everything the instance has (X10): after the
// grace, on escalation, and after every exit to remove leftovers. Its
// outcome comes back as killDoneInput. exited: the instance has exited;
// once its tree is dead the worker removes it.
type KillTreeAction struct {
	Process, Instance string
	Exited            bool
}

// preStopAction runs the pre_stop hook with a time budget (K3).
type PreStopAction struct {
	Process, Instance string
	Budget            time.Duration
}

type EmitAction struct{ Event Event }

// criticalAction: a critical process ended for good (X11).
type CriticalAction struct {
	Process string
	Code    int
}

// releaseAction: a process a reload removed is gone for good; the runtime
// may drop what it kept for it (Runtime.ReleaseProcess).
type ReleaseAction struct{ Process string }

func (ReleaseAction) isAction()  {}
func (StartAction) isAction()    {}
func (SignalAction) isAction()   {}
func (KillTreeAction) isAction() {}
func (PreStopAction) isAction()  {}
func (EmitAction) isAction()     {}
func (CriticalAction) isAction() {}

// plan is what one step decided.
type Plan struct {
	Actions []Action
	// wake is when the core must be stepped again; zero means never.
	Wake time.Time
}

// coreConfig is what a groupCore is built from.
type Config struct {
	Group        spec.Group
	Backoff      spec.Backoff
	MinimumGrace time.Duration
	// idPrefix makes instance ids unique across cores of the same group
	// (a group replaced by a reload starts a new core).
	IDPrefix string
	// killRetry is how long after a SIGKILL of the tree the core looks
	// again (doubling per attempt); killAttempts is how many SIGKILLs a
	// shutdown tries before it gives up on an instance (faults.go).
	KillRetry    time.Duration
	KillAttempts int
}

// groupCore is one group's whole state. Only its worker touches it.
type Group struct {
	name     string
	spec     spec.Group
	grace    time.Duration
	minGrace time.Duration
	idPrefix string
	// killRetry and killAttempts: see coreConfig.
	killRetry    time.Duration
	killAttempts int
	backoff      *Backoff
	inits        []*proc
	mains        []*proc
	byName       map[string]*proc

	// initNext is the index of the next init process to complete (I1).
	initNext int
	// mainsRan is I3: once a main process started, inits never run again.
	mainsRan bool
	// initFailed is I2 under Never: the group failed.
	initFailed bool
	// shutdown is X9: podsup is stopping; nothing starts again.
	shutdown bool

	// rc is the group's recreate requests (recreate_core.go).
	rc recreateQueue
	// wall, when set, stamps display times (events, recreate status)
	// instead of now; tests use it to skew the wall clock (C9).
	wall func() time.Time
	// leaving holds processes a reload removed until their instance is
	// gone; reloads counts process-level reloads (reload.go).
	leaving []*proc
	reloads int

	// now and out are the step in progress.
	now time.Time
	out *Plan
}

// proc is one process (or init) of the group across its instances.
type proc struct {
	spec   spec.Process
	init   bool
	policy spec.RestartPolicy
	// want says the process should be running (mains only; inits follow
	// the group).
	want bool
	// done: ended for good; the policy does not restart it.
	done bool
	// inst is the live instance, nil between instances.
	inst *instance
	// last and prev are the newest and the previous finished instances.
	last, prev *Termination
	// starts counts instances (R5: restart count = starts − 1).
	starts int
	// nextStart is set while waiting in CrashLoopBackOff (X3).
	nextStart time.Time
	// startNow makes the next start skip the back-off check and Next:
	// an explicit start or restart (X7).
	startNow bool
	startBy  string
	// b8 is set after a probe kill that restarts: the start's back-off
	// check uses the status from before the kill (B8).
	b8 *b8Check
	// recreateReq is the recreate request replacing this process, whose
	// id tags its events meanwhile.
	recreateReq string
	// nextSpec is a reload's new spec, taken once the old instance is
	// gone; idPrefix keeps instance ids unique for processes added by a
	// reload (reload.go).
	nextSpec *spec.Process
	idPrefix string
}

type b8Check struct {
	// ref is the newest finished instance before the kill; nil when there
	// was none (then the start is immediate and skips Next, B6.1).
	ref *Termination
}

// instance is one started process.
type instance struct {
	id           string
	restartCount int
	startBy      string
	pid          int
	startedAt    time.Time
	running      bool
	ready        bool
	started      bool
	stop         *stopState
	hooks        instHooks
	// starting: the start is in flight (the worker runs it in a goroutine
	// of its own); deferred is a stop requested meanwhile (faults.go).
	starting bool
	deferred *deferredStop

	// startedWall is startedAt on the wall clock, for display (C9).
	startedWall time.Time
	// statusText is the instance's own status line (sd_notify STATUS=).
	statusText string
}

type stopPhase int

const (
	stopPreStop stopPhase = iota + 1
	stopSignalled
	stopKilled
)

// stopState is a termination in progress (K1–K6).
type stopState struct {
	reason KillReason
	by     string
	// grace is K1/K2's choice, before K3's charge.
	grace time.Duration
	phase stopPhase
	begun time.Time
	// deadline ends the current phase: pre_stop's budget, or SIGKILL.
	deadline time.Time
	// restart starts a new instance after the exit.
	restart bool
	// preKill is the newest finished instance when a probe kill began (B8).
	preKill *Termination
	// kills counts the SIGKILLs of the tree sent; killing is set while one
	// is in flight. In the killed phase, deadline is when to look again.
	kills   int
	killing bool
	// killedAt is when the first SIGKILL of the tree was sent.
	killedAt time.Time
}

func NewGroup(c Config) *Group {
	g := &Group{
		name:         c.Group.Name,
		spec:         c.Group,
		grace:        c.Group.Grace(),
		minGrace:     c.MinimumGrace,
		idPrefix:     c.IDPrefix,
		killRetry:    killRetryOrDefault(c.KillRetry),
		killAttempts: killAttemptsOrDefault(c.KillAttempts),
		backoff:      NewBackoff(c.Group.EffectiveBackoff(c.Backoff)),
		byName:       map[string]*proc{},
	}
	for _, s := range c.Group.Init {
		p := &proc{spec: s, init: true, policy: c.Group.EffectiveRestartPolicy(&s)}
		g.inits = append(g.inits, p)
		g.byName[s.Name] = p
	}
	for _, s := range c.Group.Processes {
		p := &proc{spec: s, policy: c.Group.EffectiveRestartPolicy(&s), want: true}
		g.mains = append(g.mains, p)
		g.byName[s.Name] = p
	}
	return g
}

// step feeds one input to the core at now and returns what to do.
func (g *Group) Step(now time.Time, in Input) Plan {
	g.now = now
	g.out = &Plan{}
	switch in := in.(type) {
	case CommandInput:
		g.command(in)
	case StartedInput:
		g.started(in)
	case StartFailedInput:
		g.startFailed(in)
	case ExitedInput:
		g.exited(in)
	case PreStopDoneInput:
		g.preStopDone(in)
	case ProbeInput:
		g.probeResult(in)
	case ProbeReportInput:
		g.probeReport(in)
	case PreStartDoneInput:
		g.preStartDone(in)
	case PostStartDoneInput:
		g.postStartDone(in)
	case PostStopDoneInput:
		g.postStopDone(in)
	case RecreateInput:
		g.addRecreate(in)
	case ReloadInput:
		g.reload(in.Group)
	case SettingsInput:
		g.minGrace = in.MinimumGrace
	case StatusTextInput:
		g.statusText(in)
	case KillDoneInput:
		g.killDone(in)
	case RuntimeEventInput:
		g.runtimeEvent(in)
	case TimerInput:
	}
	g.stepReload()
	g.stepRecreates()
	g.reconcile()
	out := *g.out
	out.Wake = g.nextWake()
	g.out = nil
	return out
}

func (g *Group) do(a Action) { g.out.Actions = append(g.out.Actions, a) }

func (g *Group) emit(p *proc, typ EventType, reason, format string, args ...any) {
	e := Event{Time: g.wallNow(), Type: typ, Reason: reason, Group: g.name, Message: fmt.Sprintf(format, args...)}
	if p != nil {
		e.Process = p.spec.Name
		e.Request = p.recreateReq
		e.RestartCount = max(p.starts-1, 0)
		if p.inst != nil {
			e.InstanceID = p.inst.id
			e.Pid = p.inst.pid
			e.RestartCount = p.inst.restartCount
		} else if p.last != nil {
			e.InstanceID = p.last.InstanceID
		}
	}
	g.do(EmitAction{e})
}

func (g *Group) all() []*proc {
	return append(append(append([]*proc(nil), g.inits...), g.mains...), g.leaving...)
}

func (g *Group) procByInstance(id string) *proc {
	// No g.all(): this runs for every input, and an allocation of every
	// process per input adds up with thousands of processes.
	for _, ps := range [3][]*proc{g.inits, g.mains, g.leaving} {
		for _, p := range ps {
			if p.inst != nil && p.inst.id == id {
				return p
			}
		}
	}
	return nil
}

// idle reports that no instance is alive.
func (g *Group) Idle() bool {
	for _, p := range g.all() {
		if p.inst != nil {
			return false
		}
	}
	return true
}

func (g *Group) anyMainWanted() bool {
	for _, p := range g.mains {
		if p.want && !p.done {
			return true
		}
	}
	return false
}

// initCompleted reports that an init has exited 0 (I1) or can no longer
// run because main processes have (I3).
func (g *Group) initCompleted(p *proc) bool {
	return g.mainsRan || (p.done && p.last != nil && p.last.ExitCode == 0)
}

// ---- commands (X7, X9) ----

func (g *Group) command(c CommandInput) {
	var targets []*proc
	if c.Process == "" {
		targets = g.all()
	} else if p, ok := g.byName[c.Process]; ok {
		targets = []*proc{p}
	} else {
		g.emit(nil, EventWarning, EventFailed, "%s request for unknown process %q ignored", c.Kind, c.Process)
		return
	}
	if g.shutdown && c.Kind != CmdShutdown && c.Kind != CmdStop {
		g.emit(nil, EventWarning, EventFailed, "%s request by %s ignored: podsup is shutting down", c.Kind, c.By)
		return
	}
	if c.Kind == CmdShutdown {
		g.shutdown = true
	}
	for _, p := range targets {
		if p.init && c.Kind != CmdStop && c.Kind != CmdShutdown && g.initCompleted(p) {
			if c.Process != "" {
				g.emit(p, EventWarning, EventFailed, "%s request by %s ignored: init %s has completed and never runs again (I3)", c.Kind, c.By, p.spec.Name)
			}
			continue
		}
		switch c.Kind {
		case CmdStop:
			g.stopProc(p, KillStop, c.Grace, c.By)
		case CmdShutdown:
			g.stopProc(p, KillShutdown, c.Grace, c.By)
		case CmdStart:
			g.startProc(p, c.By)
		case CmdRestart:
			g.restartProc(p, c.Grace, c.By)
		}
	}
}

func (g *Group) stopProc(p *proc, reason KillReason, grace *time.Duration, by string) {
	p.want = false
	p.startNow, p.b8 = false, nil
	p.nextStart = time.Time{}
	if p.inst == nil {
		return
	}
	if st := p.inst.stop; st != nil {
		st.restart = false
		if st.reason == KillStop || st.reason == KillShutdown {
			g.escalate(p, by) // X9: a second stop request skips to SIGKILL
			return
		}
		// A restart or probe kill in progress becomes this stop request,
		// so that the next one escalates.
		st.reason, st.by = reason, by
		return
	}
	g.beginStop(p, reason, grace, nil, by, false)
}

func (g *Group) startProc(p *proc, by string) {
	p.want, p.done = true, false
	if p.init {
		g.initFailed = false
	}
	if p.inst == nil {
		p.startNow, p.startBy, p.b8 = true, by, nil
		return
	}
	if d := p.inst.deferred; d != nil && !d.restart {
		d.restart, d.by, d.reason = true, by, KillRestart
	}
	if st := p.inst.stop; st != nil && !st.restart {
		st.restart, st.by = true, by
		st.reason = KillRestart
	}
}

func (g *Group) restartProc(p *proc, grace *time.Duration, by string) {
	p.want, p.done = true, false
	if p.init {
		g.initFailed = false
	}
	if p.inst == nil {
		if p.init && g.initNext != g.indexOfInit(p) {
			return // not its turn yet (I1)
		}
		p.startNow, p.startBy, p.b8 = true, by, nil
		return
	}
	if st := p.inst.stop; st != nil {
		st.restart, st.by = true, by
		if !st.reason.probeKill() {
			st.reason = KillRestart
		}
		return
	}
	g.beginStop(p, KillRestart, grace, nil, by, true)
}

func (g *Group) indexOfInit(p *proc) int {
	for i, q := range g.inits {
		if q == p {
			return i
		}
	}
	return -1
}

// ---- termination (K1–K6, X9, X10, X12) ----

func (g *Group) beginStop(p *proc, reason KillReason, override, probeGrace *time.Duration, by string, restart bool) {
	if p.inst.hooks.preStarting {
		g.abortPreStart(p, reason, by, restart) // no process yet
		return
	}
	if p.inst.starting {
		g.deferStop(p, reason, override, probeGrace, by, restart) // no process yet either
		return
	}
	grace := SelectGrace(reason, g.grace, probeGrace, override)
	st := &stopState{reason: reason, by: by, grace: grace, begun: g.now, restart: restart}
	p.inst.stop = st
	switch reason {
	case KillLiveness, KillStartup:
		st.preKill = p.last
		probe := "liveness"
		if reason == KillStartup {
			probe = "startup"
		}
		if restart {
			g.emit(p, EventNormal, EventKilling, "Process %s failed %s probe, will be restarted (grace %s)", p.spec.Name, probe, grace)
		} else {
			g.emit(p, EventNormal, EventKilling, "Process %s failed %s probe, stopping (grace %s)", p.spec.Name, probe, grace)
		}
	case KillPostStartHook:
		g.emit(p, EventNormal, EventKilling, "Stopping process %s: its post_start hook failed (grace %s)", p.spec.Name, grace)
	default:
		g.emit(p, EventNormal, EventKilling, "Stopping process %s: %s requested by %s (grace %s)", p.spec.Name, verb(reason), who(by), grace)
	}
	// K3: a pre_stop hook runs first when there is grace to spend.
	if p.spec.PreStop != nil && grace > 0 {
		st.phase = stopPreStop
		st.deadline = g.now.Add(grace)
		g.do(PreStopAction{Process: p.spec.Name, Instance: p.inst.id, Budget: grace})
		return
	}
	g.sendStopSignal(p, grace)
}

// sendStopSignal is K5 then K6: the stop signal now, SIGKILL after grace
// lifted to the minimum.
func (g *Group) sendStopSignal(p *proc, grace time.Duration) {
	st := p.inst.stop
	grace = MinimumGrace(grace, g.minGrace)
	st.phase = stopSignalled
	st.deadline = g.now.Add(grace)
	g.do(SignalAction{Process: p.spec.Name, Instance: p.inst.id, Sig: p.spec.EffectiveStopSignal()})
}

func (g *Group) endPreStop(p *proc) {
	st := p.inst.stop
	g.sendStopSignal(p, ChargePreStop(st.grace, g.now.Sub(st.begun)))
}

func (g *Group) escalate(p *proc, by string) {
	st := p.inst.stop
	if st.phase == stopKilled {
		return
	}
	g.emit(p, EventNormal, EventKilling, "Killing process %s now: second stop request by %s", p.spec.Name, who(by))
	g.killTree(p)
}

func (g *Group) runStopDeadlines() {
	for _, p := range g.all() {
		if p.inst == nil || p.inst.stop == nil {
			continue
		}
		st := p.inst.stop
		if st.phase == stopPreStop && !g.now.Before(st.deadline) {
			g.endPreStop(p) // K3: the hook outlived the grace; stop waiting
		}
		if st.phase == stopSignalled && !g.now.Before(st.deadline) {
			g.emit(p, EventNormal, EventKilling, "Killing process %s: grace period expired, sending SIGKILL to its process tree", p.spec.Name)
			g.killTree(p)
		} else if st.phase == stopKilled && !g.now.Before(st.deadline) {
			g.killedDeadline(p)
		}
	}
}

func (g *Group) preStopDone(in PreStopDoneInput) {
	p := g.procByInstance(in.Instance)
	if p == nil || p.inst.stop == nil || p.inst.stop.phase != stopPreStop {
		return
	}
	if in.Err != nil {
		g.emit(p, EventWarning, EventFailedPreStopHook, "PreStop hook for process %s failed: %v", p.spec.Name, in.Err)
	}
	g.endPreStop(p)
}

// ---- observations ----

func (g *Group) started(in StartedInput) {
	p := g.procByInstance(in.Instance)
	if p == nil {
		return
	}
	inst := p.inst
	inst.starting = false
	inst.running = true
	inst.pid = in.Pid
	inst.startedAt, inst.startedWall = g.now, g.wallNow()
	// S3, S4, P4, P5: without a probe the flag is true from the start.
	// A readiness protocol (sd_notify READY=1, a newline on fd N) holds
	// ready back, and started too unless a startup probe decides it.
	inst.ready = p.spec.ReadinessProbe == nil && p.spec.Readiness == ""
	inst.started = p.spec.StartupProbe == nil && p.spec.Readiness == ""
	if inst.startBy != "" && p.recreateReq != "" {
		g.emit(p, EventNormal, EventStarted, "Started process %s (recreate %s requested by %s)", p.spec.Name, p.recreateReq, inst.startBy)
	} else if inst.startBy != "" {
		g.emit(p, EventNormal, EventStarted, "Started process %s (requested by %s)", p.spec.Name, inst.startBy)
	} else {
		g.emit(p, EventNormal, EventStarted, "Started process %s", p.spec.Name)
	}
	if g.runDeferredStop(p) {
		return // stopped before it started: no post_start
	}
	g.beginPostStart(p) // H1
}

func (g *Group) startFailed(in StartFailedInput) {
	p := g.procByInstance(in.Instance)
	if p == nil {
		return
	}
	g.emit(p, EventWarning, EventFailed, "Error: %v", in.Err)
	p.inst.starting = false
	g.deferredAsStop(p)
	term := &Termination{
		InstanceID: p.inst.id, ExitCode: in.Code, Reason: ReasonStartError,
		Message: in.Err.Error(), FinishedAt: g.now,
	}
	g.finish(p, term)
}

func (g *Group) exited(in ExitedInput) {
	p := g.procByInstance(in.Instance)
	if p == nil {
		return
	}
	term := &Termination{
		InstanceID: p.inst.id, ExitCode: in.Status.Code, Signal: in.Status.Signal,
		Reason: exitReason(in.Status), StartedAt: p.inst.startedAt, FinishedAt: in.At,
	}
	// X10: whatever the instance left behind dies with it; then the
	// worker removes the instance.
	g.do(KillTreeAction{Process: p.spec.Name, Instance: p.inst.id, Exited: true})
	g.requestPostStop(p) // X5
	if term.ExitCode == 0 {
		g.emit(p, EventNormal, EventCompleted, "Process %s completed (exit code 0)", p.spec.Name)
	} else if term.Signal != 0 {
		term.Message = fmt.Sprintf("killed by %s", spec.SignalName(term.Signal))
		g.emit(p, EventWarning, EventExited, "Process %s exited with code %d (%s)", p.spec.Name, term.ExitCode, term.Message)
	} else {
		g.emit(p, EventWarning, EventExited, "Process %s exited with code %d", p.spec.Name, term.ExitCode)
	}
	g.finish(p, term)
}

func exitReason(s ExitStatus) string {
	switch {
	case s.OOMKilled:
		return ReasonOOMKilled
	case s.Code == 0:
		return ReasonCompleted
	default:
		return ReasonError
	}
}

// finish records an instance's end and decides what follows it.
func (g *Group) finish(p *proc, term *Termination) {
	st := p.inst.stop
	p.inst = nil
	p.prev, p.last = p.last, term
	switch {
	case p.init && term.ExitCode == 0:
		g.initSucceeded(p)
	case st != nil && st.restart && st.reason.probeKill():
		p.b8 = &b8Check{ref: st.preKill} // R4: decided before the kill
	case st != nil && st.restart:
		p.startNow, p.startBy = true, st.by // X7: not a crash
	case st != nil && st.reason.probeKill():
		g.endForGood(p, term) // R4 under Never
	case st != nil && st.reason == KillPostStartHook:
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
func (g *Group) naturalEnd(p *proc, term *Termination) {
	if g.shutdown {
		return
	}
	if p.init {
		if p.policy == spec.RestartNever { // I2
			g.initFailed = true
			g.endForGood(p, term)
		}
		return // I2: otherwise retried with back-off, in reconcile
	}
	if !p.want {
		return
	}
	if shouldRestart(p.policy, term.ExitCode) {
		return // reconcile starts it, subject to back-off
	}
	g.endForGood(p, term)
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

func (g *Group) endForGood(p *proc, term *Termination) {
	p.done = true
	if p.spec.Critical {
		g.emit(p, EventWarning, EventCriticalExit, "Critical process %s ended for good with exit code %d: stopping everything", p.spec.Name, term.ExitCode)
		g.do(CriticalAction{Process: p.spec.Name, Code: term.ExitCode})
	}
}

// probeResult reacts to a probe result change (R4, P5, P11, P12, S3).
func (g *Group) probeResult(in ProbeInput) {
	p := g.procByInstance(in.Instance)
	if p == nil || !p.inst.running || p.inst.stop != nil {
		return
	}
	var probe *spec.Probe
	reason := KillLiveness
	switch in.Probe {
	case spec.Readiness:
		p.inst.ready = in.Success
		return
	case spec.Startup:
		if in.Success {
			p.inst.started = true
			return
		}
		probe, reason = p.spec.StartupProbe, KillStartup
	case spec.Liveness:
		if in.Success {
			return
		}
		probe = p.spec.LivenessProbe
	}
	if !in.Reported {
		g.emit(p, EventWarning, EventUnhealthy, "%s probe failed: %s", probeTitle(in.Probe), in.Message)
	}
	var probeGrace *time.Duration
	if probe != nil {
		probeGrace = probe.TerminationGracePeriod
	}
	// R4: the restart is decided before the kill, by policy != never.
	g.beginStop(p, reason, nil, probeGrace, "", p.policy != spec.RestartNever)
}

// ---- reconcile: decide starts ----

func (g *Group) reconcile() {
	g.runStopDeadlines()
	if g.shutdown {
		return
	}
	if !g.mainsRan && g.anyMainWanted() {
		if g.initFailed {
			return
		}
		if g.initNext < len(g.inits) { // I1: one at a time, in order
			if p := g.inits[g.initNext]; p.inst == nil {
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
	key := p.spec.Name
	if p.startNow {
		p.startNow = false
		g.start(p)
		return
	}
	if b8 := p.b8; b8 != nil {
		p.b8 = nil
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
			g.emit(p, EventWarning, EventBackOff, "Back-off %s restarting failed process %s", d, p.spec.Name)
		}
		return
	}
	g.backoff.Next(key, ref.FinishedAt, g.now)
	g.start(p)
}

func (g *Group) start(p *proc) {
	p.nextStart = time.Time{}
	p.inst = &instance{
		id:           fmt.Sprintf("%s%s%s-%d", g.idPrefix, p.idPrefix, p.spec.Name, p.starts),
		restartCount: p.starts, // R5
		startBy:      p.startBy,
		startedAt:    g.now,
	}
	p.starts++
	p.startBy = ""
	if !p.init {
		g.mainsRan = true // I3
	}
	g.launch(p) // pre_start, then the start (X5)
}

func (g *Group) nextWake() time.Time {
	var wake time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (wake.IsZero() || t.Before(wake)) {
			wake = t
		}
	}
	for _, p := range g.all() {
		if p.inst != nil && p.inst.stop != nil {
			consider(p.inst.stop.deadline) // in the killed phase: the kill's retry
		}
		if p.inst == nil {
			consider(p.nextStart)
		}
	}
	consider(g.rc.wake)
	return wake
}

func verb(r KillReason) string {
	switch r {
	case KillRestart:
		return "restart"
	case KillShutdown:
		return "shutdown"
	case KillRecreate:
		return "recreate"
	case KillReload:
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

// ---- what the worker may read ----

// ShuttingDown reports that podsup is stopping the group for good (X9).
func (g *Group) ShuttingDown() bool { return g.shutdown }

// Spec is the group's spec as the last reload left it.
func (g *Group) Spec() spec.Group { return g.spec }

// Reloads counts the process-level reloads the core took.
func (g *Group) Reloads() int { return g.reloads }

// InstanceSpec is the spec of the process whose live instance is id; ok
// is false when id is no live instance.
func (g *Group) InstanceSpec(id string) (s spec.Process, ok bool) {
	if p := g.procByInstance(id); p != nil {
		return p.spec, true
	}
	return spec.Process{}, false
}

// ProbeTarget is a main process whose probes the worker runs.
type ProbeTarget struct {
	Spec spec.Process
	// Pending: a reload changed the process and its new spec (with its
	// new probes) takes over once the old instance is gone.
	Pending bool
}

// ProbeTargets lists the group's main processes in order.
func (g *Group) ProbeTargets() []ProbeTarget {
	out := make([]ProbeTarget, 0, len(g.mains))
	for _, p := range g.mains {
		out = append(out, ProbeTarget{Spec: p.spec, Pending: p.nextSpec != nil})
	}
	return out
}

// ProbeView is the instance a process's probes see.
type ProbeView struct {
	// ID is the instance probed: the running one, or the newest finished
	// one (P8: its probes fail); "" when there is none to probe (no
	// instance yet, or one in its pre_start or post_start hook: H1).
	ID string
	// Running, StartedAt and Started describe a running instance.
	Running   bool
	StartedAt time.Time
	Started   bool
	// Starting: the instance's start is in flight.
	Starting bool
}

// ProbeViewOf is what the probes of the named main process see; ok is
// false for a process the group does not have.
func (g *Group) ProbeViewOf(process string) (v ProbeView, ok bool) {
	p := g.byName[process]
	if p == nil {
		return ProbeView{}, false
	}
	switch inst := p.inst; {
	case inst != nil && inst.running:
		return ProbeView{ID: inst.id, Running: true, StartedAt: inst.startedAt, Started: inst.started}, true
	case inst != nil:
		return ProbeView{Starting: inst.starting}, true
	case p.last != nil:
		return ProbeView{ID: p.last.InstanceID}, true
	}
	return ProbeView{}, true
}

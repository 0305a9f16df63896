package core

import (
	"fmt"
	"time"

	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Between instances: how a process's next instance will start. The
// decisions that set it are spread over requests (X7), ends (R4, B8),
// stops and the start order's timeouts (W5); tryStart and gateOpen read
// it. It is one state with a table of its own, (state, event) → state,
// as an instance's phase is (instance.go): s6-supervise's
// actions[state][event] again.
//
//	                 request                     birth
//	Policy ─────────────────────► Requested ─────────────► Policy
//	  │ ▲ probe kill, restart        │ ▲ cancel (stop, removal, O4)
//	  │ └── ProbeKilled ── B8 checked, birth, cancel ──► Policy
//	  │ back-off over after a
//	  ▼ timed-out wait (W5)  request
//	DepRetry ───────────────────────► DepRetryRequested
//	  ▲         cancel                       │ dependency timeout
//	  └──────────────────────────────────────┴───────► Requested
//
// A process waiting in CrashLoopBackOff (its nextStart) or for its
// dependencies (its wait) is in Policy or DepRetry: those are what the
// status shows, not how the next start goes. want and done, what should
// run and the policy's verdict, outlive instances and are the process's.

// between is all of a process's state between instances. It means
// something only while the process has no live instance; birth clears
// it, so no instance inherits any of it.
type between struct {
	// rest is how the next instance starts; only fireRest changes it.
	rest rest
	// startBy is who asked for the next start (Requested), whom the
	// Started event names; the new instance takes it at birth.
	startBy string
	// b8, in ProbeKilled only, holds the status from before the kill
	// that the start's back-off check uses (B8); fireRest clears it on
	// leaving ProbeKilled.
	b8 *b8Check
	// nextStart is when the back-off ends, while the process waits in
	// CrashLoopBackOff (X3, after a dependency timeout W5); zero
	// otherwise. A stop, a removal, a reload, a recreate and a group's
	// end (O4) clear it too.
	nextStart time.Time
	// wait is the wait for dependencies in progress (W3), nil when none;
	// cleared when they are met, at their timeout and by a stop.
	wait *depWait
}

// birth ends p's time between instances as tryStart makes the next one:
// rest goes back to Policy through the table and everything else is
// cleared. It returns who asked for the start.
func (g *Group) birth(p *proc) (startBy string) {
	startBy = p.startBy
	g.fireRest(p, restOnBirth)
	p.between = between{rest: p.rest}
	return startBy
}

// rest is how the next instance of a process starts.
type rest uint8

const (
	// restPolicy: the restart policy's start, through the back-off (B6).
	restPolicy rest = iota
	// restRequested: an explicit start, restart, recreate or a reload's
	// new spec: no back-off check, no Next (X7).
	restRequested
	// restProbeKilled: a restart after a probe kill: the back-off check
	// uses the newest instance finished before the kill (B8).
	restProbeKilled
	// restDepRetry: the back-off after a timed-out dependency wait is
	// over: the next wait begins without a second one (W5).
	restDepRetry
	// restDepRetryRequested: restDepRetry, and a start was requested
	// meanwhile; the wait's next timeout leaves the request standing.
	restDepRetryRequested

	numRests
)

var restNames = [...]string{
	restPolicy: "Policy", restRequested: "Requested", restProbeKilled: "ProbeKilled",
	restDepRetry: "DepRetry", restDepRetryRequested: "DepRetryRequested",
}

func (r rest) String() string {
	if int(r) < len(restNames) {
		return restNames[r]
	}
	return fmt.Sprintf("rest(%d)", r)
}

// restEvent is what happens to a process between instances.
type restEvent uint8

const (
	restOnRequest     restEvent = iota // an explicit start, restart, recreate, a restart stop's end, a reload's new spec
	restOnCancel                       // a stop, a removal, a group over (O4): no start is owed
	restOnProbeKilled                  // an instance killed by a probe ended, to be restarted (R4, B8)
	restOnBackOffOver                  // the back-off after a timed-out dependency wait is over (W5)
	restOnDepTimeout                   // a dependency wait timed out (W5)
	restOnB8Checked                    // B8's check was made: the start follows, or a fresh back-off check
	restOnBirth                        // tryStart made the next instance

	numRestEvents
)

var restEventNames = [...]string{
	restOnRequest: "request", restOnCancel: "cancel", restOnProbeKilled: "probe killed",
	restOnBackOffOver: "back-off over", restOnDepTimeout: "dependency timeout", restOnB8Checked: "B8 checked",
	restOnBirth: "birth",
}

func (e restEvent) String() string {
	if int(e) < len(restEventNames) {
		return restEventNames[e]
	}
	return fmt.Sprintf("restEvent(%d)", e)
}

// restCell is one cell of the table: the state after the event, or
// impossible: the event cannot reach a process in that state (the code
// that sends it has ruled the state out), and fireRest reports it.
type restCell struct {
	to         rest
	impossible bool
}

func next(r rest) restCell { return restCell{to: r} }

var never = restCell{impossible: true}

// restTable is the whole of it: every (state, event) pair.
var restTable = [numRests][numRestEvents]restCell{
	restPolicy: {
		restOnRequest: next(restRequested), restOnCancel: next(restPolicy),
		restOnProbeKilled: next(restProbeKilled), restOnBackOffOver: next(restDepRetry),
		restOnDepTimeout: next(restPolicy), restOnB8Checked: never, restOnBirth: next(restPolicy),
	},
	restRequested: {
		restOnRequest: next(restRequested), restOnCancel: next(restPolicy),
		// An instance ends only after a birth, which left Policy.
		restOnProbeKilled: never,
		// gateOpen looks for the back-off's end only without a request.
		restOnBackOffOver: never,
		restOnDepTimeout:  next(restRequested), restOnB8Checked: never, restOnBirth: next(restPolicy),
	},
	restProbeKilled: {
		restOnRequest: next(restRequested), restOnCancel: next(restPolicy),
		restOnProbeKilled: never,
		// The back-off's end follows a timeout, which left ProbeKilled.
		restOnBackOffOver: never,
		// B8's check is moot once a wait timed out: the next start is
		// W5's, measured from the timeout.
		restOnDepTimeout: next(restPolicy), restOnB8Checked: next(restPolicy), restOnBirth: next(restPolicy),
	},
	restDepRetry: {
		restOnRequest: next(restDepRetryRequested), restOnCancel: next(restDepRetry),
		restOnProbeKilled: never, restOnBackOffOver: never,
		restOnDepTimeout: next(restPolicy), restOnB8Checked: never, restOnBirth: next(restPolicy),
	},
	restDepRetryRequested: {
		restOnRequest: next(restDepRetryRequested), restOnCancel: next(restDepRetry),
		restOnProbeKilled: never, restOnBackOffOver: never,
		restOnDepTimeout: next(restRequested), restOnB8Checked: never, restOnBirth: next(restPolicy),
	},
}

// fireRest is the one way a process's rest changes. An impossible pair is
// a bug in the core, reported as an InternalError event, and changes
// nothing.
func (g *Group) fireRest(p *proc, ev restEvent) bool {
	c := restTable[p.rest][ev]
	if c.impossible {
		g.emit(p, lifecycle.EventWarning, lifecycle.EventInternalError, "Process %s is %s between instances and its table rules out %s", p.spec.Name, p.rest, ev)
		return false
	}
	p.rest = c.to
	if c.to != restProbeKilled {
		p.b8 = nil // ProbeKilled's data
	}
	return true
}

// cancelStart is restOnCancel, for a process that is owed no start any
// more (a stop, a removal): it waits for neither the back-off nor its
// dependencies either.
func (g *Group) cancelStart(p *proc) {
	g.fireRest(p, restOnCancel)
	p.nextStart, p.wait = time.Time{}, nil
}

// requestStart is restOnRequest with who asked, whom the Started event
// names.
func (g *Group) requestStart(p *proc, by string) {
	if g.fireRest(p, restOnRequest) {
		p.startBy = by
	}
}

// probeKilled is restOnProbeKilled with B8's reference: the newest
// instance finished before the kill (R4: the restart was decided then).
func (g *Group) probeKilled(p *proc, ref *lifecycle.Termination) {
	if g.fireRest(p, restOnProbeKilled) {
		p.b8 = &b8Check{ref: ref}
	}
}

// startRequested: the next start skips the back-off (X7).
func (p *proc) startRequested() bool {
	return p.rest == restRequested || p.rest == restDepRetryRequested
}

// depRetrying: a timed-out wait's back-off is over (W5).
func (p *proc) depRetrying() bool {
	return p.rest == restDepRetry || p.rest == restDepRetryRequested
}

package core

import (
	"fmt"
	"iter"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// A group's core: its configuration, its processes, and Step, the one
// entry point that feeds it an input and returns the plan.

// Config is what a Group is built from.
type Config struct {
	Group        spec.Group
	Backoff      spec.Backoff
	MinimumGrace time.Duration
	// idPrefix makes instance ids unique across cores of the same group
	// (a group replaced by a reload starts a new core).
	IDPrefix string
	// killRetry is how long after a SIGKILL of the tree the core looks
	// again (doubling per attempt); killAttempts is how many SIGKILLs a
	// shutdown tries before it gives up on an instance.
	KillRetry    time.Duration
	KillAttempts int
	// Created is when the group is taken on, on the wall clock: its
	// processes' CreatedAt (AGE), for display only.
	Created time.Time
}

// Group is one group's whole state. Only its worker touches it.
type Group struct {
	name     string
	spec     spec.Group
	grace    time.Duration
	minGrace time.Duration
	idPrefix string
	// killRetry and killAttempts: see Config.
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
	// failures counts the failed ends its backoff_limit counts (R7);
	// gaveUp is set once they passed it: no failure is restarted again.
	failures int
	gaveUp   bool
	// shutdown is X9: podsup is stopping; nothing starts again.
	shutdown bool
	// ext is the last DepState of each related group (W1, W8);
	// stopAfter the groups that depend on this one, whose processes an
	// ordered shutdown lets end first (W8).
	ext       map[string]DepState
	stopAfter []string
	// dependedOn holds the names of the processes that another process of
	// the group depends on, for an ordered shutdown: only those wait.
	dependedOn map[string]bool
	// watchRestarts is set once a process watches a dependency's restarts
	// (depends_on with restart = true, W7), so that only then does every
	// input look for them.
	watchRestarts bool

	// rc is the group's recreate requests.
	rc recreateQueue
	// wall, when set, stamps display times (events, recreate status)
	// instead of now; tests use it to skew the wall clock (C9).
	wall func() time.Time
	// leaving holds processes a reload removed until their instance is
	// gone; reloads counts process-level reloads.
	leaving []*proc
	reloads int

	// now and out are the step in progress.
	now time.Time
	out *Plan
}

// proc is one process (or init) of the group across its instances.
type proc struct {
	spec spec.Process
	init bool
	// sidecar: an init with restart_policy "always" (O1–O7).
	sidecar bool
	policy  spec.RestartPolicy
	// created is when the core took the process on (CreatedAt).
	created time.Time
	// want says the process should be running (mains and sidecars; plain
	// inits follow the group).
	want bool
	// done: ended for good; the policy does not restart it.
	done bool
	// inst is the live instance, nil between instances.
	inst *instance
	// last and prev are the newest and the previous finished instances.
	last, prev *lifecycle.Termination
	// oomKills counts the instances that ended OOMKilled.
	oomKills int
	// starts counts instances (R5: restart count = starts − 1).
	starts int
	// between is the state between instances (rest.go): how the next
	// one starts and what it waits for.
	between

	// The fields below span instances, so they are not between's:
	// recreateReq is the recreate request replacing this process, whose
	// id tags its events from the old instance's kill to the request's
	// end; nextSpec is a reload's new spec, taken once the old instance
	// is gone; idPrefix keeps instance ids unique for processes added by
	// a reload.
	recreateReq string
	nextSpec    *spec.Process
	idPrefix    string

	// depStarts is the live instance's: the instance counts of the
	// restart = true dependencies at its start (W7); pendingStop an
	// ordered shutdown's stop of the live instance, waiting for its
	// dependents (W8).
	depStarts   map[string]int
	pendingStop *pendingStop
}

type b8Check struct {
	// ref is the newest finished instance before the kill; nil when there
	// was none (then the start is immediate and skips Next, B6.1).
	ref *lifecycle.Termination
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
		p := &proc{spec: s, init: true, sidecar: spec.IsSidecar(&s), policy: c.Group.EffectiveRestartPolicy(&s), created: c.Created}
		p.want = p.sidecar
		g.inits = append(g.inits, p)
		g.byName[s.Name] = p
	}
	for _, s := range c.Group.Processes {
		p := &proc{spec: s, policy: c.Group.EffectiveRestartPolicy(&s), want: true, created: c.Created}
		g.mains = append(g.mains, p)
		g.byName[s.Name] = p
	}
	return g
}

// Step feeds one input to the core at now and returns what to do.
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
	case DependencyInput:
		g.dependencyState(in)
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

func (g *Group) emit(p *proc, typ lifecycle.EventType, reason, format string, args ...any) {
	e := lifecycle.Event{Time: g.wallNow(), Type: typ, Reason: reason, Group: g.name, Message: fmt.Sprintf(format, args...)}
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

// all is every process of the group, a slice of its own.
func (g *Group) all() []*proc {
	return append(append(append([]*proc(nil), g.inits...), g.mains...), g.leaving...)
}

// procs yields what all() holds without building it: loops that run for
// every input use it (all() was nine allocations per restart).
func (g *Group) procs() iter.Seq[*proc] {
	return func(yield func(*proc) bool) {
		for _, ps := range [...][]*proc{g.inits, g.mains, g.leaving} {
			for _, p := range ps {
				if !yield(p) {
					return
				}
			}
		}
	}
}

func (g *Group) procByInstance(id string) *proc {
	for p := range g.procs() { // every input: no g.all()
		if p.inst != nil && p.inst.id == id {
			return p
		}
	}
	return nil
}

// Idle reports that no instance is alive.
func (g *Group) Idle() bool {
	for p := range g.procs() {
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
// A sidecar never completes (O3).
func (g *Group) initCompleted(p *proc) bool {
	if p.sidecar {
		return false
	}
	return g.mainsRan || (p.done && p.last != nil && p.last.ExitCode == 0)
}

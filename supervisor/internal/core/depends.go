package core

import (
	"fmt"
	"strings"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Start order (W1–W7): a process starts only once each of its
// depends_on conditions holds, and those of its group's depends_on; the
// wait is a waiting state with events at its start and end, bounded by
// the dependency's timeout; restart = true restarts a running dependent
// after its dependency restarts. The gate is checked in reconcile, which
// runs after every input: the step that reports the dependency's change
// (a Started or probe result in the same group, a DependencyInput from
// another) is the step that opens it.

// DependencyTimeoutExitCode is the exit code a timed-out wait is
// recorded with: a failure, so that on-failure restarts it (W5).
const DependencyTimeoutExitCode = 1

// DepState is what a group's dependents (depends_on "GROUP") and, at
// shutdown, its dependencies (W8) need to know of it.
type DepState struct {
	// Started, Ready and Completed: every main process has started, is
	// ready, has completed (exited 0 for good). A process that completed
	// counts as started and ready too.
	Started, Ready, Completed bool
	// Failed: a main process ended for good with a non-zero exit (or an
	// init failed under never): the group cannot complete.
	Failed bool
	// Alive: an instance of the group is alive.
	Alive bool
	// Starts counts the main processes' instances: restart = true
	// restarts dependents when it grows (W7).
	Starts int
}

// DependencyInput is another group's DepState, sent by the supervisor
// each time it changes, to the groups that depend on that group and to
// those it depends on.
type DependencyInput struct {
	Group string
	State DepState
}

func (DependencyInput) isInput() {}

// depWait is a process's wait for its dependencies (W3).
type depWait struct {
	since time.Time
	// on is what it waits for now ("db ready"), its status message, and
	// onName, onGroup which dependency that is (compared on every step
	// instead of formatting on again).
	on      string
	onName  string
	onGroup bool
	// failed names the dependencies whose failure was reported.
	failed map[string]bool
	// wake is the earliest timeout of an unmet dependency (W5).
	wake time.Time
}

// unmetDep is a dependency whose condition does not hold.
type unmetDep struct {
	dep   spec.Dependency
	group bool
	// failed: it can no longer be met (a `completed` dependency that
	// failed for good).
	failed string
}

func (u unmetDep) String() string {
	if u.group {
		return fmt.Sprintf("group %s %s", u.dep.Name, u.dep.EffectiveCondition())
	}
	return fmt.Sprintf("%s %s", u.dep.Name, u.dep.EffectiveCondition())
}

func (u unmetDep) key() string {
	if u.group {
		return "group/" + u.dep.Name
	}
	return u.dep.Name
}

// DepState summarises the group for the groups related to it.
func (g *Group) DepState() DepState {
	st := DepState{Started: true, Ready: true, Completed: true, Failed: g.initFailed, Alive: !g.Idle()}
	for _, p := range g.mains {
		st.Starts += p.starts
		if ok, _ := g.procMet(p, spec.ConditionStarted); !ok {
			st.Started = false
		}
		if ok, _ := g.procMet(p, spec.ConditionReady); !ok {
			st.Ready = false
		}
		ok, failed := g.procMet(p, spec.ConditionCompleted)
		st.Completed = st.Completed && ok
		st.Failed = st.Failed || failed != ""
	}
	// A sidecar counts for the group's readiness (O5), never completes.
	for _, p := range g.inits {
		if !p.sidecar {
			continue
		}
		if ok, _ := g.procMet(p, spec.ConditionStarted); !ok {
			st.Started = false
		}
		if ok, _ := g.procMet(p, spec.ConditionReady); !ok {
			st.Ready = false
		}
	}
	return st
}

// procMet reports whether q meets c (W1), and when it never will, why.
func (g *Group) procMet(q *proc, c spec.Condition) (met bool, failed string) {
	if q.init && !q.sidecar && g.initCompleted(q) {
		return true, "" // I1, I3: a completed init met every condition
	}
	t := q.last
	completed := q.inst == nil && t != nil && t.ExitCode == 0 && t.Reason != lifecycle.ReasonDependencyTimeout && (q.done || q.init && !q.sidecar)
	running := q.inst != nil && q.inst.phase == phaseRunning
	switch c {
	case spec.ConditionCompleted:
		if q.done && t != nil && t.ExitCode != 0 {
			return false, fmt.Sprintf("%s exited with code %d and is not restarted", q.spec.Name, t.ExitCode)
		}
		return completed, ""
	case spec.ConditionReady:
		return completed || running && q.inst.ready, ""
	default:
		return completed || running && q.inst.started, ""
	}
}

// groupMet is procMet for a group depends_on, from its last DepState.
func (g *Group) groupMet(d spec.Dependency) (met bool, failed string) {
	st := g.ext[d.Name]
	switch d.EffectiveCondition() {
	case spec.ConditionCompleted:
		if st.Failed {
			return false, fmt.Sprintf("group %s has a process that failed and is not restarted", d.Name)
		}
		return st.Completed, ""
	case spec.ConditionReady:
		return st.Ready, ""
	default:
		return st.Started, ""
	}
}

// unmetDeps lists p's dependencies whose condition does not hold: its
// group's first, then its own, in file order.
func (g *Group) unmetDeps(p *proc) []unmetDep {
	var out []unmetDep
	for _, d := range g.spec.DependsOn {
		if ok, failed := g.groupMet(d); !ok {
			out = append(out, unmetDep{dep: d, group: true, failed: failed})
		}
	}
	for _, d := range p.spec.DependsOn {
		q := g.byName[d.Name]
		if q == nil {
			continue // spec's validation refuses it
		}
		if ok, failed := g.procMet(q, d.EffectiveCondition()); !ok {
			out = append(out, unmetDep{dep: d, failed: failed})
		}
	}
	return out
}

func (g *Group) hasDeps(p *proc) bool {
	return len(g.spec.DependsOn) > 0 || len(p.spec.DependsOn) > 0
}

// gateOpen is W1–W6 for a process about to start: true when every
// dependency holds. Otherwise it starts or continues the wait, reports
// it, and fails the process when a timeout is over.
func (g *Group) gateOpen(p *proc) bool {
	if !g.hasDeps(p) {
		return true
	}
	// W5: after a timed-out wait, the back-off delays the next one, as it
	// delays a restart after a crash; an explicit start does not wait
	// for it (X7).
	if t := p.last; p.wait == nil && t != nil && t.Reason == lifecycle.ReasonDependencyTimeout && !p.depRetrying() && !p.startRequested() {
		key := p.spec.Name
		if g.backoff.IsInBackOffSince(key, t.FinishedAt, g.now) {
			d := g.backoff.Get(key)
			if next := t.FinishedAt.Add(d); !p.nextStart.Equal(next) {
				p.nextStart = next
				g.emit(p, lifecycle.EventWarning, lifecycle.EventBackOff, backOffMessage, p.spec.Name)
			}
			return false
		}
		g.backoff.Next(key, t.FinishedAt, g.now)
		p.nextStart = time.Time{}
		g.fireRest(p, restOnBackOffOver)
	}
	unmet := g.unmetDeps(p)
	if len(unmet) == 0 {
		if w := p.wait; w != nil {
			p.wait = nil
			g.emit(p, lifecycle.EventNormal, lifecycle.EventDependenciesMet, "Dependencies of process %s met after %s", p.spec.Name, g.now.Sub(w.since).Round(time.Millisecond))
		}
		g.noteDepStarts(p)
		return true
	}
	w := p.wait
	if w == nil {
		w = &depWait{since: g.now, failed: map[string]bool{}}
		p.wait = w
	}
	if u := unmet[0]; w.on == "" || w.onName != u.dep.Name || w.onGroup != u.group {
		w.on, w.onName, w.onGroup = u.String(), u.dep.Name, u.group
		g.emit(p, lifecycle.EventNormal, lifecycle.EventWaiting, "Process %s waiting for %s", p.spec.Name, w.on)
	}
	w.wake = time.Time{}
	for _, u := range unmet {
		if u.failed != "" && !w.failed[u.key()] {
			w.failed[u.key()] = true
			g.emit(p, lifecycle.EventWarning, lifecycle.EventDependencyFailed, "Process %s cannot start: %s", p.spec.Name, u.failed)
		}
		if u.dep.Timeout <= 0 {
			continue
		}
		deadline := w.since.Add(u.dep.Timeout)
		if !g.now.Before(deadline) {
			g.dependencyTimeout(p, u)
			return false
		}
		if w.wake.IsZero() || deadline.Before(w.wake) {
			w.wake = deadline
		}
	}
	return false
}

// dependencyTimeout is W5: the wait failed the process, as an exit with
// code 1 would; the restart policy then decides, and the next wait
// begins after the back-off.
func (g *Group) dependencyTimeout(p *proc, u unmetDep) {
	msg := fmt.Sprintf("%s not met within %s", u, u.dep.Timeout)
	g.emit(p, lifecycle.EventWarning, lifecycle.EventDependencyTimeout, "Process %s failed: %s", p.spec.Name, msg)
	term := &lifecycle.Termination{ExitCode: DependencyTimeoutExitCode, Reason: lifecycle.ReasonDependencyTimeout, Message: msg, FinishedAt: g.now}
	if p.last != nil {
		term.InstanceID = p.last.InstanceID
	}
	p.wait = nil
	g.fireRest(p, restOnDepTimeout)
	p.prev, p.last = p.last, term
	g.naturalEnd(p, term)
	if !p.done && !g.initFailed && !g.shutdown && (p.init || p.want) {
		g.gateOpen(p) // the next wait, or the back-off before it
	}
}

// noteDepStarts records the dependencies' instance counts as p starts,
// for restart = true (W7).
func (g *Group) noteDepStarts(p *proc) {
	p.depStarts = nil
	for _, d := range g.spec.DependsOn {
		if d.Restart {
			g.setDepStart(p, "group/"+d.Name, g.ext[d.Name].Starts)
		}
	}
	for _, d := range p.spec.DependsOn {
		if q := g.byName[d.Name]; d.Restart && q != nil {
			g.setDepStart(p, d.Name, q.starts)
		}
	}
}

func (g *Group) setDepStart(p *proc, key string, n int) {
	g.watchRestarts = true
	if p.depStarts == nil {
		p.depStarts = map[string]int{}
	}
	p.depStarts[key] = n
}

// restartDependents is W7: a running process whose dependency with
// restart = true started a new instance since it started is restarted;
// its next start waits for the condition again.
func (g *Group) restartDependents() {
	if !g.watchRestarts {
		return // no depends_on with restart = true has started: nothing to watch
	}
	for p := range g.procs() {
		g.restartIfDependencyRestarted(p)
	}
}

func (g *Group) restartIfDependencyRestarted(p *proc) {
	if p.inst == nil || p.inst.stop != nil || p.inst.starting() || len(p.depStarts) == 0 {
		return
	}
	for key, seen := range p.depStarts {
		now, name := 0, key
		if group, ok := strings.CutPrefix(key, "group/"); ok {
			name, now = group, g.ext[group].Starts
		} else if q := g.byName[key]; q != nil {
			now = q.starts
		}
		if now > seen {
			g.beginStop(p, lifecycle.KillRestart, nil, nil, "the restart of dependency "+name, true)
			return
		}
	}
}

// dependencyState records another group's state (DependencyInput).
func (g *Group) dependencyState(in DependencyInput) {
	if g.ext == nil {
		g.ext = map[string]DepState{}
	}
	g.ext[in.Group] = in.State
}

// waitWake is the earliest dependency timeout of a waiting process.
func (p *proc) waitWake() time.Time {
	if p.wait == nil {
		return time.Time{}
	}
	return p.wait.wake
}

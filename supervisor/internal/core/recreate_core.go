package core

import (
	"fmt"
	"strings"
	"time"

	"github.com/podsup/podsup/supervisor/lifecycle"
)

// The group core's side of recreate requests: it queues them (one active
// per group, C2 and X8), feeds decideRecreate what it observes, carries out
// its orders (hold readiness, kill through the normal path, start at once)
// and reports every step as an event tagged with the request's id.

// recreateQueue is a group's requests in arrival order. Completed ones stay
// until their TTL passes.
type recreateQueue struct {
	reqs []*recreateState
	// holder is the request holding the group's readiness false (C3).
	holder string
	// wake is the earliest time a request asked to be decided again.
	wake time.Time
}

// RecreateInput is a new request, already checked against C1's static
// part (RecreateSpec.Validate). The core checks it against the group as it is
// now (C1's live part) and answers on Reply (buffered).
type RecreateInput struct {
	// ID names the request; Seq orders the requests of a group (C2).
	ID   string
	Seq  uint64
	Spec lifecycle.RecreateSpec
	// Reply gets nil once the request is queued, or why it was refused.
	Reply chan<- error
}

func (RecreateInput) isInput() {}

// RecreateReplyAction answers a RecreateInput.
type RecreateReplyAction struct {
	Reply chan<- error
	Err   error
}

// RecreateDoneAction reports a completed request (waiters wake up).
type RecreateDoneAction struct{ Status lifecycle.RecreateStatus }

// RecreateGoneAction reports a request removed after its TTL.
type RecreateGoneAction struct{ ID string }

func (RecreateReplyAction) isAction() {}
func (RecreateDoneAction) isAction()  {}
func (RecreateGoneAction) isAction()  {}

func (g *Group) wallNow() time.Time {
	if g.wall != nil {
		return g.wall()
	}
	return g.now
}

func (g *Group) addRecreate(in RecreateInput) {
	err := g.checkRecreate(in.Spec)
	g.do(RecreateReplyAction{Reply: in.Reply, Err: err})
	if err != nil {
		return
	}
	r := recreateState{id: in.ID, seq: in.Seq, spec: in.Spec.Clone()}
	r.phase = lifecycle.RecreatePending
	r.created, r.createdWall = g.now, g.wallNow()
	r.procs = nil
	for _, name := range r.spec.Processes {
		r.procs = append(r.procs, procRecreate{name: name, phase: lifecycle.ProcessRecreatePending})
	}
	g.rc.reqs = append(g.rc.reqs, &r)
	if a := g.activeRecreate(); a != nil {
		g.emitRecreate(&r, "", lifecycle.EventNormal, lifecycle.EventRecreatePending, "Recreate request %s by %s for %s is pending behind %s: one request at a time per group",
			r.id, who(r.spec.Requester), strings.Join(r.spec.Processes, ", "), a.id)
	}
}

// checkRecreate is C1's live part: the group is active and every process
// is a main process that has had an instance and is not stopped.
func (g *Group) checkRecreate(s lifecycle.RecreateSpec) error {
	if g.shutdown {
		return fmt.Errorf("unable to recreate in group %q: %w", g.name, ErrShuttingDown)
	}
	var probs []string
	var stopped []string
	for _, name := range s.Processes {
		p, ok := g.byName[name]
		switch {
		case !ok:
			probs = append(probs, fmt.Sprintf("group %q has no process %q", g.name, name))
		case p.init:
			probs = append(probs, fmt.Sprintf("%q is an init process: inits never run again once the main processes ran (I3)", name))
		case p.starts == 0:
			probs = append(probs, fmt.Sprintf("process %q has never been started: there is no instance to recreate", name))
		case !p.want:
			stopped = append(stopped, name)
		}
	}
	if len(probs) > 0 {
		return &lifecycle.RecreateSpecError{Problems: probs}
	}
	if g.initFailed || !g.anyMainWanted() {
		return fmt.Errorf("unable to recreate in group %q: it is %s: %w", g.name, g.phase(), lifecycle.ErrGroupInactive)
	}
	if len(stopped) > 0 {
		return fmt.Errorf("unable to recreate in group %q: %s stopped (start instead): %w", g.name, strings.Join(stopped, ", "), lifecycle.ErrGroupInactive)
	}
	return nil
}

func (g *Group) activeRecreate() *recreateState {
	for _, r := range g.rc.reqs {
		if r.phase == lifecycle.RecreateRecreating {
			return r
		}
	}
	return nil
}

// stepRecreates decides every request at now and carries out the orders.
// It runs after the step's input is recorded and before reconcile, so a
// start it orders happens in the same step (X7: at once).
func (g *Group) stepRecreates() {
	q := &g.rc
	for again := true; again; {
		again = false
		q.wake = time.Time{}
		if g.shutdown {
			for _, r := range q.reqs {
				if r.phase != lifecycle.RecreateCompleted {
					g.applyRecreate(r, r.abort(g.now, g.wallNow(), "the group is shutting down"), recreateOrders{})
				}
			}
		}
		if g.activeRecreate() == nil { // C2: the oldest pending one goes next
			for _, r := range q.reqs {
				if r.phase == lifecycle.RecreatePending {
					g.applyRecreate(r, r.activate(g.now, g.wallNow()), recreateOrders{})
					break
				}
			}
		}
		keep := q.reqs[:0]
		for _, r := range q.reqs {
			wasCompleted := r.phase == lifecycle.RecreateCompleted
			next, o := decideRecreate(*r, g.observeForRecreate, g.now, g.wallNow())
			g.applyRecreate(r, next, o)
			if o.remove {
				g.emitRecreate(r, "", lifecycle.EventNormal, lifecycle.EventRecreateRemoved, "Recreate request %s removed: ttl_after_finished %s passed", r.id, r.spec.TTL())
				g.do(RecreateGoneAction{ID: r.id})
				continue
			}
			keep = append(keep, r)
			if !wasCompleted && r.phase == lifecycle.RecreateCompleted {
				again = true // promote the next one and decide this one's TTL
			}
			if !o.wake.IsZero() && (q.wake.IsZero() || o.wake.Before(q.wake)) {
				q.wake = o.wake
			}
		}
		for i := len(keep); i < len(q.reqs); i++ {
			q.reqs[i] = nil
		}
		q.reqs = keep
	}
}

// applyRecreate moves r to next, reports the transitions and carries out
// the orders.
func (g *Group) applyRecreate(r *recreateState, next recreateState, o recreateOrders) {
	old := *r
	*r = next
	if old.phase == lifecycle.RecreatePending && r.phase == lifecycle.RecreateRecreating {
		mode := "in parallel"
		if r.spec.Ordered {
			mode = "in order"
		}
		g.emitRecreate(r, "", lifecycle.EventNormal, lifecycle.EventRecreating, "Recreate request %s by %s: recreating %s %s (failure policy %s)",
			r.id, who(r.spec.Requester), strings.Join(r.spec.Processes, ", "), mode, r.spec.Policy())
	}
	if o.holdReadiness {
		g.rc.holder = r.id
		g.emitRecreate(r, "", lifecycle.EventNormal, lifecycle.EventRecreateUnready, "Group %s readiness held false for %s before recreating (request %s)",
			g.name, *r.spec.UnreadyGracePeriod, r.id)
	}
	for i, p := range r.procs {
		if i < len(old.procs) && old.procs[i].phase == p.phase {
			continue
		}
		switch p.phase {
		case lifecycle.ProcessRecreateRecreating:
			g.emitRecreate(r, p.name, lifecycle.EventNormal, lifecycle.EventRecreating, "Recreating process %s: replacing instance %s (request %s)", p.name, p.baseline, r.id)
		case lifecycle.ProcessRecreateSucceeded:
			g.emitRecreate(r, p.name, lifecycle.EventNormal, lifecycle.EventRecreateSucceeded, "Process %s recreated: instance %s is running and ready (request %s)", p.name, p.instance, r.id)
		case lifecycle.ProcessRecreateFailed:
			g.emitRecreate(r, p.name, lifecycle.EventWarning, lifecycle.EventRecreateFailed, "Recreating process %s failed: %s (request %s)", p.name, p.message, r.id)
		}
		if p.phase == lifecycle.ProcessRecreateSucceeded || p.phase == lifecycle.ProcessRecreateFailed {
			if q, ok := g.byName[p.name]; ok && q.recreateReq == r.id {
				q.recreateReq = ""
			}
		}
	}
	for _, name := range o.kill {
		if p, ok := g.byName[name]; ok {
			g.recreateProc(p, r)
		}
	}
	if old.phase != lifecycle.RecreateCompleted && r.phase == lifecycle.RecreateCompleted {
		released := ""
		if g.rc.holder == r.id {
			g.rc.holder = ""
			released = "; group readiness released"
		}
		typ, outcome := lifecycle.EventNormal, "all processes recreated"
		if r.message != "" {
			outcome = r.message
		}
		if r.status(false).Failed() {
			typ = lifecycle.EventWarning
		}
		g.emitRecreate(r, "", typ, lifecycle.EventRecreateCompleted, "Recreate request %s completed: %s%s", r.id, outcome, released)
		g.do(RecreateDoneAction{Status: r.status(false)})
	}
}

// recreateProc kills p's instance through the normal path with the
// request's grace (C4, K2) and starts the next one at once (X7): no
// back-off wait, no back-off advance; the restart count still grows (R5).
func (g *Group) recreateProc(p *proc, r *recreateState) {
	by := who(r.spec.Requester)
	p.want, p.done = true, false
	p.recreateReq = r.id
	if p.inst == nil { // between instances, e.g. waiting in CrashLoopBackOff
		g.requestStart(p, by)
		p.nextStart = time.Time{}
		return
	}
	if st := p.inst.stop; st != nil { // a restart or probe kill under way
		st.restart, st.by, st.reason = true, by, lifecycle.KillRecreate
		return
	}
	g.beginStop(p, lifecycle.KillRecreate, r.spec.TerminationGracePeriod, nil, by, true)
}

func (g *Group) observeForRecreate(name string) observedProcess {
	p, ok := g.byName[name]
	if !ok || p.init {
		return observedProcess{}
	}
	o := observedProcess{exists: true, wanted: p.want, done: p.done}
	if p.inst != nil {
		o.current = p.inst.id
		o.running = p.inst.phase == phaseRunning
		o.ready = p.inst.ready
		o.startedAt, o.startedWall = p.inst.startedAt, p.inst.startedWall
	}
	if t := p.last; t != nil {
		o.last = t.InstanceID
		o.lastExit = fmt.Sprintf("exit code %d", t.ExitCode)
		if t.Reason != "" {
			o.lastExit += ", " + t.Reason
		}
	}
	return o
}

// emitRecreate emits an event for request r, about process (or the group
// when ""), tagged with the request's id.
func (g *Group) emitRecreate(r *recreateState, process string, typ lifecycle.EventType, reason, format string, args ...any) {
	p := g.byName[process]
	g.emit(p, typ, reason, format, args...)
	last := len(g.out.Actions) - 1
	a := g.out.Actions[last].(EmitAction)
	a.Event.Request = r.id
	if p == nil {
		a.Event.Process = process
	}
	g.out.Actions[last] = a
}

// RecreateSnapshot is the public status of every request of the group.
func (g *Group) RecreateSnapshot() []lifecycle.RecreateStatus {
	out := make([]lifecycle.RecreateStatus, 0, len(g.rc.reqs))
	for _, r := range g.rc.reqs {
		out = append(out, r.status(g.rc.holder == r.id))
	}
	return out
}

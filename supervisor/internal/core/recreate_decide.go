package core

import (
	"fmt"
	"strings"
	"time"

	"github.com/podsup/podsup/supervisor/lifecycle"
)

// This file decides a recreate request's next state: decideRecreate is a
// pure function of (request, observed processes, now). It does no I/O and
// reads no clock; the group core feeds it and carries out its orders.
//
// Time: now and every time it compares come from the supervisor's clock,
// whose readings carry Go's monotonic clock (docs/semantics.md C9). The wall
// readings in a request and an observation are for display and are never
// compared (C9: kruise once judged "already recreated" by comparing a
// container's StartedAt with the request's creation time, two clocks from
// two machines; a drifting node then skipped kills or stalled requests).
// Recreation is judged by instance identity only.

// recreateState is one request: its spec and status, owned by the core.
type recreateState struct {
	id   string
	spec lifecycle.RecreateSpec
	// seq orders requests of a group (C2: first come, first served).
	seq uint64

	phase   lifecycle.RecreatePhase
	message string
	// created, activated and completed are decision-clock readings.
	created, activated, completed time.Time
	// The same instants on the wall clock, for display only.
	createdWall, activatedWall, completedWall time.Time
	// unreadySince is when the group's readiness was forced false (C3);
	// zero while not (yet) forced.
	unreadySince time.Time
	procs        []procRecreate
}

// procRecreate is one process's state inside a request.
type procRecreate struct {
	name    string
	phase   lifecycle.ProcessRecreatePhase
	message string
	// baseline is the instance the request replaces (C7's statusContext):
	// set when the kill is ordered.
	baseline string
	// instance is the new instance that succeeded.
	instance string
}

// observedProcess is what the core knows of one target process at now.
type observedProcess struct {
	exists bool // a main process of the group
	wanted bool // not stopped by a request
	done   bool // ended for good: its restart policy will not restart it
	// current is the live instance ("" between instances); last is the
	// newest finished one.
	current, last string
	// running: started and not being stopped; ready as probes say (P12).
	running, ready bool
	// startedAt is the current instance's start on the decision clock.
	startedAt time.Time
	// startedWall is the same start on the wall clock: display only,
	// never compared (C9).
	startedWall time.Time
	// lastExit describes the newest finished instance, for messages.
	lastExit string
}

// recreateOrders are what the core must do after a decision.
type recreateOrders struct {
	// kill lists processes to recreate now: kill through pre_stop and
	// grace (C4), new instance at once (X7).
	kill []string
	// holdReadiness forces the group's readiness false from now (C3).
	holdReadiness bool
	// wake is when the request must be decided again even if nothing
	// happens (unready grace, min_started, deadline, TTL); zero: never.
	wake time.Time
	// remove: ttl_after_finished has passed; forget the request.
	remove bool
}

func (r recreateState) clone() recreateState {
	r.spec = r.spec.Clone()
	r.procs = append([]procRecreate(nil), r.procs...)
	return r
}

// activate makes a Pending request the group's active one (C2, X8).
func (r recreateState) activate(now, wall time.Time) recreateState {
	r = r.clone()
	r.phase, r.activated, r.activatedWall = lifecycle.RecreateRecreating, now, wall
	return r
}

// decideRecreate is the request's step at now: C3's unready grace, C5's
// order, C6's failure policy, C7's per-process judgement, C8's deadline and
// the TTL. wall stamps display times only.
func decideRecreate(r recreateState, observe func(process string) observedProcess, now, wall time.Time) (recreateState, recreateOrders) {
	r = r.clone()
	var o recreateOrders
	wakeAt := func(t time.Time) {
		if !t.IsZero() && (o.wake.IsZero() || t.Before(o.wake)) {
			o.wake = t
		}
	}
	if r.phase == lifecycle.RecreateCompleted {
		end := r.completed.Add(r.spec.TTL())
		if !now.Before(end) {
			o.remove = true
		} else {
			wakeAt(end)
		}
		return r, o
	}

	if r.phase == lifecycle.RecreateRecreating {
		// C3: hold readiness first; kill only once the grace is spent.
		mayKill := true
		if g := r.spec.UnreadyGracePeriod; g != nil {
			if r.unreadySince.IsZero() {
				r.unreadySince, o.holdReadiness = now, true
			}
			if end := r.unreadySince.Add(*g); now.Before(end) {
				mayKill = false
				wakeAt(end)
			}
		}
		// Judge, then order kills, until nothing changes: an order that
		// fails at once (a stopped process) lets an ordered, ignoring
		// request move on in the same step.
		// Processes ordered in this step are not judged in it: what was
		// observed predates the order.
		ordered := make([]bool, len(r.procs))
		for changed := true; changed; {
			changed = false
			for i := range r.procs {
				if r.procs[i].phase == lifecycle.ProcessRecreateRecreating && !ordered[i] {
					wakeAt(judgeRecreating(&r.procs[i], observe(r.procs[i].name), r.spec.MinStarted, now))
				}
			}
			if r.failFast() {
				break
			}
			if mayKill {
				for _, i := range r.turn() {
					p := &r.procs[i]
					ob := observe(p.name)
					switch {
					case !ob.exists:
						p.phase, p.message = lifecycle.ProcessRecreateFailed, "process is no longer in the group (removed by a reload)"
					case !ob.wanted:
						p.phase, p.message = lifecycle.ProcessRecreateFailed, "process is stopped; a stopped process is not recreated"
					default:
						p.phase, p.baseline = lifecycle.ProcessRecreateRecreating, ob.current
						if p.baseline == "" {
							p.baseline = ob.last
						}
						p.message = ""
						ordered[i] = true
						o.kill = append(o.kill, p.name)
					}
					changed = true
				}
			}
		}
		switch failed := r.failedNames(); {
		case len(failed) > 0 && r.spec.Policy() == lifecycle.FailurePolicyFail:
			o.kill = nil // completed: nothing more is recreated
			return r.complete(now, wall, fmt.Sprintf("process %s failed (failure_policy fail): %s", failed[0], r.proc(failed[0]).message),
				"not recreated: the request completed at the failure of "+failed[0]), o.withoutWakes()
		case r.allFinished():
			msg := ""
			if len(failed) > 0 {
				msg = "failed: " + strings.Join(failed, ", ")
			}
			return r.complete(now, wall, msg, ""), o.withoutWakes()
		}
	}

	// C8: the deadline counts from acceptance, queued time included.
	if d := r.spec.ActiveDeadline; d > 0 {
		end := r.created.Add(d)
		if !now.Before(end) {
			o.kill = nil
			return r.complete(now, wall, fmt.Sprintf("exceeded the active deadline of %s", d),
				fmt.Sprintf("not recreated within the active deadline of %s", d)), o.withoutWakes()
		}
		wakeAt(end)
	}
	return r, o
}

// judgeRecreating is C7 for a process whose kill was ordered, with C9's
// rule: recreated means a new instance id, and min_started is measured on
// the monotonic clock. It returns when to look again (min_started), or zero.
func judgeRecreating(p *procRecreate, ob observedProcess, minStarted time.Duration, now time.Time) time.Time {
	switch {
	case !ob.exists:
		p.phase, p.message = lifecycle.ProcessRecreateFailed, "process is no longer in the group (removed by a reload)"
		return time.Time{}
	case !ob.wanted:
		p.phase, p.message = lifecycle.ProcessRecreateFailed, "process was stopped by a request while being recreated"
		return time.Time{}
	case ob.done:
		p.phase, p.message = lifecycle.ProcessRecreateFailed, fmt.Sprintf("process ended for good (%s): its restart policy does not restart it", ob.lastExit)
		return time.Time{}
	}
	if ob.current == "" || ob.current == p.baseline || !ob.running || !ob.ready {
		return time.Time{} // not recreated yet, or not ready: keep waiting (C7)
	}
	// C7's strict comparison on the monotonic clock: ran longer than
	// min_started. The first instant where that holds is one nanosecond
	// (the clock's resolution) after min_started.
	if now.Sub(ob.startedAt) > minStarted {
		p.phase, p.instance, p.message = lifecycle.ProcessRecreateSucceeded, ob.current, ""
		return time.Time{}
	}
	return ob.startedAt.Add(minStarted + time.Nanosecond)
}

// withoutWakes drops the wake-ups of a request that just completed: the
// core decides it again at once and asks for the TTL's.
func (o recreateOrders) withoutWakes() recreateOrders {
	o.wake = time.Time{}
	return o
}

// turn lists the processes whose kill may be ordered now (C5): with
// ordered, the first unfinished one if it is still Pending; otherwise every
// Pending one.
func (r *recreateState) turn() []int {
	var out []int
	for i, p := range r.procs {
		switch p.phase {
		case lifecycle.ProcessRecreateSucceeded, lifecycle.ProcessRecreateFailed:
			continue
		case lifecycle.ProcessRecreatePending:
			out = append(out, i)
		}
		if r.spec.Ordered {
			return out
		}
	}
	return out
}

// failFast reports C6's fail policy meeting a failure.
func (r *recreateState) failFast() bool {
	return r.spec.Policy() == lifecycle.FailurePolicyFail && len(r.failedNames()) > 0
}

func (r *recreateState) failedNames() []string {
	var out []string
	for _, p := range r.procs {
		if p.phase == lifecycle.ProcessRecreateFailed {
			out = append(out, p.name)
		}
	}
	return out
}

func (r *recreateState) allFinished() bool {
	for _, p := range r.procs {
		if p.phase != lifecycle.ProcessRecreateSucceeded && p.phase != lifecycle.ProcessRecreateFailed {
			return false
		}
	}
	return true
}

func (r *recreateState) proc(name string) *procRecreate {
	for i := range r.procs {
		if r.procs[i].name == name {
			return &r.procs[i]
		}
	}
	return nil
}

// complete ends the request at now. Processes not yet finished become
// Failed with unfinished as their message (C8 for the deadline; podsup
// does the same for the fail policy and a shutdown, so that a completed
// request holds only final process states).
func (r recreateState) complete(now, wall time.Time, message, unfinished string) recreateState {
	for i := range r.procs {
		p := &r.procs[i]
		if p.phase != lifecycle.ProcessRecreateSucceeded && p.phase != lifecycle.ProcessRecreateFailed {
			p.phase, p.message = lifecycle.ProcessRecreateFailed, unfinished
		}
	}
	r.phase, r.message = lifecycle.RecreateCompleted, message
	r.completed, r.completedWall = now, wall
	return r
}

// abort completes a request that cannot go on (the group is shutting
// down), whatever its phase.
func (r recreateState) abort(now, wall time.Time, why string) recreateState {
	r = r.clone()
	if r.activated.IsZero() {
		r.activated, r.activatedWall = now, wall
	}
	return r.complete(now, wall, why, "not recreated: "+why)
}

// status is the request's public snapshot.
func (r *recreateState) status(holdsReadiness bool) lifecycle.RecreateStatus {
	st := lifecycle.RecreateStatus{
		ID: r.id, Spec: r.spec.Clone(), Phase: r.phase, Message: r.message,
		HoldsReadiness: holdsReadiness,
		CreationTime:   r.createdWall, StartTime: r.activatedWall, CompletionTime: r.completedWall,
	}
	for _, p := range r.procs {
		st.Processes = append(st.Processes, lifecycle.ProcessRecreateStatus{
			Name: p.name, Phase: p.phase, Message: p.message,
			PreviousInstanceID: p.baseline, InstanceID: p.instance,
		})
	}
	return st
}

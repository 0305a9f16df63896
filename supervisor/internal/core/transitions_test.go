package core

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// TestTransitionTableIsComplete: every (phase, trigger) pair has an
// outcome, a handler or an explicit ignore, and a handler's outcomes are
// phases.
func TestTransitionTableIsComplete(t *testing.T) {
	for ph := phase(0); ph < numPhases; ph++ {
		for on := trigger(0); on < numTriggers; on++ {
			c := transitions[ph][on]
			switch {
			case c.ignored && (c.do != nil || len(c.to) > 0):
				t.Errorf("(%s, %s) is ignored and has a handler or outcomes", ph, on)
			case c.ignored:
			case c.do == nil:
				t.Errorf("(%s, %s) has no outcome", ph, on)
			case len(c.to) == 0:
				t.Errorf("(%s, %s) has a handler but lists no phase it leads to", ph, on)
			}
			for _, next := range c.to {
				if next > phaseGone {
					t.Errorf("(%s, %s) leads to %s, which is no phase", ph, on, next)
				}
			}
		}
	}
	// Every phase but the first is reached by some transition.
	reached := map[phase]bool{}
	for ph := phase(0); ph < numPhases; ph++ {
		for on := trigger(0); on < numTriggers; on++ {
			for _, next := range transitions[ph][on].to {
				reached[next] = true
			}
		}
	}
	for ph := phaseStarting; ph <= phaseGone; ph++ {
		if !reached[ph] {
			t.Errorf("no transition leads to %s", ph)
		}
	}
}

// TestTransitionsLeadOnlyWhereTheTableSays fires every trigger at an
// instance in every phase, for processes with and without hooks, with
// and without errors, in and out of shutdown, and checks that the
// instance ends in a phase its cell lists (and, for an ignored trigger,
// that nothing changed), with no InternalError event.
func TestTransitionsLeadOnlyWhereTheTableSays(t *testing.T) {
	hook := &spec.Hook{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"hook"}}}}
	variants := []struct {
		name     string
		hooks    bool
		err      error
		shutdown bool
		grace    time.Duration
	}{
		{"plain", false, nil, false, 30 * time.Second},
		{"hooks", true, nil, false, 30 * time.Second},
		{"hooks, errors", true, errors.New("boom"), false, 30 * time.Second},
		{"no hooks, errors, shutdown", false, errors.New("boom"), true, 30 * time.Second},
		{"hooks, no grace", true, nil, false, 0},
	}
	for _, v := range variants {
		for ph := phase(0); ph < numPhases; ph++ {
			for on := trigger(0); on < numTriggers; on++ {
				g := spec.Group{Name: "g", TerminationGracePeriod: spec.Durp(v.grace), Processes: []spec.Process{{Name: "app", Command: []string{"x"}}}}
				if v.hooks {
					pr := &g.Processes[0]
					pr.PreStart, pr.PostStart, pr.PreStop, pr.PostStop = hook, hook, hook, hook
				}
				c := NewGroup(Config{Group: g, Backoff: spec.DefaultBackoff(), KillAttempts: 1})
				now := time.Unix(1000, 0)
				c.now, c.out = now, &Plan{}
				c.shutdown = v.shutdown
				p := c.mains[0]
				p.starts = 1
				inst := instanceIn(ph, now)
				p.inst = inst
				before := *inst
				c.fire(p, eventFor(on, v.err))
				for _, a := range c.out.Actions {
					if e, ok := a.(EmitAction); ok && e.Event.Reason == lifecycle.EventInternalError {
						t.Errorf("%s: (%s, %s): %s", v.name, ph, on, e.Event.Message)
					}
				}
				got := phaseGone
				if p.inst == inst {
					got = inst.phase
				}
				cell := transitions[ph][on]
				switch {
				case cell.ignored && (p.inst != inst || inst.phase != before.phase || len(c.out.Actions) > 0):
					t.Errorf("%s: ignored (%s, %s) changed the instance to %s or acted: %v", v.name, ph, on, got, c.out.Actions)
				case !cell.ignored && !slices.Contains(cell.to, got):
					t.Errorf("%s: (%s, %s) led to %s, the table says %v", v.name, ph, on, got, cell.to)
				}
			}
		}
	}
}

// instanceIn is an instance as the core leaves it in phase ph.
func instanceIn(ph phase, now time.Time) *instance {
	inst := &instance{id: "app-0", phase: ph, pid: 42, startedAt: now}
	if ph.stopping() {
		inst.stop = &stopState{reason: lifecycle.KillStop, by: "test", grace: 30 * time.Second, begun: now, deadline: now, shown: true}
		if ph == phaseKilling || ph == phaseKilled {
			inst.stop.kills, inst.stop.killedAt = 1, now
		}
	}
	if ph == phaseStartCancelled {
		inst.deferred = &deferredStop{stopRequest: stopRequest{reason: lifecycle.KillStop, by: "test"}}
	}
	return inst
}

// eventFor is a trigger with a plausible payload.
func eventFor(on trigger, err error) event {
	ev := event{on: on, err: err, pid: 43, code: 1, at: time.Unix(1000, 0), by: "test"}
	switch on {
	case onPreStartFailed, onStartFailed, onPostStartFailed:
		if ev.err == nil {
			ev.err = errors.New("failed")
		}
	case onStop:
		ev.stop = stopRequest{reason: lifecycle.KillStop, by: "test"}
	case onExited:
		ev.exit = lifecycle.ExitStatus{Code: 1}
	case onProbeResult:
		ev.probe = ProbeInput{Instance: "app-0", Probe: spec.Liveness, Message: "down"}
	case onProbeReport:
		ev.probe = ProbeInput{Instance: "app-0", Probe: spec.Liveness, Message: "down"}
	}
	return ev
}

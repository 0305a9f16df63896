package core

import (
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// S6: from the instant a stop is decided the process shows Terminating
// and not ready, its state still running (the process is alive), through
// the whole pre_stop and grace; once it is gone, terminated: Stopped.
func TestTerminatingFromTheStopOn(t *testing.T) {
	s := newSim(t, drainGroup(), spec.DefaultBackoff(), 2*time.Second, constant(simRun{RunFor: -1}))
	s.preStop["app"] = 8 * time.Second
	s.runUntil(time.Second)
	if ps := s.status("app"); ps.State != lifecycle.StateRunning || !ps.Ready || ps.Terminating != nil {
		t.Fatalf("before the stop: %+v, want running, ready, not terminating", ps)
	}
	s.command(CmdStop, "app", nil, "uid 0")
	for _, at := range []time.Duration{time.Second, 5 * time.Second, 8900 * time.Millisecond} {
		s.runUntil(at)
		ps := s.status("app")
		if ps.State != lifecycle.StateRunning || ps.Ready || ps.Terminating == nil {
			t.Fatalf("S6: at %s, while pre_stop runs: %+v, want running, not ready, terminating", at, ps)
		}
		if tm := ps.Terminating; tm.Reason != lifecycle.KillStop || tm.By != "uid 0" || !tm.Since.Equal(s.epoch.Add(time.Second)) {
			t.Errorf("S6: at %s: terminating %+v, want Stop by uid 0 since 1s", at, *tm)
		}
		if s.core.Snapshot().Ready {
			t.Errorf("S6: at %s the group is ready while its one process stops", at)
		}
	}
	// The snapshot taken in the step of the request already says so: the
	// status watch sends a change at once.
	var seen bool
	for _, g := range s.snapshots {
		if ps, _ := g.Process("app"); ps.Terminating != nil {
			seen = true
			break
		}
	}
	if !seen {
		t.Error("S6: no snapshot shows the stop")
	}
	s.runUntil(20 * time.Second)
	ps := s.status("app")
	if ps.State != lifecycle.StateTerminated || ps.Terminating != nil || ps.Ready {
		t.Fatalf("after the stop: %+v, want terminated, no longer terminating", ps)
	}
	if ps.Reason != lifecycle.ReasonStopped || ps.Terminated.Reason != lifecycle.ReasonStopped || ps.Terminated.ExitCode != 143 || ps.Terminated.Signal != syscall.SIGTERM {
		t.Errorf("X13: ended %+v, want reason Stopped with exit 143 (SIGTERM) kept", *ps.Terminated)
	}
	if st := s.core.Snapshot(); st.Phase != lifecycle.PhaseStopped {
		t.Errorf("X13: group phase %s after a stop, want Stopped", st.Phase)
	}
	for _, e := range s.events {
		if e.Type == lifecycle.EventWarning {
			t.Errorf("X13: a requested stop made a warning: %+v", e)
		}
	}
}

// S6: a stop decided while the start is in flight, and a shutdown stop
// that waits for the process's dependents (W8), show Terminating too.
func TestTerminatingBeforeTheStopSignal(t *testing.T) {
	t.Run("start in flight", func(t *testing.T) {
		// The first reconcile starts the instance; the start is not
		// answered (the sim would answer at once): the core alone.
		g := NewGroup(Config{Group: drainGroup(), Backoff: spec.DefaultBackoff()})
		now := clock.Epoch
		g.Step(now, TimerInput{})
		g.Step(now, CommandInput{Kind: CmdStop, Process: "app", By: "test"})
		ps, _ := g.Snapshot().Process("app")
		if ps.Terminating == nil || ps.Terminating.Reason != lifecycle.KillStop || ps.Ready {
			t.Errorf("S6: a stop of a start in flight: %+v, want terminating, not ready", ps)
		}
	})
	t.Run("ordered shutdown waiting for dependents", func(t *testing.T) {
		s := newSim(t, chain(), scaled, 0, constant(simRun{RunFor: -1, TermExit: time.Second}))
		s.runUntil(time.Second)
		s.feed(CommandInput{Kind: CmdShutdown, By: "test", Ordered: true})
		for _, name := range []string{"a", "b", "c"} {
			ps := s.status(name)
			if ps.State != lifecycle.StateRunning || ps.Ready || ps.Terminating == nil || ps.Terminating.Reason != lifecycle.KillShutdown {
				t.Errorf("S6: %s at the shutdown: %+v, want running, not ready, terminating (Shutdown)", name, ps)
			}
		}
		s.runUntil(10 * time.Second)
		for _, name := range []string{"a", "b", "c"} {
			if ps := s.status(name); ps.State != lifecycle.StateTerminated || ps.Reason != lifecycle.ReasonStopped {
				t.Errorf("X13: %s after the shutdown: %+v, want terminated: Stopped", name, ps)
			}
		}
	})
}

package core

import (
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// drainGroup is one process "app" with an 8 s pre_stop hook (scripted by
// the sim) and a 30 s grace; it exits on its stop signal.
func drainGroup() spec.Group {
	g := oneProcess(spec.RestartAlways)
	g.TerminationGracePeriod = spec.Durp(30 * time.Second)
	g.Processes[0].PreStop = &spec.Hook{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"drain"}}}}
	return g
}

// X13: which ends are a requested stop (Stopped, no failure) and which
// keep kubelet's reasons.
func TestRequestedStopReason(t *testing.T) {
	cases := []struct {
		name   string
		run    simRun
		act    func(s *sim)
		reason string
		last   bool // the reason is the previous instance's (a new one runs)
	}{
		{"X13 stop", simRun{RunFor: -1}, func(s *sim) { s.command(CmdStop, "app", nil, "test") }, lifecycle.ReasonStopped, false},
		{"X13 stop that ends in SIGKILL", simRun{RunFor: -1, IgnoreTerm: true},
			func(s *sim) { s.command(CmdStop, "app", spec.Durp(0), "test") }, lifecycle.ReasonStopped, false},
		{"X13 shutdown", simRun{RunFor: -1}, func(s *sim) { s.command(CmdShutdown, "", nil, "test") }, lifecycle.ReasonStopped, false},
		{"X13 restart (X7)", simRun{RunFor: -1}, func(s *sim) { s.command(CmdRestart, "app", nil, "test") }, lifecycle.ReasonStopped, true},
		{"X13 reload replacing the process", simRun{RunFor: -1}, func(s *sim) {
			next := oneProcess(spec.RestartAlways)
			next.TerminationGracePeriod = spec.Durp(30 * time.Second)
			next.Processes[0].Command = []string{"v2"}
			s.feed(ReloadInput{Group: next})
		}, lifecycle.ReasonStopped, true},
		{"R4 a liveness kill is a failure", simRun{RunFor: -1, LivenessFailAfter: 2 * time.Second}, func(*sim) {}, lifecycle.ReasonError, true},
		{"E2 an exit of its own is Error", simRun{RunFor: 2 * time.Second, Code: 3}, func(*sim) {}, lifecycle.ReasonError, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := oneProcess(spec.RestartAlways)
			g.TerminationGracePeriod = spec.Durp(30 * time.Second)
			if c.reason == lifecycle.ReasonError && !c.last {
				g.RestartPolicy = spec.RestartNever
			}
			n := 0
			s := newSim(t, g, spec.DefaultBackoff(), 2*time.Second, func(string, int) simRun {
				n++
				if n > 1 {
					return simRun{RunFor: -1}
				}
				return c.run
			})
			s.runUntil(time.Second)
			c.act(s)
			s.runUntil(60 * time.Second)
			ps := s.status("app")
			term := ps.Terminated
			if c.last {
				term = ps.LastTermination
			}
			if term == nil || term.Reason != c.reason {
				t.Fatalf("ended %+v (status %+v), want reason %s", term, ps, c.reason)
			}
		})
	}
}

// X13: a plain init stopped while it runs is Stopped, unless it exited 0,
// which completes it (I3); an OOM kill during a stop stays OOMKilled.
func TestRequestedStopReasonExceptions(t *testing.T) {
	t.Run("I3 an init that exits 0 on its stop completed", func(t *testing.T) {
		g := oneProcess(spec.RestartAlways)
		g.Init = []spec.Process{{Name: "init", Command: []string{"x"}}}
		s := newSim(t, g, spec.DefaultBackoff(), 0, func(p string, _ int) simRun {
			if p == "init" {
				return simRun{RunFor: -1, TermExit: 0}
			}
			return simRun{RunFor: -1}
		})
		s.runUntil(time.Second)
		// Exit 0 on SIGTERM: scripted by hand, the sim's exit is 143.
		id := s.status("init").InstanceID
		s.command(CmdStop, "", nil, "test")
		s.pending = nil
		s.feed(ExitedInput{Instance: id, Status: lifecycle.ExitStatus{Code: 0}, At: s.now})
		if ps := s.status("init"); ps.Terminated == nil || ps.Terminated.Reason != lifecycle.ReasonCompleted {
			t.Errorf("I3: %+v, want Completed", ps)
		}
	})
	t.Run("OOMKilled during a stop", func(t *testing.T) {
		s := newSim(t, drainGroup(), spec.DefaultBackoff(), 0, constant(simRun{RunFor: -1}))
		s.runUntil(time.Second)
		id := s.status("app").InstanceID
		s.command(CmdStop, "app", nil, "test")
		s.feed(ExitedInput{Instance: id, Status: lifecycle.ExitStatus{Code: 137, Signal: syscall.SIGKILL, OOMKilled: true}, At: s.now})
		if ps := s.status("app"); ps.Terminated == nil || ps.Terminated.Reason != lifecycle.ReasonOOMKilled {
			t.Errorf("%+v, want OOMKilled", ps)
		}
	})
}

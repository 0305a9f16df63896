package core

import (
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
)

// R8: the restart the worker arms in advance (ArmedRestart) is the core's
// own decision. Every simulation checks each armed exit against the step
// that follows it (sim.stepArmed); these cases put restarts without
// back-off through the inputs that may meet an armed instance.

var zeroBackoff = spec.Backoff{Reset: time.Hour} // initial and max 0s: no wait ever

func TestArmedRestartIsTheCoresDecision(t *testing.T) {
	loop := func(policy spec.RestartPolicy) spec.Group { return oneProcess(policy) }
	cases := []struct {
		rule   string
		group  spec.Group
		run    simRun
		b      spec.Backoff
		act    func(s *sim)
		armed  bool // some exit was armed
		starts int  // at least this many starts by 10s
	}{
		{"R8 always, exit 0", loop(spec.RestartAlways), simRun{RunFor: time.Second}, zeroBackoff, nil, true, 10},
		{"R8 always, exit 1", loop(spec.RestartAlways), simRun{RunFor: time.Second, Code: 1}, zeroBackoff, nil, true, 10},
		{"R8 on-failure, exit 1", loop(spec.RestartOnFailure), simRun{RunFor: time.Second, Code: 1}, zeroBackoff, nil, true, 10},
		{"R2 on-failure, exit 0: armed, not covered", loop(spec.RestartOnFailure), simRun{RunFor: time.Second}, zeroBackoff, nil, false, 1},
		{"R1 never is not armed", loop(spec.RestartNever), simRun{RunFor: time.Second, Code: 1}, zeroBackoff, nil, false, 1},
		{"B1 a back-off is not armed", loop(spec.RestartAlways), simRun{RunFor: time.Second}, scaled, nil, false, 5},
		{"R4 liveness kills", loop(spec.RestartAlways), simRun{RunFor: -1, LivenessFailAfter: 500 * time.Millisecond}, zeroBackoff, nil, true, 10},
		{"X7 stop, start and restart in between", loop(spec.RestartAlways), simRun{RunFor: 300 * time.Millisecond}, zeroBackoff, func(s *sim) {
			s.runUntil(1100 * time.Millisecond)
			s.command(CmdStop, "app", nil, "test")
			s.runUntil(2 * time.Second)
			s.command(CmdStart, "app", nil, "test")
			s.runUntil(3050 * time.Millisecond)
			s.command(CmdRestart, "app", nil, "test")
		}, true, 10},
		{"X9 shutdown", loop(spec.RestartAlways), simRun{RunFor: 300 * time.Millisecond}, zeroBackoff, func(s *sim) {
			s.runUntil(2 * time.Second)
			s.command(CmdShutdown, "", nil, "test")
		}, true, 5},
		{"O3 a sidecar's exits", func() spec.Group {
			g := appAndSidecar()
			g.Init = []spec.Process{{Name: "side2", Command: []string{"x"}, RestartPolicy: spec.RestartAlways}}
			return g
		}(), simRun{RunFor: 400 * time.Millisecond, Code: 2}, zeroBackoff, nil, true, 10},
		{"X11 critical, restarted", func() spec.Group {
			g := loop(spec.RestartAlways)
			g.Processes[0].Critical = true
			return g
		}(), simRun{RunFor: time.Second, Code: 1}, zeroBackoff, nil, true, 10},
		{"R7 backoff_limit is not armed", func() spec.Group {
			g := loop(spec.RestartOnFailure)
			g.BackoffLimit = new(3)
			return g
		}(), simRun{RunFor: time.Second, Code: 1}, zeroBackoff, nil, false, 4},
		{"H1 post_start is not armed", func() spec.Group {
			g := loop(spec.RestartAlways)
			g.Processes[0].PostStart = &spec.Hook{Handler: spec.Handler{Sleep: &spec.SleepAction{Duration: time.Millisecond}}}
			return g
		}(), simRun{RunFor: time.Second}, zeroBackoff, nil, false, 1},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			s := newSim(t, c.group, c.b, 0, constant(c.run))
			if c.act != nil {
				c.act(s)
			}
			s.runUntil(10 * time.Second)
			if got := s.armedExits > 0; got != c.armed {
				t.Errorf("%d armed exits, want armed=%v", s.armedExits, c.armed)
			}
			if n := len(s.starts["app"]); n < c.starts {
				t.Errorf("%d starts of app, want at least %d", n, c.starts)
			}
		})
	}
}

// An instance is armed only once it runs, and only the exits its policy
// restarts are covered (anyExit).
func TestArmedRestartAnswer(t *testing.T) {
	s := newSim(t, oneProcess(spec.RestartOnFailure), zeroBackoff, 0, constant(simRun{RunFor: -1}))
	s.runUntil(time.Second)
	id := s.status("app").InstanceID
	next, ps, anyExit, ok := s.core.ArmedRestart(id)
	if !ok || anyExit || ps.Name != "app" || next == id || next == "" {
		t.Fatalf("ArmedRestart(%q) = %q, %q, anyExit %v, ok %v; want the next instance of app, non-zero exits only", id, next, ps.Name, anyExit, ok)
	}
	if _, _, _, ok := s.core.ArmedRestart("nonesuch"); ok {
		t.Error("an unknown instance was armed")
	}
	s.command(CmdStop, "app", nil, "test")
	if _, _, _, ok := s.core.ArmedRestart(id); ok {
		t.Error("an instance being stopped was armed")
	}
}

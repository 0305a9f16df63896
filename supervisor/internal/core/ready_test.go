package core

import (
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// S3: a process is ready only once it has started. Without a readiness
// probe, readiness's verdict is true from the start, yet a startup probe
// still holds ready back until it passes (kubelet's UpdatePodStatus sets
// Ready only for a started container).
func TestReadyWaitsForTheStartupProbe(t *testing.T) {
	g := spec.Group{
		Name: "g", RestartPolicy: spec.RestartAlways, TerminationGracePeriod: spec.Durp(30 * time.Second),
		Processes: []spec.Process{{Name: "app", Command: []string{"x"}, StartupProbe: tcpProbe}},
	}
	s := newSim(t, g, spec.DefaultBackoff(), 0, func(string, int) simRun { return simRun{RunFor: -1} })
	s.schedule(3*time.Second, ProbeInput{Instance: "app-0", Probe: spec.Startup, Success: true})
	s.runUntil(2 * time.Second)
	if ps := s.status("app"); ps.State != lifecycle.StateRunning || ps.Started || ps.Ready {
		t.Errorf("S3: before its startup probe passed: %+v, want running, neither started nor ready", ps)
	}
	if g := s.core.Snapshot(); g.Ready {
		t.Error("S3: the group is ready while its one process has not started")
	}
	if n := len(s.eventsWith(lifecycle.EventReady)); n != 0 {
		t.Errorf("%d Ready events before the startup probe passed", n)
	}
	s.runUntil(4 * time.Second)
	if ps := s.status("app"); !ps.Started || !ps.Ready {
		t.Errorf("S3: after its startup probe passed: %+v, want started and ready", ps)
	}
	if n := len(s.eventsWith(lifecycle.EventReady)); n != 1 {
		t.Errorf("%d Ready events once started, want 1 (W3: the moment it turned ready)", n)
	}
}

// S3: with a readiness probe as well, a success of the readiness probe
// before the startup probe's does not make the process ready.
func TestReadinessBeforeStartedIsHeldBack(t *testing.T) {
	g := spec.Group{
		Name: "g", RestartPolicy: spec.RestartAlways, TerminationGracePeriod: spec.Durp(30 * time.Second),
		Processes: []spec.Process{{Name: "app", Command: []string{"x"}, StartupProbe: tcpProbe, ReadinessProbe: tcpProbe}},
	}
	s := newSim(t, g, spec.DefaultBackoff(), 0, func(string, int) simRun { return simRun{RunFor: -1} })
	s.schedule(1*time.Second, ProbeInput{Instance: "app-0", Probe: spec.Readiness, Success: true})
	s.schedule(3*time.Second, ProbeInput{Instance: "app-0", Probe: spec.Startup, Success: true})
	s.runUntil(2 * time.Second)
	if ps := s.status("app"); ps.Ready {
		t.Errorf("S3: ready before started: %+v", ps)
	}
	s.runUntil(4 * time.Second)
	if ps := s.status("app"); !ps.Ready {
		t.Errorf("S3: not ready once started with a passing readiness probe: %+v", ps)
	}
}

package core

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Process-level reload in the core: the old instance of a changed or removed
// process leaves through the kill path with its own spec.

func TestReloadStopsTheOldInstanceWithItsOwnSpec(t *testing.T) {
	// K3, K6: the changed process's old instance stops with the old
	// spec's pre_stop and stop signal, even though the new spec has
	// neither; R4: then the new spec starts at once.
	g := spec.Group{Name: "g", TerminationGracePeriod: spec.Durp(30 * time.Second), Processes: procs("a", "b")}
	g.Processes[1].PreStop = &spec.Hook{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"old"}}}}
	g.Processes[1].StopSignal = syscall.SIGINT
	s := newSim(t, g, spec.DefaultBackoff(), 0, constant(simRun{RunFor: -1}))
	s.preStop["b"] = 2 * time.Second
	s.runUntil(time.Second)
	old := s.status("b")
	next := g
	next.Processes = procs("a", "b")
	next.Processes[1].Command = []string{"b", "v2"}
	s.feed(ReloadInput{Group: next})
	s.runUntil(10 * time.Second)
	assertTimes(t, "K3 stop signal after the old pre_stop", s.signalsOf("b"), secs(3))
	if term := s.status("b").LastTermination; term == nil || term.InstanceID != old.InstanceID || term.Signal != syscall.SIGINT {
		t.Errorf("K6: old instance ended %+v, want by its own stop signal", term)
	}
	assertTimes(t, "R4 starts", s.starts["b"], secs(0, 3))
	if s.core.byName["b"].spec.Command[1] != "v2" || len(s.starts["a"]) != 1 {
		t.Errorf("spec %v, a starts %v", s.core.byName["b"].spec.Command, s.starts["a"])
	}
	var reasons []string
	for _, e := range s.events {
		if e.Process == "b" {
			reasons = append(reasons, e.Reason)
		}
	}
	if got := strings.Join(reasons, " "); got != "Created Started Reloaded Killing Created Started" { // E1, E2
		t.Errorf("events of b: %s", got)
	}
}

func TestReloadRemovedProcessStopsThroughTheKillPath(t *testing.T) {
	g := spec.Group{Name: "g", TerminationGracePeriod: spec.Durp(5 * time.Second), Processes: procs("a", "b")}
	s := newSim(t, g, spec.DefaultBackoff(), 0, constant(simRun{RunFor: -1, IgnoreTerm: true}))
	s.runUntil(time.Second)
	next := g
	next.Processes = procs("a")
	s.feed(ReloadInput{Group: next})
	if _, ok := s.core.Snapshot().Process("b"); ok {
		t.Error("a removed process is still shown")
	}
	s.runUntil(time.Minute)
	// K6: SIGTERM at once (ignored), SIGKILL after the 5 s grace.
	assertTimes(t, "stop signal", s.signalsOf("b"), secs(1))
	if len(s.kills) != 1 || s.kills[0].at != 6*time.Second || len(s.starts["b"]) != 1 {
		t.Errorf("kills %v starts %v", s.kills, s.starts["b"])
	}
	if len(s.core.leaving) != 0 || len(s.starts["a"]) != 1 {
		t.Errorf("leaving %v, a starts %v", s.core.leaving, s.starts["a"])
	}
	// Added again later, under the same name: new, unique instance ids.
	s.feed(ReloadInput{Group: g})
	s.runUntil(2 * time.Minute)
	if b := s.status("b"); b.State != lifecycle.StateRunning || b.RestartCount != 0 || b.InstanceID == "b-0" {
		t.Errorf("re-added b: %+v", b)
	}
}

// procs is main processes of those names, each with command [name v1].
func procs(names ...string) []spec.Process {
	var out []spec.Process
	for _, n := range names {
		out = append(out, spec.Process{Name: n, Command: []string{n, "v1"}})
	}
	return out
}

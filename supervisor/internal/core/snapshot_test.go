package core

import (
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// SnapshotSince hands back the published status itself while nothing in
// it changed, shares a process's status that did not change, and shares
// nothing with the core. (Every sim also checks that it equals Snapshot
// after each step: sim.feed.)
func TestSnapshotSinceSharesWhatDidNotChange(t *testing.T) {
	g := oneProcess(spec.RestartAlways)
	other := g.Processes[0]
	other.Name = "other"
	g.Processes = append(g.Processes, other)
	run := func(process string, n int) simRun {
		if process == "app" && n == 0 {
			return simRun{RunFor: time.Second, Code: 1} // then restarted, for good
		}
		return simRun{RunFor: -1}
	}
	s := newSim(t, g, spec.DefaultBackoff(), 0, run)
	s.runUntil(5 * time.Second)
	first := s.core.SnapshotSince(nil)
	if again := s.core.SnapshotSince(first); again != first {
		t.Fatalf("SnapshotSince with nothing changed made a new status")
	}
	app := processStatus(t, first, "app")
	if app.LastTermination == nil || app.State != lifecycle.StateRunning {
		t.Fatalf("app's status %+v: want running, with a last termination", app)
	}
	if app.LastTermination == s.core.byName["app"].last {
		t.Fatalf("a published status points at the core's last termination")
	}

	s.feed(CommandInput{Kind: CmdStop, Process: "other", By: "test"})
	s.runUntil(10 * time.Second)
	next := s.core.SnapshotSince(first)
	if next == first {
		t.Fatalf("SnapshotSince after other's stop returned the old status")
	}
	if st := processStatus(t, next, "other").State; st == lifecycle.StateRunning {
		t.Fatalf("other still running after its stop")
	}
	if got := processStatus(t, next, "app").LastTermination; got != app.LastTermination {
		t.Errorf("app's unchanged status was copied, not shared with the last published one")
	}
	if next.mains[0] != first.mains[0] || next.mains[0].Name != "app" {
		t.Errorf("app's unchanged status is a new one: a changed batch must make only the changed process's status")
	}
	if next.mains[1] == first.mains[1] {
		t.Errorf("other's changed status is the old one")
	}
}

// processStatus is the published status of the process name itself, not
// a copy: the test compares pointers inside it.
func processStatus(t *testing.T, st *Published, name string) lifecycle.ProcessStatus {
	t.Helper()
	for _, p := range st.mains {
		if p.Name == name {
			return *p
		}
	}
	t.Fatalf("no process %s in %+v", name, st.Status())
	return lifecycle.ProcessStatus{}
}

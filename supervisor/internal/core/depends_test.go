package core

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Start order (W1–W7) and stop order (W8, W9) on the simulated clock.

// dbAPI is a group where api depends on db with cond; db has a readiness
// probe, so it is ready only when a probe says so.
func dbAPI(cond spec.Condition, timeout time.Duration) spec.Group {
	probe := &spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"x"}}}}
	return spec.Group{
		Name: "g",
		Processes: []spec.Process{
			{Name: "api", Command: []string{"x"}, DependsOn: []spec.Dependency{{Name: "db", Condition: cond, Timeout: timeout}}},
			{Name: "db", Command: []string{"x"}, ReadinessProbe: probe},
		},
	}
}

func runForever(string, int) simRun { return simRun{RunFor: -1} }

// ready reports db's readiness probe's success at the current time.
func (s *sim) ready(process string) {
	s.t.Helper()
	ps := s.status(process)
	if ps.State != lifecycle.StateRunning {
		s.t.Fatalf("%s is %s, not running", process, ps.State)
	}
	s.feed(ProbeInput{Instance: ps.InstanceID, Probe: spec.Readiness, Success: true})
}

func (s *sim) at(e lifecycle.Event) time.Duration { return e.Time.Sub(s.epoch) }

func reasonsOf(evs []lifecycle.Event, process string) []string {
	var out []string
	for _, e := range evs {
		if e.Process == process {
			out = append(out, e.Reason)
		}
	}
	return out
}

func TestDependsOnGateOpensOnTheReadyEvent(t *testing.T) {
	// W1, W3: api waits, shown as waiting with what it waits for, and
	// starts in the very step that reports db ready.
	s := newSim(t, dbAPI(spec.ConditionReady, 0), scaled, 0, runForever)
	s.runUntil(time.Second)
	assertTimes(t, "db", s.starts["db"], secs(0))
	if len(s.starts["api"]) != 0 {
		t.Fatalf("W1: api started at %v before db was ready", s.starts["api"])
	}
	ps := s.status("api")
	if ps.State != lifecycle.StateWaiting || ps.Reason != lifecycle.ReasonDependencyWait || ps.Message != "waiting for db ready" {
		t.Errorf("W3: api status %s/%s %q", ps.State, ps.Reason, ps.Message)
	}
	if w := s.eventsWith(lifecycle.EventWaiting); len(w) != 1 || w[0].Process != "api" || s.at(w[0]) != 0 || !strings.Contains(w[0].Message, "db ready") {
		t.Errorf("W3: Waiting events %+v", w)
	}
	s.ready("db")
	assertTimes(t, "api", s.starts["api"], secs(1))
	if got := reasonsOf(s.events, "api"); !slices.Equal(got, []string{lifecycle.EventWaiting, lifecycle.EventDependenciesMet, lifecycle.EventCreated, lifecycle.EventStarted}) {
		t.Errorf("W3: api's events %v", got)
	}
	if met := s.eventsWith(lifecycle.EventDependenciesMet); len(met) != 1 || !strings.Contains(met[0].Message, "after 1s") {
		t.Errorf("W3: DependenciesMet %+v", met)
	}
}

func TestDependsOnStartedAndReadyWithoutProbe(t *testing.T) {
	// W1: without a readiness signal, ready is started: api starts in the
	// step that reports db started.
	g := dbAPI(spec.ConditionReady, 0)
	g.Processes[1].ReadinessProbe = nil
	s := newSim(t, g, scaled, 0, runForever)
	s.runUntil(time.Second)
	assertTimes(t, "db", s.starts["db"], secs(0))
	assertTimes(t, "api", s.starts["api"], secs(0))
	if len(s.eventsWith(lifecycle.EventWaiting)) != 1 {
		t.Errorf("api should have waited for db's start: %v", reasonsOf(s.events, "api"))
	}
}

func TestDependsOnTimeoutFiresAtExactlyTheTimeout(t *testing.T) {
	// W5: a wait not met by its timeout fails the process then, exactly;
	// the policy (always) and back-off decide the next wait: the first
	// at once, the next after 100ms (scaled back-off).
	s := newSim(t, dbAPI(spec.ConditionReady, 2*time.Second), scaled, 0, runForever)
	s.runUntil(6500 * time.Millisecond)
	var at []time.Duration
	for _, e := range s.eventsWith(lifecycle.EventDependencyTimeout) {
		at = append(at, s.at(e))
		if e.Type != lifecycle.EventWarning || !strings.Contains(e.Message, "db ready not met within 2s") {
			t.Errorf("W5: %+v", e)
		}
	}
	assertTimes(t, "timeouts", at, secs(2, 4, 6.1))
	if len(s.starts["api"]) != 0 {
		t.Errorf("api started at %v", s.starts["api"])
	}
	if bo := s.eventsWith(lifecycle.EventBackOff); len(bo) != 2 || s.at(bo[0]) != 4*time.Second || s.at(bo[1]) != 6100*time.Millisecond {
		t.Errorf("W5: BackOff events %+v", bo)
	}
	ps := s.status("api")
	if ps.LastTermination == nil || ps.LastTermination.Reason != lifecycle.ReasonDependencyTimeout || ps.LastTermination.ExitCode != DependencyTimeoutExitCode {
		t.Errorf("W5: api's last termination %+v", ps.LastTermination)
	}
	// Met during a later wait: the start is immediate, no second back-off.
	s.ready("db")
	assertTimes(t, "api", s.starts["api"], secs(6.5))
}

func TestDependsOnTimeoutUnderNeverEndsForGood(t *testing.T) {
	g := dbAPI(spec.ConditionReady, time.Second)
	g.Processes[0].RestartPolicy = spec.RestartNever
	g.Processes[0].Critical = true
	s := newSim(t, g, scaled, 0, runForever)
	s.runUntil(5 * time.Second)
	if n := len(s.eventsWith(lifecycle.EventDependencyTimeout)); n != 1 {
		t.Errorf("W5 under never: %d timeouts, want 1", n)
	}
	if ps := s.status("api"); ps.State != lifecycle.StateTerminated || ps.Reason != lifecycle.ReasonDependencyTimeout {
		t.Errorf("api %s/%s", ps.State, ps.Reason)
	}
	if len(s.criticals) != 1 {
		t.Errorf("X11: a critical process that fails its wait ends podsup: %+v", s.criticals)
	}
}

func TestDependsOnCompleted(t *testing.T) {
	group := func() spec.Group {
		return spec.Group{
			Name: "g",
			Processes: []spec.Process{
				{Name: "api", Command: []string{"x"}, DependsOn: []spec.Dependency{{Name: "migrate", Condition: spec.ConditionCompleted}}},
				{Name: "migrate", Command: []string{"x"}, RestartPolicy: spec.RestartOnFailure},
			},
		}
	}
	t.Run("W4 gates until exit 0", func(t *testing.T) {
		s := newSim(t, group(), scaled, 0, func(p string, n int) simRun {
			if p == "migrate" {
				return simRun{RunFor: time.Second}
			}
			return simRun{RunFor: -1}
		})
		s.runUntil(3 * time.Second)
		assertTimes(t, "api", s.starts["api"], secs(1))
	})
	t.Run("W4 failures retried: the wait goes on", func(t *testing.T) {
		s := newSim(t, group(), scaled, 0, func(p string, n int) simRun {
			if p == "migrate" && n < 2 {
				return simRun{RunFor: time.Second, Code: 3}
			}
			if p == "migrate" {
				return simRun{RunFor: time.Second}
			}
			return simRun{RunFor: -1}
		})
		s.runUntil(5 * time.Second)
		// migrate: 0–1 fails, 1–2 fails (first restart immediate), 2.1–3.1 exits 0.
		assertTimes(t, "api", s.starts["api"], secs(3.1))
		if n := len(s.eventsWith(lifecycle.EventDependencyFailed)); n != 0 {
			t.Errorf("a failure that is retried is no DependencyFailed: %d", n)
		}
	})
	t.Run("W4 a failure for good blocks with an event", func(t *testing.T) {
		g := group()
		g.Processes[1].RestartPolicy = spec.RestartNever
		s := newSim(t, g, scaled, 0, func(p string, n int) simRun {
			if p == "migrate" {
				return simRun{RunFor: time.Second, Code: 3}
			}
			return simRun{RunFor: -1}
		})
		s.runUntil(10 * time.Second)
		if len(s.starts["api"]) != 0 {
			t.Errorf("api started at %v", s.starts["api"])
		}
		f := s.eventsWith(lifecycle.EventDependencyFailed)
		if len(f) != 1 || s.at(f[0]) != time.Second || !strings.Contains(f[0].Message, "migrate exited with code 3") {
			t.Errorf("W4: DependencyFailed %+v", f)
		}
		if ps := s.status("api"); ps.Reason != lifecycle.ReasonDependencyWait {
			t.Errorf("api %s/%s", ps.State, ps.Reason)
		}
	})
}

func TestDependsOnAppliesToRestarts(t *testing.T) {
	// W6: api crashes while db is not ready (db restarted): its restart
	// waits for db ready again. Without restart = true, db's restart
	// leaves a running api alone.
	g := dbAPI(spec.ConditionReady, 0)
	s := newSim(t, g, scaled, 0, func(p string, n int) simRun {
		if p == "db" && n == 0 {
			return simRun{RunFor: 2 * time.Second, Code: 1}
		}
		return simRun{RunFor: -1}
	})
	s.runUntil(time.Second)
	s.ready("db")
	s.runUntil(3 * time.Second)
	assertTimes(t, "db", s.starts["db"], secs(0, 2))
	assertTimes(t, "api", s.starts["api"], secs(1))
	if len(s.signals) != 0 {
		t.Errorf("W6: api was stopped when db restarted: %+v", s.signals)
	}
}

func TestDependsOnRestartTrue(t *testing.T) {
	// W7: restart = true restarts api after db restarts, and api's new
	// start waits for db ready again.
	g := dbAPI(spec.ConditionReady, 0)
	g.Processes[0].DependsOn[0].Restart = true
	s := newSim(t, g, scaled, 0, func(p string, n int) simRun {
		if p == "db" && n == 0 {
			return simRun{RunFor: 2 * time.Second, Code: 1}
		}
		return simRun{RunFor: -1, TermExit: 0}
	})
	s.runUntil(time.Second)
	s.ready("db")
	s.runUntil(3 * time.Second)
	if len(s.signals) != 1 || s.signals[0].process != "api" || s.signals[0].at != 2*time.Second {
		t.Fatalf("W7: signals %+v, want api's at 2s", s.signals)
	}
	assertTimes(t, "api", s.starts["api"], secs(1))
	if ps := s.status("api"); ps.Reason != lifecycle.ReasonDependencyWait {
		t.Errorf("W7: api %s/%s, want waiting for db", ps.State, ps.Reason)
	}
	s.ready("db")
	assertTimes(t, "api", s.starts["api"], secs(1, 3))
}

func TestDependsOnAnotherGroup(t *testing.T) {
	// W1 for a group depends_on: every process waits for the other
	// group's state, delivered as DependencyInput.
	g := oneProcess(spec.RestartAlways)
	g.DependsOn = []spec.Dependency{{Name: "db", Condition: spec.ConditionReady}}
	s := newSim(t, g, scaled, 0, runForever)
	s.runUntil(time.Second)
	if len(s.starts["app"]) != 0 {
		t.Fatal("app started before group db said anything")
	}
	if ps := s.status("app"); ps.Message != "waiting for group db ready" {
		t.Errorf("W3: %q", ps.Message)
	}
	s.feed(DependencyInput{Group: "db", State: DepState{Started: true, Alive: true, Starts: 1}})
	s.runUntil(2 * time.Second)
	if len(s.starts["app"]) != 0 {
		t.Fatal("app started on db started, condition is ready")
	}
	s.feed(DependencyInput{Group: "db", State: DepState{Started: true, Ready: true, Alive: true, Starts: 1}})
	assertTimes(t, "app", s.starts["app"], secs(2))
}

func TestDepStateSummarisesTheGroup(t *testing.T) {
	g := dbAPI(spec.ConditionStarted, 0)
	s := newSim(t, g, scaled, 0, runForever)
	if st := s.core.DepState(); st.Started || st.Ready || st.Alive {
		t.Errorf("before any start: %+v", st)
	}
	s.runUntil(time.Second)
	if st := s.core.DepState(); !st.Started || st.Ready || !st.Alive || st.Starts != 2 || st.Completed {
		t.Errorf("started, db not ready: %+v", st)
	}
	s.ready("db")
	if st := s.core.DepState(); !st.Ready {
		t.Errorf("ready: %+v", st)
	}
}

// chain is c → b → a (c depends on b, b on a), each exiting 1s after its
// stop signal.
func chain() spec.Group {
	dep := func(n string) []spec.Dependency { return []spec.Dependency{{Name: n}} }
	return spec.Group{
		Name: "g",
		Processes: []spec.Process{
			{Name: "a", Command: []string{"x"}},
			{Name: "b", Command: []string{"x"}, DependsOn: dep("a")},
			{Name: "c", Command: []string{"x"}, DependsOn: dep("b")},
		},
	}
}

func signalOrder(s *sim) string {
	var out []string
	for _, x := range s.signals {
		out = append(out, x.process+"@"+x.at.String())
	}
	return strings.Join(out, " ")
}

func TestOrderedShutdownStopsDependentsFirst(t *testing.T) {
	// W8: each process receives its stop signal once what depends on it
	// has exited; each step within its own grace.
	s := newSim(t, chain(), scaled, 0, constant(simRun{RunFor: -1, TermExit: time.Second}))
	s.runUntil(time.Second)
	s.feed(CommandInput{Kind: CmdShutdown, By: "test", Ordered: true})
	s.runUntil(10 * time.Second)
	if got, want := signalOrder(s), "c@1s b@2s a@3s"; got != want {
		t.Errorf("W8: signals %s, want %s", got, want)
	}
	if !s.core.Idle() {
		t.Error("not everything stopped")
	}
}

func TestOrderedShutdownStepBoundedByGrace(t *testing.T) {
	// W8: a dependent that ignores its stop signal holds its dependency
	// back only until its SIGKILL (its grace, 2s).
	g := chain()
	grace := 2 * time.Second
	g.TerminationGracePeriod = &grace
	s := newSim(t, g, scaled, 0, func(p string, n int) simRun {
		return simRun{RunFor: -1, IgnoreTerm: p == "c", TermExit: 0}
	})
	s.runUntil(time.Second)
	s.feed(CommandInput{Kind: CmdShutdown, By: "test", Ordered: true})
	s.runUntil(10 * time.Second)
	if got, want := signalOrder(s), "c@1s b@3s a@3s"; got != want {
		t.Errorf("W8: signals %s, want %s", got, want)
	}
}

func TestParallelShutdownAndSecondRequest(t *testing.T) {
	t.Run("W9 parallel stops all at once", func(t *testing.T) {
		s := newSim(t, chain(), scaled, 0, constant(simRun{RunFor: -1, TermExit: time.Second}))
		s.runUntil(time.Second)
		s.feed(CommandInput{Kind: CmdShutdown, By: "test"})
		s.runUntil(10 * time.Second)
		if got, want := signalOrder(s), "a@1s b@1s c@1s"; got != want {
			t.Errorf("signals %s, want %s", got, want)
		}
	})
	t.Run("W8 a second shutdown stops what still waits at once", func(t *testing.T) {
		s := newSim(t, chain(), scaled, 0, constant(simRun{RunFor: -1, TermExit: 5 * time.Second}))
		s.runUntil(time.Second)
		s.feed(CommandInput{Kind: CmdShutdown, By: "test", Ordered: true})
		s.runUntil(2 * time.Second)
		s.feed(CommandInput{Kind: CmdShutdown, By: "test", Ordered: true})
		if got, want := signalOrder(s), "c@1s a@2s b@2s"; got != want {
			t.Errorf("signals %s, want %s", got, want)
		}
		if k := s.kills; len(k) != 1 || k[0].process != "c" {
			t.Errorf("X9: the second request SIGKILLs what was stopping: %+v", k)
		}
	})
}

func TestOrderedShutdownWaitsForDependentGroups(t *testing.T) {
	// W8 between groups: db's processes stop once group app is gone.
	s := newSim(t, oneProcess(spec.RestartAlways), scaled, 0, constant(simRun{RunFor: -1}))
	s.runUntil(time.Second)
	s.feed(DependencyInput{Group: "app", State: DepState{Alive: true}})
	s.feed(CommandInput{Kind: CmdShutdown, By: "test", Ordered: true, After: []string{"app"}})
	s.runUntil(3 * time.Second)
	if len(s.signals) != 0 {
		t.Fatalf("stopped while group app is alive: %+v", s.signals)
	}
	s.feed(DependencyInput{Group: "app", State: DepState{}})
	if got := signalOrder(s); got != "app@3s" {
		t.Errorf("signals %s", got)
	}
}

func TestDependsOnASidecar(t *testing.T) {
	// W1 with O2: the init order passes a sidecar once it started; a main
	// process that depends on it being ready waits for its readiness too.
	probe := &spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"x"}}}}
	g := spec.Group{
		Name: "g",
		Init: []spec.Process{{Name: "side", Command: []string{"x"}, RestartPolicy: spec.RestartAlways, ReadinessProbe: probe}},
		Processes: []spec.Process{
			{Name: "app", Command: []string{"x"}, DependsOn: []spec.Dependency{{Name: "side", Condition: spec.ConditionReady}}},
			{Name: "other", Command: []string{"x"}},
		},
	}
	s := newSim(t, g, scaled, 0, runForever)
	s.runUntil(time.Second)
	assertTimes(t, "other", s.starts["other"], secs(0))
	if len(s.starts["app"]) != 0 {
		t.Fatalf("app started before its sidecar was ready: %v", s.starts["app"])
	}
	s.ready("side")
	assertTimes(t, "app", s.starts["app"], secs(1))
	if st := s.core.DepState(); !st.Ready {
		t.Errorf("O5, W1: a ready sidecar and ready processes make a ready group: %+v", st)
	}
}

func TestDependsOnExplicitStartSkipsTheTimeoutsBackOff(t *testing.T) {
	// W5 with X7: after a timed-out wait, an explicit
	// start begins a new wait at once, without the back-off.
	s := newSim(t, dbAPI(spec.ConditionReady, time.Second), scaled, 0, runForever)
	s.runUntil(2050 * time.Millisecond) // timeouts at 1s and 2s; back-off until 2.1s
	if ps := s.status("api"); ps.Reason != lifecycle.ReasonCrashLoopBackOff {
		t.Fatalf("api %s/%s, want CrashLoopBackOff", ps.State, ps.Reason)
	}
	s.command(CmdStart, "api", nil, "test")
	if ps := s.status("api"); ps.Reason != lifecycle.ReasonDependencyWait {
		t.Errorf("X7: api %s/%s, want waiting for db at once", ps.State, ps.Reason)
	}
	s.ready("db")
	assertTimes(t, "api", s.starts["api"], secs(2.05))
}

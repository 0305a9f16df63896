package core

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Decision tables for the group core, each case citing its rule.

func TestRestartPolicyDecision(t *testing.T) {
	// R1, R2: the exit code alone decides; per group, overridable per process.
	cases := []struct {
		rule    string
		group   spec.RestartPolicy
		process spec.RestartPolicy
		code    int
		restart bool
	}{
		{"R1 always restarts exit 0", spec.RestartAlways, "", 0, true},
		{"R1 always restarts exit 1", spec.RestartAlways, "", 1, true},
		{"R1 on-failure restarts exit 1", spec.RestartOnFailure, "", 1, true},
		{"R2 on-failure does not restart exit 0", spec.RestartOnFailure, "", 0, false},
		{"R1 never does not restart exit 1", spec.RestartNever, "", 1, false},
		{"R1 never does not restart exit 0", spec.RestartNever, "", 0, false},
		{"D2 default policy is always", "", "", 0, true},
		{"per-process never overrides group always", spec.RestartAlways, spec.RestartNever, 1, false},
		{"per-process always overrides group never", spec.RestartNever, spec.RestartAlways, 0, true},
		{"per-process on-failure overrides group always", spec.RestartAlways, spec.RestartOnFailure, 0, false},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			g := oneProcess(c.group)
			g.Processes[0].RestartPolicy = c.process
			s := newSim(t, g, spec.DefaultBackoff(), 2*time.Second, constant(simRun{RunFor: time.Second, Code: c.code}))
			s.runUntil(5 * time.Second)
			if got := len(s.starts["app"]) > 1; got != c.restart {
				t.Errorf("%s: restarted=%v, want %v", c.rule, got, c.restart)
			}
		})
	}
}

func TestRestartCountAndEvents(t *testing.T) {
	// R5, B12: restart count = previous instances, and it keeps counting
	// through back-off; events carry group, process, instance, count, pid.
	s := newSim(t, oneProcess(spec.RestartAlways), scaled, 0, constant(simRun{Code: 3}))
	s.runUntil(800 * time.Millisecond)
	started := s.eventsWith(lifecycle.EventStarted)
	if len(started) != 5 {
		t.Fatalf("want 5 starts by 0.7s, got %d", len(started))
	}
	seen := map[string]bool{}
	for i, e := range started {
		if e.RestartCount != i || e.Group != "g" || e.Process != "app" || e.Pid == 0 || e.InstanceID == "" {
			t.Errorf("R5: Started event %d = %+v", i, e)
		}
		if seen[e.InstanceID] {
			t.Errorf("instance id %q reused", e.InstanceID)
		}
		seen[e.InstanceID] = true
	}
	if ps := s.status("app"); ps.RestartCount != 4 || ps.State != lifecycle.StateWaiting {
		t.Errorf("R5/B12: status %+v", ps)
	}
	// E2: the exit code is the status's (Last State), not an event's.
	if ps := s.status("app"); ps.LastTermination == nil || ps.LastTermination.ExitCode != 3 || ps.LastTermination.Reason != lifecycle.ReasonError {
		t.Errorf("E2: last termination %+v, want exit code 3, Error", ps.LastTermination)
	}
}

func TestEventsFollowKubelet(t *testing.T) {
	// E1, E2: per instance Created then Started, with the same instance
	// and restart count; nothing for the exit; one Killing per stop, none
	// more when the grace runs out and the tree is SIGKILLed; a second
	// stop request is a second Killing, as kubelet's kill with a shorter
	// grace is.
	seq := func(s *sim) string {
		var out []string
		for _, e := range s.events {
			out = append(out, e.Reason)
		}
		return strings.Join(out, " ")
	}
	t.Run("crash loop", func(t *testing.T) {
		s := newSim(t, oneProcess(spec.RestartAlways), scaled, 0, constant(simRun{RunFor: 50 * time.Millisecond, Code: 1}))
		s.runUntil(200 * time.Millisecond) // starts at 0, 0.05, 0.2 (0.1 after the exit at 0.1)
		if got, want := seq(s), "Created Started Created Started BackOff Created Started"; got != want {
			t.Fatalf("events %q, want %q", got, want)
		}
		for i := 0; i+1 < len(s.events); i++ {
			c, st := s.events[i], s.events[i+1]
			if c.Reason != lifecycle.EventCreated {
				continue
			}
			if st.Reason != lifecycle.EventStarted || c.InstanceID != st.InstanceID || c.RestartCount != st.RestartCount || c.Type != lifecycle.EventNormal || c.Message != "Created process app" {
				t.Errorf("E1: %+v then %+v", c, st)
			}
		}
	})
	t.Run("one Killing for a stop that ends in SIGKILL", func(t *testing.T) {
		g := oneProcess(spec.RestartAlways)
		g.TerminationGracePeriod = spec.Durp(time.Second)
		s := newSim(t, g, scaled, 0, constant(simRun{RunFor: -1, IgnoreTerm: true}))
		s.runUntil(time.Second)
		s.command(CmdStop, "app", nil, "test")
		s.runUntil(5 * time.Second)
		if got, want := seq(s), "Created Started Killing"; got != want {
			t.Fatalf("events %q, want %q", got, want)
		}
		if ps := s.status("app"); ps.Terminated == nil || ps.Terminated.Signal != syscall.SIGKILL {
			t.Errorf("status %+v, want ended by SIGKILL", ps)
		}
	})
	t.Run("a second stop request is a second Killing", func(t *testing.T) {
		g := oneProcess(spec.RestartAlways)
		g.TerminationGracePeriod = spec.Durp(30 * time.Second)
		s := newSim(t, g, scaled, 0, constant(simRun{RunFor: -1, IgnoreTerm: true}))
		s.runUntil(time.Second)
		s.command(CmdStop, "app", nil, "test")
		s.runUntil(2 * time.Second)
		s.command(CmdStop, "app", nil, "test")
		s.runUntil(3 * time.Second)
		if got, want := seq(s), "Created Started Killing Killing"; got != want {
			t.Fatalf("events %q, want %q", got, want)
		}
	})
	t.Run("a start that fails: Created, Failed", func(t *testing.T) {
		// E1, E3: kubelet records Created before the runtime's start,
		// which is where a missing command fails.
		s := newSim(t, oneProcess(spec.RestartNever), scaled, 0, constant(simRun{RunFor: -1}))
		var got []string
		for _, in := range []func() Input{
			func() Input { return TimerInput{} },
			func() Input {
				return StartFailedInput{Instance: s.core.mains[0].inst.id, Err: errString("/x: command not found"), Code: 128}
			},
		} {
			for _, a := range s.core.Step(s.now, in()).Actions {
				if e, ok := a.(EmitAction); ok {
					got = append(got, e.Event.Reason)
				}
			}
		}
		if strings.Join(got, " ") != "Created Failed" {
			t.Errorf("events %v, want Created Failed", got)
		}
	})
}

func TestInitProcesses(t *testing.T) {
	group := func(policy spec.RestartPolicy) spec.Group {
		return spec.Group{
			Name: "g", RestartPolicy: policy,
			Init: []spec.Process{
				{Name: "i1", Command: []string{"x"}},
				{Name: "i2", Command: []string{"x"}},
			},
			Processes: []spec.Process{
				{Name: "a", Command: []string{"x"}},
				{Name: "b", Command: []string{"x"}},
			},
		}
	}
	t.Run("I1 one at a time, in order, mains after the last", func(t *testing.T) {
		s := newSim(t, group(spec.RestartAlways), spec.DefaultBackoff(), 2*time.Second, func(p string, n int) simRun {
			if p == "i1" || p == "i2" {
				return simRun{RunFor: time.Second}
			}
			return simRun{RunFor: -1}
		})
		s.runUntil(10 * time.Second)
		assertTimes(t, "i1", s.starts["i1"], secs(0))
		assertTimes(t, "i2", s.starts["i2"], secs(1))
		assertTimes(t, "a", s.starts["a"], secs(2))
		assertTimes(t, "b", s.starts["b"], secs(2))
		if ps := s.status("i1"); ps.State != lifecycle.StateTerminated || ps.Reason != lifecycle.ReasonCompleted {
			t.Errorf("I1: i1 status %s/%s", ps.State, ps.Reason)
		}
	})
	t.Run("I1 mains wait while an init runs", func(t *testing.T) {
		s := newSim(t, group(spec.RestartAlways), spec.DefaultBackoff(), 2*time.Second, constant(simRun{RunFor: time.Second}))
		s.runUntil(500 * time.Millisecond)
		if ps := s.status("a"); ps.State != lifecycle.StateWaiting || ps.Reason != lifecycle.ReasonPodInitializing {
			t.Errorf("I1: main status %s/%s, want waiting/PodInitializing", ps.State, ps.Reason)
		}
		if st := s.core.Snapshot(); st.Phase != lifecycle.PhasePending {
			t.Errorf("phase %s, want Pending", st.Phase)
		}
	})
	t.Run("I2 failure retried with back-off on its own key, earlier inits not rerun", func(t *testing.T) {
		s := newSim(t, group(spec.RestartOnFailure), spec.DefaultBackoff(), 2*time.Second, func(p string, n int) simRun {
			switch {
			case p == "i1":
				return simRun{}
			case p == "i2" && n < 3:
				return simRun{Code: 1}
			case p == "i2":
				return simRun{}
			}
			return simRun{RunFor: -1}
		})
		s.runUntil(100 * time.Second)
		assertTimes(t, "i1", s.starts["i1"], secs(0))
		if len(s.starts["i1"]) != 1 {
			t.Errorf("I2: i1 ran %d times", len(s.starts["i1"]))
		}
		assertTimes(t, "i2 (B7: first retry immediate)", s.starts["i2"], secs(0, 0, 10, 30))
		assertTimes(t, "a", s.starts["a"], secs(30))
		if s.core.backoff.Get("a") != 0 {
			t.Error("I2: mains must not inherit the init's back-off")
		}
	})
	t.Run("I2 failure under never fails the group", func(t *testing.T) {
		s := newSim(t, group(spec.RestartNever), spec.DefaultBackoff(), 2*time.Second, func(p string, n int) simRun {
			if p == "i1" {
				return simRun{Code: 2}
			}
			return simRun{RunFor: -1}
		})
		s.runUntil(100 * time.Second)
		if len(s.starts["i1"]) != 1 || len(s.starts["i2"]) != 0 || len(s.starts["a"]) != 0 {
			t.Errorf("I2: starts %v", s.starts)
		}
		if st := s.core.Snapshot(); st.Phase != lifecycle.PhaseFailed {
			t.Errorf("I2: phase %s, want Failed", st.Phase)
		}
	})
	t.Run("I3 inits never rerun once mains ran", func(t *testing.T) {
		s := newSim(t, group(spec.RestartAlways), spec.DefaultBackoff(), 0, func(p string, n int) simRun {
			if p == "i1" || p == "i2" {
				return simRun{}
			}
			return simRun{RunFor: -1}
		})
		s.runUntil(time.Second)
		s.command(CmdStop, "", nil, "test")
		s.runUntil(2 * time.Second)
		s.command(CmdStart, "", nil, "test")
		s.runUntil(3 * time.Second)
		s.command(CmdRestart, "", nil, "test")
		s.command(CmdStart, "i1", nil, "test")
		s.runUntil(4 * time.Second)
		if len(s.starts["i1"]) != 1 || len(s.starts["i2"]) != 1 {
			t.Errorf("I3: inits reran: %v", s.starts)
		}
		if len(s.starts["a"]) != 3 {
			t.Errorf("mains: %v, want 3 starts (start, explicit start, restart)", s.starts["a"])
		}
	})
}

// graceGroup is one process with a 30 s grace whose instance ignores
// SIGTERM unless told otherwise.
func graceGroup(preStop bool) spec.Group {
	g := oneProcess(spec.RestartAlways)
	g.TerminationGracePeriod = spec.Durp(30 * time.Second)
	if preStop {
		g.Processes[0].PreStop = &spec.Hook{Handler: spec.Handler{Sleep: &spec.SleepAction{Duration: time.Second}}}
	}
	return g
}

func TestGracefulStopK8(t *testing.T) {
	ignoreTerm := constant(simRun{RunFor: -1, IgnoreTerm: true})
	cases := []struct {
		rule       string
		preStop    bool
		hookTakes  time.Duration // < 0: hangs
		override   *time.Duration
		wantSignal time.Duration
		wantKill   time.Duration
	}{
		{"K8 grace 30, no pre_stop, TERM ignored: SIGKILL at 30s", false, 0, nil, 0, 30 * time.Second},
		{"K8 pre_stop takes 25.9s: SIGTERM at 25.9, SIGKILL 5s later", true, 25900 * time.Millisecond, nil, 25900 * time.Millisecond, 30900 * time.Millisecond},
		{"K8 pre_stop hangs: SIGTERM at 30s, SIGKILL 2s later", true, -1, nil, 30 * time.Second, 32 * time.Second},
		{"K8 grace 0 override: SIGTERM, SIGKILL 2s later (K5)", false, 0, spec.Durp(0), 0, 2 * time.Second},
		{"K3 grace 0 override skips pre_stop", true, 5 * time.Second, spec.Durp(0), 0, 2 * time.Second},
		{"K2 override replaces the group grace", false, 0, spec.Durp(10 * time.Second), 0, 10 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			s := newSim(t, graceGroup(c.preStop), spec.DefaultBackoff(), 2*time.Second, ignoreTerm)
			if c.hookTakes >= 0 {
				s.preStop["app"] = c.hookTakes
			}
			s.runUntil(0)
			s.command(CmdStop, "app", c.override, "test")
			s.runUntil(100 * time.Second)
			if len(s.signals) != 1 || s.signals[0].at != c.wantSignal {
				t.Errorf("stop signal at %v, want once at %s", s.signals, c.wantSignal)
			}
			if len(s.kills) < 1 || s.kills[0].at != c.wantKill {
				t.Errorf("SIGKILL at %v, want %s", s.kills, c.wantKill)
			}
			if ps := s.status("app"); ps.State != lifecycle.StateTerminated || ps.Terminated.Signal != syscall.SIGKILL || ps.Terminated.ExitCode != 137 {
				t.Errorf("K6: status %+v, want terminated by SIGKILL (137)", ps)
			}
			if len(s.starts["app"]) != 1 {
				t.Error("a stopped process must not restart")
			}
		})
	}
}

func TestPreStopThatOutlivesTheGrace(t *testing.T) {
	// K9: the core stops waiting for a hanging pre_stop at the grace (30s)
	// and the stop goes on; the hook's later end changes nothing but is
	// told when it failed: while the instance is signalled, and after it
	// is gone (the hook ended with its SIGKILL), naming that instance.
	s := newSim(t, graceGroup(true), spec.DefaultBackoff(), 2*time.Second, constant(simRun{RunFor: -1, IgnoreTerm: true}))
	s.runUntil(0)
	id := s.core.mains[0].inst.id
	s.command(CmdStop, "app", nil, "test")
	s.runUntil(31 * time.Second)
	step := func(in Input) []lifecycle.Event {
		var out []lifecycle.Event
		for _, a := range s.core.Step(s.now, in).Actions {
			if e, ok := a.(EmitAction); ok {
				out = append(out, e.Event)
			}
		}
		return out
	}
	if e := step(PreStopDoneInput{Instance: id, Err: errString("hook command exited with code 3")}); len(e) != 1 ||
		e[0].Reason != lifecycle.EventFailedPreStopHook || e[0].InstanceID != id || !strings.Contains(e[0].Message, "after the grace period") {
		t.Errorf("a late failure while signalled: %+v", e)
	}
	if e := step(PreStopDoneInput{Instance: id}); len(e) != 0 {
		t.Errorf("a late success: %+v", e)
	}
	s.runUntil(40 * time.Second) // SIGKILL at 32s: gone
	if len(s.signals) != 1 || s.signals[0].at != 30*time.Second || len(s.kills) == 0 || s.kills[0].at != 32*time.Second {
		t.Fatalf("K3, K5: signals %v kills %v, want TERM at 30s and SIGKILL at 32s", s.signals, s.kills)
	}
	e := step(PreStopDoneInput{Instance: id, Err: fmt.Errorf("%w (context canceled)", ErrHookEndedWithInstance)})
	if len(e) != 1 || e[0].Reason != lifecycle.EventFailedPreStopHook || e[0].InstanceID != id || e[0].Type != lifecycle.EventWarning ||
		e[0].Message != "PreStop hook for process app did not complete: it was ended with the process" {
		t.Errorf("the hook's end with the instance: %+v", e)
	}
	if e := step(PreStopDoneInput{Instance: "no-such-instance", Err: errString("x")}); len(e) != 0 {
		t.Errorf("an unknown instance: %+v", e)
	}
}

func TestStopSemantics(t *testing.T) {
	t.Run("K6 honoured SIGTERM gives 143 and no SIGKILL of the main process", func(t *testing.T) {
		s := newSim(t, graceGroup(false), spec.DefaultBackoff(), 2*time.Second, constant(simRun{RunFor: -1, TermExit: time.Second}))
		s.runUntil(0)
		s.command(CmdStop, "app", nil, "test")
		s.runUntil(100 * time.Second)
		ps := s.status("app")
		if ps.Terminated == nil || ps.Terminated.ExitCode != 143 || ps.Reason != lifecycle.ReasonStopped { // X13
			t.Errorf("K6: %+v", ps)
		}
		if len(s.eventsWith(lifecycle.EventKilling)) != 1 {
			t.Errorf("K6: one Killing event expected, got %+v", s.eventsWith(lifecycle.EventKilling))
		}
	})
	t.Run("K6 custom stop signal", func(t *testing.T) {
		g := graceGroup(false)
		g.Processes[0].StopSignal = syscall.SIGINT
		s := newSim(t, g, spec.DefaultBackoff(), 2*time.Second, constant(simRun{RunFor: -1}))
		s.runUntil(0)
		s.command(CmdStop, "", nil, "test")
		s.runUntil(time.Second)
		if ps := s.status("app"); ps.Terminated == nil || ps.Terminated.Signal != syscall.SIGINT {
			t.Errorf("K6: %+v", ps)
		}
	})
	t.Run("X9 second stop request escalates to SIGKILL at once", func(t *testing.T) {
		s := newSim(t, graceGroup(false), spec.DefaultBackoff(), 2*time.Second, constant(simRun{RunFor: -1, IgnoreTerm: true}))
		s.runUntil(0)
		s.command(CmdShutdown, "", nil, "test")
		s.runUntil(3 * time.Second)
		s.command(CmdShutdown, "", nil, "test")
		s.runUntil(100 * time.Second)
		if len(s.kills) == 0 || s.kills[0].at != 3*time.Second {
			t.Errorf("X9: SIGKILL at %v, want 3s", s.kills)
		}
		if !s.core.shutdown || !s.core.Idle() {
			t.Error("X9: group should be shut down and idle")
		}
	})
	t.Run("X9 a restart in progress becomes a stop; the next stop escalates", func(t *testing.T) {
		s := newSim(t, graceGroup(false), spec.DefaultBackoff(), 2*time.Second, constant(simRun{RunFor: -1, IgnoreTerm: true}))
		s.runUntil(0)
		s.command(CmdRestart, "app", nil, "test")
		s.runUntil(time.Second)
		s.command(CmdStop, "app", nil, "test")
		s.runUntil(2 * time.Second)
		if len(s.kills) != 0 {
			t.Fatalf("first stop during a restart must not escalate: %v", s.kills)
		}
		s.command(CmdStop, "app", nil, "test")
		s.runUntil(100 * time.Second)
		if len(s.kills) == 0 || s.kills[0].at != 2*time.Second || len(s.starts["app"]) != 1 {
			t.Errorf("kills %v starts %v", s.kills, s.starts["app"])
		}
	})
	t.Run("group stop stops its processes in parallel", func(t *testing.T) {
		g := graceGroup(false)
		g.Processes = append(g.Processes, spec.Process{Name: "b", Command: []string{"x"}}, spec.Process{Name: "c", Command: []string{"x"}})
		s := newSim(t, g, spec.DefaultBackoff(), 2*time.Second, constant(simRun{RunFor: -1, IgnoreTerm: true}))
		s.runUntil(time.Second)
		s.command(CmdStop, "", nil, "test")
		s.runUntil(100 * time.Second)
		if len(s.signals) != 3 || len(s.kills) != 3 {
			t.Fatalf("signals %v kills %v", s.signals, s.kills)
		}
		for i := range s.signals {
			if s.signals[i].at != time.Second || s.kills[i].at != 31*time.Second {
				t.Errorf("not parallel: signals %v kills %v", s.signals, s.kills)
			}
		}
		if st := s.core.Snapshot(); st.Phase != lifecycle.PhaseStopped {
			t.Errorf("phase %s, want Stopped", st.Phase)
		}
	})
	t.Run("X10 the tree is killed after every exit", func(t *testing.T) {
		s := newSim(t, oneProcess(spec.RestartNever), spec.DefaultBackoff(), 2*time.Second, constant(simRun{RunFor: time.Second}))
		var trees int
		s.runUntil(0)
		p := s.core.Step(s.now.Add(time.Second), ExitedInput{Instance: s.core.mains[0].inst.id, At: s.now.Add(time.Second)})
		for _, a := range p.Actions {
			if _, ok := a.(KillTreeAction); ok {
				trees++
			}
		}
		if trees != 1 {
			t.Errorf("X10: %d tree kills after a natural exit, want 1", trees)
		}
	})
	t.Run("a stopped process in back-off stops waiting", func(t *testing.T) {
		s := newSim(t, oneProcess(spec.RestartAlways), spec.DefaultBackoff(), 2*time.Second, constant(simRun{Code: 1}))
		s.runUntil(5 * time.Second)
		s.command(CmdStop, "app", nil, "test")
		s.runUntil(100 * time.Second)
		if len(s.starts["app"]) != 2 {
			t.Errorf("starts %v", s.starts["app"])
		}
		if ps := s.status("app"); ps.State != lifecycle.StateTerminated || !ps.NextStartAt.IsZero() {
			t.Errorf("status %+v", ps)
		}
	})
}

func TestExplicitRequestsX7(t *testing.T) {
	t.Run("restart of a process waiting in back-off: at once, no advance", func(t *testing.T) {
		s := newSim(t, oneProcess(spec.RestartAlways), spec.DefaultBackoff(), 0, func(_ string, n int) simRun {
			if n < 3 {
				return simRun{Code: 1}
			}
			return simRun{RunFor: -1}
		})
		s.runUntil(11 * time.Second) // starts 0, 0, 10; waiting until 30
		before := s.core.backoff.Get("app")
		s.command(CmdRestart, "app", nil, "alice")
		s.runUntil(40 * time.Second)
		assertTimes(t, "X7 starts", s.starts["app"], secs(0, 0, 10, 11))
		if got := s.core.backoff.Get("app"); got != before {
			t.Errorf("X7: back-off advanced from %s to %s", before, got)
		}
	})
	t.Run("restart of a running process", func(t *testing.T) {
		s := newSim(t, oneProcess(spec.RestartAlways), spec.DefaultBackoff(), 0, func(_ string, n int) simRun {
			if n < 2 {
				return simRun{Code: 1}
			}
			return simRun{RunFor: -1, TermExit: 100 * time.Millisecond}
		})
		s.runUntil(15 * time.Second) // starts 0, 0, 10; running since 10
		before := s.core.backoff.Get("app")
		s.command(CmdRestart, "app", nil, "alice")
		s.runUntil(16 * time.Second)
		assertTimes(t, "X7 starts", s.starts["app"], secs(0, 0, 10, 15.1))
		if got := s.core.backoff.Get("app"); got != before {
			t.Errorf("X7: back-off advanced from %s to %s", before, got)
		}
		st := s.eventsWith(lifecycle.EventStarted)
		last := st[len(st)-1]
		if last.RestartCount != 3 || !strings.Contains(last.Message, "alice") {
			t.Errorf("X7/R5: last Started event %+v", last)
		}
		k := s.eventsWith(lifecycle.EventKilling)
		if len(k) != 1 || !strings.Contains(k[0].Message, "restart requested by alice") {
			t.Errorf("X7: Killing event %+v", k)
		}
	})
	t.Run("start of a process waiting in CrashLoopBackOff is immediate", func(t *testing.T) {
		s := newSim(t, oneProcess(spec.RestartAlways), spec.DefaultBackoff(), 0, func(_ string, n int) simRun {
			if n < 2 {
				return simRun{Code: 1}
			}
			return simRun{RunFor: -1}
		})
		s.runUntil(3 * time.Second)
		before := s.core.backoff.Get("app")
		s.command(CmdStart, "app", nil, "bob")
		s.runUntil(4 * time.Second)
		assertTimes(t, "X7 starts", s.starts["app"], secs(0, 0, 3))
		if s.core.backoff.Get("app") != before {
			t.Error("X7: explicit start advanced the back-off")
		}
	})
	t.Run("start of a completed process", func(t *testing.T) {
		s := newSim(t, oneProcess(spec.RestartNever), spec.DefaultBackoff(), 0, constant(simRun{RunFor: time.Second}))
		s.runUntil(2 * time.Second)
		s.command(CmdStart, "", nil, "bob")
		s.runUntil(2500 * time.Millisecond)
		assertTimes(t, "starts", s.starts["app"], secs(0, 2))
	})
	t.Run("start of a stopped group restarts all its processes", func(t *testing.T) {
		g := oneProcess(spec.RestartAlways)
		g.Processes = append(g.Processes, spec.Process{Name: "b", Command: []string{"x"}})
		s := newSim(t, g, spec.DefaultBackoff(), 0, constant(simRun{RunFor: -1}))
		s.runUntil(time.Second)
		s.command(CmdStop, "", nil, "bob")
		s.runUntil(2 * time.Second)
		s.command(CmdStart, "", nil, "bob")
		s.runUntil(3 * time.Second)
		assertTimes(t, "app", s.starts["app"], secs(0, 2))
		assertTimes(t, "b", s.starts["b"], secs(0, 2))
	})
}

func TestCriticalX11(t *testing.T) {
	crit := func(policy spec.RestartPolicy) spec.Group {
		g := oneProcess(policy)
		g.Processes[0].Critical = true
		return g
	}
	t.Run("ends for good: critical action with its exit code", func(t *testing.T) {
		s := newSim(t, crit(spec.RestartNever), spec.DefaultBackoff(), 0, constant(simRun{RunFor: time.Second, Code: 7}))
		s.runUntil(5 * time.Second)
		if len(s.criticals) != 1 || s.criticals[0].Code != 7 {
			t.Errorf("X11: %+v", s.criticals)
		}
	})
	t.Run("killed by a signal: 128+N", func(t *testing.T) {
		s := newSim(t, crit(spec.RestartOnFailure), spec.DefaultBackoff(), 0, constant(simRun{RunFor: time.Second, Code: 0}))
		s.runUntil(5 * time.Second)
		if len(s.criticals) != 1 || s.criticals[0].Code != 0 {
			t.Errorf("X11: exit 0 under on-failure ends for good: %+v", s.criticals)
		}
	})
	t.Run("restarted by its policy: not critical", func(t *testing.T) {
		s := newSim(t, crit(spec.RestartAlways), spec.DefaultBackoff(), 0, constant(simRun{RunFor: time.Second, Code: 7}))
		s.runUntil(5 * time.Second)
		if len(s.criticals) != 0 {
			t.Errorf("X11: %+v", s.criticals)
		}
	})
	t.Run("stopped on request: not critical", func(t *testing.T) {
		s := newSim(t, crit(spec.RestartNever), spec.DefaultBackoff(), 0, constant(simRun{RunFor: -1}))
		s.runUntil(time.Second)
		s.command(CmdStop, "app", nil, "test")
		s.runUntil(5 * time.Second)
		if len(s.criticals) != 0 {
			t.Errorf("X11: %+v", s.criticals)
		}
	})
	t.Run("start failure that ends for good is critical (128, E3)", func(t *testing.T) {
		g := crit(spec.RestartNever)
		s := newSim(t, g, spec.DefaultBackoff(), 0, constant(simRun{RunFor: -1}))
		s.core.Step(s.now, TimerInput{})
		id := s.core.mains[0].inst.id
		p := s.core.Step(s.now, StartFailedInput{Instance: id, Err: errString("not found"), Code: 128})
		var got []CriticalAction
		for _, a := range p.Actions {
			if c, ok := a.(CriticalAction); ok {
				got = append(got, c)
			}
		}
		if len(got) != 1 || got[0].Code != 128 {
			t.Errorf("X11: %+v", got)
		}
		if ps := s.status("app"); ps.State != lifecycle.StateTerminated || ps.Reason != lifecycle.ReasonStartError || ps.Terminated.ExitCode != 128 {
			t.Errorf("status %+v", ps)
		}
	})
}

type errString string

func (e errString) Error() string { return string(e) }

func TestProbeSeam(t *testing.T) {
	t.Run("K1.2 liveness kill uses the probe's grace; R4 restarts under on-failure even after exit 0", func(t *testing.T) {
		g := oneProcess(spec.RestartOnFailure)
		g.Processes[0].LivenessProbe = &spec.Probe{
			Handler:                spec.Handler{Exec: &spec.ExecAction{Command: []string{"x"}}},
			TerminationGracePeriod: spec.Durp(5 * time.Second),
		}
		s := newSim(t, g, spec.DefaultBackoff(), 2*time.Second, func(_ string, n int) simRun {
			if n == 0 {
				return simRun{RunFor: -1, IgnoreTerm: true, LivenessFailAfter: time.Second}
			}
			return simRun{RunFor: -1}
		})
		s.runUntil(100 * time.Second)
		if len(s.kills) == 0 || s.kills[0].at != 6*time.Second {
			t.Errorf("K1.2: SIGKILL at %v, want 6s", s.kills)
		}
		assertTimes(t, "R4 starts", s.starts["app"], secs(0, 6))
		k := s.eventsWith(lifecycle.EventKilling)
		if len(k) == 0 || !strings.Contains(k[0].Message, "failed liveness probe, will be restarted") {
			t.Errorf("K7: %+v", k)
		}
	})
	t.Run("P12 S3 readiness drives ready only", func(t *testing.T) {
		g := oneProcess(spec.RestartAlways)
		g.Processes[0].ReadinessProbe = &spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"x"}}}}
		s := newSim(t, g, spec.DefaultBackoff(), 0, constant(simRun{RunFor: -1}))
		s.runUntil(0)
		if s.status("app").Ready {
			t.Error("P4: readiness starts as not ready")
		}
		id := s.core.mains[0].inst.id
		s.feed(ProbeInput{Instance: id, Probe: spec.Readiness, Success: true})
		if !s.status("app").Ready {
			t.Error("ready after a readiness success")
		}
		s.feed(ProbeInput{Instance: id, Probe: spec.Readiness, Success: false})
		if s.status("app").Ready || len(s.signals) != 0 {
			t.Error("P12: readiness failure only clears ready")
		}
	})
}

func TestBackoffLimitR7(t *testing.T) {
	// R7: under on-failure with a backoff_limit, the group's failures are
	// counted (a Job's failed pods); the one that passes the limit is not
	// restarted, says so once, and nothing failed is restarted after it.
	limited := func(limit int) spec.Group {
		g := oneProcess(spec.RestartOnFailure)
		g.BackoffLimit = &limit
		return g
	}
	t.Run("gives up after the limit", func(t *testing.T) {
		s := newSim(t, limited(2), scaled, 0, constant(simRun{RunFor: 100 * time.Millisecond, Code: 1}))
		s.runUntil(time.Minute)
		if n := len(s.starts["app"]); n != 3 {
			t.Errorf("R7: %d starts, want 3 (the first and 2 restarts)", n)
		}
		if evs := s.eventsWith(lifecycle.EventBackoffLimitExceeded); len(evs) != 1 || evs[0].Type != lifecycle.EventWarning || !strings.Contains(evs[0].Message, "more than its backoff_limit 2") {
			t.Errorf("R7: events %+v", evs)
		}
		if ps := s.status("app"); ps.State != lifecycle.StateTerminated || ps.RestartCount != 2 {
			t.Errorf("R7: status %+v", ps)
		}
		if ph := s.core.Snapshot().Phase; ph != lifecycle.PhaseFailed {
			t.Errorf("R3: phase %s, want Failed", ph)
		}
	})
	t.Run("0: the first failure ends it", func(t *testing.T) {
		s := newSim(t, limited(0), scaled, 0, constant(simRun{RunFor: 100 * time.Millisecond, Code: 1}))
		s.runUntil(time.Minute)
		if n := len(s.starts["app"]); n != 1 {
			t.Errorf("R7: %d starts, want 1", n)
		}
	})
	t.Run("success is no failure", func(t *testing.T) {
		s := newSim(t, limited(0), scaled, 0, func(p string, n int) simRun {
			return simRun{RunFor: 100 * time.Millisecond, Code: 0}
		})
		s.runUntil(time.Minute)
		if len(s.eventsWith(lifecycle.EventBackoffLimitExceeded)) != 0 {
			t.Errorf("R7: an exit 0 counted as a failure")
		}
	})
	t.Run("under never: a failure is started again, as the Job's new pod", func(t *testing.T) {
		g := oneProcess(spec.RestartNever)
		limit := 1
		g.BackoffLimit = &limit
		s := newSim(t, g, scaled, 0, constant(simRun{RunFor: 100 * time.Millisecond, Code: 2}))
		s.runUntil(time.Minute)
		if n := len(s.starts["app"]); n != 2 {
			t.Errorf("R7: %d starts under never with backoff_limit 1, want 2", n)
		}
	})
	t.Run("no limit: restarted on every failure", func(t *testing.T) {
		s := newSim(t, oneProcess(spec.RestartOnFailure), scaled, 0, constant(simRun{RunFor: 100 * time.Millisecond, Code: 1}))
		s.runUntil(time.Minute)
		if n := len(s.starts["app"]); n < 10 {
			t.Errorf("R1: %d starts in a minute without a limit", n)
		}
	})
}

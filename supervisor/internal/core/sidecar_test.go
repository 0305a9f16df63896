package core

import (
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Sidecars (O1–O7) on the simulated clock: start order, restarts whatever
// the group's policy, the end of a group whose main processes completed,
// readiness, and the stop order with its grace arithmetic (K4).

var tcpProbe = &spec.Probe{Handler: spec.Handler{TCPSocket: &spec.TCPSocketAction{Port: 80}}}

// sidecarGroup: sidecars "s1" and "s2" around a plain init "migrate",
// then main process "app": s1, migrate, s2, app.
func sidecarGroup(policy spec.RestartPolicy) spec.Group {
	sc := func(name string) spec.Process {
		return spec.Process{Name: name, Command: []string{"x"}, RestartPolicy: spec.RestartAlways}
	}
	return spec.Group{
		Name: "g", RestartPolicy: policy, TerminationGracePeriod: spec.Durp(30 * time.Second),
		Init:      []spec.Process{sc("s1"), {Name: "migrate", Command: []string{"x"}}, sc("s2")},
		Processes: []spec.Process{{Name: "app", Command: []string{"x"}}},
	}
}

// forever runs sidecars and app until stopped (each exiting termExit after
// the stop signal), and migrate for a second.
func forever(termExit time.Duration) simScript {
	return func(p string, n int) simRun {
		if p == "migrate" {
			return simRun{RunFor: time.Second}
		}
		return simRun{RunFor: -1, TermExit: termExit}
	}
}

func TestSidecarStartOrder(t *testing.T) {
	t.Run("O2 without a startup probe, the next init starts with the sidecar", func(t *testing.T) {
		s := newSim(t, sidecarGroup(spec.RestartAlways), spec.DefaultBackoff(), 0, forever(0))
		s.runUntil(10 * time.Second)
		assertTimes(t, "s1", s.starts["s1"], secs(0))
		assertTimes(t, "migrate", s.starts["migrate"], secs(0))
		assertTimes(t, "s2", s.starts["s2"], secs(1))
		assertTimes(t, "app", s.starts["app"], secs(1))
		if ps := s.status("s1"); ps.State != lifecycle.StateRunning || !ps.Init || ps.RestartCount != 0 {
			t.Errorf("O3: s1 %+v, want running after the inits completed", ps)
		}
	})
	t.Run("O2 the next init waits for the startup probe, not for completion", func(t *testing.T) {
		g := sidecarGroup(spec.RestartAlways)
		g.Init[0].StartupProbe = tcpProbe
		s := newSim(t, g, spec.DefaultBackoff(), 0, forever(0))
		s.schedule(3*time.Second, ProbeInput{Instance: "s1-0", Probe: spec.Startup, Success: true})
		s.runUntil(2 * time.Second)
		if len(s.starts["migrate"]) != 0 {
			t.Fatalf("O2: migrate started before s1's startup probe passed: %v", s.starts)
		}
		if ps := s.status("app"); ps.Reason != lifecycle.ReasonPodInitializing {
			t.Errorf("app waits as %s, want PodInitializing", ps.Reason)
		}
		s.runUntil(10 * time.Second)
		assertTimes(t, "migrate", s.starts["migrate"], secs(3))
		assertTimes(t, "app", s.starts["app"], secs(4))
	})
	t.Run("O2 the next init waits for post_start", func(t *testing.T) {
		g := sidecarGroup(spec.RestartAlways)
		g.Init[0].PostStart = &spec.Hook{Handler: spec.Handler{Sleep: &spec.SleepAction{Duration: time.Second}}}
		s := newSim(t, g, spec.DefaultBackoff(), 0, forever(0))
		s.schedule(2*time.Second, PostStartDoneInput{Instance: "s1-0"})
		s.runUntil(10 * time.Second)
		assertTimes(t, "migrate", s.starts["migrate"], secs(2))
	})
	t.Run("O2 a sidecar that crashes before it started holds the order back", func(t *testing.T) {
		g := sidecarGroup(spec.RestartNever)
		g.Init[0].StartupProbe = tcpProbe
		s := newSim(t, g, scaled, 0, func(p string, n int) simRun {
			if p == "s1" && n == 0 {
				return simRun{RunFor: 500 * time.Millisecond, Code: 1}
			}
			return forever(0)(p, n)
		})
		// The second instance (s1-1) passes its startup probe at 2s.
		s.schedule(2*time.Second, ProbeInput{Instance: "s1-1", Probe: spec.Startup, Success: true})
		s.runUntil(10 * time.Second)
		assertTimes(t, "s1 (O3: restarted under never; B7 first restart at once)", s.starts["s1"], secs(0, 0.5))
		assertTimes(t, "migrate", s.starts["migrate"], secs(2))
		if st := s.core.Snapshot(); st.Phase == lifecycle.PhaseFailed {
			t.Error("O3: a sidecar's exit never fails the group (I2 is for plain inits)")
		}
	})
}

func TestSidecarRestartsWhateverThePolicy(t *testing.T) {
	for _, policy := range []spec.RestartPolicy{spec.RestartNever, spec.RestartOnFailure, spec.RestartAlways} {
		t.Run("O3 group "+string(policy), func(t *testing.T) {
			s := newSim(t, sidecarGroup(policy), scaled, 0, func(p string, n int) simRun {
				switch p {
				case "s2":
					return simRun{RunFor: time.Second} // exits 0: a sidecar never completes
				case "migrate":
					return simRun{RunFor: time.Second}
				}
				return simRun{RunFor: -1}
			})
			s.runUntil(5 * time.Second)
			// s2 starts at 1 and exits every second, with back-off
			// (scaled: 100 ms doubling): 1, 2 (B7), 3.1, 4.3.
			assertTimes(t, "s2", s.starts["s2"], secs(1, 2, 3.1, 4.3))
			if len(s.starts["app"]) != 1 || len(s.starts["migrate"]) != 1 {
				t.Errorf("only the sidecar restarts: %v", s.starts)
			}
			if len(s.eventsWith(lifecycle.EventBackOff)) == 0 {
				t.Error("B6: the sidecar's restarts go through back-off")
			}
		})
	}
	t.Run("O3 a liveness failure restarts a sidecar under never", func(t *testing.T) {
		g := sidecarGroup(spec.RestartNever)
		g.Init[0].LivenessProbe = tcpProbe
		s := newSim(t, g, scaled, 0, func(p string, n int) simRun {
			if p == "s1" && n == 0 {
				return simRun{RunFor: -1, LivenessFailAfter: 3 * time.Second}
			}
			return forever(0)(p, n)
		})
		s.runUntil(10 * time.Second)
		assertTimes(t, "s1", s.starts["s1"], secs(0, 3))
	})
}

func TestSidecarsStopWhenTheGroupCompletes(t *testing.T) {
	for _, policy := range []spec.RestartPolicy{spec.RestartNever, spec.RestartOnFailure} {
		t.Run("O4 group "+string(policy), func(t *testing.T) {
			s := newSim(t, sidecarGroup(policy), scaled, 0, func(p string, n int) simRun {
				switch p {
				case "migrate":
					return simRun{RunFor: time.Second}
				case "app":
					return simRun{RunFor: 4 * time.Second} // exits 0 at 5s
				}
				return simRun{RunFor: -1, TermExit: time.Second}
			})
			s.runUntil(4 * time.Second)
			if st := s.core.Snapshot(); st.Phase != lifecycle.PhaseRunning {
				t.Fatalf("phase %s before app completed", st.Phase)
			}
			s.runUntil(60 * time.Second)
			// O6: s2 (the later) first, s1 once s2 exited.
			if got := signalTimes(s, "s2"); len(got) != 1 || got[0] != 5*time.Second {
				t.Errorf("O4: s2 signalled at %v, want [5s]", got)
			}
			if got := signalTimes(s, "s1"); len(got) != 1 || got[0] != 6*time.Second {
				t.Errorf("O6: s1 signalled at %v, want [6s], after s2 exited", got)
			}
			if len(s.starts["s1"]) != 1 || len(s.starts["s2"]) != 1 || len(s.starts["app"]) != 1 {
				t.Errorf("O4: nothing starts again in a completed group: %v", s.starts)
			}
			st := s.core.Snapshot()
			if st.Phase != lifecycle.PhaseSucceeded || st.Ready {
				t.Errorf("O4: phase %s ready %v, want Succeeded, not ready", st.Phase, st.Ready)
			}
			for _, name := range []string{"s1", "s2"} {
				if ps := s.status(name); ps.State != lifecycle.StateTerminated || ps.NextStartAt != (time.Time{}) {
					t.Errorf("O4: %s %s/%s, want terminated for good", name, ps.State, ps.Reason)
				}
			}
			kills := s.eventsWith(lifecycle.EventKilling)
			if len(kills) != 2 || !strings.Contains(kills[0].Message, "every main process of the group has ended") {
				t.Errorf("O4: Killing events %+v", kills)
			}
			if !s.core.Idle() {
				t.Error("O4: instances left")
			}
		})
	}
	t.Run("O4 on-failure: a failed main process restarts and the sidecars stay", func(t *testing.T) {
		s := newSim(t, sidecarGroup(spec.RestartOnFailure), scaled, 0, func(p string, n int) simRun {
			switch {
			case p == "migrate":
				return simRun{RunFor: time.Second}
			case p == "app":
				return simRun{RunFor: time.Second, Code: 1}
			}
			return simRun{RunFor: -1}
		})
		s.runUntil(10 * time.Second)
		if len(s.signals) != 0 || len(s.starts["app"]) < 3 {
			t.Errorf("signals %v, app starts %v", s.signals, s.starts["app"])
		}
	})
	t.Run("O4 a failed plain init stops the sidecars started before it", func(t *testing.T) {
		s := newSim(t, sidecarGroup(spec.RestartNever), scaled, 0, func(p string, n int) simRun {
			if p == "migrate" {
				return simRun{RunFor: time.Second, Code: 3}
			}
			return simRun{RunFor: -1}
		})
		s.runUntil(10 * time.Second)
		if got := signalTimes(s, "s1"); len(got) != 1 || got[0] != time.Second {
			t.Errorf("s1 signalled at %v, want [1s]", got)
		}
		if st := s.core.Snapshot(); st.Phase != lifecycle.PhaseFailed {
			t.Errorf("phase %s, want Failed (I2)", st.Phase)
		}
	})
	t.Run("O4 main processes stopped by request leave the sidecars running", func(t *testing.T) {
		s := newSim(t, sidecarGroup(spec.RestartNever), scaled, 0, forever(0))
		s.runUntil(2 * time.Second)
		s.command(CmdStop, "app", nil, "test")
		s.runUntil(10 * time.Second)
		if got := signalTimes(s, "app"); len(got) != 1 {
			t.Errorf("app signals %v", got)
		}
		if ps := s.status("s1"); ps.State != lifecycle.StateRunning {
			t.Errorf("s1 %s, want running", ps.State)
		}
	})
}

func TestSidecarReadiness(t *testing.T) {
	// O5: the group is ready when its main processes and its sidecars are.
	g := sidecarGroup(spec.RestartAlways)
	g.Init[2].ReadinessProbe = tcpProbe
	s := newSim(t, g, scaled, 0, forever(0))
	s.runUntil(2 * time.Second)
	if st := s.core.Snapshot(); st.Ready {
		t.Fatal("O5: ready while sidecar s2 is not")
	}
	s.feed(ProbeInput{Instance: "s2-0", Probe: spec.Readiness, Success: true})
	if st := s.core.Snapshot(); !st.Ready {
		t.Fatalf("O5: not ready with every process and sidecar ready: %+v", st)
	}
	s.feed(ProbeInput{Instance: "s2-0", Probe: spec.Readiness, Success: false})
	if st := s.core.Snapshot(); st.Ready {
		t.Fatal("O5: still ready after the sidecar turned unready")
	}
	if len(s.signals) != 0 {
		t.Error("P12: readiness restarts nothing")
	}
}

func TestSidecarRequests(t *testing.T) {
	s := newSim(t, sidecarGroup(spec.RestartAlways), scaled, 0, forever(0))
	s.runUntil(2 * time.Second)
	// A stop of the sidecar alone does not wait for anything, and it
	// stays stopped (X7) ...
	s.command(CmdStop, "s2", nil, "test")
	s.runUntil(3 * time.Second)
	if got := signalTimes(s, "s2"); len(got) != 1 || got[0] != 2*time.Second {
		t.Errorf("s2 signalled at %v, want [2s]", got)
	}
	if ps := s.status("s2"); ps.State != lifecycle.StateTerminated {
		t.Errorf("s2 %s/%s", ps.State, ps.Reason)
	}
	s.runUntil(20 * time.Second)
	if len(s.starts["s2"]) != 1 {
		t.Errorf("a stopped sidecar started again: %v", s.starts["s2"])
	}
	// ... until started; a restart request is taken, unlike for a
	// completed init (I3).
	s.command(CmdStart, "s2", nil, "test")
	s.runUntil(21 * time.Second)
	s.command(CmdRestart, "s1", nil, "test")
	s.command(CmdRestart, "migrate", nil, "test")
	s.runUntil(22 * time.Second)
	assertTimes(t, "s2", s.starts["s2"], secs(1, 20))
	assertTimes(t, "s1", s.starts["s1"], secs(0, 21))
	if len(s.starts["migrate"]) != 1 {
		t.Error("I3: a completed init ran again")
	}
}

// signalTimes is when process got a stop signal.
func signalTimes(s *sim, process string) []time.Duration {
	var out []time.Duration
	for _, x := range s.signals {
		if x.process == process {
			out = append(out, x.at)
		}
	}
	return out
}

// killTimes is when process's tree got SIGKILL while it ran.
func killTimes(s *sim, process string) []time.Duration {
	var out []time.Duration
	for _, x := range s.kills {
		if x.process == process {
			out = append(out, x.at)
		}
	}
	return out
}

func TestSidecarStopOrder(t *testing.T) {
	// Shutdown at 10s (all running since 1s); app takes appExit to exit
	// after SIGTERM (ignores it when negative: SIGKILL at the grace); the
	// sidecars exit sidecarExit after theirs (ignore it when negative).
	type want struct{ app, s2, s1, s1Kill time.Duration }
	cases := []struct {
		rule                 string
		grace                time.Duration
		override             *time.Duration
		appExit, sidecarExit time.Duration
		s1PreStop            time.Duration // 0: none
		want                 want
	}{
		{"O6 mains first, then the sidecars in reverse init order", 30 * time.Second, nil, 3 * time.Second, time.Second, 0,
			want{app: 10 * time.Second, s2: 13 * time.Second, s1: 14 * time.Second}},
		{"K4 the wait is charged in whole seconds: 2.5s waited leaves 28s", 30 * time.Second, nil, 2500 * time.Millisecond, -1, 0,
			// s2 signalled at 12.5 with 30-2 = 28s: SIGKILL at 40.5; s1
			// waited 30.5s, more than its grace: signalled at 40 (its
			// deadline) with K5's 2s minimum, SIGKILL at 42.
			want{app: 10 * time.Second, s2: 12500 * time.Millisecond, s1: 40 * time.Second, s1Kill: 42 * time.Second}},
		{"K4 the wait never outlasts the grace; K5 then leaves the minimum", 10 * time.Second, nil, -1, -1, 0,
			want{app: 10 * time.Second, s2: 20 * time.Second, s1: 20 * time.Second, s1Kill: 22 * time.Second}},
		{"K3 then K4: pre_stop runs at once, its time and the wait both charged", 30 * time.Second, nil, 4 * time.Second, -1, 1500 * time.Millisecond,
			// s2 waited 10–14 (4s charged): SIGTERM at 14, SIGKILL
			// 26s later, at 40. s1: pre_stop 10–11.5 (1s charged:
			// 29s left), then waits from 11.5 until s2 is gone at 40
			// (28.5s, 28 charged: 1s left, K5 lifts it to 2s).
			want{app: 10 * time.Second, s2: 14 * time.Second, s1: 40 * time.Second, s1Kill: 42 * time.Second}},
		{"O6 a grace of 0 waits for nothing (kubelet waits only with grace left)", 30 * time.Second, spec.Durp(0), time.Second, time.Second, 0,
			want{app: 10 * time.Second, s2: 10 * time.Second, s1: 10 * time.Second}},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			g := sidecarGroup(spec.RestartAlways)
			g.TerminationGracePeriod = spec.Durp(c.grace)
			if c.s1PreStop > 0 {
				g.Init[0].PreStop = &spec.Hook{Handler: spec.Handler{Sleep: &spec.SleepAction{Duration: time.Second}}}
			}
			s := newSim(t, g, scaled, 2*time.Second, func(p string, n int) simRun {
				switch p {
				case "migrate":
					return simRun{RunFor: time.Second}
				case "app":
					return simRun{RunFor: -1, TermExit: c.appExit, IgnoreTerm: c.appExit < 0}
				}
				return simRun{RunFor: -1, TermExit: c.sidecarExit, IgnoreTerm: c.sidecarExit < 0}
			})
			if c.s1PreStop > 0 {
				s.preStop["s1"] = c.s1PreStop
			}
			s.runUntil(10 * time.Second)
			s.command(CmdShutdown, "", c.override, "test")
			// Every stop begins at once: Killing events for all three.
			if k := s.eventsWith(lifecycle.EventKilling); len(k) != 3 {
				t.Errorf("Killing events at the shutdown: %d, want 3", len(k))
			}
			s.runUntil(100 * time.Second)
			check := func(what string, got []time.Duration, want time.Duration) {
				t.Helper()
				if len(got) != 1 || got[0] != want {
					t.Errorf("%s at %v, want [%v]", what, got, want)
				}
			}
			check("app signalled", signalTimes(s, "app"), c.want.app)
			check("s2 signalled", signalTimes(s, "s2"), c.want.s2)
			check("s1 signalled", signalTimes(s, "s1"), c.want.s1)
			if c.want.s1Kill != 0 {
				check("s1 SIGKILLed", killTimes(s, "s1"), c.want.s1Kill)
			}
			if !s.core.Idle() {
				t.Error("instances left")
			}
		})
	}
	t.Run("X9 a second shutdown kills a sidecar waiting for its turn", func(t *testing.T) {
		s := newSim(t, sidecarGroup(spec.RestartAlways), scaled, 2*time.Second, func(p string, n int) simRun {
			if p == "migrate" {
				return simRun{RunFor: time.Second}
			}
			return simRun{RunFor: -1, IgnoreTerm: true}
		})
		s.runUntil(10 * time.Second)
		s.command(CmdShutdown, "", nil, "test")
		s.runUntil(11 * time.Second)
		if ps := s.status("s1"); ps.State != lifecycle.StateRunning {
			t.Fatalf("s1 %s, want still running while it waits", ps.State)
		}
		s.command(CmdShutdown, "", nil, "test")
		s.runUntil(12 * time.Second)
		if !s.core.Idle() || len(signalTimes(s, "s1")) != 0 {
			t.Errorf("idle %v, s1 signals %v: want SIGKILL without its turn", s.core.Idle(), signalTimes(s, "s1"))
		}
	})
	t.Run("O6 a group stop orders too; a stop of one sidecar does not", func(t *testing.T) {
		s := newSim(t, sidecarGroup(spec.RestartAlways), scaled, 0, func(p string, n int) simRun {
			if p == "migrate" {
				return simRun{RunFor: time.Second}
			}
			return simRun{RunFor: -1, TermExit: 2 * time.Second}
		})
		s.runUntil(10 * time.Second)
		s.command(CmdStop, "", nil, "test")
		s.runUntil(30 * time.Second)
		if got := signalTimes(s, "s1"); len(got) != 1 || got[0] != 14*time.Second {
			t.Errorf("s1 signalled at %v, want [14s]", got)
		}
		if len(s.starts["s1"]) != 1 {
			t.Errorf("a stopped group's sidecar started again: %v", s.starts["s1"])
		}
	})
}

func TestSidecarStopThatAmendsAnother(t *testing.T) {
	// O6: a sidecar whose restart is under way (its pre_stop runs) when
	// the group shuts down still waits for its turn.
	g := sidecarGroup(spec.RestartAlways)
	g.Init[0].PreStop = &spec.Hook{Handler: spec.Handler{Sleep: &spec.SleepAction{Duration: time.Second}}}
	s := newSim(t, g, scaled, 0, func(p string, n int) simRun {
		if p == "migrate" {
			return simRun{RunFor: time.Second}
		}
		return simRun{RunFor: -1, TermExit: 3 * time.Second}
	})
	s.preStop["s1"] = time.Second
	s.runUntil(10 * time.Second)
	s.command(CmdRestart, "s1", nil, "test")
	s.command(CmdShutdown, "", nil, "test")
	s.runUntil(60 * time.Second)
	// app gets SIGTERM at 10 and exits at 13, s2 then and exits at 16;
	// s1's pre_stop ends at 11, and it waits until 16.
	if got := signalTimes(s, "s1"); len(got) != 1 || got[0] != 16*time.Second {
		t.Errorf("s1 signalled at %v, want [16s]", got)
	}
	if len(s.starts["s1"]) != 1 {
		t.Errorf("s1 restarted during the shutdown: %v", s.starts["s1"])
	}
}

// O3, O5, W1: a sidecar whose last instance exited 0 and waits in
// back-off is down: neither started nor ready, for its group's state as
// for a process that depends on it. (An exit 0 completes a plain init,
// never a sidecar.)
func TestSidecarInBackOffAfterExitZeroIsNotReady(t *testing.T) {
	s := newSim(t, sidecarGroup(spec.RestartAlways), spec.DefaultBackoff(), 0, func(p string, n int) simRun {
		switch {
		case p == "s1" && n < 2:
			return simRun{RunFor: time.Second} // exits 0; the second exit waits out a back-off
		case p == "migrate":
			return simRun{RunFor: time.Second}
		}
		return simRun{RunFor: -1}
	})
	s.runUntil(5 * time.Second)
	if ps := s.status("s1"); ps.State != lifecycle.StateWaiting || ps.Reason != lifecycle.ReasonCrashLoopBackOff {
		t.Fatalf("s1 %+v, want waiting in CrashLoopBackOff", ps)
	}
	if st := s.core.DepState(); st.Ready || st.Started {
		t.Errorf("DepState %+v while its sidecar s1 is in back-off: want neither started nor ready", st)
	}
}

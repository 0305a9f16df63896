package core

import (
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// The worked timelines of docs/semantics.md section T, reproduced on the pure core
// with exact (millisecond) start times: the ideal schedule of B9/X3.

func TestTimelineT1CrashImmediate(t *testing.T) {
	// T1, B11: exit 1 at once, default back-off.
	s := newSim(t, oneProcess(spec.RestartAlways), spec.DefaultBackoff(), 2*time.Second, constant(simRun{Code: 1}))
	s.runUntil(1300 * time.Second)
	assertTimes(t, "T1 starts", s.starts["app"], secs(0, 0, 10, 30, 70, 150, 310, 610, 910, 1210))

	// T1: the CrashLoopBackOff windows [0,10) [10,30) [30,70) [70,150) [150,310), then 300s.
	var windows []time.Duration
	for _, e := range s.eventsWith(lifecycle.EventBackOff) {
		windows = append(windows, e.Time.Sub(s.epoch))
	}
	assertTimes(t, "T1 BackOff events (window starts)", windows, secs(0, 10, 30, 70, 150, 310, 610, 910))
}

func TestTimelineT1StatusWhileWaiting(t *testing.T) {
	// X3, S1, B11: right after restart 1 the process waits in
	// CrashLoopBackOff with the time of its next start; never terminated
	// while it will restart.
	s := newSim(t, oneProcess(spec.RestartAlways), spec.DefaultBackoff(), 2*time.Second, constant(simRun{Code: 1}))
	s.runUntil(5 * time.Second)
	ps := s.status("app")
	if ps.State != lifecycle.StateWaiting || ps.Reason != lifecycle.ReasonCrashLoopBackOff {
		t.Fatalf("X3: state %s/%s, want waiting/CrashLoopBackOff", ps.State, ps.Reason)
	}
	if got := ps.NextStartAt.Sub(s.epoch); got != 10*time.Second {
		t.Errorf("X3: next start at %s, want 10s", got)
	}
	if ps.RestartCount != 1 {
		t.Errorf("B11: restart count %d, want 1 (CrashLoopBackOff first shows after restart 1)", ps.RestartCount)
	}
	if ps.LastTermination == nil || ps.LastTermination.ExitCode != 1 || ps.LastTermination.Reason != lifecycle.ReasonError {
		t.Errorf("S1: last termination %+v, want exit code 1, reason Error", ps.LastTermination)
	}
	for _, snap := range s.snapshots[1:] {
		if p, _ := snap.Process("app"); p.State == lifecycle.StateTerminated {
			t.Fatalf("S2: a restarting process showed terminated: %+v", p)
		}
	}
}

func TestTimelineT2Crash42s(t *testing.T) {
	// T2, B8 (natural exit): 42 s runs do not shorten the waits.
	s := newSim(t, oneProcess(spec.RestartAlways), spec.DefaultBackoff(), 2*time.Second, constant(simRun{RunFor: 42 * time.Second, Code: 1}))
	s.runUntil(1000 * time.Second)
	assertTimes(t, "T2 starts", s.starts["app"], secs(0, 42, 94, 156, 238, 360, 562, 904))
	if b := s.eventsWith(lifecycle.EventBackOff); len(b) == 0 || b[0].Time.Sub(s.epoch) != 84*time.Second || b[0].RestartCount != 1 {
		t.Errorf("T2: first CrashLoopBackOff should be at 84s after 1 restart, got %+v", b)
	}
}

func TestTimelineT4LongRun(t *testing.T) {
	long := func(d time.Duration) simScript {
		return func(_ string, n int) simRun {
			if n == 4 {
				return simRun{RunFor: d, Code: 1}
			}
			return simRun{Code: 1}
		}
	}
	t.Run("long-run-resets", func(t *testing.T) {
		// T4, B4: FinishedAt 730 − lastUpdate 70 = 660 > 600: expired.
		s := newSim(t, oneProcess(spec.RestartAlways), spec.DefaultBackoff(), 2*time.Second, long(660*time.Second))
		s.runUntil(800 * time.Second)
		assertTimes(t, "T4 starts", s.starts["app"], secs(0, 0, 10, 30, 70, 730, 740, 760))
	})
	t.Run("long-run-9m-no-reset", func(t *testing.T) {
		// T4, B4: 540 s is not > 600: the wait is 80 s, then 160 s.
		s := newSim(t, oneProcess(spec.RestartAlways), spec.DefaultBackoff(), 2*time.Second, long(540*time.Second))
		s.runUntil(900 * time.Second)
		assertTimes(t, "T4 starts", s.starts["app"], secs(0, 0, 10, 30, 70, 690, 850))
	})
}

func TestTimelineT5FirstRun11m(t *testing.T) {
	// T5, B7: the first restart is immediate whatever the first run was.
	s := newSim(t, oneProcess(spec.RestartAlways), spec.DefaultBackoff(), 2*time.Second, func(_ string, n int) simRun {
		if n == 0 {
			return simRun{RunFor: 660 * time.Second, Code: 1}
		}
		return simRun{Code: 1}
	})
	s.runUntil(900 * time.Second)
	assertTimes(t, "T5 starts", s.starts["app"], secs(0, 660, 670, 690, 730, 810))
}

func TestTimelineT6Scaled(t *testing.T) {
	// T6 with 100 ms / 1.6 s / reset 3.2 s (B1, X2).
	cases := []struct {
		name   string
		script simScript
		until  float64
		want   []float64
	}{
		{"scaled-crash-immediate", constant(simRun{Code: 1}), 8, []float64{0, 0, 0.1, 0.3, 0.7, 1.5, 3.1, 4.7, 6.3, 7.9}},
		{"scaled-run-500ms", constant(simRun{RunFor: 500 * time.Millisecond, Code: 1}), 9, []float64{0, 0.5, 1.1, 1.8, 2.7, 4.0, 6.1, 8.2}},
		{"scaled-reset", func(_ string, n int) simRun {
			if n == 4 {
				return simRun{RunFor: 4 * time.Second, Code: 1}
			}
			return simRun{Code: 1}
		}, 5.05, []float64{0, 0, 0.1, 0.3, 0.7, 4.7, 4.8, 5.0}},
		{"scaled-no-reset", func(_ string, n int) simRun {
			if n == 4 {
				return simRun{RunFor: 3 * time.Second, Code: 1}
			}
			return simRun{Code: 1}
		}, 6.5, []float64{0, 0, 0.1, 0.3, 0.7, 4.5, 6.1}},
		// B8, X4, R4 through the probe seam: verdict 0.3 s after each
		// start, exit 0.2 s after SIGTERM.
		{"scaled-liveness", constant(simRun{RunFor: -1, LivenessFailAfter: 300 * time.Millisecond, TermExit: 200 * time.Millisecond}),
			9.2, []float64{0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.8, 5.9, 6.4, 8.5, 9.0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(t, oneProcess(spec.RestartAlways), scaled, 0, c.script)
			s.runUntil(time.Duration(c.until * float64(time.Second)))
			assertTimes(t, c.name+" starts", s.starts["app"], secs(c.want...))
			if c.name == "scaled-liveness" {
				// T6: five immediate restarts, then CrashLoopBackOff at 3.0.
				b := s.eventsWith(lifecycle.EventBackOff)
				if len(b) == 0 || b[0].Time.Sub(s.epoch) != 3*time.Second || b[0].RestartCount != 5 {
					t.Errorf("T6: first BackOff should be at 3.0s after 5 restarts, got %+v", b)
				}
			}
		})
	}
}

func TestTimelineT7RestartPolicies(t *testing.T) {
	t.Run("never", func(t *testing.T) {
		// T7, R1: a single start, no CrashLoopBackOff, terminated.
		s := newSim(t, oneProcess(spec.RestartNever), spec.DefaultBackoff(), 2*time.Second, constant(simRun{Code: 1}))
		s.runUntil(1000 * time.Second)
		assertTimes(t, "never starts", s.starts["app"], secs(0))
		if len(s.starts["app"]) != 1 || len(s.eventsWith(lifecycle.EventBackOff)) != 0 {
			t.Errorf("T7: never restarted %d times, %d BackOff events", len(s.starts["app"])-1, len(s.eventsWith(lifecycle.EventBackOff)))
		}
		if ps := s.status("app"); ps.State != lifecycle.StateTerminated || ps.Terminated.ExitCode != 1 {
			t.Errorf("T7: status %+v, want terminated with exit code 1", ps)
		}
	})
	t.Run("onfailure-exit0", func(t *testing.T) {
		// T7, R2: exits 1, 1, then 0 (each after 1 s): starts 0, 1, 12.
		s := newSim(t, oneProcess(spec.RestartOnFailure), spec.DefaultBackoff(), 2*time.Second, func(_ string, n int) simRun {
			if n < 2 {
				return simRun{RunFor: time.Second, Code: 1}
			}
			return simRun{RunFor: time.Second}
		})
		s.runUntil(1000 * time.Second)
		assertTimes(t, "onfailure starts", s.starts["app"], secs(0, 1, 12))
		if n := len(s.starts["app"]); n != 3 {
			t.Errorf("T7: %d starts, want 3 (no restart after exit 0)", n)
		}
		if ps := s.status("app"); ps.State != lifecycle.StateTerminated || ps.Reason != lifecycle.ReasonCompleted {
			t.Errorf("T7: status %s/%s, want terminated/Completed", ps.State, ps.Reason)
		}
	})
}

func TestTimelineT3Liveness42s(t *testing.T) {
	// T3, B8, X4 (probe timing scripted: the verdict 12 s after each
	// start, P3): TERM ignored, grace 30, so each instance lives 42 s.
	g := graceGroup(false)
	g.Processes[0].LivenessProbe = &spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"x"}}}}
	s := newSim(t, g, spec.DefaultBackoff(), 2*time.Second, constant(simRun{RunFor: -1, IgnoreTerm: true, LivenessFailAfter: 12 * time.Second}))
	s.runUntil(1300 * time.Second)
	assertTimes(t, "T3 starts", s.starts["app"], secs(0, 42, 84, 126, 168, 210, 332, 534, 876, 918, 1260))
	b := s.eventsWith(lifecycle.EventBackOff)
	if len(b) == 0 || b[0].Time.Sub(s.epoch) != 252*time.Second || b[0].RestartCount != 5 {
		t.Errorf("T3: CrashLoopBackOff should first show at 252 s after 5 restarts, got %+v", b)
	}
}

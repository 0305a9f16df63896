package supervisor

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Hooks through the worker on the fake clock (X5, H1–H4, K3), with
// scripted hook durations and outcomes.

func hookGroup(policy spec.RestartPolicy, set func(p *spec.Process)) spec.Config {
	g := oneProcess(policy)
	g.TerminationGracePeriod = spec.Durp(5 * time.Second)
	set(&g.Processes[0])
	cfg := configOf(g)
	cfg.Backoff = scaled
	cfg.Supervisor.MinimumGrace = spec.Durp(time.Second)
	return cfg
}

func TestPreStartRunsBeforeTheStart(t *testing.T) {
	// X5: the process starts only once pre_start returned; meanwhile it is
	// waiting (ContainerCreating) and no Started event exists.
	cfg := hookGroup(spec.RestartAlways, func(p *spec.Process) { p.PreStart = hookOf(0) })
	r := startLifecycle(t, cfg, constant(simRun{RunFor: -1}), func(spec.HookPoint, string, int) fakeHook {
		return fakeHook{takes: 1500 * time.Millisecond}
	})
	r.advanceTo(time.Second)
	if ps := r.status("app"); ps.State != lifecycle.StateWaiting || ps.Reason != lifecycle.ReasonContainerCreating {
		t.Errorf("X5: during pre_start the process is %s/%s, want waiting/ContainerCreating", ps.State, ps.Reason)
	}
	if n := len(r.rt.startsOf("app")); n != 0 {
		t.Fatalf("X5: the process started %d times during its pre_start hook", n)
	}
	r.advanceTo(2 * time.Second)
	assertTimes(t, "X5 start after pre_start", r.rt.startsOf("app"), secs(1.5))
	if ps := r.status("app"); ps.State != lifecycle.StateRunning || ps.RestartCount != 0 {
		t.Errorf("after pre_start: %+v", ps)
	}
	r.stop()
}

func TestPreStartFailureFailsTheStartWithBackOff(t *testing.T) {
	// X5, H5: a failed pre_start fails that start (PreStartHookError), and
	// the next attempt waits its back-off as after a crash: attempts at 0,
	// 0 (B7), 0.1, 0.3, 0.7 with 100 ms / 1.6 s. The program never runs.
	cfg := hookGroup(spec.RestartAlways, func(p *spec.Process) { p.PreStart = hookOf(0) })
	r := startLifecycle(t, cfg, constant(simRun{RunFor: -1}), func(spec.HookPoint, string, int) fakeHook {
		return fakeHook{err: errHook}
	})
	r.advanceTo(800 * time.Millisecond)
	assertTimes(t, "X5 pre_start attempts", hookTimes(r.hooks.callsAt(spec.PreStart)), secs(0, 0, 0.1, 0.3, 0.7))
	if n := len(r.rt.startsOf("app")); n != 0 {
		t.Errorf("X5: the program ran %d times although pre_start failed", n)
	}
	ps := r.status("app")
	if ps.State != lifecycle.StateWaiting || ps.Reason != lifecycle.ReasonCrashLoopBackOff || ps.LastTermination == nil ||
		ps.LastTermination.Reason != lifecycle.ReasonPreStartHookError || !strings.Contains(ps.LastTermination.Message, "code 3") {
		t.Errorf("X5: status %+v (last %+v), want CrashLoopBackOff after PreStartHookError", ps, ps.LastTermination)
	}
	if ps.RestartCount != 4 {
		t.Errorf("R5: restart count %d, want 4", ps.RestartCount)
	}
	evs := r.events()
	if n := len(withReason(evs, lifecycle.EventFailedPreStartHook)); n != 5 {
		t.Errorf("X5: %d FailedPreStartHook events, want 5: %v", n, reasonsOf(evs))
	}
	if n := len(withReason(evs, lifecycle.EventCreated)); n != 0 {
		t.Errorf("E1: %d Created events for starts that pre_start failed: %v", n, reasonsOf(evs))
	}
	if n := len(withReason(evs, lifecycle.EventStarted)); n != 0 {
		t.Errorf("X5: Started events although nothing started: %v", reasonsOf(evs))
	}
	r.stop()
}

func TestPreStartFailureUnderNeverTerminates(t *testing.T) {
	cfg := hookGroup(spec.RestartNever, func(p *spec.Process) { p.PreStart = hookOf(0) })
	r := startLifecycle(t, cfg, constant(simRun{RunFor: -1}), func(spec.HookPoint, string, int) fakeHook {
		return fakeHook{err: errHook}
	})
	r.advanceTo(5 * time.Second)
	ps := r.status("app")
	if ps.State != lifecycle.StateTerminated || ps.Reason != lifecycle.ReasonPreStartHookError || ps.Terminated.ExitCode != 128 { // the program never ran
		t.Errorf("X5, R1: status %+v, want terminated with PreStartHookError", ps)
	}
	if n := len(r.hooks.callsAt(spec.PreStart)); n != 1 {
		t.Errorf("R1: %d attempts under never, want 1", n)
	}
	r.stop()
}

func TestStopDuringPreStartCancelsIt(t *testing.T) {
	// A stop that finds no process yet drops the start and ends the hook;
	// a shutdown is not held up by a hanging pre_start.
	cfg := hookGroup(spec.RestartAlways, func(p *spec.Process) { p.PreStart = hookOf(0) })
	r := startLifecycle(t, cfg, constant(simRun{RunFor: -1}), func(spec.HookPoint, string, int) fakeHook {
		return fakeHook{takes: -1}
	})
	r.advanceTo(time.Second)
	if err := r.sup.Stop("g", "app", RequestOptions{Requester: "test"}); err != nil {
		t.Fatal(err)
	}
	r.advanceTo(2 * time.Second)
	r.hooks.until(t, "the pre_start hook is cancelled", func() bool {
		c := r.hooks.callsAt(spec.PreStart)
		return len(c) == 1 && c[0].cancelled
	})
	if ps := r.status("app"); ps.State != lifecycle.StateWaiting || ps.Reason != lifecycle.ReasonStopped || len(r.rt.startsOf("app")) != 0 {
		t.Errorf("after a stop during pre_start: %+v, %d starts", ps, len(r.rt.startsOf("app")))
	}
	// Start again: pre_start runs again, and hangs again; shutdown ends it.
	if err := r.sup.Start("g", "app", RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	r.advanceTo(3 * time.Second)
	if n := len(r.hooks.callsAt(spec.PreStart)); n != 2 {
		t.Fatalf("%d pre_start calls, want 2", n)
	}
	r.stop()
	if c := r.hooks.callsAt(spec.PreStart); !c[1].cancelled {
		t.Errorf("shutdown left the pre_start hook running: %+v", c[1])
	}
}

func TestPostStartHoldsRunningAndStarted(t *testing.T) {
	// H1: the process runs during post_start (Started event, a pid) but is
	// neither running nor started, and not ready, until the hook returns.
	cfg := hookGroup(spec.RestartAlways, func(p *spec.Process) { p.PostStart = hookOf(0) })
	r := startLifecycle(t, cfg, constant(simRun{RunFor: -1}), func(spec.HookPoint, string, int) fakeHook {
		return fakeHook{takes: 2 * time.Second}
	})
	r.advanceTo(time.Second)
	assertTimes(t, "H1 the process starts at once", r.rt.startsOf("app"), secs(0))
	ps := r.status("app")
	if ps.State != lifecycle.StateWaiting || ps.Reason != lifecycle.ReasonContainerCreating || ps.Ready || ps.Started {
		t.Errorf("H1: during post_start: %+v, want waiting/ContainerCreating, not ready, not started", ps)
	}
	if g, _ := r.sup.Status().Group("g"); g.Ready {
		t.Error("P12: the group is ready while its process is in post_start")
	}
	if n := len(withReason(r.events(), lifecycle.EventStarted)); n != 1 {
		t.Errorf("H1: %d Started events, want 1 (the process does run)", n)
	}
	// A liveness result meanwhile is not acted on (the probes have not begun).
	if err := r.sup.ProbeResult("g", ps.InstanceID, spec.Liveness, false, "scripted"); err != nil {
		t.Fatal(err)
	}
	r.advanceTo(2 * time.Second)
	ps = r.status("app")
	if ps.State != lifecycle.StateRunning || !ps.Ready || !ps.Started {
		t.Errorf("H1: after post_start: %+v, want running, ready, started", ps)
	}
	if g, _ := r.sup.Status().Group("g"); !g.Ready {
		t.Error("P12: the group is not ready although its one process is")
	}
	if n := len(r.rt.startsOf("app")); n != 1 {
		t.Errorf("H1: a probe result during post_start restarted the process (%d starts)", n)
	}
	r.stop()
}

func TestPostStartFailureKillsThroughTheStopPath(t *testing.T) {
	// H2: FailedPostStartHook, then a kill through the normal path
	// (pre_stop included, the group's grace), then restart policy and
	// back-off as for any exit.
	cfg := hookGroup(spec.RestartAlways, func(p *spec.Process) {
		p.PostStart = hookOf(0)
		p.PreStop = hookOf(0)
	})
	r := startLifecycle(t, cfg, constant(simRun{RunFor: -1, IgnoreTerm: true}), func(point spec.HookPoint, _ string, n int) fakeHook {
		switch point {
		case spec.PostStart:
			return fakeHook{takes: 500 * time.Millisecond, err: errHook}
		case spec.PreStop:
			return fakeHook{takes: 1200 * time.Millisecond}
		}
		return fakeHook{}
	})
	// post_start fails at 0.5; pre_stop 0.5–1.7 (budget 5s); TERM at 1.7;
	// SIGKILL at 1.7 + (5 − 1) = 5.7; restart at once (B7).
	r.advanceTo(6 * time.Second)
	assertTimes(t, "H2 starts", r.rt.startsOf("app"), secs(0, 5.7))
	if c := r.hooks.callsAt(spec.PreStop); len(c) == 0 || c[0].at != 500*time.Millisecond || c[0].budget != 5*time.Second {
		t.Errorf("H2: pre_stop calls %+v, want one at 0.5s with the group's 5s grace", c)
	}
	evs := r.events()
	want := []string{lifecycle.EventCreated, lifecycle.EventStarted, lifecycle.EventFailedPostStartHook, lifecycle.EventKilling, lifecycle.EventCreated, lifecycle.EventStarted} // E1, E2
	if got := reasonsOf(evs); fmt.Sprint(got[:min(len(got), len(want))]) != fmt.Sprint(want) {
		t.Errorf("H2 events %v, want %v", got, want)
	}
	if k := withReason(evs, lifecycle.EventKilling); len(k) == 0 || !strings.Contains(k[0].Message, "post_start") {
		t.Errorf("H2: Killing event %+v should say the post_start hook failed", k)
	}
	ps := r.status("app")
	if ps.RestartCount != 1 || ps.LastTermination == nil || ps.LastTermination.Signal != syscall.SIGKILL {
		t.Errorf("H2: %+v (last %+v)", ps, ps.LastTermination)
	}
	r.stop()
}

func TestPostStartFailureUnderNeverDoesNotRestart(t *testing.T) {
	cfg := hookGroup(spec.RestartNever, func(p *spec.Process) { p.PostStart = hookOf(0) })
	r := startLifecycle(t, cfg, constant(simRun{RunFor: -1}), func(spec.HookPoint, string, int) fakeHook {
		return fakeHook{err: errHook}
	})
	r.advanceTo(10 * time.Second)
	if ps := r.status("app"); ps.State != lifecycle.StateTerminated || ps.Terminated.Signal != syscall.SIGTERM || len(r.rt.startsOf("app")) != 1 {
		t.Errorf("H2, R1: %+v, %d starts", ps, len(r.rt.startsOf("app")))
	}
	r.stop()
}

func TestPreStopChargedToGraceThroughTheWorker(t *testing.T) {
	// K3, K8 through the executor: pre_stop takes 2.5 s of a 5 s grace, so
	// SIGTERM at 2.5 and SIGKILL 5 − 2 = 3 s later; it runs on a kill only
	// (H4), and its failure is a warning that does not stop the stop.
	for _, c := range []struct {
		name string
		err  error
	}{{"success", nil}, {"failure", errHook}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := hookGroup(spec.RestartAlways, func(p *spec.Process) { p.PreStop = hookOf(0) })
			r := startLifecycle(t, cfg, func(_ string, n int) simRun {
				if n == 0 {
					return simRun{RunFor: time.Second, Code: 1} // a natural exit: no pre_stop
				}
				return simRun{RunFor: -1, IgnoreTerm: true}
			}, func(spec.HookPoint, string, int) fakeHook {
				return fakeHook{takes: 2500 * time.Millisecond, err: c.err}
			})
			r.advanceTo(2 * time.Second)
			if n := len(r.hooks.callsAt(spec.PreStop)); n != 0 {
				t.Fatalf("H4: pre_stop ran %d times on a natural exit", n)
			}
			if err := r.sup.Stop("g", "app", RequestOptions{Requester: "test"}); err != nil {
				t.Fatal(err)
			}
			r.advanceTo(10 * time.Second)
			calls := r.hooks.callsAt(spec.PreStop)
			if len(calls) != 1 || calls[0].at != 2*time.Second || calls[0].budget != 5*time.Second {
				t.Fatalf("K3: pre_stop calls %+v, want one at 2s with budget 5s", calls)
			}
			ps := r.status("app")
			if ps.Terminated == nil || ps.Terminated.Signal != syscall.SIGKILL || ps.FinishedAt.Sub(clock.Epoch) != 7500*time.Millisecond {
				t.Errorf("K3/K8: %+v, want SIGKILL at 2 + 2.5 + 3 = 7.5s", ps)
			}
			failed := withReason(r.events(), lifecycle.EventFailedPreStopHook)
			if (c.err != nil) != (len(failed) == 1) {
				t.Errorf("H4: FailedPreStopHook events %+v for hook error %v", failed, c.err)
			}
			r.stop()
		})
	}
}

func TestPostStopOncePerExit(t *testing.T) {
	// X5: post_stop runs once after each exit, natural or killed; a
	// failure is a FailedPostStopHook warning and changes nothing else:
	// the restart does not wait for it.
	cfg := hookGroup(spec.RestartAlways, func(p *spec.Process) { p.PostStop = hookOf(0) })
	r := startLifecycle(t, cfg, func(_ string, n int) simRun {
		if n < 2 {
			return simRun{RunFor: time.Second, Code: 1}
		}
		return simRun{RunFor: -1}
	}, func(_ spec.HookPoint, _ string, n int) fakeHook {
		return fakeHook{takes: 3 * time.Second, err: errHook}
	})
	// exits at 1 (restart at once, B7) and 2 (back-off 100 ms: 2.1).
	r.advanceTo(3 * time.Second)
	assertTimes(t, "X5 restarts do not wait for post_stop", r.rt.startsOf("app"), secs(0, 1, 2.1))
	if err := r.sup.Stop("g", "app", RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	r.advanceTo(10 * time.Second)
	calls := r.hooks.callsAt(spec.PostStop)
	if len(calls) != 3 {
		t.Fatalf("X5: post_stop ran %d times for 3 exits: %+v", len(calls), calls)
	}
	seen := map[string]bool{}
	for _, c := range calls {
		if seen[c.instance] {
			t.Errorf("X5: post_stop ran twice for %s", c.instance)
		}
		seen[c.instance] = true
	}
	failed := withReason(r.events(), lifecycle.EventFailedPostStopHook)
	if len(failed) != 3 || failed[0].InstanceID != calls[0].instance || failed[0].Type != lifecycle.EventWarning {
		t.Errorf("X5: FailedPostStopHook events %+v, want 3 naming the exited instance", failed)
	}
	r.stop()
}

func TestShutdownWaitsForPostStop(t *testing.T) {
	// X9 with X5: the post_stop of the last exit runs before Run returns;
	// a second shutdown request cuts it short.
	cfg := hookGroup(spec.RestartAlways, func(p *spec.Process) { p.PostStop = hookOf(0) })
	r := startLifecycle(t, cfg, constant(simRun{RunFor: -1}), func(spec.HookPoint, string, int) fakeHook {
		return fakeHook{takes: 20 * time.Second}
	})
	r.advanceTo(time.Second)
	r.sup.RequestShutdown(nil)
	r.advanceTo(10 * time.Second)
	select {
	case <-r.res:
		t.Fatal("X5: Run returned while post_stop still ran")
	default:
	}
	if c := r.hooks.callsAt(spec.PostStop); len(c) != 1 || c[0].ended >= 0 {
		t.Fatalf("post_stop calls %+v, want one still running", c)
	}
	r.sup.RequestShutdown(nil)
	select {
	case <-r.res:
	case <-time.After(5 * time.Second):
		t.Fatal("X9: a second shutdown did not end the post_stop hook")
	}
	if c := r.hooks.callsAt(spec.PostStop); !c[0].cancelled {
		t.Errorf("post_stop %+v should have been cancelled", c[0])
	}
}

func TestPreStopOutlivingTheGraceEndsWithTheSIGKILL(t *testing.T) {
	// K3, K9: a pre_stop that never returns. The supervisor stops waiting
	// for it at the grace (5 s) and sends the stop signal; the hook runs
	// on, and ends when the instance's tree is SIGKILLed 1 s (the minimum)
	// later, not before. An exec hook ended that way did not complete: one
	// FailedPreStopHook, as kubelet's hook goroutine records when the
	// container's kill makes the exec fail; a sleep hook's end is quiet.
	for _, c := range []struct {
		name string
		hook *spec.Hook
		want int
	}{
		{"exec", &spec.Hook{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"hang"}}}}, 1},
		{"sleep", hookOf(5 * time.Second), 0}, // as long as the grace allows (D6); the fake hook hangs anyway
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := hookGroup(spec.RestartNever, func(p *spec.Process) { p.PreStop = c.hook })
			r := startLifecycle(t, cfg, constant(simRun{RunFor: -1, IgnoreTerm: true}), func(spec.HookPoint, string, int) fakeHook {
				return fakeHook{takes: -1} // hangs until its context ends
			})
			r.advanceTo(time.Second)
			if err := r.sup.Stop("g", "app", RequestOptions{Requester: "test"}); err != nil {
				t.Fatal(err)
			}
			r.advanceTo(6500 * time.Millisecond) // past the grace: TERM went out at 6
			if calls := r.hooks.callsAt(spec.PreStop); len(calls) != 1 || calls[0].at != time.Second || calls[0].ended >= 0 {
				t.Fatalf("K9: pre_stop calls %+v, want one from 1s still running after the grace", calls)
			}
			r.advanceTo(7 * time.Second)
			// The hook's context ends at the SIGKILL; the fake hook hears it
			// in a goroutine of its own (context.AfterFunc) and reads the
			// clock, which stays at 7s until it has.
			r.hooks.until(t, "pre_stop ended", func() bool { return r.hooks.callsAt(spec.PreStop)[0].ended >= 0 })
			call := r.hooks.callsAt(spec.PreStop)[0]
			if call.ended != 7*time.Second || !call.cancelled {
				t.Errorf("K9: pre_stop %+v, want it ended (cancelled) at the SIGKILL, 7s", call)
			}
			ps := r.status("app")
			if ps.Terminated == nil || ps.Terminated.Signal != syscall.SIGKILL || ps.FinishedAt.Sub(clock.Epoch) != 7*time.Second {
				t.Errorf("K3, K5: %+v, want SIGKILL at 1 + 5 + 1 = 7s", ps)
			}
			r.stop() // Run returns once the hook's end was handled
			f := withReason(r.events(), lifecycle.EventFailedPreStopHook)
			if len(f) != c.want {
				t.Fatalf("K9: FailedPreStopHook events %+v, want %d", f, c.want)
			}
			if c.want == 1 && (f[0].Type != lifecycle.EventWarning || f[0].InstanceID != call.instance ||
				f[0].Message != "PreStop hook for process app did not complete: it was ended with the process") {
				t.Errorf("K9: %+v, want a warning naming the killed instance", f[0])
			}
		})
	}
}

package supervisor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Integration with real processes through hostrt.Runtime and the real
// clock. Bounds are generous (two noisy cores); lower bounds are exact
// because nothing may ever happen early.

type realRun struct {
	t   *testing.T
	sup *supervisor.Supervisor
	sub *supervisor.Subscription
	res chan supervisor.Result
}

// startReal runs a supervisor of cfg over host processes until the test
// ends.
func startReal(t *testing.T, cfg spec.Config) *realRun {
	t.Helper()
	return runSupervisor(t, cfg, supervisor.Options{Runtime: hostrt.Runtime{}}, 10*time.Second)
}

// runSupervisor runs a supervisor of cfg with opts until the test ends,
// then shuts it down, SIGKILLs whatever is left so that nothing stays
// behind, and fails the test unless Run returned within stopWithin. The
// run's result stays in r.res for whoever reads it later.
func runSupervisor(t *testing.T, cfg spec.Config, opts supervisor.Options, stopWithin time.Duration) *realRun {
	t.Helper()
	sup, err := supervisor.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := &realRun{t: t, sup: sup, sub: sup.Subscribe(), res: make(chan supervisor.Result, 1)}
	go func() {
		res, err := sup.Run(context.Background())
		if err != nil {
			t.Error(err)
		}
		r.res <- res
	}()
	t.Cleanup(func() {
		r.sub.Close()
		sup.RequestShutdown(nil)
		sup.RequestShutdown(nil) // SIGKILL whatever is left: leave nothing behind
		select {
		case res := <-r.res:
			r.res <- res
		case <-time.After(stopWithin):
			t.Error("supervisor did not stop")
		}
	})
	return r
}

// next waits for the next event with one of the reasons.
func (r *realRun) next(reasons ...string) lifecycle.Event {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		e, err := r.sub.Next(ctx)
		if err != nil {
			r.t.Fatalf("waiting for %v: %v", reasons, err)
		}
		for _, want := range reasons {
			if e.Reason == want {
				return e
			}
		}
	}
}

// terminated waits until process name of group has ended and stays
// ended (stopped, or ended for good), and returns how it ended. An exit is
// no event, as in kubelet (E2): the status holds it.
func (r *realRun) terminated(group, name string) *lifecycle.Termination {
	r.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if g, ok := r.sup.Status().Group(group); ok {
			if p, ok := g.Process(name); ok && p.State == lifecycle.StateTerminated && p.Terminated != nil {
				return p.Terminated
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s/%s did not end", group, name)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *realRun) wait() supervisor.Result {
	r.t.Helper()
	select {
	case res := <-r.res:
		r.res <- res // for Cleanup
		return res
	case <-time.After(15 * time.Second):
		r.t.Fatal("Run did not return")
		return supervisor.Result{}
	}
}

func realGroup(name string, policy spec.RestartPolicy, procs ...spec.Process) spec.Group {
	return spec.Group{Name: name, RestartPolicy: policy, Processes: procs}
}

func TestRealScaledBackoff(t *testing.T) {
	t.Parallel()
	// The start of T6 scaled-crash-immediate with real processes (B1–B4,
	// B7, X3): real exits drive restarts at 0, 0, 0.1, 0.3 s, never early,
	// and the status never shows terminated meanwhile. The whole timeline
	// (ten starts, the back-off cap) is exact on the fake clock
	// (TestTimelineT6Scaled); four starts show the wiring: an immediate
	// restart, then back-offs that wait on the real clock and double.
	cfg := spec.Config{Backoff: scaled, Groups: []spec.Group{
		realGroup("crash", spec.RestartAlways, helperProcess(t, "app", "exit", "1")),
	}}
	r := startReal(t, cfg)

	// Sample the status while it runs: it must never show terminated.
	stopSampling := make(chan struct{})
	sampled := make(chan []string, 1)
	go func() {
		var bad []string
		for {
			select {
			case <-stopSampling:
				sampled <- bad
				return
			case <-time.After(2 * time.Millisecond):
			}
			if g, ok := r.sup.Status().Group("crash"); ok {
				if p, _ := g.Process("app"); p.State == lifecycle.StateTerminated {
					bad = append(bad, p.Reason)
				}
			}
		}
	}()

	var starts []time.Time
	for len(starts) < 4 {
		starts = append(starts, r.next(lifecycle.EventStarted).Time)
	}
	close(stopSampling)
	if bad := <-sampled; len(bad) > 0 {
		t.Errorf("S2/X3: a restarting process showed terminated %d times", len(bad))
	}

	ideal := secs(0, 0, 0.1, 0.3)
	waits := secs(0, 0, 0.1, 0.2)
	// Never early is exact; how late is the machine's business (a run of
	// the helper plus the reaction, seconds on a loaded CI machine). The
	// timeline itself is checked to the millisecond on the fake clock;
	// this only catches a restart that waits far past its back-off.
	const slack = 5 * time.Second
	for i := 1; i < len(starts); i++ {
		gap := starts[i].Sub(starts[i-1])
		if gap < waits[i] {
			t.Errorf("B3/X3: start %d came %s after the previous one, before its %s back-off", i, gap, waits[i])
		}
		if gap > waits[i]+slack {
			t.Errorf("X3: start %d came %s after the previous one, want within %s of its %s back-off", i, gap, slack, waits[i])
		}
		if at := starts[i].Sub(starts[0]); at < ideal[i] {
			t.Errorf("X3: start %d at %s, before its ideal %s", i, at, ideal[i])
		}
	}
	t.Logf("starts: %v", relative(starts))
}

func relative(ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(ts[0]).Round(time.Millisecond)
	}
	return out
}

func TestRealTermIgnoringProcessIsKilledAfterGrace(t *testing.T) {
	t.Parallel()
	// K6, X10, X12: SIGTERM, then SIGKILL of the tree after the grace.
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	g := realGroup("stubborn", spec.RestartAlways, helperProcess(t, "app", "ignore-term", pidFile))
	grace := 300 * time.Millisecond
	g.TerminationGracePeriod = &grace
	zero := time.Duration(0)
	r := startReal(t, spec.Config{Supervisor: spec.Supervisor{MinimumGrace: &zero}, Groups: []spec.Group{g}})
	r.next(lifecycle.EventStarted)
	waitPidFile(t, pidFile)

	if err := r.sup.Stop("stubborn", "", supervisor.RequestOptions{Requester: "test"}); err != nil {
		t.Fatal(err)
	}
	killing := r.next(lifecycle.EventKilling)
	exited := r.terminated("stubborn", "app")
	if d := exited.FinishedAt.Sub(killing.Time); d < grace || d > grace+2*time.Second {
		t.Errorf("K6: exit %s after the stop began, want SIGKILL after the %s grace", d, grace)
	}
	p, _ := r.sup.Status().Groups[0].Process("app")
	if p.State != lifecycle.StateTerminated || p.Terminated.Signal != syscall.SIGKILL || p.Terminated.ExitCode != 137 {
		t.Errorf("K6: status %+v, want terminated by SIGKILL (137)", p)
	}
}

func TestRealStopLeavesNoDescendant(t *testing.T) {
	t.Parallel()
	// X10: the stop signal goes to the main process; what it left behind
	// (here a TERM-ignoring child in its process group) is SIGKILLed.
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	g := realGroup("tree", spec.RestartAlways, helperProcess(t, "app", "fork-child", pidFile))
	r := startReal(t, spec.Config{Groups: []spec.Group{g}})
	r.next(lifecycle.EventStarted)
	child := waitPidFile(t, pidFile)
	if processGone(child) {
		t.Fatal("the child should be running")
	}
	if err := r.sup.Stop("tree", "", supervisor.RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	r.terminated("tree", "app")
	deadline := time.Now().Add(10 * time.Second)
	for !processGone(child) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(child, syscall.SIGKILL) // leave nothing behind
			t.Fatalf("X10: descendant %d survived the stop", child)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRealCriticalExitCode(t *testing.T) {
	t.Parallel()
	// X11: the critical process's exit code becomes the supervisor's, and
	// the other groups are stopped (X9).
	crit := realGroup("main", spec.RestartNever, helperProcess(t, "cmd", "exit", "7"))
	crit.Processes[0].Critical = true
	other := realGroup("other", spec.RestartAlways, helperProcess(t, "sleeper", "sleep"))
	r := startReal(t, spec.Config{Groups: []spec.Group{other, crit}})
	res := r.wait()
	if res.ExitCode != 7 || res.Critical == nil || res.Critical.Group != "main" || res.Critical.Process != "cmd" {
		t.Errorf("X11: result %+v, want exit code 7 from main/cmd", res)
	}
	o, _ := r.sup.Status().Group("other")
	if p, _ := o.Process("sleeper"); p.State != lifecycle.StateTerminated || p.Terminated.Signal != syscall.SIGTERM {
		t.Errorf("X9: the other group should be stopped by SIGTERM, got %+v", p)
	}
}

func TestRealStartFailure(t *testing.T) {
	t.Parallel()
	// E3: a command that does not exist is exit code 128, reason
	// StartError, as containerd records it (not the shell's 127), with the
	// cause in the message and a Failed event.
	g := realGroup("missing", spec.RestartNever, spec.Process{Name: "app", Command: []string{filepath.Join(os.TempDir(), "podsup-no-such-command")}})
	r := startReal(t, spec.Config{Groups: []spec.Group{g}})
	e := r.next(lifecycle.EventFailed)
	if e.Process != "app" {
		t.Errorf("Failed event %+v", e)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		p, _ := r.sup.Status().Groups[0].Process("app")
		if p.State == lifecycle.StateTerminated {
			if p.Terminated.ExitCode != 128 || p.Reason != lifecycle.ReasonStartError || !strings.Contains(p.Terminated.Message, "not found") {
				t.Errorf("E3: status %+v (terminated %+v), want 128 StartError saying not found", p, p.Terminated)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %+v", p)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

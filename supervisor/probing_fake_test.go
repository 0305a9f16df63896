package supervisor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/probes"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Probes through the group worker with real probes.Workers on the fake
// clock and scripted handlers.

func execProbe(delay, period time.Duration, threshold int) *spec.Probe {
	return &spec.Probe{
		Handler:      spec.Handler{Exec: &spec.ExecAction{Command: []string{"/bin/check"}}},
		InitialDelay: delay, Period: period, FailureThreshold: threshold,
	}
}

// alwaysFailing is an exec probe that fails and says so.
func alwaysFailing(calls *atomic.Int64) func(string, spec.ProbeKind) probes.Handler {
	return func(string, spec.ProbeKind) probes.Handler {
		return detailHandler(func() probes.Detail {
			calls.Add(1)
			return probes.Detail{Result: probes.Failure, Message: "command exited with code 1", Output: []byte("db unreachable\n")}
		})
	}
}

type detailHandler func() probes.Detail

func (h detailHandler) Probe(ctx context.Context) (probes.Result, string, error) {
	d := h()
	return d.Result, d.Message, nil
}

func (h detailHandler) ProbeDetail(context.Context) (probes.Detail, error) { return h(), nil }

func TestWorkerTimelineT6ScaledLivenessWithProbeWorkers(t *testing.T) {
	// T6 scaled-liveness, exactly, through the group worker, the fake
	// runtime and a real probe worker (P1, P3, P6, P7, R4, B8, X4): an
	// always-failing exec liveness probe (initial delay 0.1 s, period
	// 0.1 s, threshold 3) gives its verdict 0.3 s after each start; the
	// process exits 0.2 s after SIGTERM.
	g := oneProcess(spec.RestartAlways)
	g.Processes[0].LivenessProbe = execProbe(100*time.Millisecond, 100*time.Millisecond, 3)
	cfg := configOf(g)
	cfg.Backoff = scaled
	var calls atomic.Int64
	r := startLifecycleWith(t, cfg, constant(simRun{RunFor: -1, TermExit: 200 * time.Millisecond}), nil, alwaysFailing(&calls))
	r.advanceTo(9200 * time.Millisecond)
	assertTimes(t, "T6 scaled-liveness starts", r.rt.startsOf("app"), secs(0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.8, 5.9, 6.4, 8.5, 9.0))
	evs := r.events()
	if t.Failed() {
		for _, e := range evs {
			t.Logf("%s %s %s %s", e.Time.Sub(clock.Epoch), e.Reason, e.InstanceID, e.Message)
		}
	}
	b := withReason(evs, lifecycle.EventBackOff)
	if len(b) == 0 || b[0].Time.Sub(clock.Epoch) != 3*time.Second || b[0].RestartCount != 5 {
		t.Errorf("T6: first BackOff should be at 3.0s after 5 restarts, got %+v", b)
	}
	// P7: no probe runs between the verdict and the next instance: 3 per
	// instance that reached its verdict.
	// The last instance (started at 9.0) was probed at 9.1 and 9.2.
	killed := len(withReason(evs, lifecycle.EventKilling))
	if n := calls.Load(); n != int64(3*killed+2) {
		t.Errorf("P7: %d probes for %d killed instances and a young one, want %d", n, killed, 3*killed+2)
	}
	r.stop()
}

func TestLivenessEventsReadLikeKubectlDescribe(t *testing.T) {
	// The acceptance sequence: Started, Unhealthy ×3 with the probe's
	// output, Killing ("failed liveness probe, will be restarted"), then
	// Created and Started of the next instance (the exit is no event: E2);
	// later BackOff (K7, P6, R4, E1).
	g := oneProcess(spec.RestartAlways)
	g.Processes[0].LivenessProbe = execProbe(100*time.Millisecond, 100*time.Millisecond, 3)
	cfg := configOf(g)
	cfg.Backoff = scaled
	var calls atomic.Int64
	r := startLifecycleWith(t, cfg, constant(simRun{RunFor: -1, TermExit: 200 * time.Millisecond}), nil, alwaysFailing(&calls))
	r.advanceTo(550 * time.Millisecond)
	evs := r.events()
	want := []string{lifecycle.EventCreated, lifecycle.EventStarted, lifecycle.EventUnhealthy, lifecycle.EventUnhealthy, lifecycle.EventUnhealthy, lifecycle.EventKilling, lifecycle.EventCreated, lifecycle.EventStarted} // E1, E2
	if got := reasonsOf(evs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i, e := range withReason(evs, lifecycle.EventUnhealthy) {
		if e.Message != "Liveness probe failed: command exited with code 1: db unreachable" || e.Type != lifecycle.EventWarning {
			t.Errorf("Unhealthy %d: %q", i, e.Message)
		}
		if at := e.Time.Sub(clock.Epoch); at != time.Duration(i+1)*100*time.Millisecond {
			t.Errorf("Unhealthy %d at %s, want %s (P3: first probe at the initial delay)", i, at, time.Duration(i+1)*100*time.Millisecond)
		}
	}
	if k := withReason(evs, lifecycle.EventKilling)[0]; !strings.Contains(k.Message, "failed liveness probe, will be restarted") {
		t.Errorf("K7: Killing message %q", k.Message)
	}
	r.stop()
}

func TestReadinessOnlySetsReady(t *testing.T) {
	// P12, S3: readiness failures never restart; they flip ready (and the
	// group's readiness) both ways. P4: a new instance starts unready.
	var healthy atomic.Bool
	var mu sync.Mutex
	probed := map[spec.ProbeKind]int{}
	handler := func(_ string, kind spec.ProbeKind) probes.Handler {
		return detailHandler(func() probes.Detail {
			mu.Lock()
			probed[kind]++
			mu.Unlock()
			if healthy.Load() {
				return probes.Detail{Result: probes.Success}
			}
			return probes.Detail{Result: probes.Failure, Message: "HTTP probe failed with statuscode: 503"}
		})
	}
	g := oneProcess(spec.RestartAlways)
	g.Processes = append(g.Processes, spec.Process{Name: "side", Command: []string{"x"}})
	g.Processes[0].ReadinessProbe = &spec.Probe{Handler: spec.Handler{HTTPGet: &spec.HTTPGetAction{Port: 8080}}, Period: time.Second}
	r := startLifecycleWith(t, configOf(g), constant(simRun{RunFor: -1}), nil, handler)
	r.advanceTo(5 * time.Second)
	gs, _ := r.sup.Status().Group("g")
	if ps, _ := gs.Process("app"); ps.Ready || gs.Ready {
		t.Errorf("P12: ready while the readiness probe fails: %+v, group ready %v", ps, gs.Ready)
	}
	if ps, _ := gs.Process("side"); !ps.Ready {
		t.Errorf("S3: a process without readiness probe is ready once running: %+v", ps)
	}
	healthy.Store(true)
	r.advanceTo(6 * time.Second)
	gs, _ = r.sup.Status().Group("g")
	if ps, _ := gs.Process("app"); !ps.Ready || !gs.Ready {
		t.Errorf("P12: not ready after the probe succeeded: %+v, group ready %v", ps, gs.Ready)
	}
	healthy.Store(false)
	r.advanceTo(9 * time.Second)
	gs, _ = r.sup.Status().Group("g")
	if ps, _ := gs.Process("app"); ps.Ready || gs.Ready || ps.RestartCount != 0 || len(r.rt.startsOf("app")) != 1 {
		t.Errorf("P12: %+v group ready %v; readiness must only unready, never restart", ps, gs.Ready)
	}
	evs := r.events()
	if u := withReason(evs, lifecycle.EventUnhealthy); len(u) == 0 || u[0].Message != "Readiness probe failed: HTTP probe failed with statuscode: 503" {
		t.Errorf("Unhealthy events %+v", u)
	}
	if n := len(withReason(evs, lifecycle.EventKilling)); n != 0 {
		t.Errorf("P12: %d Killing events from readiness", n)
	}
	mu.Lock()
	// The first probe comes at once when the instance starts (readiness is
	// triggered on start), then every second: 0..9 is 10 probes.
	if probed[spec.Readiness] != 10 {
		t.Errorf("readiness probed %d times in 9s with period 1s, want 10 (one prompt probe at the start)", probed[spec.Readiness])
	}
	mu.Unlock()
	r.stop()
}

func TestStartupGatesLivenessAndKillsWithItsGrace(t *testing.T) {
	// P5: liveness waits for the startup probe; P11, K1.2: a failing
	// startup probe kills with the probe's own grace and restarts (R4).
	g := oneProcess(spec.RestartAlways)
	g.TerminationGracePeriod = spec.Durp(30 * time.Second)
	g.Processes[0].StartupProbe = execProbe(0, time.Second, 3)
	g.Processes[0].StartupProbe.TerminationGracePeriod = spec.Durp(4 * time.Second)
	g.Processes[0].LivenessProbe = execProbe(0, time.Second, 1)
	var mu sync.Mutex
	probed := map[spec.ProbeKind]int{}
	handler := func(_ string, kind spec.ProbeKind) probes.Handler {
		return detailHandler(func() probes.Detail {
			mu.Lock()
			probed[kind]++
			mu.Unlock()
			return probes.Detail{Result: probes.Failure, Message: "not yet"}
		})
	}
	cfg := configOf(g)
	cfg.Supervisor.MinimumGrace = spec.Durp(time.Second)
	r := startLifecycleWith(t, cfg, constant(simRun{RunFor: -1, IgnoreTerm: true}), nil, handler)
	// Startup probes at 0 (a worker probes at once when it begins, as the
	// kubelet's does), 1 and 2: the verdict at 2, SIGKILL at 2 + 4.
	r.advanceTo(6500 * time.Millisecond)
	assertTimes(t, "P11 starts", r.rt.startsOf("app"), secs(0, 6))
	mu.Lock()
	if probed[spec.Liveness] != 0 {
		t.Errorf("P5: liveness probed %d times before the process started", probed[spec.Liveness])
	}
	mu.Unlock()
	k := withReason(r.events(), lifecycle.EventKilling)
	if len(k) == 0 || !strings.Contains(k[0].Message, "failed startup probe, will be restarted (grace 4s)") {
		t.Errorf("P11: Killing %+v", k)
	}
	r.stop()
}

func TestProbesBeginAfterPostStart(t *testing.T) {
	// H1: no probe runs while post_start does; once it returned, the
	// liveness probe (period 0.1 s, threshold 3) fails at 1.1, 1.2 and 1.3
	// and kills then.
	g := oneProcess(spec.RestartAlways)
	g.Processes[0].LivenessProbe = execProbe(0, 100*time.Millisecond, 3)
	g.Processes[0].PostStart = hookOf(0)
	var calls atomic.Int64
	r := startLifecycleWith(t, configOf(g), constant(simRun{RunFor: -1}), func(spec.HookPoint, string, int) fakeHook {
		return fakeHook{takes: 1050 * time.Millisecond}
	}, alwaysFailing(&calls))
	r.advanceTo(time.Second)
	if n := calls.Load(); n != 0 {
		t.Fatalf("H1: %d probes ran during post_start", n)
	}
	r.advanceTo(1500 * time.Millisecond)
	k := withReason(r.events(), lifecycle.EventKilling)
	if len(k) != 1 || k[0].Time.Sub(clock.Epoch) != 1300*time.Millisecond {
		t.Errorf("H1, P6: Killing %+v, want one at 1.3s", k)
	}
	r.stop()
}

func TestReadinessProbesANewInstanceAtOnce(t *testing.T) {
	// S3, P4: a restarted instance starts unready; its readiness probe runs
	// as soon as it is started (as the kubelet triggers it), not a whole
	// period (10 s here) later.
	g := oneProcess(spec.RestartAlways)
	g.Processes[0].ReadinessProbe = &spec.Probe{Handler: spec.Handler{TCPSocket: &spec.TCPSocketAction{Port: 1}}, Period: 10 * time.Second}
	handler := func(string, spec.ProbeKind) probes.Handler {
		return detailHandler(func() probes.Detail { return probes.Detail{Result: probes.Success} })
	}
	r := startLifecycleWith(t, configOf(g), func(_ string, n int) simRun {
		if n == 0 {
			return simRun{RunFor: time.Second, Code: 1}
		}
		return simRun{RunFor: -1}
	}, nil, handler)
	r.advanceTo(500 * time.Millisecond)
	if ps := r.status("app"); !ps.Ready {
		t.Fatalf("the first instance should be ready after its prompt probe: %+v", ps)
	}
	changed := make(chan struct{}, 1)
	defer r.sup.NotifyStatus(changed)()
	r.advanceTo(2 * time.Second)
	// The probe's result comes from its worker's goroutine: wait for the
	// status it brings, not for time.
	deadline := time.After(10 * time.Second)
	for ps := r.status("app"); ps.RestartCount != 1 || !ps.Ready; ps = r.status("app") {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the restarted instance is not ready at 2s, before its probe's next period: %+v", ps)
		}
	}
	r.stop()
}

func TestReloadGivesAChangedProcessItsNewProbes(t *testing.T) {
	// A process-level reload that adds a readiness probe restarts the
	// process with it, and a probe worker for the new spec takes over (P1
	// per process and kind, whatever the reload did).
	cfg := configOf(oneProcess(spec.RestartAlways))
	handler := func(string, spec.ProbeKind) probes.Handler {
		return detailHandler(func() probes.Detail { return probes.Detail{Result: probes.Failure, Message: "not ready"} })
	}
	r := startLifecycleWith(t, cfg, constant(simRun{RunFor: -1}), nil, handler)
	r.advanceTo(time.Second)
	if ps := r.status("app"); !ps.Ready {
		t.Fatalf("without a readiness probe the process is ready: %+v", ps)
	}
	next := configOf(oneProcess(spec.RestartAlways))
	next.Groups[0].Processes[0].ReadinessProbe = &spec.Probe{Handler: spec.Handler{TCPSocket: &spec.TCPSocketAction{Port: 1}}, Period: time.Second}
	if err := r.sup.Apply(next); err != nil {
		t.Fatal(err)
	}
	r.probes = 1
	r.advanceTo(5 * time.Second)
	ps := r.status("app")
	if ps.RestartCount != 1 || ps.Ready || ps.State != lifecycle.StateRunning {
		t.Errorf("after the reload: %+v, want the restarted instance running and unready", ps)
	}
	if u := withReason(r.events(), lifecycle.EventUnhealthy); len(u) == 0 || !strings.HasPrefix(u[0].Message, "Readiness probe failed") {
		t.Errorf("the new readiness probe did not run: %+v", u)
	}
	r.stop()
}

// A reload that changes only the group's supplemental_groups changes what
// an exec probe runs as: its probe worker is rebuilt with the new groups,
// not kept with the old ones.
func TestReloadOfGroupSecurityRebuildsProbes(t *testing.T) {
	withProbe := func(groups ...string) spec.Config {
		cfg := configOf(oneProcess(spec.RestartAlways))
		cfg.Groups[0].Security.SupplementalGroups = groups
		cfg.Groups[0].Processes[0].ReadinessProbe = &spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"true"}}}, Period: time.Second}
		return cfg
	}
	handler := func(string, spec.ProbeKind) probes.Handler {
		return detailHandler(func() probes.Detail { return probes.Detail{Result: probes.Success} })
	}
	r := startLifecycleWith(t, withProbe("4242"), constant(simRun{RunFor: -1}), nil, handler)
	r.probes = 1
	r.advanceTo(time.Second)
	if err := r.sup.Apply(withProbe("4343")); err != nil {
		t.Fatal(err)
	}
	r.advanceTo(5 * time.Second)
	r.sup.mu.Lock()
	w := r.sup.workers["g"]
	r.sup.mu.Unlock()
	w.barrier()
	var got [][]string
	for _, pw := range w.lc.probes {
		got = append(got, pw.spec.Security.SupplementalGroups)
	}
	if len(got) != 1 || len(got[0]) != 1 || got[0][0] != "4343" {
		t.Errorf("the probe workers after the reload run with supplemental groups %v, want [[4343]]", got)
	}
	r.stop()
}

package supervisor_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Probes and hooks with real processes, real commands and real time.
// Bounds are generous (two noisy cores); lower bounds are exact, because
// nothing may happen early.

func init() {
	// slow-term: on SIGTERM, takes 0.2 s to shut down, then exits 0 (the
	// application of the five-restarts-then-CrashLoopBackOff case, scaled).
	helpers["slow-term"] = func([]string) int {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		<-c
		time.Sleep(200 * time.Millisecond)
		return 0
	}
	// note-term DIR: writes its pid to DIR/pid; on SIGTERM writes DIR/term
	// and carries on, until SIGKILL.
	helpers["note-term"] = func(args []string) int {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		writePid(filepath.Join(args[0], "pid"), os.Getpid())
		<-c
		writePid(filepath.Join(args[0], "term"), os.Getpid())
		time.Sleep(time.Hour)
		return 0
	}
}

// fastHelper is helperProcess without the race detector's one-second
// pause at exit (atexit_sleep_ms), so exits under -race are as quick as
// without it.
func fastHelper(t testing.TB, name, helper string, args ...string) spec.Process {
	p := helperProcess(t, name, helper, args...)
	p.Env["GORACE"] = "atexit_sleep_ms=0"
	return p
}

func shell(script string) []string { return []string{"/bin/sh", "-c", script} }

func execHook(script string) *spec.Hook {
	return &spec.Hook{Handler: spec.Handler{Exec: &spec.ExecAction{Command: shell(script)}}}
}

func TestRealSeed002LivenessInMiniature(t *testing.T) {
	t.Parallel()
	// The wiring only real processes show (R4, K7, E1, E2): an
	// always-failing exec liveness probe's output reaches the Unhealthy
	// events, its third failure kills the process with SIGTERM, the
	// process's own handler ends it, and the restart follows the exit. The
	// whole seed (five restarts, then CrashLoopBackOff, T3, T6, B8, X4) is
	// timed exactly on the fake clock:
	// TestWorkerTimelineT6ScaledLivenessWithProbeWorkers. The initial delay
	// leaves the helper (a -race test binary, slow to start on a loaded
	// machine) time to install its SIGTERM handler: with 0.1 s it was now
	// and then killed by the SIGTERM itself.
	p := fastHelper(t, "app", "slow-term")
	p.LivenessProbe = &spec.Probe{
		Handler:      spec.Handler{Exec: &spec.ExecAction{Command: shell("echo db unreachable; exit 1")}},
		InitialDelay: time.Second, Period: 100 * time.Millisecond, FailureThreshold: 3,
	}
	r := startReal(t, spec.Config{Backoff: scaled, Groups: []spec.Group{realGroup("live", spec.RestartAlways, p)}})

	// One instance, as kubectl describe shows it: Created, Started,
	// Unhealthy ×3 with the probe's output, Killing; the exit is no event
	// (E2), and the next Created and Started follow it.
	var evs []lifecycle.Event
	for len(evs) < 8 {
		evs = append(evs, r.next(lifecycle.EventCreated, lifecycle.EventStarted, lifecycle.EventUnhealthy,
			lifecycle.EventKilling, lifecycle.EventBackOff))
	}
	var reasons []string
	for _, e := range evs {
		reasons = append(reasons, e.Reason)
		switch e.Reason {
		case lifecycle.EventUnhealthy:
			if !strings.Contains(e.Message, "Liveness probe failed") || !strings.Contains(e.Message, "db unreachable") {
				t.Errorf("Unhealthy message %q lacks the probe's output", e.Message)
			}
		case lifecycle.EventKilling:
			if !strings.Contains(e.Message, "failed liveness probe, will be restarted") {
				t.Errorf("K7: Killing message %q", e.Message)
			}
		}
	}
	want := []string{lifecycle.EventCreated, lifecycle.EventStarted, lifecycle.EventUnhealthy, lifecycle.EventUnhealthy,
		lifecycle.EventUnhealthy, lifecycle.EventKilling, lifecycle.EventCreated, lifecycle.EventStarted}
	if strings.Join(reasons, " ") != strings.Join(want, " ") {
		t.Errorf("events %v, want %v", reasons, want)
	}
	if st, _ := r.sup.Status().Group("live"); st.Processes[0].RestartCount < 1 {
		t.Errorf("R5: restart count %d after the restart", st.Processes[0].RestartCount)
	}
}

func TestRealReadinessFlipsWithHTTPAndTCPServers(t *testing.T) {
	t.Parallel()
	// P12, S3: an HTTP and a TCP readiness probe against servers on
	// 127.0.0.1 flip each process's ready and the group's, both ways, and
	// never restart anything.
	var healthy atomic.Bool
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !healthy.Load() {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
		}
	})}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(hl) }()
	t.Cleanup(func() { _ = srv.Close() })
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()

	web := fastHelper(t, "web", "sleep")
	web.ReadinessProbe = &spec.Probe{
		Handler: spec.Handler{HTTPGet: &spec.HTTPGetAction{Port: hl.Addr().(*net.TCPAddr).Port, Path: "/ready"}},
		Period:  100 * time.Millisecond,
	}
	db := fastHelper(t, "db", "sleep")
	db.ReadinessProbe = &spec.Probe{
		Handler: spec.Handler{TCPSocket: &spec.TCPSocketAction{Port: tl.Addr().(*net.TCPAddr).Port}},
		Period:  100 * time.Millisecond,
	}
	r := startReal(t, spec.Config{Groups: []spec.Group{realGroup("pod", spec.RestartAlways, web, db)}})

	ready := func(want map[string]bool, group bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			g, _ := r.sup.Status().Group("pod")
			ok := g.Ready == group
			for name, w := range want {
				p, _ := g.Process(name)
				ok = ok && p.State == lifecycle.StateRunning && p.Ready == w
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("want ready %v (group %v), have %+v", want, group, g)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	ready(map[string]bool{"web": false, "db": true}, false)
	healthy.Store(true)
	ready(map[string]bool{"web": true, "db": true}, true)
	_ = tl.Close() // connection refused from now on
	ready(map[string]bool{"web": true, "db": false}, false)
	healthy.Store(false)
	ready(map[string]bool{"web": false, "db": false}, false)
	g, _ := r.sup.Status().Group("pod")
	for _, p := range g.Processes {
		if p.RestartCount != 0 {
			t.Errorf("P12: readiness restarted %s", p.Name)
		}
	}
	u := r.next(lifecycle.EventUnhealthy)
	if !strings.HasPrefix(u.Message, "Readiness probe failed:") {
		t.Errorf("Unhealthy message %q", u.Message)
	}
}

func TestRealHooksSucceedInOrder(t *testing.T) {
	t.Parallel()
	// X5, H1, H4: pre_start before the process, post_start beside it
	// (running only once it returned), pre_stop on the kill, post_stop
	// after the exit; each exec hook sees the process's environment.
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	p := spec.Process{
		Name:    "app",
		Command: shell(`echo main >> "$LOG"; exec sleep 60`),
		Env:     map[string]string{"LOG": log},
	}
	p.PreStart = execHook(`echo pre_start >> "$LOG"`)
	p.PostStart = execHook(`sleep 0.5; echo post_start >> "$LOG"`)
	p.PreStop = execHook(`echo pre_stop >> "$LOG"`)
	p.PostStop = execHook(`echo post_stop >> "$LOG"`)
	r := startReal(t, spec.Config{Groups: []spec.Group{realGroup("hooks", spec.RestartAlways, p)}})
	r.next(lifecycle.EventStarted)
	if ps, _ := r.sup.Status().Groups[0].Process("app"); ps.State != lifecycle.StateWaiting || ps.Reason != lifecycle.ReasonContainerCreating {
		t.Errorf("H1: right after the start, during post_start: %s/%s", ps.State, ps.Reason)
	}
	waitStatus(t, r, "app", func(ps lifecycle.ProcessStatus) bool { return ps.State == lifecycle.StateRunning })
	if err := r.sup.Stop("hooks", "app", supervisor.RequestOptions{Requester: "test"}); err != nil {
		t.Fatal(err)
	}
	r.terminated("hooks", "app")
	deadline := time.Now().Add(10 * time.Second)
	want := "pre_start main post_start pre_stop post_stop"
	for {
		b, _ := os.ReadFile(log)
		got := strings.Join(strings.Fields(string(b)), " ")
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hook order %q, want %q", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRealHookFailures(t *testing.T) {
	t.Parallel()
	fail := execHook("echo broken >&2; exit 3")
	t.Run("pre_start fails the start", func(t *testing.T) {
		// X5: PreStartHookError, and the program never runs.
		marker := filepath.Join(t.TempDir(), "ran")
		p := spec.Process{Name: "app", Command: shell("touch " + marker)}
		p.PreStart = fail
		r := startReal(t, spec.Config{Groups: []spec.Group{realGroup("g", spec.RestartNever, p)}})
		e := r.next(lifecycle.EventFailedPreStartHook)
		if !strings.Contains(e.Message, "code 3") {
			t.Errorf("FailedPreStartHook message %q", e.Message)
		}
		ps := waitStatus(t, r, "app", func(ps lifecycle.ProcessStatus) bool { return ps.State == lifecycle.StateTerminated })
		if ps.Reason != lifecycle.ReasonPreStartHookError {
			t.Errorf("X5: reason %q, want PreStartHookError", ps.Reason)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("X5: the process ran although pre_start failed")
		}
	})
	t.Run("post_start failure kills the process", func(t *testing.T) {
		// H2: FailedPostStartHook, Killing through the stop path, exit by
		// SIGTERM; under never it stays terminated.
		p := fastHelper(t, "app", "sleep")
		p.PostStart = fail
		r := startReal(t, spec.Config{Groups: []spec.Group{realGroup("g", spec.RestartNever, p)}})
		r.next(lifecycle.EventFailedPostStartHook)
		if k := r.next(lifecycle.EventKilling); !strings.Contains(k.Message, "post_start") {
			t.Errorf("H2: Killing message %q", k.Message)
		}
		ps := waitStatus(t, r, "app", func(ps lifecycle.ProcessStatus) bool { return ps.State == lifecycle.StateTerminated })
		if ps.Terminated.Signal != syscall.SIGTERM {
			t.Errorf("H2: %+v, want killed by SIGTERM", ps.Terminated)
		}
	})
	t.Run("pre_stop failure is a warning", func(t *testing.T) {
		// H4: FailedPreStopHook, and termination goes on at once.
		p := fastHelper(t, "app", "sleep")
		p.PreStop = fail
		r := startReal(t, spec.Config{Groups: []spec.Group{realGroup("g", spec.RestartAlways, p)}})
		r.next(lifecycle.EventStarted)
		if err := r.sup.Stop("g", "app", supervisor.RequestOptions{}); err != nil {
			t.Fatal(err)
		}
		w := r.next(lifecycle.EventFailedPreStopHook)
		if w.Type != lifecycle.EventWarning || !strings.Contains(w.Message, "code 3") {
			t.Errorf("H4: %+v", w)
		}
		r.terminated("g", "app")
	})
	t.Run("post_stop failure is a warning only", func(t *testing.T) {
		// X5: FailedPostStopHook after each exit; the restart does not wait
		// for it (3 s): the second instance starts well before.
		p := fastHelper(t, "app", "exit", "1")
		p.PostStop = execHook("sleep 3; exit 3")
		r := startReal(t, spec.Config{Backoff: scaled, Groups: []spec.Group{realGroup("g", spec.RestartAlways, p)}})
		first := r.next(lifecycle.EventStarted)
		second := r.next(lifecycle.EventStarted)
		if d := second.Time.Sub(first.Time); d > 2*time.Second {
			t.Errorf("X5: the restart came %s after the first start: it waited for post_stop", d)
		}
		// Each instance's hook sleeps 3 s, and the second starts a few
		// milliseconds after the first: their warnings may come in either
		// order on a loaded machine. One of the first two names the first
		// instance.
		var names []string
		for range 2 {
			w := r.next(lifecycle.EventFailedPostStopHook)
			if w.Type != lifecycle.EventWarning {
				t.Errorf("X5: %+v is not a warning", w)
			}
			if w.InstanceID == first.InstanceID {
				return
			}
			names = append(names, w.InstanceID)
		}
		t.Errorf("X5: the first FailedPostStopHook warnings name %v, none the instance %s", names, first.InstanceID)
	})
}

func TestRealPreStopChargedAgainstGrace(t *testing.T) {
	t.Parallel()
	// K3, K8 with real time: grace 2 s, pre_stop takes 1.5 s (charged as
	// 1 s), the process ignores SIGTERM: SIGKILL 1.5 + 1 = 2.5 s after the
	// stop began. Uncharged it would be 3.5 s; charged untruncated, 2 s.
	dir := t.TempDir()
	p := fastHelper(t, "app", "ignore-term", filepath.Join(dir, "pid"))
	p.PreStop = execHook("sleep 1.5")
	g := realGroup("g", spec.RestartAlways, p)
	g.TerminationGracePeriod = spec.Durp(2 * time.Second)
	r := startReal(t, spec.Config{Supervisor: spec.Supervisor{MinimumGrace: spec.Durp(0)}, Groups: []spec.Group{g}})
	r.next(lifecycle.EventStarted)
	waitPidFile(t, filepath.Join(dir, "pid"))
	if err := r.sup.Stop("g", "app", supervisor.RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	killing := r.next(lifecycle.EventKilling)
	exited := r.terminated("g", "app")
	if d := exited.FinishedAt.Sub(killing.Time); d < 2500*time.Millisecond || d > 3400*time.Millisecond {
		t.Errorf("K3: SIGKILL %s after the stop began, want 2.5 s (pre_stop's 1.5 s charged as 1 s)", d)
	}
}

func TestRealHangingPreStopOutlivesTheGraceUntilSIGKILL(t *testing.T) {
	// K3, K8, K9, X12 with real processes on the host: the hook has a
	// process group of its own, outside the instance's.
	preStopOutlivesTheGrace(t, func(cfg spec.Config) *realRun { return startReal(t, cfg) }, nil)
}

func TestLocalSandboxHangingPreStopOutlivesTheGraceUntilSIGKILL(t *testing.T) {
	// K9 in a sandbox: the hook runs in a cgroup of its own there, which
	// the instance's cgroup kill does not reach; it still ends with the
	// instance's SIGKILL, and its cgroup with it.
	preStopOutlivesTheGrace(t, func(cfg spec.Config) *realRun {
		return startLocal(t, cfg, supervisor.Options{}, nil).realRun
	}, &spec.Sandbox{})
}

// preStopOutlivesTheGrace: a pre_stop that hangs (a shell and its child
// sleep). The supervisor stops waiting for it at the grace (1 s) and sends
// SIGTERM; the hook keeps running after that, and ends with the instance's
// SIGKILL the minimum grace (2 s) later, its child too: nothing is left
// behind.
func preStopOutlivesTheGrace(t *testing.T, start func(spec.Config) *realRun, sb *spec.Sandbox) {
	dir := t.TempDir()
	hookPid, childPid := filepath.Join(dir, "hook.pid"), filepath.Join(dir, "child.pid")
	p := fastHelper(t, "app", "note-term", dir)
	p.PreStop = execHook(`sleep 30 & printf %s $! > ` + childPid + `.tmp; mv ` + childPid + `.tmp ` + childPid +
		`; printf %s $$ > ` + hookPid + `.tmp; mv ` + hookPid + `.tmp ` + hookPid + `; wait`)
	g := realGroup("g", spec.RestartNever, p)
	g.TerminationGracePeriod = spec.Durp(time.Second)
	g.Sandbox = sb
	r := start(spec.Config{Supervisor: spec.Supervisor{MinimumGrace: spec.Durp(2 * time.Second)}, Groups: []spec.Group{g}})
	r.next(lifecycle.EventStarted)
	waitPidFile(t, filepath.Join(dir, "pid"))
	if err := r.sup.Stop("g", "app", supervisor.RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	killing := r.next(lifecycle.EventKilling)
	hook, child := waitPidFile(t, hookPid), waitPidFile(t, childPid)
	t.Cleanup(func() { // leave nothing behind, whatever failed
		for _, pid := range []int{hook, child} {
			if !processGone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	waitPidFile(t, filepath.Join(dir, "term")) // the stop signal went out
	time.Sleep(300 * time.Millisecond)
	if processGone(hook) || processGone(child) {
		t.Fatalf("K9: the pre_stop (%d, child %d) was killed by the time the stop signal was sent, %s after the stop began",
			hook, child, time.Since(killing.Time).Round(time.Millisecond))
	}
	exited := r.terminated("g", "app")
	if d := exited.FinishedAt.Sub(killing.Time); d < 3*time.Second || d > 5*time.Second {
		t.Errorf("K8: SIGKILL %s after the stop began, want grace 1 s + minimum 2 s", d)
	}
	if f := r.next(lifecycle.EventFailedPreStopHook); !strings.Contains(f.Message, "did not complete") || f.InstanceID != exited.InstanceID {
		t.Errorf("K9: %+v, want the hook reported as not completed for instance %s", f, exited.InstanceID)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !processGone(hook) || !processGone(child) {
		if time.Now().After(deadline) {
			t.Fatalf("K9: the pre_stop's processes (%d, child %d) outlived the instance's SIGKILL", hook, child)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitStatus polls until cond holds for process name of the first group.
func waitStatus(t *testing.T, r *realRun, name string, cond func(lifecycle.ProcessStatus) bool) lifecycle.ProcessStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps, _ := r.sup.Status().Groups[0].Process(name)
		if cond(ps) {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("status of %s: %+v", name, ps)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// spawnerRuntime is hostrt.Runtime that also spawns exec probes and hooks,
// counting them per group: the seam a sandboxed runtime plugs into (X6).
type spawnerRuntime struct {
	hostrt.Runtime
	spawned sync.Map // group → *atomic.Int64
}

func (r *spawnerRuntime) Spawner(group string) func(*proc.Cmd) (*proc.Process, error) {
	n, _ := r.spawned.LoadOrStore(group, new(atomic.Int64))
	return func(c *proc.Cmd) (*proc.Process, error) {
		n.(*atomic.Int64).Add(1)
		return proc.Start(c)
	}
}

func TestRealExecProbesAndHooksGoThroughTheGroupsSpawner(t *testing.T) {
	t.Parallel()
	// X6: exec probes and exec hooks are spawned through the Runtime's
	// Spawner for their group (inside its sandbox, once sandboxes exist);
	// http/tcp probes and the processes themselves are not.
	rt := &spawnerRuntime{}
	p := fastHelper(t, "app", "sleep")
	p.PreStart = execHook("true")
	p.LivenessProbe = &spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: trueCommand(t)}}, Period: spec.MinProbePeriod}
	sup, err := supervisor.New(spec.Config{Groups: []spec.Group{realGroup("g", spec.RestartAlways, p)}}, supervisor.Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_, _ = sup.Run(context.Background())
		close(done)
	}()
	defer func() {
		sup.RequestShutdown(nil)
		sup.RequestShutdown(nil)
		<-done
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n, ok := rt.spawned.Load("g"); ok && n.(*atomic.Int64).Load() >= 4 { // pre_start + 3 probes
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("X6: exec hooks and probes did not go through the group's spawner")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRealEventsFollowKubelet(t *testing.T) {
	// E1, E2 with real processes: an instance that ignores SIGTERM and is
	// stopped has Created, Started and one Killing, none more when the
	// grace runs out and SIGKILL ends it, and no event for its exit; one
	// that exits 1 on its own has Created and Started only. The exits are
	// in the status.
	dir := t.TempDir()
	stubborn := fastHelper(t, "stubborn", "ignore-term", filepath.Join(dir, "pid"))
	crash := fastHelper(t, "crash", "exit", "1")
	g := realGroup("g", spec.RestartNever, stubborn, crash)
	g.TerminationGracePeriod = spec.Durp(300 * time.Millisecond)
	r := startReal(t, spec.Config{Supervisor: spec.Supervisor{MinimumGrace: spec.Durp(0)}, Groups: []spec.Group{g}})
	waitPidFile(t, filepath.Join(dir, "pid"))
	if term := r.terminated("g", "crash"); term.ExitCode != 1 || term.Reason != "Error" {
		t.Errorf("E2: crash ended %+v, want exit code 1, Error", term)
	}
	if err := r.sup.Stop("g", "stubborn", supervisor.RequestOptions{Requester: "test"}); err != nil {
		t.Fatal(err)
	}
	if term := r.terminated("g", "stubborn"); term.Signal != syscall.SIGKILL || term.ExitCode != 137 {
		t.Errorf("E2: stubborn ended %+v, want SIGKILL (137)", term)
	}
	time.Sleep(200 * time.Millisecond) // any late event would be published by now
	got := map[string][]string{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		e, err := r.sub.Next(ctx)
		cancel()
		if err != nil {
			break
		}
		got[e.Process] = append(got[e.Process], e.Reason)
	}
	for process, want := range map[string]string{"stubborn": "Created Started Killing", "crash": "Created Started"} {
		if s := strings.Join(got[process], " "); s != want {
			t.Errorf("E1, E2: events of %s %q, want %q", process, s, want)
		}
	}
}

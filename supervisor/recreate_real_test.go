package supervisor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/hooks"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Recreate requests with real processes through hostrt.Runtime and the
// real clock. Bounds are generous (two noisy cores).

// packageHooks runs hooks with package hooks (real commands through
// package sandbox). The supervisor's own wiring of hooks is another
// branch's work; this is enough to see C4's pre_stop run.
type packageHooks struct{}

func (packageHooks) Run(ctx context.Context, req supervisor.HookRequest) error {
	return hooks.Run(ctx, req.Hook, req.Point, req.Budget).Err
}

// startRealWith is startReal with opts (over host processes when
// opts.Runtime is nil).
func startRealWith(t *testing.T, cfg spec.Config, opts supervisor.Options) *realRun {
	t.Helper()
	if opts.Runtime == nil {
		opts.Runtime = hostrt.Runtime{}
	}
	return runSupervisor(t, cfg, opts, 10*time.Second)
}

func TestRealRecreateLeavesTheSidecarAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "pre_stop")
	app := helperProcess(t, "app", "sleep")
	app.PreStop = &spec.Hook{Handler: spec.Handler{Exec: &spec.ExecAction{
		Command: []string{"/bin/sh", "-c", "echo ran > " + marker},
	}}}
	side := helperProcess(t, "side", "sleep")
	cfg := spec.Config{
		Supervisor: spec.Supervisor{MinimumGrace: spec.Durp(100 * time.Millisecond)},
		Groups:     []spec.Group{realGroup("web", spec.RestartAlways, app, side)},
	}
	r := startRealWith(t, cfg, supervisor.Options{Hooks: packageHooks{}})
	r.next(lifecycle.EventStarted)
	r.next(lifecycle.EventStarted)
	gs, _ := r.sup.Status().Group("web")
	app0, _ := gs.Process("app")
	side0, _ := gs.Process("side")
	if app0.Pid <= 0 || side0.Pid <= 0 {
		t.Fatalf("not running: %+v %+v", app0, side0)
	}

	id, err := r.sup.Recreate(lifecycle.RecreateSpec{Group: "web", Processes: []string{"app"}, TerminationGracePeriod: spec.Durp(5 * time.Second), MinStarted: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	st, err := r.sup.WaitRecreate(ctx, id)
	if err != nil || st.Phase != lifecycle.RecreateCompleted || st.Failed() {
		t.Fatalf("recreate: %+v %v", st, err)
	}
	if b, err := os.ReadFile(marker); err != nil || strings.TrimSpace(string(b)) != "ran" {
		t.Errorf("C4: app's pre_stop did not run: %q %v", b, err)
	}
	gs, _ = r.sup.Status().Group("web")
	app1, _ := gs.Process("app")
	side1, _ := gs.Process("side")
	if app1.State != lifecycle.StateRunning || !app1.Ready || app1.Pid == app0.Pid || app1.RestartCount != 1 || app1.InstanceID != st.Processes[0].InstanceID {
		t.Errorf("new app instance: %+v", app1)
	}
	if side1.Pid != side0.Pid || side1.InstanceID != side0.InstanceID || side1.RestartCount != 0 || processGone(side0.Pid) {
		t.Errorf("the sidecar was touched: %+v → %+v", side0, side1)
	}
	if !processGone(app0.Pid) {
		t.Errorf("old app pid %d still alive", app0.Pid)
	}
	if !gs.Ready {
		t.Errorf("group not ready after the recreate: %+v", gs)
	}
}

func TestRealRecreateNeverReadyFailsByTheDeadline(t *testing.T) {
	t.Parallel()
	// C8: an instance that never becomes ready fails its recreate when the
	// deadline passes. Its readiness probe always fails (whether or not a
	// prober is wired on this branch, nothing makes it ready).
	app := helperProcess(t, "app", "sleep")
	app.ReadinessProbe = &spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"/bin/false"}}}, Period: 100 * time.Millisecond}
	cfg := spec.Config{
		Supervisor: spec.Supervisor{MinimumGrace: spec.Durp(100 * time.Millisecond)},
		Groups:     []spec.Group{realGroup("web", spec.RestartAlways, app)},
	}
	r := startRealWith(t, cfg, supervisor.Options{})
	r.next(lifecycle.EventStarted)
	begin := time.Now()
	id, err := r.sup.Recreate(lifecycle.RecreateSpec{Group: "web", Processes: []string{"app"}, ActiveDeadline: lifecycle.MinimumRecreateDeadline})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	st, err := r.sup.WaitRecreate(ctx, id)
	took := time.Since(begin)
	if err != nil || st.Phase != lifecycle.RecreateCompleted || !st.Failed() || !strings.Contains(st.Message, "active deadline") {
		t.Fatalf("C8: %+v %v", st, err)
	}
	if took < lifecycle.MinimumRecreateDeadline {
		t.Errorf("completed %s after the request, before the deadline", took)
	}
	gs, _ := r.sup.Status().Group("web")
	if p, _ := gs.Process("app"); p.State != lifecycle.StateRunning || p.RestartCount != 1 {
		t.Errorf("the new instance should still run (not ready): %+v", p)
	}
}

package supervisor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// The Go API of recreate requests, on the fake runtime and a fake clock.

func TestRecreateAPIErrors(t *testing.T) {
	cfg := configOf(appAndSidecar())
	sup, err := New(cfg, Options{Runtime: newFakeRuntime(clock.NewFake(clock.Epoch), constant(simRun{}))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sup.Recreate(lifecycle.RecreateSpec{Group: "g", Processes: []string{"app"}}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("before Run: %v", err)
	}
	f := startFake(t, cfg, constant(simRun{RunFor: -1}))
	f.advanceTo(time.Second)
	cases := []struct {
		spec lifecycle.RecreateSpec
		want error
	}{
		{lifecycle.RecreateSpec{Group: "nope", Processes: []string{"app"}}, ErrNotFound},
		{lifecycle.RecreateSpec{Group: "g", Processes: []string{"app", "nope"}}, lifecycle.ErrInvalidRecreate},
		{lifecycle.RecreateSpec{Group: "g", Processes: []string{"app"}, ActiveDeadline: time.Second}, lifecycle.ErrInvalidRecreate},
	}
	for _, c := range cases {
		if _, err := f.sup.Recreate(c.spec); !errors.Is(err, c.want) {
			t.Errorf("%+v: %v, want %v", c.spec, err, c.want)
		}
	}
	var se *lifecycle.RecreateSpecError
	if _, err := f.sup.Recreate(lifecycle.RecreateSpec{Group: "g", Processes: []string{"app", "app"}, ActiveDeadline: -1}); !errors.As(err, &se) || len(se.Problems) != 2 {
		t.Errorf("C1: every problem is listed: %v", err)
	}
	if _, err := f.sup.RecreateStatus("rc-404"); !errors.Is(err, ErrNotFound) {
		t.Errorf("RecreateStatus of nothing: %v", err)
	}
	if len(f.sup.Recreates()) != 0 {
		t.Errorf("rejected requests are listed: %+v", f.sup.Recreates())
	}
	f.shutdown()
}

func TestRecreateAPIFollowsARequest(t *testing.T) {
	g := appAndSidecar()
	g.Processes[0].ReadinessProbe = &spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"x"}}}}
	f := startFake(t, configOf(g), constant(simRun{RunFor: -1, TermExit: time.Second}))
	f.advanceTo(time.Second)
	before, _ := f.sup.Status().Group("g")
	app0, _ := before.Process("app")
	side0, _ := before.Process("side")

	id, err := f.sup.Recreate(lifecycle.RecreateSpec{Group: "g", Processes: []string{"app"}, MinStarted: time.Second, TTLAfterFinished: spec.Durp(0), Requester: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := f.sup.RecreateStatus(id); err != nil || st.Phase != lifecycle.RecreateRecreating || st.Spec.Requester != "alice" {
		t.Fatalf("status right after Recreate: %+v %v", st, err)
	}
	if list := f.sup.Recreates(); len(list) != 1 || list[0].ID != id {
		t.Fatalf("Recreates: %+v", list)
	}
	waited := make(chan lifecycle.RecreateStatus, 1)
	go func() {
		st, err := f.sup.WaitRecreate(context.Background(), id)
		if err != nil {
			t.Error(err)
		}
		waited <- st
	}()
	f.advanceTo(10 * time.Second)
	gs, _ := f.sup.Status().Group("g")
	app1, _ := gs.Process("app")
	if app1.InstanceID == app0.InstanceID || app1.State != lifecycle.StateRunning || app1.Ready || app1.RestartCount != 1 {
		t.Fatalf("new app instance: %+v", app1)
	}
	select {
	case st := <-waited:
		t.Fatalf("C7: completed before the new instance was ready: %+v", st)
	default:
	}
	// P12 through the supervisor's probe seam: ready now, running 8 s > 1 s.
	if err := f.sup.ProbeResult("g", app1.InstanceID, spec.Readiness, true, ""); err != nil {
		t.Fatal(err)
	}
	f.settle()
	var st lifecycle.RecreateStatus
	select {
	case st = <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("WaitRecreate did not return")
	}
	if st.Phase != lifecycle.RecreateCompleted || st.Failed() || st.Processes[0].InstanceID != app1.InstanceID || st.Processes[0].PreviousInstanceID != app0.InstanceID {
		t.Fatalf("final status %+v", st)
	}
	if st.CreationTime.IsZero() || st.StartTime.IsZero() || st.CompletionTime.Before(st.StartTime) {
		t.Errorf("times %+v", st)
	}
	gs, _ = f.sup.Status().Group("g")
	if side1, _ := gs.Process("side"); side1.Pid != side0.Pid || side1.InstanceID != side0.InstanceID {
		t.Errorf("sidecar touched: %+v → %+v", side0, side1)
	}
	// TTL 0: gone from the listing at once, but a late WaitRecreate still
	// gets the end.
	if _, err := f.sup.RecreateStatus(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("ttl 0: still visible: %v", err)
	}
	if late, err := f.sup.WaitRecreate(context.Background(), id); err != nil || late.Phase != lifecycle.RecreateCompleted {
		t.Errorf("late WaitRecreate: %+v %v", late, err)
	}
	// Every step was an event tagged with the request.
	var reasons []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		e, err := f.sub.Next(ctx)
		cancel()
		if err != nil {
			break
		}
		if e.Request == id {
			reasons = append(reasons, e.Reason)
		}
	}
	if got := strings.Join(reasons, " "); got != "Recreating Recreating Killing Created Started Ready RecreateSucceeded RecreateCompleted RecreateRemoved" { // E1, E2, W3
		t.Errorf("events of %s: %s", id, got)
	}
	f.shutdown()
}

func TestRecreateAPIWaitEndsWithContext(t *testing.T) {
	f := startFake(t, configOf(appAndSidecar()), constant(simRun{RunFor: -1, IgnoreTerm: true}))
	f.advanceTo(time.Second)
	id, err := f.sup.Recreate(lifecycle.RecreateSpec{Group: "g", Processes: []string{"app"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st, err := f.sup.WaitRecreate(ctx, id)
	if !errors.Is(err, context.Canceled) || st.Phase != lifecycle.RecreateRecreating {
		t.Errorf("%+v %v", st, err)
	}
	// The group's shutdown completes the request as failed (no new
	// instance will come), and waiters learn it.
	f.shutdown()
	st, err = f.sup.WaitRecreate(context.Background(), id)
	if err != nil || st.Phase != lifecycle.RecreateCompleted || !st.Failed() || !strings.Contains(st.Message, "shutting down") {
		t.Errorf("after shutdown: %+v %v", st, err)
	}
}

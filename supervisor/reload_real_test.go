package supervisor_test

import (
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

func TestRealReloadProcessLevel(t *testing.T) {
	t.Parallel()
	a := helperProcess(t, "a", "sleep")
	b := helperProcess(t, "b", "sleep")
	c := helperProcess(t, "c", "sleep")
	cfg := spec.Config{
		Supervisor: spec.Supervisor{MinimumGrace: spec.Durp(100 * time.Millisecond)},
		Groups:     []spec.Group{realGroup("web", spec.RestartAlways, a, b, c)},
	}
	r := startReal(t, cfg)
	for i := 0; i < 3; i++ {
		r.next(lifecycle.EventStarted)
	}
	a0 := processStatus(t, r.sup, "web", "a")
	b0 := processStatus(t, r.sup, "web", "b")
	c0 := processStatus(t, r.sup, "web", "c")

	b1spec := helperProcess(t, "b", "sleep")
	b1spec.Env["CHANGED"] = "1"
	d := helperProcess(t, "d", "sleep")
	next := spec.Config{Supervisor: cfg.Supervisor, Groups: []spec.Group{realGroup("web", spec.RestartAlways, a, b1spec, d)}}
	if err := r.sup.Apply(next); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		gs, _ := r.sup.Status().Group("web")
		bp, _ := gs.Process("b")
		dp, _ := gs.Process("d")
		_, cStill := gs.Process("c")
		if bp.State == lifecycle.StateRunning && bp.Pid != b0.Pid && dp.State == lifecycle.StateRunning && !cStill && processGone(c0.Pid) && processGone(b0.Pid) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reload did not settle: %+v", gs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if a1 := processStatus(t, r.sup, "web", "a"); a1.Pid != a0.Pid || a1.RestartCount != 0 || processGone(a0.Pid) {
		t.Errorf("unchanged process touched: %+v → %+v", a0, a1)
	}
	if b1 := processStatus(t, r.sup, "web", "b"); b1.RestartCount != 1 {
		t.Errorf("R5: changed process %+v", b1)
	}
}

package supervisor

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

func TestApplyReplacesOnlyChangedGroups(t *testing.T) {
	named := func(name string, cmd ...string) spec.Group {
		g := oneProcess(spec.RestartAlways)
		g.Name = name
		g.Processes[0].Command = cmd
		return g
	}
	keep, change, drop := named("keep", "a"), named("change", "a"), named("drop", "a")
	f := startFake(t, configOf(keep, change, drop), constant(simRun{RunFor: -1, TermExit: time.Second}))
	f.advanceTo(time.Second)
	before := f.sup.Status()

	if err := f.sup.Apply(configOf(keep, named("change", "b"), named("add", "a"))); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(5 * time.Second)
	after := f.sup.Status()

	var names []string
	for _, g := range after.Groups {
		names = append(names, g.Name)
	}
	if len(names) != 3 || names[0] != "keep" || names[1] != "change" || names[2] != "add" {
		t.Fatalf("groups after Apply: %v", names)
	}
	k0, _ := before.Groups[0].Process("app")
	k1, _ := after.Groups[0].Process("app")
	if k0.InstanceID != k1.InstanceID || k1.State != lifecycle.StateRunning {
		t.Errorf("unchanged group was touched: %s → %s (%s)", k0.InstanceID, k1.InstanceID, k1.State)
	}
	c0, _ := before.Groups[1].Process("app")
	c1, _ := after.Groups[1].Process("app")
	if c0.InstanceID == c1.InstanceID || c1.State != lifecycle.StateRunning {
		t.Errorf("changed group not replaced: %s → %s (%s)", c0.InstanceID, c1.InstanceID, c1.State)
	}
	if a, _ := after.Groups[2].Process("app"); a.State != lifecycle.StateRunning {
		t.Errorf("added group not running: %+v", a)
	}
	// 3 starts at 0 (keep, change, drop), the replacement after the old
	// "change" exited (1 s after SIGTERM), and "add" at once.
	assertTimes(t, "starts", f.rt.startsOf("app"), secs(0, 0, 0, 1, 2))
	if n := len(f.rt.startsOf("app")); n != 5 {
		t.Errorf("%d starts, want 5: %v", n, f.rt.startsOf("app"))
	}
	if err := f.sup.Stop("drop", "", RequestOptions{}); err == nil {
		t.Error("removed group still accepts requests")
	}
	f.shutdown()
}

func TestReloadOfTheSupervisorBlockRestartsNothing(t *testing.T) {
	// The supervisor block is no part of a group's spec: changing it
	// keeps every instance, and minimum_grace (X12) applies to the stops
	// that begin afterwards.
	g := oneProcess(spec.RestartAlways)
	g.TerminationGracePeriod = spec.Durp(0) // K5: the minimum is the whole grace
	cfg := configOf(g)
	cfg.Supervisor.MinimumGrace = spec.Durp(time.Second)
	f := startFake(t, cfg, constant(simRun{RunFor: -1, IgnoreTerm: true}))
	f.advanceTo(time.Second)
	before := processStatus(t, f.sup, "g", "app")

	next := configOf(g)
	next.Supervisor.MinimumGrace = spec.Durp(5 * time.Second)
	next.Supervisor.LogLevel = "debug"
	ch, err := f.sup.Reload(next)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"log_level", "minimum_grace"}; !slices.Equal(ch.Supervisor, want) || len(ch.ChangedGroups) != 0 || !slices.Equal(ch.UnchangedGroups, []string{"g"}) {
		t.Errorf("Reload's changes: %+v, want supervisor %v and g unchanged", ch, want)
	}
	f.advanceTo(2 * time.Second)
	if after := processStatus(t, f.sup, "g", "app"); after.InstanceID != before.InstanceID || after.State != lifecycle.StateRunning {
		t.Fatalf("a supervisor-block reload touched g/app: %s → %s (%s)", before.InstanceID, after.InstanceID, after.State)
	}
	if starts := f.rt.startsOf("app"); len(starts) != 1 {
		t.Errorf("starts %v, want the first one only", starts)
	}

	// A stop at 2 s: SIGTERM is ignored, SIGKILL waits the new minimum.
	if err := f.sup.Stop("g", "app", RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(6900 * time.Millisecond)
	if st := processStatus(t, f.sup, "g", "app"); st.State == lifecycle.StateTerminated {
		t.Fatalf("killed before the new minimum grace of 5 s: %+v", st.Terminated)
	}
	f.advanceTo(7 * time.Second)
	if st := processStatus(t, f.sup, "g", "app"); st.State != lifecycle.StateTerminated || st.Terminated == nil || st.Terminated.Signal != syscall.SIGKILL {
		t.Fatalf("not killed at 2 s + the new minimum grace: %+v", st)
	}
	f.shutdown()
}

// Config is the configuration in force: New's, then the last Reload's
// (podsup describe shows probes, hooks and limits from it).
func TestConfigIsTheOneInForce(t *testing.T) {
	g := oneProcess(spec.RestartAlways)
	f := startFake(t, configOf(g), constant(simRun{RunFor: -1}))
	if got := f.sup.Config(); len(got.Groups) != 1 || got.Groups[0].Processes[0].Command[0] != g.Processes[0].Command[0] {
		t.Fatalf("Config() = %+v, want New's", got)
	}
	next := configOf(g)
	next.Supervisor.LogLevel = "debug"
	if _, err := f.sup.Reload(next); err != nil {
		t.Fatal(err)
	}
	if got := f.sup.Config(); got.Supervisor.LogLevel != "debug" {
		t.Errorf("Config() after Reload has log level %q, want the reloaded debug", got.Supervisor.LogLevel)
	}
	f.shutdown()
}

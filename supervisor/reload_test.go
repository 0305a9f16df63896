package supervisor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Process-level live reload, on the fake runtime and clock,
// then with real processes.

// commandsRuntime records the command of every start, then plays the
// fake runtime's script.
type commandsRuntime struct {
	*fakeRuntime
	mu   sync.Mutex
	cmds map[string][]string
}

func (r *commandsRuntime) Start(ctx context.Context, req StartRequest) (Instance, error) {
	r.mu.Lock()
	r.cmds[req.Process.Name] = append(r.cmds[req.Process.Name], strings.Join(req.Process.Command, " "))
	r.mu.Unlock()
	return r.fakeRuntime.Start(ctx, req)
}

func (r *commandsRuntime) commands(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.cmds[name]...)
}

func startFakeWith(t *testing.T, cfg spec.Config, script simScript, hooks HookRunner) (*fakeRun, *commandsRuntime) {
	t.Helper()
	fc := clock.NewFake(clock.Epoch)
	rt := &commandsRuntime{fakeRuntime: newFakeRuntime(fc, script), cmds: map[string][]string{}}
	sup, err := New(cfg, Options{Clock: fc, Runtime: rt, Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRun{t: t, clock: fc, rt: rt.fakeRuntime, sup: sup, sub: sup.Subscribe(), res: make(chan Result, 1)}
	t.Cleanup(f.sub.Close)
	go func() {
		res, err := sup.Run(context.Background())
		if err != nil {
			t.Error(err)
		}
		f.res <- res
	}()
	return f, rt
}

func procs(names ...string) []spec.Process {
	var out []spec.Process
	for _, n := range names {
		out = append(out, spec.Process{Name: n, Command: []string{n, "v1"}})
	}
	return out
}

func processStatus(t *testing.T, sup *Supervisor, group, name string) lifecycle.ProcessStatus {
	t.Helper()
	g, ok := sup.Status().Group(group)
	if !ok {
		t.Fatalf("no group %s", group)
	}
	p, ok := g.Process(name)
	if !ok {
		t.Fatalf("no process %s in %s", name, group)
	}
	return p
}

func TestReloadTouchesOnlyChangedProcesses(t *testing.T) {
	g := spec.Group{Name: "g", TerminationGracePeriod: spec.Durp(30 * time.Second), Processes: procs("keep", "change", "drop")}
	f, rt := startFakeWith(t, configOf(g), constant(simRun{RunFor: -1, TermExit: time.Second}), nil)
	f.advanceTo(time.Second)
	keep0 := processStatus(t, f.sup, "g", "keep")
	change0 := processStatus(t, f.sup, "g", "change")

	next := g
	next.Processes = procs("add", "keep", "change")
	next.Processes[2].Command = []string{"change", "v2"}
	if err := f.sup.Apply(configOf(next)); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(10 * time.Second)

	if keep1 := processStatus(t, f.sup, "g", "keep"); keep1.Pid != keep0.Pid || keep1.InstanceID != keep0.InstanceID || keep1.RestartCount != 0 || keep1.State != lifecycle.StateRunning {
		t.Errorf("unchanged process touched: %+v → %+v", keep0, keep1)
	}
	change1 := processStatus(t, f.sup, "g", "change")
	if change1.Pid == change0.Pid || change1.RestartCount != 1 || change1.State != lifecycle.StateRunning {
		t.Errorf("R4: changed process not restarted: %+v", change1)
	}
	if got := rt.commands("change"); fmt.Sprint(got) != "[change v1 change v2]" {
		t.Errorf("changed process commands %v", got)
	}
	if add := processStatus(t, f.sup, "g", "add"); add.State != lifecycle.StateRunning || add.RestartCount != 0 {
		t.Errorf("added process: %+v", add)
	}
	gs, _ := f.sup.Status().Group("g")
	var names []string
	for _, p := range gs.Processes {
		names = append(names, p.Name)
	}
	if fmt.Sprint(names) != "[add keep change]" {
		t.Errorf("processes after reload: %v", names)
	}
	// Starts: all at 0; add at 1 (at once); change at 2 (old instance
	// took 1 s to exit after SIGTERM); drop never again.
	assertTimes(t, "keep", f.rt.startsOf("keep"), secs(0))
	assertTimes(t, "change", f.rt.startsOf("change"), secs(0, 2))
	assertTimes(t, "drop", f.rt.startsOf("drop"), secs(0))
	assertTimes(t, "add", f.rt.startsOf("add"), secs(1))
	if err := f.sup.Stop("g", "drop", RequestOptions{}); err == nil {
		t.Error("removed process still accepts requests")
	}
	f.shutdown()
}

func TestReloadGroupLevelChangeReplacesTheGroup(t *testing.T) {
	g := spec.Group{Name: "g", Processes: procs("a", "b")}
	f, _ := startFakeWith(t, configOf(g), constant(simRun{RunFor: -1}), nil)
	f.advanceTo(time.Second)
	a0 := processStatus(t, f.sup, "g", "a")
	next := g
	next.TerminationGracePeriod = spec.Durp(5 * time.Second)
	if err := f.sup.Apply(configOf(next)); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(5 * time.Second)
	if a1 := processStatus(t, f.sup, "g", "a"); a1.InstanceID == a0.InstanceID || a1.State != lifecycle.StateRunning {
		t.Errorf("a group-level change must replace every process: %+v → %+v", a0, a1)
	}
	f.shutdown()
}

func TestReloadChangedCrashLoopGetsFreshBackoff(t *testing.T) {
	// B12: a spec change gives a fresh back-off; R4: it restarts at once.
	g := spec.Group{Name: "g", Processes: procs("loop", "ok")}
	f, rt := startFakeWith(t, configOf(g), func(p string, n int) simRun {
		if p == "loop" && n < 4 {
			return simRun{Code: 1}
		}
		return simRun{RunFor: -1}
	}, nil)
	f.advanceTo(35 * time.Second) // loop: starts 0, 0, 10, 30; waiting until 70
	if p := processStatus(t, f.sup, "g", "loop"); p.Reason != lifecycle.ReasonCrashLoopBackOff {
		t.Fatalf("not in back-off: %+v", p)
	}
	next := g
	next.Processes = procs("loop", "ok")
	next.Processes[0].Command = []string{"loop", "fixed"}
	if err := f.sup.Apply(configOf(next)); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(40 * time.Second)
	assertTimes(t, "loop", f.rt.startsOf("loop"), secs(0, 0, 10, 30, 35))
	if got := rt.commands("loop"); got[len(got)-1] != "loop fixed" {
		t.Errorf("commands %v", got)
	}
	if p := processStatus(t, f.sup, "g", "loop"); p.State != lifecycle.StateRunning || p.RestartCount != 4 {
		t.Errorf("R5: %+v", p)
	}
	f.shutdown()
}

func TestReloadChangedStoppedProcessStaysStopped(t *testing.T) {
	g := spec.Group{Name: "g", Processes: procs("a", "b")}
	f, rt := startFakeWith(t, configOf(g), constant(simRun{RunFor: -1}), nil)
	f.advanceTo(time.Second)
	if err := f.sup.Stop("g", "b", RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(2 * time.Second)
	next := g
	next.Processes = procs("a", "b")
	next.Processes[1].Command = []string{"b", "v2"}
	if err := f.sup.Apply(configOf(next)); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(3 * time.Second)
	if n := len(f.rt.startsOf("b")); n != 1 {
		t.Errorf("a stopped process was started by a reload: %d starts", n)
	}
	if err := f.sup.Start("g", "b", RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(4 * time.Second)
	if got := rt.commands("b"); fmt.Sprint(got) != "[b v1 b v2]" {
		t.Errorf("the next start takes the new spec: %v", got)
	}
	f.shutdown()
}

// releasingRuntime records when the supervisor releases a process.
type releasingRuntime struct {
	*commandsRuntime
	mu       sync.Mutex
	released []string // "name@seconds"
}

func (r *releasingRuntime) ReleaseProcess(group, process string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released = append(r.released, fmt.Sprintf("%s/%s@%gs", group, process, r.clock.Now().Sub(clock.Epoch).Seconds()))
}

func (r *releasingRuntime) got() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.released)
}

func TestReloadReleasesARemovedProcessOnceItsLastInstanceExited(t *testing.T) {
	// Instances exit 1 s after SIGTERM. A removed process is released (its
	// captured output forgotten) when its instance is gone, a removed
	// stopped one at once, and one that a later reload added back under
	// the same name never.
	g := spec.Group{Name: "g", TerminationGracePeriod: spec.Durp(30 * time.Second), Processes: procs("keep", "drop", "idle", "back")}
	fc := clock.NewFake(clock.Epoch)
	rt := &releasingRuntime{commandsRuntime: &commandsRuntime{
		fakeRuntime: newFakeRuntime(fc, constant(simRun{RunFor: -1, TermExit: time.Second})), cmds: map[string][]string{}}}
	sup, err := New(configOf(g), Options{Clock: fc, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRun{t: t, clock: fc, rt: rt.fakeRuntime, sup: sup, sub: sup.Subscribe(), res: make(chan Result, 1)}
	t.Cleanup(f.sub.Close)
	go func() {
		res, err := sup.Run(context.Background())
		if err != nil {
			t.Error(err)
		}
		f.res <- res
	}()
	f.advanceTo(time.Second)
	if err := sup.Stop("g", "idle", RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(3 * time.Second)

	next := g
	next.Processes = procs("keep")
	if err := sup.Apply(configOf(next)); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(3500 * time.Millisecond)
	if got := rt.got(); got != "[g/idle@3s]" {
		t.Fatalf("released while drop and back are still stopping: %s, want only the stopped idle at once", got)
	}
	next.Processes = procs("keep", "back")
	if err := sup.Apply(configOf(next)); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(10 * time.Second)
	if got := rt.got(); got != "[g/idle@3s g/drop@4s]" {
		t.Fatalf("releases %s, want idle at once and drop when its instance exited; back (added again) never", got)
	}
	f.shutdown()
}

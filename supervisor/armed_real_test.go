package supervisor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Armed restarts (R8) on the real runtime: a process restarted without
// back-off is started again on the reaper's goroutine, and nothing a stop,
// a leftover child or a clean exit under on-failure brings is lost or
// left behind.

// armCounter counts the instances started, and those started on the
// reaper's goroutine for an armed restart (under WithoutWaiting).
type armCounter struct {
	supervisor.Runtime
	all, armed atomic.Int64
}

func (c *armCounter) Start(ctx context.Context, req supervisor.StartRequest) (supervisor.Instance, error) {
	inst, err := c.Runtime.Start(ctx, req)
	if err == nil {
		c.all.Add(1)
		if supervisor.MustNotWait(ctx) {
			c.armed.Add(1)
		}
	}
	return inst, err
}

// startArmable runs cfg as `podsup up` does: every group in a cgroup-only
// sandbox (SandboxRuntime's allGroups), the runtime whose instances can
// tell their tree is empty.
func startArmable(t *testing.T, cfg spec.Config) (*localRun, *armCounter) {
	t.Helper()
	rt, inst := newLocalRuntime(t, nil)
	if !rt.CgroupsEnabled() {
		t.Skip("no cgroup podsup may write: an armed restart needs the cgroup to check the tree")
	}
	c := &armCounter{Runtime: stack.NewSandboxRuntime(rt, true)}
	r := runSupervisor(t, cfg, supervisor.Options{Runtime: c}, 60*time.Second)
	return &localRun{realRun: r, rt: rt, instance: inst}, c
}

func armableConfig(policy spec.RestartPolicy, p spec.Process) spec.Config {
	return spec.Config{Backoff: spec.Backoff{Reset: time.Hour}, // initial 0s: no back-off
		Groups: []spec.Group{realGroup("loop", policy, p)}}
}

// restartsReach waits until process p of group loop has been restarted n
// times.
func restartsReach(t *testing.T, sup *supervisor.Supervisor, p string, n int) lifecycle.ProcessStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ps := processStatus(t, sup, "loop", p)
		if ps.RestartCount >= n {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d restarts after 30 s, want %d: %+v", ps.RestartCount, n, ps)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pidsIn lists the processes in the cgroup tree under dir.
func pidsIn(t *testing.T, dir string) []string {
	t.Helper()
	var pids []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil // removed meanwhile
		}
		pids = append(pids, strings.Fields(string(b))...)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return pids
}

func TestRealArmedRestartStartsOnTheReaper(t *testing.T) {
	// R8: a process restarted at once (back-off 0) is started by the
	// reaper's goroutine as its exit is reaped. It lives 50 ms, long
	// enough for its arm to be in place before it exits on a loaded
	// machine (an exit before the worker took in the start goes the usual
	// way).
	r, c := startArmable(t, armableConfig(spec.RestartAlways, spec.Process{Name: "p", Command: []string{"sleep", "0.05"}}))
	ps := restartsReach(t, r.sup, "p", 40)
	if armed, all := c.armed.Load(), c.all.Load(); armed < all/2 {
		t.Errorf("%d of %d starts were armed restarts, want at least half", armed, all)
	}
	if ps.LastTermination == nil || ps.LastTermination.ExitCode != 0 || ps.LastTermination.Reason != lifecycle.ReasonCompleted {
		t.Errorf("last termination %+v, want exit 0, Completed", ps.LastTermination)
	}
}

func TestRealArmedRestartFailingWithCode(t *testing.T) {
	// R8 under on-failure: a non-zero exit is restarted on the reaper too,
	// with its code in the status.
	r, c := startArmable(t, armableConfig(spec.RestartOnFailure, spec.Process{Name: "p", Command: []string{"sh", "-c", "sleep 0.02; exit 3"}}))
	ps := restartsReach(t, r.sup, "p", 20)
	if c.armed.Load() == 0 {
		t.Error("no armed restart of a process failing with exit code 3")
	}
	if ps.LastTermination == nil || ps.LastTermination.ExitCode != 3 {
		t.Errorf("last termination %+v, want exit code 3", ps.LastTermination)
	}
}

func TestRealArmedRestartLeavesACleanExitDown(t *testing.T) {
	// R2 under on-failure: the arm covers non-zero exits only; an exit 0
	// ends the process for good, armed or not.
	r, c := startArmable(t, armableConfig(spec.RestartOnFailure, spec.Process{Name: "p", Command: []string{"sleep", "0.05"}}))
	term := r.terminated("loop", "p")
	time.Sleep(300 * time.Millisecond) // a restart, had there been one, would show by now
	ps := processStatus(t, r.sup, "loop", "p")
	if term.ExitCode != 0 || ps.RestartCount != 0 || ps.State != lifecycle.StateTerminated {
		t.Errorf("after exit 0 under on-failure: %+v (termination %+v), want terminated, never restarted", ps, term)
	}
	if n := c.all.Load(); n != 1 {
		t.Errorf("%d starts, want 1", n)
	}
}

func TestRealArmedRestartDeclinesWhenTheTreeIsLeft(t *testing.T) {
	// X10: an instance that leaves a child running is not restarted on the
	// reaper (its tree is not empty); the usual path kills the child first,
	// and no child accumulates.
	r, c := startArmable(t, armableConfig(spec.RestartAlways, spec.Process{Name: "p", Command: []string{"sh", "-c", "sleep 100 & sleep 0.02"}}))
	restartsReach(t, r.sup, "p", 15)
	if n := c.armed.Load(); n != 0 {
		t.Errorf("%d armed restarts of instances that left a child running, want 0", n)
	}
	st, err := r.rt.SandboxStatus("loop")
	if err != nil {
		t.Fatal(err)
	}
	// The running instance: its sh, its sleep 100 and its sleep 0.02, or
	// fewer between two instances; never the earlier instances' sleeps.
	if pids := pidsIn(t, st.Cgroup); len(pids) > 3 {
		t.Errorf("%d processes in the group's cgroup after 15 restarts, want at most one instance's 3: %v", len(pids), pids)
	}
}

func TestRealArmedRestartStoppedLeavesNothing(t *testing.T) {
	// X7, X10: stops that meet a restart loop on the reaper (the disarm's
	// race with the claim) end with the process stopped and nothing of it
	// running; starts after them loop again.
	r, c := startArmable(t, armableConfig(spec.RestartAlways, spec.Process{Name: "p", Command: []string{"sleep", "0.01"}}))
	restartsReach(t, r.sup, "p", 1) // the sandbox is made by the first start
	st, err := r.rt.SandboxStatus("loop")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		restartsReach(t, r.sup, "p", 10*(i+1))
		time.Sleep(time.Duration(i) * 700 * time.Microsecond) // somewhere in an instance's life
		if err := r.sup.Stop("loop", "p", supervisor.RequestOptions{Requester: "test"}); err != nil {
			t.Fatal(err)
		}
		term := r.terminated("loop", "p")
		if pids := pidsIn(t, st.Cgroup); len(pids) > 0 {
			t.Fatalf("stop %d: stopped (%+v), but %d processes still run in the group's cgroup: %v", i, term, len(pids), pids)
		}
		time.Sleep(50 * time.Millisecond)
		if ps := processStatus(t, r.sup, "loop", "p"); ps.State != lifecycle.StateTerminated {
			t.Fatalf("stop %d: %s again 50 ms after the stop: %+v", i, ps.State, ps)
		}
		if err := r.sup.Start("loop", "p", supervisor.RequestOptions{Requester: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	if c.armed.Load() == 0 {
		t.Error("no armed restart: the stops met no armed instance")
	}
	t.Logf("%d starts, %d of them armed restarts", c.all.Load(), c.armed.Load())
}

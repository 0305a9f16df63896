package supervisor_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/internal/testfreeze"
	"github.com/podsup/podsup/sandbox"
	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Faults of the real runtime (SandboxRuntime over package sandbox): real
// processes, cgroups and namespaces. Root only.

var localSeq atomic.Int64

// localRun is a supervisor over a SandboxRuntime of its own instance.
//
// These tests do not run in parallel: a SandboxRuntime's cgroup manager may
// move this whole process into a leaf of its own cgroup (cgroups'
// _supervisor leaf, when its cgroup holds other processes) and back on
// Close, which is process-wide; a second manager made meanwhile would nest
// under the first's leaf.
type localRun struct {
	*realRun
	rt       *sandbox.Runtime
	instance string
}

func startLocal(t *testing.T, cfg spec.Config, opts supervisor.Options, cg *cgroups.Options) *localRun {
	t.Helper()
	rt, inst := newLocalRuntime(t, cg)
	opts.Runtime = stack.NewSandboxRuntime(rt, false)
	r := runSupervisor(t, cfg, opts, 60*time.Second)
	return &localRun{realRun: r, rt: rt, instance: inst}
}

// newLocalRuntime is a sandbox runtime of an instance of its own, closed
// after the test's supervisor has shut down; root only.
func newLocalRuntime(t *testing.T, cg *cgroups.Options) (*sandbox.Runtime, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates cgroups and namespaces (CI runs as root)")
	}
	inst := fmt.Sprintf("suptest-%d-%d", os.Getpid(), localSeq.Add(1))
	rt, err := sandbox.NewRuntime(sandbox.Options{Instance: inst, Cgroups: cg, ReadyTimeout: 10 * time.Second, KillTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the supervisor's shutdown (cleanups run last first)
		if err := rt.Close(); err != nil {
			t.Errorf("closing the runtime: %v", err)
		}
	})
	return rt, inst
}

// ended waits for Run to return within d.
func (r *localRun) ended(d time.Duration) bool {
	select {
	case res := <-r.res:
		r.res <- res
		return true
	case <-time.After(d):
		return false
	}
}

func TestLocalSandboxStartFailureDoesNotDeadlock(t *testing.T) {
	// Item 1: a sandboxed group whose command does not exist fails its
	// start (128, E3) and backs off; a shutdown then ends the group at once.
	// The adapter used to hold a lock across StartProcess, whose failure
	// path reports the exit synchronously through the same lock.
	g := spec.Group{Name: "sb", RestartPolicy: spec.RestartAlways, Sandbox: &spec.Sandbox{},
		Processes: []spec.Process{{Name: "missing", Command: []string{"/nonexistent/podsup-no-such-command"}}}}
	r := startLocal(t, spec.Config{Backoff: scaled, Groups: []spec.Group{g}}, supervisor.Options{}, nil)
	e := r.next(lifecycle.EventFailed)
	if !strings.Contains(e.Message, "no-such-command") {
		t.Errorf("Failed event: %q", e.Message)
	}
	r.next(lifecycle.EventBackOff)
	st, _ := r.sup.Status().Group("sb")
	if p := st.Processes[0]; p.LastTermination == nil || p.LastTermination.ExitCode != 128 || p.LastTermination.Reason != lifecycle.ReasonStartError {
		t.Errorf("E3: last termination %+v, want 128 StartError", p.LastTermination)
	}
	r.sup.RequestShutdown(nil)
	if !r.ended(15 * time.Second) {
		t.Fatal("a sandboxed group whose start failed does not stop on shutdown")
	}
	if st, err := r.rt.SandboxStatus("sb"); !sandbox.IsNotFound(err) {
		t.Errorf("sandbox left after the group ended: %+v", st)
	}
}

func TestLocalDeadSandboxIsRebuilt(t *testing.T) {
	// Item 2: SIGKILL of the sandbox holder kills everything in its PID
	// namespace; the next start deletes the dead sandbox, creates a new
	// one (new holder) with a SandboxChanged event, and the process runs
	// again.
	p := fastHelper(t, "app", "sleep")
	g := spec.Group{Name: "sb", RestartPolicy: spec.RestartAlways,
		Sandbox:   &spec.Sandbox{Namespaces: []string{"pid"}},
		Processes: []spec.Process{p}}
	r := startLocal(t, spec.Config{Backoff: scaled, Groups: []spec.Group{g}}, supervisor.Options{}, nil)
	first := r.next(lifecycle.EventStarted)
	st, err := r.rt.SandboxStatus("sb")
	if err != nil || st.HolderPid <= 1 {
		t.Fatalf("sandbox status %+v %v", st, err)
	}
	testproc.KillPid(t, st.HolderPid)
	e := r.next(lifecycle.EventSandboxChanged)
	if !strings.Contains(e.Message, "holder ended") || !strings.Contains(e.Message, "re-created") {
		t.Errorf("SandboxChanged message %q does not say why", e.Message)
	}
	again := r.next(lifecycle.EventStarted)
	if again.InstanceID == first.InstanceID {
		t.Fatalf("no new instance after the sandbox died: %+v", again)
	}
	st2, err := r.rt.SandboxStatus("sb")
	if err != nil || st2.State != sandbox.SandboxReady || st2.HolderPid == st.HolderPid {
		t.Errorf("sandbox after rebuild: %+v %v (old holder %d)", st2, err, st.HolderPid)
	}
	// One record per live instance: the dead ones went with the old
	// sandbox or were removed by the worker.
	if !eventuallyTrue(func() bool { return len(sandboxProcesses(r.rt, "sb")) == 1 }) {
		t.Errorf("process records after the rebuild: %+v", sandboxProcesses(r.rt, "sb"))
	}
}

func TestLocalExitCodeKeptAndInstanceRemovedByItsWorker(t *testing.T) {
	// Item 7: instances that exit at once keep their real exit code
	// (never a StartError from a record removed under the start), and the
	// worker, their one owner, removes each record after its exit.
	var procs []spec.Process
	for i := 0; i < 8; i++ {
		procs = append(procs, spec.Process{Name: fmt.Sprintf("quick%d", i), Command: []string{"/bin/sh", "-c", "exit 7"}})
	}
	g := spec.Group{Name: "sb", RestartPolicy: spec.RestartNever, Sandbox: &spec.Sandbox{}, Processes: procs}
	r := startLocal(t, spec.Config{Backoff: scaled, Groups: []spec.Group{g}}, supervisor.Options{}, nil)
	done := func() bool {
		st, _ := r.sup.Status().Group("sb")
		for _, p := range st.Processes {
			if p.Terminated == nil {
				return false
			}
		}
		return true
	}
	if !eventuallyTrue(done) {
		t.Fatal("the processes never all ended")
	}
	st, _ := r.sup.Status().Group("sb")
	for _, p := range st.Processes {
		if lt := p.Terminated; lt.ExitCode != 7 || lt.Reason != lifecycle.ReasonError {
			t.Errorf("%s ended %+v, want exit code 7 (Error)", p.Name, lt)
		}
	}
	if !eventuallyTrue(func() bool { return len(sandboxProcesses(r.rt, "sb")) == 0 }) {
		t.Errorf("records of exited instances left: %+v", sandboxProcesses(r.rt, "sb"))
	}
}

func TestLocalStopOfFrozenTreeEnds(t *testing.T) {
	// Item 4 with a real unkillable task: the process is frozen by a v1
	// freezer cgroup of the test's own (as a task in D state, it cannot
	// act on SIGKILL), so the cgroup kill reports it busy. The stop
	// retries on a deadline with Warnings naming it, status and other
	// requests are served meanwhile, and the shutdown ends.
	fz := testfreeze.Root(t)
	p := fastHelper(t, "app", "sleep")
	g := spec.Group{Name: "sb", RestartPolicy: spec.RestartAlways, Sandbox: &spec.Sandbox{},
		TerminationGracePeriod: spec.Durp(100 * time.Millisecond), Processes: []spec.Process{p}}
	other := realGroup("other", spec.RestartAlways, fastHelper(t, "x", "sleep"))
	cfg := spec.Config{Backoff: scaled, Groups: []spec.Group{g, other}}
	cfg.Supervisor.MinimumGrace = spec.Durp(100 * time.Millisecond)
	r := startLocal(t, cfg, supervisor.Options{KillRetry: 300 * time.Millisecond, KillAttempts: 3}, &cgroups.Options{Timeout: 500 * time.Millisecond})
	pid := waitStatus(t, r.realRun, "app", func(ps lifecycle.ProcessStatus) bool { return ps.Pid > 0 }).Pid
	thaw := testfreeze.Pid(t, fz, pid)
	defer thaw()
	if err := r.sup.Stop("sb", "app", supervisor.RequestOptions{Requester: "test"}); err != nil {
		t.Fatal(err)
	}
	e := r.next(lifecycle.EventFailedKill)
	if e.Type != lifecycle.EventWarning || !strings.Contains(e.Message, strconv.Itoa(pid)) || e.Process != "app" || e.Group != "sb" {
		t.Errorf("FailedKill does not name the surviving pid %d: %+v", pid, e)
	}
	// The worker is not wedged: status answers and requests are served.
	if err := r.sup.Restart("other", "x", supervisor.RequestOptions{Requester: "test"}); err != nil {
		t.Errorf("restart of another group: %v", err)
	}
	if err := r.sup.Stop("sb", "app", supervisor.RequestOptions{Requester: "test"}); err != nil {
		t.Errorf("a second stop of the stuck process: %v", err)
	}
	if st, ok := r.sup.Status().Group("sb"); !ok || st.Phase != lifecycle.PhaseStopping {
		t.Errorf("status of the stuck group: %+v", st)
	}
	r.next(lifecycle.EventFailedKill) // the retry, on its deadline
	r.sup.RequestShutdown(nil)
	if !r.ended(60 * time.Second) {
		t.Fatal("shutdown did not end while a frozen task survived SIGKILL")
	}
	thaw()
	if !eventuallyTrue(func() bool { return processGone(pid) }) {
		t.Errorf("pid %d still alive after the thaw", pid)
	}
}

func eventuallyTrue(cond func() bool) bool {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

func TestLocalFailedCleanupAfterExitIsReported(t *testing.T) {
	// Item 7: the worker, the one owner of an exited instance's cleanup,
	// reports what it could not do: here a child the process left behind
	// is frozen (a task in D state), so the tree kill after the exit
	// fails. The exit code stays the process's own.
	fz := testfreeze.Root(t)
	dir := t.TempDir()
	child, gate := filepath.Join(dir, "child"), filepath.Join(dir, "go")
	script := fmt.Sprintf("sleep 1000 & printf %%s $! > %s.tmp; mv %s.tmp %s; while [ ! -e %s ]; do sleep 0.05; done; exit 3", child, child, child, gate)
	g := spec.Group{Name: "sb", RestartPolicy: spec.RestartNever, Sandbox: &spec.Sandbox{},
		Processes: []spec.Process{{Name: "app", Command: []string{"/bin/sh", "-c", script}}}}
	r := startLocal(t, spec.Config{Backoff: scaled, Groups: []spec.Group{g}}, supervisor.Options{}, &cgroups.Options{Timeout: 500 * time.Millisecond})
	pid := waitPidFile(t, child)
	thaw := testfreeze.Pid(t, fz, pid)
	defer thaw()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e := r.next(lifecycle.EventFailedKill)
	if e.Type != lifecycle.EventWarning || !strings.Contains(e.Message, "left behind") || !strings.Contains(e.Message, strconv.Itoa(pid)) {
		t.Errorf("the failed cleanup is not reported with what survives (pid %d): %+v", pid, e)
	}
	st, _ := r.sup.Status().Group("sb")
	if term := st.Processes[0].Terminated; term == nil || term.ExitCode != 3 || term.Reason != lifecycle.ReasonError {
		t.Errorf("termination %+v, want the process's own exit code 3", term)
	}
	thaw()
	if !eventuallyTrue(func() bool { return processGone(pid) }) {
		t.Errorf("the left-behind child %d survived its thaw", pid)
	}
}

// sandboxProcesses lists the ids of the process records in sandbox id.
func sandboxProcesses(rt *sandbox.Runtime, id string) []string {
	st, _ := rt.SandboxStatus(id)
	return st.Processes
}

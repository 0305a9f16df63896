package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/execrun"
	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/rs/zerolog"
)

// newHostRuntime is a runtime without cgroups: host sandboxes (no
// namespaces) need no privileges, so the lifecycle runs anywhere.
func newHostRuntime(t *testing.T) *Runtime {
	t.Helper()
	rt, err := NewRuntime(Options{Instance: "unused", DisableCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("closing runtime: %v", err)
		}
	})
	return rt
}

func TestProcessLifecycleAndErrorClasses(t *testing.T) {
	rt := newHostRuntime(t)
	ctx := testCtx(t)
	mustCreateSandbox(t, rt, "g", spec.Sandbox{})
	check := func(what string, err error, class error) {
		t.Helper()
		if !errors.Is(err, class) {
			t.Errorf("%s: %v; want class %v", what, err, class)
		}
	}
	check("duplicate sandbox", rt.CreateSandbox(ctx, "g", spec.Sandbox{}), ErrAlreadyExists)
	check("bad sandbox id", rt.CreateSandbox(ctx, "../x", spec.Sandbox{}), ErrInvalidArgument)
	check("unknown namespace", rt.CreateSandbox(ctx, "x", spec.Sandbox{Namespaces: []string{"user"}}), ErrInvalidArgument)
	check("limits without cgroups", rt.CreateSandbox(ctx, "x", spec.Sandbox{Resources: spec.Resources{Pids: 5}}), ErrUnavailable)
	check("process in unknown sandbox", rt.CreateProcess(ctx, "p", ProcessConfig{Sandbox: "nope", Command: []string{"true"}}), ErrNotFound)
	check("empty command", rt.CreateProcess(ctx, "p", ProcessConfig{Sandbox: "g"}), ErrInvalidArgument)
	_, err := rt.ProcessStatus("nope")
	check("status of unknown process", err, ErrNotFound)
	check("start unknown", rt.StartProcess(ctx, "nope"), ErrNotFound)

	if err := rt.CreateProcess(ctx, "p", ProcessConfig{Sandbox: "g", Command: []string{"/bin/sh", "-c", "exit 3"}}); err != nil {
		t.Fatal(err)
	}
	check("duplicate process", rt.CreateProcess(ctx, "p", ProcessConfig{Sandbox: "g", Command: []string{"true"}}), ErrAlreadyExists)
	if st, _ := rt.ProcessStatus("p"); st.State != StateCreated || st.Pid != 0 {
		t.Errorf("after create: %+v", st)
	}
	check("signal a created process", rt.SignalProcess("p", syscall.SIGTERM), ErrFailedPrecondition)
	if err := rt.StartProcess(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	st, err := rt.waitProcess(ctx, "p")
	if err != nil || st.State != StateExited || st.ExitCode != 3 || st.OOMKilled || st.Pid <= 0 || st.FinishedAt.Before(st.StartedAt) {
		t.Errorf("after exit: %+v %v", st, err)
	}
	check("start twice", rt.StartProcess(ctx, "p"), ErrFailedPrecondition)
	if err := rt.stopProcess(ctx, "p", time.Second); err != nil {
		t.Errorf("stopping an exited process: %v", err)
	}
	if got := rt.listProcesses(ProcessFilter{Sandbox: "g", State: StateExited}); len(got) != 1 || got[0].ID != "p" {
		t.Errorf("list exited in g: %+v", got)
	}
	if err := rt.RemoveProcess(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	check("remove twice", rt.RemoveProcess(ctx, "p"), ErrNotFound)

	// A running process cannot be removed; Stop first.
	if err := rt.CreateProcess(ctx, "s", ProcessConfig{Sandbox: "g", Command: []string{"sleep", "60"}}); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartProcess(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	check("remove running", rt.RemoveProcess(ctx, "s"), ErrFailedPrecondition)
	if err := rt.stopProcess(ctx, "s", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if st, _ := rt.ProcessStatus("s"); st.State != StateExited || st.Signal != syscall.SIGTERM || st.ExitCode != 143 {
		t.Errorf("after stop: %+v", st)
	}

	// A created process can be stopped (exited, never ran) or removed.
	if err := rt.CreateProcess(ctx, "c", ProcessConfig{Sandbox: "g", Command: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	if err := rt.stopProcess(ctx, "c", time.Second); err != nil {
		t.Fatal(err)
	}
	if st, _ := rt.ProcessStatus("c"); st.State != StateExited || st.Pid != 0 || !st.StartedAt.IsZero() {
		t.Errorf("stopped before start: %+v", st)
	}
	check("start a stopped process", rt.StartProcess(ctx, "c"), ErrFailedPrecondition)

	if sbs := rt.listSandboxes(); len(sbs) != 1 || sbs[0].State != SandboxReady || len(sbs[0].Processes) != 2 {
		t.Errorf("sandboxes: %+v", sbs)
	}
	if err := rt.DeleteSandbox(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	check("delete twice", rt.DeleteSandbox(ctx, "g"), ErrNotFound)
	_, err = rt.ProcessStatus("s")
	check("process of a deleted sandbox", err, ErrNotFound)
}

// A program that cannot run leaves the process exited with code 128 (E3)
// and the cause in its message; StartProcess's error is the news of it, not
// OnExit, which is for a process that ran.
func TestStartErrorLeavesProcessExited(t *testing.T) {
	rt := newHostRuntime(t)
	ctx := testCtx(t)
	mustCreateSandbox(t, rt, "g", spec.Sandbox{})
	reported := make(chan ProcessStatus, 1)
	cfg := ProcessConfig{Sandbox: "g", Command: []string{"/nonexistent/program"}, OnExit: func(s ProcessStatus) { reported <- s }}
	if err := rt.CreateProcess(ctx, "p", cfg); err != nil {
		t.Fatal(err)
	}
	err := rt.StartProcess(ctx, "p")
	if !errors.Is(err, proc.ErrCommandNotFound) {
		t.Errorf("start: %v; want ErrCommandNotFound", err)
	}
	st, _ := rt.ProcessStatus("p")
	if st.State != StateExited || st.ExitCode != 128 || st.Message == "" {
		t.Errorf("status: %+v", st)
	}
	select {
	case s := <-reported:
		t.Errorf("OnExit got %+v after a failed start", s)
	default:
	}
}

// Deleting a sandbox kills what still runs in it, and kills it whole.
func TestDeleteSandboxKillsRunningProcesses(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	for _, ns := range [][]string{nil, {"pid", "mount", "net"}} {
		id := fmt.Sprintf("d%d", len(ns))
		mustCreateSandbox(t, rt, id, spec.Sandbox{Namespaces: ns})
		var pids []int
		for i := 0; i < 3; i++ {
			pids = append(pids, runHelper(t, rt, id, fmt.Sprintf("%s-p%d", id, i), "sleep").Pid)
		}
		st, _ := rt.SandboxStatus(id)
		if err := rt.DeleteSandbox(testCtx(t), id); err != nil {
			t.Fatal(err)
		}
		for _, pid := range append(pids, st.HolderPid) {
			if pid > 0 && testproc.Alive(pid) {
				t.Errorf("%s: pid %d alive after DeleteSandbox", id, pid)
			}
		}
		if st.Cgroup != "" {
			if _, err := os.Stat(st.Cgroup); err == nil {
				t.Errorf("%s: cgroup %s still there", id, st.Cgroup)
			}
		}
		if len(rt.listProcesses(ProcessFilter{Sandbox: id})) != 0 {
			t.Errorf("%s: processes still listed", id)
		}
	}
}

// When the holder dies the sandbox is failed, its processes are gone and
// exited, podsup does not hang, and the sandbox can still be deleted.
func TestHolderDeathFailsSandbox(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	for _, ns := range [][]string{{"pid", "mount"}, {"net"}} {
		id := fmt.Sprintf("h%d", len(ns))
		mustCreateSandbox(t, rt, id, spec.Sandbox{Namespaces: ns})
		p := runHelper(t, rt, id, id+"-p", "sleep")
		rt.mu.Lock()
		holder := rt.sandboxes[id].holder.proc
		rt.mu.Unlock()
		if err := holder.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		st, err := rt.waitProcess(testCtx(t), id+"-p")
		if err != nil || st.Signal != syscall.SIGKILL {
			t.Errorf("%s: process after holder death: %+v %v", id, st, err)
		}
		if testproc.Alive(p.Pid) {
			t.Errorf("%s: process %d alive", id, p.Pid)
		}
		if !testproc.Eventually(5*time.Second, func() bool { s, _ := rt.SandboxStatus(id); return s.State == SandboxFailed }) {
			s, _ := rt.SandboxStatus(id)
			t.Errorf("%s: sandbox %s after holder death", id, s.State)
		}
		err = rt.CreateProcess(testCtx(t), id+"-q", ProcessConfig{Sandbox: id, Command: []string{"true"}})
		if !errors.Is(err, ErrFailedPrecondition) {
			t.Errorf("%s: create in a failed sandbox: %v", id, err)
		}
		if err := rt.DeleteSandbox(testCtx(t), id); err != nil {
			t.Errorf("%s: delete failed sandbox: %v", id, err)
		}
	}
}

// Many goroutines driving processes of one sandbox at once (run with
// -race): every process ends exited with its own code, nothing is lost.
func TestConcurrentUse(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	mustCreateSandbox(t, rt, "c", spec.Sandbox{Namespaces: []string{"pid", "mount", "ipc"}})
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := fmt.Sprintf("p%d", i)
			cmd := []string{"/bin/sh", "-c", fmt.Sprintf("exit %d", i)}
			if i%2 == 1 {
				cmd = []string{"sleep", "60"}
			}
			if err := rt.CreateProcess(ctx, id, ProcessConfig{Sandbox: "c", Command: cmd}); err != nil {
				errs <- err
				return
			}
			go func() { _, _ = rt.ProcessStatus(id); _ = rt.listProcesses(ProcessFilter{}) }()
			if err := rt.StartProcess(ctx, id); err != nil {
				errs <- err
				return
			}
			if i%2 == 1 {
				var inner sync.WaitGroup
				for j := 0; j < 3; j++ { // concurrent stops of one process
					inner.Add(1)
					go func() { defer inner.Done(); _ = rt.stopProcess(ctx, id, time.Second) }()
				}
				inner.Wait()
			}
			st, err := rt.waitProcess(ctx, id)
			want := i
			if i%2 == 1 {
				want = 143
			}
			if err != nil || st.ExitCode != want {
				errs <- fmt.Errorf("%s: %+v %v; want exit %d", id, st, err, want)
				return
			}
			if err := rt.RemoveProcess(ctx, id); err != nil {
				errs <- err
			}
		}(i)
	}
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := runIn(ctx, rt, "c", execrun.Request{Argv: []string{"/bin/true"}}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := rt.DeleteSandbox(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
}

// A command run to completion in a sandbox (execrun over Spawn, podsup's
// one run-to-completion path) gives its output and exit code, has its
// output capped, has its tree killed on timeout, and an unknown sandbox is
// ErrNotFound.
func TestRunToCompletionInSandboxOutputCodeAndTimeout(t *testing.T) {
	rt := newHostRuntime(t)
	mustCreateSandbox(t, rt, "g", spec.Sandbox{})
	res, err := runIn(testCtx(t), rt, "g", execrun.Request{Argv: []string{"/bin/sh", "-c", "echo out; echo err >&2; exit 7"}})
	if err != nil || res.ExitCode != 7 || string(res.Output) != "out\nerr\n" {
		t.Errorf("exec: %+v %v", res, err)
	}
	res, err = runIn(testCtx(t), rt, "g", execrun.Request{Argv: []string{"/bin/sh", "-c", "head -c 100000 /dev/zero"}, OutputLimit: 1000})
	if err != nil || len(res.Output) != 1000 || !res.Truncated || res.ExitCode != 0 {
		t.Errorf("capped exec: %d bytes, truncated %v, %v", len(res.Output), res.Truncated, err)
	}
	begin := time.Now()
	// A tree, so that the kill must reach more than the leader.
	res, err = runIn(testCtx(t), rt, "g", execrun.Request{Argv: []string{"/bin/sh", "-c", "sleep 60 & sleep 60"}, Timeout: 100 * time.Millisecond})
	if err != nil || !res.TimedOut || res.ExitCode != 128+int(syscall.SIGKILL) {
		t.Errorf("timed-out exec: %+v %v", res, err)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("timed-out exec took %s", d)
	}
	_, err = runIn(testCtx(t), rt, "nope", execrun.Request{Argv: []string{"true"}})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("exec in unknown sandbox: %v", err)
	}
}

// Status carries live usage from the cgroup while running.
func TestStatusReportsUsage(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	if !rt.CgroupsEnabled() {
		t.Skip("needs cgroups for live usage")
	}
	mustCreateSandbox(t, rt, "u", spec.Sandbox{})
	if err := rt.CreateProcess(testCtx(t), "spin", ProcessConfig{Sandbox: "u", Command: []string{"/bin/sh", "-c", "while :; do :; done"}}); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartProcess(testCtx(t), "spin"); err != nil {
		t.Fatal(err)
	}
	var st ProcessStatus
	if !testproc.Eventually(10*time.Second, func() bool { st, _ = rt.ProcessStatus("spin"); return st.Usage.CPU >= 50*time.Millisecond }) {
		t.Errorf("usage of a busy loop: %+v", st.Usage)
	}
	if err := rt.stopProcess(testCtx(t), "spin", 0); err != nil {
		t.Fatal(err)
	}
	if st, _ = rt.ProcessStatus("spin"); st.Usage.CPU < 50*time.Millisecond {
		t.Errorf("final usage: %+v", st.Usage)
	}
}

// Where cgroups cannot be used the runtime says so once and falls back to
// process groups; limits are then refused rather than silently dropped.
func TestCgroupsUnavailableFallsBackToProcessGroups(t *testing.T) {
	var logged strings.Builder
	rt, err := NewRuntime(Options{
		Instance: "fallback",
		Logger:   zerolog.New(&logged),
		Cgroups:  &cgroups.Options{Layout: &cgroups.Layout{}}, // nothing mounted
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if rt.CgroupsEnabled() || strings.Count(logged.String(), "\"level\":\"warn\"") != 1 {
		t.Errorf("enabled %v, log %q; want disabled and one warning", rt.CgroupsEnabled(), logged.String())
	}
	mustCreateSandbox(t, rt, "g", spec.Sandbox{})
	if st, _ := rt.SandboxStatus("g"); st.Cgroup != "" {
		t.Errorf("cgroup %q without cgroups", st.Cgroup)
	}
	if err := rt.CreateSandbox(testCtx(t), "l", spec.Sandbox{Resources: spec.Resources{Memory: 1 << 20}}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("limits without cgroups: %v", err)
	}
	res, err := runIn(testCtx(t), rt, "g", execrun.Request{Argv: []string{"/bin/sh", "-c", "echo ok"}})
	if err != nil || string(res.Output) != "ok\n" {
		t.Errorf("exec without cgroups: %+v %v", res, err)
	}
}

// DeleteSandbox during CreateSandbox waits for the creation and deletes
// what it made: nothing is left, nothing hangs.
func TestDeleteDuringCreate(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	created := make(chan error, 1)
	go func() {
		created <- rt.CreateSandbox(testCtx(t), "x", spec.Sandbox{Namespaces: []string{"pid", "mount", "net"}})
	}()
	var err error
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
		if err = rt.DeleteSandbox(testCtx(t), "x"); !errors.Is(err, ErrNotFound) {
			break
		}
	}
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := <-created; err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := rt.SandboxStatus("x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("sandbox still there: %v", err)
	}
}

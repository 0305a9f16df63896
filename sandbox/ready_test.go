package sandbox

import (
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/spec"
)

// A process restarted at once (ProcessConfig.KeepReady) keeps its kept
// cgroup's directory and cgroup.events open across its instances: two fds
// for the cgroup's life, which go with the sandbox. ProcessTreeEmpty
// answers from the kept file: yes after an exit that left nothing, no
// while something the instance left still runs.
func TestKeepReadyKeepsTwoFDsAndTellsTheTreeEmpty(t *testing.T) {
	// Not parallel: it counts this process's open fds.
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	if !rt.CgroupsEnabled() {
		t.Skip("cgroups unavailable here: nothing is kept")
	}
	ctx := testCtx(t)
	mustCreateSandbox(t, rt, "h", spec.Sandbox{})
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	base := fds()
	run := func(id string, command ...string) {
		t.Helper()
		cfg := ProcessConfig{Sandbox: "h", Command: command, Cgroup: "p", KeepReady: true}
		if err := rt.CreateProcess(ctx, id, cfg); err != nil {
			t.Fatal(err)
		}
		if err := rt.StartProcess(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	run("p-1", "sleep", "100")
	if rt.ProcessTreeEmpty("p-1") {
		t.Fatal("the tree of a running process is empty")
	}
	if err := rt.SignalProcess("p-1", unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.waitProcess(ctx, "p-1"); err != nil {
		t.Fatal(err)
	}
	if !rt.ProcessTreeEmpty("p-1") {
		t.Fatal("an exited process that left nothing: its tree is not empty")
	}
	kept := fds() - base
	// The ready files are the cgroup's, kept whichever instance runs.
	run("p-2", "sh", "-c", "sleep 100 & exec sleep 100") // its child outlives it
	sb, _ := rt.SandboxStatus("h")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		b, _ := os.ReadFile(sb.Cgroup + "/p/cgroup.procs")
		if len(strings.Fields(string(b))) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("p-2's child did not start: cgroup.procs %q", b)
		}
	}
	if err := rt.SignalProcess("p-2", unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.waitProcess(ctx, "p-2"); err != nil {
		t.Fatal(err)
	}
	if rt.ProcessTreeEmpty("p-2") {
		t.Fatal("an exited process whose daemon still runs: its tree is empty")
	}
	if err := rt.KillProcessTree("p-2", unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !rt.ProcessTreeEmpty("p-2") {
		t.Fatal("after the tree kill the tree is not empty")
	}
	if n := fds() - base; n != kept {
		t.Errorf("%d fds after the second instance, %d after the first: the ready files are the cgroup's", n, kept)
	}
	if kept != 2 {
		t.Logf("the kept cgroup holds %d fds (2 with cgroup2 alone, 0 where its files cannot be kept)", kept)
		if kept != 0 {
			t.Errorf("the kept cgroup holds %d fds, want 2 (or 0)", kept)
		}
	}
	if err := rt.DeleteSandbox(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	if n := fds() - base; n != 0 {
		t.Errorf("%d fds more than before the sandbox once it is deleted", n)
	}
}

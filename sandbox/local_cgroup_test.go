package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/spec"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// cgroupIn is pid's cgroup in the hierarchy whose /proc/PID/cgroup line
// has controllers ctl ("" for cgroup2).
func cgroupIn(t *testing.T, pid int, ctl string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatalf("reading the cgroup of %d: %v", pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if parts := strings.SplitN(l, ":", 3); len(parts) == 3 && parts[1] == ctl {
			return parts[2]
		}
	}
	t.Skipf("no %q hierarchy here", ctl)
	return ""
}

// pidfdAlive reports whether pidfd's process still runs.
func pidfdAlive(pidfd int) bool { return !testproc.PidfdExited(pidfd, 0) }

// The instances of one process share a kept cgroup: the second is placed
// where the first was, without a new cgroup; it cannot take the cgroup
// while the first still runs; removing the first (after the second
// started) leaves the second alone; the cgroup outlives both records and
// goes with the sandbox.
func TestKeptCgroupOutlivesItsInstances(t *testing.T) {
	testproc.NeedRoot(t)
	t.Run("host layout", func(t *testing.T) { testKeptCgroup(t, nil, "") })
	// As on a pure v1 host: the forking thread enters the v1 cgroups
	// through a placement opened for each start, and kills freeze.
	t.Run("v1 only", func(t *testing.T) { testKeptCgroup(t, &cgroups.Options{DisableV2: true}, "pids") })
}

func testKeptCgroup(t *testing.T, co *cgroups.Options, ctl string) {
	rt, err := NewRuntime(Options{
		Instance:     testInstancePrefix() + strconv.FormatInt(instanceSeq.Add(1), 10),
		HolderStderr: os.Stderr,
		Cgroups:      co,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if !rt.CgroupsEnabled() {
		t.Skip("cgroups unavailable here: nothing is kept")
	}
	mustCreateSandbox(t, rt, "h", spec.Sandbox{})
	cfg := ProcessConfig{Sandbox: "h", Command: helperArgv(), RunAs: proc.RunAs{Env: testproc.HelperEnv("daemon-and-wait")}, Cgroup: "p"}
	ctx := testCtx(t)
	if err := rt.CreateProcess(ctx, "p-1", cfg); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartProcess(ctx, "p-1"); err != nil {
		t.Fatal(err)
	}
	first, _ := rt.ProcessStatus("p-1")
	cg := cgroupIn(t, first.Pid, ctl)
	if !strings.HasSuffix(cg, "/h/p") {
		t.Fatalf("p-1 is in cgroup %q, want the kept …/h/p", cg)
	}
	if err := rt.CreateProcess(ctx, "p-2", cfg); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("a second process in the cgroup of a running one: %v, want ErrFailedPrecondition", err)
	}
	if err := rt.stopProcess(ctx, "p-1", 0); err != nil {
		t.Fatal(err)
	}
	if err := rt.CreateProcess(ctx, "p-2", cfg); err != nil {
		t.Fatalf("the next instance after the first exited: %v", err)
	}
	if err := rt.StartProcess(ctx, "p-2"); err != nil {
		t.Fatal(err)
	}
	second, _ := rt.ProcessStatus("p-2")
	if got := cgroupIn(t, second.Pid, ctl); got != cg {
		t.Fatalf("p-2 is in cgroup %q, p-1 was in %q", got, cg)
	}
	fd, err := unix.PidfdOpen(second.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	time.Sleep(100 * time.Millisecond)
	if !pidfdAlive(fd) {
		st, _ := rt.waitProcess(ctx, "p-2")
		t.Fatalf("p-2 died at once: %+v", st)
	}
	// The old record's tree is the new one's now: neither killing it nor
	// removing it may reach p-2.
	if err := rt.KillProcessTree("p-1", unix.SIGKILL); err != nil {
		t.Fatalf("KillProcessTree of the old record: %v", err)
	}
	if err := rt.RemoveProcess(ctx, "p-1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // a stray kill would have landed by now
	if !pidfdAlive(fd) {
		st, _ := rt.waitProcess(ctx, "p-2")
		t.Fatalf("p-2 was killed on behalf of p-1: %+v", st)
	}
	if err := rt.stopProcess(ctx, "p-2", 0); err != nil {
		t.Fatal(err)
	}
	if err := rt.RemoveProcess(ctx, "p-2"); err != nil {
		t.Fatal(err)
	}
	sb, _ := rt.SandboxStatus("h")
	if _, err := os.Stat(sb.Cgroup + "/p"); err != nil {
		t.Fatalf("the kept cgroup went with its last record: %v", err)
	}
	if err := rt.DeleteSandbox(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sb.Cgroup); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the sandbox's cgroup outlived it: %v", err)
	}
}

// Where no cgroup can be had, the runtime says so in one line at start-up
// and runs processes with process groups: a kept cgroup is ignored, the
// process starts and stops all the same.
func TestNoCgroupsOneLineAndProcessGroups(t *testing.T) {
	var log bytes.Buffer
	rt, err := NewRuntime(Options{
		Instance: testInstancePrefix() + "nocg",
		Logger:   zerolog.New(&log),
		Cgroups:  &cgroups.Options{Layout: &cgroups.Layout{}}, // nothing mounted
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if rt.CgroupsEnabled() {
		t.Fatal("cgroups enabled without a hierarchy")
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "cgroups unavailable") || !strings.Contains(lines[0], "process group") {
		t.Fatalf("start-up log without cgroups: %q, want one line saying process groups are used", log.String())
	}
	ctx := testCtx(t)
	mustCreateSandbox(t, rt, "h", spec.Sandbox{})
	cfg := ProcessConfig{Sandbox: "h", Command: helperArgv(), RunAs: proc.RunAs{Env: testproc.HelperEnv("sleep")}, Cgroup: "p"}
	if err := rt.CreateProcess(ctx, "p-1", cfg); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartProcess(ctx, "p-1"); err != nil {
		t.Fatal(err)
	}
	if err := rt.stopProcess(ctx, "p-1", 0); err != nil {
		t.Fatal(err)
	}
	if st, _ := rt.ProcessStatus("p-1"); st.State != StateExited || st.Signal != unix.SIGKILL {
		t.Fatalf("stopped without cgroups: %+v", st)
	}
	if len(rt.Recovered()) != 0 {
		t.Fatalf("recovered %v without cgroups", rt.Recovered())
	}
}

// Each instance in a kept cgroup has CPU figures of its own: the cgroup's
// counter, read after each exit (off the restart's path: exitFigures), is
// where the exited instance's time ends and the next one's begins. With
// NoFinalUsage the exit reads nothing: the exited instance's figure is the
// kernel's rusage, and the next one's live figure counts from the
// cgroup's start.
func TestKeptCgroupCPUIsPerInstance(t *testing.T) {
	testproc.NeedRoot(t)
	t.Run("figures read at the exit", func(t *testing.T) { testKeptCgroupCPU(t, false) })
	t.Run("NoFinalUsage", func(t *testing.T) { testKeptCgroupCPU(t, true) })
}

func testKeptCgroupCPU(t *testing.T, noFinalUsage bool) {
	rt := newTestRuntime(t)
	if !rt.CgroupsEnabled() {
		t.Skip("needs cgroups for usage figures")
	}
	mustCreateSandbox(t, rt, "k", spec.Sandbox{})
	burn := ProcessConfig{Sandbox: "k", Cgroup: "p", NoFinalUsage: noFinalUsage,
		Command: []string{"/bin/sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"}}
	if err := rt.CreateProcess(testCtx(t), "burn", burn); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartProcess(testCtx(t), "burn"); err != nil {
		t.Fatal(err)
	}
	first, err := rt.waitProcess(testCtx(t), "burn")
	if err != nil {
		t.Fatal(err)
	}
	if first.Usage.CPU < 50*time.Millisecond {
		t.Fatalf("the busy instance's CPU: %v, want at least 50ms", first.Usage.CPU)
	}
	if err := rt.RemoveProcess(testCtx(t), "burn"); err != nil {
		t.Fatal(err)
	}
	idle := ProcessConfig{Sandbox: "k", Cgroup: "p", NoFinalUsage: noFinalUsage, Command: []string{"/bin/sleep", "30"}}
	if err := rt.CreateProcess(testCtx(t), "idle", idle); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartProcess(testCtx(t), "idle"); err != nil {
		t.Fatal(err)
	}
	st, err := rt.ProcessStatus("idle")
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case !noFinalUsage && st.Usage.CPU >= first.Usage.CPU/2:
		// Without its own baseline the idle instance would show the
		// busy one's time as well.
		t.Errorf("the idle instance's CPU: %v, beside its predecessor's %v", st.Usage.CPU, first.Usage.CPU)
	case noFinalUsage && st.Usage.CPU < first.Usage.CPU/2:
		t.Errorf("without final figures the idle instance's CPU counts from the cgroup's start: %v, want about its predecessor's %v", st.Usage.CPU, first.Usage.CPU)
	}
	if err := rt.stopProcess(testCtx(t), "idle", 0); err != nil {
		t.Fatal(err)
	}
}

// RetireProcess ends a process that will not run again in one step: its
// record goes, and so does its cgroup when an rmdir shows the tree empty
// (a later process naming the kept cgroup makes it anew); a tree that
// left a daemon behind has it killed, and its cgroup goes with the
// sandbox.
func TestRetireProcessRemovesItsCgroup(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	if !rt.CgroupsEnabled() {
		t.Skip("cgroups unavailable here: nothing to remove")
	}
	ctx := testCtx(t)
	mustCreateSandbox(t, rt, "h", spec.Sandbox{})
	sb, _ := rt.SandboxStatus("h")
	start := func(id, cgroup, helper string, stdout *os.File) ProcessStatus {
		t.Helper()
		cfg := ProcessConfig{Sandbox: "h", Command: helperArgv(), RunAs: proc.RunAs{Env: testproc.HelperEnv(helper)}, Cgroup: cgroup, Stdout: stdout}
		if err := rt.CreateProcess(ctx, id, cfg); err != nil {
			t.Fatal(err)
		}
		if err := rt.StartProcess(ctx, id); err != nil {
			t.Fatal(err)
		}
		st, _ := rt.ProcessStatus(id)
		return st
	}
	endMain := func(id string) {
		t.Helper()
		if err := rt.SignalProcess(id, unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.waitProcess(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	// Nothing left: the record and the kept cgroup go.
	start("q-1", "q", "sleep", nil)
	if err := rt.RetireProcess(ctx, "q-1"); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("RetireProcess of a running process: %v, want ErrFailedPrecondition", err)
	}
	endMain("q-1")
	if err := rt.RetireProcess(ctx, "q-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.ProcessStatus("q-1"); !IsNotFound(err) {
		t.Fatalf("the retired record is still there: %v", err)
	}
	if _, err := os.Stat(sb.Cgroup + "/q"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the retired process's empty cgroup is still there: %v", err)
	}
	// A later process naming the cgroup gets it made anew.
	again := start("q-2", "q", "sleep", nil)
	if got := cgroupIn(t, again.Pid, ""); !strings.HasSuffix(got, "/h/q") {
		t.Fatalf("q-2 is in cgroup %q, want …/h/q made anew", got)
	}
	endMain("q-2")
	if err := rt.RetireProcess(ctx, "q-2"); err != nil {
		t.Fatal(err)
	}

	// A daemon left behind: killed, and the cgroup stays for the sandbox.
	// The helper prints the daemon's pid once the daemon's exec is done.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	start("d-1", "d", "daemon-and-wait", w)
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the daemon's pid: %v", err)
	}
	daemon, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("the helper printed %q, not the daemon's pid", line)
	}
	fd, err := unix.PidfdOpen(daemon, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	endMain("d-1")
	if !pidfdAlive(fd) {
		t.Fatal("the daemon died with its parent: nothing left to test")
	}
	if err := rt.RetireProcess(ctx, "d-1"); err != nil {
		t.Fatal(err)
	}
	if !testproc.PidfdExited(fd, 10*time.Second) {
		t.Fatal("the daemon the retired process left behind still runs 10 s after RetireProcess")
	}
	if _, err := rt.ProcessStatus("d-1"); !IsNotFound(err) {
		t.Fatalf("the retired record is still there: %v", err)
	}
	if err := rt.DeleteSandbox(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sb.Cgroup); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the sandbox's cgroup outlived it: %v", err)
	}
}

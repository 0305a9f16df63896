package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/internal/testfreeze"
	"github.com/podsup/podsup/sandbox"
	"github.com/podsup/podsup/sandbox/proc"
)

// Faults of the runtime end to end through `podsup up`: a sandboxed start
// that fails, a sandbox whose holder dies, a task that SIGKILL cannot end.
// Real processes, namespaces and cgroups; root only.

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates namespaces and cgroups (CI runs as root)")
	}
}

// exitsWithin waits up to d for podsup to exit and returns its exit.
func (f *upFixture) exitsWithin(t *testing.T, d time.Duration) (proc.Exit, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	e, err := f.up.p.Wait(ctx)
	return e, err == nil
}

// events is podsup's kept event history.
func (f *upFixture) events(t *testing.T) []api.Event {
	t.Helper()
	var out []api.Event
	err := f.c.Events(context.Background(), false, func(e api.Event) error {
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	return out
}

func withReasonAPI(evs []api.Event, reason string) []api.Event {
	var out []api.Event
	for _, e := range evs {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// occurrences counts events with their repeats (History keeps one entry
// per series of identical events).
func occurrences(evs []api.Event) int {
	n := 0
	for _, e := range evs {
		n += max(e.Count, 1)
	}
	return n
}

func TestUpFaultSandboxMissingCommandStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	needRoot(t)
	f := startUp(t, `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
backoff {
  initial = "100ms"
  max     = "400ms"
}
group "sb" {
  termination_grace_period = "2s"
  sandbox {}
  process "missing" {
    command = ["/nonexistent/podsup-no-such-command"]
  }
}
`)
	if !eventually(func() bool {
		_, out := f.ctl(t, "events")
		return strings.Contains(out, "Failed") && strings.Contains(out, "BackOff")
	}) {
		_, out := f.ctl(t, "events")
		t.Fatalf("the failed start never showed (Failed, then BackOff):\n%s", out)
	}
	begun := time.Now()
	if err := f.up.p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Within its grace of 2s, with slack for a loaded machine.
	e, ok := f.exitsWithin(t, 12*time.Second)
	if !ok {
		t.Fatal("podsup up did not stop on SIGTERM with a sandboxed group whose command is missing")
	}
	if e.Code() != 0 {
		t.Errorf("podsup up exited %s after SIGTERM", e)
	}
	t.Logf("stopped %s after SIGTERM", time.Since(begun).Round(time.Millisecond))
}

func TestUpFaultHolderKilledSandboxRebuilt(t *testing.T) {
	t.Parallel()
	needRoot(t)
	f := startUp(t, `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
backoff {
  initial = "100ms"
  max     = "400ms"
}
group "sb" {
  termination_grace_period = "2s"
  sandbox {
    namespaces = ["pid"]
  }
  process "app" {
    command = ["sleep", "1000"]
  }
}
`)
	old := f.waitRunning(t, "sb", "app")
	holder := holderOf(t, f.up.p.Pid())
	testproc.KillPid(t, holder)
	begun := time.Now()
	deadline := begun.Add(20 * time.Second)
	var out string
	for {
		_, out = f.ctl(t, "events")
		if p := f.pid(t, "sb", "app"); p > 0 && p != old && strings.Contains(out, "SandboxChanged") {
			break
		}
		if time.Now().After(deadline) {
			_, st := f.ctl(t, "status")
			t.Fatalf("the group did not come back within 20s of its holder's SIGKILL:\n%s\n%s", st, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(out, "it will be killed and re-created") {
		t.Errorf("SandboxChanged does not say what happens:\n%s", out)
	}
	if h := holderOf(t, f.up.p.Pid()); h == holder {
		t.Errorf("the sandbox still has the dead holder %d", holder)
	}
	_ = f.up.p.Signal(syscall.SIGTERM)
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup up: %s", e)
	}
}

func TestUpFaultFrozenStopEnds(t *testing.T) {
	t.Parallel()
	needRoot(t)
	fz := testfreeze.Root(t)
	// Leave nothing behind even if podsup could not remove its cgroups:
	// after podsup has stopped (cleanups run last-registered first) and
	// the task is thawed, a runtime of the same instance sweeps them.
	var socket string
	t.Cleanup(func() {
		if socket != "" {
			sweepInstance(t, socket)
		}
	})
	f := startUp(t, `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
backoff {
  initial = "100ms"
  max     = "400ms"
}
group "web" {
  termination_grace_period = "1s"
  sandbox {}
  process "api" {
    command = ["sleep", "1000"]
  }
}
group "other" {
  process "x" {
    command = ["sleep", "1001"]
  }
}
`)
	pid := f.waitRunning(t, "web", "api")
	f.waitRunning(t, "other", "x")
	socket = f.socket
	thaw := testfreeze.Pid(t, fz, pid)
	t.Cleanup(thaw) // before podsup is stopped
	if code, out := f.ctl(t, "stop", "web/api"); code != 0 {
		t.Fatalf("stop: %d %s", code, out)
	}
	// The kill fails (the frozen task cannot act on SIGKILL): a Warning
	// names it, and the kill is tried again on a deadline.
	var failed []api.Event
	if !eventually(func() bool {
		failed = withReasonAPI(f.events(t), "FailedKill")
		return len(failed) >= 1
	}) {
		_, out := f.ctl(t, "events")
		t.Fatalf("no FailedKill Warning for the frozen process:\n%s", out)
	}
	if e := failed[0]; e.Type != "Warning" || !strings.Contains(e.Message, strconv.Itoa(pid)) {
		t.Errorf("FailedKill does not name what survives (pid %d): %+v", pid, e)
	}
	// Meanwhile the group's worker answers and other requests are served.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	st, err := f.c.Status(ctx, "web", "")
	cancel()
	if err != nil || st.Groups[0].Phase != "Stopping" {
		t.Errorf("status of the stuck group: %v %+v", err, st)
	}
	x := f.pid(t, "other", "x")
	if code, out := f.ctl(t, "restart", "other/x"); code != 0 {
		t.Errorf("restart of another group: %d %s", code, out)
	}
	if !eventually(func() bool { p := f.pid(t, "other", "x"); return p > 0 && p != x }) {
		t.Error("another group's restart was not served")
	}
	if !eventually(func() bool { return occurrences(withReasonAPI(f.events(t), "FailedKill")) >= 2 }) {
		_, out := f.ctl(t, "events")
		t.Fatalf("the kill was not retried:\n%s", out)
	}
	// Shutdown ends even though the task survives.
	begun := time.Now()
	if err := f.up.p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.exitsWithin(t, 90*time.Second); !ok {
		t.Fatal("podsup up's shutdown did not end while a frozen task survived SIGKILL")
	}
	t.Logf("shutdown took %s with a frozen task", time.Since(begun).Round(time.Millisecond))
	thaw()
	if !eventually(func() bool { _, _, ok := procStat(pid); return !ok }) {
		t.Errorf("pid %d survived its thaw", pid)
	}
}

// holderOf finds the sandbox holder among podsup's children.
func holderOf(t *testing.T, podsup int) int {
	t.Helper()
	var found int
	if !eventually(func() bool {
		found = 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if st, ppid, ok := procStat(pid); !ok || ppid != podsup || st == "Z" {
				continue
			}
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			args := strings.Split(string(cmdline), "\x00")
			if len(args) > 1 && args[1] == sandbox.HolderArg {
				found = pid
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no sandbox holder among the children of podsup %d", podsup)
	}
	return found
}

// sweepInstance removes what a podsup on socket left in its cgroups: a
// new runtime of the same instance sweeps an earlier one's leftovers.
func sweepInstance(t *testing.T, socket string) {
	t.Helper()
	rt, err := sandbox.NewRuntime(sandbox.Options{Instance: instanceName(socket)})
	if err != nil {
		t.Errorf("sweeping podsup's cgroups: %v", err)
		return
	}
	if err := rt.Close(); err != nil {
		t.Errorf("sweeping podsup's cgroups: %v", err)
	}
}

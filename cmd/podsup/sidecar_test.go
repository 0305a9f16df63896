package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/podsup/podsup/api"
)

// sidecarConfig has a sidecar beside a long-running main process (group
// svc) and one beside a one-shot under restart policy never (group job).
// Each process appends a line to a file of the test's directory when it
// gets SIGTERM; svc's app takes half a second over it, so a sidecar
// signalled at the same time would write first.
const sidecarConfig = `
supervisor {
  socket        = "%[1]s"
  minimum_grace = "100ms"
}
backoff {
  initial = "100ms"
  max     = "400ms"
}
group "svc" {
  termination_grace_period = "20s"
  init "proxy" {
    restart_policy = "always"
    command = ["sh", "-c", "trap 'echo proxy-term >> %[2]s/svc; exit 0' TERM; while :; do sleep 0.05; done"]
  }
  process "app" {
    command = ["sh", "-c", "trap 'sleep 0.5; echo app-exit >> %[2]s/svc; exit 0' TERM; while :; do sleep 0.05; done"]
  }
}
group "job" {
  restart_policy = "never"
  init "shipper" {
    restart_policy = "always"
    command = ["sh", "-c", "trap 'echo shipper-term >> %[2]s/job; exit 0' TERM; while :; do sleep 0.05; done"]
  }
  process "work" {
    command = ["sh", "-c", "sleep 0.5; echo work-done >> %[2]s/job"]
  }
}
`

// processStatus is the named process or init of group, as status shows it.
func processStatus(t *testing.T, c *api.Client, group, name string) api.ProcessStatus {
	t.Helper()
	st, err := c.Status(context.Background(), group, "")
	if err != nil || len(st.Groups) != 1 {
		t.Fatalf("status %s: %v %+v", group, err, st)
	}
	for _, p := range append(st.Groups[0].Init, st.Groups[0].Processes...) {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no %s/%s in %+v", group, name, st)
	return api.ProcessStatus{}
}

// TestUpSidecars runs sidecars under podsup up with real processes: a
// sidecar starts before the main process and keeps running (O2, O3), is
// restarted when it dies (O3), is stopped once the one-shot beside it
// completed under restart policy never (O4), and at shutdown gets its
// stop signal only after the main process has exited (O6).
func TestUpSidecars(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := startUp(t, strings.ReplaceAll(sidecarConfig, "%[2]s", dir))
	ctx := context.Background()

	f.waitRunning(t, "svc", "app")
	proxy := processStatus(t, f.c, "svc", "proxy")
	if proxy.State != "running" || !proxy.Init || !proxy.Sidecar || proxy.Pid == 0 {
		t.Fatalf("O3: the sidecar is not running beside the app: %+v", proxy)
	}
	if code, out := f.ctl(t, "status", "svc"); code != 0 || !strings.Contains(out, "proxy (sidecar)") {
		t.Fatalf("status does not show the sidecar as one: %d\n%s", code, out)
	}
	// O2: the sidecar started before the main process.
	var order []string
	if err := f.c.Events(ctx, false, func(e api.Event) error {
		if e.Reason == "Started" && e.Group == "svc" {
			order = append(order, e.Process)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "proxy,app" {
		t.Fatalf("O2: Started events in order %v, want proxy, then app", order)
	}

	// O3: a sidecar that dies is started again; the app is untouched.
	app := f.pid(t, "svc", "app")
	if err := syscall.Kill(proxy.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool {
		p := processStatus(t, f.c, "svc", "proxy")
		return p.State == "running" && p.Pid != proxy.Pid && p.RestartCount == 1
	}) {
		t.Fatalf("O3: the sidecar was not restarted: %+v", processStatus(t, f.c, "svc", "proxy"))
	}
	if p := f.pid(t, "svc", "app"); p != app {
		t.Fatalf("the sidecar's restart touched the app: pid %d → %d", app, p)
	}

	// O4: under never, once work completed, the group completes and its
	// sidecar is stopped, not restarted.
	if !eventually(func() bool {
		st, err := f.c.Status(ctx, "job", "")
		return err == nil && len(st.Groups) == 1 && st.Groups[0].Phase == "Succeeded"
	}) {
		st, _ := f.c.Status(ctx, "job", "")
		t.Fatalf("O4: group job did not complete: %+v", st)
	}
	if sh := processStatus(t, f.c, "job", "shipper"); sh.State != "terminated" || sh.RestartCount != 0 {
		t.Fatalf("O4: shipper after the group completed: %+v", sh)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "job")); string(b) != "work-done\nshipper-term\n" {
		t.Fatalf("O4: job's file %q, want work-done, then shipper-term", b)
	}

	// O6: at shutdown, the sidecar gets SIGTERM only after the app exited.
	if code, out := f.ctl(t, "shutdown"); code != 0 {
		t.Fatalf("shutdown: %d %s", code, out)
	}
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup up after shutdown: %s", e)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "svc")); string(b) != "app-exit\nproxy-term\n" {
		t.Fatalf("O6: svc's file %q, want app-exit, then proxy-term", b)
	}
}

// O5: `podsup ready` names a running sidecar that is not ready as what
// holds its group back, and passes over a ready one.
func TestReadyNamesAnUnreadySidecar(t *testing.T) {
	t.Parallel()
	g := api.GroupStatus{Name: "svc", Phase: "Running",
		Init: []api.ProcessStatus{
			{Name: "migrate", Init: true, State: "terminated", Terminated: &api.Termination{Reason: "Completed"}},
			{Name: "proxy", Init: true, Sidecar: true, State: "running", Ready: false},
		},
		Processes: []api.ProcessStatus{{Name: "app", State: "running", Ready: true}},
	}
	if got := groupWhy(g); !strings.HasPrefix(got, "sidecar proxy: running") {
		t.Errorf("groupWhy = %q, want the unready sidecar", got)
	}
	// As the server answers a status filtered to one process: it alone,
	// under Processes.
	st := api.StatusResponse{Groups: []api.GroupStatus{{Name: "svc", Processes: []api.ProcessStatus{g.Init[1]}}}}
	if got := whatIsNotReady(st, "proxy"); len(got) != 1 || !strings.HasPrefix(got[0], "svc/proxy (running") {
		t.Errorf("ready svc/proxy: %q, want the unready sidecar", got)
	}
	g.Init[1].Ready, g.Processes[0].Ready = true, false
	if got := groupWhy(g); !strings.HasPrefix(got, "app: running") {
		t.Errorf("groupWhy = %q, want app (the sidecar is ready)", got)
	}
}

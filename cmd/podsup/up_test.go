package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
)

// upConfig is a small configuration for the end-to-end tests.
const upConfig = `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
backoff {
  initial = "100ms"
  max     = "400ms"
}
group "web" {
  termination_grace_period = "2s"
  process "api" {
    command = ["sleep", "1000"]
  }
  process "sidecar" {
    command = ["sleep", "1001"]
  }
}
group "batch" {
  process "crash" {
    command = ["sh", "-c", "exit 3"]
  }
}
`

type upFixture struct {
	dir, cfg, socket string
	up               *started
	c                *api.Client
}

func startUp(t *testing.T, config string) *upFixture {
	t.Helper()
	dir := t.TempDir()
	f := &upFixture{dir: dir, cfg: filepath.Join(dir, "podsup.hcl"), socket: filepath.Join(dir, "podsup.sock")}
	f.write(t, fmt.Sprintf(config, f.socket))
	f.up = start(t, podsupCmd(t, "up", "-f", f.cfg))
	f.c = api.NewClient(f.socket)
	if !eventually(func() bool { _, err := f.c.Version(context.Background()); return err == nil }) {
		t.Fatalf("podsup up never answered on %s: %s", f.socket, f.up.sofar(t))
	}
	return f
}

func (f *upFixture) write(t *testing.T, s string) {
	if err := os.WriteFile(f.cfg, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ctl runs a client command of the podsup binary against this podsup.
func (f *upFixture) ctl(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return runPodsup(t, append([]string{"--socket", f.socket}, args...)...)
}

func (f *upFixture) pid(t *testing.T, group, process string) int {
	st, err := f.c.Status(context.Background(), group, process)
	if api.IsNotFound(err) {
		return 0 // not (yet, or any more) there
	}
	if err != nil || len(st.Groups) != 1 || len(st.Groups[0].Processes) != 1 {
		t.Fatalf("status %s/%s: %v %+v", group, process, err, st)
	}
	p := st.Groups[0].Processes[0]
	if p.State != "running" {
		return 0
	}
	return p.Pid
}

func (f *upFixture) waitRunning(t *testing.T, group, process string) int {
	t.Helper()
	var pid int
	if !eventually(func() bool { pid = f.pid(t, group, process); return pid > 0 }) {
		t.Fatalf("%s/%s never ran", group, process)
	}
	return pid
}

func TestUpStatusEventsActionsAndShutdown(t *testing.T) {
	t.Parallel()
	f := startUp(t, upConfig)
	apiPid := f.waitRunning(t, "web", "api")

	// status: table and JSON.
	code, out := f.ctl(t, "status")
	if code != 0 || !strings.Contains(out, "GROUP") || !strings.Contains(out, "web") || !strings.Contains(out, "sidecar") {
		t.Fatalf("status: %d\n%s", code, out)
	}
	if !eventually(func() bool {
		_, out := f.ctl(t, "status", "batch/crash")
		return strings.Contains(out, "CrashLoopBackOff") && strings.Contains(out, "next start in")
	}) {
		_, out := f.ctl(t, "status")
		t.Fatalf("a crash-looping process is not shown in CrashLoopBackOff with its next start:\n%s", out)
	}
	code, out = f.ctl(t, "status", "web/api", "-o", "json")
	var st api.StatusResponse
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Groups[0].Processes[0].Pid != apiPid {
		t.Fatalf("status -o json: %d %s", code, out)
	}
	if code, out = f.ctl(t, "status", "nosuch"); code == 0 || !strings.Contains(out, `no group "nosuch"`) {
		t.Fatalf("unknown group: %d %s", code, out)
	}

	// events: kept history with BackOff.
	code, out = f.ctl(t, "events")
	if code != 0 || !strings.Contains(out, "BackOff") || !strings.Contains(out, "Started") {
		t.Fatalf("events: %d\n%s", code, out)
	}

	// restart one process: new pid, restart count +1, sidecar untouched.
	sidecar := f.pid(t, "web", "sidecar")
	if code, out = f.ctl(t, "restart", "web/api", "--grace", "1s"); code != 0 {
		t.Fatalf("restart: %d %s", code, out)
	}
	if !eventually(func() bool { p := f.pid(t, "web", "api"); return p > 0 && p != apiPid }) {
		t.Fatal("api was not restarted")
	}
	if p := f.pid(t, "web", "sidecar"); p != sidecar {
		t.Fatalf("restarting api touched sidecar: pid %d → %d", sidecar, p)
	}

	// stop and start a group.
	if code, out = f.ctl(t, "stop", "web"); code != 0 {
		t.Fatalf("stop: %d %s", code, out)
	}
	if !eventually(func() bool { return f.pid(t, "web", "sidecar") == 0 }) {
		t.Fatal("stop web left sidecar running")
	}
	if code, out = f.ctl(t, "start", "web"); code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	f.waitRunning(t, "web", "sidecar")

	// Bad requests get clear errors.
	if code, out = f.ctl(t, "restart", "web/nosuch"); code == 0 || !strings.Contains(out, "nosuch") {
		t.Fatalf("restart of an unknown process: %d %s", code, out)
	}
	if code, out = f.ctl(t, "restart", "web/api", "--grace", "soon"); code == 0 || !strings.Contains(out, `grace "soon" is not a duration`) {
		t.Fatalf("restart with a bad grace: %d %s", code, out)
	}

	// shutdown: podsup exits 0 and removes its socket.
	if code, out = f.ctl(t, "shutdown"); code != 0 {
		t.Fatalf("shutdown: %d %s", code, out)
	}
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup up after shutdown: %s", e)
	}
	if _, err := os.Stat(f.socket); !os.IsNotExist(err) {
		t.Fatal("socket left behind")
	}
}

func TestUpReloadKeepsUntouchedAndRejectsABadFile(t *testing.T) {
	t.Parallel()
	f := startUp(t, upConfig)
	web := f.waitRunning(t, "web", "api")

	// A broken file: reload fails with file:line:col, nothing changes.
	f.write(t, strings.Replace(fmt.Sprintf(upConfig, f.socket), `command = ["sh", "-c", "exit 3"]`, `command = []`, 1))
	code, out := f.ctl(t, "reload")
	if code == 0 || !strings.Contains(out, "podsup.hcl:") || !strings.Contains(out, "command") {
		t.Fatalf("bad reload: %d\n%s", code, out)
	}
	if p := f.pid(t, "web", "api"); p != web {
		t.Fatalf("a failed reload touched web/api: %d → %d", web, p)
	}

	// A good file that changes only the batch group.
	f.write(t, strings.Replace(fmt.Sprintf(upConfig, f.socket), `"exit 3"`, `"sleep 1002"`, 1))
	if code, out = f.ctl(t, "reload"); code != 0 || !strings.Contains(out, "batch") {
		t.Fatalf("reload: %d %s", code, out)
	}
	f.waitRunning(t, "batch", "crash")
	if p := f.pid(t, "web", "api"); p != web {
		t.Fatalf("reloading batch touched web/api: %d → %d", web, p)
	}

	// SIGHUP reloads too: add a group.
	f.write(t, fmt.Sprintf(upConfig, f.socket)+"\ngroup \"extra\" {\n  process \"x\" {\n    command = [\"sleep\", \"1003\"]\n  }\n}\n")
	_ = f.up.p.Signal(syscall.SIGHUP)
	f.waitRunning(t, "extra", "x")

	// SIGTERM stops everything; exit 0.
	_ = f.up.p.Signal(syscall.SIGTERM)
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup up after SIGTERM: %s", e)
	}
}

func TestUpRefusesUntrustedPeers(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: connects as another uid")
	}
	f := startUp(t, upConfig)
	// The socket is 0600: another user cannot even connect.
	st, _ := os.Stat(f.socket)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want 0600", st.Mode().Perm())
	}
	// The test binary lives in a directory only root may enter: run a copy.
	exe := filepath.Join(f.dir, "podsup")
	b, err := os.ReadFile(testExe(t))
	if err != nil || os.WriteFile(exe, b, 0o755) != nil {
		t.Fatal("cannot copy the test binary", err)
	}
	asNobody := func() (int, string) {
		c := podsupCmd(t, "status", "--socket", f.socket)
		c.Path = exe
		c.User = "nobody"
		s := start(t, c)
		out := s.rest(t)
		return s.wait(t).Code(), out
	}
	for _, d := range []string{f.dir, filepath.Dir(f.dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if code, out := asNobody(); code == 0 || !strings.Contains(out, "permission denied") {
		t.Fatalf("nobody through a 0600 socket: %d %s", code, out)
	}
	// Even with the file mode opened, SO_PEERCRED refuses: 403.
	if err := os.Chmod(f.socket, 0o666); err != nil {
		t.Fatal(err)
	}
	code, out := asNobody()
	if code == 0 || !strings.Contains(out, "uid 65534 may not use podsup's control socket") {
		t.Fatalf("nobody through an open socket: %d %s", code, out)
	}
	_ = f.up.p.Signal(syscall.SIGTERM)
	f.up.wait(t)
	if log := f.up.rest(t); !strings.Contains(log, "refused an API caller") {
		t.Fatalf("refusal not logged:\n%s", log)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.hcl")
	os.WriteFile(bad, []byte("group \"g\" {\n  process \"p\" {\n    command = []\n    stop_signal = \"SIGNOPE\"\n  }\n}\n"), 0o644)
	code, out := runPodsup(t, "validate", "-f", bad)
	if code != 1 || !strings.Contains(out, "bad.hcl:3") || !strings.Contains(out, "bad.hcl:4") {
		t.Fatalf("validate bad: %d\n%s", code, out)
	}
	good := filepath.Join("..", "..", "examples", "web.hcl")
	if code, out := runPodsup(t, "validate", "-f", good); code != 0 || !strings.Contains(out, "valid") {
		t.Fatalf("validate good: %d %s", code, out)
	}
	_ = time.Second
}

func TestUpCapturesOutputForLogs(t *testing.T) {
	t.Parallel()
	f := startUp(t, `
supervisor {
  socket = "%s"
}
backoff {
  initial = "200ms"
}
group "g" {
  process "talker" {
    command = ["sh", "-c", "echo one; echo two >&2; echo three; sleep 0.3; exit 1"]
  }
}
`)
	// Each instance prints three lines and exits; kubectl's semantics:
	// logs shows the current instance, --previous the one before.
	if !eventually(func() bool {
		_, out := f.ctl(t, "status", "g/talker", "-o", "json")
		var st api.StatusResponse
		return json.Unmarshal([]byte(out), &st) == nil && len(st.Groups) == 1 && st.Groups[0].Processes[0].RestartCount >= 1
	}) {
		t.Fatal("talker never restarted")
	}
	// stdout and stderr share one pipe: the order written is kept, and
	// every line is reported as stdout.
	code, out := f.ctl(t, "logs", "g/talker", "--previous")
	if code != 0 || out != "one\ntwo\nthree\n" {
		t.Fatalf("logs --previous: %d %q", code, out)
	}
	code, out = f.ctl(t, "logs", "g/talker", "--previous", "--tail", "2", "-o", "json")
	var l api.LogLine
	if code != 0 || strings.Count(out, "\n") != 2 || json.Unmarshal([]byte(out[:strings.IndexByte(out, '\n')]), &l) != nil ||
		l.Line != "two" || l.Stream != "stdout" {
		t.Fatalf("logs --tail 1 -o json: %d %q", code, out)
	}
	if code, out = f.ctl(t, "logs", "g/nosuch"); code == 0 || !strings.Contains(out, "no such process") {
		t.Fatalf("logs of an unknown process: %d %q", code, out)
	}
	// The output also reaches podsup's own stdout, prefixed.
	_ = f.up.p.Signal(syscall.SIGTERM)
	f.up.wait(t)
	if all := f.up.rest(t); !strings.Contains(all, "g/talker") || !strings.Contains(all, "| one") {
		t.Fatalf("podsup's own output lacks the prefixed lines:\n%s", all)
	}
}

func TestUpRecreateLeavesTheSidecarAlone(t *testing.T) {
	t.Parallel()
	f := startUp(t, upConfig)
	app := f.waitRunning(t, "web", "api")
	sidecar := f.waitRunning(t, "web", "sidecar")
	code, out := f.ctl(t, "recreate", "web", "api", "--ordered", "--wait", "--grace", "1s")
	if code != 0 || !strings.Contains(out, "Succeeded") {
		t.Fatalf("recreate --wait: %d\n%s", code, out)
	}
	st, err := f.c.Status(context.Background(), "web", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Groups[0].Processes {
		switch p.Name {
		case "api":
			if p.Pid == app || p.RestartCount != 1 {
				t.Errorf("api after recreate: pid %d (was %d), restarts %d (want 1)", p.Pid, app, p.RestartCount)
			}
		case "sidecar":
			if p.Pid != sidecar || p.RestartCount != 0 {
				t.Errorf("sidecar touched by recreate: pid %d (was %d), restarts %d", p.Pid, sidecar, p.RestartCount)
			}
		}
	}
	code, out = f.ctl(t, "recreate", "list", "-o", "json")
	var l api.RecreateList
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Recreates) != 1 || l.Recreates[0].Phase != "Completed" {
		t.Fatalf("recreate list: %d %s", code, out)
	}
	if code, out = f.ctl(t, "recreate", "web", "nosuch"); code == 0 || !strings.Contains(out, `no process "nosuch"`) {
		t.Fatalf("recreate of an unknown process: %d %s", code, out)
	}
	if code, out = f.ctl(t, "recreate", "status", "rc-999"); code == 0 {
		t.Fatalf("status of an unknown request: %d %s", code, out)
	}
}

// TestUpSandboxedServerReachableOnlyInside is the end-to-end case of a namespaced sandbox
// end to end: a server in a group with all five namespaces is probed ready
// by an exec probe that runs inside the sandbox, answers `podsup exec`, and
// cannot be reached from the host.
func TestUpSandboxedServerReachableOnlyInside(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates namespaces and cgroups (CI runs as root)")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs python3 for the HTTP server (.ci/run installs it)")
	}
	const port = "18791"
	f := startUp(t, `
supervisor {
  socket = "%s"
}
group "isolated" {
  sandbox {
    namespaces = ["pid", "mount", "uts", "ipc", "net"]
    hostname   = "isolated"
    mount {
      type   = "proc"
      target = "/proc"
    }
  }
  process "server" {
    command = ["python3", "-m", "http.server", "--bind", "127.0.0.1", "`+port+`"]
    readiness_probe {
      exec {
        command = ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:`+port+`/', timeout=2)"]
      }
      period  = "300ms"
      timeout = "10s" # python3's start-up on a loaded machine
    }
  }
}
`)
	if !eventually(func() bool {
		st, err := f.c.Status(context.Background(), "isolated", "server")
		return err == nil && st.Groups[0].Processes[0].Ready
	}) {
		_, out := f.ctl(t, "events")
		t.Fatalf("the exec probe inside the sandbox never saw the server ready:\n%s", out)
	}
	code, out := f.ctl(t, "exec", "isolated", "--", "sh", "-c", "hostname; python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:"+port+"/').status)\"")
	if code != 0 || out != "isolated\n200\n" {
		t.Fatalf("exec inside the sandbox: %d %q", code, out)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second); err == nil {
		c.Close()
		t.Fatal("the host reached a server that listens inside the sandbox's network namespace")
	}
	_ = f.up.p.Signal(syscall.SIGTERM)
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup up: %s", e)
	}
}

// A configuration without a group (an empty file: what a failed
// "podsup-kube convert > FILE" leaves) is an error at validate and at up,
// which would otherwise run nothing, forever (issue 31, item 9).
func TestValidateAndUpRefuseAConfigurationWithNoGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{"empty.hcl": "", "settings.hcl": "supervisor {\n  log_level = \"info\"\n}\n"} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"validate", "up"} {
			// runSplit: an up that took the file would run until stopped.
			code, _, stderr := runSplit(t, "--socket", filepath.Join(dir, "s.sock"), cmd, "-f", file)
			if code != 1 || !strings.Contains(stderr, name+": error: the configuration has no group") {
				t.Errorf("%s -f %s: exit %d\n%s", cmd, name, code, stderr)
			}
		}
	}
}

// podsup kube ... names podsup-kube, where the Kubernetes bridge is.
func TestKubeCommandPointsAtPodsupKube(t *testing.T) {
	t.Parallel()
	code, out := runPodsup(t, "kube", "convert", "pod.yaml")
	if code != 2 || !strings.Contains(out, `unknown command "kube"`) || !strings.Contains(out, "podsup-kube (podsup-kube convert|play|export)") {
		t.Errorf("podsup kube convert: exit %d\n%s", code, out)
	}
}

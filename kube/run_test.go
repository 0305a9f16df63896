package kube

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

func TestMain(m *testing.M) {
	stack.ReexecMain() // the test binary is its own sandbox holder
	os.Exit(m.Run())
}

// running is a converted manifest run by stack.New and Run, the library
// call podsup up makes: real processes, probes and hooks, and a sandbox
// with its namespaces and cgroups where the conversion made one.
type running struct {
	st       *stack.Stack
	sup      *supervisor.Supervisor
	events   *supervisor.Subscription
	seen     []lifecycle.Event
	instance string
}

var instances atomic.Int32

func run(t *testing.T, manifest string) *running {
	t.Helper()
	cfg, _ := convertAndParse(t, manifest, Options{})
	// K5's floor, lowered so that a probe's kill with a 1 s grace takes
	// 1 s; the manifests' own grace periods are what the tests measure.
	cfg.Supervisor.MinimumGrace = spec.Durp(100 * time.Millisecond)
	instance := fmt.Sprintf("kubetest-%d-%d", os.Getpid(), instances.Add(1))
	st, err := stack.New(*cfg, stack.Options{Instance: instance, RuntimeDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// Subscribed before Run: no event of the first start is missed.
	r := &running{st: st, sup: st.Supervisor(), events: st.Supervisor().Subscribe(), instance: instance}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := st.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() {
		stop() // ctx's end stops every group gracefully
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Errorf("the stack did not stop within 60s")
			r.sup.RequestShutdown(nil) // a second request SIGKILLs what is left (X9)
			<-done
		}
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		r.events.Close()
		left, _ := filepath.Glob("/sys/fs/cgroup/*/podsup-" + instance)
		if more, _ := filepath.Glob("/sys/fs/cgroup/podsup-" + instance); len(left)+len(more) > 0 {
			t.Errorf("cgroups left behind: %v %v", left, more)
		}
	})
	return r
}

// next is the next event, or nil once d has passed.
func (r *running) next(d time.Duration) *lifecycle.Event {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	e, err := r.events.Next(ctx)
	if err != nil {
		return nil
	}
	r.seen = append(r.seen, e)
	return &e
}

// waitFor returns the first event of process with reason whose message
// contains text, failing the test after a generous minute.
func (r *running) waitFor(t *testing.T, process, reason, text string) lifecycle.Event {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		e := r.next(time.Until(deadline))
		if e == nil {
			t.Fatalf("no %s event for %s containing %q within a minute; saw %s", reason, process, text, showEvents(r.seen))
		}
		if e.Process == process && e.Reason == reason && strings.Contains(e.Message, text) {
			return *e
		}
	}
}

// quiet fails the test if, for d, process has an event with reason whose
// message contains text: the healthy phase of a probe test.
func (r *running) quiet(t *testing.T, d time.Duration, process, reason, text string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		e := r.next(time.Until(deadline))
		if e != nil && e.Process == process && e.Reason == reason && strings.Contains(e.Message, text) {
			t.Fatalf("%s while healthy: %s %q; saw %s", process, e.Reason, e.Message, showEvents(r.seen))
		}
	}
}

// failsThenRestarts reads the events after a probe began to fail: exactly
// threshold Unhealthy events with text, then the Killing that restarts
// the process, then its start with restart count 1. beforeRestart, when
// not nil, runs at the Killing: what the next instance's probe should find
// is in place before that instance starts, however slow the machine.
func (r *running) failsThenRestarts(t *testing.T, process, text string, threshold int, beforeRestart func()) {
	t.Helper()
	r.waitFor(t, process, lifecycle.EventUnhealthy, text)
	failures := 1
	for {
		e := r.next(time.Minute)
		if e == nil {
			t.Fatalf("no Killing after %d %q failures; saw %s", failures, text, showEvents(r.seen))
		}
		if e.Process != process {
			continue
		}
		if e.Reason == lifecycle.EventUnhealthy && strings.Contains(e.Message, text) {
			failures++
			continue
		}
		if e.Reason == lifecycle.EventKilling {
			if !strings.Contains(e.Message, "will be restarted") {
				t.Errorf("Killing %q, want a restart for the failed probe", e.Message)
			}
			if beforeRestart != nil {
				beforeRestart()
			}
			break
		}
	}
	if failures != threshold {
		t.Errorf("killed after %d failures of %q, want failureThreshold %d; saw %s", failures, text, threshold, showEvents(r.seen))
	}
	if e := r.waitFor(t, process, lifecycle.EventStarted, ""); e.RestartCount != 1 {
		t.Errorf("started again with restart count %d, want 1", e.RestartCount)
	}
}

func showEvents(es []lifecycle.Event) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "\n  %s %s/%s restarts=%d: %s", e.Time.Format("15:04:05.000"), e.Process, e.Reason, e.RestartCount, e.Message)
	}
	return b.String()
}

func (r *running) status(t *testing.T, group, process string) lifecycle.ProcessStatus {
	t.Helper()
	g, ok := r.sup.Status().Group(group)
	if !ok {
		t.Fatalf("no group %s", group)
	}
	p, ok := g.Process(process)
	if !ok {
		t.Fatalf("no process %s/%s", group, process)
	}
	return p
}

// waitStatus polls the status until ok says yes, for a generous minute.
func (r *running) waitStatus(t *testing.T, group, process, what string, ok func(lifecycle.ProcessStatus) bool) lifecycle.ProcessStatus {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		p := r.status(t, group, process)
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s never %s: %+v", group, process, what, p)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// An exec liveness probe (the documentation's liveness-exec, faster):
// while its command succeeds nothing happens; once it fails
// failureThreshold times in a row the process is killed and restarted.
func TestRunConvertedExecLivenessProbe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	touch(t, filepath.Join(dir, "healthy"))
	r := run(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: liveness-exec}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: liveness
    command: ["sleep", "600"]
    livenessProbe:
      exec:
        command: ["cat", "%s/healthy"]
      periodSeconds: 1
      timeoutSeconds: 5
      failureThreshold: 2
`, dir))
	r.waitFor(t, "liveness", lifecycle.EventStarted, "")
	r.quiet(t, 3500*time.Millisecond, "liveness", lifecycle.EventUnhealthy, "")
	if n := r.status(t, "liveness-exec", "liveness").RestartCount; n != 0 {
		t.Fatalf("restart count %d while the probe passes, want 0", n)
	}
	remove(t, filepath.Join(dir, "healthy"))
	r.failsThenRestarts(t, "liveness", "Liveness probe failed", 2, nil)
}

// An httpGet liveness probe: 200 keeps the process, 404 restarts it
// after failureThreshold failures (P6). A tcpSocket startup probe holds
// the liveness probe back until the server listens (P5), and the
// readiness probe on a named port makes it ready.
func TestRunConvertedHTTPGetLivenessProbe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := freePort(t)
	touch(t, filepath.Join(dir, "healthz"))
	r := run(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: liveness-http}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: server
    command: ["python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", "%s", "%d"]
    ports:
    - {name: web, containerPort: %[2]d}
    startupProbe:
      tcpSocket: {port: %[2]d}
      periodSeconds: 1
      timeoutSeconds: 5
      failureThreshold: 60
    readinessProbe:
      httpGet: {path: /healthz, port: web}
      periodSeconds: 1
      timeoutSeconds: 5
    livenessProbe:
      httpGet: {path: /healthz, port: %[2]d}
      periodSeconds: 1
      timeoutSeconds: 5
      failureThreshold: 1
`, dir, port))
	r.waitStatus(t, "liveness-http", "server", "ready", func(p lifecycle.ProcessStatus) bool { return p.Ready })
	r.quiet(t, 3500*time.Millisecond, "server", lifecycle.EventUnhealthy, "Liveness")
	if n := r.status(t, "liveness-http", "server").RestartCount; n != 0 {
		t.Fatalf("restart count %d while the probe passes, want 0", n)
	}
	remove(t, filepath.Join(dir, "healthz"))
	r.failsThenRestarts(t, "server", "Liveness probe failed: HTTP probe failed with statuscode: 404", 1, nil)
}

// tcpServer listens on argv[1] while the file argv[2] exists, accepting
// and closing connections, then closes the socket and sleeps: a process
// whose port goes away while it lives on.
const tcpServer = `import os, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
s.settimeout(0.1)
while os.path.exists(sys.argv[2]):
    try:
        s.accept()[0].close()
    except socket.timeout:
        pass
s.close()
time.sleep(600)
`

// A tcpSocket liveness probe: a listening port keeps the process, a
// closed one restarts it after failureThreshold failures.
func TestRunConvertedTCPSocketLivenessProbe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := freePort(t)
	script, open := filepath.Join(dir, "server.py"), filepath.Join(dir, "open")
	if err := os.WriteFile(script, []byte(tcpServer), 0o644); err != nil {
		t.Fatal(err)
	}
	touch(t, open)
	r := run(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: liveness-tcp}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: server
    command: ["python3", "%s", "%d", "%s"]
    startupProbe:
      tcpSocket: {port: %[2]d}
      periodSeconds: 1
      timeoutSeconds: 5
      failureThreshold: 60
    livenessProbe:
      tcpSocket: {port: %[2]d, host: 127.0.0.1}
      periodSeconds: 1
      timeoutSeconds: 5
      failureThreshold: 2
`, script, port, open))
	r.waitStatus(t, "liveness-tcp", "server", "started", func(p lifecycle.ProcessStatus) bool { return p.Started })
	r.quiet(t, 3500*time.Millisecond, "server", lifecycle.EventUnhealthy, "Liveness")
	if n := r.status(t, "liveness-tcp", "server").RestartCount; n != 0 {
		t.Fatalf("restart count %d while the port listens, want 0", n)
	}
	remove(t, open)
	r.failsThenRestarts(t, "server", "Liveness probe failed", 2, nil)
}

// A startup probe: while it fails the process is not started (P5); after
// failureThreshold failures it is restarted (P11); once it passes the
// process is started and stays.
func TestRunConvertedStartupProbe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: startup}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: slow
    command: ["sleep", "600"]
    startupProbe:
      exec:
        command: ["test", "-e", "%s/started"]
      periodSeconds: 1
      timeoutSeconds: 5
      failureThreshold: 2
`, dir))
	r.waitFor(t, "slow", lifecycle.EventStarted, "")
	if r.status(t, "startup", "slow").Started {
		t.Errorf("started before the startup probe passed")
	}
	r.failsThenRestarts(t, "slow", "Startup probe failed", 2, func() { touch(t, filepath.Join(dir, "started")) })
	r.waitStatus(t, "startup", "slow", "started", func(p lifecycle.ProcessStatus) bool { return p.Started && p.Ready })
	r.quiet(t, 3*time.Second, "slow", lifecycle.EventKilling, "")
	if n := r.status(t, "startup", "slow").RestartCount; n != 1 {
		t.Errorf("restart count %d after the startup probe passed, want 1", n)
	}
}

// A readiness probe: ready while it passes, not ready while it fails, and
// never a restart (P12).
func TestRunConvertedReadinessProbe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flag := filepath.Join(dir, "ready")
	r := run(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: readiness}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    command: ["sleep", "600"]
    readinessProbe:
      exec:
        command: ["test", "-e", "%s"]
      periodSeconds: 1
      timeoutSeconds: 5
      failureThreshold: 1
`, flag))
	r.waitFor(t, "app", lifecycle.EventUnhealthy, "Readiness probe failed")
	if r.status(t, "readiness", "app").Ready {
		t.Fatal("ready while the readiness probe fails")
	}
	touch(t, flag)
	r.waitStatus(t, "readiness", "app", "ready", func(p lifecycle.ProcessStatus) bool { return p.Ready })
	remove(t, flag)
	r.waitStatus(t, "readiness", "app", "unready again", func(p lifecycle.ProcessStatus) bool { return !p.Ready })
	r.quiet(t, 2*time.Second, "app", lifecycle.EventKilling, "")
	if p := r.status(t, "readiness", "app"); p.RestartCount != 0 || p.State != lifecycle.StateRunning {
		t.Errorf("a failing readiness probe restarted the process: %+v", p)
	}
}

// A stop runs the preStop hook first, sends SIGTERM, and SIGKILLs a
// process that shrugs it off once terminationGracePeriodSeconds has passed,
// not before (K1, K3, K6).
func TestRunConvertedPreStopHookAndGrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const grace = 3 * time.Second
	r := run(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: grace}
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: stubborn
    command: ["sh", "-c", "trap 'echo TERM > %[1]s/term' TERM; echo up > %[1]s/up; while :; do sleep 0.1; done"]
    lifecycle:
      preStop:
        exec:
          command: ["sh", "-c", "date +%%s.%%N > %[1]s/prestop"]
`, dir))
	r.waitFor(t, "stubborn", lifecycle.EventStarted, "")
	// The trap is set once the file is there.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "up")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the process never wrote its file")
		}
	}
	if err := r.sup.Stop("grace", "stubborn", supervisor.RequestOptions{Requester: "test"}); err != nil {
		t.Fatal(err)
	}
	stopping := r.waitFor(t, "stubborn", lifecycle.EventKilling, "Stopping process stubborn")
	if !strings.Contains(stopping.Message, "grace 3s") {
		t.Errorf("Killing %q, want the manifest's grace of 3s", stopping.Message)
	}
	// The end is no event (E2): the status's Terminated says how and when.
	end := r.waitStatus(t, "grace", "stubborn", "ended", func(p lifecycle.ProcessStatus) bool {
		return p.State == lifecycle.StateTerminated && p.Terminated != nil
	}).Terminated
	if end.Signal != spec.Signal(syscall.SIGKILL) {
		t.Errorf("the process ended with %+v, want SIGKILL", end)
	}
	// Generous bounds: the grace is measured from the stop's event to the
	// exit the reaper saw.
	if took := end.FinishedAt.Sub(stopping.Time); took < grace-100*time.Millisecond || took > grace+30*time.Second {
		t.Errorf("SIGKILL %v after the stop began, want the grace period (%v)", took, grace)
	}
	if _, err := os.Stat(filepath.Join(dir, "term")); err != nil {
		t.Errorf("the process got no SIGTERM before the SIGKILL: %v", err)
	}
	// The hook ran inside the stop, before the SIGKILL (H4, K3): its
	// clock reading lies between the two events' (a second's slack for
	// date's own rounding and the noisy machine).
	b, err := os.ReadFile(filepath.Join(dir, "prestop"))
	if err != nil {
		t.Fatalf("the preStop hook did not run: %v", err)
	}
	var secs float64
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &secs); err != nil {
		t.Fatalf("the hook wrote %q: %v", b, err)
	}
	ran := time.Unix(0, int64(secs*1e9))
	if ran.Before(stopping.Time.Add(-time.Second)) || ran.After(end.FinishedAt) {
		t.Errorf("the preStop hook ran at %v, not between the stop (%v) and the SIGKILL (%v)", ran, stopping.Time, end.FinishedAt)
	}
}

// A conversion that makes a sandbox runs in it: hostname → a UTS
// namespace with that name, shareProcessNamespace → a PID namespace of
// the pod's own, resources.limits.memory → the pod cgroup's limit.
func TestRunConvertedSandboxedPod(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("sandboxes need root") // as podsup up needs it for them
	}
	dir := t.TempDir()
	r := run(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: boxed}
spec:
  hostname: kube-boxed
  shareProcessNamespace: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    command: ["sh", "-c", "hostname > %[1]s/hostname.tmp; readlink /proc/self/ns/pid >> %[1]s/hostname.tmp; mv %[1]s/hostname.tmp %[1]s/hostname; exec sleep 600"]
    resources:
      limits: {memory: 64Mi}
`, dir))
	pid := r.waitStatus(t, "boxed", "app", "running", func(p lifecycle.ProcessStatus) bool {
		return p.State == lifecycle.StateRunning && p.Pid > 0
	}).Pid
	var out []byte
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if out, err = os.ReadFile(filepath.Join(dir, "hostname")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the process never wrote its hostname")
		}
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	hostNS, _ := os.Readlink("/proc/self/ns/pid")
	if len(lines) != 2 || lines[0] != "kube-boxed" {
		t.Errorf("inside the sandbox: %q, want the hostname kube-boxed", out)
	}
	if len(lines) == 2 && (!strings.HasPrefix(lines[1], "pid:[") || lines[1] == hostNS) {
		t.Errorf("PID namespace %q inside, want one of the pod's own (the host's is %q)", lines[1], hostNS)
	}
	if limit := memoryLimit(t, pid, r.instance); limit != 64<<20 {
		t.Errorf("memory limit over process %d: %d, want 64Mi (%d)", pid, limit, 64<<20)
	}
}

// memoryLimit is the smallest memory limit set on pid's cgroup or one of
// its ancestors inside the stack's own cgroup (podsup-INSTANCE), on
// cgroup v1 or v2; 0 if none is found.
func memoryLimit(t *testing.T, pid int, instance string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	var dir, file string
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case strings.Contains(","+parts[1]+",", ",memory,"):
			dir, file = "/sys/fs/cgroup/memory"+parts[2], "memory.limit_in_bytes"
		case parts[0] == "0" && dir == "":
			dir, file = "/sys/fs/cgroup"+parts[2], "memory.max"
		}
	}
	if !strings.Contains(dir, "podsup-"+instance) {
		t.Fatalf("process %d is in memory cgroup %q, not under podsup-%s:\n%s", pid, dir, instance, b)
	}
	var min int64
	for d := dir; strings.Contains(d, "podsup-"+instance); d = filepath.Dir(d) {
		v, err := os.ReadFile(filepath.Join(d, file))
		if err != nil {
			continue
		}
		var n int64
		if _, err := fmt.Sscan(strings.TrimSpace(string(v)), &n); err == nil && (min == 0 || n < min) {
			min = n
		}
	}
	return min
}

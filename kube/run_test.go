package kube

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.HolderArg {
		os.Exit(sandbox.HolderMain()) // the test binary is its own sandbox holder
	}
	os.Exit(m.Run())
}

// running is a converted manifest under a real supervisor, as podsup up
// runs it: real processes, real probes and hooks.
type running struct {
	sup    *supervisor.Supervisor
	events *supervisor.Subscription
	seen   []supervisor.Event
}

func run(t *testing.T, manifest string) *running {
	t.Helper()
	cfg, _ := convertAndParse(t, manifest, Options{})
	cfg.Supervisor.MinimumGrace = spec.Durp(100 * time.Millisecond)
	// The supervisor over host processes (hostrt.Runtime): the one place
	// these tests choose what runs the converted configuration.
	sup, err := supervisor.New(*cfg, supervisor.Options{Runtime: hostrt.Runtime{}})
	if err != nil {
		t.Fatal(err)
	}
	r := &running{sup: sup, events: sup.Subscribe()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := sup.Run(context.Background()); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() {
		sup.RequestShutdown(nil)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Errorf("the supervisor did not stop within 60s")
		}
		r.events.Close()
	})
	return r
}

// waitFor returns the first event of process with reason whose message
// contains text, failing the test after a generous timeout.
func (r *running) waitFor(t *testing.T, process, reason, text string) supervisor.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		e, err := r.events.Next(ctx)
		if err != nil {
			t.Fatalf("no %s event for %s containing %q; saw %s", reason, process, text, show(r.seen))
		}
		r.seen = append(r.seen, e)
		if e.Process == process && e.Reason == reason && strings.Contains(e.Message, text) {
			return e
		}
	}
}

// waitReady polls the status until process is ready.
func (r *running) waitReady(t *testing.T, group, process string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if g, ok := r.sup.Status().Group(group); ok {
			if p, ok := g.Process(process); ok && p.Ready {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s/%s never became ready", group, process)
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

// An exec liveness probe (the documentation's liveness-exec, faster):
// healthy while the file exists, then killed and restarted.
func TestRunConvertedExecLivenessProbe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: liveness-exec}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: liveness
    command: ["/bin/sh", "-c", "touch %[1]s/healthy; sleep 1; rm -f %[1]s/healthy; exec sleep 600"]
    livenessProbe:
      exec:
        command: ["cat", "%[1]s/healthy"]
      periodSeconds: 1
      failureThreshold: 1
`, dir))
	r.waitFor(t, "liveness", supervisor.EventStarted, "")
	r.waitFor(t, "liveness", supervisor.EventUnhealthy, "Liveness probe failed")
	r.waitFor(t, "liveness", supervisor.EventKilling, "")
	e := r.waitFor(t, "liveness", supervisor.EventStarted, "")
	if e.RestartCount < 1 {
		t.Errorf("started again with restart count %d, want at least 1", e.RestartCount)
	}
}

// httpGet probes: readiness on a path that answers 200 makes the process
// ready; liveness on one that answers 404 restarts it.
func TestRunConvertedHTTPProbes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := freePort(t)
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: http}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: server
    command: ["python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", "%s", "%d"]
    ports:
    - {name: web, containerPort: %[2]d}
    readinessProbe:
      httpGet: {path: /index.html, port: web}
      periodSeconds: 1
    livenessProbe:
      httpGet: {path: /missing, port: %[2]d}
      initialDelaySeconds: 2
      periodSeconds: 1
      failureThreshold: 2
`, dir, port))
	r.waitReady(t, "http", "server")
	r.waitFor(t, "server", supervisor.EventUnhealthy, "404")
	e := r.waitFor(t, "server", supervisor.EventStarted, "")
	for e.RestartCount < 1 {
		e = r.waitFor(t, "server", supervisor.EventStarted, "")
	}
}

// A tcpSocket readiness probe fails while nothing listens and passes once
// the server is up; the preStop hook runs on the way down.
func TestRunConvertedTCPProbeAndPreStopHook(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := freePort(t)
	r := run(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: tcp}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: server
    command: ["sh", "-c", "sleep 1; exec python3 -m http.server --bind 127.0.0.1 --directory %[1]s %[2]d"]
    readinessProbe:
      tcpSocket: {port: %[2]d}
      periodSeconds: 1
    lifecycle:
      preStop:
        exec:
          command: ["touch", "%[1]s/prestop"]
`, dir, port))
	r.waitFor(t, "server", supervisor.EventUnhealthy, "Readiness probe failed")
	r.waitReady(t, "tcp", "server")
	if err := r.sup.Stop("tcp", "server", supervisor.RequestOptions{Requester: "test"}); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "server", supervisor.EventExited, "")
	if _, err := os.Stat(filepath.Join(dir, "prestop")); err != nil {
		t.Errorf("the preStop hook did not run before the stop: %v", err)
	}
}

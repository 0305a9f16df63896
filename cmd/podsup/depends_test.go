package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
)

// Start and stop order (docs/semantics.md W1–W9) through podsup up, with
// real processes; the events stream tells the order.

// eventLog follows podsup's events until the stream ends (podsup exits)
// or the test does.
type eventLog struct {
	mu   sync.Mutex
	evs  []api.Event
	done chan struct{}
}

func followEvents(t *testing.T, c *api.Client) *eventLog {
	t.Helper()
	l := &eventLog{done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); <-l.done })
	go func() {
		defer close(l.done)
		_ = c.Events(ctx, true, func(e api.Event) error {
			l.mu.Lock()
			l.evs = append(l.evs, e)
			l.mu.Unlock()
			return nil
		})
	}()
	return l
}

func (l *eventLog) all() []api.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]api.Event(nil), l.evs...)
}

// find returns the first event of process (group/process) with reason.
func (l *eventLog) find(group, process, reason string) (api.Event, bool) {
	for _, e := range l.all() {
		if e.Group == group && e.Process == process && e.Reason == reason {
			return e, true
		}
	}
	return api.Event{}, false
}

func (l *eventLog) dump() string {
	var b strings.Builder
	for _, e := range l.all() {
		fmt.Fprintf(&b, "%d %s %s/%s %s: %s\n", e.Seq, e.Time.Format("15:04:05.000"), e.Group, e.Process, e.Reason, e.Message)
	}
	return b.String()
}

func TestUpDependsOnReady(t *testing.T) {
	t.Parallel()
	// W1, W3: api waits for db ready (a readiness probe turns true once
	// the test creates its file) and starts after db's Ready event;
	// status, wait and health say what is going on meanwhile. The test,
	// not a sleep, decides when db gets ready: its checks of the waiting
	// state hold however slowly the commands run.
	flag := filepath.Join(t.TempDir(), "db-ready")
	f := startUp(t, `
supervisor {
  socket = "%s"
}
group "g" {
  process "api" {
    command = ["sleep", "1000"]
    depends_on "db" { condition = "ready" }
  }
  process "db" {
    command = ["sleep", "1000"]
    readiness_probe {
      exec { command = ["test", "-f", "`+flag+`"] }
      period = "100ms"
    }
  }
}
`)
	log := followEvents(t, f.c)
	if code, out := f.ctl(t, "status", "g/api"); code != 0 || !strings.Contains(out, "waiting for db ready") {
		t.Errorf("W3: status of a waiting api: %d\n%s", code, out)
	}
	if code, out := f.ctl(t, "health"); code != 1 || !strings.Contains(out, "not ready") {
		t.Errorf("health while api waits: %d %q, want 1", code, out)
	}
	if code, out := f.ctl(t, "wait", "g/api", "--for", "started", "--timeout", "200ms"); code != 1 || !strings.Contains(out, "timed out") {
		t.Errorf("wait that times out: %d %q, want 1", code, out)
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := f.ctl(t, "wait", "g", "--for", "ready", "--timeout", "30s"); code != 0 || !strings.Contains(out, "g ready") {
		t.Fatalf("wait g ready: %d %q\n%s", code, out, log.dump())
	}
	if code, out := f.ctl(t, "health"); code != 0 {
		t.Errorf("health once ready: %d %q", code, out)
	}
	if code, _ := f.ctl(t, "ready"); code != 0 {
		t.Errorf("ready (health's alias) once ready: %d", code)
	}
	if code, out := f.ctl(t, "wait", "--for", "ready", "--timeout", "0"); code != 0 {
		t.Errorf("wait --timeout 0 when met: %d %q", code, out)
	}
	var ready, started, waiting api.Event
	if !eventually(func() bool {
		var ok1, ok2, ok3 bool
		ready, ok1 = log.find("g", "db", "Ready")
		started, ok2 = log.find("g", "api", "Started")
		waiting, ok3 = log.find("g", "api", "Waiting")
		return ok1 && ok2 && ok3
	}) {
		t.Fatalf("missing events:\n%s", log.dump())
	}
	if !(waiting.Seq < ready.Seq && ready.Seq < started.Seq) {
		t.Errorf("W1: want api Waiting < db Ready < api Started:\n%s", log.dump())
	}
	gap := started.Time.Sub(ready.Time)
	t.Logf("api Started %s after db's Ready event", gap)
	if gap < 0 || gap > 5*time.Second { // generous: a noisy machine
		t.Errorf("api started %s after db's Ready", gap)
	}
	if _, ok := log.find("g", "api", "DependenciesMet"); !ok {
		t.Errorf("W3: no DependenciesMet event:\n%s", log.dump())
	}
	if code, _ := f.ctl(t, "wait", "g/api", "--for", "bogus"); code == 0 {
		t.Error("wait --for bogus exited 0")
	}
	f.ctl(t, "shutdown")
	f.up.wait(t)
}

func TestUpDependsOnCompleted(t *testing.T) {
	t.Parallel()
	// W4: a completed dependency gates until exit 0; one that fails for
	// good blocks its dependent, with a DependencyFailed event.
	f := startUp(t, `
supervisor {
  socket = "%s"
}
group "ok" {
  process "migrate" {
    command        = ["sh", "-c", "sleep 0.5"]
    restart_policy = "never"
  }
  process "api" {
    command = ["sleep", "1000"]
    depends_on "migrate" { condition = "completed" }
  }
}
group "bad" {
  process "migrate" {
    command        = ["sh", "-c", "exit 3"]
    restart_policy = "never"
  }
  process "api" {
    command = ["sleep", "1000"]
    depends_on "migrate" { condition = "completed" }
  }
}
group "slow" {
  process "db" {
    command = ["sleep", "1000"]
    readiness_probe {
      exec { command = ["false"] }
      period = "100ms"
    }
  }
  process "api" {
    command        = ["sleep", "1000"]
    restart_policy = "never"
    depends_on "db" {
      condition = "ready"
      timeout   = "300ms"
    }
  }
}
`)
	log := followEvents(t, f.c)
	if code, out := f.ctl(t, "wait", "ok/api", "--for", "started", "--timeout", "30s"); code != 0 {
		t.Fatalf("wait ok/api started: %d %q\n%s", code, out, log.dump())
	}
	if code, out := f.ctl(t, "wait", "ok/migrate", "--for", "completed", "--timeout", "30s"); code != 0 {
		t.Errorf("wait ok/migrate completed: %d %q", code, out)
	}
	var failed api.Event
	if !eventually(func() bool { var ok bool; failed, ok = log.find("bad", "api", "DependencyFailed"); return ok }) {
		t.Fatalf("W4: no DependencyFailed for bad/api:\n%s", log.dump())
	}
	if !strings.Contains(failed.Message, "migrate exited with code 3") || failed.Type != "Warning" {
		t.Errorf("W4: %+v", failed)
	}
	// E2: an exit is no event; migrate's end is in its status.
	st, err := f.c.Status(context.Background(), "ok", "migrate")
	if err != nil || st.Groups[0].Processes[0].Terminated == nil || st.Groups[0].Processes[0].Terminated.FinishedAt == nil {
		t.Fatalf("status ok/migrate: %+v %v", st, err)
	}
	finished := *st.Groups[0].Processes[0].Terminated.FinishedAt
	if started, _ := log.find("ok", "api", "Started"); started.Time.Before(finished) {
		t.Errorf("W4: ok/api started at %s, before ok/migrate completed at %s:\n%s", started.Time, finished, log.dump())
	}
	if _, ok := log.find("bad", "api", "Started"); ok {
		t.Errorf("W4: bad/api started:\n%s", log.dump())
	}
	if code, out := f.ctl(t, "status", "bad/api"); !strings.Contains(out, "waiting for migrate completed") {
		t.Errorf("status bad/api: %d %q", code, out)
	}
	if code, out := f.ctl(t, "describe", "bad/api"); code != 0 || !strings.Contains(out, "migrate completed") || !strings.Contains(out, "waiting for migrate completed") || !strings.Contains(out, "DependencyFailed") {
		t.Errorf("W3: describe bad/api: %d\n%s", code, out)
	}
	// W5: the wait's timeout fails the process; under never, for good.
	var timedOut api.Event
	if !eventually(func() bool { var ok bool; timedOut, ok = log.find("slow", "api", "DependencyTimeout"); return ok }) {
		t.Fatalf("W5: no DependencyTimeout for slow/api:\n%s", log.dump())
	}
	if waited, _ := log.find("slow", "api", "Waiting"); timedOut.Time.Sub(waited.Time) < 300*time.Millisecond {
		t.Errorf("W5: timed out %s after the wait began, before its 300ms", timedOut.Time.Sub(waited.Time))
	}
	if code, out := f.ctl(t, "status", "slow/api"); !strings.Contains(out, "terminated: DependencyTimeout") {
		t.Errorf("W5: status slow/api: %d %q", code, out)
	}
	if code, _ := f.ctl(t, "health", "ok"); code != 0 {
		t.Errorf("health ok: %d", code)
	}
	if code, _ := f.ctl(t, "health"); code != 1 {
		t.Errorf("health with bad/api blocked: %d, want 1", code)
	}
	f.ctl(t, "shutdown")
	f.up.wait(t)
}

func TestUpRefusesADependencyCycle(t *testing.T) {
	t.Parallel()
	// W2: validate and up refuse a cycle with file:line:col, naming it.
	file := filepath.Join(t.TempDir(), "cycle.hcl")
	src := `group "g" {
  process "a" {
    command = ["sleep", "1"]
    depends_on "b" {}
  }
  process "b" {
    command = ["sleep", "1"]
    depends_on "a" { condition = "ready" }
  }
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"validate", "-f", file}, {"up", "-f", file, "--socket", filepath.Join(t.TempDir(), "s.sock")}} {
		code, out := runPodsup(t, args...)
		if code == 0 || !strings.Contains(out, file+":4:5") || !strings.Contains(out, "cycle: a -> b -> a") {
			t.Errorf("podsup %s: %d\n%s", args[0], code, out)
		}
	}
}

func TestUpShutdownStopsAChainInReverse(t *testing.T) {
	t.Parallel()
	// W8: c depends on b, b on a, and group edge on group chain:
	// podsup shutdown, and SIGTERM alike, stop edge, then c, b, a, each
	// after the one before exited.
	for _, how := range []string{"shutdown", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			stopChainInReverse(t, how)
		})
	}
}

// stopChainInReverse runs the chain, each process writing when it got
// its stop signal (the time, in ns) to a file of its name, and checks
// that each Killing came after what depends on it had exited (E2: an exit
// is no event).
func stopChainInReverse(t *testing.T, how string) {
	dir := t.TempDir()
	cmd := func(name string) string {
		return fmt.Sprintf(`["sh", "-c", "trap 'date +%%%%s%%%%N > %s/%s; exit 0' TERM; sleep 1000 & wait"]`, dir, name)
	}
	f := startUp(t, `
supervisor {
  socket = "%s"
}
group "chain" {
  process "a" {
    command = `+cmd("a")+`
  }
  process "b" {
    command = `+cmd("b")+`
    depends_on "a" {}
  }
  process "c" {
    command = `+cmd("c")+`
    depends_on "b" {}
  }
}
group "edge" {
  depends_on "chain" { condition = "started" }
  process "proxy" {
    command = `+cmd("proxy")+`
  }
}
`)
	log := followEvents(t, f.c)
	if code, out := f.ctl(t, "wait", "--for", "started", "--timeout", "30s"); code != 0 {
		t.Fatalf("wait started: %d %q", code, out)
	}
	if how == "SIGTERM" {
		_ = f.up.p.Signal(syscall.SIGTERM)
	} else if code, out := f.ctl(t, "shutdown"); code != 0 {
		t.Fatalf("shutdown: %d %s", code, out)
	}
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup up after %s: %s", how, e)
	}
	<-log.done // the stream ends with podsup
	termAt := func(name string) time.Time {
		b, err := os.ReadFile(filepath.Join(dir, name))
		ns, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || perr != nil {
			t.Fatalf("%s wrote no stop time: %v %v", name, err, perr)
		}
		return time.Unix(0, ns)
	}
	var order []string
	for _, e := range log.all() {
		if e.Reason != "Killing" {
			continue
		}
		order = append(order, e.Process)
		for _, dep := range map[string][]string{"c": {"proxy"}, "b": {"c"}, "a": {"b"}}[e.Process] {
			if at := termAt(dep); !e.Time.After(at) {
				t.Errorf("W8: %s was stopped at %s, before %s had its stop signal (%s)", e.Process, e.Time.Format("15:04:05.000000"), dep, at.Format("15:04:05.000000"))
			}
		}
	}
	if got := strings.Join(order, " "); got != "proxy c b a" {
		t.Errorf("W8: stop order %q, want \"proxy c b a\":\n%s", got, log.dump())
	}
}

package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

func configOf(groups ...spec.Group) spec.Config {
	return spec.Config{Groups: groups}
}

func TestWorkerTimelineT1ExactTimers(t *testing.T) {
	// T1 and X3 through the worker and its one timer: the restarts land at
	// exactly F + back-off on the injected clock, never early.
	f := startFake(t, configOf(oneProcess(spec.RestartAlways)), constant(simRun{Code: 1}))
	f.advanceTo(1300 * time.Second)
	assertTimes(t, "T1 starts through the worker", f.rt.startsOf("app"), secs(0, 0, 10, 30, 70, 150, 310, 610, 910, 1210))
	f.shutdown()
}

func TestWorkerTimelineT6ScaledRun500ms(t *testing.T) {
	cfg := configOf(oneProcess(spec.RestartAlways))
	cfg.Backoff = scaled
	f := startFake(t, cfg, constant(simRun{RunFor: 500 * time.Millisecond, Code: 1}))
	f.advanceTo(9 * time.Second)
	assertTimes(t, "T6 scaled-run-500ms", f.rt.startsOf("app"), secs(0, 0.5, 1.1, 1.8, 2.7, 4.0, 6.1, 8.2))
	f.shutdown()
}

func TestWorkerStatusAndEvents(t *testing.T) {
	f := startFake(t, configOf(oneProcess(spec.RestartAlways)), constant(simRun{Code: 1}))
	sub := f.sub
	f.advanceTo(5 * time.Second)
	st, ok := f.sup.Status().Group("g")
	if !ok {
		t.Fatal("no status for group g")
	}
	ps, _ := st.Process("app")
	if ps.State != lifecycle.StateWaiting || ps.Reason != lifecycle.ReasonCrashLoopBackOff || ps.NextStartAt.Sub(clock.Epoch) != 10*time.Second {
		t.Errorf("X3: status %+v", ps)
	}
	// Snapshots are copies: changing one changes nothing else.
	ps.LastTermination.ExitCode = 99
	again, _ := f.sup.Status().Groups[0].Process("app")
	if again.LastTermination.ExitCode != 1 {
		t.Error("Status must return immutable copies")
	}
	f.shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var reasons []string
	var last uint64
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("events: %v after %v", err, reasons)
		}
		if e.Seq <= last {
			t.Errorf("events out of order: %d after %d", e.Seq, last)
		}
		last = e.Seq
		reasons = append(reasons, e.Reason)
		if len(reasons) == 5 {
			break
		}
	}
	want := []string{lifecycle.EventCreated, lifecycle.EventStarted, lifecycle.EventCreated, lifecycle.EventStarted, lifecycle.EventBackOff} // E1, E2
	for i := range want {
		if reasons[i] != want[i] {
			t.Fatalf("event order %v, want %v", reasons, want)
		}
	}
}

func TestSubscriberDropsOldest(t *testing.T) {
	bus := newEventBus(zerologNop(), 3)
	sub := bus.subscribe()
	for i := 0; i < 10; i++ {
		bus.publish(lifecycle.Event{Reason: "x"})
	}
	if sub.Dropped() != 7 {
		t.Errorf("dropped %d, want 7", sub.Dropped())
	}
	e, _ := sub.Next(context.Background())
	if e.Seq != 8 {
		t.Errorf("oldest kept is %d, want 8", e.Seq)
	}
	sub.Close()
	if _, err := sub.Next(context.Background()); !errors.Is(err, ErrSubscriptionClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func TestShutdownX9AndSecondEscalates(t *testing.T) {
	g := oneProcess(spec.RestartAlways)
	g.Processes = append(g.Processes, spec.Process{Name: "b", Command: []string{"x"}})
	g2 := oneProcess(spec.RestartAlways)
	g2.Name = "h"
	f := startFake(t, configOf(g, g2), constant(simRun{RunFor: -1, IgnoreTerm: true}))
	f.advanceTo(time.Second)
	f.sup.RequestShutdown(nil)
	f.advanceTo(2 * time.Second)
	for _, gs := range f.sup.Status().Groups {
		if gs.Phase != lifecycle.PhaseStopping {
			t.Errorf("X9: group %s phase %s, want Stopping (all groups in parallel)", gs.Name, gs.Phase)
		}
	}
	f.sup.RequestShutdown(nil) // X9: the second request skips to SIGKILL
	f.settle()
	select {
	case res := <-f.res:
		if res.ExitCode != 0 || res.Critical != nil {
			t.Errorf("X9: result %+v, want exit code 0", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("X9: Run did not return after the second shutdown")
	}
	if f.clock.Now().Sub(clock.Epoch) != 2*time.Second {
		t.Errorf("escalation must not wait for the grace")
	}
	if err := f.sup.Start("g", "", RequestOptions{}); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("start after shutdown: %v", err)
	}
}

func TestCriticalExitEndsRun(t *testing.T) {
	crit := oneProcess(spec.RestartNever)
	crit.Processes[0].Critical = true
	other := oneProcess(spec.RestartAlways)
	other.Name = "other"
	f := startFake(t, configOf(crit, other), func(p string, n int) simRun {
		return simRun{RunFor: time.Second, Code: 42}
	})
	f.advanceTo(3 * time.Second)
	select {
	case res := <-f.res:
		if res.ExitCode != 42 || res.Critical == nil || res.Critical.Process != "app" {
			t.Errorf("X11: result %+v", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("X11: Run did not return")
	}
}

func TestRequestErrors(t *testing.T) {
	sup, err := New(configOf(oneProcess(spec.RestartAlways)), Options{Clock: clock.NewFake(clock.Epoch), Runtime: newFakeRuntime(clock.NewFake(clock.Epoch), constant(simRun{}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Stop("nope", "", RequestOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown group: %v", err)
	}
	if err := sup.Stop("g", "nope", RequestOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown process: %v", err)
	}
	if _, err := New(spec.Config{Groups: []spec.Group{{Name: "bad name!"}}}, Options{}); err == nil {
		t.Error("New must validate the configuration")
	}
}

func TestProbeResultThroughTheAPI(t *testing.T) {
	// R4, K1.2 via the public seam: a liveness failure kills and restarts.
	g := oneProcess(spec.RestartAlways)
	g.Processes[0].LivenessProbe = &spec.Probe{
		Handler:                spec.Handler{Exec: &spec.ExecAction{Command: []string{"x"}}},
		TerminationGracePeriod: spec.Durp(3 * time.Second),
	}
	f := startFake(t, configOf(g), constant(simRun{RunFor: -1, IgnoreTerm: true}))
	f.advanceTo(time.Second)
	p, _ := f.sup.Status().Groups[0].Process("app")
	if err := f.sup.ProbeResult("g", p.InstanceID, spec.Liveness, false, "exit 1"); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(10 * time.Second)
	assertTimes(t, "R4 starts", f.rt.startsOf("app"), secs(0, 4))
	if t.Failed() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for {
			e, err := f.sub.Next(ctx)
			if err != nil {
				break
			}
			t.Logf("%s %s %s", e.Time.Sub(clock.Epoch), e.Reason, e.Message)
		}
	}
	f.shutdown()
}

func TestEventsAreStructuredLogLines(t *testing.T) {
	// Each event is one JSON line (log_format = json) with its fields.
	var buf bytes.Buffer
	fc := clock.NewFake(clock.Epoch)
	sup, err := New(configOf(oneProcess(spec.RestartNever)), Options{
		Clock: fc, Logger: zerolog.New(&buf), Runtime: newFakeRuntime(fc, constant(simRun{RunFor: -1})),
	})
	if err != nil {
		t.Fatal(err)
	}
	sub := sup.Subscribe()
	defer sub.Close()
	done := make(chan struct{})
	go func() {
		_, _ = sup.Run(context.Background())
		close(done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for { // Created (E1), then Started, which has a pid
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e.Reason == lifecycle.EventStarted {
			break
		}
	}
	sup.RequestShutdown(nil)
	<-done
	var line string
	var m map[string]any
	for _, l := range strings.Split(buf.String(), "\n") {
		m = nil
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		if line = l; m["event"] == lifecycle.EventStarted {
			break
		}
	}
	for _, k := range []string{"event", "group", "process", "instance", "restart_count", "pid", "seq", "event_time", "message", "level"} {
		if _, ok := m[k]; !ok {
			t.Errorf("log line lacks %q: %s", k, line)
		}
	}
	if m["event"] != lifecycle.EventStarted || m["group"] != "g" || m["process"] != "app" {
		t.Errorf("log line %s", line)
	}
}

// lockedBuffer is a bytes.Buffer for a logger written from several
// goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestExitsAreLoggedNotPublished(t *testing.T) {
	// E2: an exit is no event, but podsup's own log says how it ended.
	var buf lockedBuffer
	rt := newFakeRuntime(clock.NewFake(clock.Epoch), constant(simRun{RunFor: time.Second, Code: 3}))
	sup, err := New(configOf(oneProcess(spec.RestartNever)), Options{Clock: rt.clock, Runtime: rt, Logger: zerolog.New(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRun{t: t, clock: rt.clock, rt: rt, sup: sup, sub: sup.Subscribe(), res: make(chan Result, 1)}
	t.Cleanup(f.sub.Close)
	go func() {
		res, _ := sup.Run(context.Background())
		f.res <- res
	}()
	f.advanceTo(2 * time.Second)
	f.shutdown()
	var exits []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		if _, isEvent := m["event"]; isEvent && (m["event"] == "Exited" || m["event"] == "Completed") {
			t.Errorf("E2: an exit was published as an event: %s", l)
		}
		if m["message"] == "process exited" {
			exits = append(exits, m)
		}
	}
	if len(exits) != 1 || exits[0]["process"] != "app" || exits[0]["exit_code"] != float64(3) || exits[0]["level"] != "warn" || exits[0]["group"] != "g" {
		t.Errorf("E2: exit log lines %v, want one warning for app with exit code 3", exits)
	}
}

// While a group shuts down, its worker holds its status and events back
// for at most shutdownPublishLag so that one publication covers several
// exits; what it holds comes out on its own, with no further input and
// no barrier: here a stops at once, b ignores SIGTERM and the fake clock
// stands still, so nothing but the held publication's timer can show a
// terminated.
func TestShutdownPublishesHeldStatusOnItsOwn(t *testing.T) {
	g := oneProcess(spec.RestartAlways)
	g.Processes = []spec.Process{{Name: "a", Command: []string{"x"}}, {Name: "b", Command: []string{"x"}}}
	f := startFake(t, configOf(g), func(name string, _ int) simRun {
		return simRun{RunFor: -1, IgnoreTerm: name == "b"}
	})
	f.advanceTo(time.Second)
	f.sup.RequestShutdown(nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		gs, _ := f.sup.Status().Group(g.Name)
		a, _ := gs.Process("a")
		if a.State == lifecycle.StateTerminated {
			if b, _ := gs.Process("b"); b.State != lifecycle.StateRunning || gs.Phase != lifecycle.PhaseStopping {
				t.Fatalf("b %s, group %s: want b still running and the group stopping", b.State, gs.Phase)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a's exit in the shutdown was never published: a is %s", a.State)
		}
		time.Sleep(time.Millisecond)
	}
	f.shutdown()
}

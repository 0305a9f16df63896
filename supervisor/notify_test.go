package supervisor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// A process with a readiness protocol is neither ready nor started until
// it says so (READY=1, or a newline on its fd), then both through the
// probe seam; a STATUS= line shows in its status and is forgotten with
// the instance.
func TestReadinessProtocolHoldsReadyAndStarted(t *testing.T) {
	t.Parallel()
	g := oneProcess(spec.RestartAlways)
	g.Processes[0].Readiness = "notify"
	f := startFake(t, spec.Config{Groups: []spec.Group{g}}, constant(simRun{RunFor: -1}))
	f.settle()
	ps := f.status(t)
	if ps.State != lifecycle.StateRunning || ps.Ready || ps.Started {
		t.Fatalf("before READY=1: %+v, want running, not ready, not started", ps)
	}
	id := ps.InstanceID
	_ = f.sup.ProbeResult(g.Name, id, spec.Startup, true, "READY=1")
	_ = f.sup.ProbeResult(g.Name, id, spec.Readiness, true, "READY=1")
	_ = f.sup.ReportStatus(g.Name, id, "serving 3 clients")
	f.settle()
	ps = f.status(t)
	if !ps.Ready || !ps.Started || ps.StatusText != "serving 3 clients" {
		t.Fatalf("after READY=1: %+v, want ready, started, status line", ps)
	}
	_ = f.sup.Restart(g.Name, "", RequestOptions{})
	f.advanceTo(5 * time.Second)
	ps = f.status(t)
	if ps.InstanceID == id || ps.Ready || ps.StatusText != "" {
		t.Fatalf("new instance: %+v, want a fresh, unready instance without the old status line", ps)
	}
	// A late line from the old instance is dropped.
	_ = f.sup.ReportStatus(g.Name, id, "stale")
	f.settle()
	if ps := f.status(t); ps.StatusText != "" {
		t.Fatalf("stale status line applied: %q", ps.StatusText)
	}
	if err := f.sup.ReportStatus("nope", id, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReportStatus to an unknown group: %v", err)
	}
	f.shutdown()
}

func (f *fakeRun) status(t *testing.T) lifecycle.ProcessStatus {
	t.Helper()
	st := f.sup.Status()
	if len(st.Groups) != 1 || len(st.Groups[0].Processes) != 1 {
		t.Fatalf("status %+v", st)
	}
	return st.Groups[0].Processes[0]
}

// NotifyStatus tells a watcher about new snapshots, coalescing.
func TestNotifyStatus(t *testing.T) {
	t.Parallel()
	g := oneProcess(spec.RestartAlways)
	g.Processes[0].Readiness = "fd:3"
	fc := clock.NewFake(clock.Epoch)
	sup, err := New(spec.Config{Groups: []spec.Group{g}}, Options{Clock: fc, Runtime: newFakeRuntime(fc, constant(simRun{RunFor: -1}))})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 1)
	stop := sup.NotifyStatus(ch)
	done := make(chan struct{})
	go func() { _, _ = sup.Run(context.Background()); close(done) }()
	waitReady := func() bool {
		for {
			select {
			case <-ch:
				if ps := sup.Status().Groups[0].Processes[0]; ps.Ready {
					return true
				}
			case <-time.After(10 * time.Second):
				return false
			}
		}
	}
	for sup.Status().Groups[0].Processes[0].State != lifecycle.StateRunning {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("no status notice for the start")
		}
	}
	// As package notify reports the newline of a process without a
	// startup probe: started, then ready (S3: never ready before started).
	id := sup.Status().Groups[0].Processes[0].InstanceID
	_ = sup.ProbeResult(g.Name, id, spec.Startup, true, "newline on fd 3")
	_ = sup.ProbeResult(g.Name, id, spec.Readiness, true, "newline on fd 3")
	if !waitReady() {
		t.Fatal("no status notice for readiness")
	}
	stop()
	sup.RequestShutdown(nil)
	sup.RequestShutdown(nil)
	<-done
	select {
	case <-ch:
		t.Fatal("a notice after stop")
	default:
	}
}

// blockingRuntime blocks every Start until released: a wedged worker.
type blockingRuntime struct {
	fakeRuntime
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (r *blockingRuntime) Start(ctx context.Context, req StartRequest) (Instance, error) {
	r.once.Do(func() { close(r.entered) })
	<-r.release
	return r.fakeRuntime.Start(ctx, req)
}

// Ping proves the workers' loops are alive: it answers while they are
// idle and times out while one is stuck in a Start (the first group's
// start blocks; the other group's worker is fine).
func TestPingNeedsEveryWorker(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(clock.Epoch)
	rt := &blockingRuntime{fakeRuntime: *newFakeRuntime(fc, constant(simRun{RunFor: -1})),
		entered: make(chan struct{}), release: make(chan struct{})}
	a, b := oneProcess(spec.RestartAlways), oneProcess(spec.RestartAlways)
	a.Name, b.Name = "a", "b"
	cfg := spec.Config{Groups: []spec.Group{a, b}}
	sup, err := New(cfg, Options{Clock: fc, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Ping(context.Background()); err != nil {
		t.Fatalf("Ping before Run: %v", err)
	}
	done := make(chan struct{})
	go func() { _, _ = sup.Run(context.Background()); close(done) }()
	<-rt.entered
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := sup.Ping(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ping with a wedged worker: %v, want a deadline error", err)
	}
	close(rt.release)
	if err := sup.Ping(context.Background()); err != nil {
		t.Fatalf("Ping after the worker came back: %v", err)
	}
	select {
	case <-sup.Stopping():
		t.Fatal("Stopping closed before a shutdown")
	default:
	}
	sup.RequestShutdown(nil)
	<-sup.Stopping()
	sup.RequestShutdown(nil) // escalate: SIGKILL ends the fake instances at once
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end")
	}
	if err := sup.Ping(context.Background()); err != nil {
		t.Fatalf("Ping after Run: %v", err)
	}
}

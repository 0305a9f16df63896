package supervisor

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Faults of the runtime on the fake clock: a start that hangs, a tree
// that survives SIGKILL.

// gatedRuntime is fakeRuntime whose starts block until release is closed
// (a sandbox being created) and whose instances, when unkillable is set,
// survive every SIGKILL with an error naming them (a task in D state).
type gatedRuntime struct {
	*fakeRuntime
	release    chan struct{}
	unkillable bool

	mu      sync.Mutex
	started chan struct{} // closed when the first Start is called
	kills   int
}

func (r *gatedRuntime) Start(ctx context.Context, req StartRequest) (Instance, error) {
	r.mu.Lock()
	if r.started != nil {
		close(r.started)
		r.started = nil
	}
	r.mu.Unlock()
	if r.release != nil {
		select {
		case <-r.release:
		case <-ctx.Done():
			return nil, &StartError{Code: 128, Err: ctx.Err()}
		}
	}
	inst, err := r.fakeRuntime.Start(ctx, req)
	if err != nil || !r.unkillable {
		return inst, err
	}
	return &unkillableInstance{fakeInstance: inst.(*fakeInstance), rt: r}, nil
}

type unkillableInstance struct {
	*fakeInstance
	rt *gatedRuntime
}

var errStuck = errors.New("killing /sys/fs/cgroup/x: busy: pids [4242]")

func (i *unkillableInstance) Signal(syscall.Signal) error { return nil }
func (i *unkillableInstance) KillTree(syscall.Signal) error {
	i.rt.mu.Lock()
	i.rt.kills++
	i.rt.mu.Unlock()
	return errStuck
}

func (r *gatedRuntime) killCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kills
}

func startGated(t *testing.T, cfg spec.Config, rt *gatedRuntime, opts Options) *fakeRun {
	t.Helper()
	opts.Clock, opts.Runtime = rt.clock, rt
	sup, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRun{t: t, clock: rt.clock, rt: rt.fakeRuntime, sup: sup, sub: sup.Subscribe(), res: make(chan Result, 1)}
	t.Cleanup(f.sub.Close)
	go func() {
		res, err := sup.Run(context.Background())
		if err != nil {
			t.Error(err)
		}
		f.res <- res
	}()
	return f
}

// nextEvent waits (real time, generously) for an event with reason.
func (f *fakeRun) nextEvent(reason string) lifecycle.Event {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		e, err := f.sub.Next(ctx)
		if err != nil {
			f.t.Fatalf("no %s event: %v", reason, err)
		}
		if e.Reason == reason {
			return e
		}
	}
}

func TestStartInFlightDoesNotHoldTheWorker(t *testing.T) {
	// Item 6: a start that takes long (a sandbox being created) runs off
	// the worker: status shows the instance as being created, a stop
	// request is heard at once (and cancels the start), and the group
	// ends without a process.
	fc := clock.NewFake(clock.Epoch)
	rt := &gatedRuntime{fakeRuntime: newFakeRuntime(fc, constant(simRun{RunFor: -1})), release: make(chan struct{}), started: make(chan struct{})}
	started := rt.started
	f := startGated(t, configOf(oneProcess(spec.RestartAlways)), rt, Options{})
	defer close(rt.release)
	select {
	case <-started:
	case <-time.After(15 * time.Second):
		t.Fatal("the start was never called")
	}
	// The worker sends the start on its way before it publishes the
	// snapshot that shows it: wait for that snapshot (the barrier of settle
	// would wait for the start itself).
	changed := make(chan struct{}, 1)
	stopNotices := f.sup.NotifyStatus(changed)
	defer stopNotices()
	for {
		st, _ := f.sup.Status().Group("g")
		p := st.Processes[0]
		if p.State == lifecycle.StateWaiting && p.Reason == lifecycle.ReasonContainerCreating {
			break
		}
		select {
		case <-changed:
		case <-time.After(15 * time.Second):
			t.Fatalf("a start in flight shows as %s/%s, want waiting/%s", p.State, p.Reason, lifecycle.ReasonContainerCreating)
		}
	}
	if err := f.sup.Stop("g", "app", RequestOptions{Requester: "test"}); err != nil {
		t.Fatal(err)
	}
	e := f.nextEvent(lifecycle.EventKilling)
	if !strings.Contains(e.Message, "once its start returns") {
		t.Errorf("Killing event for a start in flight: %q", e.Message)
	}
	// The stop cancelled the start's ctx: the start fails, nothing runs.
	if e := f.nextEvent(lifecycle.EventFailed); !strings.Contains(e.Message, "context canceled") {
		t.Errorf("the start in flight was not cancelled: %q", e.Message)
	}
	f.settle()
	if st, _ := f.sup.Status().Group("g"); st.Processes[0].State == lifecycle.StateRunning {
		t.Errorf("a process stopped during its start runs: %+v", st.Processes[0])
	}
	if got := f.rt.startsOf("app"); len(got) != 0 {
		t.Errorf("the stopped start went on to run the process: starts %v", got)
	}
	res := f.shutdown()
	if res.ExitCode != 0 {
		t.Errorf("shutdown: %+v", res)
	}
}

func TestUnkillableTreeIsRetriedAndShutdownGivesUp(t *testing.T) {
	// Item 4: the SIGKILL of a tree that survives it is retried on a
	// deadline (1s, then 2s), each failure is a Warning naming what
	// survives, the worker stays responsive, and a shutdown gives up after
	// KillAttempts so it ends.
	fc := clock.NewFake(clock.Epoch)
	rt := &gatedRuntime{fakeRuntime: newFakeRuntime(fc, constant(simRun{RunFor: -1})), unkillable: true}
	g := oneProcess(spec.RestartAlways)
	g.TerminationGracePeriod = spec.Durp(time.Second)
	cfg := configOf(g, spec.Group{Name: "other", Processes: []spec.Process{{Name: "x", Command: []string{"/bin/true"}}}})
	cfg.Supervisor.MinimumGrace = spec.Durp(time.Second)
	f := startGated(t, cfg, rt, Options{KillRetry: time.Second, KillAttempts: 3})
	f.advanceTo(0)
	if err := f.sup.Stop("g", "app", RequestOptions{Requester: "test"}); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(1 * time.Second) // grace over: SIGKILL #1 fails
	e := f.nextEvent(lifecycle.EventFailedKill)
	if e.Type != lifecycle.EventWarning || !strings.Contains(e.Message, "pids [4242]") || !strings.Contains(e.Message, "attempt 1") {
		t.Errorf("FailedKill does not name what survives: %+v", e)
	}
	// The worker answers other requests meanwhile.
	if err := f.sup.Restart("other", "x", RequestOptions{Requester: "test"}); err != nil {
		t.Errorf("a request to another group: %v", err)
	}
	if err := f.sup.Start("g", "", RequestOptions{Requester: "test"}); err != nil {
		t.Errorf("a request to the stuck group: %v", err)
	}
	f.advanceTo(1999 * time.Millisecond)
	if n := rt.killCount(); n != 1 {
		t.Fatalf("%d SIGKILLs before the retry deadline, want 1", n)
	}
	f.advanceTo(2 * time.Second) // retry #2 at 1s + 1s
	if n := rt.killCount(); n != 2 {
		t.Fatalf("%d SIGKILLs at the retry deadline, want 2", n)
	}
	f.advanceTo(4 * time.Second) // retry #3 at 2s + 2s (doubling)
	if n := rt.killCount(); n != 3 {
		t.Fatalf("%d SIGKILLs at the second retry deadline, want 3", n)
	}
	f.sup.RequestShutdown(nil)
	// The other group's instance is as unkillable (same runtime), with
	// the default grace of 30s.
	f.advanceTo(120 * time.Second)
	select {
	case res := <-f.res:
		f.res <- res
	case <-time.After(15 * time.Second):
		t.Fatal("shutdown did not end with an unkillable instance")
	}
	var gaveUp bool
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		e, err := f.sub.Next(ctx)
		cancel()
		if err != nil {
			break
		}
		gaveUp = gaveUp || (e.Reason == lifecycle.EventFailedKill && strings.Contains(e.Message, "Giving up"))
	}
	if !gaveUp {
		t.Error("no Warning says podsup gave up on the unkillable instance")
	}
}

// slowCleanupRuntime is fakeRuntime whose tree kills after an exit block
// until release is closed (a cgroup kill waiting for the tree to empty).
// Each Start is announced on started, and a restart that comes before
// release sets early.
type slowCleanupRuntime struct {
	*fakeRuntime
	release chan struct{}
	killing chan struct{} // closed when a kill after an exit began
	started chan struct{} // one value per Start
	early   atomic.Bool   // a restart came while the cleanup ran
}

type slowCleanupInstance struct {
	*fakeInstance
	rt *slowCleanupRuntime
}

func (r *slowCleanupRuntime) Start(ctx context.Context, req StartRequest) (Instance, error) {
	if len(r.startsOf(req.Process.Name)) > 0 && !isDone(r.release) {
		r.early.Store(true) // the first instance's cleanup has not ended
	}
	inst, err := r.fakeRuntime.Start(ctx, req)
	r.started <- struct{}{}
	if err != nil {
		return nil, err
	}
	return &slowCleanupInstance{fakeInstance: inst.(*fakeInstance), rt: r}, nil
}

func (i *slowCleanupInstance) KillTree(sig syscall.Signal) error {
	i.mu.Lock()
	done := i.done
	i.mu.Unlock()
	if done { // the leftovers of an exited instance
		select {
		case <-i.rt.killing:
		default:
			close(i.rt.killing)
		}
		<-i.rt.release
		return nil
	}
	return i.fakeInstance.KillTree(sig)
}

func TestNextStartWaitsForThePreviousInstancesCleanup(t *testing.T) {
	// X10 with cgroups kept across a process's instances: the tree kill
	// after an exit ends before the next instance starts, or what the old
	// one left would join the new one's tree. The wait is off the worker:
	// status answers meanwhile.
	fc := clock.NewFake(clock.Epoch)
	rt := &slowCleanupRuntime{fakeRuntime: newFakeRuntime(fc, func(_ string, n int) simRun {
		if n == 0 {
			return simRun{RunFor: time.Second, Code: 1}
		}
		return simRun{RunFor: -1}
	}), release: make(chan struct{}), killing: make(chan struct{}), started: make(chan struct{}, 4)}
	sup, err := New(configOf(oneProcess(spec.RestartAlways)), Options{Clock: fc, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 1)
	defer sup.NotifyStatus(changed)()
	res := make(chan Result, 1)
	go func() {
		r, _ := sup.Run(context.Background())
		res <- r
	}()
	released := false
	defer func() {
		if !released {
			close(rt.release)
		}
		sup.RequestShutdown(nil)
		sup.RequestShutdown(nil) // SIGKILL ends the running fake instance at once
		select {
		case <-res:
		case <-time.After(15 * time.Second):
			t.Error("the supervisor did not stop")
		}
	}()
	wait := func(c <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(15 * time.Second):
			t.Fatal(what)
		}
	}
	wait(rt.started, "no first start")
	fc.Advance(time.Second) // the first instance exits 1: cleanup, then restart at once (B6.1)
	wait(rt.killing, "no tree kill after the exit")
	// The worker published a status with the exit's termination after it
	// had handled the exit, which is when a start that did not wait would
	// have been sent on its way; that start then finds the cleanup still
	// blocked (early), since only this test ends it. Status answers
	// meanwhile.
	deadline := time.After(15 * time.Second)
	for {
		if st, ok := sup.Status().Group("g"); ok && len(st.Processes) == 1 && st.Processes[0].LastTermination != nil {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("no status with the first instance's exit")
		}
	}
	if st, ok := sup.Status().Group("g"); !ok || len(st.Processes) != 1 {
		t.Fatalf("status during the cleanup: %+v", st)
	}
	// Let a start sent on its way reach the runtime before the cleanup ends
	// (no real time passes: the goroutines that can run, run).
	for i := 0; i < 1000; i++ {
		runtime.Gosched()
	}
	close(rt.release)
	released = true
	wait(rt.started, "no start after the cleanup ended")
	if rt.early.Load() {
		t.Fatal("the next instance started while the previous one's cleanup ran")
	}
	if n := len(rt.startsOf("app")); n != 2 {
		t.Fatalf("%d starts after the cleanup ended, want 2", n)
	}
}

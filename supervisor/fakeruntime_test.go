package supervisor

import (
	"context"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// runtimeBase is the part of Runtime a test fake has nothing to do for:
// no sandbox (exec probes and hooks run on the host), nothing kept per
// group or process. It claims caps.
type runtimeBase struct{ caps Capabilities }

func (runtimeBase) Spawner(string) func(*proc.Cmd) (*proc.Process, error) { return nil }
func (runtimeBase) ReleaseGroup(string)                                   {}
func (runtimeBase) ReleaseProcess(string, string)                         {}
func (b runtimeBase) Capabilities() Capabilities                          { return b.caps }

// allCapabilities is every field of Capabilities set.
func allCapabilities() Capabilities {
	return Capabilities{Sandboxes: true, ReadinessProtocols: true, SocketActivation: true, OutputCapture: true, Journal: true}
}

// fakeRuntime plays scripted instances on a fake clock: an instance exits
// runFor after its start (a fake-clock AfterFunc), on the stop signal
// after termExit unless it ignores it, and at once on SIGKILL. It claims
// every capability: its instances stand for whatever the configuration
// asks.
type fakeRuntime struct {
	runtimeBase
	clock  *clock.Fake
	script simScript

	mu     sync.Mutex
	starts map[string][]time.Duration
	pid    int
}

func newFakeRuntime(c *clock.Fake, script simScript) *fakeRuntime {
	return &fakeRuntime{runtimeBase: runtimeBase{caps: allCapabilities()}, clock: c, script: script, starts: map[string][]time.Duration{}}
}

func (r *fakeRuntime) Start(_ context.Context, req StartRequest) (Instance, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := req.Process.Name
	run := r.script(name, len(r.starts[name]))
	r.starts[name] = append(r.starts[name], r.clock.Now().Sub(clock.Epoch))
	r.pid++
	inst := &fakeInstance{rt: r, pid: 1000 + r.pid, run: run, onExit: req.OnExit}
	if run.RunFor >= 0 {
		inst.timer = r.clock.AfterFunc(run.RunFor, func() { inst.exit(lifecycle.ExitStatus{Code: run.Code}) })
	}
	return inst, nil
}

func (r *fakeRuntime) startsOf(name string) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.starts[name]...)
}

type fakeInstance struct {
	rt     *fakeRuntime
	pid    int
	run    simRun
	onExit func(lifecycle.ExitStatus)

	mu    sync.Mutex
	timer clock.Timer
	done  bool
}

func (i *fakeInstance) Pid() int { return i.pid }

func (i *fakeInstance) exit(st lifecycle.ExitStatus) {
	i.mu.Lock()
	if i.done {
		i.mu.Unlock()
		return
	}
	i.done = true
	if i.timer != nil {
		i.timer.Stop()
	}
	i.mu.Unlock()
	i.onExit(st)
}

func (i *fakeInstance) Signal(sig syscall.Signal) error {
	if i.run.IgnoreTerm {
		return nil
	}
	st := lifecycle.ExitStatus{Code: 128 + int(sig), Signal: sig}
	if i.run.TermExit == 0 {
		i.exit(st)
		return nil
	}
	i.mu.Lock()
	if i.timer != nil {
		i.timer.Stop()
	}
	i.timer = i.rt.clock.AfterFunc(i.run.TermExit, func() { i.exit(st) })
	i.mu.Unlock()
	return nil
}

func (i *fakeInstance) KillTree(sig syscall.Signal) error {
	i.exit(lifecycle.ExitStatus{Code: 128 + int(sig), Signal: sig})
	return nil
}

func (i *fakeInstance) Remove() error { return nil }

// fakeRun is a Supervisor on a fake clock and fake runtime, running.
type fakeRun struct {
	t     *testing.T
	clock *clock.Fake
	rt    *fakeRuntime
	sup   *Supervisor
	// sub sees every event from before Run.
	sub *Subscription
	res chan Result
}

func startFake(t *testing.T, cfg spec.Config, script simScript) *fakeRun {
	t.Helper()
	return startFakeOn(t, cfg, newFakeRuntime(clock.NewFake(clock.Epoch), script))
}

// startFakeOn is startFake on a fake runtime of the caller's.
func startFakeOn(t *testing.T, cfg spec.Config, rt *fakeRuntime) *fakeRun {
	t.Helper()
	fc := rt.clock
	sup, err := New(cfg, Options{Clock: fc, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRun{t: t, clock: fc, rt: rt, sup: sup, sub: sup.Subscribe(), res: make(chan Result, 1)}
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

// settle waits until every worker has handled everything posted so far.
// A group replaced by Apply hands over to its successor when it is idle:
// settle waits for that hand-over too, so the fake clock never runs ahead
// of a successor that is about to start. A worker's handling may post to
// another (a group's state to its dependents, W1), which may then start
// something: with group-level depends_on, settle goes round once per
// group, one hop of the dependency graph each time.
func (f *fakeRun) settle() {
	f.sup.mu.Lock()
	rounds := 1
	for _, g := range f.sup.cfg.Groups {
		if len(g.DependsOn) > 0 {
			rounds = len(f.sup.cfg.Groups) + 1
		}
	}
	f.sup.mu.Unlock()
	for range rounds {
		f.settleOnce()
	}
}

func (f *fakeRun) settleOnce() {
	f.sup.mu.Lock()
	var ws, retiring []*worker
	for _, w := range f.sup.workers {
		ws = append(ws, w)
	}
	for w := range f.sup.retiring {
		retiring = append(retiring, w)
	}
	f.sup.mu.Unlock()
	for _, w := range retiring {
		w.barrier()
		if w.status.Load().Status().Phase != lifecycle.PhaseStopping { // shut down and idle: about to end
			select {
			case <-w.done:
			case <-time.After(5 * time.Second):
				f.t.Fatalf("retired group %s did not end", w.name)
			}
		}
	}
	for _, w := range ws {
		if w.waiting.Load() {
			select {
			case <-w.after:
				for w.waiting.Load() {
					runtime.Gosched()
				}
			default:
				continue // its predecessor is still stopping
			}
		}
		w.barrier()
	}
}

// advanceTo steps the fake clock from deadline to deadline up to end,
// letting the workers react at each one, as a real clock would.
func (f *fakeRun) advanceTo(end time.Duration) {
	for i := 0; i < 100000; i++ {
		f.settle()
		d, ok := f.clock.NextDeadline()
		if !ok || d.Sub(clock.Epoch) > end {
			f.clock.Set(clock.Epoch.Add(end))
			f.settle()
			return
		}
		f.clock.Set(d)
	}
	f.t.Fatal("fake clock did not settle")
}

// shutdown stops the supervisor and returns its result.
func (f *fakeRun) shutdown() Result {
	f.sup.RequestShutdown(nil)
	for {
		select {
		case r := <-f.res:
			return r
		default:
		}
		f.advanceTo(f.clock.Now().Sub(clock.Epoch) + time.Second)
	}
}

func zerologNop() zerolog.Logger { return zerolog.Nop() }

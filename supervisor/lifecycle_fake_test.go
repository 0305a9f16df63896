package supervisor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/probes"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Test doubles for hooks and probes on the fake clock, and the harness
// that runs a Supervisor with them.

// fakeHooks runs hooks on the fake clock without goroutines (hookStarter):
// each call takes its scripted time and returns its scripted error; a
// negative time hangs until the hook's context ends.
type fakeHooks struct {
	clock  *clock.Fake
	script func(point spec.HookPoint, process string, n int) fakeHook

	mu    sync.Mutex
	calls []*fakeHookCall
	// changed is closed, and replaced, when a call is added or ends
	// (until).
	changed chan struct{}
}

type fakeHook struct {
	takes time.Duration
	err   error
}

type fakeHookCall struct {
	point    spec.HookPoint
	process  string
	instance string
	budget   time.Duration
	at       time.Duration
	// ended is when it ended (-1 while running); cancelled says its
	// context ended first.
	ended     time.Duration
	cancelled bool
}

var _ hookStarter = (*fakeHooks)(nil)

func (h *fakeHooks) Run(context.Context, HookRequest) error {
	panic("fakeHooks runs through startHook")
}

func (h *fakeHooks) startHook(ctx context.Context, req HookRequest, finish func(error)) {
	h.mu.Lock()
	n := 0
	for _, c := range h.calls {
		if c.point == req.Point && c.process == req.Process.Name {
			n++
		}
	}
	call := &fakeHookCall{point: req.Point, process: req.Process.Name, instance: req.InstanceID, budget: req.Budget,
		at: h.clock.Now().Sub(clock.Epoch), ended: -1}
	h.calls = append(h.calls, call)
	h.changedLocked()
	h.mu.Unlock()
	run := h.script(req.Point, req.Process.Name, n)
	var once sync.Once
	end := func(err error, cancelled bool) {
		once.Do(func() {
			h.mu.Lock()
			call.ended, call.cancelled = h.clock.Now().Sub(clock.Epoch), cancelled
			h.changedLocked()
			h.mu.Unlock()
			finish(err)
		})
	}
	var t clock.Timer
	if run.takes >= 0 {
		t = h.clock.AfterFunc(run.takes, func() { end(run.err, false) })
	}
	context.AfterFunc(ctx, func() {
		if t != nil {
			t.Stop()
		}
		end(ctx.Err(), true)
	})
}

// changedLocked wakes every until; h.mu is held.
func (h *fakeHooks) changedLocked() {
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
}

// until waits until cond holds, looking again whenever a hook call is
// added or ends: a hook's end can come from a goroutine of its own (its
// context's AfterFunc), after the fake clock has moved.
func (h *fakeHooks) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		h.mu.Lock()
		if h.changed == nil {
			h.changed = make(chan struct{})
		}
		changed := h.changed
		h.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

func (h *fakeHooks) callsAt(point spec.HookPoint) []fakeHookCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []fakeHookCall
	for _, c := range h.calls {
		if c.point == point {
			out = append(out, *c)
		}
	}
	return out
}

func hookTimes(calls []fakeHookCall) []time.Duration {
	var out []time.Duration
	for _, c := range calls {
		out = append(out, c.at)
	}
	return out
}

// quietClock is the fake clock as the probe workers see it: it knows when
// every probe worker has armed its timer and handled every tick that
// fired, so a test can move the clock only when the probes are quiet, as
// real time would let them be.
type quietClock struct {
	*clock.Fake

	mu      sync.Mutex
	timers  int           // created
	fired   int           // fired and not yet re-armed or stopped
	changed chan struct{} // closed, and replaced, when timers or fired change
}

func (q *quietClock) NewTimer(d time.Duration) clock.Timer {
	qt := &quietTimer{q: q, c: make(chan time.Time, 1)}
	qt.t = q.Fake.AfterFunc(d, qt.fire)
	q.mu.Lock()
	q.timers++
	q.changedLocked()
	q.mu.Unlock()
	return qt
}

// changedLocked wakes every wait; q.mu is held.
func (q *quietClock) changedLocked() {
	if q.changed != nil {
		close(q.changed)
		q.changed = nil
	}
}

type quietTimer struct {
	q *quietClock
	t clock.Timer
	c chan time.Time

	mu    sync.Mutex
	fired bool
}

func (t *quietTimer) fire() {
	t.mu.Lock()
	t.fired = true
	t.mu.Unlock()
	t.q.mu.Lock()
	t.q.fired++
	t.q.changedLocked()
	t.q.mu.Unlock()
	select {
	case t.c <- t.q.Now():
	default:
	}
}

func (t *quietTimer) C() <-chan time.Time { return t.c }

// Reset and Stop re-arm (or disarm) first and only then count the fire as
// handled: a test that saw the count drop must also see the new deadline.
func (t *quietTimer) Reset(d time.Duration) bool {
	was := t.t.Reset(d)
	t.handled()
	return was
}

func (t *quietTimer) Stop() bool {
	was := t.t.Stop()
	t.handled()
	return was
}

func (t *quietTimer) handled() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fired {
		t.fired = false
		t.q.mu.Lock()
		t.q.fired--
		t.q.changedLocked()
		t.q.mu.Unlock()
	}
}

// wait returns once at least timers probe timers exist and none has a
// fire that its worker has not handled. It sleeps on the counts' changes,
// never on real time; the minute is only how long it waits before it
// fails the test.
func (q *quietClock) wait(tb testing.TB, timers int) {
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		q.mu.Lock()
		if q.timers >= timers && q.fired == 0 {
			q.mu.Unlock()
			return
		}
		if q.changed == nil {
			q.changed = make(chan struct{})
		}
		changed, n, fired := q.changed, q.timers, q.fired
		q.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			tb.Fatalf("probe workers did not go quiet (%d timers, want %d; %d fired)", n, timers, fired)
		}
	}
}

// lcRun is a fakeRun with fake hooks and, optionally, probe workers on a
// quietClock.
type lcRun struct {
	*fakeRun
	hooks  *fakeHooks
	qc     *quietClock
	probes int // probe workers to expect
}

func startLifecycle(t *testing.T, cfg spec.Config, script simScript, hooks func(point spec.HookPoint, process string, n int) fakeHook) *lcRun {
	t.Helper()
	return startLifecycleWith(t, cfg, script, hooks, nil)
}

// startLifecycleWith also scripts the probes: handler answers for every
// probe worker instead of the handlers the spec describes.
func startLifecycleWith(t *testing.T, cfg spec.Config, script simScript, hooks func(point spec.HookPoint, process string, n int) fakeHook,
	handler func(process string, kind spec.ProbeKind) probes.Handler) *lcRun {
	t.Helper()
	fc := clock.NewFake(clock.Epoch)
	rt := newFakeRuntime(fc, script)
	if hooks == nil {
		hooks = func(spec.HookPoint, string, int) fakeHook { return fakeHook{} }
	}
	fh := &fakeHooks{clock: fc, script: hooks}
	sup, err := New(cfg, Options{Clock: fc, Runtime: rt, Hooks: fh})
	if err != nil {
		t.Fatal(err)
	}
	r := &lcRun{
		fakeRun: &fakeRun{t: t, clock: fc, rt: rt, sup: sup, sub: sup.Subscribe(), res: make(chan Result, 1)},
		hooks:   fh, qc: &quietClock{Fake: fc},
	}
	for _, g := range cfg.Groups {
		for _, p := range g.Processes {
			for _, pr := range []*spec.Probe{p.StartupProbe, p.LivenessProbe, p.ReadinessProbe} {
				if pr != nil {
					r.probes++
				}
			}
		}
	}
	for _, w := range sup.workers {
		w.lc.probeClock = r.qc
		w.lc.probeHandler = handler
	}
	t.Cleanup(r.sub.Close)
	go func() {
		res, err := sup.Run(context.Background())
		if err != nil {
			t.Error(err)
		}
		r.res <- res
	}()
	return r
}

// quiet waits until the probe workers and the group workers have handled
// everything that happened so far.
func (r *lcRun) quiet() {
	for i := 0; i < 3; i++ { // a probe's publish wakes the worker, whose Observe needs no answer
		r.qc.wait(r.t, r.probes)
		r.settle()
	}
	r.qc.wait(r.t, r.probes)
}

// advanceTo moves the fake clock from deadline to deadline up to end,
// letting probe workers and group workers react at each one.
func (r *lcRun) advanceTo(end time.Duration) {
	for i := 0; i < 100000; i++ {
		r.quiet()
		d, ok := r.clock.NextDeadline()
		if !ok || d.Sub(clock.Epoch) > end {
			r.clock.Set(clock.Epoch.Add(end))
			r.quiet()
			return
		}
		r.clock.Set(d)
	}
	r.t.Fatal("fake clock did not settle")
}

// events drains the subscription, once the workers are quiet: every event
// published so far is in its buffer, which a done context drains without
// waiting.
func (r *lcRun) events() []lifecycle.Event {
	r.quiet()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	var out []lifecycle.Event
	for {
		e, err := r.sub.Next(done)
		if err != nil {
			return out
		}
		out = append(out, e)
	}
}

func (r *lcRun) status(process string) lifecycle.ProcessStatus {
	r.t.Helper()
	for _, g := range r.sup.Status().Groups {
		if p, ok := g.Process(process); ok {
			return p
		}
	}
	r.t.Fatalf("no process %q", process)
	return lifecycle.ProcessStatus{}
}

// stop shuts the supervisor down, moving the fake clock a second at a time
// until Run returns. The bound is real time, not a number of steps: a step
// whose goroutines have not run yet (a loaded machine) moves no deadline,
// and a thousand such steps can pass in a few milliseconds.
func (r *lcRun) stop() {
	r.sup.RequestShutdown(nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-r.res:
			return
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.t.Fatal("supervisor did not stop within 30s")
		}
		r.advanceTo(r.clock.Now().Sub(clock.Epoch) + time.Second)
	}
}

func reasonsOf(es []lifecycle.Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Reason)
	}
	return out
}

func withReason(es []lifecycle.Event, reason string) []lifecycle.Event {
	var out []lifecycle.Event
	for _, e := range es {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

var errHook = errors.New("hook command exited with code 3")

func hookOf(d time.Duration) *spec.Hook {
	return &spec.Hook{Handler: spec.Handler{Sleep: &spec.SleepAction{Duration: max(d, time.Second)}}}
}

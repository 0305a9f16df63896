package probes

import (
	"context"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
)

// loopRig runs a real Worker on a fake clock; the handler reports each call
// and answers from the test.
type loopRig struct {
	t     *testing.T
	clk   *clock.Fake
	w     *Worker
	calls chan chan outcome
	pubs  chan Update
}

func newLoopRig(t *testing.T, kind spec.ProbeKind, p spec.Probe) *loopRig {
	r := &loopRig{t: t, clk: clock.NewFake(clock.Epoch), calls: make(chan chan outcome), pubs: make(chan Update, 16)}
	h := HandlerFunc(func(ctx context.Context) (Result, string, error) {
		reply := make(chan outcome)
		select {
		case r.calls <- reply:
		case <-ctx.Done():
			return Unknown, "", ctx.Err()
		}
		select {
		case o := <-reply:
			return o.r, o.msg, o.err
		case <-ctx.Done():
			return Unknown, "", ctx.Err()
		}
	})
	w, err := NewWorker(WorkerConfig{Kind: kind, Probe: p, Handler: h, Clock: r.clk, Publish: func(u Update) { r.pubs <- u }})
	if err != nil {
		t.Fatal(err)
	}
	r.w = w
	return r
}

// answer waits for the next handler call and answers o.
func (r *loopRig) answer(o outcome) {
	r.t.Helper()
	select {
	case reply := <-r.calls:
		reply <- o
	case <-time.After(10 * time.Second):
		r.t.Fatal("handler was not called")
	}
}

func (r *loopRig) noCall() {
	r.t.Helper()
	select {
	case <-r.calls:
		r.t.Fatal("handler called unexpectedly")
	case <-time.After(50 * time.Millisecond):
	}
}

func (r *loopRig) update() Update {
	r.t.Helper()
	select {
	case u := <-r.pubs:
		return u
	case <-time.After(10 * time.Second):
		r.t.Fatal("no update published")
		return Update{}
	}
}

// armedAt waits until the worker has armed its timer, and checks it is
// for t. The worker has one timer: armed after each probe, disarmed when
// it fires.
func (r *loopRig) armedAt(t time.Time) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.clk.BlockUntilContext(ctx, 1); err != nil {
		r.t.Fatalf("the worker armed no timer (want one for %v): %v", t, err)
	}
	if d, ok := r.clk.NextDeadline(); !ok || !d.Equal(t) {
		r.t.Fatalf("timer armed for %v, want %v", d, t)
	}
}

func TestWorkerLoopTicksOnPeriod(t *testing.T) {
	// P1: the loop probes at once, then every period on the worker's
	// clock; results are published from the step (P4, P6).
	period := 500 * time.Millisecond // D7: sub-second periods
	r := newLoopRig(t, spec.Readiness, spec.Probe{Period: period, FailureThreshold: 1})
	r.w.Observe(Instance{ID: "a", Running: true, StartedAt: clock.Epoch, Started: true})
	go r.w.Run(context.Background())
	defer func() { r.w.Stop(); <-r.w.Done() }()

	r.answer(ok)
	if u := r.update(); !u.Initial || u.Result != Failure {
		t.Fatalf("first update %+v, want initial failure", u)
	}
	if u := r.update(); u.Result != Success {
		t.Fatalf("second update %+v, want success", u)
	}
	r.armedAt(clock.Epoch.Add(period))
	r.noCall() // idle between ticks: no probe without a tick
	r.clk.Advance(period)
	r.answer(ok) // same result: nothing published
	r.armedAt(clock.Epoch.Add(2 * period))
	r.clk.Advance(period)
	r.answer(bad)
	if u := r.update(); u.Result != Failure || u.Message != "nope" || !u.Time.Equal(clock.Epoch.Add(2*period)) {
		t.Fatalf("update %+v, want failure at the tick's time", u)
	}
	if got := r.w.Interval(); got != period {
		t.Fatalf("Interval %v", got)
	}
}

func TestWorkerLoopKeepsPhaseAndOnePendingTick(t *testing.T) {
	// P13: a probe that runs past several ticks is followed at once by one
	// probe (the ticker's pending tick); the other missed ticks are dropped
	// and the phase is kept.
	period := time.Second
	r := newLoopRig(t, spec.Liveness, spec.Probe{Period: period})
	r.w.Observe(Instance{ID: "a", Running: true, StartedAt: clock.Epoch, Started: true})
	go r.w.Run(context.Background())
	defer func() { r.w.Stop(); <-r.w.Done() }()

	r.answer(ok)
	r.update() // initial Success
	r.armedAt(clock.Epoch.Add(period))
	r.clk.Advance(period) // tick at 1s; the probe "takes" 2.5s
	reply := <-r.calls
	r.clk.Advance(2500 * time.Millisecond) // now 3.5s
	reply <- ok
	r.answer(ok)                           // the pending tick: a probe at 3.5s, without a timer
	r.armedAt(clock.Epoch.Add(4 * period)) // 2s and 3s were one tick; phase kept
	r.noCall()
}

func TestWorkerSlowProbeIsFollowedAtOnce(t *testing.T) {
	// P13: period 1s, every probe takes 1.2s: each probe starts as the
	// previous one ends, 1.2s apart, not on the next boundary (2s apart).
	period := time.Second
	probeTime := 1200 * time.Millisecond
	r := newLoopRig(t, spec.Liveness, spec.Probe{Period: period, Timeout: 5 * time.Second})
	r.w.Observe(Instance{ID: "a", Running: true, StartedAt: clock.Epoch, Started: true})
	go r.w.Run(context.Background())
	defer func() { r.w.Stop(); <-r.w.Done() }()

	r.answer(ok) // the first probe, at 0, is quick
	r.update()
	r.armedAt(clock.Epoch.Add(period))
	r.clk.Advance(period)
	var starts []time.Time
	for range 4 {
		var reply chan outcome
		select {
		case reply = <-r.calls:
		case <-time.After(10 * time.Second):
			t.Fatalf("no probe after the one that started at %v", starts[len(starts)-1])
		}
		starts = append(starts, r.clk.Now())
		r.clk.Advance(probeTime)
		reply <- ok
	}
	for i := 1; i < len(starts); i++ {
		if d := starts[i].Sub(starts[i-1]); d != probeTime {
			t.Fatalf("probe %d started %v after the previous one, want %v (starts %v)", i, d, probeTime, starts)
		}
	}
}

func TestWorkerTriggerAndStop(t *testing.T) {
	r := newLoopRig(t, spec.Readiness, spec.Probe{Period: time.Hour, FailureThreshold: 1})
	r.w.Observe(Instance{ID: "a", Running: true, StartedAt: clock.Epoch, Started: true})
	go r.w.Run(context.Background())
	r.answer(ok)
	r.update()
	r.update()
	r.armedAt(clock.Epoch.Add(time.Hour))
	r.w.Trigger()
	r.answer(bad) // a probe without a tick
	r.update()
	r.armedAt(clock.Epoch.Add(time.Hour)) // the phase did not move

	// Stop cuts a running probe short and ends Run.
	r.w.Trigger()
	<-r.calls // the handler is now blocked in its probe
	r.w.Stop()
	select {
	case <-r.w.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after Stop")
	}
	r.w.Stop() // safe twice
	if n := r.clk.Pending(); n != 0 {
		t.Fatalf("%d timers left armed after Stop", n)
	}
}

func TestWorkerEndsOnFinalInstance(t *testing.T) {
	// P8: the worker ends by itself when the instance exited for good.
	r := newLoopRig(t, spec.Readiness, spec.Probe{})
	r.w.Observe(Instance{ID: "a", Final: true})
	go r.w.Run(context.Background())
	r.update() // initial Failure; not running: nothing more to publish
	select {
	case <-r.w.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end on a final instance")
	}
}

func TestWorkerStopBeforeRun(t *testing.T) {
	r := newLoopRig(t, spec.Readiness, spec.Probe{})
	r.w.Stop()
	r.w.Run(context.Background()) // returns at once
	<-r.w.Done()
}

func TestNewWorkerRejectsBadConfig(t *testing.T) {
	h := HandlerFunc(func(context.Context) (Result, string, error) { return Success, "", nil })
	pub := func(Update) {}
	for name, cfg := range map[string]WorkerConfig{
		"kind":       {Kind: "deep", Handler: h, Publish: pub},
		"no handler": {Kind: spec.Liveness, Publish: pub},
		"no publish": {Kind: spec.Liveness, Handler: h},
		"negative":   {Kind: spec.Liveness, Handler: h, Publish: pub, Probe: spec.Probe{Period: -time.Second}},
	} {
		if _, err := NewWorker(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestWorkerSlowExecProbeIsFollowedAtOnce(t *testing.T) {
	// P13 with a real process and the real clock: period 1s, an exec probe
	// that takes 1.1s. Each probe starts as soon as the previous one has
	// ended; waiting for the next boundary would leave ~0.9s between them.
	t.Parallel()
	exec := execProbe(t, 10*time.Second, "sleep", "1.1")
	type span struct{ start, end time.Time }
	spans := make(chan span, 16)
	h := HandlerFunc(func(ctx context.Context) (Result, string, error) {
		s := span{start: time.Now()}
		r, msg, err := exec.Probe(ctx)
		s.end = time.Now()
		spans <- s
		return r, msg, err
	})
	w, err := NewWorker(WorkerConfig{Kind: spec.Liveness, Probe: spec.Probe{Period: time.Second, Timeout: 10 * time.Second}, Handler: h, Publish: func(Update) {}})
	if err != nil {
		t.Fatal(err)
	}
	w.Observe(Instance{ID: "a", Running: true, StartedAt: time.Now(), Started: true})
	go w.Run(context.Background())
	defer func() { w.Stop(); <-w.Done() }()
	var got []span
	for len(got) < 4 {
		select {
		case s := <-spans:
			got = append(got, s)
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d probes in 30s", len(got))
		}
	}
	for i := 1; i < len(got); i++ {
		// Generous: the worker itself needs microseconds, and waiting for
		// the next boundary would leave ~900ms.
		if gap := got[i].start.Sub(got[i-1].end); gap > 500*time.Millisecond {
			t.Fatalf("probe %d started %v after the previous one ended, want at once", i, gap)
		}
	}
}

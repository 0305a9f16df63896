package probes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/internal/execrun"
	"github.com/podsup/podsup/spec"

	"github.com/podsup/podsup/sandbox/proc"
)

// script is a fake handler returning queued outcomes in order; it fails the
// test when called more often than scripted.
type script struct {
	t     *testing.T
	steps []outcome
	calls int
}

type outcome struct {
	r   Result
	msg string
	err error
}

var (
	ok   = outcome{r: Success}
	bad  = outcome{r: Failure, msg: "nope"}
	boom = outcome{r: Unknown, err: errors.New("prober broke")}
)

func (s *script) Probe(context.Context) (Result, string, error) {
	s.t.Helper()
	if s.calls >= len(s.steps) {
		s.t.Fatalf("handler called %d times, scripted %d", s.calls+1, len(s.steps))
	}
	o := s.steps[s.calls]
	s.calls++
	return o.r, o.msg, o.err
}

// rig is a stepper with a recording publisher and a fake time line.
type rig struct {
	s    *stepper
	h    *script
	pubs []Update
	now  time.Time
}

func newRig(t *testing.T, kind spec.ProbeKind, p spec.Probe, steps ...outcome) *rig {
	r := &rig{h: &script{t: t, steps: steps}, now: clock.Epoch}
	r.s = newStepper(kind, p, r.h, func(u Update) { r.pubs = append(r.pubs, u) })
	return r
}

func running(id string) Instance {
	return Instance{ID: id, Running: true, StartedAt: clock.Epoch, Started: true}
}

// tick advances the rig's time by d and runs one step.
func (r *rig) tick(d time.Duration, inst Instance) bool {
	r.now = r.now.Add(d)
	return r.s.doProbe(context.Background(), r.now, inst)
}

// results is the sequence of published results.
func (r *rig) results() []Result {
	out := make([]Result, len(r.pubs))
	for i, u := range r.pubs {
		out[i] = u.Result
	}
	return out
}

func eqResults(a, b []Result) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestInitialValuesPerKind(t *testing.T) {
	// P4: readiness starts Failure, liveness Success, startup Unknown, and
	// the reset is published, marked Initial, before any probe runs.
	for kind, want := range map[spec.ProbeKind]Result{spec.Readiness: Failure, spec.Liveness: Success, spec.Startup: Unknown} {
		r := newRig(t, kind, spec.Probe{InitialDelay: time.Hour})
		inst := running("a")
		inst.Started = kind != spec.Startup
		r.tick(0, inst)
		if len(r.pubs) != 1 || !r.pubs[0].Initial || r.pubs[0].Result != want || r.pubs[0].InstanceID != "a" || r.pubs[0].Kind != kind {
			t.Errorf("%s: published %+v, want one Initial %v for a", kind, r.pubs, want)
		}
		if r.h.calls != 0 {
			t.Errorf("%s: probed during the initial delay", kind)
		}
	}
}

func TestNoInstanceNoProbe(t *testing.T) {
	r := newRig(t, spec.Readiness, spec.Probe{})
	if !r.tick(time.Second, Instance{}) || len(r.pubs) != 0 || r.h.calls != 0 {
		t.Fatalf("with no instance the step must wait quietly; pubs %v calls %d", r.pubs, r.h.calls)
	}
}

func TestInitialDelay(t *testing.T) {
	// P3: ticks are skipped while now - StartedAt < initial delay; the
	// first probe is at the first tick at or after StartedAt + delay.
	r := newRig(t, spec.Readiness, spec.Probe{InitialDelay: 3 * time.Second, Period: time.Second}, ok)
	inst := running("a")
	for i := 0; i < 3; i++ { // t = 0.5, 1.5, 2.5
		d := time.Second
		if i == 0 {
			d = 500 * time.Millisecond
		}
		if !r.tick(d, inst) {
			t.Fatal("worker ended during the initial delay")
		}
	}
	if r.h.calls != 0 {
		t.Fatalf("probed %d times before the initial delay ended", r.h.calls)
	}
	r.tick(500*time.Millisecond, inst) // t = 3.0: not < 3s, so probe
	if r.h.calls != 1 {
		t.Fatalf("no probe at StartedAt + initial delay")
	}
	if got := r.results(); !eqResults(got, []Result{Failure, Success}) {
		t.Fatalf("published %v, want [failure success]", got)
	}
}

func TestSubSecondInitialDelay(t *testing.T) {
	// D7 with P3: a 250ms delay is honoured exactly, not rounded to seconds.
	r := newRig(t, spec.Readiness, spec.Probe{InitialDelay: 250 * time.Millisecond, Period: 100 * time.Millisecond}, ok)
	inst := running("a")
	r.tick(200*time.Millisecond, inst)
	if r.h.calls != 0 {
		t.Fatal("probed at 200ms with a 250ms initial delay")
	}
	r.tick(100*time.Millisecond, inst)
	if r.h.calls != 1 {
		t.Fatal("no probe at 300ms with a 250ms initial delay")
	}
}

func TestStartupGating(t *testing.T) {
	// P5: liveness and readiness skip ticks until the instance is started.
	for _, kind := range []spec.ProbeKind{spec.Liveness, spec.Readiness} {
		r := newRig(t, kind, spec.Probe{}, bad)
		inst := running("a")
		inst.Started = false
		for i := 0; i < 5; i++ {
			if !r.tick(10*time.Second, inst) {
				t.Fatalf("%s worker ended while waiting for the start", kind)
			}
		}
		if r.h.calls != 0 {
			t.Errorf("%s probed %d times before the start", kind, r.h.calls)
		}
		inst.Started = true
		r.tick(10*time.Second, inst)
		if r.h.calls != 1 {
			t.Errorf("%s did not probe once started", kind)
		}
	}
	// P5: the startup probe stops probing once the instance is started.
	r := newRig(t, spec.Startup, spec.Probe{}, ok)
	inst := running("a")
	inst.Started = false
	r.tick(0, inst)
	if got := r.results(); !eqResults(got, []Result{Unknown, Success}) {
		t.Fatalf("startup published %v, want [unknown success]", got)
	}
	inst.Started = true // the supervisor saw the Success
	for i := 0; i < 5; i++ {
		r.tick(10*time.Second, inst)
	}
	if r.h.calls != 1 {
		t.Fatalf("startup probe ran %d times after the start, want none", r.h.calls-1)
	}
}

func TestThresholds(t *testing.T) {
	// P6: a result is published only when its run reaches the threshold;
	// a different result in between starts a new run.
	r := newRig(t, spec.Readiness, spec.Probe{SuccessThreshold: 2, FailureThreshold: 3},
		ok, bad, ok, ok, bad, bad, ok, bad, bad, bad)
	inst := running("a")
	want := [][]Result{
		{Failure},                   // ok: run 1 < 2 (initial Failure only)
		{Failure},                   // bad: run 1 < 3, and Failure is already published
		{Failure},                   // ok: run 1
		{Failure, Success},          // ok: run 2 reaches SuccessThreshold
		{Failure, Success},          // bad: 1
		{Failure, Success},          // bad: 2
		{Failure, Success},          // ok: 1 breaks the run
		{Failure, Success},          // bad: 1
		{Failure, Success},          // bad: 2
		{Failure, Success, Failure}, // bad: 3 reaches FailureThreshold
	}
	for i, w := range want {
		r.tick(10*time.Second, inst)
		if got := r.results(); !eqResults(got, w) {
			t.Fatalf("after probe %d published %v, want %v", i+1, got, w)
		}
	}
	last := r.pubs[len(r.pubs)-1]
	if last.Message != "nope" || last.InstanceID != "a" || !last.Time.Equal(r.now) {
		t.Fatalf("failure update carries %+v, want the deciding probe's message and tick time", last)
	}
}

func TestLivenessHoldAndReset(t *testing.T) {
	// P7: a liveness Failure at its threshold is published and the worker
	// holds: no probes until a new instance. P4: the new instance starts
	// from Success and clears the hold; its run count starts from zero.
	r := newRig(t, spec.Liveness, spec.Probe{FailureThreshold: 2}, bad, bad, bad, ok, bad, bad)
	a := running("a")
	r.tick(0, a)
	r.tick(time.Second, a)
	if got := r.results(); !eqResults(got, []Result{Success, Failure}) {
		t.Fatalf("published %v, want [success failure]", got)
	}
	for i := 0; i < 10; i++ {
		r.tick(time.Second, a)
	}
	if r.h.calls != 2 {
		t.Fatalf("probed %d times while on hold", r.h.calls-2)
	}
	b := running("b")
	r.tick(time.Second, b) // bad: run 1 of 2 for b
	r.tick(time.Second, b) // ok
	r.tick(time.Second, b) // bad
	r.tick(time.Second, b) // bad: threshold
	want := []Result{Success, Failure, Success, Failure}
	if got := r.results(); !eqResults(got, want) {
		t.Fatalf("published %v, want %v", got, want)
	}
	if !r.pubs[2].Initial || r.pubs[2].InstanceID != "b" || r.pubs[3].InstanceID != "b" {
		t.Fatalf("new instance's updates: %+v", r.pubs[2:])
	}
}

func TestStartupHolds(t *testing.T) {
	// P7 applies to startup too: after its Failure, it waits for a new instance.
	r := newRig(t, spec.Startup, spec.Probe{FailureThreshold: 1}, bad)
	inst := running("a")
	inst.Started = false
	r.tick(0, inst)
	r.tick(time.Second, inst)
	r.tick(time.Second, inst)
	if r.h.calls != 1 || !eqResults(r.results(), []Result{Unknown, Failure}) {
		t.Fatalf("calls %d, published %v", r.h.calls, r.results())
	}
}

func TestReadinessNeverHolds(t *testing.T) {
	// P7: readiness keeps probing after a Failure, and recovers.
	r := newRig(t, spec.Readiness, spec.Probe{FailureThreshold: 1}, ok, bad, bad, ok)
	inst := running("a")
	for i := 0; i < 4; i++ {
		r.tick(time.Second, inst)
	}
	if want := []Result{Failure, Success, Failure, Success}; !eqResults(r.results(), want) {
		t.Fatalf("published %v, want %v", r.results(), want)
	}
}

func TestProberErrorNotCounted(t *testing.T) {
	// P10: a handler error is discarded: it neither counts towards a run
	// nor breaks one. The step retries the handler up to 3 times.
	r := newRig(t, spec.Liveness, spec.Probe{FailureThreshold: 3},
		bad, bad, boom, boom, boom, bad)
	var errs int
	r.s.onError = func(error) { errs++ }
	inst := running("a")
	r.tick(0, inst)           // bad 1
	r.tick(time.Second, inst) // bad 2
	r.tick(time.Second, inst) // boom ×3: discarded
	if !eqResults(r.results(), []Result{Success}) || errs != 1 || r.h.calls != 5 {
		t.Fatalf("after errors: published %v, onError %d times, calls %d", r.results(), errs, r.h.calls)
	}
	r.tick(time.Second, inst) // bad 3: the run survived the errors
	if !eqResults(r.results(), []Result{Success, Failure}) {
		t.Fatalf("published %v, want [success failure]", r.results())
	}
}

func TestRetryRecoversFromOneError(t *testing.T) {
	// P10 [mem]: an error followed by a real result within the same tick's
	// retries counts the real result.
	r := newRig(t, spec.Readiness, spec.Probe{}, boom, ok)
	r.tick(0, running("a"))
	if r.h.calls != 2 || !eqResults(r.results(), []Result{Failure, Success}) {
		t.Fatalf("calls %d, published %v", r.h.calls, r.results())
	}
}

func TestUnknownWithoutErrorIsFailure(t *testing.T) {
	// P10: kubelet's prober treats an error-free Unknown as Failure.
	r := newRig(t, spec.Liveness, spec.Probe{FailureThreshold: 1}, outcome{r: Unknown})
	r.tick(0, running("a"))
	if !eqResults(r.results(), []Result{Success, Failure}) {
		t.Fatalf("published %v", r.results())
	}
}

// fakeRunner answers execrun requests with a fixed Result.
type fakeRunner struct {
	res execrun.Result
	err error
	got execrun.Request
}

func (f *fakeRunner) Run(_ context.Context, req execrun.Request) (execrun.Result, error) {
	f.got = req
	return f.res, f.err
}

func TestExecTimeoutCountsAsFailure(t *testing.T) {
	// P10 (ExecProbeTimeout=true): a timed-out exec probe is a counted
	// Failure, not a discarded error.
	fr := &fakeRunner{res: execrun.Result{TimedOut: true, ExitCode: 137, Output: []byte("partial")}}
	p := spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"check"}}}, FailureThreshold: 1, Timeout: 2 * time.Second}
	h, err := NewHandler(p, ExecContext{Runner: fr, RunAs: proc.RunAs{Env: []string{"A=1"}}})
	if err != nil {
		t.Fatal(err)
	}
	var pubs []Update
	s := newStepper(spec.Liveness, p, h, func(u Update) { pubs = append(pubs, u) })
	s.doProbe(context.Background(), clock.Epoch, running("a"))
	if len(pubs) != 2 || pubs[1].Result != Failure || pubs[1].Message != "command timed out after 2s" || string(pubs[1].Output) != "partial" {
		t.Fatalf("published %+v", pubs)
	}
	if fr.got.Timeout != 2*time.Second || fr.got.Env[0] != "A=1" || fr.got.Argv[0] != "check" {
		t.Fatalf("runner got %+v", fr.got)
	}
}

func TestExecCouldNotRunIsError(t *testing.T) {
	// P10: a command that cannot run is Unknown plus an error.
	fr := &fakeRunner{err: errors.New("command not found")}
	h := &ExecHandler{Runner: fr, Request: execrun.Request{Argv: []string{"nope"}}}
	r, _, err := h.Probe(context.Background())
	if r != Unknown || err == nil {
		t.Fatalf("got %v, %v; want unknown and an error", r, err)
	}
	fr.err, fr.res = nil, execrun.Result{ExitCode: 3}
	if r, msg, err := h.Probe(context.Background()); r != Failure || err != nil || msg != "command exited with code 3" {
		t.Fatalf("non-zero exit: %v %q %v", r, msg, err)
	}
	fr.res = execrun.Result{}
	if r, _, err := h.Probe(context.Background()); r != Success || err != nil {
		t.Fatalf("exit 0: %v %v", r, err)
	}
}

func TestNotRunningIsFailureAndFinalEnds(t *testing.T) {
	// P8: a probe of a non-running instance records Failure without
	// probing; the worker ends when no instance will follow.
	r := newRig(t, spec.Readiness, spec.Probe{}, ok)
	inst := running("a")
	r.tick(0, inst)
	inst.Running = false
	if !r.tick(time.Second, inst) {
		t.Fatal("worker ended although another instance may follow")
	}
	inst.Final = true
	if r.tick(time.Second, inst) {
		t.Fatal("worker goes on after the final exit")
	}
	if r.h.calls != 1 || !eqResults(r.results(), []Result{Failure, Success, Failure}) {
		t.Fatalf("calls %d published %v", r.h.calls, r.results())
	}
}

func TestGroupStoppingQuietsLiveness(t *testing.T) {
	// P9: when the group is being stopped, liveness and startup record
	// Success and end; readiness goes on.
	r := newRig(t, spec.Liveness, spec.Probe{FailureThreshold: 2}, bad)
	inst := running("a")
	r.tick(0, inst)
	inst.GroupStopping = true
	if r.tick(time.Second, inst) {
		t.Fatal("liveness worker goes on while the group stops")
	}
	if r.h.calls != 1 {
		t.Fatal("probed while the group stops")
	}
	rs := newRig(t, spec.Startup, spec.Probe{})
	st := running("a")
	st.Started, st.GroupStopping = false, true
	if rs.tick(0, st) || !eqResults(rs.results(), []Result{Unknown, Success}) || rs.h.calls != 0 {
		t.Fatalf("startup while the group stops: published %v, calls %d; want [unknown success], no probe, end", rs.results(), rs.h.calls)
	}
	rr := newRig(t, spec.Readiness, spec.Probe{}, ok)
	if !rr.tick(0, inst) || rr.h.calls != 1 {
		t.Fatal("readiness must keep probing while the group stops")
	}
}

func TestPublishOnlyOnChange(t *testing.T) {
	// P6 with kubelet's results manager: an Update goes out only when the
	// published value changes (or a new instance resets it, P4).
	type tick struct {
		inst string
		o    outcome
	}
	cases := []struct {
		name  string
		kind  spec.ProbeKind
		ticks []tick
		want  []Result
	}{
		{"steady success publishes once", spec.Readiness, []tick{{"a", ok}, {"a", ok}, {"a", ok}}, []Result{Failure, Success}},
		{"steady failure equals initial: nothing after it", spec.Readiness, []tick{{"a", bad}, {"a", bad}, {"a", bad}}, []Result{Failure}},
		{"liveness success equals initial", spec.Liveness, []tick{{"a", ok}, {"a", ok}}, []Result{Success}},
		{"flapping publishes each change", spec.Readiness, []tick{{"a", ok}, {"a", bad}, {"a", ok}, {"a", ok}}, []Result{Failure, Success, Failure, Success}},
		{"errors publish nothing", spec.Readiness, []tick{{"a", ok}, {"a", boom}}, []Result{Failure, Success}},
		{"new instance republishes initial", spec.Readiness, []tick{{"a", ok}, {"b", ok}}, []Result{Failure, Success, Failure, Success}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var steps []outcome
			for _, tk := range c.ticks {
				steps = append(steps, tk.o)
				if tk.o.err != nil {
					steps = append(steps, tk.o, tk.o) // retries
				}
			}
			r := newRig(t, c.kind, spec.Probe{FailureThreshold: 1}, steps...)
			for _, tk := range c.ticks {
				r.tick(time.Second, running(tk.inst))
			}
			if !eqResults(r.results(), c.want) {
				t.Fatalf("published %v, want %v", r.results(), c.want)
			}
		})
	}
}

func TestReportHearsEveryProbeBeforeThePublishItCauses(t *testing.T) {
	// Kubelet records Unhealthy for each failed probe (not only the one
	// that crosses the threshold, P6): Report hears every counted outcome,
	// and the threshold's Publish comes after the report that caused it.
	// A discarded prober error (P10) counts toward no threshold and is
	// reported as Unknown (kubelet's prober_probe_total result "unknown").
	r := newRig(t, spec.Liveness, spec.Probe{Period: time.Second, FailureThreshold: 3}, bad, boom, boom, boom, ok, bad, bad, bad)
	var log []string
	r.s.publish = func(u Update) { log = append(log, "publish "+u.Result.String()) }
	r.s.report = func(u Update) {
		if u.InstanceID != "a" || u.Kind != spec.Liveness {
			t.Errorf("report %+v, want liveness of a", u)
		}
		log = append(log, "report "+u.Result.String()+" "+u.Message)
	}
	inst := running("a")
	for i := 0; i < 6; i++ {
		r.tick(time.Second, inst)
	}
	want := []string{"publish success", "report failure nope", "report unknown prober broke", "report success ", "report failure nope",
		"report failure nope", "report failure nope", "publish failure"}
	if len(log) != len(want) {
		t.Fatalf("log %q, want %q", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("log %q, want %q", log, want)
		}
	}
}

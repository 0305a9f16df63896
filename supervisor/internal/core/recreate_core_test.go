package core

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Recreate requests inside the group core, in the discrete-event
// simulation of sim_test.go (fake time, scripted processes).

// recreate feeds a request to the core as Supervisor.Recreate would,
// returning the core's verdict (C1's live part).
func (s *sim) recreate(id string, rs lifecycle.RecreateSpec) error {
	s.t.Helper()
	rs.Group = s.core.name
	if err := rs.Validate(); err != nil {
		return err
	}
	if err := s.core.checkRecreate(rs); err != nil {
		return err
	}
	s.feed(RecreateInput{ID: id, Spec: rs, Reply: make(chan error, 1)})
	return nil
}

func (s *sim) request(id string) lifecycle.RecreateStatus {
	s.t.Helper()
	for _, r := range s.core.RecreateSnapshot() {
		if r.ID == id {
			return r
		}
	}
	s.t.Fatalf("no request %s", id)
	return lifecycle.RecreateStatus{}
}

func (s *sim) eventsOf(request string) []lifecycle.Event {
	var out []lifecycle.Event
	for _, e := range s.events {
		if e.Request == request {
			out = append(out, e)
		}
	}
	return out
}

func (s *sim) signalsOf(process string) []time.Duration {
	var out []time.Duration
	for _, sg := range s.signals {
		if sg.process == process {
			out = append(out, sg.at)
		}
	}
	return out
}

func reqPhases(st lifecycle.RecreateStatus) string {
	var out []string
	for _, p := range st.Processes {
		out = append(out, p.Name+"="+string(p.Phase))
	}
	return string(st.Phase) + " " + strings.Join(out, " ")
}

func TestRecreateDuringCrashLoopX7(t *testing.T) {
	// A recreate during a crash loop starts the new
	// instance at once (X7: no back-off wait, no back-off advance), and the
	// crash back-off continues unchanged afterwards.
	s := newSim(t, oneProcess(spec.RestartAlways), spec.DefaultBackoff(), 0, func(_ string, n int) simRun {
		if n == 4 { // the recreated instance runs 5 s, then crashes
			return simRun{RunFor: 5 * time.Second, Code: 1}
		}
		return simRun{Code: 1}
	})
	s.runUntil(35 * time.Second) // T1: starts 0, 0, 10, 30; waiting until 70
	if ps := s.status("app"); ps.Reason != lifecycle.ReasonCrashLoopBackOff {
		t.Fatalf("not in CrashLoopBackOff: %+v", ps)
	}
	before := s.core.backoff.Get("app")
	if err := s.recreate("rc-1", lifecycle.RecreateSpec{Processes: []string{"app"}, MinStarted: time.Second, Requester: "alice"}); err != nil {
		t.Fatal(err)
	}
	if got := s.core.backoff.Get("app"); got != before {
		t.Errorf("X7: the recreate advanced the back-off from %s to %s", before, got)
	}
	s.runUntil(200 * time.Second)
	// Without the recreate: 0, 0, 10, 30, 70, 150. With it: the new
	// instance at 35 at once; it crashes at 40 and waits the same 40 s
	// the loop was at (B3 from its own FinishedAt), then 80 s (B2).
	assertTimes(t, "X7 starts", s.starts["app"], secs(0, 0, 10, 30, 35, 80, 160))
	if st := s.request("rc-1"); reqPhases(st) != "Completed app=Succeeded" {
		t.Errorf("request: %s", reqPhases(st))
	}
	var started *lifecycle.Event
	for i, e := range s.eventsOf("rc-1") {
		if e.Reason == lifecycle.EventStarted {
			started = &s.eventsOf("rc-1")[i]
		}
	}
	if started == nil || started.RestartCount != 4 || !strings.Contains(started.Message, "recreate rc-1 requested by alice") {
		t.Errorf("X7/R5: Started event of the recreate: %+v", started)
	}
}

func TestRecreateKillPathC4(t *testing.T) {
	// C4: the kill goes through pre_stop and the request's grace (K2, K3,
	// K5); X7: the new instance starts as soon as the old one is gone.
	g := appAndSidecar()
	g.TerminationGracePeriod = spec.Durp(30 * time.Second)
	g.Processes[0].PreStop = &spec.Hook{Handler: spec.Handler{Sleep: &spec.SleepAction{Duration: time.Second}}}
	s := newSim(t, g, spec.DefaultBackoff(), 2*time.Second, func(p string, n int) simRun {
		return simRun{RunFor: -1, IgnoreTerm: p == "app" && n == 0}
	})
	s.preStop["app"] = time.Second
	s.runUntil(time.Second)
	side := s.status("side")
	if err := s.recreate("rc-1", lifecycle.RecreateSpec{Processes: []string{"app"}, TerminationGracePeriod: spec.Durp(5 * time.Second), Requester: "alice"}); err != nil {
		t.Fatal(err)
	}
	s.runUntil(time.Minute)
	// pre_stop 1..2 s, SIGTERM at 2 s (ignored), SIGKILL at 2 + (5 − 1) s.
	assertTimes(t, "K3 stop signal", s.signalsOf("app"), secs(2))
	if len(s.kills) == 0 || s.kills[0].at != 6*time.Second {
		t.Errorf("K2/K3: SIGKILL at %v, want 6s", s.kills)
	}
	assertTimes(t, "X7 starts", s.starts["app"], secs(0, 6))
	if ps := s.status("app"); ps.RestartCount != 1 || ps.State != lifecycle.StateRunning {
		t.Errorf("R5: %+v", ps)
	}
	if got := s.status("side"); got.InstanceID != side.InstanceID || got.Pid != side.Pid || len(s.starts["side"]) != 1 {
		t.Errorf("the sidecar was touched: %+v → %+v", side, got)
	}
	var reasons []string
	for _, e := range s.eventsOf("rc-1") {
		reasons = append(reasons, e.Reason+"/"+e.Process)
	}
	if k := s.eventsWith(lifecycle.EventKilling); len(k) == 0 || !strings.Contains(k[0].Message, "recreate requested by alice") {
		t.Errorf("X7: Killing events %+v", k)
	}
	// Every step is an event tagged with the request: the request, the
	// process's turn, the stop (one Killing, SIGKILL after the grace
	// included: E1; the exit is no event: E2), the new instance's Created
	// and Started, the verdict, the completion.
	want := "Recreating/ Recreating/app Killing/app Created/app Started/app RecreateSucceeded/app RecreateCompleted/"
	if strings.Join(reasons, " ") != want {
		t.Errorf("events of rc-1:\n got %s\nwant %s", strings.Join(reasons, " "), want)
	}
	if st := s.request("rc-1"); reqPhases(st) != "Completed app=Succeeded" || st.Processes[0].PreviousInstanceID == st.Processes[0].InstanceID {
		t.Errorf("request %+v", st)
	}
}

func TestRecreateQueueC2(t *testing.T) {
	// C2, X8: one active request per group; later ones wait as Pending,
	// in order.
	s := newSim(t, appAndSidecar(), spec.DefaultBackoff(), 0, constant(simRun{RunFor: -1, TermExit: time.Second}))
	s.runUntil(time.Second)
	for i, p := range []string{"app", "side", "app"} {
		if err := s.recreate(fmt.Sprintf("rc-%d", i+1), lifecycle.RecreateSpec{Processes: []string{p}}); err != nil {
			t.Fatal(err)
		}
	}
	if a, b, c := s.request("rc-1"), s.request("rc-2"), s.request("rc-3"); a.Phase != lifecycle.RecreateRecreating || b.Phase != lifecycle.RecreatePending || c.Phase != lifecycle.RecreatePending {
		t.Fatalf("C2: %s / %s / %s", a.Phase, b.Phase, c.Phase)
	}
	if len(s.eventsWith(lifecycle.EventRecreatePending)) != 2 {
		t.Errorf("RecreatePending events: %+v", s.eventsWith(lifecycle.EventRecreatePending))
	}
	s.runUntil(time.Minute)
	// rc-1: app stopped at 1, gone at 2, new instance at 2, Succeeded at
	// 2 s + 1 ns (C7 strict); then rc-2 kills side, and so on.
	assertTimes(t, "app stop signals", s.signalsOf("app"), []time.Duration{time.Second, 3*time.Second + 2})
	assertTimes(t, "side stop signals", s.signalsOf("side"), []time.Duration{2*time.Second + 1})
	for _, id := range []string{"rc-1", "rc-2", "rc-3"} {
		if st := s.request(id); st.Phase != lifecycle.RecreateCompleted || st.Failed() {
			t.Errorf("%s: %s", id, reqPhases(st))
		}
	}
}

func TestRecreateUnreadyWindowC3(t *testing.T) {
	s := newSim(t, appAndSidecar(), spec.DefaultBackoff(), 0, constant(simRun{RunFor: -1}))
	s.runUntil(time.Second)
	if st := s.core.Snapshot(); !st.Ready {
		t.Fatalf("group not ready before the request: %+v", st)
	}
	if err := s.recreate("rc-1", lifecycle.RecreateSpec{Processes: []string{"app"}, UnreadyGracePeriod: spec.Durp(5 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if st := s.core.Snapshot(); st.Ready || st.ReadinessHeldBy != "rc-1" || !s.request("rc-1").HoldsReadiness {
		t.Errorf("C3: readiness not held at once: %+v", st)
	}
	s.runUntil(6*time.Second - 1)
	if len(s.signals) != 0 {
		t.Fatalf("C3: killed during the unready grace: %v", s.signals)
	}
	if st := s.core.Snapshot(); st.Ready {
		t.Error("C3: ready during the unready grace")
	}
	s.runUntil(time.Minute)
	assertTimes(t, "C3 kill after the grace", s.signalsOf("app"), secs(6))
	if st := s.core.Snapshot(); !st.Ready || st.ReadinessHeldBy != "" {
		t.Errorf("C3: readiness not released on completion: %+v", st)
	}
	if e := s.eventsWith(lifecycle.EventRecreateCompleted); len(e) != 1 || !strings.Contains(e[0].Message, "readiness released") {
		t.Errorf("completion event %+v", e)
	}
}

func TestRecreateReadinessAndMinStartedC7(t *testing.T) {
	// C7: Succeeded needs the new instance ready (P12, from the probe
	// seam) and running strictly longer than min_started.
	g := oneProcess(spec.RestartAlways)
	g.Processes[0].ReadinessProbe = &spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"x"}}}}
	s := newSim(t, g, spec.DefaultBackoff(), 0, constant(simRun{RunFor: -1}))
	s.runUntil(time.Second)
	if err := s.recreate("rc-1", lifecycle.RecreateSpec{Processes: []string{"app"}, MinStarted: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	s.runUntil(10 * time.Second) // new instance since 1 s, never ready
	if st := s.request("rc-1"); st.Phase != lifecycle.RecreateRecreating {
		t.Fatalf("C7: succeeded without readiness: %s", reqPhases(st))
	}
	s.feed(ProbeInput{Instance: s.core.mains[0].inst.id, Probe: spec.Readiness, Success: true})
	if st := s.request("rc-1"); reqPhases(st) != "Completed app=Succeeded" {
		t.Fatalf("C7: ready and running 9 s > 3 s: %s", reqPhases(st))
	}
}

func TestRecreateFailurePolicyC6(t *testing.T) {
	// app's new instance exits 1 under never: it ended for good, a failure.
	script := func(p string, n int) simRun {
		if p == "app" && n == 1 {
			return simRun{RunFor: time.Second, Code: 1}
		}
		return simRun{RunFor: -1}
	}
	group := func() spec.Group {
		g := appAndSidecar()
		g.RestartPolicy = spec.RestartNever
		return g
	}
	t.Run("C6 fail completes at the first failure; later processes untouched", func(t *testing.T) {
		s := newSim(t, group(), spec.DefaultBackoff(), 0, script)
		s.runUntil(time.Second)
		if err := s.recreate("rc-1", lifecycle.RecreateSpec{Processes: []string{"app", "side"}, Ordered: true, MinStarted: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
		s.runUntil(time.Minute)
		st := s.request("rc-1")
		if reqPhases(st) != "Completed app=Failed side=Failed" || !strings.Contains(st.Processes[0].Message, "ended for good") {
			t.Errorf("C6: %s %+v", reqPhases(st), st.Processes)
		}
		if len(s.signalsOf("side")) != 0 || len(s.starts["side"]) != 1 {
			t.Errorf("C6 fail: side was recreated after app failed")
		}
	})
	t.Run("C6 ignore carries on with the next process", func(t *testing.T) {
		s := newSim(t, group(), spec.DefaultBackoff(), 0, script)
		s.runUntil(time.Second)
		if err := s.recreate("rc-1", lifecycle.RecreateSpec{Processes: []string{"app", "side"}, Ordered: true, FailurePolicy: lifecycle.FailurePolicyIgnore, MinStarted: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
		s.runUntil(time.Minute)
		if st := s.request("rc-1"); reqPhases(st) != "Completed app=Failed side=Succeeded" || st.Message != "failed: app" {
			t.Errorf("C6: %s %q", reqPhases(st), st.Message)
		}
		assertTimes(t, "C5 side after app finished", s.signalsOf("side"), secs(2))
	})
	t.Run("a process stopped during its recreation fails it", func(t *testing.T) {
		s := newSim(t, appAndSidecar(), spec.DefaultBackoff(), 0, constant(simRun{RunFor: -1, TermExit: 2 * time.Second}))
		s.runUntil(time.Second)
		if err := s.recreate("rc-1", lifecycle.RecreateSpec{Processes: []string{"app"}}); err != nil {
			t.Fatal(err)
		}
		s.runUntil(2 * time.Second)
		s.command(CmdStop, "app", nil, "bob")
		s.runUntil(time.Minute)
		if st := s.request("rc-1"); reqPhases(st) != "Completed app=Failed" {
			t.Errorf("%s", reqPhases(st))
		}
		if len(s.starts["app"]) != 1 {
			t.Errorf("a stop wins over the recreate: starts %v", s.starts["app"])
		}
	})
}

func TestRecreateDeadlineAndTTLC8(t *testing.T) {
	g := oneProcess(spec.RestartAlways)
	g.Processes[0].ReadinessProbe = &spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"x"}}}}
	s := newSim(t, g, spec.DefaultBackoff(), 0, constant(simRun{RunFor: -1}))
	s.runUntil(time.Second)
	if err := s.recreate("rc-1", lifecycle.RecreateSpec{Processes: []string{"app"}, ActiveDeadline: 3 * time.Second, TTLAfterFinished: spec.Durp(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	s.runUntil(4*time.Second - 1)
	if st := s.request("rc-1"); st.Phase != lifecycle.RecreateRecreating {
		t.Fatalf("completed early: %s", reqPhases(st))
	}
	s.runUntil(4 * time.Second)
	st := s.request("rc-1")
	if reqPhases(st) != "Completed app=Failed" || !strings.Contains(st.Message, "active deadline") {
		t.Fatalf("C8: %s %q", reqPhases(st), st.Message)
	}
	s.runUntil(14*time.Second - 1)
	if len(s.core.RecreateSnapshot()) != 1 {
		t.Fatal("removed before its TTL")
	}
	s.runUntil(14 * time.Second)
	if len(s.core.RecreateSnapshot()) != 0 || len(s.eventsWith(lifecycle.EventRecreateRemoved)) != 1 {
		t.Errorf("C8 TTL: still there at completion + ttl: %+v", s.core.RecreateSnapshot())
	}
}

func TestRecreateChecksC1(t *testing.T) {
	g := appAndSidecar()
	g.Init = []spec.Process{{Name: "init", Command: []string{"x"}}}
	s := newSim(t, g, spec.DefaultBackoff(), 0, func(p string, n int) simRun {
		if p == "init" {
			return simRun{RunFor: time.Second}
		}
		return simRun{RunFor: -1}
	})
	s.runUntil(0)
	if err := s.recreate("rc-0", lifecycle.RecreateSpec{Processes: []string{"app"}}); !errors.Is(err, lifecycle.ErrInvalidRecreate) || !strings.Contains(err.Error(), "never been started") {
		t.Errorf("C1 no instance yet: %v", err)
	}
	s.runUntil(2 * time.Second)
	cases := []struct {
		rule string
		spec lifecycle.RecreateSpec
		want error
		msg  string
	}{
		{"C1 at least one process", lifecycle.RecreateSpec{Group: "g"}, lifecycle.ErrInvalidRecreate, "no process"},
		{"C1 each process once", lifecycle.RecreateSpec{Processes: []string{"app", "app"}}, lifecycle.ErrInvalidRecreate, `"app" is listed twice`},
		{"C1 the process exists", lifecycle.RecreateSpec{Processes: []string{"nope"}}, lifecycle.ErrInvalidRecreate, `no process "nope"`},
		{"I3 inits are not recreated", lifecycle.RecreateSpec{Processes: []string{"init"}}, lifecycle.ErrInvalidRecreate, "init process"},
		{"C1 deadline at least 3s", lifecycle.RecreateSpec{Processes: []string{"app"}, ActiveDeadline: 2 * time.Second}, lifecycle.ErrInvalidRecreate, "below the minimum of 3s"},
		{"C1 grace not negative", lifecycle.RecreateSpec{Processes: []string{"app"}, TerminationGracePeriod: spec.Durp(-1)}, lifecycle.ErrInvalidRecreate, "termination_grace_period -1ns is negative"},
		{"C1 unready grace not negative", lifecycle.RecreateSpec{Processes: []string{"app"}, UnreadyGracePeriod: spec.Durp(-time.Second)}, lifecycle.ErrInvalidRecreate, "unready_grace_period"},
		{"min_started not negative", lifecycle.RecreateSpec{Processes: []string{"app"}, MinStarted: -time.Second}, lifecycle.ErrInvalidRecreate, "min_started"},
		{"ttl not negative", lifecycle.RecreateSpec{Processes: []string{"app"}, TTLAfterFinished: spec.Durp(-time.Second)}, lifecycle.ErrInvalidRecreate, "ttl_after_finished"},
		{"C1 failure policy fail or ignore", lifecycle.RecreateSpec{Processes: []string{"app"}, FailurePolicy: "retry"}, lifecycle.ErrInvalidRecreate, `"retry"`},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			c.spec.Group = "g"
			err := s.recreate("rc-x", c.spec)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("got %v, want %v mentioning %q", err, c.want, c.msg)
			}
		})
	}
	s.command(CmdStop, "app", nil, "bob")
	s.runUntil(3 * time.Second)
	if err := s.recreate("rc-y", lifecycle.RecreateSpec{Processes: []string{"app"}}); !errors.Is(err, lifecycle.ErrGroupInactive) || !strings.Contains(err.Error(), "app stopped") {
		t.Errorf("C1 stopped process: %v", err)
	}
	s.command(CmdStop, "", nil, "bob")
	s.runUntil(4 * time.Second)
	if err := s.recreate("rc-z", lifecycle.RecreateSpec{Processes: []string{"side"}}); !errors.Is(err, lifecycle.ErrGroupInactive) || !strings.Contains(err.Error(), "Stopped") {
		t.Errorf("C1 inactive group: %v", err)
	}
	if len(s.core.RecreateSnapshot()) != 0 {
		t.Error("a rejected request was queued")
	}
}

func TestRecreateShutdownCompletesRequests(t *testing.T) {
	s := newSim(t, appAndSidecar(), spec.DefaultBackoff(), 0, constant(simRun{RunFor: -1, IgnoreTerm: true}))
	s.runUntil(time.Second)
	_ = s.recreate("rc-1", lifecycle.RecreateSpec{Processes: []string{"app"}, UnreadyGracePeriod: spec.Durp(time.Minute)})
	_ = s.recreate("rc-2", lifecycle.RecreateSpec{Processes: []string{"side"}})
	s.command(CmdShutdown, "", nil, "test")
	for _, id := range []string{"rc-1", "rc-2"} {
		st := s.request(id)
		if reqPhases(st) != fmt.Sprintf("Completed %s=Failed", st.Processes[0].Name) || !strings.Contains(st.Message, "shutting down") {
			t.Errorf("%s: %s %q", id, reqPhases(st), st.Message)
		}
	}
	if st := s.core.Snapshot(); st.ReadinessHeldBy != "" {
		t.Errorf("readiness still held: %+v", st)
	}
	if err := s.recreate("rc-3", lifecycle.RecreateSpec{Processes: []string{"side"}}); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("after shutdown: %v", err)
	}
}

// TestRecreateClockDriftInTheCore is C9 end to end in the core: the same
// queue of requests plays out identically whether the wall clock (event
// times, display times) is steady or jumps around; only the displayed
// times differ.
func TestRecreateClockDriftInTheCore(t *testing.T) {
	type outcome struct {
		starts, signals string
		phases          []string
		events          []string
	}
	play := func(skew func(elapsed time.Duration) time.Duration) (outcome, []lifecycle.Event) {
		g := appAndSidecar()
		g.Processes[0].ReadinessProbe = &spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"x"}}}}
		s := newSim(t, g, spec.DefaultBackoff(), 0, constant(simRun{RunFor: -1, TermExit: 500 * time.Millisecond}))
		s.core.wall = func() time.Time { return s.now.Add(skew(s.elapsed())) }
		s.runUntil(time.Second)
		s.feed(ProbeInput{Instance: s.core.mains[0].inst.id, Probe: spec.Readiness, Success: true})
		_ = s.recreate("rc-1", lifecycle.RecreateSpec{Processes: []string{"app", "side"}, Ordered: true, MinStarted: 2 * time.Second, ActiveDeadline: time.Minute})
		_ = s.recreate("rc-2", lifecycle.RecreateSpec{Processes: []string{"side"}, UnreadyGracePeriod: spec.Durp(time.Second)})
		s.runUntil(3 * time.Second)
		s.feed(ProbeInput{Instance: s.core.mains[0].inst.id, Probe: spec.Readiness, Success: true})
		s.runUntil(time.Minute)
		var o outcome
		o.starts = fmt.Sprint(s.starts)
		o.signals = fmt.Sprint(s.signals)
		for _, r := range s.core.RecreateSnapshot() {
			o.phases = append(o.phases, reqPhases(r))
		}
		for _, e := range s.events {
			o.events = append(o.events, e.Reason+"/"+e.Process+"/"+e.Request+"/"+e.InstanceID)
		}
		return o, s.events
	}
	steady, steadyEvents := play(func(time.Duration) time.Duration { return 0 })
	if fmt.Sprint(steady.phases) != "[Completed app=Succeeded side=Succeeded Completed side=Succeeded]" {
		t.Fatalf("steady run: %v", steady.phases)
	}
	jumpy := func(e time.Duration) time.Duration {
		switch {
		case e < 2*time.Second:
			return time.Hour // ahead while the requests are accepted
		case e < 5*time.Second:
			return -3 * time.Hour // then far behind
		default:
			return 10 * time.Minute
		}
	}
	drifted, driftedEvents := play(jumpy)
	if fmt.Sprint(drifted) != fmt.Sprint(steady) {
		t.Errorf("C9: decisions depend on the wall clock:\nsteady  %+v\ndrifted %+v", steady, drifted)
	}
	// Events carry the skewed wall times: the display follows the wall
	// clock, the decisions do not.
	for i := range steadyEvents {
		if got, want := driftedEvents[i].Time.Sub(steadyEvents[i].Time), jumpy(steadyEvents[i].Time.Sub(steadyEvents[0].Time)); got != want {
			t.Errorf("event %d (%s) time skew %s, want %s", i, driftedEvents[i].Reason, got, want)
			break
		}
	}
}

package core

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// decideRecreate is a pure function of (request, observed processes, now):
// these tests drive it with a fake clock and hand-made observations.

// world is what the core would observe, per process.
type world map[string]observedProcess

func (w world) observe(name string) observedProcess { return w[name] }

// live is a running, ready instance started at t.
func live(id string, t time.Time) observedProcess {
	return observedProcess{exists: true, wanted: true, current: id, running: true, ready: true, startedAt: t, startedWall: t}
}

// newRecreate is an active (Recreating) request accepted at now.
func newRecreate(s lifecycle.RecreateSpec, now time.Time) recreateState {
	r := recreateState{id: "rc-1", spec: s, phase: lifecycle.RecreatePending, created: now, createdWall: now}
	for _, n := range s.Processes {
		r.procs = append(r.procs, procRecreate{name: n, phase: lifecycle.ProcessRecreatePending})
	}
	return r.activate(now, now)
}

func procPhases(r recreateState) string {
	var out []string
	for _, p := range r.procs {
		out = append(out, p.name+"="+string(p.phase))
	}
	return strings.Join(out, " ")
}

func TestDecideRecreateOrder(t *testing.T) {
	fc := clock.NewFake(clock.Epoch)
	t0 := fc.Now()
	w := world{"app": live("app-0", t0.Add(-time.Hour)), "side": live("side-0", t0.Add(-time.Hour))}

	t.Run("C5 parallel: every pending process is killed in the same pass", func(t *testing.T) {
		r, o := decideRecreate(newRecreate(lifecycle.RecreateSpec{Processes: []string{"app", "side"}}, t0), w.observe, t0, t0)
		if fmt.Sprint(o.kill) != "[app side]" || procPhases(r) != "app=Recreating side=Recreating" {
			t.Fatalf("kill %v, %s", o.kill, procPhases(r))
		}
		if r.procs[0].baseline != "app-0" || r.procs[1].baseline != "side-0" {
			t.Errorf("C7: baselines %+v", r.procs)
		}
	})
	t.Run("C5 ordered: one at a time, the next only after the previous Succeeded", func(t *testing.T) {
		r, o := decideRecreate(newRecreate(lifecycle.RecreateSpec{Processes: []string{"app", "side"}, Ordered: true}, t0), w.observe, t0, t0)
		if fmt.Sprint(o.kill) != "[app]" || procPhases(r) != "app=Recreating side=Pending" {
			t.Fatalf("kill %v, %s", o.kill, procPhases(r))
		}
		// The new app instance runs; min_started 0 still needs "longer
		// than 0" (C7 is strict): not at its start instant.
		fc.Advance(time.Second)
		w2 := world{"app": live("app-1", fc.Now()), "side": w["side"]}
		r, o = decideRecreate(r, w2.observe, fc.Now(), fc.Now())
		if len(o.kill) != 0 || procPhases(r) != "app=Recreating side=Pending" {
			t.Fatalf("C7 strict: kill %v, %s", o.kill, procPhases(r))
		}
		if want := fc.Now().Add(time.Nanosecond); !o.wake.Equal(want) {
			t.Errorf("wake %v, want %v", o.wake, want)
		}
		fc.Advance(time.Nanosecond)
		r, o = decideRecreate(r, w2.observe, fc.Now(), fc.Now())
		if fmt.Sprint(o.kill) != "[side]" || procPhases(r) != "app=Succeeded side=Recreating" || r.procs[0].instance != "app-1" {
			t.Fatalf("C5: kill %v, %s", o.kill, procPhases(r))
		}
	})
}

func TestDecideRecreateFailurePolicy(t *testing.T) {
	fc := clock.NewFake(clock.Epoch)
	t0 := fc.Now()
	old := t0.Add(-time.Hour)
	endedForGood := observedProcess{exists: true, wanted: true, done: true, last: "app-1", lastExit: "exit code 1, Error"}

	t.Run("C6 fail: the first failure completes the request", func(t *testing.T) {
		w := world{"app": live("app-0", old), "side": live("side-0", old)}
		r, _ := decideRecreate(newRecreate(lifecycle.RecreateSpec{Processes: []string{"app", "side"}}, t0), w.observe, t0, t0)
		fc.Advance(time.Second)
		w = world{"app": endedForGood, "side": {exists: true, wanted: true, last: "side-0"}}
		r, o := decideRecreate(r, w.observe, fc.Now(), fc.Now())
		if r.phase != lifecycle.RecreateCompleted || procPhases(r) != "app=Failed side=Failed" {
			t.Fatalf("C6: %s %s", r.phase, procPhases(r))
		}
		if !strings.Contains(r.message, "app failed") || !strings.Contains(r.procs[0].message, "ended for good") ||
			!strings.Contains(r.procs[1].message, "not recreated") {
			t.Errorf("messages: %q %+v", r.message, r.procs)
		}
		if len(o.kill) != 0 || !r.completed.Equal(fc.Now()) {
			t.Errorf("kill %v completed %v", o.kill, r.completed)
		}
	})
	t.Run("C6 ignore: a failure lets an ordered request carry on at once", func(t *testing.T) {
		w := world{"app": live("app-0", old), "side": live("side-0", old)}
		r, _ := decideRecreate(newRecreate(lifecycle.RecreateSpec{Processes: []string{"app", "side"}, Ordered: true, FailurePolicy: lifecycle.FailurePolicyIgnore}, t0), w.observe, t0, t0)
		fc.Advance(time.Second)
		w["app"] = endedForGood
		r, o := decideRecreate(r, w.observe, fc.Now(), fc.Now())
		if r.phase != lifecycle.RecreateRecreating || procPhases(r) != "app=Failed side=Recreating" || fmt.Sprint(o.kill) != "[side]" {
			t.Fatalf("C6 ignore: %s %s kill %v", r.phase, procPhases(r), o.kill)
		}
		fc.Advance(time.Second)
		w["side"] = live("side-1", fc.Now().Add(-time.Millisecond))
		r, _ = decideRecreate(r, w.observe, fc.Now(), fc.Now())
		if r.phase != lifecycle.RecreateCompleted || procPhases(r) != "app=Failed side=Succeeded" || r.message != "failed: app" {
			t.Fatalf("C6: %s %s %q", r.phase, procPhases(r), r.message)
		}
		if !r.status(false).Failed() {
			t.Error("Failed() must report the failed process")
		}
	})
	t.Run("C6 ignore: a stopped process fails at its turn and the next goes", func(t *testing.T) {
		w := world{"app": {exists: true, wanted: false, last: "app-0"}, "side": live("side-0", old)}
		r, o := decideRecreate(newRecreate(lifecycle.RecreateSpec{Processes: []string{"app", "side"}, Ordered: true, FailurePolicy: lifecycle.FailurePolicyIgnore}, t0), w.observe, t0, t0)
		if procPhases(r) != "app=Failed side=Recreating" || fmt.Sprint(o.kill) != "[side]" {
			t.Fatalf("%s kill %v", procPhases(r), o.kill)
		}
	})
	t.Run("all succeeded: completed with no message", func(t *testing.T) {
		w := world{"app": live("app-0", old)}
		r, _ := decideRecreate(newRecreate(lifecycle.RecreateSpec{Processes: []string{"app"}}, t0), w.observe, t0, t0)
		w["app"] = live("app-1", t0)
		r, _ = decideRecreate(r, w.observe, t0.Add(time.Second), t0.Add(time.Second))
		if r.phase != lifecycle.RecreateCompleted || r.message != "" || r.status(false).Failed() {
			t.Fatalf("%s %q", r.phase, r.message)
		}
	})
}

func TestDecideRecreateDeadline(t *testing.T) {
	fc := clock.NewFake(clock.Epoch)
	t0 := fc.Now()
	notReady := live("app-1", t0)
	notReady.ready = false

	t.Run("C8 the deadline completes unfinished processes as Failed", func(t *testing.T) {
		w := world{"app": live("app-0", t0.Add(-time.Hour)), "side": live("side-0", t0.Add(-time.Hour))}
		r, o := decideRecreate(newRecreate(lifecycle.RecreateSpec{Processes: []string{"app", "side"}, Ordered: true, ActiveDeadline: 10 * time.Second}, t0), w.observe, t0, t0)
		if !o.wake.Equal(t0.Add(10 * time.Second)) {
			t.Errorf("wake %v, want the deadline", o.wake)
		}
		w["app"] = notReady
		fc.Set(t0.Add(10*time.Second - time.Nanosecond))
		r, _ = decideRecreate(r, w.observe, fc.Now(), fc.Now())
		if r.phase != lifecycle.RecreateRecreating {
			t.Fatalf("completed before the deadline: %s", r.phase)
		}
		fc.Advance(time.Nanosecond)
		r, o = decideRecreate(r, w.observe, fc.Now(), fc.Now())
		if r.phase != lifecycle.RecreateCompleted || procPhases(r) != "app=Failed side=Failed" || len(o.kill) != 0 {
			t.Fatalf("C8: %s %s kill %v", r.phase, procPhases(r), o.kill)
		}
		if !strings.Contains(r.message, "exceeded the active deadline of 10s") || !strings.Contains(r.procs[0].message, "within the active deadline") {
			t.Errorf("messages %q %+v", r.message, r.procs)
		}
	})
	t.Run("C8 the deadline counts from acceptance, queued time included", func(t *testing.T) {
		r := recreateState{id: "rc-2", spec: lifecycle.RecreateSpec{Processes: []string{"app"}, ActiveDeadline: 5 * time.Second},
			phase: lifecycle.RecreatePending, created: t0, procs: []procRecreate{{name: "app", phase: lifecycle.ProcessRecreatePending}}}
		w := world{"app": live("app-0", t0)}
		r, o := decideRecreate(r, w.observe, t0.Add(4*time.Second), t0)
		if r.phase != lifecycle.RecreatePending || len(o.kill) != 0 || !o.wake.Equal(t0.Add(5*time.Second)) {
			t.Fatalf("a queued request is not decided beyond its deadline: %s kill %v wake %v", r.phase, o.kill, o.wake)
		}
		r, _ = decideRecreate(r, w.observe, t0.Add(5*time.Second), t0)
		if r.phase != lifecycle.RecreateCompleted || procPhases(r) != "app=Failed" {
			t.Fatalf("C8: %s %s", r.phase, procPhases(r))
		}
	})
	t.Run("C7 before C8: success at the deadline instant counts", func(t *testing.T) {
		w := world{"app": live("app-0", t0.Add(-time.Hour))}
		r, _ := decideRecreate(newRecreate(lifecycle.RecreateSpec{Processes: []string{"app"}, ActiveDeadline: 10 * time.Second}, t0), w.observe, t0, t0)
		w["app"] = live("app-1", t0.Add(time.Second))
		r, _ = decideRecreate(r, w.observe, t0.Add(10*time.Second), t0)
		if procPhases(r) != "app=Succeeded" {
			t.Fatalf("%s", procPhases(r))
		}
	})
}

func TestDecideRecreateTTL(t *testing.T) {
	t0 := clock.Epoch
	completed := func(ttl *time.Duration) recreateState {
		r := newRecreate(lifecycle.RecreateSpec{Processes: []string{"app"}, TTLAfterFinished: ttl}, t0)
		return r.complete(t0.Add(time.Second), t0, "", "")
	}
	cases := []struct {
		rule    string
		ttl     *time.Duration
		removal time.Duration // after completion
	}{
		{"C8 ttl_after_finished removes the request that long after completion", durp(30 * time.Second), 30 * time.Second},
		{"ttl 0 removes it as it completes", durp(0), 0},
		{"no ttl: DefaultRecreateTTL", nil, lifecycle.DefaultRecreateTTL},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			r := completed(c.ttl)
			end := r.completed.Add(c.removal)
			if c.removal > 0 {
				_, o := decideRecreate(r, world{}.observe, end.Add(-time.Nanosecond), t0)
				if o.remove || !o.wake.Equal(end) {
					t.Fatalf("before the TTL: remove %v wake %v, want wake %v", o.remove, o.wake, end)
				}
			}
			if _, o := decideRecreate(r, world{}.observe, end, t0); !o.remove {
				t.Fatal("not removed at the TTL")
			}
		})
	}
}

func durp(d time.Duration) *time.Duration { return &d }

func TestDecideRecreateUnreadyGrace(t *testing.T) {
	// C3: readiness is held false first; the kill waits the unready grace.
	fc := clock.NewFake(clock.Epoch)
	t0 := fc.Now()
	w := world{"app": live("app-0", t0.Add(-time.Hour))}
	r, o := decideRecreate(newRecreate(lifecycle.RecreateSpec{Processes: []string{"app"}, UnreadyGracePeriod: durp(5 * time.Second)}, t0), w.observe, t0, t0)
	if !o.holdReadiness || len(o.kill) != 0 || !o.wake.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("C3: hold %v kill %v wake %v", o.holdReadiness, o.kill, o.wake)
	}
	fc.Advance(5*time.Second - time.Nanosecond)
	r, o = decideRecreate(r, w.observe, fc.Now(), fc.Now())
	if o.holdReadiness || len(o.kill) != 0 {
		t.Fatalf("C3: hold %v (held once) kill %v before the grace", o.holdReadiness, o.kill)
	}
	fc.Advance(time.Nanosecond)
	_, o = decideRecreate(r, w.observe, fc.Now(), fc.Now())
	if fmt.Sprint(o.kill) != "[app]" {
		t.Fatalf("C3: kill %v at the end of the grace", o.kill)
	}
	t.Run("unready grace 0 holds readiness and kills at once", func(t *testing.T) {
		_, o := decideRecreate(newRecreate(lifecycle.RecreateSpec{Processes: []string{"app"}, UnreadyGracePeriod: durp(0)}, t0), w.observe, t0, t0)
		if !o.holdReadiness || fmt.Sprint(o.kill) != "[app]" {
			t.Fatalf("hold %v kill %v", o.holdReadiness, o.kill)
		}
	})
}

func TestDecideRecreateMinStarted(t *testing.T) {
	// C7: Succeeded needs a new instance id, running, ready, and
	// now − started > min_started (strict).
	t0 := clock.Epoch
	spec := lifecycle.RecreateSpec{Processes: []string{"app"}, MinStarted: 10 * time.Second}
	ordered, _ := decideRecreate(newRecreate(spec, t0), world{"app": live("app-0", t0.Add(-time.Hour))}.observe, t0, t0)
	started := t0.Add(2 * time.Second)
	notReady := live("app-1", started)
	notReady.ready = false
	stopping := live("app-1", started)
	stopping.running = false
	cases := []struct {
		rule    string
		obs     observedProcess
		at      time.Duration // after started
		success bool
		wake    time.Duration // after started; -1: none
	}{
		{"C7 exactly min_started is not enough", live("app-1", started), 10 * time.Second, false, 10*time.Second + 1},
		{"C7 strictly longer succeeds", live("app-1", started), 10*time.Second + 1, true, -1},
		{"C7 not ready never succeeds", notReady, time.Hour, false, -1},
		{"C7 an instance being stopped is not recreated", stopping, time.Hour, false, -1},
		{"C9 the instance the request replaces never counts, however long it ran", live("app-0", t0.Add(-time.Hour)), time.Hour, false, -1},
		{"C7 no instance yet (between instances)", observedProcess{exists: true, wanted: true, last: "app-0"}, time.Hour, false, -1},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			r, o := decideRecreate(ordered, world{"app": c.obs}.observe, started.Add(c.at), t0)
			if got := r.procs[0].phase == lifecycle.ProcessRecreateSucceeded; got != c.success {
				t.Fatalf("succeeded %v, want %v (%s)", got, c.success, procPhases(r))
			}
			if c.wake >= 0 && !o.wake.Equal(started.Add(c.wake)) {
				t.Errorf("wake %v, want %v", o.wake, started.Add(c.wake))
			}
			if c.wake < 0 && !c.success && !o.wake.IsZero() {
				t.Errorf("unexpected wake %v", o.wake)
			}
		})
	}
}

// TestDecideRecreateClockDrift is C9. clock.Fake readings have no
// monotonic component, so the wall clock is modelled apart: every wall
// reading (the request's creation, each instance's start) comes from a
// skewed source, while now (the decision clock) stays steady. The same
// request must take the same decisions whatever the wall clock does,
// including a never-killed instance that "started after the request" on a
// clock running ahead: kruise before d42041d61 skipped its kill.
func TestDecideRecreateClockDrift(t *testing.T) {
	type step struct {
		at  time.Duration // on the decision clock
		obs func(wall func(time.Duration) time.Time) world
	}
	t0 := clock.Epoch
	rel := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Sub(t0).String()
	}
	run := func(wall func(time.Duration) time.Time) []string {
		inst := func(id string, at time.Duration) observedProcess {
			o := live(id, t0.Add(at))
			o.startedWall = wall(at)
			return o
		}
		old := func(func(time.Duration) time.Time) world {
			return world{"app": inst("app-0", -time.Millisecond), "side": inst("side-0", -time.Millisecond)}
		}
		steps := []step{
			// app-0 and side-0 started just before the request on the
			// decision clock; on a skewed wall clock they may seem newer.
			{0, old},
			// The kill is slow (a pre_stop, say): app-0 still looks running
			// and ready, and has run longer than min_started.
			{2500 * time.Millisecond, old},
			{3 * time.Second, func(func(time.Duration) time.Time) world {
				return world{"app": inst("app-1", 3*time.Second), "side": inst("side-0", -time.Millisecond)}
			}},
			{5*time.Second + 1, func(func(time.Duration) time.Time) world {
				return world{"app": inst("app-1", 3*time.Second), "side": inst("side-0", -time.Millisecond)}
			}},
			{6 * time.Second, func(func(time.Duration) time.Time) world {
				return world{"app": inst("app-1", 3*time.Second), "side": inst("side-1", 6*time.Second)}
			}},
			{8*time.Second + 1, func(func(time.Duration) time.Time) world {
				return world{"app": inst("app-1", 3*time.Second), "side": inst("side-1", 6*time.Second)}
			}},
			{18*time.Second + 1, func(func(time.Duration) time.Time) world { return world{} }},
		}
		spec := lifecycle.RecreateSpec{Processes: []string{"app", "side"}, Ordered: true, MinStarted: 2 * time.Second, ActiveDeadline: time.Minute, TTLAfterFinished: durp(10 * time.Second)}
		r := recreateState{id: "rc-1", spec: spec, phase: lifecycle.RecreatePending, created: t0, createdWall: wall(0)}
		for _, n := range spec.Processes {
			r.procs = append(r.procs, procRecreate{name: n, phase: lifecycle.ProcessRecreatePending})
		}
		r = r.activate(t0, wall(0))
		var trace []string
		for _, s := range steps {
			var o recreateOrders
			r, o = decideRecreate(r, s.obs(wall).observe, t0.Add(s.at), wall(s.at))
			trace = append(trace, fmt.Sprintf("%s: %s %s kill=%v wake=%v remove=%v completed=%v",
				s.at, r.phase, procPhases(r), o.kill, rel(o.wake), o.remove, rel(r.completed)))
		}
		return trace
	}
	steady := run(func(d time.Duration) time.Time { return t0.Add(d) })
	want := []string{
		"0s: Recreating app=Recreating side=Pending kill=[app] wake=1m0s remove=false completed=-",
		"2.5s: Recreating app=Recreating side=Pending kill=[] wake=1m0s remove=false completed=-",
		"3s: Recreating app=Recreating side=Pending kill=[] wake=5.000000001s remove=false completed=-",
		"5.000000001s: Recreating app=Succeeded side=Recreating kill=[side] wake=1m0s remove=false completed=-",
		"6s: Recreating app=Succeeded side=Recreating kill=[] wake=8.000000001s remove=false completed=-",
		"8.000000001s: Completed app=Succeeded side=Succeeded kill=[] wake=- remove=false completed=8.000000001s",
		"18.000000001s: Completed app=Succeeded side=Succeeded kill=[] wake=- remove=true completed=8.000000001s",
	}
	if !reflect.DeepEqual(steady, want) {
		t.Fatalf("steady clock:\n%s", strings.Join(steady, "\n"))
	}
	skews := map[string]func(time.Duration) time.Time{
		"wall clock an hour ahead (node clock fast)": func(d time.Duration) time.Time { return t0.Add(time.Hour + d) },
		"wall clock an hour behind":                  func(d time.Duration) time.Time { return t0.Add(-time.Hour + d) },
		"wall clock jumps back 2h after the request": func(d time.Duration) time.Time {
			if d > 0 {
				return t0.Add(d - 2*time.Hour)
			}
			return t0.Add(d)
		},
		"wall clock jumps forward 2h during app's min_started": func(d time.Duration) time.Time {
			if d >= 2*time.Second {
				return t0.Add(d + 2*time.Hour)
			}
			return t0.Add(d)
		},
		// C9's kruise bug: the instance the request must replace seems
		// to have started after the request, as with a node clock ahead
		// of the apiserver's.
		"wall clock jumps back 1h just before the request": func(d time.Duration) time.Time {
			if d < 0 {
				return t0.Add(d)
			}
			return t0.Add(d - time.Hour)
		},
		"wall clock runs 3x fast": func(d time.Duration) time.Time { return t0.Add(time.Minute + d*3) },
	}
	for name, wall := range skews {
		t.Run(name, func(t *testing.T) {
			if got := run(wall); !reflect.DeepEqual(got, steady) {
				t.Errorf("C9: decisions changed with the wall clock:\n%s", strings.Join(got, "\n"))
			}
		})
	}
}

package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// The BackOff events of a crash loop are one series with a growing count,
// as kubelet's are ("Back-off restarting failed container", E4): the
// growing delay is not in the message, which made each an event of its
// own (10s, 20s, 40s, ...) that never folded.
func TestBackOffEventsAggregate(t *testing.T) {
	f := startFake(t, configOf(oneProcess(spec.RestartAlways)), constant(simRun{Code: 1}))
	f.advanceTo(400 * time.Second) // starts at 0, 0, 10, 30, 70, 150, 310
	f.shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var backoffs []lifecycle.Event
	for {
		e, err := f.sub.Next(ctx)
		if err != nil {
			t.Fatalf("events: %v", err)
		}
		if e.Reason == lifecycle.EventBackOff {
			backoffs = append(backoffs, e)
		}
		if e.Reason == lifecycle.EventKilling || len(backoffs) == 5 {
			break
		}
	}
	if len(backoffs) < 5 {
		t.Fatalf("%d BackOff events, want one per refused start (5)", len(backoffs))
	}
	for i, e := range backoffs {
		if e.Series != backoffs[0].Series || e.Count != i+1 || !e.FirstTime.Equal(backoffs[0].Time) {
			t.Errorf("BackOff %d: series %d count %d first %v, want series %d count %d first %v (message %q)",
				i, e.Series, e.Count, e.FirstTime, backoffs[0].Series, i+1, backoffs[0].Time, e.Message)
		}
		if e.Message != "Back-off restarting failed process app" {
			t.Errorf("BackOff %d message %q", i, e.Message)
		}
	}
}

// A process's CreatedAt is when podsup took it on, not its instance's
// start: restarts leave it, so AGE does not reset (kubectl's AGE is the
// pod's).
func TestCreatedAtSurvivesRestarts(t *testing.T) {
	f := startFake(t, configOf(oneProcess(spec.RestartAlways)), constant(simRun{RunFor: time.Second, Code: 1}))
	f.advanceTo(100 * time.Second)
	ps, ok := f.sup.Status().Groups[0].Process("app")
	if !ok || ps.RestartCount < 3 {
		t.Fatalf("app: %+v, want several restarts", ps)
	}
	if !ps.CreatedAt.Equal(clock.Epoch) {
		t.Errorf("CreatedAt after %d restarts is %v, want the start of podsup %v", ps.RestartCount, ps.CreatedAt, clock.Epoch)
	}
	f.shutdown()
}

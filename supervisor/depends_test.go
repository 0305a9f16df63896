package supervisor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
)

// W1 and W8 between groups, through the workers and the depHub, on the
// fake clock.

func dbAndApp(order spec.StopOrder) spec.Config {
	db := spec.Group{Name: "db", Processes: []spec.Process{{Name: "db", Command: []string{"x"}}}}
	app := spec.Group{
		Name:      "app",
		DependsOn: []spec.Dependency{{Name: "db", Condition: spec.ConditionStarted}},
		Processes: []spec.Process{{Name: "app", Command: []string{"x"}}},
	}
	cfg := configOf(app, db) // the dependent first: the order of the file does not matter
	cfg.Supervisor.StopOrder = order
	return cfg
}

// drain returns "reason group@seconds" of every event published so far.
func (f *fakeRun) drain() []string {
	var out []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		e, err := f.sub.Next(ctx)
		cancel()
		if err != nil {
			return out
		}
		out = append(out, fmt.Sprintf("%s %s@%g", e.Reason, e.Group, e.Time.Sub(clock.Epoch).Seconds()))
	}
}

func TestGroupDependsOnThroughTheWorkers(t *testing.T) {
	f := startFake(t, dbAndApp(""), constant(simRun{RunFor: -1, TermExit: time.Second}))
	f.advanceTo(time.Second)
	assertTimes(t, "db", f.rt.startsOf("db"), secs(0))
	assertTimes(t, "app", f.rt.startsOf("app"), secs(0))
	evs := strings.Join(f.drain(), ", ")
	if !strings.Contains(evs, "Started db@0") || !strings.Contains(evs, "DependenciesMet app@0, Created app@0, Started app@0") || strings.Index(evs, "Started db@0") > strings.Index(evs, "DependenciesMet app@0") {
		t.Errorf("W1, W3: app must start in the instant db started: %s", evs)
	}
	f.shutdown()
	evs = strings.Join(f.drain(), ", ")
	// W8: app stops first; db's stop begins when app has exited, a
	// second later (E2: an exit is no event).
	if !strings.Contains(evs, "Killing app@1, Killing db@2") {
		t.Errorf("W8: %s", evs)
	}
}

func TestGroupsStopInParallelWhenAsked(t *testing.T) {
	f := startFake(t, dbAndApp(spec.StopParallel), constant(simRun{RunFor: -1, TermExit: time.Second}))
	f.advanceTo(time.Second)
	f.drain()
	f.shutdown()
	evs := strings.Join(f.drain(), ", ")
	if !strings.Contains(evs, "Killing db@1") || !strings.Contains(evs, "Killing app@1") {
		t.Errorf("W9: %s", evs)
	}
}

// A group removed by one reload and added back by a later one starts
// from nothing: its former last state (here: completed) must not reach a
// dependent that the later reload adds with it (W1 between groups).
func TestReaddedGroupDoesNotInheritItsFormerState(t *testing.T) {
	db := spec.Group{Name: "db", RestartPolicy: spec.RestartNever, Processes: []spec.Process{{Name: "db", Command: []string{"x"}}}}
	f := startFake(t, configOf(db), func(p string, n int) simRun {
		if p == "db" && n == 0 {
			return simRun{RunFor: time.Second} // the first db completes
		}
		return simRun{RunFor: -1}
	})
	f.advanceTo(2 * time.Second)
	other := spec.Group{Name: "other", Processes: []spec.Process{{Name: "o", Command: []string{"x"}}}}
	if _, err := f.sup.Reload(configOf(other)); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(3 * time.Second)
	app := spec.Group{
		Name:      "app",
		DependsOn: []spec.Dependency{{Name: "db", Condition: spec.ConditionCompleted}},
		Processes: []spec.Process{{Name: "app", Command: []string{"x"}}},
	}
	if _, err := f.sup.Reload(configOf(other, app, db)); err != nil {
		t.Fatal(err)
	}
	f.advanceTo(10 * time.Second)
	if starts := f.rt.startsOf("app"); len(starts) != 0 {
		t.Errorf("app started at %v while the re-added db runs: it was given the removed db's completion", starts)
	}
	f.shutdown()
}

// Package coresim holds what the tests of the supervisor's core and of
// its worker script alike: how a simulated instance behaves (Run, Script)
// and the small groups and time helpers their cases are written in. The
// core's tests drive it in a discrete-event simulation, the supervisor's
// through a fake runtime on a fake clock; both read the same scripts.
// Tests only: it imports testing, so the core (held to pure packages by
// internal/lint/layers) never imports it outside its tests.
package coresim

import (
	"fmt"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
)

// Run scripts one instance.
type Run struct {
	// RunFor is how long it runs before exiting on its own; negative:
	// until killed.
	RunFor time.Duration
	Code   int
	// IgnoreTerm: the stop signal does nothing; only SIGKILL ends it.
	IgnoreTerm bool
	// TermExit is how long it takes to exit after the stop signal.
	TermExit time.Duration
	// LivenessFailAfter, when positive, sends a liveness Failure that long
	// after the start.
	LivenessFailAfter time.Duration
}

// Script says how the n-th instance (from 1) of process behaves.
type Script func(process string, n int) Run

// Constant is the script of a process whose every instance behaves as r.
func Constant(r Run) Script { return func(string, int) Run { return r } }

// Secs turns seconds (with millisecond fractions) into durations.
func Secs(xs ...float64) []time.Duration {
	out := make([]time.Duration, len(xs))
	for i, x := range xs {
		out[i] = time.Duration(x*1000+0.5) * time.Millisecond
	}
	return out
}

// AssertTimes fails t unless got begins with want (later times, beyond
// what the case looked at, are ignored).
func AssertTimes(t *testing.T, what string, got, want []time.Duration) {
	t.Helper()
	if len(got) > len(want) {
		got = got[:len(want)]
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// OneProcess is a group with a single process "app".
func OneProcess(policy spec.RestartPolicy) spec.Group {
	return spec.Group{
		Name: "g", RestartPolicy: policy,
		Processes: []spec.Process{{Name: "app", Command: []string{"/bin/true"}}},
	}
}

// AppAndSidecar is a group with two long-running processes, "app" and
// "side".
func AppAndSidecar() spec.Group {
	return spec.Group{Name: "g", Processes: []spec.Process{
		{Name: "app", Command: []string{"x"}},
		{Name: "side", Command: []string{"x"}},
	}}
}

// Scaled is a back-off short enough for a simulated minute to hold many
// restarts: 100ms doubling to 1.6s, reset after 3.2s of running.
var Scaled = spec.Backoff{Initial: 100 * time.Millisecond, Max: 1600 * time.Millisecond, Reset: 3200 * time.Millisecond}

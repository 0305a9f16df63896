package supervisor

import (
	"fmt"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
)

// Scripts for the fake runtime's instances and small spec builders, shared
// by the worker's tests (the core's own tests have their own copies in
// package core, next to its simulation).

// simRun scripts one instance.
type simRun struct {
	// runFor is how long it runs before exiting on its own; negative:
	// until killed.
	runFor time.Duration
	code   int
	// ignoreTerm: the stop signal does nothing; only SIGKILL ends it.
	ignoreTerm bool
	// termExit is how long it takes to exit after the stop signal.
	termExit time.Duration
	// livenessFailAfter, when positive, sends a liveness Failure that long
	// after the start.
	livenessFailAfter time.Duration
}

type simScript func(process string, n int) simRun

func constant(r simRun) simScript { return func(string, int) simRun { return r } }

// secs turns seconds (with millisecond fractions) into durations.
func secs(xs ...float64) []time.Duration {
	out := make([]time.Duration, len(xs))
	for i, x := range xs {
		out[i] = time.Duration(x*1000+0.5) * time.Millisecond
	}
	return out
}

func assertTimes(t *testing.T, what string, got, want []time.Duration) {
	t.Helper()
	if len(got) > len(want) {
		got = got[:len(want)]
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// oneProcess is a group with a single process "app".
func oneProcess(policy spec.RestartPolicy) spec.Group {
	return spec.Group{
		Name: "g", RestartPolicy: policy,
		Processes: []spec.Process{{Name: "app", Command: []string{"/bin/true"}}},
	}
}

// appAndSidecar is a group with two long-running processes.
func appAndSidecar() spec.Group {
	return spec.Group{Name: "g", Processes: []spec.Process{
		{Name: "app", Command: []string{"x"}},
		{Name: "side", Command: []string{"x"}},
	}}
}

var scaled = spec.Backoff{Initial: 100 * time.Millisecond, Max: 1600 * time.Millisecond, Reset: 3200 * time.Millisecond}

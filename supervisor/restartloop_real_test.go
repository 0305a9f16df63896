package supervisor_test

import (
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor"
)

// A process restarted without back-off as fast as it exits (S1 of
// docs/benchmarks.md: /bin/true, back-off 0) goes on being restarted: no
// exit is lost on its way to the core. Until 2026-11-27 an exit that the
// reaper delivered in the moment between a start's goroutine marking
// Start returned and posting the start's outcome reached the worker
// before "started": the core dropped it and waited for that instance for
// good (about one restart in two thousand, on the host runtime and in a
// sandbox alike).
func TestRealRestartLoopLosesNoExit(t *testing.T) {
	t.Parallel()
	cfg := func() spec.Config {
		return spec.Config{Backoff: spec.Backoff{Reset: time.Hour}, Groups: []spec.Group{
			realGroup("loop", spec.RestartAlways, spec.Process{Name: "true", Command: []string{"/bin/true"}}),
		}}
	}
	t.Run("host", func(t *testing.T) {
		t.Parallel()
		restartsWithoutStall(t, startReal(t, cfg()).sup)
	})
	t.Run("sandbox", func(t *testing.T) {
		t.Parallel()
		restartsWithoutStall(t, startLocal(t, cfg(), supervisor.Options{}, nil).sup)
	})
}

// restartsWithoutStall waits for group loop's process true to have been
// restarted 4000 times, and fails as soon as its restart count stands
// still for 10 s (a restart takes milliseconds; a lost exit stops them
// for good).
func restartsWithoutStall(t *testing.T, sup *supervisor.Supervisor) {
	const want = 4000
	last, since := -1, time.Now()
	for {
		ps := processStatus(t, sup, "loop", "true")
		if ps.RestartCount >= want {
			return
		}
		if ps.RestartCount != last {
			last, since = ps.RestartCount, time.Now()
		}
		if time.Since(since) > 10*time.Second {
			t.Fatalf("no restart for 10 s after %d restarts (of %d): an exit was lost; status %+v", last, want, ps)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

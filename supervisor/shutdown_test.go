package supervisor_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Shutdown(ctx) is the library's stop: it returns only once every process
// has exited, and SIGKILLs what is left when ctx ends (X9).

// shutdownRun starts cfg on real processes and returns its one process's
// pid once the command has written dir/up (its signal set-up is done).
func shutdownRun(t *testing.T, cmd string) (*realRun, int) {
	t.Helper()
	dir := t.TempDir()
	r := startReal(t, spec.Config{Groups: []spec.Group{{Name: "g", Processes: []spec.Process{{Name: "p",
		Command: []string{"sh", "-c", cmd}, WorkingDir: dir}}}}})
	e := r.next(lifecycle.EventStarted)
	if !eventuallyTrue(func() bool { _, err := os.Stat(filepath.Join(dir, "up")); return err == nil }) {
		t.Fatalf("the process never wrote up (%s)", e.Message)
	}
	g, _ := r.sup.Status().Group("g")
	p, _ := g.Process("p")
	if p.Pid <= 0 {
		t.Fatalf("no pid for a running process: %+v", p)
	}
	return r, p.Pid
}

// A graceful Shutdown returns nil once the process has exited and been
// reaped: nothing of it is left the moment Shutdown returns.
func TestShutdownWaitsUntilEveryProcessHasExited(t *testing.T) {
	t.Parallel()
	// The TERM trap takes a moment, so that a Shutdown that does not wait
	// would return while the process still runs.
	r, pid := shutdownRun(t, `trap 'sleep 0.3; exit 0' TERM; touch up; while :; do sleep 0.05; done`)
	if err := r.sup.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown = %v, want nil", err)
	}
	if !processGone(pid) {
		t.Errorf("pid %d still runs after Shutdown returned", pid)
	}
	g, _ := r.sup.Status().Group("g")
	if p, _ := g.Process("p"); p.Terminated == nil || p.Terminated.ExitCode != 0 {
		t.Errorf("status after Shutdown: %+v, want terminated with code 0 (its TERM trap)", p)
	}
	if res := r.wait(); res.ExitCode != 0 {
		t.Errorf("Run's exit code %d, want 0", res.ExitCode)
	}
}

// When ctx ends before the graceful stop, what is left is SIGKILLed and
// Shutdown returns ctx's error once it is gone: a process that ignores
// SIGTERM, with the default 30 s grace, is gone well before that grace.
func TestShutdownKillsWhatIsLeftWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	r, pid := shutdownRun(t, `trap '' TERM; touch up; while :; do sleep 0.05; done`)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := r.sup.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want ctx's error (deadline exceeded)", err)
	}
	// Generous: the grace is 30 s, and the kill needs a fraction of one.
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("Shutdown took %v: it waited for the grace rather than kill when ctx ended", took)
	}
	if !processGone(pid) {
		t.Errorf("pid %d still runs after Shutdown returned", pid)
	}
}

// Before Run there is nothing to stop: Shutdown returns at once, and a Run
// called afterwards starts nothing and returns.
func TestShutdownBeforeRunReturnsAtOnceAndRunStartsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sup, err := supervisor.New(spec.Config{Groups: []spec.Group{{Name: "g", Processes: []spec.Process{{Name: "p",
		Command: []string{"sh", "-c", "touch started; sleep 60"}, WorkingDir: dir}}}}}, supervisor.Options{Runtime: hostrt.Runtime{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := sup.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown before Run = %v, want nil", err)
	}
	res, err := sup.Run(ctx)
	if err != nil || res.ExitCode != 0 {
		t.Errorf("Run after Shutdown = %+v, %v, want exit code 0", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
		t.Error("Run after Shutdown started the process")
	}
}

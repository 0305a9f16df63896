package stack_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/selftest"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack"
)

// A Go program gets what podsup up runs with one call: a group in its own
// PID namespace and cgroup, its output captured, and a shutdown that
// leaves nothing behind. The program is the body below up to Shutdown's
// check: 26 lines (what is left after it is the test's to check).
func TestStartRunsASandboxedGroupWithCapturedOutput(t *testing.T) {
	out, instance := newLineWriter(t), newInstance()
	cfg := spec.Config{Groups: []spec.Group{{Name: "web", RestartPolicy: spec.RestartNever,
		Sandbox: &spec.Sandbox{Namespaces: []string{"pid", "mount"}, Mounts: []spec.Mount{{Type: "proc", Target: "/proc"}}},
		Processes: []spec.Process{{Name: "app", Command: []string{"sh", "-c",
			"readlink /proc/self/ns/pid; grep -q podsup-" + instance + " /proc/self/cgroup && echo in-cgroup; exec sleep 600"}}},
	}}}
	st, err := stack.Start(context.Background(), cfg, stack.Options{Instance: instance, Output: out, RuntimeDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pid := runningPid(t, st.Supervisor(), "web", "app")
	hostNS, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	if ns := out.next(t); !strings.HasPrefix(ns, "pid:[") || ns == hostNS {
		t.Errorf("the process's PID namespace is %q, want one of its own (podsup's: %q)", ns, hostNS)
	}
	if line := out.next(t); line != "in-cgroup" {
		t.Errorf("second captured line %q, want in-cgroup: the process is not in the stack's cgroup", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := st.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, instance, pid)
}

// Shutdown stops each process through its stop signal and grace: a
// process that exits on SIGTERM says goodbye, and Shutdown returns nil.
func TestShutdownIsGraceful(t *testing.T) {
	out, instance := newLineWriter(t), newInstance()
	cfg := spec.Config{Groups: []spec.Group{{Name: "g", Processes: []spec.Process{{Name: "p",
		Command: []string{"sh", "-c", `trap 'echo bye; exit 0' TERM; echo up; while :; do sleep 0.1; done`}}}}}}
	st, err := stack.Start(context.Background(), cfg, stack.Options{Instance: instance, Output: out, RuntimeDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pid := runningPid(t, st.Supervisor(), "g", "p")
	if l := out.next(t); l != "up" {
		t.Fatalf("first line %q, want up", l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := st.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown = %v, want nil: the process exits on SIGTERM", err)
	}
	if l := out.next(t); l != "bye" {
		t.Errorf("line after shutdown %q, want bye: the process was not stopped by its stop signal", l)
	}
	if res, err := st.Wait(); err != nil || res.ExitCode != 0 {
		t.Errorf("Wait = %+v, %v, want exit code 0", res, err)
	}
	assertNothingLeft(t, instance, pid)
}

// When ctx ends before the graceful stop did, Shutdown SIGKILLs what is
// left, waits for it and returns ctx's error: a process that ignores
// SIGTERM, with the default 30 s grace, is gone well before that grace.
func TestShutdownKillsWhatIsLeftWhenContextEnds(t *testing.T) {
	out, instance := newLineWriter(t), newInstance()
	cfg := spec.Config{Groups: []spec.Group{{Name: "g", Processes: []spec.Process{{Name: "p",
		Command: []string{"sh", "-c", `trap '' TERM; echo up; while :; do sleep 0.1; done`}}}}}}
	st, err := stack.Start(context.Background(), cfg, stack.Options{Instance: instance, Output: out, RuntimeDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pid := runningPid(t, st.Supervisor(), "g", "p")
	if l := out.next(t); l != "up" { // SIGTERM is ignored from now on
		t.Fatalf("first line %q, want up", l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	began := time.Now()
	err = st.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want ctx's error (deadline exceeded)", err)
	}
	// Generous: the grace is 30 s, and the kill needs a fraction of one.
	if took := time.Since(began); took > 25*time.Second {
		t.Errorf("Shutdown took %v: it waited for the grace rather than kill when ctx ended", took)
	}
	assertNothingLeft(t, instance, pid)
}

// The stack makes its process a child subreaper only when asked: a
// library must not change what happens to a program's orphans on its own.
func TestSubreaperOnlyWhenAsked(t *testing.T) {
	for _, c := range []struct{ env, want string }{{"off", "subreaper=0"}, {"on", "subreaper=1"}} {
		t.Run(c.env, func(t *testing.T) {
			if os.Getpid() == 1 {
				t.Skip("as PID 1 the test binary's children could not tell: PID 1 reaps orphans whatever they choose")
			}
			got := selftest.Run(t, subreaperChildEnv+"="+c.env)
			if strings.TrimSpace(got) != c.want {
				t.Errorf("child with Subreaper %s printed %q, want %q", c.env, got, c.want)
			}
		})
	}
}

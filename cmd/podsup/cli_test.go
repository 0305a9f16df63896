package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestStatusWatchEndsCleanlyAtShutdown: a podsup that shuts down ends
// `status -w` normally: exit 0 and a line that says so, not
// "unexpected EOF", exit 2.
func TestStatusWatchEndsCleanlyAtShutdown(t *testing.T) {
	t.Parallel()
	f := startUp(t, examplesConfig)
	w := start(t, podsupCmd(t, "--socket", f.socket, "status", "-w"))
	if l := w.lineOr(t, "status -w"); !strings.HasPrefix(l, "GROUP") {
		t.Fatalf("status -w began with %q", l)
	}
	time.Sleep(500 * time.Millisecond) // the watch has its first lines
	if code, out := f.ctl(t, "shutdown"); code != 0 {
		t.Fatalf("shutdown: %d %s", code, out)
	}
	e := w.wait(t)
	out := w.rest(t)
	if e.Code() != 0 || !strings.Contains(out, "podsup shut down") || strings.Contains(out, "EOF") {
		t.Fatalf("status -w at shutdown: %s\n%s", e, out)
	}
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup up: %s", e)
	}
}

// TestLogsWithoutTargetShowsEveryProcess: `podsup logs` alone shows every
// process's lines, prefixed, as docker compose logs does.
func TestLogsWithoutTargetShowsEveryProcess(t *testing.T) {
	t.Parallel()
	f := startUp(t, examplesConfig)
	var out string
	if !eventually(func() bool {
		var code int
		code, out = f.ctl(t, "logs")
		return code == 0 && strings.Contains(out, "web/api") && strings.Contains(out, "api started") &&
			strings.Contains(out, "db/postgres") && strings.Contains(out, "postgres started") &&
			strings.Contains(out, "app/migrate") && strings.Contains(out, "migrated")
	}) {
		t.Fatalf("podsup logs without a target:\n%s", out)
	}
}

// TestRecreateTakesGroupSlashProcess: recreate names its processes
// GROUP/PROCESS as every other command does; the former GROUP PROCESS...
// still works, saying it is deprecated; processes of two groups are
// refused with the fix.
func TestRecreateTakesGroupSlashProcess(t *testing.T) {
	t.Parallel()
	f := startUp(t, examplesConfig)
	code, out := f.ctl(t, "recreate", "web/api", "web/worker", "--wait", "--min-started", "100ms")
	if code != 0 || !strings.Contains(out, "Succeeded") {
		t.Fatalf("recreate web/api web/worker --wait: %d\n%s", code, out)
	}
	l, err := f.c.Recreates(context.Background())
	if err != nil || len(l.Recreates) != 1 || len(l.Recreates[0].Processes) != 2 || l.Recreates[0].Group != "web" {
		t.Fatalf("recreates: %v %+v", err, l)
	}
	code, out = f.ctl(t, "recreate", "web", "api", "--wait", "--min-started", "100ms")
	if code != 0 || !strings.Contains(out, "deprecated") || !strings.Contains(out, "podsup recreate web/api") {
		t.Fatalf("recreate web api (the former form): %d\n%s", code, out)
	}
	code, out = f.ctl(t, "recreate", "web/api", "db/postgres")
	if code == 0 || !strings.Contains(out, "different groups") {
		t.Fatalf("recreate across groups: %d\n%s", code, out)
	}
}

// TestVersionShortAndDashV: version --short is the version alone, and -v
// is --verbose (podsup run's, as tini -v), never the version: at the root
// it is refused with the way to the version.
func TestVersionShortAndDashV(t *testing.T) {
	t.Parallel()
	code, out := runPodsup(t, "version", "--short")
	if v := strings.TrimSpace(out); code != 0 || v == "" || strings.ContainsAny(v, " \n") {
		t.Fatalf("version --short: %d %q", code, out)
	}
	code, out = runPodsup(t, "-v")
	if code == 0 || !strings.Contains(out, "--version") {
		t.Fatalf("podsup -v: %d %q, want a refusal naming --version", code, out)
	}
	if code, out = runPodsup(t, "run", "-v", "--", "true"); code != 0 {
		t.Fatalf("podsup run -v -- true: %d %q", code, out)
	}
}

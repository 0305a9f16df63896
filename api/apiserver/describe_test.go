package apiserver

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// The API used to leave ProcessStatus.backoff empty: it is the delay from
// the last instance's end to the next start (X3).
func TestStatusBackoffIsTheDelayToTheNextStart(t *testing.T) {
	end := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
	p := lifecycle.ProcessStatus{Name: "crash", State: lifecycle.StateWaiting, Reason: lifecycle.ReasonCrashLoopBackOff,
		NextStartAt:     end.Add(400 * time.Millisecond),
		LastTermination: &lifecycle.Termination{ExitCode: 3, FinishedAt: end}}
	if got := toProcess(p).Backoff; got != "400ms" {
		t.Errorf("backoff = %q, want 400ms", got)
	}
	p.NextStartAt = time.Time{}
	if got := toProcess(p).Backoff; got != "" {
		t.Errorf("backoff without a next start = %q, want none", got)
	}
}

func TestDescribeProbeLastResult(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
	started := t0
	running := api.ProcessStatus{State: "running", InstanceID: "i-1", StartedAt: &started, Started: true}
	probe := spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"/bin/true"}}}, Period: time.Second}
	failed := func(at time.Time, instance, msg string) api.Event {
		return api.Event{Time: at, Reason: lifecycle.EventUnhealthy, InstanceID: instance, Message: msg}
	}
	cases := []struct {
		name        string
		kind        spec.ProbeKind
		st          api.ProcessStatus
		evs         []api.Event
		now         time.Time
		want, fails string
	}{
		{"not run yet", spec.Liveness, running, nil, t0.Add(500 * time.Millisecond), "unknown", ""},
		{"ran without failing", spec.Liveness, running, nil, t0.Add(10 * time.Second), "success", ""},
		{"failing now", spec.Liveness, running, []api.Event{failed(t0.Add(9*time.Second), "i-1", "Liveness probe failed: exit 1")},
			t0.Add(10 * time.Second), "failure", "exit 1"},
		{"failed, then passed", spec.Liveness, running, []api.Event{failed(t0.Add(2*time.Second), "i-1", "Liveness probe failed: exit 1")},
			t0.Add(10 * time.Second), "success", "exit 1"},
		{"another instance's failure", spec.Liveness, running, []api.Event{failed(t0.Add(9*time.Second), "i-0", "Liveness probe failed: exit 1")},
			t0.Add(10 * time.Second), "success", ""},
		{"another probe's failure", spec.Liveness, running, []api.Event{failed(t0.Add(9*time.Second), "i-1", "Readiness probe failed: 503")},
			t0.Add(10 * time.Second), "success", ""},
		{"readiness not ready, no failure", spec.Readiness, running, nil, t0.Add(10 * time.Second), "unknown", ""},
		{"startup passed", spec.Startup, running, nil, t0.Add(time.Second), "success", ""},
		{"not running", spec.Liveness, api.ProcessStatus{State: "waiting"}, nil, t0.Add(10 * time.Second), "unknown", ""},
	}
	for _, c := range cases {
		d := describeProbe(c.kind, probe, c.st, c.evs, c.now)
		if d.LastResult != c.want || d.LastFailure != c.fails {
			t.Errorf("%s: last result %q (failure %q), want %q (%q)", c.name, d.LastResult, d.LastFailure, c.want, c.fails)
		}
	}
	d := describeProbe(spec.Liveness, probe, running, nil, t0)
	if d.Action != "exec [/bin/true]" || d.InitialDelay != "0s" || d.Timeout != "1s" || d.Period != "1s" || d.SuccessThreshold != 1 || d.FailureThreshold != 3 {
		t.Errorf("the probe's parameters with defaults: %+v", d)
	}
}

func TestParseProcCgroupHybrid(t *testing.T) {
	d := parseProcCgroup([]byte("9:name=systemd:/\n4:memory:/podsup-abc/web/api\n2:cpu,cpuacct:/\n0::/podsup-abc/web/api\n"))
	if d.v2 != "/podsup-abc/web/api" || d.v1["memory"] != "/podsup-abc/web/api" || d.v1["cpuacct"] != "/" {
		t.Fatalf("parsed %+v", d)
	}
	if !d.podsupOwned() || d.name() != "/podsup-abc/web/api" || d.parent().name() != "/podsup-abc/web" {
		t.Errorf("name %q, parent %q", d.name(), d.parent().name())
	}
	host := parseProcCgroup([]byte("0::/user.slice\n"))
	if host.podsupOwned() {
		t.Error("a cgroup podsup did not make counts as podsup's")
	}
}

// A group's limit is on the group's cgroup, its processes' below it; the
// lowest one up to podsup's root is the one in force, and v1's "unlimited"
// (a huge number) and v2's "max" are none.
func TestLimitUpwardsFindsTheGroupsLimit(t *testing.T) {
	root := filepath.Join(t.TempDir(), "podsup-x")
	proc := filepath.Join(root, "web", "api")
	if err := os.MkdirAll(proc, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(dir, file, v string) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(proc, "memory.max", "max")
	write(filepath.Dir(proc), "memory.max", "67108864")
	write(root, "memory.max", "max")
	write(filepath.Dir(root), "memory.max", "1024") // above podsup's root: not podsup's
	if got := limitUpwards(cgroups.Dir{Path: proc, Version: 2}, cgroups.Dir.MemoryLimit); got != 64<<20 {
		t.Errorf("limit = %d, want the group's 64MiB", got)
	}
	write(filepath.Dir(proc), "memory.limit_in_bytes", "9223372036854771712")
	if got := limitUpwards(cgroups.Dir{Path: proc, Version: 1}, cgroups.Dir.MemoryLimit); got != 0 {
		t.Errorf("v1 unlimited read as %d, want none", got)
	}
}

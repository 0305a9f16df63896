package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
)

func TestStatusHumanAgeIsKubectls(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{0, "0s"},
		{3 * time.Second, "3s"},
		{3400 * time.Millisecond, "3s"},
		{119 * time.Second, "119s"},
		{2*time.Minute + 5*time.Second, "2m5s"},
		{5 * time.Minute, "5m"},
		{12*time.Minute + 30*time.Second, "12m"},
		{4 * time.Hour, "4h"},
		{5*time.Hour + 30*time.Minute, "5h30m"},
		{30 * time.Hour, "30h"},
		{3 * 24 * time.Hour, "3d"},
		{3*24*time.Hour + 4*time.Hour, "3d4h"},
		{400 * 24 * time.Hour, "400d"},
		{(2*365 + 10) * 24 * time.Hour, "2y10d"},
		{9 * 365 * 24 * time.Hour, "9y"},
	} {
		if got := humanAge(c.d); got != c.want {
			t.Errorf("humanAge(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	if got := delay(400 * time.Millisecond); got != "400ms" {
		t.Errorf("a sub-second back-off reads %q, want 400ms", got)
	}
}

func TestStatusRestartsAndLastExitColumns(t *testing.T) {
	now := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *time.Time { v := now.Add(-ago); return &v }
	crashing := api.ProcessStatus{Name: "crash", State: "waiting", Reason: "CrashLoopBackOff", RestartCount: 4,
		NextStartAt: at(-2 * time.Second), Backoff: "40s",
		LastTermination: &api.Termination{ExitCode: 3, Reason: "Error", FinishedAt: at(3 * time.Second)}}
	if got := restarts(crashing, now); got != "4 (3s ago)" {
		t.Errorf("RESTARTS = %q, want 4 (3s ago)", got)
	}
	if got := lastExit(crashing, now); got != "3 Error 3s ago" {
		t.Errorf("LAST EXIT = %q, want 3 Error 3s ago", got)
	}
	if got := describeState(crashing, now); got != "waiting: CrashLoopBackOff (back-off 40s, next start in 2s)" {
		t.Errorf("STATE = %q", got)
	}
	oom := api.ProcessStatus{Name: "big", State: "terminated", Terminated: &api.Termination{ExitCode: 137, Reason: "OOMKilled"},
		LastTermination: &api.Termination{ExitCode: 1, Reason: "Error"}}
	if got := lastExit(oom, now); got != "137 OOMKilled" {
		t.Errorf("LAST EXIT of an OOM-killed process = %q, want 137 OOMKilled (the latest end)", got)
	}
	fresh := api.ProcessStatus{Name: "new", State: "running", StartedAt: at(time.Minute)}
	if restarts(fresh, now) != "0" || lastExit(fresh, now) != "-" {
		t.Errorf("a first instance: RESTARTS %q, LAST EXIT %q", restarts(fresh, now), lastExit(fresh, now))
	}
	var b bytes.Buffer
	tab := newStatusTable(&b, true)
	tab.rows(api.StatusResponse{Groups: []api.GroupStatus{{Name: "g", Processes: []api.ProcessStatus{crashing, fresh}}}}, now)
	if err := tab.flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`RESTARTS\s+LAST EXIT\s+AGE\s+PID\s+CGROUP\s+NEXT START\s+STATUS`).MatchString(lines[0]) ||
		!strings.Contains(lines[1], "4 (3s ago)") || !strings.Contains(lines[2], "60s") {
		t.Errorf("wide table:\n%s", b.String())
	}
}

func TestDescribeProbeLineIsKubelets(t *testing.T) {
	p := api.ProbeDescription{Kind: "liveness", Action: "exec [/bin/true]", InitialDelay: "0s", Timeout: "1s", Period: "10s",
		SuccessThreshold: 1, FailureThreshold: 3}
	if got := probeLine(p); got != "exec [/bin/true] delay=0s timeout=1s period=10s #success=1 #failure=3" {
		t.Errorf("probe line %q", got)
	}
	if got := humanBytes(64 << 20); got != "64MiB" {
		t.Errorf("humanBytes(64MiB) = %q", got)
	}
	if got := humanBytes(3565158); got != "3.4MiB" {
		t.Errorf("humanBytes(3.4MiB) = %q", got)
	}
}

// describeConfig has a crash-looping process and a probed one in a group
// with limits, so that describe has every part to show.
const describeConfig = `
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
group "web" {
  termination_grace_period = "2s"
  backoff {
    initial = "100ms"
    max     = "400ms"
  }
  sandbox {
    resources {
      memory = "64Mi"
      pids   = 100
    }
  }
  process "api" {
    command = ["sleep", "1000"]
    liveness_probe {
      exec { command = ["/bin/true"] }
      period = "200ms"
    }
    readiness_probe {
      exec { command = ["/bin/false"] }
      period = "200ms"
    }
    pre_stop {
      exec { command = ["/bin/true"] }
    }
  }
  process "crash" {
    command = ["sh", "-c", "exit 3"]
  }
}
`

func TestDescribeAndStatusOfACrashLoopAndAProbedProcess(t *testing.T) {
	t.Parallel()
	f := startUp(t, describeConfig)
	f.waitRunning(t, "web", "api")

	// status: RESTARTS "n (Xs ago)" and LAST EXIT of the crash loop.
	crashRow := regexp.MustCompile(`(?m)^web\s+crash\s+waiting: CrashLoopBackOff \(back-off \S+, next start in \S+\)\s+no\s+[1-9]\d* \(\d+s ago\)\s+3 Error \d+s ago\s`)
	var out string
	if !eventually(func() bool { _, out = f.ctl(t, "status"); return crashRow.MatchString(out) }) {
		t.Fatalf("status has no crash-loop row with RESTARTS \"n (Xs ago)\" and LAST EXIT \"3 Error Xs ago\":\n%s", out)
	}
	if !strings.Contains(out, "RESTARTS") || !strings.Contains(out, "LAST EXIT") {
		t.Errorf("status header:\n%s", out)
	}
	// -o wide: pid and cgroup of the running one, next start of the other.
	apiWide := regexp.MustCompile(`(?m)^web\s+api\s+running\s.*\s\d+\s+/\S*podsup-\S+/web/api\s+-\s`)
	crashWide := regexp.MustCompile(`(?m)^web\s+crash\s+waiting: CrashLoopBackOff.*\s-\s+-\s+\d\d:\d\d:\d\d\.\d{3}\s`)
	if !eventually(func() bool {
		_, out = f.ctl(t, "status", "-o", "wide")
		return apiWide.MatchString(out) && crashWide.MatchString(out)
	}) {
		t.Fatalf("status -o wide lacks the pid and cgroup of web/api or the next start of web/crash:\n%s", out)
	}
	// -o json: the back-off the API used to leave out.
	var st api.StatusResponse
	if !eventually(func() bool {
		_, out = f.ctl(t, "status", "web/crash", "-o", "json")
		return json.Unmarshal([]byte(out), &st) == nil && st.Groups[0].Processes[0].Reason == "CrashLoopBackOff" && st.Groups[0].Processes[0].Backoff != ""
	}) {
		t.Fatalf("status -o json of a process in CrashLoopBackOff has no backoff:\n%s", out)
	}

	// describe of the crash loop: last state, restart count, back-off, events.
	var desc string
	crashWant := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Group:\s+web$`),
		regexp.MustCompile(`(?m)^Command:\s+\[sh -c exit 3\]$`),
		regexp.MustCompile(`(?m)^State:\s+Waiting\n\s+Reason:\s+CrashLoopBackOff$`),
		regexp.MustCompile(`(?m)^Last State:\s+Terminated\n\s+Reason:\s+Error\n\s+Exit Code:\s+3\n\s+Started:\s+.+\n\s+Finished:\s+.+ ago\)$`),
		regexp.MustCompile(`(?m)^Restart Count:\s+[1-9]\d*$`),
		regexp.MustCompile(`(?m)^Back-off:\s+\d+ms, next start at \d\d:\d\d:\d\d\.\d{3} \(in \S+\)$`),
		regexp.MustCompile(`(?m)^Events:\n\s+Type\s+Reason\s+Age\s+Message\n(.*\n)*\s+Warning\s+BackOff\s+\d+s.*Back-off restarting failed process crash$`),
	}
	if !eventually(func() bool {
		_, desc = f.ctl(t, "describe", "web/crash")
		return matchAll(crashWant, desc)
	}) {
		t.Fatalf("describe web/crash lacks %v:\n%s", missing(crashWant, desc), desc)
	}

	// describe of the group: phase, conditions, limits, usage, the probed
	// process's probes with their last result, hooks and cgroup usage.
	groupWant := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Name:\s+web$`),
		regexp.MustCompile(`(?m)^Phase:\s+Running$`),
		regexp.MustCompile(`(?m)^Back-off:\s+initial=100ms max=400ms reset=10m0s$`),
		regexp.MustCompile(`(?m)^\s+Limits:\s+memory=64MiB pids=100$`),
		regexp.MustCompile(`(?m)^Cgroup:\s+/\S*podsup-\S+/web$`),
		regexp.MustCompile(`(?m)^Conditions:\n\s+Type\s+Status\n\s+Initialized\s+True\n\s+Ready\s+False$`),
		regexp.MustCompile(`(?m)^\s+Liveness:\s+exec \[/bin/true\] delay=0s timeout=1s period=200ms #success=1 #failure=3\n\s+Last Result:\s+success$`),
		regexp.MustCompile(`(?m)^\s+Readiness:\s+exec \[/bin/false\] delay=0s timeout=1s period=200ms #success=1 #failure=3\n\s+Last Result:\s+failure \(last failure \d+s ago: .+\)$`),
		regexp.MustCompile(`(?m)^\s+Hooks:\n\s+pre_stop:\s+exec \[/bin/true\]$`),
		regexp.MustCompile(`(?m)^\s+Cgroup:\s+/\S*podsup-\S+/web/api$`),
		regexp.MustCompile(`(?m)^\s+Usage:\s+cpu=\S+ memory=\S+/64MiB pids=\d+/100$`),
		regexp.MustCompile(`(?m)^\s+Warning\s+Unhealthy\s+\d+s \(x\d+ over \d+s\)\s+Readiness probe failed`),
	}
	if !eventually(func() bool {
		_, desc = f.ctl(t, "describe", "web")
		return matchAll(groupWant, desc)
	}) {
		t.Fatalf("describe web lacks %v:\n%s", missing(groupWant, desc), desc)
	}

	// -o json is the API's description.
	_, out = f.ctl(t, "describe", "web/api", "-o", "json")
	var d api.DescribeResponse
	if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.Group.Processes) != 1 {
		t.Fatalf("describe -o json: %v\n%s", err, out)
	}
	if p := d.Group.Processes[0]; len(p.Probes) != 2 || p.Probes[0].Kind != "liveness" || p.Usage == nil || p.Usage.PidsLimit != 100 || p.Usage.MemoryLimitBytes != 64<<20 {
		t.Errorf("describe -o json of web/api: %+v", p)
	}
	if code, out := f.ctl(t, "describe", "web/nosuch"); code == 0 || !strings.Contains(out, `no process "nosuch"`) {
		t.Errorf("describe of an unknown process: %d %s", code, out)
	}
}

func matchAll(res []*regexp.Regexp, s string) bool { return len(missing(res, s)) == 0 }

func missing(res []*regexp.Regexp, s string) []string {
	var out []string
	for _, re := range res {
		if !re.MatchString(s) {
			out = append(out, re.String())
		}
	}
	return out
}

// status -w prints a line for each change as the server pushes it: the
// crash loop's every start and exit, and a stop asked for.
func TestStatusWatchPrintsEachChange(t *testing.T) {
	t.Parallel()
	f := startUp(t, describeConfig)
	f.waitRunning(t, "web", "api")
	w := start(t, podsupCmd(t, "--socket", f.socket, "status", "-w", "web/api"))
	if h := w.lineOr(t, "status -w started"); !strings.HasPrefix(h, "GROUP") {
		t.Fatalf("status -w header: %q", h)
	}
	if l := w.lineOr(t, "status -w printed its header"); !regexp.MustCompile(`^web\s+api\s+running\s`).MatchString(l) {
		t.Fatalf("status -w first row: %q", l)
	}
	asked := time.Now()
	if code, out := f.ctl(t, "stop", "web/api"); code != 0 {
		t.Fatalf("stop: %d %s", code, out)
	}
	// The stop shows at once; the bound is generous for a loaded machine,
	// the "within 1 s" podsup promises is what an idle one gives.
	for {
		l := w.lineOr(t, "web/api was stopped")
		if !strings.HasPrefix(l, "web") {
			t.Fatalf("status -w printed %q", l)
		}
		if strings.Contains(l, "terminated") { // ended by the stop signal
			if took := time.Since(asked); took > 10*time.Second {
				t.Errorf("status -w printed the stop %v after it was asked", took)
			}
			t.Logf("status -w printed the stop %v after it was asked", time.Since(asked))
			break
		}
	}
	// A watch of the crash loop prints each start and exit.
	c := start(t, podsupCmd(t, "--socket", f.socket, "status", "-w", "web/crash"))
	c.lineOr(t, "status -w web/crash started")
	seen := map[string]bool{}
	for !(seen["running"] && seen["CrashLoopBackOff"]) {
		l := c.lineOr(t, "watching the crash loop")
		for _, s := range []string{"running", "CrashLoopBackOff"} {
			if strings.Contains(l, s) {
				seen[s] = true
			}
		}
	}
}

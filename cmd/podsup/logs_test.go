package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/sandbox/proc"
)

// logsConfig: a group of two chatty processes and a noisy one kept off
// podsup up's stdout, and a crash loop whose every instance says which it
// is. %[1]s is the socket, %[2]s the log_dir.
const logsConfig = `
supervisor {
  socket        = "%[1]s"
  minimum_grace = "100ms"
  log_dir       = "%[2]s"
}
group "web" {
  termination_grace_period = "1s"
  process "api" {
    command = ["sh", "-c", "echo api-hello; while sleep 0.2; do echo api-tick; done"]
  }
  process "worker" {
    command = ["sh", "-c", "echo worker-hello; while sleep 0.2; do echo worker-tick; done"]
  }
  process "noisy" {
    command = ["sh", "-c", "echo noisy-secret; exec sleep 1000"]
    log { stdout = false }
  }
}
group "crash" {
  backoff {
    initial = "1s"
    max     = "3s"
  }
  process "loop" {
    command = ["sh", "-c", "echo run-$(cat /proc/sys/kernel/random/uuid); exit 3"]
  }
  process "steady" {
    command = ["sleep", "1000"]
  }
}
`

// startUpLogs starts podsup up on logsConfig with extra flags; its stdout
// and stderr are separate, so that the test reads what up printed of the
// processes' output alone.
func startUpLogs(t *testing.T, flags ...string) (*upFixture, string, *started) {
	t.Helper()
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	f := &upFixture{dir: dir, cfg: filepath.Join(dir, "podsup.hcl"), socket: filepath.Join(dir, "podsup.sock")}
	f.write(t, fmt.Sprintf(logsConfig, f.socket, logDir))
	c := podsupCmd(t, append([]string{"up", "-f", f.cfg}, flags...)...)
	errFile, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	c.Stderr = errFile
	f.up = start(t, c)
	f.c = api.NewClient(f.socket)
	if !eventually(func() bool { _, err := f.c.Version(context.Background()); return err == nil }) {
		b, _ := os.ReadFile(errFile.Name())
		t.Fatalf("podsup up never answered on %s: %s", f.socket, b)
	}
	return f, logDir, f.up
}

func TestLogsOfAGroupArePrefixedFollowedAndFiltered(t *testing.T) {
	t.Parallel()
	f, logDir, up := startUpLogs(t, "--no-log-prefix")
	f.waitRunning(t, "web", "api")
	f.waitRunning(t, "web", "worker")
	f.waitRunning(t, "web", "noisy")

	// A whole group: every process's lines, prefixed and padded to the
	// widest name, the noisy one included; no colour off a terminal.
	want := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^web/api    \| api-hello$`),
		regexp.MustCompile(`(?m)^web/worker \| worker-hello$`),
		regexp.MustCompile(`(?m)^web/noisy  \| noisy-secret$`),
	}
	var out string
	if !eventually(func() bool { _, out = f.ctl(t, "logs", "web"); return matchAll(want, out) }) {
		t.Fatalf("logs web lacks %v:\n%s", missing(want, out), out)
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour written to a pipe:\n%q", out)
	}
	// One process alone: no prefix.
	if _, out = f.ctl(t, "logs", "web/api", "--tail", "1"); !regexp.MustCompile(`^api-(hello|tick)\n$`).MatchString(out) {
		t.Errorf("logs web/api --tail 1: %q", out)
	}

	// --timestamps: the capture time, RFC 3339 in UTC, after the prefix.
	_, out = f.ctl(t, "logs", "web", "--timestamps", "--tail", "2")
	stamped := regexp.MustCompile(`(?m)^web/worker \| (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z) worker-`)
	m := stamped.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("logs --timestamps:\n%s", out)
	}
	if ts, err := time.Parse(time.RFC3339Nano, m[1]); err != nil || time.Since(ts) > time.Minute || time.Since(ts) < -time.Second {
		t.Errorf("timestamp %s is not a recent capture time: %v", m[1], err)
	}

	// --since: a duration keeps the first lines, a time after them drops them.
	if _, out = f.ctl(t, "logs", "web/api", "--since", "10m"); !strings.HasPrefix(out, "api-hello\n") {
		t.Errorf("logs --since 10m lost the first line:\n%s", out)
	}
	cut := time.Now()
	if !eventually(func() bool {
		_, out = f.ctl(t, "logs", "web", "--since", cut.UTC().Format(time.RFC3339Nano), "-o", "json")
		return strings.Contains(out, `"line":"api-tick"`) && strings.Contains(out, `"line":"worker-tick"`)
	}) {
		t.Fatalf("logs --since TIME never showed the ticks after it:\n%s", out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ll api.LogLine
		if err := json.Unmarshal([]byte(l), &ll); err != nil || ll.Time.Before(cut) || strings.HasSuffix(ll.Line, "-hello") {
			t.Errorf("logs --since %s gave %s (%v)", cut.Format(time.RFC3339Nano), l, err)
		}
	}
	if code, out := f.ctl(t, "logs", "web", "--since", "yesterday"); code == 0 || !strings.Contains(out, "neither a duration") {
		t.Errorf("a bad --since: %d %s", code, out)
	}

	// -f of the group and one more process follows them all.
	fl := start(t, podsupCmd(t, "--socket", f.socket, "logs", "-f", "--tail", "0", "web", "crash/loop"))
	seen := map[string]bool{}
	for !(seen["api"] && seen["worker"] && seen["crash"]) {
		l := fl.lineOr(t, "following web and crash/loop")
		switch {
		case strings.HasPrefix(l, "web/api    | api-tick"):
			seen["api"] = true
		case strings.HasPrefix(l, "web/worker | worker-tick"):
			seen["worker"] = true
		case strings.HasPrefix(l, "crash/loop | run-"):
			seen["crash"] = true
		}
	}

	// On a terminal each process's prefix has its colour; NO_COLOR and
	// --no-color take them away.
	for _, c := range []struct {
		env   []string
		flags []string
		color bool
	}{{nil, nil, true}, {[]string{"NO_COLOR=1"}, nil, false}, {nil, []string{"--no-color"}, false}} {
		term := openPty(t, 120, 30)
		cmd := podsupCmd(t, append([]string{"--socket", f.socket, "logs", "web", "--tail", "1"}, c.flags...)...)
		cmd.Env = append(withTerm(cmd.Env, "xterm"), c.env...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = term.term, term.term, term.term
		p, err := proc.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		e, err := p.Wait(ctx)
		cancel()
		if err != nil || e.Code() != 0 {
			t.Fatalf("logs on a terminal: %v %v", e, err)
		}
		term.waitFor(t, 0, regexp.MustCompile(`web/worker \|`), "the lines on a terminal")
		colored := regexp.MustCompile(`\x1b\[\d+mweb/api    \|\x1b\[0m api-`).MatchString(term.output())
		if colored != c.color || (!c.color && strings.Contains(term.output(), "\x1b[")) {
			t.Errorf("logs web on a terminal with %v %v: colour %v, want %v:\n%q", c.env, c.flags, colored, c.color, term.output())
		}
	}

	// log { stdout = false }: in its log_dir file, not on up's stdout,
	// which (--no-log-prefix) has the others' lines bare.
	b, err := os.ReadFile(filepath.Join(logDir, "web", "noisy.log"))
	if err != nil || !strings.Contains(string(b), " stdout F noisy-secret\n") {
		t.Errorf("web/noisy's file: %v %q", err, b)
	}
	if code, out := f.ctl(t, "shutdown"); code != 0 {
		t.Fatalf("shutdown: %d %s", code, out)
	}
	upOut := up.rest(t)
	if strings.Contains(upOut, "noisy-secret") {
		t.Errorf("a process with stdout = false reached up's stdout:\n%s", upOut)
	}
	if !regexp.MustCompile(`(?m)^api-hello$`).MatchString(upOut) || !regexp.MustCompile(`(?m)^worker-hello$`).MatchString(upOut) {
		t.Errorf("up --no-log-prefix did not print the others' lines bare:\n%s", upOut)
	}
	up.wait(t)
}

// S5: --previous is the last terminated instance, however many restarts there
// were: while the crash loop waits in back-off that is the instance that
// just crashed, as kubectl logs --previous shows in CrashLoopBackOff.
func TestLogsPreviousOfACrashLoop(t *testing.T) {
	t.Parallel()
	f, _, _ := startUpLogs(t)
	ctx := context.Background()
	last := func() (api.ProcessStatus, bool) {
		st, err := f.c.Status(ctx, "crash", "loop")
		if err != nil {
			t.Fatal(err)
		}
		p := st.Groups[0].Processes[0]
		return p, p.LastTermination != nil
	}
	if !eventually(func() bool { p, _ := last(); return p.RestartCount >= 3 }) {
		t.Fatal("the crash loop never restarted 3 times")
	}
	checked := 0
	for try := 0; try < 20 && checked < 2; try++ {
		before, ok := last()
		code, out := f.ctl(t, "logs", "--previous", "crash/loop", "-o", "json")
		after, _ := last()
		if !ok || before.LastTermination.InstanceID != after.LastTermination.InstanceID {
			continue // a restart in between: which instance is meant moved
		}
		var l api.LogLine
		if code != 0 || json.Unmarshal([]byte(out), &l) != nil || strings.Count(out, "\n") != 1 || !strings.HasPrefix(l.Line, "run-") {
			t.Fatalf("logs --previous after %d restarts: %d %q", before.RestartCount, code, out)
		}
		if l.Instance != before.LastTermination.InstanceID {
			t.Fatalf("logs --previous showed instance %s, the last terminated is %s (state %s, current %s)",
				l.Instance, before.LastTermination.InstanceID, before.State, before.InstanceID)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("the crash loop never held still for one logs --previous")
	}
	// A process that never ended has no previous instance: the error says so.
	f.waitRunning(t, "web", "api")
	if code, out := f.ctl(t, "logs", "--previous", "web/api"); code == 0 || !strings.Contains(out, "no previous terminated instance") {
		t.Errorf("logs --previous of a first instance: %d %s", code, out)
	}
	// Of a group, processes without one are passed over; a group where
	// none has one is an error.
	if code, out := f.ctl(t, "logs", "--previous", "crash"); code != 0 || !regexp.MustCompile(`^crash/loop   \| run-\S+\n$`).MatchString(out) {
		t.Errorf("logs --previous crash: %d %q", code, out)
	}
	if code, out := f.ctl(t, "logs", "--previous", "web"); code == 0 || !strings.Contains(out, `no process of group "web" has output to show`) {
		t.Errorf("logs --previous web: %d %s", code, out)
	}
}

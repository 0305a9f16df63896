package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/sandbox/proc"
)

// The real binaries, end to end: podsup-kube play on the example manifest
// becomes podsup up (PODSUP_BIN), every process of the pod comes up ready
// as podsup health and podsup status see it on the control socket, and a
// SIGTERM stops it all: exit 0, no process, cgroup or socket left.
func TestPlayExampleEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds podsup and podsup-kube and runs the example for several seconds")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the example's pod has a sandbox (hostname, shareProcessNamespace, limits); CI runs as root")
	}
	t.Parallel()
	podsup, kubeBin := playBinaries(t)

	dir := t.TempDir()
	socket := filepath.Join(dir, "podsup.sock")
	play, output, stopped := startPlay(t, podsup, kubeBin, []string{"podsup-kube", "play", "--socket", socket, "../../../examples/kube/web.yaml"})

	// podsup health is what a script waits on: exit 0 once every group is.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, out := runBinary(t, podsup, "--socket", socket, "health")
		if code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("podsup health still says %d after 2 minutes: %s\nplay:\n%s", code, out, output())
		}
		select {
		case <-play.Done():
			t.Fatalf("podsup-kube play ended (%v) before the pod was ready:\n%s", play.Exit(), output())
		case <-time.After(200 * time.Millisecond):
		}
	}
	code, status := runBinary(t, podsup, "--socket", socket, "status")
	if code != 0 || !strings.Contains(status, "web") || !strings.Contains(status, "app") || !strings.Contains(status, "heartbeat") {
		t.Errorf("podsup status exited %d:\n%s", code, status)
	}
	st, err := api.NewClient(socket).Status(context.Background(), "web", "")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, g := range st.Groups {
		for _, p := range g.Processes {
			if p.Pid > 0 {
				pids = append(pids, p.Pid)
			}
		}
	}
	if len(pids) != 2 {
		t.Errorf("running pids %v, want app's and heartbeat's: %+v", pids, st)
	}

	// play is podsup up now (the same pid): SIGTERM stops it gracefully.
	stopPlay(t, play, output, stopped, 2*time.Minute)
	out := output()
	if !strings.Contains(out, "Keyboard interrupt received") { // stopSignal: SIGINT reached python
		t.Errorf("python got no SIGINT, the manifest's stopSignal:\n%s", out)
	}
	for _, p := range []string{"app", "heartbeat"} { // an exit is logged (E2)
		if l := logLine(t, out, "process exited group=web process="+p+" "); !strings.Contains(l, " exit_code=0 ") && !strings.HasSuffix(l, " exit_code=0") {
			t.Errorf("%s did not exit 0: %s", p, l)
		}
	}
	// app's preStop hook sleeps 1 s before its stop signal (K3).
	if took := between(t, out, "INF Stopping process app:", "process exited group=web process=app "); took < 900*time.Millisecond {
		t.Errorf("app ended %v after its stop began: its preStop hook (sleep 1) did not run first", took)
	}
	for _, pid := range pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			t.Errorf("process %d is still there", pid)
		}
	}
	checkNoCgroupsLeft(t, socket)
	if _, err := os.Stat(socket); err == nil {
		t.Errorf("the control socket %s is left behind", socket)
	}
}

// runBinary runs path with args to completion (a minute at most) and
// returns its exit code and combined output.
func runBinary(t *testing.T, path string, args ...string) (int, string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := proc.Start(&proc.Cmd{Path: path, Args: append([]string{filepath.Base(path)}, args...), Stdout: f, Stderr: f})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exit, err := p.Wait(ctx)
	if err != nil {
		_ = p.KillTree(syscall.SIGKILL)
		<-p.Done()
		t.Fatalf("%s %v did not end within a minute", path, args)
	}
	out, _ := os.ReadFile(f.Name())
	return exit.Code(), string(out)
}

// between is the time from the log line containing from to the one
// containing to (podsup's console format begins with 15:04:05.000).
func between(t *testing.T, out, from, to string) time.Duration {
	t.Helper()
	at := func(text string) time.Time {
		l := logLine(t, out, text)
		ts, err := time.Parse("15:04:05.000", l[:min(len(l), 12)])
		if err != nil {
			t.Fatalf("no time at the start of %q: %v", l, err)
		}
		return ts
	}
	d := at(to).Sub(at(from))
	if d < 0 { // across midnight
		d += 24 * time.Hour
	}
	return d
}

// logLine is the first line of out that contains text.
func logLine(t *testing.T, out, text string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, text) {
			return strings.TrimSpace(l)
		}
	}
	t.Fatalf("no log line with %q:\n%s", text, out)
	return ""
}

package hooks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"

	"github.com/podsup/podsup/sandbox/proc"
)

func execHook(argv ...string) spec.Hook {
	return spec.Hook{Handler: spec.Handler{Exec: &spec.ExecAction{Command: argv}}}
}

func TestTimeoutDefaults(t *testing.T) {
	// X5: none for post_start (H3) and pre_stop (K9: the supervisor passes
	// no budget), 30s for pre_start and post_stop; an explicit timeout
	// wins, and a caller's budget caps whatever applies.
	grace := 20 * time.Second
	cases := []struct {
		name   string
		hook   spec.Hook
		point  spec.HookPoint
		budget time.Duration
		want   time.Duration
	}{
		{"post_start has none", spec.Hook{}, spec.PostStart, 0, 0},
		{"pre_stop has none", spec.Hook{}, spec.PreStop, 0, 0},
		{"pre_stop takes the grace", spec.Hook{}, spec.PreStop, grace, grace},
		{"pre_start 30s", spec.Hook{}, spec.PreStart, 0, 30 * time.Second},
		{"post_stop 30s", spec.Hook{}, spec.PostStop, 0, 30 * time.Second},
		{"explicit wins", spec.Hook{Timeout: 5 * time.Second}, spec.PreStart, 0, 5 * time.Second},
		{"explicit under the grace", spec.Hook{Timeout: 5 * time.Second}, spec.PreStop, grace, 5 * time.Second},
		{"grace caps explicit", spec.Hook{Timeout: time.Minute}, spec.PreStop, grace, grace},
	}
	for _, c := range cases {
		if got := Timeout(c.hook, c.point, c.budget); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestExecHookSuccessAndFailure(t *testing.T) {
	out := Run(context.Background(), execHook("sh", "-c", "echo registered; echo warn >&2"), spec.PostStart, 0)
	if out.Err != nil || string(out.Output) != "registered\nwarn\n" || out.Duration <= 0 || out.TimedOut {
		t.Fatalf("success: %+v", out)
	}
	out = Run(context.Background(), execHook("sh", "-c", "echo nope; exit 4"), spec.PreStart, 0)
	var ee *ExitError
	if !errors.As(out.Err, &ee) || ee.Code != 4 || string(out.Output) != "nope\n" || !strings.HasPrefix(out.Err.Error(), "pre_start hook:") {
		t.Fatalf("failure: %+v", out)
	}
	out = Run(context.Background(), execHook("/nonexistent/hook"), spec.PostStop, 0)
	if out.Err == nil || out.TimedOut {
		t.Fatalf("missing command: %+v", out)
	}
	if out := Run(context.Background(), spec.Hook{}, spec.PreStop, time.Second); !errors.Is(out.Err, ErrNoAction) {
		t.Fatalf("no action: %v", out.Err)
	}
}

func TestExecHookEnvFromRunner(t *testing.T) {
	r := Runner{RunAs: proc.RunAs{Env: []string{"PATH=/usr/bin:/bin", "PROC=api"}, Dir: t.TempDir()}}
	out := r.Run(context.Background(), execHook("sh", "-c", `printf "%s %s" "$PROC" "$PWD"`), spec.PreStop, 5*time.Second)
	if out.Err != nil || string(out.Output) != "api "+r.Dir {
		t.Fatalf("%+v %q", out, out.Output)
	}
}

// pidGone waits until the pid written in path has left the process table.
func pidGone(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		t.Fatalf("%s holds %q", path, b)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d (%s) outlived the hook's timeout", pid, filepath.Base(path))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestExecHookTimeoutKillsTree(t *testing.T) {
	// X5, X10: an exec hook that outlives its timeout is killed with its
	// children; the outcome says so and reports how long it ran (K3).
	dir := t.TempDir()
	hook := execHook("sh", "-c", `echo $$ > "$0/sh.pid"; sleep 100 & echo $! > "$0/child.pid"; wait`, dir)
	hook.Timeout = 300 * time.Millisecond
	out := Run(context.Background(), hook, spec.PreStop, 30*time.Second)
	if !out.TimedOut || !errors.Is(out.Err, ErrTimeout) || out.Timeout != 300*time.Millisecond {
		t.Fatalf("%+v", out)
	}
	if out.Duration < 300*time.Millisecond || out.Duration > 8*time.Second {
		t.Fatalf("duration %v for a 300ms timeout", out.Duration)
	}
	pidGone(t, filepath.Join(dir, "sh.pid"))
	pidGone(t, filepath.Join(dir, "child.pid"))
}

func TestExecHookBudgetBoundsPreStop(t *testing.T) {
	// K3 via X5: without its own timeout, pre_stop is bounded by the grace.
	out := Run(context.Background(), execHook("sleep", "100"), spec.PreStop, 200*time.Millisecond)
	if !out.TimedOut || out.Timeout != 200*time.Millisecond {
		t.Fatalf("%+v", out)
	}
}

func httpHook(t *testing.T, srv *httptest.Server, path string) spec.Hook {
	t.Helper()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	n, _ := strconv.Atoi(port)
	return spec.Hook{Handler: spec.Handler{HTTPGet: &spec.HTTPGetAction{Port: n, Path: path, Headers: map[string]string{"X-Hook": "yes"}}}}
}

func TestHTTPGetHook(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hook") != "yes" || r.Header.Get("User-Agent") != UserAgent {
			http.Error(w, "headers missing", http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte("bye"))
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, p := range []string{"/ok", "/moved"} {
		if out := Run(context.Background(), httpHook(t, srv, p), spec.PreStop, 5*time.Second); out.Err != nil || string(out.Output) != "bye" {
			t.Errorf("%s: %+v", p, out)
		}
	}
	out := Run(context.Background(), httpHook(t, srv, "/fail"), spec.PostStop, 0)
	var se *StatusError
	if !errors.As(out.Err, &se) || se.Code != 503 || out.TimedOut {
		t.Errorf("/fail: %+v", out)
	}
	hook := httpHook(t, srv, "/slow")
	hook.Timeout = 200 * time.Millisecond
	out = Run(context.Background(), hook, spec.PreStart, 0)
	if !out.TimedOut || !errors.Is(out.Err, ErrTimeout) || out.Duration < 200*time.Millisecond {
		t.Errorf("/slow: %+v", out)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	refused := spec.Hook{Handler: spec.Handler{HTTPGet: &spec.HTTPGetAction{Port: port}}}
	if out := Run(context.Background(), refused, spec.PreStop, time.Second); out.Err == nil || out.TimedOut || !strings.Contains(out.Err.Error(), "refused") {
		t.Errorf("refused: %+v", out)
	}
}

// runAsync runs a hook in a goroutine on a fake clock once n timers are armed.
func runAsync(t *testing.T, ctx context.Context, clk *clock.Fake, hook spec.Hook, point spec.HookPoint, budget time.Duration, timers int) <-chan Outcome {
	t.Helper()
	done := make(chan Outcome, 1)
	go func() { done <- Runner{Clock: clk}.Run(ctx, hook, point, budget) }()
	wait, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if clk.BlockUntilContext(wait, timers) != nil {
		t.Fatalf("sleep hook armed %d timers, want %d", clk.Pending(), timers)
	}
	return done
}

func sleepHook(d time.Duration) spec.Hook {
	return spec.Hook{Handler: spec.Handler{Sleep: &spec.SleepAction{Duration: d}}}
}

func TestSleepHook(t *testing.T) {
	// X5 sleep: succeeds after its duration, on the injected clock; the
	// duration is reported (K3 charges it to the grace).
	clk := clock.NewFake(clock.Epoch)
	done := runAsync(t, context.Background(), clk, sleepHook(5*time.Second), spec.PreStop, 30*time.Second, 1)
	clk.Advance(5 * time.Second)
	out := <-done
	if out.Err != nil || out.TimedOut || out.Duration != 5*time.Second {
		t.Fatalf("%+v", out)
	}
	if clk.Pending() != 0 {
		t.Fatalf("%d timers left", clk.Pending())
	}
}

func TestSleepHookHonoursTimeout(t *testing.T) {
	// X5/K3: a sleep longer than the grace ends at the grace, timed out.
	clk := clock.NewFake(clock.Epoch)
	done := runAsync(t, context.Background(), clk, sleepHook(time.Minute), spec.PreStop, 10*time.Second, 2)
	clk.Advance(10 * time.Second)
	out := <-done
	if !out.TimedOut || !errors.Is(out.Err, ErrTimeout) || out.Duration != 10*time.Second {
		t.Fatalf("%+v", out)
	}
}

func TestSleepHookHonoursContext(t *testing.T) {
	clk := clock.NewFake(clock.Epoch)
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(t, ctx, clk, sleepHook(time.Minute), spec.PostStart, 0, 1)
	clk.Advance(3 * time.Second)
	cancel()
	out := <-done
	if !errors.Is(out.Err, context.Canceled) || out.TimedOut || out.Duration != 3*time.Second {
		t.Fatalf("%+v", out)
	}
}

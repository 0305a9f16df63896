package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// floodSignals are the signals of the flood: one of them (SIGHUP) ends its
// receiver by default, so a single one that reaches podsup or the child
// outside a handler changes the exit status.
var floodSignals = []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGHUP}

func init() {
	// flood-child catches the flood's signals, says "ready", and exits 42
	// once it has received 50 of them (or after 5s), in the middle of the
	// flood.
	helpers["flood-child"] = func([]string) int {
		c := make(chan os.Signal, 64)
		signal.Notify(c, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGHUP)
		fmt.Println("ready")
		deadline := time.After(5 * time.Second)
		for n := 0; n < 50; n++ {
			select {
			case <-c:
			case <-deadline:
				return 42
			}
		}
		return 42
	}
}

// TestRunFloodKeepsExitCode sends podsup run 5000 signals or more, without
// pause, while its child runs and while the child exits 42: podsup must
// exit 42 every time, as PID 1 of a new PID namespace and as a subreaper.
func TestRunFloodKeepsExitCode(t *testing.T) {
	for _, mode := range []struct {
		name  string
		flags uintptr
	}{{"subreaper", 0}, {"pid1", unix.CLONE_NEWPID}} {
		t.Run(mode.name, func(t *testing.T) {
			if mode.flags != 0 && os.Geteuid() != 0 {
				t.Skip("needs root: creates a PID namespace (CI runs as root)")
			}
			for i := 0; i < 20; i++ {
				c := podsupCmd(t, append([]string{"run", "--"}, helperArgv(t, "flood-child")...)...)
				c.Cloneflags = mode.flags
				s := start(t, c)
				if l := s.line(t); l != "ready" {
					t.Fatalf("child said %q", l)
				}
				sent := flood(s.p, 5000)
				if e := s.wait(t); e.Code() != 42 {
					t.Fatalf("run %d: podsup %s after %d signals, want exit 42", i, e, sent)
				}
			}
		})
	}
}

// flood signals p, cycling through floodSignals, at least min times and
// then on until p has exited (at most 20 times min), so that the flood
// spans the child's exit and podsup's own. It returns how many it sent.
func flood(p *proc.Process, min int) int {
	n := 0
	for ; n < 20*min; n++ {
		if err := p.Signal(floodSignals[n%len(floodSignals)]); err != nil {
			break // podsup's exit is known
		}
		if n >= min {
			select {
			case <-p.Done():
				return n
			default:
			}
		}
	}
	return n
}

// trapScript is a bash child that prints the name (or number) of every
// signal of sigs it gets, says "ready", and on SIGTERM says "end" and exits.
func trapScript(sigs []string) string {
	var b strings.Builder
	for _, s := range sigs {
		fmt.Fprintf(&b, "trap 'echo %s' %s\n", s, s)
	}
	b.WriteString(`trap 'kill $! 2>/dev/null; echo end; exit 0' TERM
echo ready
while :; do sleep 0.2 & wait $!; done
`)
	return b.String()
}

func needBash(t *testing.T) string {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash: the children here are bash scripts (dash cannot trap the real-time signals by number)")
	}
	return bash
}

// TestRunForwardsURGPROFAndRealtimeOnce: each of SIGURG, SIGPROF and
// SIGRTMIN..SIGRTMAX (34-64) sent to podsup from outside reaches the child
// exactly once.
func TestRunForwardsURGPROFAndRealtimeOnce(t *testing.T) {
	bash := needBash(t)
	sigs := []syscall.Signal{syscall.SIGURG, syscall.SIGPROF}
	names := []string{"URG", "PROF"}
	for s := syscall.Signal(34); s <= 64; s++ {
		sigs = append(sigs, s)
		names = append(names, strconv.Itoa(int(s)))
	}
	s := start(t, podsupCmd(t, "run", "--", bash, "-c", trapScript(names)))
	if l := s.line(t); l != "ready" {
		t.Fatalf("child said %q", l)
	}
	for i, sig := range sigs {
		if err := s.p.Signal(sig); err != nil {
			t.Fatalf("signalling podsup: %v", err)
		}
		if got := s.line(t); got != names[i] {
			t.Fatalf("sent %s (%d) to podsup, child reported %q", unix.SignalName(sig), sig, got)
		}
	}
	_ = s.p.Signal(syscall.SIGTERM)
	if rest := strings.TrimSpace(s.rest(t)); rest != "end" {
		t.Errorf("after the last signal the child also reported %q: a signal reached it more than once", rest)
	}
	if e := s.wait(t); e.Code() != 0 {
		t.Errorf("podsup %s", e)
	}
}

// TestRunNeverForwardsRuntimeSIGURG: the Go runtime sends SIGURG to its
// own threads to preempt goroutines; none of those may reach the child. The
// child counts SIGURGs while podsup, logging every signal it forwards, is
// kept busy by a flood; then one SIGURG from outside must arrive, once.
func TestRunNeverForwardsRuntimeSIGURG(t *testing.T) {
	bash := needBash(t)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	script := `trap 'echo URG' URG
trap ':' USR1 USR2 WINCH HUP
trap 'echo stop' QUIT
trap 'kill $! 2>/dev/null; echo end; exit 0' TERM
echo ready
while :; do sleep 0.2 & wait $!; done
`
	c := podsupCmd(t, "run", "-v", "--", bash, "-c", script)
	c.Stderr = devnull // -v's log: busy work, not output to check
	s := start(t, c)
	if l := s.line(t); l != "ready" {
		t.Fatalf("child said %q", l)
	}
	for round := 0; round < 5; round++ {
		flood(s.p, 2000)
		time.Sleep(50 * time.Millisecond)
	}
	// QUIT marks the end of the busy phase in the child's output.
	_ = s.p.Signal(syscall.SIGQUIT)
	var before []string
	for l := s.line(t); l != "stop"; l = s.line(t) {
		before = append(before, l)
	}
	if len(before) > 0 {
		t.Fatalf("the child got %q while podsup was busy: the runtime's own SIGURGs were forwarded", before)
	}
	_ = s.p.Signal(syscall.SIGURG)
	if l := s.line(t); l != "URG" {
		t.Fatalf("SIGURG from outside: child reported %q", l)
	}
	_ = s.p.Signal(syscall.SIGTERM)
	if rest := strings.TrimSpace(s.rest(t)); rest != "end" {
		t.Errorf("child also reported %q", rest)
	}
	s.wait(t)
}

func TestRunRemapExit(t *testing.T) {
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"-e", "143:0", "--", "sh", "-c", "kill $$"}, 0},
		{[]string{"-e", "143:0", "--remap-exit", "3:7", "--", "sh", "-c", "exit 3"}, 7},
		{[]string{"-e", "3:7", "--", "sh", "-c", "exit 4"}, 4},
		{[]string{"-e", "127:0", "--", "no-such-command-podsup"}, 127}, // podsup's own code: not the child's
	}
	for _, tc := range cases {
		if code, out := runPodsup(t, append([]string{"run"}, tc.args...)...); code != tc.code {
			t.Errorf("podsup run %q: exit %d, want %d (output %q)", tc.args, code, tc.code, out)
		}
	}
	for _, bad := range []string{"143", "143:", "x:0", "256:0", "1:-1"} {
		code, out := runPodsup(t, "run", "-e", bad, "--", "true")
		if code != 2 || !strings.Contains(out, "--remap-exit") {
			t.Errorf("-e %q: exit %d output %q, want 2 and a message naming --remap-exit", bad, code, out)
		}
	}
}

// doubleTermConfig: two processes that each need their pre_stop hook
// (300ms) and then a graceful SIGTERM handling (200ms) to stop cleanly;
// each records both in the directory %[2]s.
const doubleTermConfig = `
supervisor {
  socket        = "%[1]s"
  minimum_grace = "100ms"
}
group "web" {
  termination_grace_period = "10s"
  process "a" {
    command = ["sh", "-c", "trap 'sleep 0.2; touch %[2]s/a.term; exit 0' TERM; while :; do sleep 0.1; done"]
    pre_stop {
      exec {
        command = ["sh", "-c", "sleep 0.3; touch %[2]s/a.prestop"]
      }
    }
  }
  process "b" {
    command = ["sh", "-c", "trap 'sleep 0.2; touch %[2]s/b.term; exit 0' TERM; while :; do sleep 0.1; done"]
    pre_stop {
      exec {
        command = ["sh", "-c", "sleep 0.3; touch %[2]s/b.prestop"]
      }
    }
  }
}
`

// TestUpDoubleSIGTERMKeepsGracefulStop: two SIGTERMs 5ms apart (what
// `timeout` sends, to the pid and then its group) must run every pre_stop
// hook and let every process handle SIGTERM within its grace, 20 times in
// 20, and podsup up exits 0.
func TestUpDoubleSIGTERMKeepsGracefulStop(t *testing.T) {
	for i := 0; i < 20; i++ {
		marks := t.TempDir()
		f := startUp(t, fmt.Sprintf(doubleTermConfig, "%s", marks))
		f.waitRunning(t, "web", "a")
		f.waitRunning(t, "web", "b")
		_ = f.up.p.Signal(syscall.SIGTERM)
		time.Sleep(5 * time.Millisecond)
		_ = f.up.p.Signal(syscall.SIGTERM)
		e := f.up.wait(t)
		var missing []string
		for _, m := range []string{"a.prestop", "a.term", "b.prestop", "b.term"} {
			if _, err := os.Stat(filepath.Join(marks, m)); errors.Is(err, os.ErrNotExist) {
				missing = append(missing, m)
			}
		}
		if e.Code() != 0 || len(missing) > 0 {
			t.Fatalf("run %d: podsup up %s; missing %v: the second SIGTERM cut the graceful stop short", i, e, missing)
		}
	}
}

// TestUpSecondSignalAfterASecondEscalates: the rule's other half, a
// deliberate second request (1s or more later) kills what is still
// stopping.
func TestUpSecondSignalAfterASecondEscalates(t *testing.T) {
	marks := t.TempDir()
	cfg := strings.ReplaceAll(doubleTermConfig, "sleep 0.3;", "sleep 30;")
	f := startUp(t, fmt.Sprintf(cfg, "%s", marks))
	f.waitRunning(t, "web", "a")
	_ = f.up.p.Signal(syscall.SIGTERM)
	time.Sleep(1500 * time.Millisecond)
	sent := time.Now()
	_ = f.up.p.Signal(syscall.SIGINT)
	f.up.wait(t)
	if d := time.Since(sent); d > 20*time.Second {
		t.Fatalf("podsup up took %s after the second signal: it did not escalate", d)
	}
	if _, err := os.Stat(filepath.Join(marks, "a.prestop")); err == nil {
		t.Fatal("the 30s pre_stop hook ran to its end: no escalation")
	}
}

// TestRunTakesSignalsOnTheMainThread: podsup run's main thread waits in
// rt_sigtimedwait while the child runs (tini's loop: the kernel offers
// podsup's signals to that thread first), also when global flags come
// before "run".
func TestRunTakesSignalsOnTheMainThread(t *testing.T) {
	for _, args := range [][]string{{"run"}, {"--socket", "/nonexistent/podsup.sock", "run"}} {
		r, w, _ := os.Pipe()
		c := podsupCmd(t, append(args, "--", "sh", "-c", "echo ready; read x; exit 0")...)
		c.Stdin = r
		s := start(t, c)
		r.Close()
		if l := s.line(t); l != "ready" {
			t.Fatalf("child said %q", l)
		}
		file := fmt.Sprintf("/proc/%d/task/%d/syscall", s.p.Pid(), s.p.Pid())
		want := strconv.Itoa(unix.SYS_RT_SIGTIMEDWAIT) + " "
		var last string
		if !eventually(func() bool {
			b, _ := os.ReadFile(file)
			last = string(b)
			return strings.HasPrefix(last, want)
		}) {
			t.Errorf("podsup %q: main thread in syscall %q, want rt_sigtimedwait (%d)", args, strings.Fields(last + " ?")[0], unix.SYS_RT_SIGTIMEDWAIT)
		}
		w.Close()
		if e := s.wait(t); e.Code() != 0 {
			t.Errorf("podsup %q: %s", args, e)
		}
	}
}

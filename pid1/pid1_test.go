package pid1

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
)

// Forwarded is the contract `podsup run --help` documents: everything a
// child can meaningfully get, the real-time signals 34-64 and SIGURG and
// SIGPROF included, and none of the signals that belong to podsup, the C
// library or the Go runtime.
func TestForwardedSignals(t *testing.T) {
	has := map[syscall.Signal]bool{}
	for _, s := range Forwarded {
		has[s.(syscall.Signal)] = true
	}
	for _, s := range []syscall.Signal{syscall.SIGCHLD, syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGTTIN, syscall.SIGTTOU, 32, 33} {
		if has[s] {
			t.Errorf("signal %d must not be forwarded", s)
		}
	}
	for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGTSTP, syscall.SIGCONT, syscall.SIGPIPE, syscall.SIGURG, syscall.SIGPROF, 34, 35, 64} {
		if !has[s] {
			t.Errorf("signal %d must be forwarded", s)
		}
	}
}

func TestRunReportsStartFailuresTheShellWay(t *testing.T) {
	var errs bytes.Buffer
	if code := Run(Options{Argv: []string{"no-such-command-podsup"}, Errors: &errs}); code != 127 {
		t.Fatalf("exit %d, want 127", code)
	}
	if !strings.Contains(errs.String(), "no-such-command-podsup: command not found") {
		t.Fatalf("message %q does not name the command", errs.String())
	}
	if code := Run(Options{Argv: nil, Errors: &errs}); code != 2 {
		t.Fatalf("no command: exit %d, want 2", code)
	}
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	if code := Run(Options{Argv: []string{"sh", "-c", "exit 5"}, Stdin: devnull, Errors: &errs}); code != 5 {
		t.Fatalf("exit %d, want 5", code)
	}
}

func TestRemapExit(t *testing.T) {
	remap := map[int]int{143: 0, 3: 7}
	for _, c := range []struct{ in, out int }{{143, 0}, {3, 7}, {4, 4}, {0, 0}} {
		if got := remapExit(c.in, remap); got != c.out {
			t.Errorf("remapExit(%d) = %d, want %d", c.in, got, c.out)
		}
	}
	if got := remapExit(5, nil); got != 5 {
		t.Errorf("no remap: %d, want 5", got)
	}
}

// The signal thread must never take the signals a fault raises: blocked
// there, a fault would kill podsup instead of reaching Go's handler.
func TestSignalThreadLeavesSynchronousSignals(t *testing.T) {
	w := waitedSignals()
	for _, s := range []syscall.Signal{syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGSYS, syscall.SIGCHLD, 32, 33} {
		if w.has(s) {
			t.Errorf("signal %d is taken by the signal thread", s)
		}
	}
	for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGURG, syscall.SIGPROF, 34, 64} {
		if !w.has(s) {
			t.Errorf("signal %d is not taken by the signal thread", s)
		}
	}
}

// Run drops 32 and 34 from its start (ignored where there is no redirecting
// handler), yet its child gets them at the default, as under a shell: an
// ignored disposition would survive the child's exec (loose.go). Both
// paths: a second Run in the process finds them ignored already.
func TestRunChildStartsWithNothingIgnored(t *testing.T) {
	for i := range 2 {
		out, err := os.CreateTemp(t.TempDir(), "status")
		if err != nil {
			t.Fatal(err)
		}
		var errs bytes.Buffer
		if code := Run(Options{Argv: []string{"grep", "^SigIgn", "/proc/self/status"}, Stdout: out, Errors: &errs}); code != 0 {
			t.Fatalf("run %d: exit %d: %s", i, code, errs.String())
		}
		b, _ := os.ReadFile(out.Name())
		out.Close()
		if f := strings.Fields(string(b)); len(f) != 2 || strings.Trim(f[1], "0") != "" {
			t.Errorf("run %d: the child's %q: want no ignored signal", i, strings.TrimSpace(string(b)))
		}
	}
	if code := Run(Options{Argv: []string{"/nonexistent-podsup/x"}, Errors: new(bytes.Buffer)}); code != 127 {
		t.Errorf("a missing command by path: exit %d, want 127", code)
	}
}

package pid1

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
)

// Forwarded is the contract `podsup run --help` documents: everything a
// child can meaningfully get, and none of the signals that belong to
// podsup or to the Go runtime.
func TestForwardedSignals(t *testing.T) {
	has := map[syscall.Signal]bool{}
	for _, s := range Forwarded {
		has[s.(syscall.Signal)] = true
	}
	for _, s := range []syscall.Signal{syscall.SIGCHLD, syscall.SIGURG, syscall.SIGPROF, syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGTTIN, syscall.SIGTTOU, 32, 33, 34} {
		if has[s] {
			t.Errorf("signal %d must not be forwarded", s)
		}
	}
	for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGTSTP, syscall.SIGCONT, syscall.SIGPIPE, 35, 64} {
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

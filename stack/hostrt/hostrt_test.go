package hostrt_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// The host runtime has no capability of its own, and refuses a group with
// a sandbox rather than run it unisolated.
func TestNoCapabilitiesAndNoSandbox(t *testing.T) {
	if got := (hostrt.Runtime{}).Capabilities(); got != (supervisor.Capabilities{}) {
		t.Errorf("Capabilities() = %+v, want none", got)
	}
	_, err := hostrt.Runtime{}.Start(context.Background(), supervisor.StartRequest{
		Group: "g", Sandbox: &spec.Sandbox{}, Process: spec.Process{Name: "p", Command: []string{"true"}},
		OnExit: func(lifecycle.ExitStatus) {}})
	var se *supervisor.StartError
	if !errors.As(err, &se) || se.Code != 128 {
		t.Errorf("start of a sandboxed group: %v, want a StartError with code 128", err)
	}
}

// An instance's exit reaches OnExit with the kernel's code, and a missing
// command is exit code 128 as in containerd (E3), not the shell's 127.
func TestStartDeliversTheExitAndNotFound(t *testing.T) {
	exited := make(chan lifecycle.ExitStatus, 1)
	inst, err := hostrt.Runtime{}.Start(context.Background(), supervisor.StartRequest{
		Group: "g", Process: spec.Process{Name: "p", Command: []string{"sh", "-c", "exit 7"}},
		OnExit: func(es lifecycle.ExitStatus) { exited <- es }})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case es := <-exited:
		if es.Code != 7 || es.Signal != 0 {
			t.Errorf("exit %+v, want code 7", es)
		}
	case <-time.After(time.Minute):
		_ = inst.KillTree(9)
		t.Fatal("no exit within a minute")
	}
	_, err = hostrt.Runtime{}.Start(context.Background(), supervisor.StartRequest{
		Group: "g", Process: spec.Process{Name: "p", Command: []string{"/nonexistent/podsup-hostrt-test"}},
		OnExit: func(lifecycle.ExitStatus) {}})
	var se *supervisor.StartError
	if !errors.As(err, &se) || se.Code != 128 || !errors.Is(err, proc.ErrCommandNotFound) {
		t.Errorf("start of a missing command: %v, want a StartError with code 128 wrapping ErrCommandNotFound", err)
	}
}

// A security context reaches the spawn: run_as_non_root refuses a process
// that would run as root, with a StartError that names the setting.
func TestStartAppliesTheSecurityContext(t *testing.T) {
	_, err := hostrt.Runtime{}.Start(context.Background(), supervisor.StartRequest{
		Group: "g", Process: spec.Process{Name: "p", Command: []string{"true"}, User: "0",
			Security: spec.Security{RunAsNonRoot: spec.Bool(true)}},
		OnExit: func(lifecycle.ExitStatus) {}})
	var se *supervisor.StartError
	if !errors.As(err, &se) || se.Code != 128 || !strings.Contains(err.Error(), "run_as_non_root") {
		t.Errorf("start as root with run_as_non_root: %v, want a StartError naming run_as_non_root", err)
	}
}

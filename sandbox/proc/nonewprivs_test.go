package proc

import (
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runOut starts c with its stdout and stderr on a pipe and returns what
// it printed and its exit code.
func runOut(t *testing.T, c *Cmd) (string, int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c.Stdout, c.Stderr = w, w
	p, err := Start(c)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	select {
	case <-p.Done():
	case <-time.After(time.Minute):
		t.Fatal("the command did not end")
	}
	return string(out), p.Exit().Code()
}

func statusField(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "(none)"
}

// A command started with NoNewPrivs has the flag, keeps its argv and
// environment, and as a non-root uid has no capabilities.
func TestNoNewPrivsCommandsCannotGainPrivileges(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to start a command as another uid")
	}
	out, code := runOut(t, &Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", `echo "argv0=$0 x=$X"; cat /proc/self/status`},
		RunAs: RunAs{Env: []string{"X=1", "PATH=/usr/bin:/bin"}}, NoNewPrivs: true,
		Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if !strings.Contains(out, "argv0=sh x=1") {
		t.Errorf("argv or environment changed on the way: %s", out)
	}
	for field, want := range map[string]string{"NoNewPrivs": "1", "CapEff": "0000000000000000", "CapPrm": "0000000000000000", "Uid": "65534\t65534\t65534\t65534", "Groups": ""} {
		if got := statusField(out, field); got != want {
			t.Errorf("%s: %q, want %q", field, got, want)
		}
	}
	// Without it, as before.
	out, _ = runOut(t, &Cmd{Path: "/bin/cat", Args: []string{"cat", "/proc/self/status"}})
	if got := statusField(out, "NoNewPrivs"); got != "0" {
		t.Errorf("a command without NoNewPrivs has it: %q", got)
	}
	// A missing command is still a missing command, named.
	if _, err := Start(&Cmd{Path: "/nonexistent/x", NoNewPrivs: true}); !errors.Is(err, ErrCommandNotFound) || !strings.Contains(err.Error(), "/nonexistent/x") {
		t.Errorf("a missing command: %v, want ErrCommandNotFound naming it", err)
	}
}

func TestNotRootRefusesRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: podsup's own uid is what an empty user means")
	}
	for _, c := range []*Cmd{
		{Path: "/bin/true", NotRoot: true},
		{Path: "/bin/true", NotRoot: true, RunAs: RunAs{User: "0"}},
		{Path: "/bin/true", NotRoot: true, RunAs: RunAs{User: "root"}},
		{Path: "/bin/true", NotRoot: true, RunAs: RunAs{Group: "65534"}},
	} {
		if _, err := Start(c); !errors.Is(err, ErrWouldRunAsRoot) {
			t.Errorf("user %q group %q: %v, want ErrWouldRunAsRoot", c.User, c.Group, err)
		}
	}
	if out, code := runOut(t, &Cmd{Path: "/bin/true", NotRoot: true, RunAs: RunAs{User: "65534"}}); code != 0 {
		t.Errorf("a non-root user: %d %s", code, out)
	}
}

// A missing working directory is not reported as a missing /proc: both
// fail the fork with ENOENT, and only the first is the command's.
func TestNoNewPrivsMissingWorkingDir(t *testing.T) {
	_, err := Start(&Cmd{Path: "/bin/true", RunAs: RunAs{Dir: "/nonexistent-podsup-wd"}, NoNewPrivs: true})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent-podsup-wd") {
		t.Errorf("a missing working directory: %v, want it named", err)
	}
}

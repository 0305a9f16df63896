// Package selftest runs the test binary itself as a child, for tests that
// must check a process-wide effect (becoming a child subreaper, the
// reaper's installation) in a fresh process rather than in the shared
// test process. It starts and waits through package proc, the one reaper.
// Tests only.
package selftest

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
)

// Run runs the test binary with env ("NAME=VALUE") added to its
// environment and returns what it printed on stdout, trimmed. The child's
// TestMain is expected to see env, do its check and print the result. It
// fails the test when the child exits non-zero or runs for over a minute.
func Run(t *testing.T, env string) string {
	t.Helper()
	out, _ := Exec(t, proc.Cmd{RunAs: proc.RunAs{Env: append(os.Environ(), env)}, Stderr: os.Stderr})
	return strings.TrimSpace(out)
}

// Exec runs the test binary as a child that c describes further (Path is
// the test binary's, and so is Args when empty; Stdout, and Stderr when
// nil, are a pipe read here) and returns all it printed and its pid. It
// fails the test when the child exits non-zero or runs for over a minute.
func Exec(t *testing.T, c proc.Cmd) (out string, pid int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c.Path, c.Stdout = exe, w
	if len(c.Args) == 0 {
		c.Args = []string{exe}
	}
	if c.Stderr == nil {
		c.Stderr = w
	}
	p, err := proc.Start(&c)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	read := make(chan error, 1)
	go func() { _, err := buf.ReadFrom(r); read <- err }()
	select {
	case <-p.Done():
	case <-time.After(time.Minute):
		_ = p.KillTree(syscall.SIGKILL)
		<-p.Done()
		t.Fatal("the child did not end within a minute")
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	if code := p.Exit().Code(); code != 0 {
		t.Fatalf("the child exited with %d: %s", code, buf.String())
	}
	return buf.String(), p.Pid()
}

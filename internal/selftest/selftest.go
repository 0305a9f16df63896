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
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := proc.Start(&proc.Cmd{Path: exe, Args: []string{exe}, Env: append(os.Environ(), env), Stdout: w, Stderr: os.Stderr})
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
	out := strings.TrimSpace(buf.String())
	if code := p.Exit().Code(); code != 0 {
		t.Fatalf("the child (%s) exited with %d: %s", env, code, out)
	}
	return out
}

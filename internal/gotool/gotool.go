// Package gotool runs the go command for tests that inspect the module
// (which packages a program links, which imports the layers allow). It
// starts the command through package sandbox/proc, since podsup has one
// reaper and nothing else may wait for a process. Tests only.
package gotool

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
)

// Output runs `go args...` to completion and returns its stdout. Without
// the go tool in PATH the test is skipped, saying why; a failure or a run
// of over 5 minutes fails it with go's stderr.
func Output(t testing.TB, args ...string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("needs the go tool in PATH to list the module's packages (%v)", err)
	}
	dir := t.TempDir()
	stdout, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	p, err := proc.Start(&proc.Cmd{Path: goTool, Args: append([]string{"go"}, args...), Stdout: stdout, Stderr: stderr})
	if err != nil {
		t.Fatalf("unable to start %s: %v", goTool, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	exit, err := p.Wait(ctx)
	if err != nil {
		_ = p.KillTree(syscall.SIGKILL) // ours, by its own process group
		<-p.Done()
		t.Fatalf("go %s did not finish within 5 minutes", strings.Join(args, " "))
	}
	if exit.Code() != 0 {
		errOut, _ := os.ReadFile(stderr.Name())
		t.Fatalf("go %s: exit %d:\n%s", strings.Join(args, " "), exit.Code(), errOut)
	}
	b, err := os.ReadFile(stdout.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

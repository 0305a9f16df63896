package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/gotool"
	"github.com/podsup/podsup/sandbox/proc"
)

// playBinaries builds podsup and podsup-kube for the end-to-end tests.
func playBinaries(t *testing.T) (podsup, kubeBin string) {
	t.Helper()
	bin := t.TempDir()
	podsup, kubeBin = filepath.Join(bin, "podsup"), filepath.Join(bin, "podsup-kube")
	gotool.Output(t, "build", "-o", podsup, "github.com/podsup/podsup/cmd/podsup")
	gotool.Output(t, "build", "-o", kubeBin, "github.com/podsup/podsup/kube/cmd/podsup-kube")
	return podsup, kubeBin
}

// startPlay starts kubeBin with args (args[0] its name) and PODSUP_BIN
// set to podsup, its output kept in a file output reads. Unless the test
// sets *stopped once it has stopped it, a cleanup SIGKILLs it (podsup-kube
// play is podsup up by then, and its group goes with it) and logs what it
// printed.
func startPlay(t *testing.T, podsup, kubeBin string, args []string) (play *proc.Process, output func() string, stopped *bool) {
	t.Helper()
	logFile, err := os.Create(filepath.Join(t.TempDir(), "play.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the child has its own
	play, err = proc.Start(&proc.Cmd{
		Path: kubeBin, Args: args,
		RunAs:  proc.RunAs{Env: append(os.Environ(), "PODSUP_BIN="+podsup)},
		Stdout: logFile, Stderr: logFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	output = func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	stopped = new(bool)
	t.Cleanup(func() {
		if !*stopped {
			_ = play.Signal(syscall.SIGKILL)
			<-play.Done()
			t.Logf("podsup-kube play's output:\n%s", output())
		}
	})
	return play, output, stopped
}

// stopPlay sends play SIGTERM and fails the test unless it exits 0
// within d (podsup up stops its groups gracefully); play is stopped then.
func stopPlay(t *testing.T, play *proc.Process, output func() string, stopped *bool, d time.Duration) {
	t.Helper()
	if err := play.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	exit, err := play.Wait(ctx)
	if err != nil {
		t.Fatalf("podsup-kube play did not end within %s of SIGTERM:\n%s", d, output())
	}
	*stopped = true
	if exit.Code() != 0 {
		t.Errorf("podsup-kube play exited %v after SIGTERM, want 0:\n%s", exit, output())
	}
}

// checkNoCgroupsLeft fails the test if a cgroup of the podsup up serving
// socket is left in any hierarchy: its instance is named after its socket.
func checkNoCgroupsLeft(t *testing.T, socket string) {
	t.Helper()
	h := fnv.New32a()
	h.Write([]byte(socket))
	instance := fmt.Sprintf("podsup-%08x", h.Sum32())
	left, _ := filepath.Glob("/sys/fs/cgroup/*/" + instance)
	more, _ := filepath.Glob("/sys/fs/cgroup/" + instance)
	if len(left)+len(more) > 0 {
		t.Errorf("cgroups left behind: %v %v", left, more)
	}
}

package testproc

import (
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// A signal that interrupts the poll (here SIGUSR1, sent to the polling
// thread every few milliseconds; in the tests, the runtime's preemption
// signal) must not end the wait early: PidfdExited polls again and still
// sees the process exit.
func TestPidfdExitedWaitsThroughSignals(t *testing.T) {
	caught := make(chan os.Signal, 1)
	signal.Notify(caught, syscall.SIGUSR1) // handled: the process lives on
	defer signal.Stop(caught)

	child, err := proc.Start(&proc.Cmd{Path: "/bin/sleep", Args: []string{"sleep", "0.3"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { <-child.Done() }()
	pidfd, err := unix.PidfdOpen(child.Pid(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				_ = unix.Tgkill(os.Getpid(), tid, unix.SIGUSR1)
			}
		}
	}()
	if PidfdExited(pidfd, 0) {
		t.Fatal("a running process was called gone")
	}
	start := time.Now()
	if !PidfdExited(pidfd, 20*time.Second) {
		t.Fatalf("the process's exit was not seen: the wait ended after %s", time.Since(start).Round(time.Millisecond))
	}
}

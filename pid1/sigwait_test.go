package pid1

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// sigwaitForward takes a signal and, when it is in fast and a pidfd is
// given, has it sent on before it returns; otherwise it only takes it.
// A signal podsup queued for this thread stands in for one from outside
// (the same queue, the same wait). Run under the race detector in CI, it
// also checks that the system-call section holds no instrumented code.
func TestSigwaitForwardSendsWithinTheWait(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	usr1, usr2 := sigsetOf(syscall.SIGUSR1), sigsetOf(syscall.SIGUSR2)
	old, err := threadMask(unix.SIG_BLOCK, usr1|usr2)
	if err != nil {
		t.Fatal(err)
	}
	defer threadMask(unix.SIG_SETMASK, old)

	// The child exits 7 on SIGUSR1 and 9 on SIGUSR2; the shell runs its
	// trap between two sleeps.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	child, err := proc.Start(&proc.Cmd{Path: "/bin/sh", Args: []string{"sh", "-c",
		`trap "exit 7" USR1; trap "exit 9" USR2; echo ready; while :; do sleep 0.01; done`}, Stdout: w})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer child.Signal(syscall.SIGKILL)
	if line, err := bufio.NewReader(r).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	pidfd, err := child.OpenPidfd()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	self := func(sig syscall.Signal) {
		t.Helper()
		if err := unix.Tgkill(unix.Getpid(), unix.Gettid(), sig); err != nil {
			t.Fatal(err)
		}
	}
	set := usr1 | usr2
	var info siginfo

	// Not in fast, or no pidfd: taken, not sent.
	self(syscall.SIGUSR2)
	if sig, errno, fwd := sigwaitForward(&set, &info, usr1, pidfd); syscall.Signal(sig) != syscall.SIGUSR2 || errno != 0 || fwd {
		t.Fatalf("SIGUSR2 outside fast: signal %d, errno %d, forwarded %v; want %d, 0, false", sig, errno, fwd, syscall.SIGUSR2)
	}
	self(syscall.SIGUSR1)
	if sig, errno, fwd := sigwaitForward(&set, &info, usr1, -1); syscall.Signal(sig) != syscall.SIGUSR1 || errno != 0 || fwd {
		t.Fatalf("SIGUSR1 without a pidfd: signal %d, errno %d, forwarded %v; want %d, 0, false", sig, errno, fwd, syscall.SIGUSR1)
	}
	if err := child.Signal(0); err != nil {
		t.Fatalf("the child ended though nothing was sent to it: %v", err)
	}

	// In fast, with the pidfd: sent on.
	self(syscall.SIGUSR1)
	sig, errno, fwd := sigwaitForward(&set, &info, usr1, pidfd)
	if syscall.Signal(sig) != syscall.SIGUSR1 || errno != 0 {
		t.Fatalf("sigwaitForward: signal %d, errno %d; want %d, 0", sig, errno, syscall.SIGUSR1)
	}
	if !hasSigwaitForward {
		if fwd {
			t.Fatal("forwarded on an architecture without the fast path")
		}
		t.Logf("no fast path on %s: the caller forwards", runtime.GOARCH)
		return
	}
	if !fwd {
		t.Fatal("SIGUSR1 in fast with a pidfd was not forwarded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := child.Wait(ctx)
	if err != nil {
		t.Fatalf("the child did not exit: %v", err)
	}
	if e.Code() != 7 {
		t.Fatalf("the child exited %s, want 7 (SIGUSR1's trap)", e)
	}

	// The child reaped, its pidfd answers ESRCH: taken, not forwarded.
	self(syscall.SIGUSR1)
	if sig, errno, fwd := sigwaitForward(&set, &info, usr1, pidfd); syscall.Signal(sig) != syscall.SIGUSR1 || errno != 0 || fwd {
		t.Fatalf("SIGUSR1 after the child's end: signal %d, errno %d, forwarded %v; want %d, 0, false", sig, errno, fwd, syscall.SIGUSR1)
	}
	// A failed wait is reported as such, with nothing sent.
	if sig, errno, fwd := sigwaitForward(nil, &info, usr1, pidfd); errno != uintptr(unix.EFAULT) || sig != 0 || fwd {
		t.Fatalf("a wait on no set: signal %d, errno %d, forwarded %v; want 0, EFAULT, false", sig, errno, fwd)
	}
}

package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"golang.org/x/sys/unix"
)

// fdLimitStart fills every fd number below a RLIMIT_NOFILE of 64 but four
// low ones, gives the last number (63) to a start as its stdout and prints
// the start's error: the child of the fork needs fd 64 for its error pipe,
// which the limit forbids.
var _ = testproc.Register("fdLimitStart", func([]string) int {
	// The reaper and /dev/null first, so that they hold their fds already.
	if p, err := Start(&Cmd{Path: "/bin/true"}); err == nil {
		<-p.Done()
	}
	const limit = 64
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
		fmt.Println("setrlimit:", err)
		return 2
	}
	var held []int
	for {
		fd, err := unix.Open(os.DevNull, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			break // EMFILE: every number is taken
		}
		held = append(held, fd)
	}
	if len(held) < 8 || held[len(held)-1] != limit-1 {
		fmt.Printf("could not fill the fds: %v\n", held)
		return 2
	}
	// Room for the fork's error pipe, its pidfd and one to spare, all
	// below the stdout's number.
	for _, fd := range held[:4] {
		_ = unix.Close(fd)
	}
	stdout := os.NewFile(uintptr(limit-1), "the last fd")
	p, err := Start(&Cmd{Path: "/bin/true", Stdout: stdout, Stderr: stdout})
	if err == nil {
		<-p.Done()
		fmt.Println("started")
		return 0
	}
	fmt.Println("error:", err)
	if errors.Is(err, syscall.EMFILE) {
		return 0
	}
	return 1
})

// TestStartOutOfFDNumbersIsEMFILE: a start that fails because its child
// cannot have an fd number above RLIMIT_NOFILE says "too many open files",
// not "bad file descriptor" (which read as an fd closed twice).
func TestStartOutOfFDNumbersIsEMFILE(t *testing.T) {
	t.Parallel()
	b, e := runFDHelper(t, "fdLimitStart")
	got := strings.TrimSpace(string(b))
	if e.Code() != 0 || strings.Contains(got, "bad file descriptor") || !strings.Contains(got, "too many open files") {
		t.Fatalf("a start out of fd numbers: %q (helper %s), want \"too many open files\", not \"bad file descriptor\"", got, e)
	}
	t.Log(got)
}

// fdLimitDevNull starts a process with every fd taken, so that its
// /dev/null cannot be opened, then frees some and starts one again.
var _ = testproc.Register("fdLimitDevNull", func([]string) int {
	const limit = 64
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
		fmt.Println("setrlimit:", err)
		return 2
	}
	held := takeEveryFD()
	if _, err := Start(&Cmd{Path: "/bin/true"}); err == nil || !errors.Is(err, syscall.EMFILE) {
		fmt.Println("with every fd taken:", err)
		return 2
	}
	return startOnceFreed(held)
})

// takeEveryFD opens / until the fd limit refuses and returns the fds.
func takeEveryFD() []int {
	var held []int
	for {
		fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return held
		}
		held = append(held, fd)
	}
}

// startOnceFreed closes held, starts /bin/true and prints "started" (exit
// 0) once it ran, or the error (exit 1).
func startOnceFreed(held []int) int {
	for _, fd := range held {
		_ = unix.Close(fd)
	}
	p, err := Start(&Cmd{Path: "/bin/true"})
	if err != nil {
		fmt.Println("with fds free again:", err)
		return 1
	}
	<-p.Done()
	fmt.Println("started")
	return 0
}

// TestStartAfterFDsFreedAgain: a start that failed because podsup's fds
// were full does not make later ones fail once fds are free again (its
// /dev/null, opened on first use, was failed for good).
func TestStartAfterFDsFreedAgain(t *testing.T) {
	t.Parallel()
	b, e := runFDHelper(t, "fdLimitDevNull")
	if got := strings.TrimSpace(string(b)); e.Code() != 0 || got != "started" {
		t.Fatalf("a start once fds were free again: %q (helper %s), want it started", got, e)
	}
}

// fdLimitDevNullHigh starts a process when the only free fd number below
// a RLIMIT_NOFILE of 64 is the last one, so that a /dev/null opened then
// gets it, then frees every fd and starts one again. It runs before
// anything else of the package has started a process: /dev/null is first
// opened inside that start.
var _ = testproc.Register("fdLimitDevNullHigh", func([]string) int {
	// The runtime's poller first (its epoll fd), as a podsup has it
	// before any start: without a free fd for it, opening a file crashes.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	const limit = 64
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
		fmt.Println("setrlimit:", err)
		return 2
	}
	held := takeEveryFD()
	if len(held) < 8 || held[len(held)-1] != limit-1 {
		fmt.Printf("could not fill the fds: %v\n", held)
		return 2
	}
	_ = unix.Close(limit - 1)
	held = held[:len(held)-1]
	if p, err := Start(&Cmd{Path: "/bin/true"}); err == nil {
		<-p.Done() // it may start: what matters is the next one
	}
	return startOnceFreed(held)
})

// TestStartAfterDevNullOpenedAtTheLastFD: a /dev/null first opened while
// only the last fd number was free does not fail every later start once
// fds are free (each child needed a number above the limit for it).
func TestStartAfterDevNullOpenedAtTheLastFD(t *testing.T) {
	t.Parallel()
	b, e := runFDHelper(t, "fdLimitDevNullHigh")
	if got := strings.TrimSpace(string(b)); e.Code() != 0 || got != "started" {
		t.Fatalf("a start once fds were free again: %q (helper %s), want it started", got, e)
	}
}

// runFDHelper runs the named helper to its end (a minute at most) and
// returns what it printed and its exit.
func runFDHelper(t *testing.T, name string) ([]byte, Exit) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	c := helperCmd(t, name)
	c.Stdout, c.Stderr = out, out
	p, err := Start(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := p.Wait(ctx)
	if err != nil {
		_ = p.Signal(unix.SIGKILL)
		<-p.Done()
		t.Fatal("the helper did not end")
	}
	b, _ := os.ReadFile(out.Name())
	return b, e
}

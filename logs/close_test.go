package logs

import (
	"context"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

func TestCloseLeavesNoGoroutineAndNoFD(t *testing.T) {
	// Not parallel: it counts the process's goroutines and open fds, which belong to the whole test process.
	// Warm up what lives for the whole test binary (the reaper, /dev/null)
	// so it is not counted as a leak.
	warm := newTestHub(t, HubOptions{})
	wp, a := startSh(t, warm, "warm", "up", "1", spec.Log{}, `true`)
	waitDone(t, a)
	<-wp.Done() // the reaper closes the pidfd then
	if err := warm.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)

	var out syncBuffer
	h, err := NewHub(HubOptions{Out: &out, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// Finished processes, one still running (its pipes stay open), two
	// followers (one never read), a passthrough one.
	var procs []*proc.Process
	for i, script := range []string{`echo a`, `echo b >&2`, `echo c; exec sleep 100`} {
		p, a := startSh(t, h, "g", "p"+string(rune('0'+i)), "1", spec.Log{}, script)
		if i < 2 {
			waitDone(t, a)
		}
		procs = append(procs, p)
	}
	if _, err := h.Attach("g", "pass", "1", spec.Log{Mode: "passthrough"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Follow(context.Background(), "g", "p2", -1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := h.Follow(ctx, "g", "p0", 0); err != nil {
		t.Fatal(err)
	}

	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := h.Attach("g", "late", "1", spec.Log{}); err == nil {
		t.Fatal("Attach after Close succeeded")
	}
	for _, p := range procs {
		_ = p.Signal(syscall.SIGKILL) // ours, through its pidfd; most have exited already
		<-p.Done()                    // and their pidfds are closed
	}
	// Close joined every goroutine it started; the slack is for the
	// runtime's own (e.g. a finalizer run).
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines+1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines+1 {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after Close:\n%s", goroutines, n, buf[:runtime.Stack(buf, true)])
	}
	if n := openFDs(t); n != fds {
		t.Fatalf("%d fds before, %d after Close", fds, n)
	}
}

func TestAttachmentOfARunningProcessIsDoneAfterClose(t *testing.T) {
	t.Parallel()
	h, err := NewHub(HubOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, a := startSh(t, h, "g", "p", "1", spec.Log{}, `exec sleep 100`)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, a)
}

func TestAGrandchildsLinesAreCapturedAfterTheProcessExits(t *testing.T) {
	t.Parallel()
	// A child that outlives the process keeps writing to the same pipe:
	// its lines are still captured, as the current instance's.
	h := newTestHub(t, HubOptions{})
	p, a := startSh(t, h, "g", "p", "1", spec.Log{}, `(sleep 0.2; echo from-grandchild) & echo from-parent`)
	<-p.Done()
	select {
	case <-a.Done():
		t.Fatal("the attachment ended while it was still the current one")
	default:
	}
	eventually(t, "the grandchild's line", func() bool { return len(mustTail(t, h, "g", "p", 0, false)) == 2 })
	if got := texts(mustTail(t, h, "g", "p", 0, false)); !equalStrings(got, []string{"from-parent", "from-grandchild"}) {
		t.Fatalf("got %q", got)
	}
}

func TestIdleHubDoesNotWake(t *testing.T) {
	// Not parallel: a signal to the test process (the SIGCHLD of another
	// test's child) can interrupt epoll_wait, which counts as a wake-up.
	h := newTestHub(t, HubOptions{Out: discardWriter{}})
	for i := range 20 {
		startSh(t, h, "g", "p"+strconv.Itoa(i), "1", spec.Log{}, `echo up; exec sleep 100`)
	}
	eventually(t, "every process's line", func() bool {
		for i := range 20 {
			if l, _ := h.Tail("g", "p"+strconv.Itoa(i), 0, false); len(l) != 1 {
				return false
			}
		}
		return true
	})
	before := h.wakeups.Load()
	time.Sleep(300 * time.Millisecond) // a quiet window: nothing may wake the loop
	if n := h.wakeups.Load() - before; n != 0 {
		t.Fatalf("the loop woke %d times while 20 processes were silent", n)
	}
}

func TestHubWaitsInTheRuntimesPoller(t *testing.T) {
	t.Parallel()
	// The loop must park in Go's poller, not block a thread in epoll_wait
	// (package internal/epollwait, which tests the waiting itself).
	h := newTestHub(t, HubOptions{})
	for i := range 3 {
		p, _ := startSh(t, h, "g", "p", strconv.Itoa(i), spec.Log{}, `echo line`)
		<-p.Done()
	}
	eventually(t, "the last instance's line", func() bool {
		l, _ := h.Tail("g", "p", 0, false)
		return len(l) == 1
	})
	h.readMu.Lock() // the loop holds it while it handles events, not while it waits
	defer h.readMu.Unlock()
	if !h.ep.Parked() {
		t.Fatal("the capture loop blocks a thread in epoll_wait")
	}
}

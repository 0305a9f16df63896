package epollwait

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestWaitParksWithoutAThreadAndWakesOnAnEvent(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Parked() {
		t.Fatal("the epoll fd was not handed to the runtime's poller")
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	if err := s.Add(efd, unix.EPOLLIN); err != nil {
		t.Fatal(err)
	}
	got := make(chan []unix.EpollEvent, 1)
	go func() {
		events := make([]unix.EpollEvent, 4)
		n, err := s.Wait(events)
		if err != nil {
			t.Error(err)
		}
		got <- events[:n]
	}()
	// While it waits, no thread may sit in epoll_wait on this set: the
	// runtime's own poller thread waits on the runtime's epoll fd, not
	// on ours. Watched for a while, since the goroutine may not have
	// reached its wait at the first look.
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if tid, ok := threadInEpollWaitOn(t, s.FD()); ok {
			t.Fatalf("thread %d is blocked in epoll_wait on the set", tid)
		}
	}
	select {
	case evs := <-got:
		t.Fatalf("Wait returned %v before anything was ready", evs)
	default:
	}
	if _, err := unix.Write(efd, []byte{1, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	select {
	case evs := <-got:
		if len(evs) != 1 || int(evs[0].Fd) != efd || evs[0].Events&unix.EPOLLIN == 0 {
			t.Fatalf("Wait returned %+v, want the eventfd readable", evs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the eventfd was written")
	}
}

// threadInEpollWaitOn reports a thread of this process that is in an
// epoll wait on epfd, from /proc/self/task/*/syscall (the system call's
// number, then its arguments; the first is the epoll fd).
func threadInEpollWaitOn(t *testing.T, epfd int) (int, bool) {
	t.Helper()
	var waits []int
	switch runtime.GOARCH {
	case "amd64":
		waits = []int{232, 281, 441} // epoll_wait, epoll_pwait, epoll_pwait2
	case "arm64":
		waits = []int{22, 441} // epoll_pwait, epoll_pwait2
	default:
		t.Skipf("the epoll system call numbers of %s are not listed here", runtime.GOARCH)
	}
	tasks, err := filepath.Glob("/proc/self/task/*/syscall")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no /proc/self/task/*/syscall: %v", err)
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		fields := strings.Fields(string(b))
		if len(fields) < 2 {
			continue // "running"
		}
		nr, _ := strconv.Atoi(fields[0])
		arg, _ := strconv.ParseInt(strings.TrimPrefix(fields[1], "0x"), 16, 64)
		for _, w := range waits {
			if nr == w && int(arg) == epfd {
				tid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
				return tid, true
			}
		}
	}
	return 0, false
}

package proc

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A fork copies the forking thread's fd table and the exec then closes
// every close-on-exec fd of the copy, one by one: a fork costs the kernel
// time in proportion to the fds podsup holds, and podsup holds one or two
// per running process. Starting N processes one after another cost N²:
// at 10,000 the copies and closes were the largest part of start-up
// (docs/benchmarks.md, "Start and stop at scale").
//
// The lean thread is an OS thread with an fd table of its own
// (unshare(CLONE_FILES)), holding only stdio and the Go runtime's poller
// fds. Once podsup tracks leanForkAbove processes, or holds as many fds
// kept ready for its processes' restarts (HoldFDs), host forks run there:
// the fds a child gets are copied into that table for the fork
// (pidfd_getfd on this process's own pidfd, which reads the main table,
// the thread group leader's) and closed after it. Below that a fork stays
// on the calling thread, because handing it to another thread costs more
// than copying a small table. Where the kernel lacks unshare or
// pidfd_getfd (before 5.6), every fork stays on the calling thread.
//
// The thread is locked and never unlocked, so its goroutine is the only
// Go code that ever runs on it, and threads the runtime starts from it are
// started by the runtime's template thread instead (a locked thread's
// state is not cloned), so nothing but the fork itself sees the private
// table.

// leanForkAbove is the number of tracked processes from which a host fork
// runs on the lean thread; a variable so that tests can force either way.
var leanForkAbove atomic.Int64

func init() { leanForkAbove.Store(256) }

type leanThread struct {
	tid  int
	self int // a pidfd of this process, in the lean table
	work chan leanWork
	// busySince is when the work under way began (UnixNano), 0 while idle.
	busySince atomic.Int64
	probe     int // an fd of the main table while the thread starts
}

type leanWork struct {
	fn   func() error
	done chan error
}

var lean struct {
	once sync.Once
	t    atomic.Pointer[leanThread] // nil: unavailable, or not started
}

// HostForker is a Forker for forks in podsup's own namespaces and
// cgroups (or placed at fork through Cmd.CgroupFD): on the lean thread
// when podsup already runs many processes, on the calling thread
// otherwise. Not for a fork whose thread was prepared (moved into v1
// cgroups, say): that must stay on the prepared thread.
//
// A fork stuck in its exec keeps the lean thread: as at the fork gate, a
// fork that has waited the gate's patience behind one still running runs
// on its own thread.
var HostForker Forker = hostForker{}

type hostForker struct{}

// Namespaces is podsup's own (NamespaceForker): a Cmd with a security
// profile forks on that profile's thread instead, in podsup's namespaces.
func (hostForker) Namespaces() Namespaces { return nil }

// ForkHere runs fn on the calling thread, the profile's: HostForker adds
// nothing else to a fork.
func (hostForker) ForkHere(fn func() error) error { return fn() }

func (hostForker) Fork(fn func() error) error {
	if !leanForkDue() {
		return fn()
	}
	t := leanThreadOnce()
	if t == nil {
		return fn()
	}
	w := leanWork{fn, make(chan error, 1)}
	select {
	case t.work <- w:
	default:
		if !t.handPatiently(w) {
			return fn()
		}
	}
	return <-w.done
}

// handPatiently hands w to the lean thread unless the work it is doing
// has lasted forkGatePatience.
func (t *leanThread) handPatiently(w leanWork) bool {
	for {
		wait := forkGatePatience
		if since := t.busySince.Load(); since != 0 {
			wait -= time.Since(time.Unix(0, since))
		}
		if wait <= 0 {
			return false
		}
		timer := time.NewTimer(wait)
		select {
		case t.work <- w:
			timer.Stop()
			return true
		case <-timer.C:
		}
	}
}

// heldFDs counts the fds podsup keeps open for its processes beyond the
// one or two each running one costs (HoldFDs).
var heldFDs atomic.Int64

// HoldFDs tells the fork that podsup now keeps n more fds (n < 0: fewer)
// open for its processes: what a process restarted at once keeps ready
// for its next start (its next output pipe, its cgroup's files). A fork
// copies every one of them, and its exec closes them again, so enough of
// them send forks to the lean thread as enough running processes do: 300
// processes in a crash loop holding six fds each made every fork copy
// 1,700 (docs/benchmarks.md).
func HoldFDs(n int) { heldFDs.Add(int64(n)) }

// leanForkDue reports whether a host fork goes to the lean thread.
func leanForkDue() bool { return tracked()+heldFDs.Load() >= leanForkAbove.Load() }

func tracked() int64 {
	r := getReaper()
	r.mu.Lock()
	defer r.mu.Unlock()
	return int64(len(r.owners))
}

func leanThreadOnce() *leanThread {
	lean.once.Do(func() {
		t, err := startLeanThread()
		if err == nil {
			lean.t.Store(t)
		}
	})
	return lean.t.Load()
}

func startLeanThread() (*leanThread, error) {
	// The runtime's poller fds must exist before the table is copied:
	// the runtime writes to its eventfd from whichever thread adds a
	// timer, this one included. A pollable file brings the poller up.
	// Its read end, open in the main table until the thread is ready,
	// is what the thread tries pidfd_getfd on.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	defer w.Close()
	rc, err := r.SyscallConn()
	if err != nil {
		return nil, err
	}
	probe := -1
	_ = rc.Control(func(fd uintptr) { probe = int(fd) })
	ready := make(chan error, 1)
	t := &leanThread{work: make(chan leanWork), probe: probe}
	go t.run(ready, nil)
	if err := <-ready; err != nil {
		return nil, err
	}
	return t, nil
}

// run locks its goroutine to a thread other than the main one (whose fd
// table pidfd_getfd reads), gives that thread a table of its own and
// serves forks on it forever. locked, when not nil, is closed once the
// goroutine has its thread.
func (t *leanThread) run(ready chan<- error, locked chan<- struct{}) {
	runtime.LockOSThread()
	if locked != nil {
		close(locked)
	}
	if unix.Gettid() == os.Getpid() {
		// Keep the main thread until another goroutine holds a thread
		// of its own, which then cannot be this one; nothing of the main
		// thread was changed.
		other := make(chan struct{})
		go t.run(ready, other)
		<-other
		runtime.UnlockOSThread()
		return
	}
	if err := unix.Unshare(unix.CLONE_FILES); err != nil {
		runtime.UnlockOSThread() // the thread is as it was
		ready <- err
		return
	}
	// From here the thread is changed: it stays locked, and dies with the
	// goroutine if this returns.
	closeAllButRuntimeFDs()
	self, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		ready <- err
		return
	}
	// pidfd_getfd may be missing, or refused (seccomp).
	if fd, err := unix.PidfdGetfd(self, t.probe, 0); err != nil {
		ready <- err
		return
	} else {
		unix.Close(fd)
	}
	t.tid, t.self = unix.Gettid(), self
	ready <- nil
	for w := range t.work {
		t.busySince.Store(time.Now().UnixNano())
		err := w.fn()
		t.busySince.Store(0)
		w.done <- err
	}
}

// closeAllButRuntimeFDs closes, in the lean table, what the copy brought
// along: podsup's pipes, sockets and files, which must close when podsup
// closes them (a pipe's reader must see EOF, a writer EPIPE). Kept are
// stdio and every epoll and eventfd fd, among them the runtime's poller,
// whose fd numbers the runtime may use from any thread; an extra
// reference to one of podsup's own epoll sets or eventfds changes nothing
// that anyone waits for.
func closeAllButRuntimeFDs() {
	ents, err := os.ReadDir("/proc/thread-self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		link, err := os.Readlink("/proc/thread-self/fd/" + e.Name())
		if err != nil || strings.HasPrefix(link, "anon_inode:[eventpoll]") || strings.HasPrefix(link, "anon_inode:[eventfd]") {
			continue
		}
		unix.Close(fd)
	}
}

// onLeanThread reports whether the caller runs on the lean thread.
func onLeanThread() *leanThread {
	t := lean.t.Load()
	if t == nil || unix.Gettid() != t.tid {
		return nil
	}
	return t
}

// leanFDs copies the fds a fork needs from the main table into the lean
// one. The copies are close-on-exec; the child's dup2 clears the flag.
type leanFDs struct {
	t      *leanThread
	copies map[uintptr]uintptr
}

func (l *leanFDs) get(fd uintptr) (uintptr, error) {
	if fd == ^uintptr(0) {
		return fd, nil // a closed *os.File: ForkExec says EBADF, as always
	}
	if c, ok := l.copies[fd]; ok {
		return c, nil
	}
	c, err := unix.PidfdGetfd(l.t.self, int(fd), 0)
	if err != nil {
		return 0, err // EBADF for a closed fd, as ForkExec would say
	}
	l.copies[fd] = uintptr(c)
	return uintptr(c), nil
}

func (l *leanFDs) close() {
	for _, c := range l.copies {
		unix.Close(int(c))
	}
}

// forkExecLean is syscall.ForkExec with attr's fds (Files, CgroupFD)
// taken from the main table when the caller runs on the lean thread; attr
// itself is left as it was.
func forkExecLean(path string, args []string, attr *syscall.ProcAttr) (int, error) {
	t := onLeanThread()
	if t == nil {
		return syscall.ForkExec(path, args, attr)
	}
	l := &leanFDs{t: t, copies: map[uintptr]uintptr{}}
	defer l.close()
	a := *attr
	a.Files = make([]uintptr, len(attr.Files))
	for i, fd := range attr.Files {
		c, err := l.get(fd)
		if err != nil {
			return 0, err
		}
		a.Files[i] = c
	}
	if attr.Sys != nil && (attr.Sys.UseCgroupFD || attr.Sys.Foreground) {
		sys := *attr.Sys
		if sys.UseCgroupFD {
			c, err := l.get(uintptr(sys.CgroupFD))
			if err != nil {
				return 0, err
			}
			sys.CgroupFD = int(c)
		}
		if sys.Foreground {
			// The child hands the terminal over before it arranges its
			// fds: Ctty is a number of the forking thread's table.
			c, err := l.get(uintptr(sys.Ctty))
			if err != nil {
				return 0, err
			}
			sys.Ctty = int(c)
		}
		a.Sys = &sys
	}
	return syscall.ForkExec(path, args, &a)
}

package sandbox

import (
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// errThreadClosed is Fork on a namespace thread after Close.
var errThreadClosed = fmt.Errorf("sandbox namespace thread closed: %w", ErrFailedPrecondition)

// nsThread is a goroutine locked for good to an OS thread that has entered
// a sandbox's namespaces. Forks run on it, so children land in every
// namespace of the sandbox yet stay children of podsup: the one reaper,
// pidfds and cgroup placement work unchanged.
//
// How it enters: unshare(CLONE_FS) first, because Go's threads share one
// fs_struct (root, cwd) and the kernel refuses a mount-namespace setns to a
// thread sharing it; then one setns(pidfd_of_holder, flags) enters all
// namespaces at once. setns into a PID namespace changes the namespace of
// the thread's future children only, which is exactly what is wanted.
//
// The thread is tainted forever: it never unlocks. When the goroutine
// returns still locked, the Go runtime ends the thread instead of reusing
// it for other goroutines. (Threads the runtime creates later are cloned
// from its template thread, never from a locked one, so the taint does not
// spread.)
type nsThread struct {
	mu     sync.RWMutex // guards closed and sending on jobs
	closed bool
	jobs   chan nsJob
	// holder is the process whose namespaces the thread entered: a
	// security profile's thread enters them through it (Enter).
	holder  *proc.Process
	nsFlags int
	gone    chan struct{} // closed by Close
}

type nsJob struct {
	fn   func() error
	errc chan error
}

// startNSThread starts the thread and returns once it is inside. pidfd is
// holder's; it is used only before startNSThread returns.
func startNSThread(holder *proc.Process, pidfd int, nsFlags int) (*nsThread, error) {
	t := &nsThread{jobs: make(chan nsJob), holder: holder, nsFlags: nsFlags, gone: make(chan struct{})}
	ready := make(chan error, 1)
	go t.run(pidfd, nsFlags, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return t, nil
}

func (t *nsThread) run(pidfd int, nsFlags int, ready chan<- error) {
	runtime.LockOSThread() // never unlocked, except on the main thread: see below
	if unix.Gettid() == unix.Getpid() {
		// This is the main thread. It must never be tainted: the runtime
		// cannot end it (it parks it forever, keeping the namespaces, and
		// their mounts, alive), and /proc/<pid>/ns/* shows its namespaces
		// as podsup's. Keep it occupied while a new goroutine, which
		// therefore starts on another thread, takes over.
		locked := make(chan struct{})
		go t.runLocked(pidfd, nsFlags, ready, locked)
		<-locked
		runtime.UnlockOSThread()
		return
	}
	t.runLocked(pidfd, nsFlags, ready, nil)
}

// runLocked enters the namespaces on a thread other than the main thread
// and serves jobs until Close.
func (t *nsThread) runLocked(pidfd int, nsFlags int, ready chan<- error, locked chan<- struct{}) {
	if locked != nil {
		runtime.LockOSThread() // never unlocked: see nsThread
		close(locked)
	}
	if unix.Gettid() == unix.Getpid() {
		ready <- fmt.Errorf("entering the sandbox's namespaces: refusing to taint the main thread")
		return
	}
	if nsFlags&unix.CLONE_NEWNS != 0 {
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			ready <- fmt.Errorf("unsharing fs attributes of the namespace thread: %w", err)
			return
		}
	}
	if err := unix.Setns(pidfd, nsFlags); err != nil {
		ready <- fmt.Errorf("entering the sandbox's namespaces: %w", err)
		return
	}
	ready <- nil
	for j := range t.jobs {
		j.errc <- j.fn()
	}
}

// Fork runs fn on the thread (sandbox.Forker).
func (t *nsThread) Fork(fn func() error) error {
	t.mu.RLock()
	if t.closed {
		t.mu.RUnlock()
		return errThreadClosed
	}
	errc := make(chan error, 1)
	t.jobs <- nsJob{fn: fn, errc: errc}
	t.mu.RUnlock()
	return <-errc
}

// Resolve runs Start's lookups on the thread too (sandbox.Resolver): it
// sees the sandbox's files.
func (t *nsThread) Resolve(fn func() error) error { return t.Fork(fn) }

// Close ends the goroutine and with it the thread.
func (t *nsThread) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		close(t.jobs)
		close(t.gone)
	}
}

// Enter moves the calling thread into the sandbox's namespaces
// (proc.Namespaces): a security profile's thread for this sandbox, which
// has unshared its fs attributes already.
func (t *nsThread) Enter() error {
	return t.holder.WithPidfd(func(pidfd int) error {
		if err := unix.Setns(pidfd, t.nsFlags); err != nil {
			return fmt.Errorf("entering the sandbox's namespaces: %w", err)
		}
		return nil
	})
}

// Gone is closed when the sandbox's namespaces go (proc.Namespaces).
func (t *nsThread) Gone() <-chan struct{} { return t.gone }

// placer is the part of a cgroups.Placement a fork needs.
type placer interface {
	Fork(fn func() error) error
	CgroupFD() int
	MovesThread() bool
}

// sandboxForker composes the two things a fork into a sandbox needs: the
// namespace thread (may be nil: the host's namespaces) and the cgroup
// placement (may be nil: no cgroups). The placement was opened in podsup's
// own mount namespace; inside the thread only its open files are used.
type sandboxForker struct {
	ns *nsThread
	pl placer
}

func (f sandboxForker) Fork(fn func() error) error {
	inner := fn
	if f.pl != nil {
		inner = func() error { return f.pl.Fork(fn) }
	}
	if f.ns != nil {
		return f.ns.Fork(inner)
	}
	if f.pl == nil || !f.pl.MovesThread() {
		// In podsup's namespaces, on no particular thread: proc's own
		// choice, which avoids copying a large fd table per fork.
		return proc.HostForker.Fork(inner)
	}
	return inner()
}

// Namespaces are the sandbox's (proc.NamespaceForker): nil for a fork in
// podsup's own.
func (f sandboxForker) Namespaces() proc.Namespaces {
	if f.ns == nil {
		return nil
	}
	return f.ns
}

// ForkHere runs fn with the cgroup placement alone, on the calling thread
// (proc.NamespaceForker): a security profile's thread, already inside.
func (f sandboxForker) ForkHere(fn func() error) error {
	if f.pl != nil {
		return f.pl.Fork(fn)
	}
	return fn()
}

func (f sandboxForker) Resolve(fn func() error) error {
	if f.ns != nil {
		return f.ns.Fork(fn)
	}
	return fn()
}

package proc

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Security without code between fork and exec
//
// syscall.ForkExec runs nothing of ours between the fork and the exec, so
// the settings of a Security cannot be applied in the child. But most of
// them are per thread, and a child cloned from a thread inherits that
// thread's: PR_SET_NO_NEW_PRIVS, the seccomp filter (installed without
// TSYNC it is the calling thread's alone), the capability bounding set and
// the thread's capability sets (capset acts on the calling thread), and
// the umask once the thread has its own fs_struct (unshare(CLONE_FS)). So
// each distinct profile gets a profile thread: a goroutine locked for good
// to an OS thread that applies the profile to itself once, then runs every
// fork of that profile. The fork is still the one fork Start makes, with
// its cgroup placement, from a thread of podsup.
//
// Such a thread is tainted for good (no_new_privs and a filter cannot be
// undone), so its goroutine never unlocks: when it returns, the Go runtime
// ends the thread instead of reusing it. No other thread inherits the
// state: the runtime creates new threads from its template thread, never
// from a locked one. A thread ends after profileThreadIdle without a
// process of its profile running, and at once when the namespaces it
// entered go away.
//
// The thread's own system calls run under its filter: the Go runtime's on
// that thread and ForkExec's (ForkSyscalls); package seccomp refuses a
// profile that denies one of them.
//
// Capabilities: the bounding set and the inheritable set become the
// profile's, the thread's permitted and effective sets stay as they are,
// so that the child can still setgroups/setgid/setuid before its exec. A
// command running as uid 0 gets (inheritable | bounding) = the profile at
// exec; a command of another user gets them as ambient capabilities,
// which ForkExec raises after its setuid (SysProcAttr.AmbientCaps).
//
// A sandbox's namespaces: a profile thread for a fork into a sandbox
// first enters the sandbox's namespaces (NamespaceForker), as the
// sandbox's own namespace thread did, then applies the profile.

// NamespaceForker is a Forker that forks inside namespaces another thread
// can enter. Start with a Security forks on a profile thread of its own
// in those namespaces, through ForkHere, instead of through Fork.
type NamespaceForker interface {
	Forker
	// Namespaces are the namespaces Fork's children land in; nil means
	// podsup's own.
	Namespaces() Namespaces
	// ForkHere runs fn, which forks, on the calling thread with whatever
	// Fork adds besides the namespaces (a cgroup placement).
	ForkHere(fn func() error) error
}

// Namespaces is a set of namespaces a thread can enter (a sandbox's). It
// must be comparable: profile threads are shared by equal Namespaces.
type Namespaces interface {
	// Enter moves the calling thread, locked for good, never the main
	// thread, with an fs_struct of its own, into the namespaces.
	Enter() error
	// Gone is closed when the namespaces go away: their profile threads
	// end, rather than keep them (and their mounts) alive.
	Gone() <-chan struct{}
}

// profileThreadIdle is how long a profile thread outlives the last
// process of its profile: a restart reuses it.
var profileThreadIdle = 30 * time.Second

type profileKey struct {
	ns      Namespaces
	profile string
}

type profileThread struct {
	key   profileKey
	jobs  chan func()
	ready chan struct{} // closed once set up (err tells how)
	err   error
	quit  chan struct{} // closed to end an idle thread
	done  chan struct{} // closed when the goroutine ends

	// Guarded by profileThreads.mu.
	users    int // processes running and starts in flight
	ended    bool
	lastFree time.Time
	// retired: the thread was found in a fork that had not reached its
	// exec after forkGatePatience, and its key got a new thread; it ends
	// as soon as nothing uses it.
	retired bool
}

var profileThreads struct {
	mu sync.Mutex
	m  map[profileKey]*profileThread
}

// errProfileThreadEnded is a fork on a thread whose namespaces went away.
var errProfileThreadEnded = errors.New("the sandbox's namespaces are gone")

// acquireProfileThread returns the running thread for tp in ns, starting
// it if needed; the caller releases it once the process it starts has
// ended (or its start failed).
func acquireProfileThread(ns Namespaces, tp threadProfile) (*profileThread, error) {
	key := profileKey{ns: ns, profile: tp.key()}
	profileThreads.mu.Lock()
	t := profileThreads.m[key]
	if t == nil {
		if profileThreads.m == nil {
			profileThreads.m = map[profileKey]*profileThread{}
		}
		t = &profileThread{key: key, jobs: make(chan func()), ready: make(chan struct{}),
			quit: make(chan struct{}), done: make(chan struct{})}
		profileThreads.m[key] = t
		go t.run(ns, tp)
	}
	t.users++
	profileThreads.mu.Unlock()
	<-t.ready
	if t.err != nil {
		t.release()
		return nil, t.err
	}
	return t, nil
}

// release ends one use; the last arms the idle end.
func (t *profileThread) release() {
	profileThreads.mu.Lock()
	defer profileThreads.mu.Unlock()
	t.users--
	if t.users > 0 || t.ended {
		return
	}
	if t.retired {
		t.endLocked()
		return
	}
	t.lastFree = time.Now()
	time.AfterFunc(profileThreadIdle, t.endIfIdle)
}

func (t *profileThread) endIfIdle() {
	profileThreads.mu.Lock()
	defer profileThreads.mu.Unlock()
	if t.ended || t.users > 0 || time.Since(t.lastFree) < profileThreadIdle {
		return // in use, or a later release armed its own end
	}
	t.endLocked()
}

func (t *profileThread) endLocked() {
	if t.ended {
		return
	}
	t.ended = true
	if profileThreads.m[t.key] == t {
		delete(profileThreads.m, t.key)
	}
	close(t.quit)
}

// forkOnProfileThread runs fn, a fork, on a thread of profile tp in ns,
// and returns that thread, acquired: the caller releases it once the
// process it started has ended, or at once when fn failed before one did.
//
// A thread runs one fork at a time, and ForkExec holds the thread until
// the child has exec'd: a child held before its exec (in a frozen cgroup,
// on a hung filesystem) would hold every later start of the profile,
// whichever group it is for. So, as the fork gate does for the other
// forks (forkGatePatience), a start that waited that long for the thread
// retires it, leaving it to the held fork, and forks on a new one.
func forkOnProfileThread(ns Namespaces, tp threadProfile, fn func(*profileThread) error) (*profileThread, error) {
	for {
		t, err := acquireProfileThread(ns, tp)
		if err != nil {
			return nil, err
		}
		ran, err := t.tryDo(func() error { return fn(t) }, forkGatePatience)
		if ran {
			return t, err
		}
		profileThreads.mu.Lock()
		t.retired = true
		if profileThreads.m[t.key] == t {
			delete(profileThreads.m, t.key)
		}
		profileThreads.mu.Unlock()
		t.release()
	}
}

// tryDo runs fn on the thread, unless the thread takes no job within
// patience: then ran is false and fn did not run.
func (t *profileThread) tryDo(fn func() error, patience time.Duration) (ran bool, err error) {
	errc := make(chan error, 1)
	job := func() { errc <- fn() }
	select { // the thread waiting for a job: no timer on the spawn path
	case t.jobs <- job:
		return true, <-errc
	case <-t.done:
		return true, errProfileThreadEnded
	default:
	}
	timer := time.NewTimer(patience)
	defer timer.Stop()
	select {
	case t.jobs <- job:
		return true, <-errc
	case <-t.done:
		return true, errProfileThreadEnded
	case <-timer.C:
		return false, nil
	}
}

func (t *profileThread) run(ns Namespaces, tp threadProfile) {
	defer close(t.done)
	runtime.LockOSThread() // never unlocked, except on the main thread
	if unix.Gettid() == unix.Getpid() {
		// The main thread must never be tainted (the runtime cannot end
		// it): keep it busy while a new goroutine, on another thread,
		// takes over; as sandbox's namespace thread does.
		locked := make(chan struct{})
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			runtime.LockOSThread() // never unlocked
			close(locked)
			t.serve(ns, tp)
		}()
		<-locked
		runtime.UnlockOSThread()
		<-finished
		return
	}
	t.serve(ns, tp)
}

func (t *profileThread) serve(ns Namespaces, tp threadProfile) {
	t.err = applyThreadProfile(ns, tp)
	var gone <-chan struct{}
	if ns != nil {
		gone = ns.Gone()
	}
	if t.err != nil {
		profileThreads.mu.Lock()
		t.endLocked()
		profileThreads.mu.Unlock()
		close(t.ready)
		return
	}
	close(t.ready)
	for {
		select {
		case j := <-t.jobs:
			j()
		case <-t.quit:
			return
		case <-gone:
			profileThreads.mu.Lock()
			t.endLocked()
			profileThreads.mu.Unlock()
			return
		}
	}
}

// applyThreadProfile applies tp to the calling thread, in runc's order,
// naming the setting that failed.
func applyThreadProfile(ns Namespaces, tp threadProfile) error {
	if unix.Gettid() == unix.Getpid() {
		return &SecurityError{Setting: "thread", Err: errors.New("refusing to taint podsup's main thread")}
	}
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return &SecurityError{Setting: "umask", Err: fmt.Errorf("unsharing the spawning thread's fs attributes: %w", err)}
	}
	if ns != nil {
		if err := ns.Enter(); err != nil {
			return &SecurityError{Setting: "namespaces", Err: err}
		}
	}
	if tp.umask != nil {
		unix.Umask(int(*tp.umask))
	}
	if tp.caps != nil {
		if err := limitCapabilities(*tp.caps); err != nil {
			return &SecurityError{Setting: "capabilities", Err: err}
		}
	}
	if tp.nnp {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return &SecurityError{Setting: "no_new_privileges", Err: err}
		}
	}
	if tp.seccomp != nil {
		if err := installSeccomp(tp.seccomp); err != nil {
			return &SecurityError{Setting: "seccomp", Err: fmt.Errorf("installing %s: %w", tp.seccomp.Name, err)}
		}
	}
	return nil
}

// limitCapabilities makes set the calling thread's bounding and
// inheritable sets, leaving its permitted and effective sets as they are.
func limitCapabilities(set CapSet) error {
	for c := 0; c <= lastCap(); c++ {
		if set.Has(c) {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading the thread's capabilities: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = uint32(set), uint32(set>>32)
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("setting the inheritable set to %#x (podsup itself may lack one of them): %w", uint64(set), err)
	}
	return nil
}

var lastCap = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 && n < 64 {
			return n
		}
	}
	return unix.CAP_LAST_CAP
})

// installSeccomp installs f on the calling thread only (no TSYNC). It
// needs no_new_privs or CAP_SYS_ADMIN in the thread's effective set, which
// a root podsup's profile thread keeps.
func installSeccomp(f *SeccompFilter) error {
	prog := unix.SockFprog{Len: uint16(len(f.Program)), Filter: (*unix.SockFilter)(unsafe.Pointer(&f.Program[0]))}
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(f)
	if errno != 0 {
		return errno
	}
	return nil
}

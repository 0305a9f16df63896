package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Placement puts a child into a Process cgroup at the moment it is forked,
// so not one instruction of it runs outside (where it could fork a child
// that escapes, or allocate memory beyond the limit).
//
// How, per host:
//
//   - cgroup2 mounted (pure v2 and hybrid): CgroupFD is an open fd of the
//     v2 directory. Set syscall.SysProcAttr{UseCgroupFD: true, CgroupFD:
//     pl.CgroupFD()}; clone3(CLONE_INTO_CGROUP) creates the child there.
//   - v1 controllers in use (hybrid and pure v1): v1 has no such flag, but a
//     child inherits the cgroups of the thread that forks it. Fork moves the
//     calling OS thread (its TID, into each v1 "tasks" file of the target),
//     runs the fork, and moves the thread back to podsup's own cgroups.
//
// On a hybrid host both apply: call Fork and set CgroupFD.
//
// The caller's duties:
//
//   - Open the Placement in podsup's own mount namespace. A sandbox's
//     namespace thread that has setns'd into another mount namespace cannot
//     resolve /sys/fs/cgroup paths; the files are opened here, before, and
//     Fork only writes to open files.
//   - Fork the child inside fn, on the goroutine that called Fork, with no
//     goroutine switch in between: syscall.ForkExec forks from the calling
//     thread, which is what Fork moved. Fork calls runtime.LockOSThread
//     itself (nesting with a lock the caller already holds), so the
//     goroutine cannot migrate while the thread is inside.
//   - Close the Placement afterwards (the fd must stay open until the fork
//     returned).
//
// If the thread cannot be moved back, Fork returns ErrThreadStranded and
// keeps the thread locked so that the Go runtime destroys it when the
// goroutine exits; the goroutine should exit soon.
//
// Fork has the shape of package proc's Forker interface.
type Placement struct {
	m     *Manager
	rel   string     // the target's cgroup, relative to the root
	dir   int        // the v2 directory's fd, -1 without v2
	enter []*os.File // tasks files of the target's v1 cgroups
	leave []*os.File // tasks files of podsup's own v1 cgroups, same order
}

// OpenPlacement opens what a fork into p needs. Close it after the fork.
func (p *Process) OpenPlacement() (*Placement, error) {
	pl := &Placement{m: p.m, rel: p.rel, dir: -1}
	for _, h := range p.hiers() {
		if h.Version == 2 {
			// A plain fd, not an *os.File: os.Open would offer the
			// directory to the runtime's poller (four more system calls
			// on every restart, for nothing).
			fd, err := openFile(p.dir(h), unix.O_RDONLY|unix.O_DIRECTORY)
			if err != nil {
				pl.Close()
				return nil, fmt.Errorf("opening cgroup %s for placement: %w", p.dir(h), err)
			}
			pl.dir = fd
			continue
		}
		enter, err := os.OpenFile(filepath.Join(p.dir(h), "tasks"), os.O_WRONLY, 0)
		if err != nil {
			pl.Close()
			return nil, fmt.Errorf("opening cgroup %s for placement: %w", p.dir(h), err)
		}
		leave, err := os.OpenFile(filepath.Join(h.own, "tasks"), os.O_WRONLY, 0)
		if err != nil {
			enter.Close()
			pl.Close()
			return nil, fmt.Errorf("opening podsup's own cgroup %s: %w", h.own, err)
		}
		pl.enter = append(pl.enter, enter)
		pl.leave = append(pl.leave, leave)
	}
	return pl, nil
}

// CgroupFD is the fd for SysProcAttr.CgroupFD, or -1 when there is no v2
// hierarchy (then leave UseCgroupFD false).
func (pl *Placement) CgroupFD() int { return pl.dir }

// Fork runs fn, which must fork the child on the calling goroutine, with
// the calling OS thread inside the target's v1 cgroups. Without v1
// cgroups in use it just calls fn. See Placement for the rules.
func (pl *Placement) Fork(fn func() error) error {
	if len(pl.enter) == 0 {
		return fn()
	}
	// Shared: forks run in parallel; only a freeze of the same group
	// (which must not catch this thread) excludes them.
	unlock := pl.m.lockForFork(pl.rel)
	defer unlock()
	runtime.LockOSThread()
	tid := []byte(strconv.Itoa(unix.Gettid()))
	for i, f := range pl.enter {
		if _, err := f.WriteAt(tid, 0); err != nil {
			err = fmt.Errorf("moving spawning thread into %s: %w", f.Name(), err)
			if lerr := pl.moveBack(i, tid); lerr != nil {
				return errors.Join(err, lerr)
			}
			runtime.UnlockOSThread()
			return err
		}
	}
	ferr := fn()
	if err := pl.moveBack(len(pl.enter), tid); err != nil {
		return errors.Join(ferr, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// moveBack returns the thread from the first n entered cgroups.
func (pl *Placement) moveBack(n int, tid []byte) error {
	var errs []error
	for _, f := range pl.leave[:n] {
		if _, err := f.WriteAt(tid, 0); err != nil {
			errs = append(errs, fmt.Errorf("%w: moving it back to %s: %w", ErrThreadStranded, f.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// MovesThread reports whether Fork moves the calling thread (into v1
// cgroups): the fork must then run on the thread that called Fork.
func (pl *Placement) MovesThread() bool { return len(pl.enter) > 0 }

// ThreadFiles are the open v1 "tasks" files Fork writes a thread's id
// to: the target's, and podsup's own in the same order. A process that
// forks for podsup in another mount namespace (a sandbox holder in a user
// namespace) is handed them to place its own forking thread; the kernel
// checks a write against the credentials of whoever opened the file.
func (pl *Placement) ThreadFiles() (enter, leave []*os.File) { return pl.enter, pl.leave }

// OpenProcs opens the target's cgroup2 "cgroup.procs" for writing (nil
// without v2), for a process that forks for podsup where clone3 cannot
// place the child: a holder forking with CLONE_PARENT, which clone3
// refuses with an exit signal, and Go's clone3 always sets one. It moves
// itself in (writing "0"), forks, and moves back; the kernel checks the
// rights of whoever opened the file, podsup.
func (pl *Placement) OpenProcs() (*os.File, error) {
	if pl.dir < 0 {
		return nil, nil
	}
	fd, err := unix.Openat(pl.dir, "cgroup.procs", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening cgroup.procs of %s: %w", pl.rel, err)
	}
	return os.NewFile(uintptr(fd), pl.rel+"/cgroup.procs"), nil
}

// Close releases the files.
func (pl *Placement) Close() error {
	var errs []error
	if pl.dir >= 0 {
		errs = append(errs, unix.Close(pl.dir)) // a directory: nothing to flush
		pl.dir = -1
	}
	for _, f := range append(pl.enter, pl.leave...) {
		errs = append(errs, f.Close())
	}
	pl.enter, pl.leave = nil, nil
	return errors.Join(errs...)
}

// Place opens a Placement, runs fork with the cgroup fd (-1 without v2;
// see Placement) and closes it: for callers in podsup's own mount
// namespace.
func (p *Process) Place(fork func(cgroupFD int) error) error {
	pl, err := p.OpenPlacement()
	if err != nil {
		return err
	}
	ferr := pl.Fork(func() error { return fork(pl.CgroupFD()) })
	return errors.Join(ferr, pl.Close())
}

// groupLock is the placement lock of the group that cgroup rel belongs to
// (its first path element).
func (m *Manager) groupLock(rel string) *sync.RWMutex {
	top, _, _ := strings.Cut(rel, "/")
	m.groupMu.Lock()
	defer m.groupMu.Unlock()
	if m.groupPlace == nil {
		m.groupPlace = map[string]*sync.RWMutex{}
	}
	l := m.groupPlace[top]
	if l == nil {
		l = &sync.RWMutex{}
		m.groupPlace[top] = l
	}
	return l
}

// lockForFork is held while a thread sits in rel's v1 cgroups.
func (m *Manager) lockForFork(rel string) (unlock func()) {
	m.placeMu.RLock()
	g := m.groupLock(rel)
	g.RLock()
	return func() { g.RUnlock(); m.placeMu.RUnlock() }
}

// lockForFreeze is held while rel's tree is frozen: no fork into it may
// be in progress, forks into other groups go on.
func (m *Manager) lockForFreeze(rel string) (unlock func()) {
	if rel == "" {
		m.placeMu.Lock()
		return m.placeMu.Unlock
	}
	m.placeMu.RLock()
	g := m.groupLock(rel)
	g.Lock()
	return func() { g.Unlock(); m.placeMu.RUnlock() }
}

// Package epollwait owns podsup's waits on epoll sets of its own: it parks
// the waiting goroutine in the Go runtime's poller instead of blocking a
// thread in epoll_wait. An epoll fd is itself pollable (readable while it
// has events), so the runtime's poller can watch it like a socket.
//
// Why it matters: a goroutine blocked in a system call keeps its P until
// the runtime's monitor (sysmon) takes it back, and sysmon checks for such
// Ps every 20 µs for as long as it finds some. The output capture loop,
// blocking in epoll_wait between every two restarts, kept it doing so: a
// large share of podsup's CPU under a stream of restarts (docs/benchmarks.md,
// "S1: the Go runtime's own wake-ups").
package epollwait

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Set is an epoll instance that one goroutine waits on.
type Set struct {
	fd   int
	file *os.File        // owns fd once it is non-blocking (its finalizer would close it)
	conn syscall.RawConn // fd in the runtime's poller; nil: Wait blocks in epoll_wait
}

// New creates a close-on-exec epoll instance and hands it to the runtime's
// poller. Should that fail, Wait blocks in epoll_wait, which works all
// the same.
func New() (*Set, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	s := &Set{fd: fd}
	if unix.SetNonblock(fd, true) == nil {
		s.file = os.NewFile(uintptr(fd), "epoll")
		if rc, err := s.file.SyscallConn(); err == nil {
			s.conn = rc
		}
	}
	return s, nil
}

// FD is the epoll fd, for epoll_ctl. It stays valid until Close.
func (s *Set) FD() int { return s.fd }

// Add watches fd for events, reported with fd as their key.
func (s *Set) Add(fd int, events uint32) error {
	return unix.EpollCtl(s.fd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: events, Fd: int32(fd)})
}

// Delete stops watching fd. Closing fd does as much, unless it was
// duplicated.
func (s *Set) Delete(fd int) error { return unix.EpollCtl(s.fd, unix.EPOLL_CTL_DEL, fd, nil) }

// Wait fills events with what is ready, waiting until something is. Only
// one goroutine may call it at a time.
func (s *Set) Wait(events []unix.EpollEvent) (n int, err error) {
	if s.conn != nil {
		rerr := s.conn.Read(func(fd uintptr) bool {
			n, err = unix.EpollWait(int(fd), events, 0)
			return n != 0 || err != nil // false: nothing yet, park until fd is readable
		})
		if rerr == nil {
			return n, err
		}
		s.conn = nil // the poller refused it: block from now on
	}
	return unix.EpollWait(s.fd, events, -1)
}

// Parked reports whether Wait parks in the runtime's poller (rather than
// blocking a thread).
func (s *Set) Parked() bool { return s.conn != nil }

// Close closes the epoll fd. No Wait may be running.
func (s *Set) Close() error {
	if s.file != nil {
		return s.file.Close()
	}
	return unix.Close(s.fd)
}

package notify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/internal/epollwait"
	"github.com/podsup/podsup/spec"
)

// Sink receives what processes report. *supervisor.Supervisor is one.
// Calls come from the Server's goroutine and from watchdog timers; they
// must not block for long.
type Sink interface {
	ProbeResult(group, instanceID string, kind spec.ProbeKind, success bool, message string) error
	ReportStatus(group, instanceID, text string) error
}

// Options configure a Server.
type Options struct {
	// Dir is the runtime directory in which the Server makes a directory
	// of its own for notify sockets (e.g. the control socket's, /run/podsup).
	Dir string
	// Clock times the watchdogs.
	Clock  clock.Clock
	Logger zerolog.Logger
}

// ErrClosed is returned by Attach after the Server stopped.
var ErrClosed = errors.New("notify server is closed")

// Server receives readiness messages from every attached instance on one
// goroutine (Run), which waits for its epoll set parked in the runtime's
// poller (internal/epollwait).
type Server struct {
	dir    string
	lockfd int // dir, flocked while this Server lives: see removeStale
	clock  clock.Clock
	log    zerolog.Logger
	ep     *epollwait.Set
	wakefd int

	mu      sync.Mutex // guards everything below
	sink    Sink
	eps     map[int32]*endpoint // by fd; only Run's goroutine closes fds
	retired []*endpoint         // detached, to be closed by Run's goroutine
	seq     uint64
	closed  bool
}

// NewServer makes the Server's socket directory under opts.Dir and its
// epoll set. Call SetSink before the first Attach, then Run.
func NewServer(opts Options) (*Server, error) {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("unable to create the runtime directory: %w", err)
	}
	removeStale(opts.Dir, opts.Logger)
	var (
		dir    string
		lockfd int
		err    error
	)
	// Until it is flocked, a new directory looks like a dead podsup's to
	// another podsup's removeStale, which may lock or remove it first
	// (EWOULDBLOCK, ENOENT): then make another.
	for try := 0; ; try++ {
		if dir, err = os.MkdirTemp(opts.Dir, dirPrefix); err != nil {
			return nil, fmt.Errorf("unable to create the notify socket directory: %w", err)
		}
		// Held, flocked, until the Server stops or podsup dies: a later
		// podsup tells a live directory from a dead one's by this lock.
		lockfd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			if err = unix.Flock(lockfd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
				_ = unix.Close(lockfd)
			}
		}
		if err == nil {
			break
		}
		_ = os.Remove(dir)
		if (err != unix.EWOULDBLOCK && err != unix.ENOENT) || try == 4 {
			return nil, fmt.Errorf("unable to lock the notify socket directory: %w", err)
		}
	}
	fail := func(err error) (*Server, error) {
		_ = unix.Close(lockfd)
		_ = os.Remove(dir)
		return nil, err
	}
	// Traversable by every user, listable by none: a process running as
	// another user reaches its own socket (owned by it) and no other.
	if err := unix.Fchmod(lockfd, 0o711); err != nil {
		return fail(fmt.Errorf("unable to set up the notify socket directory: %w", err))
	}
	ep, err := epollwait.New()
	if err != nil {
		return fail(fmt.Errorf("unable to create an epoll set: %w", err))
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = ep.Close()
		return fail(fmt.Errorf("unable to create an eventfd: %w", err))
	}
	if err := ep.Add(wakefd, unix.EPOLLIN); err != nil {
		_ = unix.Close(wakefd)
		_ = ep.Close()
		return fail(fmt.Errorf("unable to watch the eventfd: %w", err))
	}
	return &Server{dir: dir, lockfd: lockfd, clock: clock.Or(opts.Clock), log: opts.Logger,
		ep: ep, wakefd: wakefd, eps: map[int32]*endpoint{}}, nil
}

// Dir is the directory holding the notify sockets; a sandbox with its own
// mount namespace must make it reachable at the same path.
func (s *Server) Dir() string { return s.dir }

// SetSink sets where results go.
func (s *Server) SetSink(sink Sink) {
	s.mu.Lock()
	s.sink = sink
	s.mu.Unlock()
}

func (s *Server) getSink() Sink {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sink
}

// Run serves until ctx ends, then closes every socket and pipe, removes
// the socket directory and returns.
func (s *Server) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, s.wake)
	defer stop()
	defer s.shutdown()
	events := make([]unix.EpollEvent, 64)
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(253*4)) // SCM_MAX_FD fds
	for {
		n, err := s.ep.Wait(events)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("unable to wait for notify messages: %w", err)
		}
		for _, ev := range events[:n] {
			if ev.Fd == int32(s.wakefd) {
				var b [8]byte
				_, _ = unix.Read(s.wakefd, b[:]) // EAGAIN when already drained
				continue
			}
			s.mu.Lock()
			ep := s.eps[ev.Fd]
			s.mu.Unlock()
			if ep != nil {
				ep.serve(ev.Events, buf, oob)
			}
		}
		s.closeRetired()
		if ctx.Err() != nil {
			return nil
		}
	}
}

// wake interrupts epoll_wait.
func (s *Server) wake() {
	one := [8]byte{1}
	_, _ = unix.Write(s.wakefd, one[:]) // EAGAIN only when a wake-up is already pending
}

// register adds ep to the epoll set.
func (s *Server) register(ep *endpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if err := s.ep.Add(ep.fd, unix.EPOLLIN); err != nil {
		return fmt.Errorf("unable to watch a notify fd: %w", err)
	}
	s.eps[int32(ep.fd)] = ep
	return nil
}

// retire queues ep to be closed by Run's goroutine. It never blocks: it
// is called from the reaper's exit callback.
func (s *Server) retire(ep *endpoint) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ep.close()
		return
	}
	s.retired = append(s.retired, ep)
	s.mu.Unlock()
	s.wake()
}

func (s *Server) closeRetired() {
	s.mu.Lock()
	eps := s.retired
	s.retired = nil
	for _, ep := range eps {
		if s.eps[int32(ep.fd)] == ep {
			delete(s.eps, int32(ep.fd))
			_ = s.ep.Delete(ep.fd) // closing removes it anyway
		}
	}
	s.mu.Unlock()
	for _, ep := range eps {
		ep.close()
	}
}

func (s *Server) shutdown() {
	s.mu.Lock()
	s.closed = true
	eps := s.retired
	for _, ep := range s.eps {
		eps = append(eps, ep)
	}
	s.eps, s.retired = map[int32]*endpoint{}, nil
	s.mu.Unlock()
	for _, ep := range eps {
		ep.close()
	}
	_ = unix.Close(s.wakefd)
	_ = s.ep.Close()
	_ = os.RemoveAll(s.dir)
	_ = unix.Close(s.lockfd) // after the removal: no later podsup takes it for a dead one's
}

// socketPath is the next notify socket's path.
func (s *Server) socketPath() (string, error) {
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	path := filepath.Join(s.dir, fmt.Sprintf("%d.sock", n))
	if len(path) >= len(unix.RawSockaddrUnix{}.Path) {
		return "", fmt.Errorf("notify socket path %q is longer than a unix socket path may be (%d bytes): choose a shorter runtime directory", path, len(unix.RawSockaddrUnix{}.Path)-1)
	}
	return path, nil
}

// watchdogTimeout is the message of a watchdog miss.
func watchdogTimeout(d time.Duration) string {
	return fmt.Sprintf("watchdog timeout: no WATCHDOG=1 within %s", d)
}

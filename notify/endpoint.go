package notify

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/spec"
)

// Instance names the instance an Attachment belongs to.
type Instance struct {
	Group      string
	InstanceID string
	Process    spec.Process
}

// Attachment is one instance's readiness channel.
type Attachment struct {
	// Env is what the process's environment needs: NOTIFY_SOCKET (and
	// WATCHDOG_USEC) for "notify"; nothing for "fd:N".
	Env map[string]string
	// ChildFile, for "fd:N", is the pipe's write end, to become fd ChildFD
	// of the process. Call Started after the start to close podsup's copy.
	ChildFile *os.File
	ChildFD   int

	ep        *endpoint
	childOnce sync.Once // closes ChildFile: the start and the exit may race
}

// Started closes podsup's copy of the process's end, so the pipe reports
// EOF when the process (and everything it forked) closed theirs. Call it
// after the start, whether it succeeded or not.
func (a *Attachment) Started() {
	a.childOnce.Do(func() {
		if a.ChildFile != nil {
			_ = a.ChildFile.Close()
		}
	})
}

// Detach stops listening for the instance and removes its socket. It
// never blocks; call it from the instance's exit callback (or after a
// failed start). A second call does nothing.
func (a *Attachment) Detach() {
	a.Started()
	a.ep.detach()
}

type endpointKind int

const (
	notifySocket endpointKind = iota + 1
	readinessPipe
)

// endpoint is one instance's socket or pipe, served by Run's goroutine.
type endpoint struct {
	srv     *Server
	kind    endpointKind
	fd      int
	path    string // the socket's, removed on close
	group   string
	id      string
	process string
	// setsStarted: READY=1 (or the newline) is the instance's startup,
	// as it has no startup probe.
	setsStarted bool

	mu       sync.Mutex // guards the fields below (watchdog timers run apart)
	detached bool
	closed   bool
	wdEvery  time.Duration
	wdTimer  clock.Timer
	wdFired  bool
}

// Attach prepares inst's readiness channel: a notify socket for
// readiness = "notify", a pipe for "fd:N". For a notify process with a
// watchdog the watchdog starts now, with the process.
func (s *Server) Attach(inst Instance) (*Attachment, error) {
	p := inst.Process
	ep := &endpoint{srv: s, group: inst.Group, id: inst.InstanceID, process: p.Name,
		setsStarted: p.StartupProbe == nil}
	a := &Attachment{ep: ep}
	switch {
	case p.Readiness == "notify":
		path, err := s.socketPath()
		if err != nil {
			return nil, err
		}
		fd, err := listenNotify(path, p.User, p.Group)
		if err != nil {
			return nil, err
		}
		ep.kind, ep.fd, ep.path = notifySocket, fd, path
		a.Env = map[string]string{"NOTIFY_SOCKET": path}
		if p.Watchdog > 0 {
			a.Env["WATCHDOG_USEC"] = strconv.FormatInt(p.Watchdog.Microseconds(), 10)
			ep.wdEvery = p.Watchdog
		}
	case strings.HasPrefix(p.Readiness, "fd:"):
		n, err := strconv.Atoi(strings.TrimPrefix(p.Readiness, "fd:"))
		if err != nil || n < 3 {
			return nil, fmt.Errorf("readiness %q: not an fd of 3 or more", p.Readiness)
		}
		var fds [2]int
		if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
			return nil, fmt.Errorf("unable to create a readiness pipe: %w", err)
		}
		if err := unix.SetNonblock(fds[0], true); err != nil {
			_ = unix.Close(fds[0])
			_ = unix.Close(fds[1])
			return nil, fmt.Errorf("unable to set up a readiness pipe: %w", err)
		}
		ep.kind, ep.fd = readinessPipe, fds[0]
		a.ChildFile = os.NewFile(uintptr(fds[1]), "readiness")
		a.ChildFD = n
	default:
		return nil, fmt.Errorf("readiness %q is not a protocol podsup speaks", p.Readiness)
	}
	if err := s.register(ep); err != nil {
		ep.close()
		a.Started()
		return nil, err
	}
	ep.armWatchdog()
	return a, nil
}

// listenNotify binds a datagram socket at path, owned by the process's
// user (and group) when it runs as another one, mode 0600.
func listenNotify(path, userName, groupName string) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("unable to create a notify socket: %w", err)
	}
	_ = os.Remove(path) // a stale socket from an earlier podsup; bind tells other errors
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("unable to bind the notify socket %s: %w", path, err)
	}
	uid, gid, err := owner(userName, groupName)
	if err == nil {
		err = os.Chmod(path, 0o600)
	}
	if err == nil && (uid >= 0 || gid >= 0) {
		err = os.Lchown(path, uid, gid)
	}
	if err != nil {
		_ = unix.Close(fd)
		_ = os.Remove(path)
		return -1, fmt.Errorf("unable to hand the notify socket %s to the process's user: %w", path, err)
	}
	return fd, nil
}

// owner resolves the process's user and group (names or numbers) to ids;
// -1 leaves that id alone.
func owner(userName, groupName string) (int, int, error) {
	uid, gid := -1, -1
	if userName != "" {
		if n, err := strconv.Atoi(userName); err == nil {
			uid = n
		} else {
			u, err := user.Lookup(userName)
			if err != nil {
				return -1, -1, err
			}
			uid, _ = strconv.Atoi(u.Uid)
		}
	}
	if groupName != "" {
		if n, err := strconv.Atoi(groupName); err == nil {
			gid = n
		} else {
			g, err := user.LookupGroup(groupName)
			if err != nil {
				return -1, -1, err
			}
			gid, _ = strconv.Atoi(g.Gid)
		}
	}
	return uid, gid, nil
}

// serve reads what is waiting on the endpoint; it runs on Run's goroutine.
func (ep *endpoint) serve(events uint32, buf, oob []byte) {
	switch ep.kind {
	case notifySocket:
		ep.serveSocket(buf, oob)
	case readinessPipe:
		ep.servePipe(buf)
	}
}

func (ep *endpoint) serveSocket(buf, oob []byte) {
	for {
		n, oobn, flags, _, err := unix.Recvmsg(ep.fd, buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return // EAGAIN: drained
		}
		// Close every fd the message carries before anything else: it
		// answers BARRIER=1, and podsup keeps no fd store.
		nfds := closePassedFds(oob[:oobn])
		if flags&unix.MSG_TRUNC != 0 {
			ep.srv.log.Warn().Str("group", ep.group).Str("process", ep.process).Msg("notify message too long, ignored")
			continue
		}
		ep.handle(string(buf[:n]), nfds)
	}
}

// closePassedFds closes the fds of every SCM_RIGHTS message in oob.
func closePassedFds(oob []byte) int {
	if len(oob) == 0 {
		return 0
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	n := 0
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			_ = unix.Close(fd)
			n++
		}
	}
	return n
}

// servePipe is s6's protocol: a newline anywhere means ready; then, or at
// EOF, podsup closes its end.
func (ep *endpoint) servePipe(buf []byte) {
	for {
		n, err := unix.Read(ep.fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return // EAGAIN
		}
		if n == 0 {
			ep.srv.log.Debug().Str("group", ep.group).Str("process", ep.process).Msg("readiness fd closed without a newline")
			ep.srv.retire(ep)
			return
		}
		if strings.IndexByte(string(buf[:n]), '\n') >= 0 {
			ep.ready("newline on the readiness fd")
			ep.srv.retire(ep)
			return
		}
	}
}

// handle applies one sd_notify datagram: newline-separated KEY=VALUE.
func (ep *endpoint) handle(msg string, nfds int) {
	log := ep.srv.log.With().Str("group", ep.group).Str("process", ep.process).Str("instance", ep.id).Logger()
	for _, line := range strings.Split(msg, "\n") {
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch key {
		case "READY":
			if value == "1" {
				ep.ready("READY=1")
			}
		case "STATUS":
			ep.status(value)
		case "STOPPING", "RELOADING":
			if value == "1" {
				ep.result(spec.Readiness, false, line)
			}
		case "MAINPID":
			// The supervisor keeps following the process it started; the
			// announced pid is only recorded.
			log.Info().Str("mainpid", value).Msg("process announced a main pid (MAINPID=); podsup keeps supervising the process it started")
		case "WATCHDOG":
			switch value {
			case "1":
				ep.armWatchdog()
			case "trigger":
				ep.fireWatchdog("watchdog triggered by the process (WATCHDOG=trigger)")
			}
		case "WATCHDOG_USEC":
			if us, err := strconv.ParseInt(value, 10, 64); err == nil && us > 0 {
				ep.mu.Lock()
				ep.wdEvery = time.Duration(us) * time.Microsecond
				ep.mu.Unlock()
				ep.armWatchdog()
			}
		case "BARRIER":
			if nfds == 0 {
				log.Debug().Msg("BARRIER=1 without an fd")
			}
		case "FDSTORE":
			log.Debug().Msg("FDSTORE=1: podsup keeps no fd store; the fds were closed")
		}
	}
}

// ready is READY=1 or the s6 newline: started first when it has no
// startup probe, then ready.
func (ep *endpoint) ready(why string) {
	if ep.setsStarted {
		ep.result(spec.Startup, true, why)
	}
	ep.result(spec.Readiness, true, why)
}

func (ep *endpoint) result(kind spec.ProbeKind, success bool, msg string) {
	sink := ep.srv.getSink()
	if sink == nil {
		return
	}
	if err := sink.ProbeResult(ep.group, ep.id, kind, success, msg); err != nil {
		ep.srv.log.Debug().Err(err).Str("group", ep.group).Str("process", ep.process).Msg("readiness message not delivered")
	}
}

func (ep *endpoint) status(text string) {
	sink := ep.srv.getSink()
	if sink == nil {
		return
	}
	if err := sink.ReportStatus(ep.group, ep.id, text); err != nil {
		ep.srv.log.Debug().Err(err).Str("group", ep.group).Str("process", ep.process).Msg("status line not delivered")
	}
}

// armWatchdog (re)starts the watchdog timer; no-op without a watchdog,
// after a miss, or once detached.
func (ep *endpoint) armWatchdog() {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.wdEvery <= 0 || ep.wdFired || ep.detached {
		return
	}
	every := ep.wdEvery
	if ep.wdTimer != nil {
		ep.wdTimer.Stop()
	}
	ep.wdTimer = ep.srv.clock.AfterFunc(every, func() { ep.fireWatchdog(watchdogTimeout(every)) })
}

// fireWatchdog reports a watchdog miss once, as a failed liveness probe.
func (ep *endpoint) fireWatchdog(msg string) {
	ep.mu.Lock()
	if ep.wdFired || ep.detached {
		ep.mu.Unlock()
		return
	}
	ep.wdFired = true
	if ep.wdTimer != nil {
		ep.wdTimer.Stop()
	}
	ep.mu.Unlock()
	ep.result(spec.Liveness, false, msg)
}

func (ep *endpoint) detach() {
	ep.mu.Lock()
	if ep.detached {
		ep.mu.Unlock()
		return
	}
	ep.detached = true
	if ep.wdTimer != nil {
		ep.wdTimer.Stop()
	}
	ep.mu.Unlock()
	ep.srv.retire(ep)
}

// close releases the fd and the socket file; only Run's goroutine (or the
// shutdown) calls it, after the fd left the epoll set.
func (ep *endpoint) close() {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.closed {
		return
	}
	ep.closed = true
	if ep.wdTimer != nil {
		ep.wdTimer.Stop()
	}
	_ = unix.Close(ep.fd)
	if ep.path != "" {
		_ = os.Remove(ep.path)
	}
}

package notify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Runtime is a supervisor.Runtime that gives each instance the readiness
// channel and the socket-activation fds its spec asks for, then starts it
// with Next. Processes that ask for neither go straight to Next. Everything
// else of supervisor.Runtime it passes on to Next, adding its own
// capabilities to Next's.
type Runtime struct {
	// Next starts the process; nil means hostrt.Runtime (plain host
	// processes).
	Next supervisor.Runtime
	// Server serves readiness = "notify" and "fd:N". Without one the
	// runtime does not report ReadinessProtocols, so the supervisor refuses
	// a configuration with such processes (and a start of one fails).
	Server *Server
	// Sockets are the fds systemd passed to podsup, by name
	// (systemd.ActivationFiles). They stay open for podsup's life. When
	// not nil (empty: none passed), Capabilities lists them, and the
	// supervisor refuses a configuration naming another; nil leaves that
	// to each start.
	Sockets map[string][]*os.File
	// Self is the program that runs the __listenpid shim; "" means
	// /proc/self/exe, resolved in the child, which is podsup.
	Self string
}

var _ supervisor.Runtime = (*Runtime)(nil)

// Errors of a start this package refuses.
var (
	ErrNoServer      = errors.New("no notify server to receive readiness messages")
	ErrUnknownSocket = errors.New("no socket of that name was passed to podsup (LISTEN_FDNAMES)")
	ErrFdConflict    = errors.New("the readiness fd collides with a socket-activation fd")
)

// Start prepares req's readiness channel and sockets and starts it.
func (r *Runtime) Start(ctx context.Context, req supervisor.StartRequest) (supervisor.Instance, error) {
	next := r.next()
	p := req.Process
	if p.Readiness == "" && len(p.Sockets) == 0 {
		return next.Start(ctx, req)
	}
	if len(req.ExtraFiles) > 0 {
		return nil, startError(errors.New("extra files were already set for this process"))
	}
	env := maps.Clone(p.Env)
	if env == nil {
		env = map[string]string{}
	}
	var extra []*os.File
	if len(p.Sockets) > 0 {
		files, names, err := r.socketFiles(p.Sockets)
		if err != nil {
			return nil, startError(err)
		}
		extra = files
		env["LISTEN_FDS"] = strconv.Itoa(len(files))
		env["LISTEN_FDNAMES"] = strings.Join(names, ":")
		self := r.Self
		if self == "" {
			self = "/proc/self/exe"
		}
		p.Command = append([]string{self, ListenPIDCommand}, p.Command...)
	}
	var att *Attachment
	if p.Readiness != "" {
		if r.Server == nil {
			return nil, startError(ErrNoServer)
		}
		a, err := r.Server.Attach(Instance{Group: req.Group, InstanceID: req.InstanceID, Process: req.Process})
		if err != nil {
			return nil, startError(err)
		}
		att = a
		for k, v := range a.Env {
			env[k] = v
		}
		if a.ChildFile != nil {
			i := a.ChildFD - 3
			if i < len(extra) {
				a.Detach()
				return nil, startError(fmt.Errorf("readiness fd:%d, sockets at fds 3..%d: %w", a.ChildFD, 2+len(extra), ErrFdConflict))
			}
			for len(extra) < i {
				extra = append(extra, nil) // left closed in the child
			}
			extra = append(extra, a.ChildFile)
		}
	}
	p.Env = env
	req.Process = p
	req.ExtraFiles = extra
	if att != nil {
		onExit := req.OnExit
		req.OnExit = func(st lifecycle.ExitStatus) {
			onExit(st)
			att.Detach()
		}
	}
	inst, err := next.Start(ctx, req)
	if att != nil {
		att.Started()
		if err != nil {
			att.Detach()
		}
	}
	return inst, err
}

// socketFiles collects the named sockets in order.
func (r *Runtime) socketFiles(names []string) ([]*os.File, []string, error) {
	var files []*os.File
	var fdnames []string
	for _, name := range names {
		fs := r.Sockets[name]
		if len(fs) == 0 {
			return nil, nil, fmt.Errorf("socket %q: %w (passed: %s)", name, ErrUnknownSocket, r.passed())
		}
		for _, f := range fs {
			files = append(files, f)
			fdnames = append(fdnames, name)
		}
	}
	return files, fdnames, nil
}

// socketNames are the names of Sockets, sorted, ":"-separated.
func (r *Runtime) socketNames() string {
	return strings.Join(slices.Sorted(maps.Keys(r.Sockets)), ":")
}

func (r *Runtime) passed() string {
	if len(r.Sockets) == 0 {
		return "none: podsup was not socket-activated"
	}
	var names []string
	for n := range r.Sockets {
		names = append(names, strconv.Quote(n))
	}
	return strings.Join(names, ", ")
}

func startError(err error) error {
	return &supervisor.StartError{Code: supervisor.StartErrorExitCode, Err: err}
}

// Spawner passes Next's sandbox spawner on, so exec probes and hooks
// still run inside their group's sandbox (X6).
func (r *Runtime) Spawner(group string) func(*proc.Cmd) (*proc.Process, error) {
	return r.next().Spawner(group)
}

// ReleaseGroup passes the group's release (its sandbox) on to Next.
func (r *Runtime) ReleaseGroup(group string) { r.next().ReleaseGroup(group) }

// ReleaseProcess passes the release of a process a reload removed on to
// Next.
func (r *Runtime) ReleaseProcess(group, process string) {
	r.next().ReleaseProcess(group, process)
}

// Capabilities is Next's with socket activation added, and the readiness
// protocols when there is a Server to receive their messages.
func (r *Runtime) Capabilities() supervisor.Capabilities {
	c := r.next().Capabilities()
	c.SocketActivation = true
	c.ReadinessProtocols = c.ReadinessProtocols || r.Server != nil
	if r.Sockets != nil { // podsup's own: a configuration naming another is refused
		c.ActivationChecked, c.ActivationSockets = true, r.socketNames()
	}
	return c
}

// next is the runtime that starts processes: Next, or hostrt.Runtime.
func (r *Runtime) next() supervisor.Runtime {
	if r.Next == nil {
		return hostrt.Runtime{}
	}
	return r.Next
}

// ProbeHost passes Next's probe host on (supervisor.ProbeHoster).
func (r *Runtime) ProbeHost(group string) string { return supervisor.ProbeHostOf(r.next(), group) }

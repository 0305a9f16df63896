package spec

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// EffectiveRestartPolicy is the process's own policy, else the group's, else
// RestartAlways (D2).
func (g *Group) EffectiveRestartPolicy(p *Process) RestartPolicy {
	if p != nil && p.RestartPolicy != "" {
		return p.RestartPolicy
	}
	if g.RestartPolicy != "" {
		return g.RestartPolicy
	}
	return RestartAlways
}

// Grace is the group's termination grace period (K1.3, D2).
func (g *Group) Grace() time.Duration {
	if g.TerminationGracePeriod != nil {
		return *g.TerminationGracePeriod
	}
	return DefaultTerminationGracePeriod
}

// EffectiveBackoff is the group's back-off, else the config default.
func (g *Group) EffectiveBackoff(def Backoff) Backoff {
	if g.Backoff != nil {
		return *g.Backoff
	}
	return def
}

// EffectiveStopSignal is the process's stop signal, SIGTERM by default (K6).
func (p *Process) EffectiveStopSignal() syscall.Signal {
	if p.StopSignal != 0 {
		return p.StopSignal
	}
	return syscall.SIGTERM
}

// EffectiveMinimumGrace is K5's floor (X12).
func (s *Supervisor) EffectiveMinimumGrace() time.Duration {
	if s.MinimumGrace != nil {
		return *s.MinimumGrace
	}
	return DefaultMinimumGrace
}

// EffectiveSocket is the control socket's path.
func (s *Supervisor) EffectiveSocket() string {
	if s.Socket != "" {
		return s.Socket
	}
	return DefaultSocketPath()
}

// DefaultSocketPath is where podsup listens, and its CLI looks, when no
// socket is configured: DefaultSocket for root; for other users, like
// systemd's user instances, $XDG_RUNTIME_DIR/podsup.sock, or
// /tmp/podsup-UID/podsup.sock without it ($TMPDIR for /tmp). Another user
// can make /tmp/podsup-UID first: podsup up then refuses it, as it refuses
// any socket directory that is a symbolic link, not its user's or root's,
// or writable by others (apiserver.Listen), and the CLI refuses a server
// that runs as neither root nor its user (api.Client).
func DefaultSocketPath() string {
	uid := os.Geteuid()
	if uid == 0 {
		return DefaultSocket
	}
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		return filepath.Join(dir, "podsup.sock")
	}
	return filepath.Join(os.TempDir(), "podsup-"+strconv.Itoa(uid), "podsup.sock")
}

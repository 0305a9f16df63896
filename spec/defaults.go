package spec

import (
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
	return DefaultSocket
}

package core

import (
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Reactions to probes (R4, P5, P6, P11, P12, S3): readiness and startup
// set the instance's conditions, a liveness or startup failure kills it.

// probeResult reacts to a probe result change (R4, P5, P11, P12, S3).
func (g *Group) probeResult(in ProbeInput) {
	if p := g.procByInstance(in.Instance); p != nil {
		g.fire(p, event{on: onProbeResult, probe: in})
	}
}

// probeReact is a running instance's reaction to a probe result: ready
// and started follow readiness and startup; a liveness or startup
// failure kills it with the probe's grace (K1.2).
func (g *Group) probeReact(p *proc, ev event) (phase, []event) {
	in := ev.probe
	var probe *spec.Probe
	reason := lifecycle.KillLiveness
	switch in.Probe {
	case spec.Readiness:
		p.inst.readyVerdict = in.Success
		g.updateReady(p)
		return phaseRunning, nil
	case spec.Startup:
		if in.Success {
			p.inst.started = true
			g.updateReady(p)
			return phaseRunning, nil
		}
		probe, reason = p.spec.StartupProbe, lifecycle.KillStartup
	case spec.Liveness:
		if in.Success {
			return phaseRunning, nil
		}
		probe = p.spec.LivenessProbe
	}
	if !in.Reported {
		g.emit(p, lifecycle.EventWarning, lifecycle.EventUnhealthy, "%s probe failed: %s", probeTitle(in.Probe), in.Message)
	}
	var probeGrace *time.Duration
	if probe != nil {
		probeGrace = probe.TerminationGracePeriod
	}
	// R4: the restart is decided before the kill, by policy != never.
	stop := stopRequest{reason: reason, probeGrace: probeGrace, restart: p.policy != spec.RestartNever}
	return phaseRunning, []event{{on: onStop, stop: stop}}
}

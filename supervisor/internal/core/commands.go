package core

import (
	"github.com/podsup/podsup/supervisor/lifecycle"
	"time"
)

// Requests from users (X7) and from podsup itself (X9): start, stop,
// restart and shutdown of a process or of the whole group.

func (g *Group) command(c CommandInput) {
	var targets []*proc
	if c.Process == "" {
		targets = g.all()
	} else if p, ok := g.byName[c.Process]; ok {
		targets = []*proc{p}
	} else {
		g.emit(nil, lifecycle.EventWarning, lifecycle.EventFailed, "%s request for unknown process %q ignored", c.Kind, c.Process)
		return
	}
	if g.shutdown && c.Kind != CmdShutdown && c.Kind != CmdStop {
		g.emit(nil, lifecycle.EventWarning, lifecycle.EventFailed, "%s request by %s ignored: podsup is shutting down", c.Kind, c.By)
		return
	}
	first := !g.shutdown
	if c.Kind == CmdShutdown {
		if first && c.Ordered {
			g.stopAfter = c.After
			g.dependedOn = g.namesDependedOn()
		}
		g.shutdown = true
	}
	for _, p := range targets {
		if p.init && c.Kind != CmdStop && c.Kind != CmdShutdown && g.initCompleted(p) {
			if c.Process != "" {
				g.emit(p, lifecycle.EventWarning, lifecycle.EventFailed, "%s request by %s ignored: init %s has completed and never runs again (I3)", c.Kind, c.By, p.spec.Name)
			}
			continue
		}
		// O6: a sidecar stopped with its whole group gets its stop signal
		// in its turn, after the main processes.
		inTurn := c.Process == "" && p.sidecar
		switch c.Kind {
		case CmdStop:
			g.stopProc(p, lifecycle.KillStop, c.Grace, c.By, inTurn)
		case CmdShutdown:
			g.shutdownProc(p, c, first, inTurn)
		case CmdStart:
			g.startProc(p, c.By)
		case CmdRestart:
			g.restartProc(p, c.Grace, c.By)
		}
	}
}

func (g *Group) stopProc(p *proc, reason lifecycle.KillReason, grace *time.Duration, by string, inTurn bool) {
	p.want = false
	g.cancelStart(p)
	if p.inst == nil {
		return
	}
	if st := p.inst.stop; st != nil {
		st.restart = false
		if st.reason == lifecycle.KillStop || st.reason == lifecycle.KillShutdown {
			g.fire(p, event{on: onEscalate, by: by}) // X9: a second stop request skips to SIGKILL
			return
		}
		// A restart or probe kill in progress becomes this stop request,
		// so that the next one escalates; a sidecar's, one that waits for
		// its turn if it has not had its stop signal yet (O6).
		st.reason, st.by = reason, by
		st.ordered = st.ordered || inTurn
		return
	}
	if inTurn {
		g.beginStopInTurn(p, reason, grace, by)
		return
	}
	g.beginStop(p, reason, grace, nil, by, false)
}

func (g *Group) startProc(p *proc, by string) {
	p.want, p.done = true, false
	if p.init {
		g.initFailed = false
	}
	if p.inst == nil {
		g.requestStart(p, by)
		return
	}
	if d := p.inst.deferred; d != nil && !d.restart {
		d.restart, d.by, d.reason = true, by, lifecycle.KillRestart
	}
	if st := p.inst.stop; st != nil && !st.restart {
		st.restart, st.by = true, by
		st.reason = lifecycle.KillRestart
	}
}

func (g *Group) restartProc(p *proc, grace *time.Duration, by string) {
	p.want, p.done = true, false
	if p.init {
		g.initFailed = false
	}
	if p.inst == nil {
		if p.init && !p.sidecar && g.initNext != g.indexOfInit(p) {
			return // not its turn yet (I1)
		}
		g.requestStart(p, by)
		return
	}
	if st := p.inst.stop; st != nil {
		st.restart, st.by = true, by
		if !probeKill(st.reason) {
			st.reason = lifecycle.KillRestart
		}
		return
	}
	g.beginStop(p, lifecycle.KillRestart, grace, nil, by, true)
}

func (g *Group) indexOfInit(p *proc) int {
	for i, q := range g.inits {
		if q == p {
			return i
		}
	}
	return -1
}

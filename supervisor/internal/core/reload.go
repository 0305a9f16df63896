package core

import (
	"strconv"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Process-level live reload: a group whose new spec differs from the
// running one only in its main processes keeps its core; only the
// processes that were added, removed or changed are touched. Everything
// else in the group (instances, pids, restart counts, back-off, recreate
// requests) is left as it is.
//
//	added     started as soon as reconcile gets to it (a new process)
//	removed   stopped through K1–K6 (pre_stop included); its events and exit
//	          are still handled until its instance is gone
//	changed   the old instance is stopped through K1–K6 with its own (old)
//	          spec, then the new spec is started at once: a spec change
//	          always restarts (R4) and gives a fresh back-off (B12); the
//	          restart count goes on (R5). A stopped process stays stopped
//	          and gets the new spec at its next start.

// ReloadInput hands a group's new spec to its core; the group-level
// settings are the same as before, only main processes differ.
type ReloadInput struct{ Group spec.Group }

func (ReloadInput) isInput() {}

// SettingsInput hands the core the supervisor-wide settings a reload
// changed that apply live: minimum_grace (X12), which lifts the grace of
// every stop signal sent from now on. A stop under way keeps the deadline
// it has, as a changed grace period does in kubelet.
type SettingsInput struct{ MinimumGrace time.Duration }

func (SettingsInput) isInput() {}

func (g *Group) reload(ng spec.Group) {
	g.reloads++
	g.spec = ng
	keep := map[string]bool{}
	var mains []*proc
	for _, s := range ng.Processes {
		keep[s.Name] = true
		p, ok := g.byName[s.Name]
		switch {
		case ok && spec.SameProcess(p.spec, s) && p.nextSpec == nil:
			// unchanged: untouched
		case ok && p.nextSpec != nil && spec.SameProcess(*p.nextSpec, s):
			// the same change again: already under way
		case ok:
			g.changeProc(p, s)
		default:
			p = &proc{
				spec: s, policy: ng.EffectiveRestartPolicy(&s), want: true, created: g.wallNow(),
				// Unique instance ids even if a process of that name was
				// removed earlier and is still stopping.
				idPrefix: "r" + strconv.Itoa(g.reloads) + ".",
			}
			g.byName[s.Name] = p
			g.emit(p, lifecycle.EventNormal, lifecycle.EventReloaded, "Process %s added by a reload", s.Name)
		}
		mains = append(mains, p)
	}
	for _, p := range g.mains {
		if !keep[p.spec.Name] {
			g.removeProc(p)
		}
	}
	g.mains = mains
}

// changeProc is R4 for a changed spec: stop the instance with its own
// spec, then start the new one (stepReload swaps the spec once the old
// instance is gone).
func (g *Group) changeProc(p *proc, s spec.Process) {
	p.nextSpec = &s
	g.emit(p, lifecycle.EventNormal, lifecycle.EventReloaded, "Process %s changed by a reload: restarting it with the new spec", s.Name)
	if p.inst == nil {
		return
	}
	if st := p.inst.stop; st != nil {
		if p.want {
			st.restart = true // a stop under way ends in a start of the new spec
		}
		return
	}
	g.beginStop(p, lifecycle.KillReload, nil, nil, "reload", p.want)
}

// removeProc stops a process the new spec no longer has. It stays in
// g.leaving (so exits and deadlines still reach it) until it is gone.
func (g *Group) removeProc(p *proc) {
	delete(g.byName, p.spec.Name)
	p.want, p.nextSpec = false, nil
	g.cancelStart(p)
	g.emit(p, lifecycle.EventNormal, lifecycle.EventReloaded, "Process %s removed by a reload", p.spec.Name)
	if p.inst == nil {
		g.release(p)
		return
	}
	if st := p.inst.stop; st != nil {
		st.restart = false
	} else {
		g.beginStop(p, lifecycle.KillReload, nil, nil, "reload", false)
	}
	g.leaving = append(g.leaving, p)
}

// stepReload finishes what reload began: a changed process whose old
// instance is gone takes its new spec, with a fresh back-off (B12), and
// starts at once if it is wanted; removed processes that are gone are
// forgotten.
func (g *Group) stepReload() {
	for _, p := range g.mains {
		if p.nextSpec == nil || p.inst != nil {
			continue
		}
		p.spec, p.nextSpec = *p.nextSpec, nil
		p.policy = g.spec.EffectiveRestartPolicy(&p.spec)
		g.backoff.Forget(p.spec.Name)
		p.nextStart = time.Time{}
		if p.want {
			p.done = false
			g.requestStart(p, "reload")
		} else {
			g.fireRest(p, restOnCancel) // no B8 check for the new spec
		}
	}
	if len(g.leaving) == 0 {
		return
	}
	var still []*proc
	for _, p := range g.leaving {
		if p.inst != nil {
			still = append(still, p)
		} else {
			g.release(p)
		}
	}
	g.leaving = still
}

// release tells the runtime a removed process is gone for good: its last
// instance has exited, and unless a later reload added a process of the
// same name back (which then owns what the runtime keeps under that name).
func (g *Group) release(p *proc) {
	if g.byName[p.spec.Name] != nil {
		return
	}
	for _, q := range g.leaving {
		if q != p && q.inst != nil && q.spec.Name == p.spec.Name {
			return // an older removal of the same name is still stopping
		}
	}
	g.do(ReleaseAction{Process: p.spec.Name})
}

package supervisor

import (
	"slices"
	"sync"
	"time"

	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/internal/core"
)

// depHub carries each group's DepState to the groups related to it by a
// group-level depends_on: its dependents, whose processes wait for it
// (W1), and its dependencies, whose ordered shutdown waits for it to be
// gone (W8). A worker hands it its state after every batch it handled;
// the hub posts a DependencyInput only when the state changed, so the
// waiting group's core is stepped in the same instant: nothing polls.
type depHub struct {
	mu sync.Mutex // guards everything below; never held while taking Supervisor.mu
	// workers is the current worker of each group: a retiring one's
	// states are not its group's any more.
	workers map[string]*worker
	// listeners names, per group, the groups that hear of its state.
	listeners map[string][]string
	last      map[string]core.DepState
}

// configure takes the configuration in force and its workers (New,
// Apply; Supervisor.mu is held), and gives every listener the last state
// of what it listens to: a worker a reload created starts knowing them.
func (h *depHub) configure(cfg *spec.Config, workers map[string]*worker) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil {
		h.last = map[string]core.DepState{}
	}
	// A group no longer configured has no listener left, and its last
	// state must not reach a later group of the same name.
	for name := range h.last {
		if _, ok := workers[name]; !ok {
			delete(h.last, name)
		}
	}
	for name, w := range workers {
		if old, ok := h.workers[name]; ok && old != w {
			// A reload replaced the group: until its new worker speaks,
			// it is neither started nor ready, and the old one's
			// instances may still be alive.
			h.last[name] = core.DepState{Alive: true}
		}
	}
	h.workers = make(map[string]*worker, len(workers))
	for name, w := range workers {
		h.workers[name] = w
	}
	h.listeners = map[string][]string{}
	add := func(from, to string) {
		if !slices.Contains(h.listeners[from], to) {
			h.listeners[from] = append(h.listeners[from], to)
		}
	}
	for _, g := range cfg.Groups {
		for _, d := range g.DependsOn {
			add(d.Name, g.Name) // the dependent waits for d (W1)
			add(g.Name, d.Name) // d's ordered shutdown waits for g (W8)
		}
	}
	for name, st := range h.last {
		h.tellLocked(name, st)
	}
}

// publish records w's group's state and tells the listeners when it
// changed. It never blocks: mailboxes are unbounded.
func (h *depHub) publish(w *worker, st core.DepState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.workers[w.name] != w {
		return
	}
	if old, ok := h.last[w.name]; ok && old == st {
		return
	}
	h.last[w.name] = st
	h.tellLocked(w.name, st)
}

func (h *depHub) tellLocked(name string, st core.DepState) {
	for _, l := range h.listeners[name] {
		if lw := h.workers[l]; lw != nil {
			lw.mb.put(core.DependencyInput{Group: name, State: st})
		}
	}
}

// shutdownInput is the shutdown request for group name: ordered (W8)
// unless the supervisor block says stop_order = "parallel" (W9).
func shutdownInput(cfg *spec.Config, name string, grace *time.Duration, by string) core.CommandInput {
	in := core.CommandInput{Kind: core.CmdShutdown, Grace: grace, By: by}
	if cfg.Supervisor.StopOrder != spec.StopParallel {
		in.Ordered, in.After = true, cfg.Dependents(name)
	}
	return in
}

package supervisor

import (
	"fmt"
	"slices"

	"github.com/podsup/podsup/supervisor/internal/core"

	"github.com/podsup/podsup/spec"
)

// Apply moves a supervisor to a new configuration (live reload); see
// Reload, which also says what changed.
func (s *Supervisor) Apply(cfg spec.Config) error {
	_, err := s.Reload(cfg)
	return err
}

// Reload moves a supervisor to a new configuration (live reload) and
// returns what changed: spec.Diff of the configuration in force and cfg,
// the one answer it acts on, so a caller reports exactly what was done.
//
//   - a new group starts; a removed group stops (K1–K6, as in X9);
//   - a group whose group-level settings changed (restart policy, grace,
//     effective back-off, sandbox, inits) is stopped and then started
//     afresh (a new core: new instance ids, fresh back-off as B12 implies
//     for a spec change, inits run again);
//   - a group whose main processes alone changed keeps running and only
//     the added, removed or changed processes are started, stopped or
//     restarted (the core's process-level reload);
//   - an unchanged group is not touched.
//
// The supervisor block is no part of any group's spec: changing it
// restarts nothing. Of its settings the supervisor itself uses only
// minimum_grace, which applies live to every stop that begins after the
// reload (a stop under way keeps its deadline), and stop_order, which the
// next shutdown follows; the others are the
// caller's (changes.Supervisor names them). The top-level back-off is
// part of the spec of every group that sets none of its own.
// Before Run it only replaces the plan.
//
// A cfg that fails validation, or asks for something the Runtime cannot
// honour (Capabilities; the error wraps ErrUnsupported), changes nothing:
// the configuration in force stays.
func (s *Supervisor) Reload(cfg spec.Config) (spec.Changes, error) {
	if err := cfg.Validate(); err != nil {
		return spec.Changes{}, fmt.Errorf("unable to apply the configuration: %w", err)
	}
	if err := s.rt.Capabilities().Check(&cfg); err != nil {
		return spec.Changes{}, fmt.Errorf("unable to apply the configuration: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdowns > 0 {
		return spec.Changes{}, fmt.Errorf("unable to apply the configuration: %w", ErrShuttingDown)
	}
	ch := spec.Diff(&s.cfg, &cfg)
	s.cfg = cfg
	s.minGrace = cfg.Supervisor.EffectiveMinimumGrace()
	s.defBackoff = cfg.Backoff
	if s.defBackoff == (spec.Backoff{}) {
		s.defBackoff = spec.DefaultBackoff()
	}
	if slices.Contains(ch.Supervisor, "minimum_grace") {
		for _, w := range s.workers {
			w.mb.put(core.SettingsInput{MinimumGrace: s.minGrace})
		}
	}
	keep := map[string]bool{}
	var order []string
	for _, g := range cfg.Groups {
		keep[g.Name] = true
		order = append(order, g.Name)
		old, ok := s.workers[g.Name]
		groupChanged := slices.Contains(ch.ChangedGroups, g.Name)
		procs := ch.Groups[g.Name]
		switch {
		case ok && !groupChanged && procs.Empty():
			continue
		case ok && !groupChanged && s.running:
			// Only main processes changed: the group keeps its core and
			// only those processes are touched (the core's process-level reload).
			old.spec = g
			old.mb.put(core.ReloadInput{Group: g})
			continue
		}
		w := newWorker(s.coreConfig(g), s)
		s.workers[g.Name] = w
		switch {
		case !s.running:
		case ok:
			s.retire(old, "reload")
			s.spawnAfter(w, old)
		default:
			s.spawn(w)
		}
	}
	for name, old := range s.workers {
		if !keep[name] {
			delete(s.workers, name)
			if s.running {
				s.retire(old, "reload")
			}
		}
	}
	s.order = order
	s.deps.configure(&s.cfg, s.workers)
	return ch, nil
}

// retire stops a worker's group for good; s.mu is held.
// A later shutdown request reaches it through s.retiring until it is done.
func (s *Supervisor) retire(w *worker, by string) {
	w.mb.put(core.CommandInput{Kind: core.CmdShutdown, By: by})
	s.retiring[w] = struct{}{}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-w.done
		s.mu.Lock()
		delete(s.retiring, w)
		s.mu.Unlock()
	}()
}

// spawnAfter starts w's goroutine, which waits for old to stop before it
// runs anything; s.mu is held.
func (s *Supervisor) spawnAfter(w, old *worker) {
	w.after = old.done
	w.waiting.Store(true)
	s.spawn(w)
}

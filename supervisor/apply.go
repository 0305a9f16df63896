package supervisor

import (
	"fmt"
	"reflect"

	"github.com/podsup/podsup/spec"
)

// Apply moves a supervisor to a new configuration (live reload): a new
// group starts, a removed group stops (K1–K6, as in X9), a group whose
// group-level settings changed (restart policy, grace, back-off, sandbox,
// inits) is stopped and then started afresh (a new core: new instance ids,
// fresh back-off as B12 implies for a spec change, inits run again), a
// group whose main processes alone changed keeps running and only the
// added, removed or changed processes are started, stopped or restarted
// (reload.go), and an unchanged group is not touched.
// Before Run it only replaces the plan. The supervisor-wide settings that
// reach groups (default back-off, minimum grace) count as part of each
// group's spec.
func (s *Supervisor) Apply(cfg spec.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("unable to apply the configuration: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdowns > 0 {
		return fmt.Errorf("unable to apply the configuration: %w", ErrShuttingDown)
	}
	s.minGrace = cfg.Supervisor.EffectiveMinimumGrace()
	s.defBackoff = cfg.Backoff
	if s.defBackoff == (spec.Backoff{}) {
		s.defBackoff = spec.DefaultBackoff()
	}
	keep := map[string]bool{}
	var order []string
	for _, g := range cfg.Groups {
		keep[g.Name] = true
		order = append(order, g.Name)
		next := s.coreConfig(g)
		old, ok := s.workers[g.Name]
		if ok && sameCore(old.cfg, next) {
			continue
		}
		if ok && s.running && sameGroupLevel(old.cfg, next) {
			// Only main processes changed: the group keeps its core and
			// only those processes are touched (reload.go).
			next.idPrefix = old.cfg.idPrefix
			old.cfg, old.spec = next, g
			old.mb.put(reloadInput{group: g})
			continue
		}
		w := newWorker(next, s)
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
	return nil
}

// sameCore reports whether two core configurations describe the same
// group, ignoring the instance id prefix.
func sameCore(a, b coreConfig) bool {
	a.idPrefix, b.idPrefix = "", ""
	return reflect.DeepEqual(a, b)
}

// retire stops a worker's group for good; s.mu is held.
// A second Shutdown reaches it through s.retiring until it is done.
func (s *Supervisor) retire(w *worker, by string) {
	w.mb.put(commandInput{kind: cmdShutdown, by: by})
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

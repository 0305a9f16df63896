package supervisor

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/podsup/podsup/supervisor/internal/core"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Recreate asks for new instances of some processes of a group while the
// others keep running (docs/semantics.md part C with X8). It checks the
// spec (C1), queues the request behind any other request of the group (C2)
// and returns its id; the group's worker carries it out. Follow it with
// WaitRecreate, RecreateStatus, or the events tagged with the id
// (Event.Request).
//
// Errors: a *lifecycle.RecreateSpecError (errors.Is
// lifecycle.ErrInvalidRecreate) for a bad spec, unknown or duplicate
// processes included; ErrNotFound for an unknown group;
// lifecycle.ErrGroupInactive for a stopped, finished or failed group or a
// stopped process; ErrNotRunning before Run or while a reload replaces the
// group; ErrShuttingDown.
func (s *Supervisor) Recreate(spec lifecycle.RecreateSpec) (string, error) {
	spec = spec.Clone()
	if spec.Requester == "" {
		spec.Requester = "library caller"
	}
	if err := spec.Validate(); err != nil {
		return "", err
	}
	s.mu.Lock()
	w, ok := s.workers[spec.Group]
	var err error
	switch {
	case !ok:
		err = fmt.Errorf("unable to recreate in group %q: %w", spec.Group, ErrNotFound)
	case s.shutdowns > 0:
		err = fmt.Errorf("unable to recreate in group %q: %w", spec.Group, ErrShuttingDown)
	case !s.running:
		err = fmt.Errorf("unable to recreate in group %q: the supervisor has not been Run: %w", spec.Group, ErrNotRunning)
	case w.waiting.Load():
		err = fmt.Errorf("unable to recreate in group %q: a reload is replacing it: %w", spec.Group, ErrNotRunning)
	}
	if err != nil {
		s.mu.Unlock()
		return "", err
	}
	s.forgetEndedRecreates()
	id, seq := s.rc.add(w)
	reply := make(chan error, 1)
	w.mb.put(core.RecreateInput{ID: id, Seq: seq, Spec: spec, Reply: reply})
	s.mu.Unlock()

	// The worker answers while it handles the request; the barrier also
	// waits until it has published the status that shows the request.
	w.barrier()
	select {
	case err = <-reply:
	default:
		err = fmt.Errorf("unable to recreate in group %q: %w", spec.Group, ErrShuttingDown)
	}
	if err != nil {
		s.rc.drop(id)
		return "", err
	}
	return id, nil
}

// RecreateStatus returns a snapshot of one request, until its
// ttl_after_finished has passed (then ErrNotFound).
func (s *Supervisor) RecreateStatus(id string) (lifecycle.RecreateStatus, error) {
	e := s.rc.lookup(id)
	if e == nil {
		return lifecycle.RecreateStatus{}, fmt.Errorf("unable to find recreate request %q: %w", id, ErrNotFound)
	}
	if st, ok := e.finalStatus(); ok {
		return st, nil
	}
	if list := e.w.recreates.Load(); list != nil {
		for _, st := range *list {
			if st.ID == id {
				return st.Clone(), nil
			}
		}
	}
	return lifecycle.RecreateStatus{}, fmt.Errorf("unable to find recreate request %q: %w", id, ErrNotFound)
}

// Recreates returns every request still visible (not past its TTL), group
// by group in configuration order, each group's in arrival order.
func (s *Supervisor) Recreates() []lifecycle.RecreateStatus {
	s.mu.Lock()
	var ws []*worker
	for _, name := range s.order {
		ws = append(ws, s.workers[name])
	}
	s.mu.Unlock()
	var out []lifecycle.RecreateStatus
	for _, w := range ws {
		list := w.recreates.Load()
		if list == nil {
			continue
		}
		for _, st := range *list {
			if e := s.rc.lookup(st.ID); e != nil {
				if final, ok := e.finalStatus(); ok {
					st = final // completed a moment before the snapshot was published
				}
			}
			out = append(out, st.Clone())
		}
	}
	return out
}

// WaitRecreate waits until the request completes and returns its final
// status. When ctx ends first it returns the status so far and ctx's error.
// A request that completed with a TTL of 0 is still found here for a while
// (the last recreateTombstones requests), so Recreate followed by
// WaitRecreate never misses the end.
func (s *Supervisor) WaitRecreate(ctx context.Context, id string) (lifecycle.RecreateStatus, error) {
	e := s.rc.lookup(id)
	if e == nil {
		if st, ok := s.rc.tombstone(id); ok {
			return st, nil
		}
		return lifecycle.RecreateStatus{}, fmt.Errorf("unable to wait for recreate request %q: %w", id, ErrNotFound)
	}
	select {
	case <-e.done:
		return e.final.Clone(), nil
	case <-ctx.Done():
		st, _ := s.RecreateStatus(id)
		return st, ctx.Err()
	}
}

// forgetEndedRecreates drops the requests of groups that ended and were
// replaced or removed by a reload: their worker is gone, so no TTL will
// remove them. s.mu is held.
func (s *Supervisor) forgetEndedRecreates() {
	s.rc.mu.Lock()
	defer s.rc.mu.Unlock()
	for id, e := range s.rc.entries {
		select {
		case <-e.w.done:
			if s.workers[e.w.name] != e.w {
				delete(s.rc.entries, id)
			}
		default:
		}
	}
}

func (w *worker) execRecreate(a core.Action) {
	switch a := a.(type) {
	case core.RecreateReplyAction:
		a.Reply <- a.Err // buffered: never blocks
	case core.RecreateDoneAction:
		w.registry.finish(a.Status)
	case core.RecreateGoneAction:
		w.registry.remove(a.ID)
	}
}

// recreateTombstones is how many removed requests WaitRecreate still
// knows the end of.
const recreateTombstones = 64

// recreateRegistry maps request ids to their group's worker and lets
// callers wait for completion. The requests themselves live in the
// group's core.
type recreateRegistry struct {
	mu      sync.Mutex
	seq     uint64
	entries map[string]*recreateEntry
	// gone holds the final status of the last removed requests.
	gone []lifecycle.RecreateStatus
}

type recreateEntry struct {
	w *worker
	// done is closed once final is set.
	done  chan struct{}
	final lifecycle.RecreateStatus
}

func (e *recreateEntry) finalStatus() (lifecycle.RecreateStatus, bool) {
	select {
	case <-e.done:
		return e.final.Clone(), true
	default:
		return lifecycle.RecreateStatus{}, false
	}
}

func (r *recreateRegistry) add(w *worker) (string, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries == nil {
		r.entries = map[string]*recreateEntry{}
	}
	r.seq++
	id := "rc-" + strconv.FormatUint(r.seq, 10)
	r.entries[id] = &recreateEntry{w: w, done: make(chan struct{})}
	return id, r.seq
}

func (r *recreateRegistry) lookup(id string) *recreateEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entries[id]
}

func (r *recreateRegistry) drop(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.entries, id)
}

func (r *recreateRegistry) finish(st lifecycle.RecreateStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[st.ID]
	if e == nil {
		return
	}
	select {
	case <-e.done:
	default:
		e.final = st.Clone()
		close(e.done)
	}
}

func (r *recreateRegistry) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[id]
	if e == nil {
		return
	}
	delete(r.entries, id)
	if st, ok := e.finalStatus(); ok {
		r.gone = append(r.gone, st)
		if len(r.gone) > recreateTombstones {
			r.gone = append(r.gone[:0:0], r.gone[len(r.gone)-recreateTombstones:]...)
		}
	}
}

func (r *recreateRegistry) tombstone(id string) (lifecycle.RecreateStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.gone {
		if st.ID == id {
			return st.Clone(), true
		}
	}
	return lifecycle.RecreateStatus{}, false
}

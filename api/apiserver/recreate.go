package apiserver

import (
	"errors"
	"net/http"
	"time"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

func (s *Server) createRecreate(w http.ResponseWriter, r *http.Request) {
	var req api.RecreateRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	spec := lifecycle.RecreateSpec{Group: req.Group, Processes: req.Processes, Ordered: req.Ordered,
		FailurePolicy: lifecycle.FailurePolicy(req.FailurePolicy), Requester: "api (" + peerName(r) + ")"}
	var err error
	for _, d := range []struct {
		name, in string
		out      **time.Duration
	}{{"grace", req.Grace, &spec.TerminationGracePeriod}, {"unready_grace", req.UnreadyGrace, &spec.UnreadyGracePeriod}, {"ttl", req.TTL, &spec.TTLAfterFinished}} {
		if *d.out, err = parseDuration(d.name, d.in); err != nil {
			writeError(w, err)
			return
		}
	}
	for _, d := range []struct {
		name, in string
		out      *time.Duration
	}{{"min_started", req.MinStarted, &spec.MinStarted}, {"deadline", req.Deadline, &spec.ActiveDeadline}} {
		v, err := parseDuration(d.name, d.in)
		if err != nil {
			writeError(w, err)
			return
		}
		if v != nil {
			*d.out = *v
		}
	}
	id, err := s.b.Supervisor.Recreate(spec)
	if err != nil {
		writeError(w, classifyRecreate(err))
		return
	}
	st, err := s.b.Supervisor.RecreateStatus(id)
	if err != nil {
		// Already completed and forgotten (ttl 0): report the id alone.
		writeJSON(w, http.StatusCreated, api.Recreate{ID: id, Group: req.Group})
		return
	}
	writeJSON(w, http.StatusCreated, toRecreate(st))
}

func (s *Server) listRecreates(w http.ResponseWriter, r *http.Request) {
	out := api.RecreateList{Recreates: []api.Recreate{}}
	for _, st := range s.b.Supervisor.Recreates() {
		out.Recreates = append(out.Recreates, toRecreate(st))
	}
	writeJSON(w, http.StatusOK, out)
}

// getRecreate answers a request's status; with wait=true, once it has
// completed (or the client gave up).
func (s *Server) getRecreate(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var st lifecycle.RecreateStatus
	var err error
	if r.URL.Query().Get("wait") == "true" {
		st, err = s.b.Supervisor.WaitRecreate(r.Context(), id)
		if r.Context().Err() != nil {
			return // the client left
		}
	} else {
		st, err = s.b.Supervisor.RecreateStatus(id)
	}
	if err != nil {
		writeError(w, classifyRecreate(err))
		return
	}
	writeJSON(w, http.StatusOK, toRecreate(st))
}

func classifyRecreate(err error) error {
	switch {
	case errors.Is(err, lifecycle.ErrInvalidRecreate):
		return &wrapped{err.Error(), api.ErrBadRequest}
	case errors.Is(err, lifecycle.ErrGroupInactive):
		return &wrapped{err.Error(), api.ErrConflict}
	case errors.Is(err, supervisor.ErrNotRunning):
		return &wrapped{err.Error(), api.ErrUnavailable}
	}
	return classify(err)
}

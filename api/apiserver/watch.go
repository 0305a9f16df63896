package apiserver

import (
	"errors"
	"net/http"
	"reflect"

	"github.com/podsup/podsup/api"
)

// watchStatus answers GET /v1/status[/{group}[/{process}]]?watch=true: a
// stream of api.WatchEvent lines as a Kubernetes watch sends them: an
// ADDED line per group with the whole (filtered) status, a BOOKMARK that
// ends that initial state, then, each time the supervisor replaces a
// snapshot, ADDED, MODIFIED or DELETED for each group that appeared,
// changed or went away, always whole (a line never holds a difference, so
// "processes": [] cannot be misread as "nothing changed"). The supervisor
// tells the server of each new snapshot (Supervisor.NotifyStatus), so
// nothing is polled: an idle podsup sends nothing and wakes no one.
// Notices coalesce, so a burst of changes may arrive as one line holding
// each process's last state.
func (s *Server) watchStatus(w http.ResponseWriter, r *http.Request, wide bool) {
	group, process := r.PathValue("group"), r.PathValue("process")
	notice := make(chan struct{}, 1)
	stop := s.b.Supervisor.NotifyStatus(notice)
	defer stop()
	// Subscribed before the first read: a change after it is noticed. An
	// unknown group or process is refused (404) as `kubectl get pod X -w`
	// refuses one; once it existed, its leaving is a DELETED line and the
	// watch goes on (a reload may bring it back: ADDED).
	last, err := s.currentStatus(group, process, wide, false)
	if err != nil {
		writeError(w, err)
		return
	}
	st := newStream(w)
	for _, e := range watchEvents(api.StatusResponse{}, last) {
		if st.send(e) != nil {
			return
		}
	}
	if st.send(api.WatchEvent{Type: api.WatchBookmark}) != nil {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-notice:
		}
		now, err := s.currentStatus(group, process, wide, false)
		if errors.Is(err, api.ErrNotFound) {
			now, err = api.StatusResponse{}, nil // it left the configuration
		}
		if err != nil {
			return
		}
		for _, e := range watchEvents(last, now) {
			if st.send(e) != nil {
				return
			}
		}
		last = now
	}
}

// watchEvents are the lines that take a reader from before to now: ADDED
// for each group of now not in before, MODIFIED for each that differs,
// in now's order, then DELETED, with its last state, for each group of
// before that now lacks.
func watchEvents(before, now api.StatusResponse) []api.WatchEvent {
	old := make(map[string]*api.GroupStatus, len(before.Groups))
	for i := range before.Groups {
		old[before.Groups[i].Name] = &before.Groups[i]
	}
	var out []api.WatchEvent
	seen := make(map[string]bool, len(now.Groups))
	for i := range now.Groups {
		g := &now.Groups[i]
		seen[g.Name] = true
		switch o, ok := old[g.Name]; {
		case !ok:
			out = append(out, api.WatchEvent{Type: api.WatchAdded, Group: g})
		case !reflect.DeepEqual(*o, *g):
			out = append(out, api.WatchEvent{Type: api.WatchModified, Group: g})
		}
	}
	for i := range before.Groups {
		if g := &before.Groups[i]; !seen[g.Name] {
			out = append(out, api.WatchEvent{Type: api.WatchDeleted, Group: g})
		}
	}
	return out
}

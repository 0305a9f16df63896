package apiserver

import (
	"net/http"
	"reflect"

	"github.com/podsup/podsup/api"
)

// watchStatus answers GET /v1/status[/{group}[/{process}]]?watch=true: a
// stream of StatusResponse lines, the whole (filtered) status first, then,
// each time the supervisor replaces a snapshot, the groups that changed
// with only the processes that changed. The supervisor tells the server
// of each new snapshot (Supervisor.NotifyStatus), so nothing is polled:
// an idle podsup sends nothing and wakes no one. Notices coalesce, so a
// burst of changes may arrive as one update holding each process's last
// state.
func (s *Server) watchStatus(w http.ResponseWriter, r *http.Request, wide bool) {
	group, process := r.PathValue("group"), r.PathValue("process")
	notice := make(chan struct{}, 1)
	stop := s.b.Supervisor.NotifyStatus(notice)
	defer stop()
	// Subscribed before the first read: a change after it is noticed.
	last, err := s.currentStatus(group, process, wide, false)
	if err != nil {
		writeError(w, err)
		return
	}
	st := newStream(w)
	if st.send(last) != nil {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-notice:
		}
		now, err := s.currentStatus(group, process, wide, false)
		if err != nil {
			// The group or process left the configuration (a reload):
			// the watch of it is over.
			return
		}
		if d := statusChanges(last, now); len(d.Groups) > 0 {
			if st.send(d) != nil {
				return
			}
		}
		last = now
	}
}

// statusChanges is now less what did not change since before: each group
// whose own fields or processes changed, holding only the changed
// processes. A new group is sent whole.
func statusChanges(before, now api.StatusResponse) api.StatusResponse {
	old := map[string]api.GroupStatus{}
	for _, g := range before.Groups {
		old[g.Name] = g
	}
	out := api.StatusResponse{Groups: []api.GroupStatus{}}
	for _, g := range now.Groups {
		o, ok := old[g.Name]
		if !ok {
			out.Groups = append(out.Groups, g)
			continue
		}
		d := g
		d.Init, d.Processes = changedProcesses(o.Init, g.Init), changedProcesses(o.Processes, g.Processes)
		sameGroup := o.Phase == g.Phase && o.Ready == g.Ready && o.ReadinessHeldBy == g.ReadinessHeldBy
		if !sameGroup || len(d.Init) > 0 || len(d.Processes) > 0 {
			out.Groups = append(out.Groups, d)
		}
	}
	return out
}

// changedProcesses are the processes of now that differ from (or are not
// in) before; never nil, for the wire's "processes": [].
func changedProcesses(before, now []api.ProcessStatus) []api.ProcessStatus {
	old := map[string]api.ProcessStatus{}
	for _, p := range before {
		old[p.Name] = p
	}
	out := []api.ProcessStatus{}
	for _, p := range now {
		if o, ok := old[p.Name]; !ok || !reflect.DeepEqual(o, p) {
			out = append(out, p)
		}
	}
	return out
}

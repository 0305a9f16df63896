package apiserver

import (
	"time"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// The conversions from the supervisor's snapshots to the wire objects. They
// live on the server's side so that package api, and every client built on
// it, links no runtime.

func toStatus(s supervisor.Status) api.StatusResponse {
	out := api.StatusResponse{Groups: make([]api.GroupStatus, 0, len(s.Groups))}
	for _, g := range s.Groups {
		out.Groups = append(out.Groups, toGroup(g))
	}
	return out
}

func toGroup(g lifecycle.GroupStatus) api.GroupStatus {
	gs := api.GroupStatus{Name: g.Name, Phase: string(g.Phase), Ready: g.Ready, ReadinessHeldBy: g.ReadinessHeldBy, Processes: []api.ProcessStatus{}}
	for _, p := range g.Init {
		gs.Init = append(gs.Init, toProcess(p))
	}
	for _, p := range g.Processes {
		gs.Processes = append(gs.Processes, toProcess(p))
	}
	return gs
}

func toProcess(p lifecycle.ProcessStatus) api.ProcessStatus {
	out := api.ProcessStatus{
		Name: p.Name, Init: p.Init, Sidecar: p.Sidecar, State: string(p.State), Reason: p.Reason, Message: p.Message,
		Ready: p.Ready, Started: p.Started, RestartCount: p.RestartCount, StatusText: p.StatusText,
		InstanceID: p.InstanceID, Pid: p.Pid,
		StartedAt: timep(p.StartedAt), FinishedAt: timep(p.FinishedAt),
		Terminated: toTermination(p.Terminated), LastTermination: toTermination(p.LastTermination),
		NextStartAt: timep(p.NextStartAt), CreatedAt: timep(p.CreatedAt),
	}
	out.Backoff = backoffDelay(p)
	if t := p.Terminating; t != nil {
		out.Terminating = &api.Terminating{Since: timep(t.Since), Reason: string(t.Reason), RequestedBy: t.By}
	}
	return out
}

// backoffDelay is the wait of a process in CrashLoopBackOff: its next start
// is exactly the last instance's end plus the back-off (X3), so the
// difference is the delay in force.
func backoffDelay(p lifecycle.ProcessStatus) string {
	if p.NextStartAt.IsZero() || p.LastTermination == nil || p.LastTermination.FinishedAt.IsZero() {
		return ""
	}
	d := p.NextStartAt.Sub(p.LastTermination.FinishedAt)
	if d < 0 {
		return ""
	}
	return d.String()
}

func toTermination(t *lifecycle.Termination) *api.Termination {
	if t == nil {
		return nil
	}
	out := &api.Termination{InstanceID: t.InstanceID, ExitCode: t.ExitCode, Reason: t.Reason, Message: t.Message,
		StartedAt: timep(t.StartedAt), FinishedAt: timep(t.FinishedAt)}
	if t.Signal != 0 {
		out.Signal = spec.SignalName(t.Signal)
	}
	return out
}

func toEvent(e lifecycle.Event) api.Event {
	count, first := e.Count, e.FirstTime
	if count == 0 { // not through the event bus (a library user's value)
		count, first = 1, e.Time
	}
	return api.Event{Seq: e.Seq, Time: e.Time, Count: count, FirstTime: first, LastTime: e.Time,
		Type: string(e.Type), Reason: e.Reason, Group: e.Group,
		Process: e.Process, InstanceID: e.InstanceID, RestartCount: e.RestartCount, Pid: e.Pid, Message: e.Message}
}

func timep(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func toRecreate(s lifecycle.RecreateStatus) api.Recreate {
	r := api.Recreate{ID: s.ID, Group: s.Spec.Group, Phase: string(s.Phase), Failed: s.Phase == lifecycle.RecreateCompleted && s.Failed(),
		Message: s.Message, Ordered: s.Spec.Ordered, FailurePolicy: string(s.Spec.Policy()), HoldsReadiness: s.HoldsReadiness,
		CreationTime: timep(s.CreationTime), StartTime: timep(s.StartTime), CompletionTime: timep(s.CompletionTime),
		Requester: s.Spec.Requester, Processes: []api.RecreateProcess{}}
	for _, p := range s.Processes {
		r.Processes = append(r.Processes, api.RecreateProcess{Name: p.Name, Phase: string(p.Phase), Message: p.Message,
			PreviousInstanceID: p.PreviousInstanceID, InstanceID: p.InstanceID})
	}
	sp := s.Spec
	r.Spec = api.RecreateRequest{Group: sp.Group, Processes: sp.Processes, Ordered: sp.Ordered, FailurePolicy: r.FailurePolicy,
		Grace: durp(sp.TerminationGracePeriod), UnreadyGrace: durp(sp.UnreadyGracePeriod), TTL: durp(sp.TTLAfterFinished)}
	if sp.MinStarted > 0 {
		r.Spec.MinStarted = sp.MinStarted.String()
	}
	if sp.ActiveDeadline > 0 {
		r.Spec.Deadline = sp.ActiveDeadline.String()
	}
	return r
}

func durp(d *time.Duration) string {
	if d == nil {
		return ""
	}
	return d.String()
}

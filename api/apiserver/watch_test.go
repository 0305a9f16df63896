package apiserver

import (
	"testing"

	"github.com/podsup/podsup/api"
)

// A watch line is a whole group with its type, never a difference: a
// group that went away is DELETED (it used to vanish from the stream), and
// a group that changed holds all of its processes.
func TestWatchEventsSayAddedModifiedDeleted(t *testing.T) {
	before := api.StatusResponse{Groups: []api.GroupStatus{
		{Name: "web", Phase: "Running", Processes: []api.ProcessStatus{{Name: "api", State: "running"}, {Name: "crash", State: "running", RestartCount: 1}}},
		{Name: "idle", Phase: "Running", Processes: []api.ProcessStatus{{Name: "p", State: "running"}}},
		{Name: "gone", Phase: "Running", Processes: []api.ProcessStatus{{Name: "q", State: "running"}}},
	}}
	now := api.StatusResponse{Groups: []api.GroupStatus{
		{Name: "web", Phase: "Running", Processes: []api.ProcessStatus{{Name: "api", State: "running"}, {Name: "crash", State: "waiting", Reason: "CrashLoopBackOff", RestartCount: 1}}},
		{Name: "idle", Phase: "Running", Processes: []api.ProcessStatus{{Name: "p", State: "running"}}},
		{Name: "new", Phase: "Pending", Processes: []api.ProcessStatus{}},
	}}
	got := watchEvents(before, now)
	type line struct{ typ, group string }
	want := []line{{api.WatchModified, "web"}, {api.WatchAdded, "new"}, {api.WatchDeleted, "gone"}}
	if len(got) != len(want) {
		t.Fatalf("events = %+v, want %v", got, want)
	}
	for i, w := range want {
		if got[i].Type != w.typ || got[i].Group == nil || got[i].Group.Name != w.group {
			t.Errorf("event %d = %s %+v, want %s %s", i, got[i].Type, got[i].Group, w.typ, w.group)
		}
	}
	if n := len(got[0].Group.Processes); n != 2 {
		t.Errorf("MODIFIED web holds %d processes, want the whole group (2)", n)
	}
	if got[2].Group.Processes[0].Name != "q" {
		t.Errorf("DELETED gone holds %+v, want its last state", got[2].Group)
	}
	if d := watchEvents(now, now); len(d) != 0 {
		t.Errorf("no change gave %+v", d)
	}
	phase := api.StatusResponse{Groups: append([]api.GroupStatus{}, now.Groups...)}
	phase.Groups[1].Phase = "Stopping"
	if d := watchEvents(now, phase); len(d) != 1 || d[0].Type != api.WatchModified || d[0].Group.Name != "idle" || len(d[0].Group.Processes) != 1 {
		t.Errorf("a group's phase change gave %+v, want the whole group MODIFIED", d)
	}
}

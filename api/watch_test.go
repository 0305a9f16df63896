package api

import (
	"testing"
)

// An old podsup's watch lines (differences: {"groups": [...]} with only
// what changed) read as the events a new one sends: the first line as an
// ADDED per group and a BOOKMARK, each next group as MODIFIED, whole.
func TestWatchReadsAnOldServersLines(t *testing.T) {
	w := &legacyWatch{groups: map[string]*GroupStatus{}}
	var got []WatchEvent
	fn := func(e WatchEvent) error { got = append(got, e); return nil }
	first := []GroupStatus{
		{Name: "web", Phase: "Running", Processes: []ProcessStatus{{Name: "api", State: "running"}, {Name: "side", State: "running"}}},
		{Name: "idle", Phase: "Stopped", Processes: []ProcessStatus{}},
	}
	if err := w.events(first, fn); err != nil {
		t.Fatal(err)
	}
	// A change of web/side alone, as an old server sends it.
	if err := w.events([]GroupStatus{{Name: "web", Phase: "Running", Processes: []ProcessStatus{{Name: "side", State: "waiting"}}}}, fn); err != nil {
		t.Fatal(err)
	}
	want := []string{WatchAdded, WatchAdded, WatchBookmark, WatchModified}
	if len(got) != len(want) {
		t.Fatalf("events %+v, want types %v", got, want)
	}
	for i, typ := range want {
		if got[i].Type != typ {
			t.Errorf("event %d is %s, want %s", i, got[i].Type, typ)
		}
	}
	web := got[3].Group
	if web == nil || web.Name != "web" || len(web.Processes) != 2 || web.Processes[0].State != "running" || web.Processes[1].State != "waiting" {
		t.Errorf("MODIFIED web is %+v, want the whole group with side waiting", web)
	}
	// What fn was given is a copy: the next line does not change it.
	if got[0].Group.Processes[1].State != "running" {
		t.Errorf("an earlier event changed under its reader: %+v", got[0].Group)
	}
}

package api

import (
	"context"
	"net/url"
	"strconv"
)

// Watch calls fn with each line of a status watch of every group (of one,
// or of one process): an ADDED per group, a BOOKMARK once the whole state
// has been sent, then ADDED, MODIFIED and DELETED as groups appear, change
// and go away (see WatchEvent), until ctx ends. wide fills in cgroups as
// StatusWide does.
//
// A podsup from before WatchEvent streamed differences ({"groups": [...]}
// lines holding only what changed); Watch turns those into the same
// events, whole groups included, so a new client reads an old server. An
// old server never says that a group went away.
func (c *Client) Watch(ctx context.Context, group, process string, wide bool, fn func(WatchEvent) error) error {
	q := url.Values{"watch": {"true"}, "wide": {strconv.FormatBool(wide)}}
	var old *legacyWatch
	return streamGet(c, ctx, statusPath(group, process)+"?"+q.Encode(), func(l watchLine) error {
		if l.Type != "" {
			return fn(l.WatchEvent)
		}
		if old == nil {
			old = &legacyWatch{groups: map[string]*GroupStatus{}}
		}
		return old.events(l.Groups, fn)
	})
}

// watchLine reads both forms of a watch line: a WatchEvent, or the
// StatusResponse an old podsup sent (Type empty then).
type watchLine struct {
	WatchEvent
	Groups []GroupStatus `json:"groups"`
}

// legacyWatch keeps the groups an old server's watch told of, to turn its
// differences into whole groups.
type legacyWatch struct {
	synced bool
	groups map[string]*GroupStatus
}

func (w *legacyWatch) events(groups []GroupStatus, fn func(WatchEvent) error) error {
	for _, g := range groups {
		cur := w.groups[g.Name]
		typ := WatchModified
		if cur == nil {
			typ = WatchAdded
			c := g
			cur = &c
			w.groups[g.Name] = cur
		} else {
			cur.Phase, cur.Ready, cur.ReadinessHeldBy = g.Phase, g.Ready, g.ReadinessHeldBy
			cur.Init = mergeByName(cur.Init, g.Init)
			cur.Processes = mergeByName(cur.Processes, g.Processes)
		}
		// fn gets a copy: cur is merged into by the next line.
		out := *cur
		out.Init = append([]ProcessStatus(nil), cur.Init...)
		out.Processes = append([]ProcessStatus{}, cur.Processes...)
		if err := fn(WatchEvent{Type: typ, Group: &out}); err != nil {
			return err
		}
	}
	if !w.synced { // the first line was the whole state
		w.synced = true
		return fn(WatchEvent{Type: WatchBookmark})
	}
	return nil
}

// mergeByName replaces the processes of cur that changed holds and adds
// those it lacks.
func mergeByName(cur, changed []ProcessStatus) []ProcessStatus {
	for _, p := range changed {
		found := false
		for i := range cur {
			if cur[i].Name == p.Name {
				cur[i], found = p, true
				break
			}
		}
		if !found {
			cur = append(cur, p)
		}
	}
	return cur
}

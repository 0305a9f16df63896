package config

import (
	"reflect"

	"github.com/podsup/podsup/spec"
)

// Changes is what a reload has to do to go from one configuration to
// another. Names are listed in the order of the configuration they come
// from (removed ones in the old one's order, the rest in the new one's).
type Changes struct {
	// SupervisorChanged reports a change in the supervisor block. Some of
	// it (the socket, the log settings) only takes effect on a restart of
	// podsup; the caller decides.
	SupervisorChanged bool

	AddedGroups   []string
	RemovedGroups []string
	// ChangedGroups had a group-level change: restart policy, grace,
	// effective back-off, sandbox, or its init list. Their sandbox or init
	// sequence differs, so the whole group is recreated, as Kubernetes
	// recreates a pod whose pod-level spec changed.
	ChangedGroups []string
	// UnchangedGroups are identical in both, processes included.
	UnchangedGroups []string

	// Groups holds the process-level comparison of every group present in
	// both configurations, changed at group level or not.
	Groups map[string]GroupChanges
}

// GroupChanges compares the processes of one group. Order does not count:
// processes are matched by name.
type GroupChanges struct {
	Added     []string
	Removed   []string
	Changed   []string
	Unchanged []string
}

// Empty reports whether nothing changed at all.
func (c Changes) Empty() bool {
	return !c.SupervisorChanged && len(c.AddedGroups) == 0 && len(c.RemovedGroups) == 0 &&
		len(c.ChangedGroups) == 0 && c.processesUnchanged()
}

func (c Changes) processesUnchanged() bool {
	for _, g := range c.Groups {
		if !g.Empty() {
			return false
		}
	}
	return true
}

// Empty reports whether no process was added, removed or changed.
func (g GroupChanges) Empty() bool {
	return len(g.Added) == 0 && len(g.Removed) == 0 && len(g.Changed) == 0
}

// Diff compares two configurations by value (reflect.DeepEqual on spec
// values, with nil and empty slices and maps taken as equal). A group that
// sets no back-off of its own follows the top-level one, so a change there
// is a group-level change of every such group. Groups or processes that
// share a name in one configuration (which Validate rejects) compare by
// their first occurrence.
func Diff(old, new *spec.Config) Changes {
	c := Changes{Groups: map[string]GroupChanges{}}
	c.SupervisorChanged = !reflect.DeepEqual(old.Supervisor, new.Supervisor)
	oldGroups := groupsByName(old)
	newGroups := groupsByName(new)
	for _, g := range old.Groups {
		if _, ok := newGroups[g.Name]; !ok && !contains(c.RemovedGroups, g.Name) {
			c.RemovedGroups = append(c.RemovedGroups, g.Name)
		}
	}
	done := map[string]bool{}
	for _, ng := range new.Groups {
		if done[ng.Name] {
			continue
		}
		done[ng.Name] = true
		og, ok := oldGroups[ng.Name]
		if !ok {
			c.AddedGroups = append(c.AddedGroups, ng.Name)
			continue
		}
		groupChanged := !reflect.DeepEqual(groupLevel(old, og), groupLevel(new, &ng))
		gc := diffProcesses(og.Processes, ng.Processes)
		c.Groups[ng.Name] = gc
		switch {
		case groupChanged:
			c.ChangedGroups = append(c.ChangedGroups, ng.Name)
		case gc.Empty():
			c.UnchangedGroups = append(c.UnchangedGroups, ng.Name)
		}
	}
	return c
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func groupsByName(c *spec.Config) map[string]*spec.Group {
	m := map[string]*spec.Group{}
	for i := range c.Groups {
		if _, ok := m[c.Groups[i].Name]; !ok {
			m[c.Groups[i].Name] = &c.Groups[i]
		}
	}
	return m
}

// groupLevel is what of a group is not its processes: its settings with
// the back-off resolved against the config's default, and its init list
// (order matters there: inits run one after another, I1).
func groupLevel(c *spec.Config, g *spec.Group) spec.Group {
	out := *g
	bo := g.EffectiveBackoff(c.Backoff)
	out.Backoff = &bo
	out.Processes = nil
	out.Init = make([]spec.Process, len(g.Init))
	for i := range g.Init {
		out.Init[i] = normalize(g.Init[i])
	}
	if len(out.Init) == 0 {
		out.Init = nil
	}
	if out.Sandbox != nil {
		sb := *out.Sandbox
		if len(sb.Namespaces) == 0 {
			sb.Namespaces = nil
		}
		if len(sb.Mounts) == 0 {
			sb.Mounts = nil
		}
		out.Sandbox = &sb
	}
	return out
}

func diffProcesses(old, new []spec.Process) GroupChanges {
	var gc GroupChanges
	oldByName := map[string]spec.Process{}
	for _, p := range old {
		if _, ok := oldByName[p.Name]; !ok {
			oldByName[p.Name] = p
		}
	}
	newNames := map[string]bool{}
	for _, p := range new {
		if newNames[p.Name] {
			continue
		}
		newNames[p.Name] = true
		op, ok := oldByName[p.Name]
		switch {
		case !ok:
			gc.Added = append(gc.Added, p.Name)
		case reflect.DeepEqual(normalize(op), normalize(p)):
			gc.Unchanged = append(gc.Unchanged, p.Name)
		default:
			gc.Changed = append(gc.Changed, p.Name)
		}
	}
	for _, p := range old {
		if !newNames[p.Name] && !contains(gc.Removed, p.Name) {
			gc.Removed = append(gc.Removed, p.Name)
		}
	}
	return gc
}

// normalize makes empty slices and maps nil, so that a process built in Go
// with Env: map[string]string{} equals one decoded without env.
func normalize(p spec.Process) spec.Process {
	if len(p.Command) == 0 {
		p.Command = nil
	}
	if len(p.Env) == 0 {
		p.Env = nil
	}
	if len(p.Sockets) == 0 {
		p.Sockets = nil
	}
	for _, pr := range []**spec.Probe{&p.StartupProbe, &p.LivenessProbe, &p.ReadinessProbe} {
		if *pr != nil {
			c := **pr
			c.Handler = normalizeHandler(c.Handler)
			*pr = &c
		}
	}
	for _, h := range []**spec.Hook{&p.PreStart, &p.PostStart, &p.PreStop, &p.PostStop} {
		if *h != nil {
			c := **h
			c.Handler = normalizeHandler(c.Handler)
			*h = &c
		}
	}
	return p
}

func normalizeHandler(h spec.Handler) spec.Handler {
	if h.Exec != nil && len(h.Exec.Command) == 0 {
		h.Exec = &spec.ExecAction{}
	}
	if h.HTTPGet != nil && len(h.HTTPGet.Headers) == 0 {
		g := *h.HTTPGet
		g.Headers = nil
		h.HTTPGet = &g
	}
	return h
}

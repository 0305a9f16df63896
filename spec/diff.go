package spec

import (
	"reflect"
	"slices"
)

// Changes is what a reload has to do to go from one configuration to
// another: the one answer to "what changed" that the supervisor acts on
// and the CLI reports. Names are listed in the order of the configuration
// they come from (removed ones in the old one's order, the rest in the
// new one's).
type Changes struct {
	// Supervisor names the settings of the supervisor block that changed,
	// as the file spells them ("minimum_grace", "socket"), in the block's
	// order. None of them makes a group change: which take effect live
	// and which wait for podsup's restart is the runner's to say
	// (supervisor.Apply applies minimum_grace to later stops).
	Supervisor []string

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
	return len(c.Supervisor) == 0 && len(c.AddedGroups) == 0 && len(c.RemovedGroups) == 0 &&
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
// sets no back-off of its own follows the top-level one (an all-zero
// top-level back-off meaning DefaultBackoff), so a change there is a
// group-level change of every such group. The supervisor block is
// compared field by field and is never part of a group's  Groups or
// processes that share a name in one configuration (which Validate
// rejects) compare by their first occurrence.
func Diff(old, new *Config) Changes {
	c := Changes{Groups: map[string]GroupChanges{}}
	c.Supervisor = SupervisorChanges(old.Supervisor, new.Supervisor)
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
		gc := diffProcesses(effectiveProcesses(og), effectiveProcesses(&ng))
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

func groupsByName(c *Config) map[string]*Group {
	m := map[string]*Group{}
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
func groupLevel(c *Config, g *Group) Group {
	out := *g
	def := c.Backoff
	if def == (Backoff{}) {
		def = DefaultBackoff()
	}
	bo := g.EffectiveBackoff(def)
	out.Backoff = &bo
	out.Processes = nil
	// The group's security context is its processes' defaults: a change
	// restarts the processes it changes (effectiveProcesses), not the
	// whole group; the inits it changes change the init list.
	out.Security = Security{}
	out.Init = make([]Process, len(g.Init))
	for i := range g.Init {
		out.Init[i] = normalize(WithGroupSecurity(g, g.Init[i]))
	}
	if len(out.Init) == 0 {
		out.Init = nil
	}
	// Volume mounts are made in the group's sandbox: a change of one
	// recreates the group. The files of config and secret volumes are
	// rewritten in place by a reload (stack.Stack.Reload): their change
	// is none of the group's.
	for _, p := range append(g.Init[:len(g.Init):len(g.Init)], g.Processes...) {
		if len(p.VolumeMounts) > 0 {
			out.Processes = append(out.Processes, Process{Name: p.Name, VolumeMounts: p.VolumeMounts})
		}
	}
	out.Volumes = nil
	for _, v := range g.Volumes {
		// RestartOnChange is read by the reload itself, from the new
		// configuration: a change of it alone recreates nothing.
		v.Files, v.Mode, v.RestartOnChange = nil, 0, false
		out.Volumes = append(out.Volumes, v)
	}
	if out.Sandbox != nil {
		sb := *out.Sandbox
		if len(sb.Namespaces) == 0 {
			sb.Namespaces = nil
		}
		if len(sb.Mounts) == 0 {
			sb.Mounts = nil
		}
		if sb.ProcMount == ProcMountDefault {
			sb.ProcMount = ""
		}
		out.Sandbox = &sb
	}
	return out
}

// effectiveProcesses are g's processes with their security contexts made
// effective: a process restarts when what it is started with changes.
func effectiveProcesses(g *Group) []Process {
	out := make([]Process, len(g.Processes))
	for i, p := range g.Processes {
		out[i] = WithGroupSecurity(g, p)
	}
	return out
}

func diffProcesses(old, new []Process) GroupChanges {
	var gc GroupChanges
	oldByName := map[string]Process{}
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
		case SameProcess(op, p):
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

// SameProcess reports whether a and b are the same process spec: equal by
// value, with nil and empty slices and maps taken as equal. A reload
// restarts a process exactly when this is false (R4).
func SameProcess(a, b Process) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

// SupervisorChanges names the settings of the supervisor block that differ
// between old and new, as the file spells them, in the block's order.
// Unset and set to the default compare equal where the default is known
// here (minimum_grace).
func SupervisorChanges(old, new Supervisor) []string {
	var out []string
	for _, f := range []struct {
		name string
		same bool
	}{
		{"socket", old.Socket == new.Socket},
		{"socket_group", old.SocketGroup == new.SocketGroup},
		{"socket_group_roles", slices.Equal(old.SocketGroupRoles, new.SocketGroupRoles)},
		{"log_level", old.LogLevel == new.LogLevel},
		{"log_format", old.LogFormat == new.LogFormat},
		{"log_dir", old.LogDir == new.LogDir},
		{"minimum_grace", old.EffectiveMinimumGrace() == new.EffectiveMinimumGrace()},
		{"notify_ready", old.NotifyReady == new.NotifyReady},
		{"metrics_listen", old.MetricsListen == new.MetricsListen},
		{"metrics_allow_remote", old.MetricsAllowRemote == new.MetricsAllowRemote},
		{"stop_order", old.StopOrder == new.StopOrder},
	} {
		if !f.same {
			out = append(out, f.name)
		}
	}
	return out
}

// normalize makes empty slices and maps nil, so that a process built in Go
// with Env: map[string]string{} equals one decoded without env.
func normalize(p Process) Process {
	if len(p.Command) == 0 {
		p.Command = nil
	}
	if len(p.Env) == 0 {
		p.Env = nil
	}
	if len(p.Sockets) == 0 {
		p.Sockets = nil
	}
	// Compared with the group (groupLevel): they are its sandbox's mounts.
	p.VolumeMounts = nil
	if len(p.Security.SupplementalGroups) == 0 {
		p.Security.SupplementalGroups = nil
	}
	if len(p.Security.Rlimits) == 0 {
		p.Security.Rlimits = nil
	}
	for _, pr := range []**Probe{&p.StartupProbe, &p.LivenessProbe, &p.ReadinessProbe} {
		if *pr != nil {
			c := **pr
			c.Handler = normalizeHandler(c.Handler)
			*pr = &c
		}
	}
	for _, h := range []**Hook{&p.PreStart, &p.PostStart, &p.PreStop, &p.PostStop} {
		if *h != nil {
			c := **h
			c.Handler = normalizeHandler(c.Handler)
			*h = &c
		}
	}
	return p
}

func normalizeHandler(h Handler) Handler {
	if h.Exec != nil && len(h.Exec.Command) == 0 {
		h.Exec = &ExecAction{}
	}
	if h.HTTPGet != nil && len(h.HTTPGet.Headers) == 0 {
		g := *h.HTTPGet
		g.Headers = nil
		h.HTTPGet = &g
	}
	return h
}

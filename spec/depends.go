package spec

import (
	"slices"
	"strings"
	"time"
)

// Start order: a process (or a whole group) waits for other processes (or
// groups) to reach a condition before it starts, as docker compose's
// depends_on does (docs/semantics.md W1–W9).

// Condition is what a dependency must reach before its dependents start.
type Condition string

const (
	// ConditionStarted: the dependency runs and its startup probe, if any,
	// has succeeded (compose's service_started).
	ConditionStarted Condition = "started"
	// ConditionReady: the dependency is ready: its readiness probe or
	// protocol said so, or, without either, it has started (compose's
	// service_healthy).
	ConditionReady Condition = "ready"
	// ConditionCompleted: the dependency exited 0 (compose's
	// service_completed_successfully).
	ConditionCompleted Condition = "completed"
)

// Dependency is one depends_on block.
type Dependency struct {
	// Name is a process or init of the same group (on a process), or
	// another group (on a group).
	Name string
	// Condition defaults to ConditionStarted, as compose's does.
	Condition Condition
	// Timeout, when positive, fails the dependent when the condition is
	// not met that long after it began to wait.
	Timeout time.Duration
	// Restart restarts the dependent after the dependency restarts
	// (compose's `restart: true`).
	Restart bool
}

// EffectiveCondition is the condition, defaulted.
func (d Dependency) EffectiveCondition() Condition {
	if d.Condition == "" {
		return ConditionStarted
	}
	return d.Condition
}

// StopOrder is how a shutdown orders the stops of processes.
type StopOrder string

const (
	// StopOrdered stops dependents before what they depend on (W8).
	StopOrdered StopOrder = "ordered"
	// StopParallel stops everything at once.
	StopParallel StopOrder = "parallel"
)

// Dependents returns the names of the groups whose depends_on names group.
func (c *Config) Dependents(group string) []string {
	var out []string
	for i := range c.Groups {
		for _, d := range c.Groups[i].DependsOn {
			if d.Name == group && !slices.Contains(out, c.Groups[i].Name) {
				out = append(out, c.Groups[i].Name)
			}
		}
	}
	return out
}

// dependencies checks the depends_on blocks of every group and process:
// known names, valid conditions, `completed` only on what can complete,
// and no cycle (W2).
func (ch *checker) dependencies(c *Config) {
	groups := map[string]*Group{}
	for i := range c.Groups {
		if _, dup := groups[c.Groups[i].Name]; !dup {
			groups[c.Groups[i].Name] = &c.Groups[i]
		}
	}
	graph := map[string][]string{}
	var order []string
	for i := range c.Groups {
		g := &c.Groups[i]
		gp := []string{"group", g.Name}
		for k, d := range g.DependsOn {
			dp := at(gp, "depends_on", d.Name)
			ch.dependency(dp, d, g.DependsOn[:k])
			target, ok := groups[d.Name]
			switch {
			case d.Name == g.Name:
				ch.add(dp, "group %q cannot depend on itself", g.Name)
				continue
			case !ok:
				ch.add(dp, "depends_on names %q, which is not a group of this configuration", d.Name)
				continue
			}
			if d.Condition == ConditionCompleted {
				for j := range target.Processes {
					if target.EffectiveRestartPolicy(&target.Processes[j]) == RestartAlways {
						ch.add(at(dp, "condition"), "condition \"completed\" waits for every process of group %q to exit 0, but its process %q is restarted always and never completes: give it restart_policy \"on-failure\" or \"never\"", d.Name, target.Processes[j].Name)
						break
					}
				}
			}
			if !slices.Contains(graph[g.Name], d.Name) {
				graph[g.Name] = append(graph[g.Name], d.Name)
			}
		}
		order = append(order, g.Name)
	}
	if cycle := findCycle(order, graph); cycle != nil {
		ch.add([]string{"group", cycle[0], "depends_on", cycle[1]}, "depends_on makes a cycle: groups %s", strings.Join(cycle, " -> "))
	}
}

func (ch *checker) processDependencies(g *Group) {
	gp := []string{"group", g.Name}
	kinds := map[string]string{}
	procs := map[string]*Process{}
	for i := range g.Init {
		kinds[g.Init[i].Name], procs[g.Init[i].Name] = "init", &g.Init[i]
	}
	for i := range g.Processes {
		if _, dup := kinds[g.Processes[i].Name]; !dup {
			kinds[g.Processes[i].Name], procs[g.Processes[i].Name] = "process", &g.Processes[i]
		}
	}
	graph := map[string][]string{}
	var order []string
	check := func(kind string, pr *Process, initIndex int) {
		pp := at(gp, kind, pr.Name)
		for i, d := range pr.DependsOn {
			dp := at(pp, "depends_on", d.Name)
			ch.dependency(dp, d, pr.DependsOn[:i])
			tk, ok := kinds[d.Name]
			switch {
			case d.Name == pr.Name:
				ch.add(dp, "%s %q cannot depend on itself", kind, pr.Name)
				continue
			case !ok:
				ch.add(dp, "depends_on names %q, which is neither a process nor an init of group %q", d.Name, g.Name)
				continue
			case kind == "init" && (tk != "init" || initIndexOf(g, d.Name) > initIndex):
				// I1: an init runs before every later init and every main
				// process; waiting for one of them would never end.
				ch.add(dp, "init %q cannot depend on %s %q, which starts only after it (inits run one at a time, in order, before the processes)", pr.Name, tk, d.Name)
				continue
			}
			target := procs[d.Name]
			switch {
			case d.Condition != ConditionCompleted:
			case tk == "process" && g.EffectiveRestartPolicy(target) == RestartAlways:
				ch.add(at(dp, "condition"), "condition \"completed\" waits for %q to exit 0, but it is restarted always and never completes: give it restart_policy \"on-failure\" or \"never\"", d.Name)
			case tk == "init" && IsSidecar(target):
				ch.add(at(dp, "condition"), "condition \"completed\" waits for %q to exit 0, but it is a sidecar, restarted always, and never completes: use \"started\" or \"ready\"", d.Name)
			}
			if !slices.Contains(graph[pr.Name], d.Name) {
				graph[pr.Name] = append(graph[pr.Name], d.Name)
			}
		}
		order = append(order, pr.Name)
	}
	for i := range g.Init {
		check("init", &g.Init[i], i)
	}
	for i := range g.Processes {
		check("process", &g.Processes[i], -1)
	}
	if cycle := findCycle(order, graph); cycle != nil {
		ch.add(at(gp, kinds[cycle[0]], cycle[0], "depends_on", cycle[1]), "depends_on makes a cycle: %s", strings.Join(cycle, " -> "))
	}
}

func initIndexOf(g *Group, name string) int {
	for i := range g.Init {
		if g.Init[i].Name == name {
			return i
		}
	}
	return -1
}

// dependency checks one depends_on block on its own; before are the
// blocks written before it in the same block.
func (ch *checker) dependency(p []string, d Dependency, before []Dependency) {
	for _, b := range before {
		if b.Name == d.Name {
			ch.add(p, "duplicate depends_on %q: name each dependency once", d.Name)
		}
	}
	switch d.Condition {
	case "", ConditionStarted, ConditionReady, ConditionCompleted:
	default:
		ch.add(at(p, "condition"), "condition %q is not one of \"started\", \"ready\", \"completed\"", string(d.Condition))
	}
	if d.Timeout < 0 {
		ch.add(at(p, "timeout"), "timeout must not be negative, got %s", d.Timeout)
	}
}

// findCycle returns the first cycle of graph found walking the nodes in
// order, as the names along it with the first repeated at the end
// ("api", "db", "api"), or nil.
func findCycle(order []string, graph map[string][]string) []string {
	const (
		unseen = iota
		onPath
		finished
	)
	state := map[string]int{}
	var path []string
	var walk func(n string) []string
	walk = func(n string) []string {
		state[n] = onPath
		path = append(path, n)
		for _, m := range graph[n] {
			switch state[m] {
			case onPath:
				i := slices.Index(path, m)
				return append(append([]string(nil), path[i:]...), m)
			case unseen:
				if c := walk(m); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = finished
		return nil
	}
	for _, n := range order {
		if state[n] == unseen {
			if c := walk(n); c != nil {
				return c
			}
		}
	}
	return nil
}

package main

import (
	"fmt"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor"
)

// execCmd is how `podsup exec` runs argv in group g. Named a process or
// an init process (GROUP/PROCESS), the command runs as that process runs, the way kubectl
// exec runs in a container's context: as its user and group, with its
// environment (podsup's own with the process's env on top) and in its
// working directory. Without a process it runs as podsup, with podsup's
// environment and working directory. The sandbox is the caller's: every
// exec of a group runs in the group's sandbox.
func execCmd(g *spec.Group, process string, argv []string) (*proc.Cmd, error) {
	c := &proc.Cmd{Path: argv[0], Args: argv}
	if process == "" {
		return c, nil
	}
	pr := findProcess(g, process)
	if pr == nil {
		return nil, fmt.Errorf("group %q has no process %q", g.Name, process)
	}
	c.Env = supervisor.Environ(pr.Env) // what the process itself gets
	c.Dir, c.User, c.Group = pr.WorkingDir, pr.User, pr.Group
	return c, nil
}

// findProcess is g's process or init process named name, or nil. An init
// is a process of its group like the others (kubectl exec takes an init
// container's name too): a command run in its context helps debug an init
// that fails or hangs.
func findProcess(g *spec.Group, name string) *spec.Process {
	for _, list := range [][]spec.Process{g.Init, g.Processes} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

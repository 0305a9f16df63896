package sandbox

import (
	"errors"
	"fmt"

	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/sandbox/proc"
)

// Spawn starts c inside the sandbox: in its namespaces (forked by its
// namespace thread, so still podsup's child) and in a cgroup of its own
// under the sandbox's ("exec+N": '+' cannot occur in a process id), so its
// tree can be killed whole and the sandbox's limits apply. When the
// command's exit is known, whatever its tree left is killed and the cgroup
// removed. c's Forker, CgroupFD and Tree are replaced; its OnExit is
// kept. To run a command to completion in a sandbox (output, timeout, tree
// kill), give Spawn to internal/execrun: podsup has one such path.
func (rt *Runtime) Spawn(sandboxID string, c *proc.Cmd) (*proc.Process, error) {
	sb, err := rt.readySandbox(sandboxID)
	if err != nil {
		return nil, err
	}
	var cg *cgroups.Process
	if sb.group != nil {
		cg, err = sb.group.NewProcess(fmt.Sprintf("exec+%d", rt.execSeq.Add(1)))
		if err != nil {
			return nil, fmt.Errorf("spawning in sandbox %q: %w", sandboxID, err)
		}
	}
	forker, fd, release, err := rt.forker(sb, cg, nil)
	if err != nil {
		rt.dropExecCgroup(sb, cg)
		return nil, fmt.Errorf("spawning in sandbox %q: %w", sandboxID, err)
	}
	cc := *c
	cc.Forker, cc.UseCgroupFD, cc.CgroupFD, cc.Tree = forker, fd >= 0, fd, nil
	if cg != nil {
		cc.Tree = cg
	}
	userOnExit := c.OnExit
	cc.OnExit = func(e proc.Exit) {
		if userOnExit != nil {
			userOnExit(e)
		}
		if cg != nil {
			go rt.dropExecCgroup(sb, cg) // the reaper must not wait for a kill
		}
	}
	p, err := rt.startIn(sb, &cc)
	release()
	if err != nil {
		rt.dropExecCgroup(sb, cg)
		return nil, err
	}
	return p, nil
}

// dropExecCgroup kills what is left in an exec's cgroup and removes it.
func (rt *Runtime) dropExecCgroup(sb *sandboxRec, cg *cgroups.Process) {
	if cg == nil {
		return
	}
	sb.cgMu.RLock()
	defer sb.cgMu.RUnlock()
	if err := errors.Join(cg.Kill(), cg.Delete()); err != nil {
		rt.log.Warn().Err(err).Str("cgroup", cg.Path()).Msg("cannot remove an exec's cgroup")
	}
}

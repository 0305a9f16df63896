// Package hostrt is the supervisor.Runtime for plain processes on the
// host, without sandboxes or cgroups: package stack's SandboxRuntime falls
// back to it without cgroups, and a runtime layer (notify.Runtime) runs on
// it when it is given nothing to wrap. It lives apart from package stack,
// which imports those layers, so that they and their tests can use it.
package hostrt

import (
	"context"
	"errors"
	"os"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Runtime is the supervisor.Runtime that starts real processes on the
// host with package sandbox's process primitives: each instance in a
// process group of its own, signalled through its pidfd, its exit
// delivered by the one reaper. It is the runtime of a Go program that
// wants plain processes and no cgroups; SandboxRuntime falls back to it for
// a group without a sandbox when cgroups are off.
//
// It has no sandboxes: a group with a Sandbox needs stack.SandboxRuntime, and
// it refuses to start one rather than run it unisolated. Its
// tree kill is the process group's, which a double-forked setsid daemon
// escapes; podsup up uses SandboxRuntime, which puts every process in a
// cgroup.
//
// # Process-wide effects
//
// Its first Start (unless something in the program started it before)
// installs package proc's reaper, which belongs to the whole program: a
// goroutine that waits for any child (waitid(P_ALL); in PID 1 it also
// catches SIGCHLD), reaps it and hands the exit to whoever started that
// pid, counting the rest as orphans. From then on nothing else in the
// program may wait for a child (os/exec's Cmd.Wait, Run and Output,
// os.Process.Wait, wait4 of its own): it would lose exits to the reaper
// or steal them from it. Run other commands with proc.Start, whose exits
// the reaper delivers.
//
// It does not make the program a child subreaper. A program that wants
// the orphans of its processes' descendants (a daemon's double fork) back,
// to be reaped and counted rather than left to the host's init, calls
// proc.StartReaperAs(true) before anything starts a process; a PID 1
// reaps them in any case.
type Runtime struct{}

var _ supervisor.Runtime = Runtime{}

// errSandboxUnsupported is the start error of a group with a Sandbox.
var errSandboxUnsupported = errors.New("a group with a sandbox block needs a runtime with sandboxes (stack.SandboxRuntime), not hostrt.Runtime")

// Start starts req.Process. Its environment is podsup's own with the
// process's Env on top; Stdout and Stderr default to podsup's own.
func (Runtime) Start(_ context.Context, req supervisor.StartRequest) (supervisor.Instance, error) {
	if req.Sandbox != nil {
		return nil, &supervisor.StartError{Code: supervisor.StartErrorExitCode, Err: errSandboxUnsupported}
	}
	pr := req.Process
	stdout, stderr := req.Stdout, req.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	sec, err := supervisor.StartSecurity(pr, false)
	if err != nil {
		return nil, &supervisor.StartError{Code: supervisor.StartErrorExitCode, Err: err}
	}
	onExit := req.OnExit
	cmd := &proc.Cmd{
		Path: pr.Command[0], Args: pr.Command, RunAs: supervisor.RunAs(pr), Security: sec,
		Stdout: stdout, Stderr: stderr, ExtraFiles: req.ExtraFiles,
		Forker: proc.HostForker,
		OnExit: func(e proc.Exit) {
			onExit(lifecycle.ExitStatus{Code: e.Code(), Signal: e.Signal()})
		},
	}
	p, err := proc.Start(cmd)
	if err != nil {
		return nil, &supervisor.StartError{Code: supervisor.StartErrorExitCode, Err: err} // E3
	}
	return hostInstance{p}, nil
}

// Spawner is proc.Start: Runtime's groups have no sandbox, so
// their exec probes and hooks run in podsup's namespaces.
func (Runtime) Spawner(string) func(*proc.Cmd) (*proc.Process, error) {
	return proc.Start
}

// ReleaseGroup does nothing: Runtime keeps nothing per group.
func (Runtime) ReleaseGroup(string) {}

// ReleaseProcess does nothing: Runtime keeps nothing per process.
func (Runtime) ReleaseProcess(string, string) {}

// Capabilities is none: no sandboxes, and output goes to podsup's own
// stdout and stderr unless the StartRequest says otherwise.
func (Runtime) Capabilities() supervisor.Capabilities { return supervisor.Capabilities{} }

// hostInstance is a process Runtime started. Once it exited and was
// reaped it holds nothing: Remove has nothing to free.
type hostInstance struct{ *proc.Process }

func (hostInstance) Remove() error { return nil }

package supervisor

import (
	"context"
	"errors"
	"os"
	"sort"

	"github.com/podsup/podsup/sandbox/proc"
)

// SandboxRuntime is the Runtime that starts real processes with package
// sandbox: each instance in a process group of its own, signalled through
// its pidfd, its exit delivered by the one reaper. It is the default
// Runtime.
//
// It has no sandboxes: a group with a Sandbox needs LocalRuntime, and
// SandboxRuntime refuses to start one rather than run it unisolated. Its
// tree kill is the process group's, which a double-forked setsid daemon
// escapes; podsup up uses LocalRuntime, which puts every process in a
// cgroup.
type SandboxRuntime struct{}

var _ Runtime = SandboxRuntime{}

// errSandboxUnsupported is the start error of a group with a Sandbox.
var errSandboxUnsupported = errors.New("a group with a sandbox block needs the sandbox runtime (LocalRuntime), not SandboxRuntime")

// Start starts req.Process. Its environment is podsup's own with the
// process's Env on top; Stdout and Stderr default to podsup's own.
func (SandboxRuntime) Start(_ context.Context, req StartRequest) (Instance, error) {
	if req.Sandbox != nil {
		return nil, &StartError{Code: 128, Err: errSandboxUnsupported}
	}
	pr := req.Process
	stdout, stderr := req.Stdout, req.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	onExit := req.OnExit
	cmd := &proc.Cmd{
		Path: pr.Command[0], Args: pr.Command, Env: environ(pr.Env),
		Dir: pr.WorkingDir, User: pr.User, Group: pr.Group,
		Stdout: stdout, Stderr: stderr, ExtraFiles: req.ExtraFiles,
		OnExit: func(e proc.Exit) {
			onExit(ExitStatus{Code: e.Code(), Signal: e.Signal()})
		},
	}
	p, err := proc.Start(cmd)
	if err != nil {
		code := 128
		if errors.Is(err, proc.ErrCommandNotFound) || errors.Is(err, proc.ErrNotExecutable) {
			code = proc.ExitCodeForStartError(err)
		}
		return nil, &StartError{Code: code, Err: err}
	}
	return hostInstance{p}, nil
}

// Spawner is proc.Start: SandboxRuntime's groups have no sandbox, so
// their exec probes and hooks run in podsup's namespaces.
func (SandboxRuntime) Spawner(string) func(*proc.Cmd) (*proc.Process, error) {
	return proc.Start
}

// ReleaseGroup does nothing: SandboxRuntime keeps nothing per group.
func (SandboxRuntime) ReleaseGroup(string) {}

// ReleaseProcess does nothing: SandboxRuntime keeps nothing per process.
func (SandboxRuntime) ReleaseProcess(string, string) {}

// Capabilities is none: no sandboxes, and output goes to podsup's own
// stdout and stderr unless StartRequest says otherwise.
func (SandboxRuntime) Capabilities() Capabilities { return Capabilities{} }

// hostInstance is a process SandboxRuntime started. Once it exited and was
// reaped it holds nothing: Remove has nothing to free.
type hostInstance struct{ *proc.Process }

func (hostInstance) Remove() error { return nil }

// environ is podsup's environment with extra on top, in a stable order.
func environ(extra map[string]string) []string {
	if len(extra) == 0 {
		return nil // sandbox: nil means podsup's own
	}
	env := os.Environ()
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(env)+len(keys))
	for _, kv := range env {
		name := kv
		for i := range kv {
			if kv[i] == '=' {
				name = kv[:i]
				break
			}
		}
		if _, override := extra[name]; !override {
			out = append(out, kv)
		}
	}
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/podsup/podsup/sandbox"
	"github.com/podsup/podsup/spec"
)

// LocalRuntime runs groups in sandboxes of package sandbox's LocalRuntime:
// one sandbox per group (its namespaces and cgroup), one process record
// per instance, and one cgroup per process, named after it and kept
// across its instances (sandbox.ProcessConfig.Cgroup), so that a restart
// costs no cgroup creation or removal. The sandbox is created with the
// group's first start and deleted when the group's worker ends
// (ReleaseGroup).
//
// Groups without a Sandbox run on the host path of SandboxRuntime (process
// group kill) unless AllGroups is set, which gives every group a
// cgroup-only sandbox: whole-tree kill that also catches a double-forked
// setsid daemon, a tree a later podsup of the same instance finds and
// kills after a crash, usage figures and OOMKilled. Without cgroups
// AllGroups changes nothing.
type LocalRuntime struct {
	RT *sandbox.LocalRuntime
	// AllGroups puts groups without a Sandbox in a cgroup-only sandbox too.
	AllGroups bool

	mu        sync.Mutex
	sandboxes map[string]bool // group name → sandbox created
}

var _ Runtime = (*LocalRuntime)(nil)

// NewLocalRuntime adapts rt.
func NewLocalRuntime(rt *sandbox.LocalRuntime, allGroups bool) *LocalRuntime {
	return &LocalRuntime{RT: rt, AllGroups: allGroups, sandboxes: map[string]bool{}}
}

func (l *LocalRuntime) sandboxed(req StartRequest) bool {
	return req.Sandbox != nil || (l.AllGroups && l.RT.CgroupsEnabled())
}

// ensure creates the group's sandbox on first use.
func (l *LocalRuntime) ensure(ctx context.Context, group string, sb *spec.Sandbox) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sandboxes[group] {
		return nil
	}
	var cfg spec.Sandbox
	if sb != nil {
		cfg = *sb
	}
	if err := l.RT.CreateSandbox(ctx, group, cfg); err != nil {
		return err
	}
	l.sandboxes[group] = true
	return nil
}

// Start starts one instance in its group's sandbox.
func (l *LocalRuntime) Start(ctx context.Context, req StartRequest) (Instance, error) {
	if !l.sandboxed(req) {
		return SandboxRuntime{}.Start(ctx, req)
	}
	if err := l.ensure(ctx, req.Group, req.Sandbox); err != nil {
		return nil, &StartError{Code: 128, Err: fmt.Errorf("unable to create the group's sandbox: %w", err)}
	}
	pr := req.Process
	id := req.InstanceID
	// OnExit of the sandbox runtime also fires when the start fails; the
	// supervisor hears of that through Start's error instead.
	var startedMu sync.Mutex
	started := false
	onExit := req.OnExit
	err := l.RT.CreateProcess(ctx, id, sandbox.ProcessConfig{
		Sandbox: req.Group, Command: pr.Command, Env: environ(pr.Env), Dir: pr.WorkingDir,
		User: pr.User, Group: pr.Group, Stdout: req.Stdout, Stderr: req.Stderr, ExtraFiles: req.ExtraFiles,
		StopSignal: pr.EffectiveStopSignal(),
		Cgroup:     pr.Name, // one cgroup per process, whichever instance
		OnExit: func(st sandbox.ProcessStatus) {
			startedMu.Lock()
			ok := started
			startedMu.Unlock()
			if ok {
				onExit(ExitStatus{Code: st.ExitCode, Signal: st.Signal, OOMKilled: st.OOMKilled})
			}
			// Free the record and its cgroup; the status was delivered.
			go func() { _ = l.RT.RemoveProcess(context.Background(), id) }()
		},
	})
	if err != nil {
		return nil, &StartError{Code: 128, Err: err}
	}
	startedMu.Lock()
	err = l.RT.StartProcess(ctx, id)
	started = err == nil
	startedMu.Unlock()
	if err != nil {
		code := 128
		if errors.Is(err, sandbox.ErrCommandNotFound) || errors.Is(err, sandbox.ErrNotExecutable) {
			code = sandbox.ExitCodeForStartError(err)
		}
		return nil, &StartError{Code: code, Err: err}
	}
	pid, err := l.RT.ProcessPid(id) // not ProcessStatus: no usage read on the restart path
	if err != nil {
		return nil, &StartError{Code: 128, Err: err}
	}
	return localInstance{rt: l.RT, id: id, pid: pid}, nil
}

// ReleaseGroup deletes the group's sandbox once its worker has ended.
func (l *LocalRuntime) ReleaseGroup(group string) {
	l.mu.Lock()
	had := l.sandboxes[group]
	delete(l.sandboxes, group)
	l.mu.Unlock()
	if had {
		_ = l.RT.DeleteSandbox(context.Background(), group) // kills what is left; nothing to report to
	}
}

// Spawner returns how exec probes and hooks of group start their commands:
// inside the group's sandbox when it has one, on the host otherwise.
func (l *LocalRuntime) Spawner(group string) func(*sandbox.Cmd) (*sandbox.Process, error) {
	l.mu.Lock()
	ok := l.sandboxes[group]
	l.mu.Unlock()
	if !ok {
		return sandbox.Start
	}
	return func(c *sandbox.Cmd) (*sandbox.Process, error) { return l.RT.Spawn(group, c) }
}

type localInstance struct {
	rt  *sandbox.LocalRuntime
	id  string
	pid int
}

func (i localInstance) Pid() int { return i.pid }
func (i localInstance) Signal(sig syscall.Signal) error {
	return i.rt.SignalProcess(i.id, sig)
}
func (i localInstance) KillTree(sig syscall.Signal) error {
	return i.rt.KillProcessTree(i.id, sig)
}

// GroupReleaser is a Runtime that holds per-group resources (a sandbox) to
// release when a group's worker ends.
type GroupReleaser interface {
	ReleaseGroup(group string)
}

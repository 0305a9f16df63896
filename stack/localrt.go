package stack

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"syscall"

	"github.com/podsup/podsup/sandbox"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/sandbox/volume"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// SandboxRuntime is the supervisor.Runtime over package sandbox's Runtime:
// one sandbox per group (its namespaces and cgroup), one process record
// per instance, and one cgroup per process, named after it and kept
// across its instances (sandbox.ProcessConfig.Cgroup), so that a restart
// costs no cgroup creation or removal. The sandbox is created with the
// group's first start and deleted when the group's worker ends
// (ReleaseGroup).
//
// A sandbox that died (its holder ended: everything in its PID namespace
// with it) is rebuilt by the next start of one of the group's processes,
// as the kubelet recreates a dead pod sandbox: the old one is deleted
// (what is left in it killed), a new one created, and a SandboxChanged
// event says why. Starts of one group are serialised by the group's own
// lock, which is held across the sandbox's creation; other groups never
// wait for it.
//
// The group's worker owns each instance's cleanup (supervisor.Runtime): an
// instance's record and cgroup stay until the worker removes it
// (Instance.Remove) after its exit and final tree kill, or until the
// sandbox is deleted.
// The exit status delivered is always the kernel's.
//
// Groups without a Sandbox run on the host path of hostrt.Runtime (process
// group kill) unless NewSandboxRuntime's allGroups is set, which gives every
// group a cgroup-only sandbox: whole-tree kill that also catches a double-forked
// setsid daemon, a tree a later podsup of the same instance finds and
// kills after a crash, usage figures and OOMKilled. Without cgroups
// allGroups changes nothing.
type SandboxRuntime struct {
	rt *sandbox.Runtime
	// allGroups puts groups without a Sandbox in a cgroup-only sandbox too.
	allGroups bool
	// stateDir holds the groups' volumes and name files (package volume);
	// "" makes a group that needs them fail its start.
	stateDir string

	mu     sync.Mutex
	groups map[string]*localGroup // guarded by mu
	// members are the groups whose sandboxes are on a podsup bridge, for
	// the names between them (peers.go); guarded by mu.
	members map[string]bridgeMember
}

// localGroup is one group's sandbox as the adapter knows it.
type localGroup struct {
	// mu serialises the group's starts and its release: creating or
	// rebuilding the sandbox and forking into it.
	mu      sync.Mutex
	created bool // guarded by mu
	// vols is the group's volumes on the host, from its first sandbox
	// with a mount namespace to its release; nil before. guarded by mu
	vols *volume.Group
	// volumes are the group's volumes as the last reload wrote them, nil
	// before one: a rebuilt sandbox gets them, not its first start's.
	volumes []spec.Volume
	peers   map[string]string // SetPeers's; guarded by mu
}

var _ supervisor.Runtime = (*SandboxRuntime)(nil)

// NewSandboxRuntime adapts rt.
func NewSandboxRuntime(rt *sandbox.Runtime, allGroups bool) *SandboxRuntime {
	return &SandboxRuntime{rt: rt, allGroups: allGroups, groups: map[string]*localGroup{}}
}

// SetStateDir sets the directory in which the groups' volumes and their
// sandboxes' /etc/hosts and /etc/resolv.conf are kept, before the first
// Start. Without one, sandboxes get the host's name files and a volume
// mount fails its start.
func (l *SandboxRuntime) SetStateDir(dir string) { l.stateDir = dir }

func (l *SandboxRuntime) sandboxed(req supervisor.StartRequest) bool {
	return req.Sandbox != nil || (l.allGroups && l.rt.CgroupsEnabled())
}

func (l *SandboxRuntime) group(name string) *localGroup {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.groups[name]
	if g == nil {
		g = &localGroup{}
		l.groups[name] = g
	}
	return g
}

// ready reports whether g's sandbox was made and is ready. The caller
// holds g.mu.
func (l *SandboxRuntime) ready(g *localGroup, group string) bool {
	return g.created && l.rt.SandboxReady(group)
}

// ensure makes the group's sandbox ready: created on first use, rebuilt
// when it died. The caller holds g.mu.
func (l *SandboxRuntime) ensure(ctx context.Context, g *localGroup, req supervisor.StartRequest) error {
	var cfg spec.Sandbox
	if req.Sandbox != nil {
		cfg = *req.Sandbox
	}
	if l.limitsDropped() {
		cfg.Resources = spec.Resources{}
	}
	if l.ready(g, req.Group) {
		return nil // every restart's case
	}
	if g.created {
		st, err := l.rt.SandboxStatus(req.Group)
		switch {
		case err == nil && st.State == sandbox.SandboxReady:
			return nil
		case err == nil:
			why := st.Message
			if why == "" {
				why = "it is " + string(st.State)
			}
			report(req, lifecycle.RuntimeEvent{Type: lifecycle.EventNormal, Reason: lifecycle.EventSandboxChanged,
				Message: fmt.Sprintf("Sandbox of group %s changed (%s), it will be killed and re-created.", req.Group, why)})
			if err := l.rt.DeleteSandbox(ctx, req.Group); err != nil && !sandbox.IsNotFound(err) {
				return fmt.Errorf("deleting the group's dead sandbox: %w", err)
			}
		case !sandbox.IsNotFound(err):
			return fmt.Errorf("reading the group's sandbox: %w", err)
		}
		g.created = false
	}
	if cfg.HasNamespace("mount") {
		mounts, src, err := l.groupMounts(g, req, cfg)
		if err != nil {
			return err
		}
		defer src.Close() // the holder has its own once CreateSandbox returned
		cfg.Mounts = append(slices.Clone(cfg.Mounts), mounts...)
	}
	if err := l.rt.CreateSandbox(ctx, req.Group, cfg); err != nil {
		return err
	}
	g.created = true
	l.joinBridge(req.Group, g, cfg)
	return nil
}

// groupMounts prepares the group's volumes and name files on the host and
// returns the mounts that bring them into its sandbox: the volume mounts
// first, then /etc/hosts and /etc/resolv.conf. The caller holds g.mu and
// closes the sources once the sandbox is made.
func (l *SandboxRuntime) groupMounts(g *localGroup, req supervisor.StartRequest, cfg spec.Sandbox) ([]spec.Mount, *volume.Sources, error) {
	if l.stateDir == "" {
		if len(req.VolumeMounts) > 0 {
			return nil, nil, errors.New("no state directory for the group's volumes (SetStateDir)")
		}
		return nil, &volume.Sources{}, nil
	}
	if g.vols == nil {
		g.vols = volume.Open(l.stateDir, req.Group)
	}
	if err := g.vols.SetFSGroup(req.FSGroup); err != nil {
		return nil, nil, err
	}
	vols := req.Volumes
	if g.volumes != nil {
		vols = g.volumes
	}
	var mounts []spec.Mount
	src := &volume.Sources{}
	if len(vols) > 0 {
		if err := g.vols.Prepare(vols); err != nil {
			return nil, nil, err
		}
		var err error
		if mounts, src, err = g.vols.Mounts(vols, req.VolumeMounts); err != nil {
			return nil, nil, err
		}
	}
	names, err := g.vols.NameMounts(volume.Names{Sandbox: cfg, Peers: g.peers})
	if err != nil {
		src.Close()
		return nil, nil, fmt.Errorf("writing the sandbox's /etc/hosts and /etc/resolv.conf: %w", err)
	}
	return append(mounts, names...), src, nil
}

// UpdateVolumes rewrites the files of group's config and secret volumes
// (a reload that changed them and nothing else of the group): a running
// process sees the new files without a restart. It returns the volumes
// whose files changed.
func (l *SandboxRuntime) UpdateVolumes(group string, vols []spec.Volume) ([]string, error) {
	l.mu.Lock()
	g := l.groups[group]
	l.mu.Unlock()
	if g == nil {
		return nil, nil // never started: its first start writes them
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.volumes = slices.Clone(vols)
	if g.vols == nil {
		return nil, nil
	}
	return g.vols.Update(vols)
}

// SetPeers gives group's /etc/hosts a line for each group→address pair
// of peers (the groups on the same podsup bridge reach each other by
// name), now if its sandbox has that file, and in every sandbox it is
// rebuilt with.
func (l *SandboxRuntime) SetPeers(group string, spec *spec.Sandbox, peers map[string]string) error {
	g := l.group(group)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.peers = maps.Clone(peers)
	if g.vols == nil || spec == nil {
		return nil
	}
	return g.vols.SetPeers(volume.Names{Sandbox: *spec, Peers: g.peers})
}

func report(req supervisor.StartRequest, e lifecycle.RuntimeEvent) {
	if req.Report != nil {
		req.Report(e)
	}
}

// Start starts one instance in its group's sandbox, creating or rebuilding
// the sandbox first when needed (slow: a holder's handshake).
func (l *SandboxRuntime) Start(ctx context.Context, req supervisor.StartRequest) (supervisor.Instance, error) {
	if !l.sandboxed(req) {
		return hostrt.Runtime{}.Start(ctx, req)
	}
	g := l.group(req.Group)
	if supervisor.MustNotWait(ctx) {
		// A restart on the reaper's goroutine: not behind another start
		// of the group, which may be making its sandbox, nor to make one.
		if !g.mu.TryLock() {
			return nil, supervisor.ErrWouldWait
		}
		if !l.ready(g, req.Group) {
			g.mu.Unlock()
			return nil, supervisor.ErrWouldWait
		}
	} else {
		g.mu.Lock()
	}
	defer g.mu.Unlock()
	if err := l.ensure(ctx, g, req); err != nil {
		return nil, &supervisor.StartError{Code: supervisor.StartErrorExitCode, Err: fmt.Errorf("unable to create the group's sandbox: %w", err)}
	}
	pr := req.Process
	id := req.InstanceID
	onExit := req.OnExit
	// A group without a sandbox block is here for its cgroup alone: its
	// processes are host processes (capabilities as on the host).
	sec, err := supervisor.StartSecurity(pr, req.Sandbox != nil)
	if err != nil {
		return nil, &supervisor.StartError{Code: supervisor.StartErrorExitCode, Err: err}
	}
	if l.limitsDropped() {
		pr.Resources = spec.Resources{}
	}
	err = l.rt.CreateProcess(ctx, id, sandbox.ProcessConfig{
		Sandbox: req.Group, Command: pr.Command, RunAs: supervisor.RunAs(pr), Security: sec,
		Stdout: req.Stdout, Stderr: req.Stderr, ExtraFiles: req.ExtraFiles,
		Cgroup:    pr.Name, // one cgroup per process, whichever instance
		Resources: pr.Resources,
		// Usage is read from the cgroups by the API server (cumulative
		// per process); the exit need not read it.
		NoFinalUsage: true,
		KeepReady:    req.RestartsAtOnce,
		OnExit: func(st sandbox.ProcessStatus) {
			onExit(lifecycle.ExitStatus{Code: st.ExitCode, Signal: st.Signal, OOMKilled: st.OOMKilled})
		},
	})
	if err != nil {
		return nil, &supervisor.StartError{Code: supervisor.StartErrorExitCode, Err: err}
	}
	pid, err := l.startProcess(ctx, id)
	if err != nil {
		// Ours to clean up: the supervisor never sees this instance.
		if rerr := l.rt.RemoveProcess(context.Background(), id); rerr != nil && !sandbox.IsNotFound(rerr) {
			err = fmt.Errorf("%w (and removing its record: %v)", err, rerr)
		}
		return nil, &supervisor.StartError{Code: supervisor.StartErrorExitCode, Err: err} // E3
	}
	return localInstance{rt: l.rt, id: id, pid: pid}, nil
}

// startProcess starts a created process and reads its pid. The record
// cannot go away meanwhile: only its worker removes it, after this
// returned, and only a start of the same group (which waits for g.mu)
// could rebuild the sandbox.
func (l *SandboxRuntime) startProcess(ctx context.Context, id string) (int, error) {
	if err := l.rt.StartProcess(ctx, id); err != nil {
		return 0, err
	}
	pid, err := l.rt.ProcessPid(id) // not ProcessStatus: no usage read on the restart path
	if err != nil {
		return 0, fmt.Errorf("reading the started process: %w", err)
	}
	return pid, nil
}

// Capabilities is Sandboxes alone: the output of a process goes where
// StartRequest says (/dev/null by default), so capture, readiness
// protocols and activation sockets are for the layers around it. It says
// too what this podsup cannot do of a sandbox (NoNamespaces without
// CAP_SYS_ADMIN, NoResourceLimits without a cgroup it may write;
// hostcheck.go), so that such a configuration is refused with the fix
// rather than failing at every start.
func (l *SandboxRuntime) Capabilities() supervisor.Capabilities {
	return supervisor.Capabilities{Sandboxes: true, NoNamespaces: namespacesUnavailable(), NoResourceLimits: l.limitsUnavailable()}
}

// ReleaseProcess does nothing: package sandbox offers no way to delete one
// process's kept cgroup, so a removed process's (empty) cgroup stays until
// the group's sandbox is deleted (ReleaseGroup).
func (l *SandboxRuntime) ReleaseProcess(group, process string) {}

// ReleaseGroup deletes the group's sandbox once its worker has ended.
func (l *SandboxRuntime) ReleaseGroup(group string) {
	l.mu.Lock()
	g := l.groups[group]
	delete(l.groups, group)
	l.mu.Unlock()
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.created {
		_ = l.rt.DeleteSandbox(context.Background(), group) // kills what is left; the worker has ended, nothing to report to
	}
	l.leaveBridge(group)
	if g.vols != nil {
		// The group is gone, and its empty_dirs with it. A failure leaves
		// them to the next podsup's recovery (volume.RemoveAll).
		_ = g.vols.Remove()
	}
}

// Spawner returns how exec probes and hooks of group start their commands:
// inside the group's sandbox when it has one, on the host otherwise.
func (l *SandboxRuntime) Spawner(group string) func(*proc.Cmd) (*proc.Process, error) {
	if _, err := l.rt.SandboxStatus(group); err != nil {
		return proc.Start
	}
	return func(c *proc.Cmd) (*proc.Process, error) { return l.rt.Spawn(group, c) }
}

// ProbeHost is the address of group's sandbox on its CNI network, where
// its hostless http_get and tcp_socket probes go (kubelet probes the
// pod's IP); "" (127.0.0.1) for a group without one.
func (l *SandboxRuntime) ProbeHost(group string) string {
	st, ok, err := l.rt.NetworkStatus(group)
	if err != nil || !ok || len(st.IPs) == 0 {
		return ""
	}
	ip, _, err := net.ParseCIDR(st.IPs[0])
	if err != nil {
		return ""
	}
	return ip.String()
}

type localInstance struct {
	rt  *sandbox.Runtime
	id  string
	pid int
}

func (i localInstance) Pid() int { return i.pid }
func (i localInstance) Signal(sig syscall.Signal) error {
	return i.rt.SignalProcess(i.id, sig)
}

// KillTree kills the instance's cgroup. A record already gone went with
// its sandbox (deleted or rebuilt), which killed the tree.
func (i localInstance) KillTree(sig syscall.Signal) error {
	if err := i.rt.KillProcessTree(i.id, sig); err != nil && !sandbox.IsNotFound(err) {
		return err
	}
	return nil
}

// Remove frees the instance's record and cgroup.
func (i localInstance) Remove() error {
	if err := i.rt.RemoveProcess(context.Background(), i.id); err != nil && !sandbox.IsNotFound(err) {
		return err
	}
	return nil
}

// TreeEmpty is supervisor.TreeChecker: one read of the process's
// cgroup.events (sandbox's ProcessTreeEmpty).
func (i localInstance) TreeEmpty() bool { return i.rt.ProcessTreeEmpty(i.id) }

// Retire is supervisor.Retirer: the record and the process's cgroup go
// at once, with an rmdir that shows the tree empty (sandbox's
// RetireProcess).
func (i localInstance) Retire() error {
	if err := i.rt.RetireProcess(context.Background(), i.id); err != nil && !sandbox.IsNotFound(err) {
		return err
	}
	return nil
}

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/rs/zerolog"
)

// Options configure a Runtime.
type Options struct {
	// Instance names this podsup. Its cgroups live under
	// "podsup-<Instance>"; a new runtime of the same instance kills and
	// removes whatever an earlier, crashed one left there. Required.
	Instance string
	// Logger gets warnings (cgroups unavailable) and debug notes; the zero
	// value logs nothing.
	Logger zerolog.Logger
	// HolderPath is the binary re-executed as a sandbox holder (it must
	// dispatch HolderArg; see HolderMain). Default "/proc/self/exe".
	HolderPath string
	// HolderStderr receives a holder's own complaints; nil: /dev/null.
	HolderStderr *os.File
	// ReadyTimeout bounds a holder's setup and its exit; default 10s.
	ReadyTimeout time.Duration
	// KillTimeout bounds the wait for an exit after SIGKILL; default 10s.
	KillTimeout time.Duration
	// DisableCgroups runs without cgroups (process groups only), as when
	// cgroups are unavailable.
	DisableCgroups bool
	// NetnsDir is where the network namespaces of sandboxes attached by
	// CNI plugins are bind-mounted, so that a DEL after a crash finds
	// them; default DefaultNetnsDir.
	NetnsDir string
	// NetworkStateDir keeps, per instance, the CNI attachments made and
	// not yet deleted, which NewRuntime DELs; default
	// DefaultNetworkStateDir. It must outlive a reboot (the IPAM
	// reservations do).
	NetworkStateDir string
	// CNICacheDir is libcni's cache of results; default
	// DefaultCNICacheDir.
	CNICacheDir string
	// Cgroups, when set, replaces the cgroup manager's options (Instance
	// and Logger are filled in); tests use it to pick hierarchies.
	Cgroups *cgroups.Options
}

// Runtime runs sandboxes on this machine: namespaces held by holder
// processes, cgroups from package cgroups, processes started with Start.
type Runtime struct {
	opts Options
	log  zerolog.Logger
	cg   *cgroups.Manager // nil: no cgroups, process groups only
	// recovered is what NewRuntime swept away; read-only afterwards.
	recovered     []Recovered
	recoveredNets []string
	// bridges are the bridges attached to (guarded by mu); Close removes
	// those left empty.
	bridges map[string]bool

	execSeq atomic.Uint64
	// ids hands out the ranges of sandboxes' user namespaces.
	ids idAllocator

	// mu guards the maps and every mutable field of the records in them
	// (marked "guarded by rt.mu"). It is never held across a fork, a kill
	// or a wait.
	mu        sync.Mutex
	sandboxes map[string]*sandboxRec
	procs     map[string]*procRec
	closed    bool
}

// NewRuntime sets up the cgroup root of opts.Instance and sweeps away what
// an earlier run of the same instance left (processes, cgroups). Where
// cgroups are unavailable it says so once in the log and uses process
// groups; sandboxes asking for resource limits then fail with
// ErrUnavailable.
func NewRuntime(opts Options) (*Runtime, error) {
	if opts.Instance == "" {
		return nil, fmt.Errorf("creating runtime: %w: Options.Instance is required", ErrInvalidArgument)
	}
	if opts.HolderPath == "" {
		opts.HolderPath = "/proc/self/exe"
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 10 * time.Second
	}
	if opts.KillTimeout <= 0 {
		opts.KillTimeout = 10 * time.Second
	}
	if opts.NetnsDir == "" {
		opts.NetnsDir = DefaultNetnsDir
	}
	if opts.NetworkStateDir == "" {
		opts.NetworkStateDir = DefaultNetworkStateDir
	}
	if opts.CNICacheDir == "" {
		opts.CNICacheDir = DefaultCNICacheDir
	}
	rt := &Runtime{
		opts:      opts,
		log:       opts.Logger,
		sandboxes: map[string]*sandboxRec{},
		procs:     map[string]*procRec{},
	}
	proc.StartReaper() // orphans of earlier runs and of host sandboxes come back to us
	if !opts.DisableCgroups {
		co := cgroups.Options{}
		if opts.Cgroups != nil {
			co = *opts.Cgroups
		}
		co.Instance, co.Logger = opts.Instance, opts.Logger
		m, err := cgroups.New(co)
		switch {
		case errors.Is(err, cgroups.ErrUnavailable):
			rt.log.Warn().Err(err).Msg("cgroups unavailable: process trees are killed by process group (a setsid daemon can escape, and a crashed podsup's processes cannot be found again), no resource limits")
		case err != nil:
			return nil, fmt.Errorf("creating runtime: %w", err)
		default:
			rt.cg = m
			found, err := m.Sweep()
			rt.recovered = recoveredFrom(found)
			for _, r := range rt.recovered {
				rt.log.Info().Str("sandbox", r.Sandbox).Str("cgroup", r.Cgroup).Ints("pids", r.Pids).
					Msg("killed and removed what an earlier run of this instance left behind")
			}
			if err != nil {
				_ = m.Close() // the sweep's error is the one to report
				return nil, fmt.Errorf("creating runtime: sweeping leftovers of instance %q: %w", opts.Instance, err)
			}
		}
	}
	// After the cgroups' sweep: the holders are gone, the namespaces kept
	// for the DEL are not.
	nets, err := rt.sweepNetworks(context.Background())
	rt.recoveredNets = nets
	if len(nets) > 0 {
		rt.log.Info().Strs("container_ids", nets).Msg("deleted the CNI attachments an earlier run of this instance left behind")
	}
	if err != nil {
		// Not fatal: the records stay for the next start, and the new
		// sandboxes get attachments of their own.
		rt.log.Warn().Err(err).Msg("some CNI attachments of an earlier run could not be deleted")
	}
	return rt, nil
}

// RecoveredNetworks lists the CNI container ids of the attachments
// NewRuntime deleted for an earlier run of this instance.
func (rt *Runtime) RecoveredNetworks() []string { return slices.Clone(rt.recoveredNets) }

// Recovered is what NewRuntime found of an earlier runtime of the same
// instance, one per sandbox: a podsup that was SIGKILLed or died of OOM
// leaves its processes running in their cgroups, and the next one must
// not run beside them.
type Recovered struct {
	// Sandbox is the id of the sandbox the cgroup belonged to.
	Sandbox string
	// Cgroup is the sandbox's cgroup directory.
	Cgroup string
	// Pids were running in it when found; NewRuntime killed them all
	// before it returned.
	Pids []int
}

func recoveredFrom(found []cgroups.Leftover) []Recovered {
	out := make([]Recovered, 0, len(found))
	for _, l := range found {
		out = append(out, Recovered{Sandbox: l.Name, Cgroup: l.Path, Pids: l.Pids})
	}
	return out
}

// Recovered lists what NewRuntime killed and removed of an earlier run of
// this instance, sorted by sandbox (nothing without cgroups: then
// processes an earlier run left cannot be found).
func (rt *Runtime) Recovered() []Recovered { return slices.Clone(rt.recovered) }

// CgroupsEnabled reports whether processes are in cgroups (else process
// groups).
func (rt *Runtime) CgroupsEnabled() bool { return rt.cg != nil }

// Close deletes every sandbox and removes the runtime's cgroup root.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	rt.closed = true
	ids := make([]string, 0, len(rt.sandboxes))
	for id := range rt.sandboxes {
		ids = append(ids, id)
	}
	rt.mu.Unlock()
	var errs []error
	for _, id := range ids {
		if err := rt.DeleteSandbox(context.Background(), id); err != nil && !IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, rt.removeEmptyBridges())
	_ = os.Remove(rt.recordDir()) // once empty: every attachment was deleted
	if rt.cg != nil {
		errs = append(errs, rt.cg.Close())
	}
	return errors.Join(errs...)
}

// sandboxRec is one sandbox.
type sandboxRec struct {
	id      string
	cfg     spec.Sandbox
	created time.Time
	group   *cgroups.Group // nil without cgroups
	holder  *holder        // nil: the host's namespaces
	ids     *idRange       // the user namespace's ids; nil: the host's
	net     *attachment    // nil: no CNI network; set before the sandbox is ready
	settled chan struct{}  // closed when CreateSandbox returned
	deleted chan struct{}  // closed when DeleteSandbox finished
	// cgMu: exec cgroup cleanups hold it shared; DeleteSandbox holds it
	// while it kills and removes the whole group, so the two never walk
	// and remove the same directories at once.
	cgMu sync.RWMutex
	// keptMu serializes the creation of kept cgroups; the map itself is
	// guarded by rt.mu.
	keptMu sync.Mutex
	kept   map[string]*keptCgroup

	state   SandboxState        // guarded by rt.mu
	message string              // guarded by rt.mu
	procs   map[string]*procRec // guarded by rt.mu
}

func validID(kind, id string) error {
	if !spec.ValidName(id) {
		return fmt.Errorf("%w: %s id %q: use 1-63 letters, digits, '-', '_' or '.', starting with a letter or digit", ErrInvalidArgument, kind, id)
	}
	return nil
}

// getSandbox finds a sandbox; the caller holds rt.mu.
func (rt *Runtime) getSandbox(id string) (*sandboxRec, error) {
	sb := rt.sandboxes[id]
	if sb == nil {
		return nil, fmt.Errorf("sandbox %q: %w", id, ErrNotFound)
	}
	return sb, nil
}

// readySandbox finds a sandbox that can take new processes.
func (rt *Runtime) readySandbox(id string) (*sandboxRec, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	sb, err := rt.getSandbox(id)
	if err != nil {
		return nil, err
	}
	if sb.state != SandboxReady {
		return nil, fmt.Errorf("sandbox %q is %s: %w", id, sb.state, ErrFailedPrecondition)
	}
	return sb, nil
}

// SandboxStatus returns one sandbox's status.
func (rt *Runtime) SandboxStatus(id string) (SandboxStatus, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	sb, err := rt.getSandbox(id)
	if err != nil {
		return SandboxStatus{}, err
	}
	return rt.sandboxStatusLocked(sb), nil
}

// SandboxReady reports whether sandbox id exists and is ready: what a
// start checks every time, without SandboxStatus's copies.
func (rt *Runtime) SandboxReady(id string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	sb, err := rt.getSandbox(id)
	return err == nil && sb.state == SandboxReady
}

func (rt *Runtime) sandboxStatusLocked(sb *sandboxRec) SandboxStatus {
	st := SandboxStatus{
		ID: sb.id, State: sb.state, Message: sb.message,
		Namespaces: slices.Clone(sb.cfg.Namespaces), Hostname: sb.cfg.Hostname,
		CreatedAt: sb.created,
	}
	if sb.holder != nil {
		st.HolderPid = sb.holder.proc.Pid()
	}
	if sb.group != nil {
		st.Cgroup = sb.group.Path()
	}
	for id := range sb.procs {
		st.Processes = append(st.Processes, id)
	}
	sort.Strings(st.Processes)
	return st
}

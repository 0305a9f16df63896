package sandbox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// checkSandbox refuses what cannot be set up faithfully (as in the CRI: a
// runtime enforces all the configuration it is given or fails).
func checkSandbox(cfg spec.Sandbox) error {
	has := map[string]bool{}
	for _, ns := range cfg.Namespaces {
		if cloneFlags[ns] == 0 {
			return fmt.Errorf("%w: namespace %q is not one of pid, mount, uts, ipc, net", ErrInvalidArgument, ns)
		}
		has[ns] = true
	}
	if cfg.Hostname != "" && !has["uts"] {
		return fmt.Errorf("%w: a hostname needs the uts namespace", ErrInvalidArgument)
	}
	if (len(cfg.Mounts) > 0 || cfg.Rootfs != "") && !has["mount"] {
		return fmt.Errorf("%w: mounts and rootfs need the mount namespace", ErrInvalidArgument)
	}
	if n := cfg.Network; n != nil {
		switch n.Mode {
		case spec.NetworkHost:
			if has["net"] {
				return fmt.Errorf("%w: network mode host and the net namespace exclude each other", ErrInvalidArgument)
			}
		case spec.NetworkNone, spec.NetworkBridge, spec.NetworkCNI:
			if !has["net"] {
				return fmt.Errorf("%w: network mode %s needs the net namespace", ErrInvalidArgument, n.Mode)
			}
		default:
			return fmt.Errorf("%w: network mode %q is not one of none, host, bridge, cni", ErrInvalidArgument, n.Mode)
		}
	}
	if cfg.Rootfs != "" && !filepath.IsAbs(cfg.Rootfs) {
		return fmt.Errorf("%w: rootfs %q is not an absolute path", ErrInvalidArgument, cfg.Rootfs)
	}
	if cfg.Rootfs != "" && filepath.Clean(cfg.Rootfs) == "/" {
		// pivot_root fails with EBUSY when the new root is the old one.
		return fmt.Errorf("%w: rootfs \"/\" is the host's root: leave rootfs out to see the host's files", ErrInvalidArgument)
	}
	if (cfg.ReadOnlyRootFilesystem || cfg.PrivateTmp) && !has["mount"] {
		return fmt.Errorf("%w: a read-only root and a private /tmp need the mount namespace", ErrInvalidArgument)
	}
	if cfg.SubIDUser != "" && !cfg.UserNamespace {
		return fmt.Errorf("%w: subid_user needs user_namespace", ErrInvalidArgument)
	}
	switch cfg.ProcMount {
	case "", spec.ProcMountDefault, spec.ProcMountUnmasked:
	default:
		return fmt.Errorf("%w: proc_mount %q is not one of Default, Unmasked", ErrInvalidArgument, cfg.ProcMount)
	}
	for _, m := range cfg.Mounts {
		if !filepath.IsAbs(m.Target) {
			return fmt.Errorf("%w: mount target %q is not an absolute path", ErrInvalidArgument, m.Target)
		}
		switch m.Type {
		case "proc", "tmpfs":
		case "bind":
			if !filepath.IsAbs(m.Source) {
				return fmt.Errorf("%w: bind mount source %q is not an absolute path", ErrInvalidArgument, m.Source)
			}
		default:
			return fmt.Errorf("%w: mount type %q is not one of proc, tmpfs, bind", ErrInvalidArgument, m.Type)
		}
	}
	return nil
}

// CreateSandbox creates the sandbox's namespaces (none listed: the
// host's), mounts, hostname, loopback and its cgroup with cfg.Resources,
// and returns once it is ready.
func (rt *Runtime) CreateSandbox(ctx context.Context, id string, cfg spec.Sandbox) (err error) {
	if err := validID("sandbox", id); err != nil {
		return err
	}
	if err := checkSandbox(cfg); err != nil {
		return fmt.Errorf("creating sandbox %q: %w", id, err)
	}
	sb := &sandboxRec{id: id, cfg: cfg, created: time.Now(), state: SandboxCreating,
		procs: map[string]*procRec{}, kept: map[string]*keptCgroup{}, settled: make(chan struct{}), deleted: make(chan struct{})}
	rt.mu.Lock()
	switch {
	case rt.closed:
		rt.mu.Unlock()
		return fmt.Errorf("creating sandbox %q: runtime closed: %w", id, ErrFailedPrecondition)
	case rt.sandboxes[id] != nil:
		rt.mu.Unlock()
		return fmt.Errorf("creating sandbox %q: %w", id, ErrAlreadyExists)
	}
	rt.sandboxes[id] = sb // reserves the id while we work unlocked
	rt.mu.Unlock()
	defer func() {
		defer close(sb.settled)
		if err != nil {
			rt.mu.Lock()
			delete(rt.sandboxes, id)
			rt.mu.Unlock()
			close(sb.deleted)
		}
	}()

	if rt.cg != nil {
		g, err := rt.cg.NewGroup(id, cfg.Resources)
		switch {
		case errors.Is(err, cgroups.ErrNoController):
			return fmt.Errorf("creating sandbox %q: %w: %w", id, ErrUnavailable, err)
		case errors.Is(err, cgroups.ErrExist):
			return fmt.Errorf("creating sandbox %q: %w: %w", id, ErrAlreadyExists, err)
		case err != nil:
			return fmt.Errorf("creating sandbox %q: %w", id, err)
		}
		sb.group = g
	} else if cfg.Resources != (spec.Resources{}) {
		return fmt.Errorf("creating sandbox %q: %w: resource limits need cgroups, which are unavailable here", id, ErrUnavailable)
	}
	if cfg.UserNamespace {
		ids, terr := rt.ids.take(cfg.SubIDUser)
		if terr != nil {
			if sb.group != nil {
				_ = sb.group.Delete() // empty and just made; the ids' error is the one to report
			}
			return fmt.Errorf("creating sandbox %q: user_namespace: %w", id, terr)
		}
		sb.ids = &ids
		defer func() { // err is CreateSandbox's result
			if err != nil {
				rt.ids.release(cfg.SubIDUser, ids)
			}
		}()
	}
	if len(cfg.Namespaces) > 0 || cfg.UserNamespace {
		h, err := startHolder(ctx, cfg, holderOptions{
			path:         rt.opts.HolderPath,
			stderr:       rt.opts.HolderStderr,
			readyTimeout: rt.opts.ReadyTimeout,
			onExit:       func(e proc.Exit) { go rt.holderExited(sb, e) },
			ids:          sb.ids,
			cg:           rt.cg,
			group:        "holder+" + id,
		})
		if err != nil {
			if sb.group != nil {
				_ = sb.group.Delete() // empty and just made; the holder's error is the one to report
			}
			if errors.Is(err, unix.EPERM) {
				err = fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			return fmt.Errorf("creating sandbox %q: %w", id, err)
		}
		sb.holder = h
	}
	if cfg.Network.Attached() {
		a, err := rt.attach(ctx, sb)
		if err != nil {
			_ = sb.holder.close(rt.opts.ReadyTimeout) // the plugin's error is the one to report
			if sb.group != nil {
				_ = sb.group.Delete()
			}
			return fmt.Errorf("creating sandbox %q: %w", id, err)
		}
		sb.net = a
	}
	rt.mu.Lock()
	sb.state = SandboxReady
	rt.mu.Unlock()
	if sb.holder != nil && isClosed(sb.holder.proc.Done()) {
		// It died while we were still creating, when holderExited ignores
		// it: report it now.
		go rt.holderExited(sb, sb.holder.proc.Exit())
	}
	rt.log.Debug().Str("sandbox", id).Strs("namespaces", cfg.Namespaces).Msg("sandbox ready")
	return nil
}

// holderExited runs when a holder's exit is known. During DeleteSandbox
// that is expected; otherwise the sandbox has failed: with a PID namespace
// the kernel already killed everything in it, without one podsup kills
// the processes' trees so none outlives its sandbox.
func (rt *Runtime) holderExited(sb *sandboxRec, e proc.Exit) {
	rt.mu.Lock()
	if sb.state == SandboxDeleting || sb.state == SandboxCreating {
		rt.mu.Unlock()
		return
	}
	sb.state = SandboxFailed
	sb.message = "sandbox holder ended: " + e.String()
	var running []*procRec
	for _, pr := range sb.procs {
		if !pr.ended && pr.proc != nil { // not one mid-fork (StartProcess)
			running = append(running, pr)
		}
	}
	rt.mu.Unlock()
	rt.log.Warn().Str("sandbox", sb.id).Int("pid", e.Pid).Str("status", e.String()).Msg("sandbox holder died; killing its processes")
	for _, pr := range running {
		_ = pr.proc.KillTree(unix.SIGKILL) // ErrProcessDone: gone with the PID namespace
	}
}

// DeleteSandbox kills and removes every process of the sandbox, ends its
// namespaces and removes its cgroup. Deleting an id being deleted waits
// for that deletion; an unknown id is ErrNotFound.
func (rt *Runtime) DeleteSandbox(ctx context.Context, id string) error {
	rt.mu.Lock()
	sb, err := rt.getSandbox(id)
	if err != nil {
		rt.mu.Unlock()
		return err
	}
	switch sb.state {
	case SandboxCreating:
		rt.mu.Unlock()
		select { // let the creation finish, then delete what it made
		case <-sb.settled:
			return rt.DeleteSandbox(ctx, id)
		case <-ctx.Done():
			return fmt.Errorf("deleting sandbox %q: %w", id, ctx.Err())
		}
	case SandboxDeleting:
		rt.mu.Unlock()
		select { // someone else is at it: wait for them
		case <-sb.deleted:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("deleting sandbox %q: %w", id, ctx.Err())
		}
	}
	sb.state = SandboxDeleting
	procs := make([]*procRec, 0, len(sb.procs))
	for _, pr := range sb.procs {
		procs = append(procs, pr)
	}
	rt.mu.Unlock()

	var errs []error
	for _, pr := range procs {
		if err := rt.forceRemove(pr); err != nil {
			errs = append(errs, err)
		}
	}
	sb.cgMu.Lock()
	defer sb.cgMu.Unlock()
	if sb.group != nil {
		// Exec'd commands and anything that escaped a process's tree.
		if err := sb.group.Kill(); err != nil {
			errs = append(errs, err)
		}
	}
	if sb.net != nil {
		// Before the holder goes: the plugins DEL inside the namespace.
		if err := rt.detach(context.WithoutCancel(ctx), sb.net); err != nil {
			errs = append(errs, err)
		}
	}
	if sb.holder != nil {
		if err := sb.holder.close(rt.opts.ReadyTimeout); err != nil {
			errs = append(errs, err)
		}
	}
	rt.closeKept(sb)
	if sb.group != nil {
		if err := sb.group.Delete(); err != nil {
			errs = append(errs, err)
		}
	}
	if sb.ids != nil {
		rt.ids.release(sb.cfg.SubIDUser, *sb.ids)
	}
	rt.mu.Lock()
	delete(rt.sandboxes, id)
	rt.mu.Unlock()
	close(sb.deleted)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deleting sandbox %q: %w", id, err)
	}
	return nil
}

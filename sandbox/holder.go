package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// cloneFlags maps spec namespace names to clone(2)/setns(2) flags.
var cloneFlags = map[string]uintptr{
	"pid":   unix.CLONE_NEWPID,
	"mount": unix.CLONE_NEWNS,
	"uts":   unix.CLONE_NEWUTS,
	"ipc":   unix.CLONE_NEWIPC,
	"net":   unix.CLONE_NEWNET,
}

// holder is podsup's side of a sandbox holder: the process, its control
// socket and the namespace thread that forks into its namespaces.
type holder struct {
	proc *proc.Process
	ctl  net.Conn
	ns   *nsThread // nil with a user namespace: the holder forks (spawn)
	// spawn is the holder's spawn socket, with a user namespace
	// (holder_userns.go).
	spawn *spawnClient
	// home is the cgroup such a holder runs in, in a group of its own
	// ("holder+ID"), removed once it has exited; nil without cgroups.
	home      *cgroups.Process
	homeGroup *cgroups.Group
}

type holderOptions struct {
	path         string
	stderr       *os.File
	readyTimeout time.Duration
	onExit       func(proc.Exit)
	// ids, when set, are the ids of the sandbox's user namespace.
	ids *idRange
	// cg, with ids, makes the holder's own cgroup group (nil: none).
	cg    *cgroups.Manager
	group string
}

// startHolder starts a holder for cfg and returns once it is ready and the
// namespace thread is inside its namespaces. On any failure nothing is left
// running.
func startHolder(ctx context.Context, cfg spec.Sandbox, o holderOptions) (*holder, error) {
	var flags uintptr
	for _, ns := range cfg.Namespaces {
		flags |= cloneFlags[ns]
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("creating holder control socket: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "podsup-holder-control")
	theirs := os.NewFile(uintptr(fds[1]), "podsup-holder-control")
	ctl, err := net.FileConn(ours)
	_ = ours.Close() // FileConn holds its own dup
	if err != nil {
		_ = theirs.Close()
		return nil, fmt.Errorf("creating holder control socket: %w", err)
	}
	h := &holder{ctl: ctl}
	holderCmd := &proc.Cmd{
		Path:       o.path,
		Args:       []string{o.path, HolderArg},
		Stderr:     o.stderr,
		ExtraFiles: []*os.File{theirs},
		Cloneflags: flags,
		OnExit:     o.onExit,
	}
	if o.ids != nil {
		// The holder makes the PID namespace for its children
		// (holder_userns.go); the others come with the user namespace,
		// which owns them.
		holderCmd.Cloneflags = flags&^unix.CLONE_NEWPID | unix.CLONE_NEWUSER
		holderCmd.UidMappings, holderCmd.GidMappings = o.ids.idMaps()
		// Root of the namespace (the range's first id on the host), set
		// once the maps are written: the exec then gives it the
		// namespace's capabilities, which the host's uid 0, unmapped
		// there, would not get.
		holderCmd.Credential = &syscall.Credential{Uid: 0, Gid: 0}
		sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			_ = ctl.Close()
			_ = theirs.Close()
			return nil, fmt.Errorf("creating holder spawn socket: %w", err)
		}
		spawnOurs := os.NewFile(uintptr(sp[0]), "podsup-holder-spawn")
		spawnTheirs := os.NewFile(uintptr(sp[1]), "podsup-holder-spawn")
		defer spawnTheirs.Close() // the holder has it once started
		holderCmd.ExtraFiles = append(holderCmd.ExtraFiles, spawnTheirs)
		h.spawn, err = newSpawnClient(spawnOurs)
		_ = spawnOurs.Close() // FileConn holds its own dup
		if err != nil {
			_ = ctl.Close()
			_ = theirs.Close()
			return nil, fmt.Errorf("creating holder spawn socket: %w", err)
		}
	}
	release := func() {}
	if o.ids != nil && o.cg != nil {
		// A cgroup of its own, outside the sandbox's, which it moves
		// out of into a process's for each fork (threadPlacer) and back.
		pl, err := h.makeHome(o.cg, o.group)
		if err != nil {
			_ = ctl.Close()
			_ = theirs.Close()
			h.spawn.close()
			return nil, err
		}
		release = func() { _ = pl.Close() } // read-only handles to release
		holderCmd.Forker = sandboxForker{pl: pl}
		if fd := pl.CgroupFD(); fd >= 0 {
			holderCmd.UseCgroupFD, holderCmd.CgroupFD = true, fd
		}
	}
	p, err := proc.Start(holderCmd)
	release()
	_ = theirs.Close() // the holder has it now; our copy would hide its EOF
	if err != nil {
		_ = ctl.Close()
		if h.spawn != nil {
			h.spawn.close()
		}
		if h.homeGroup != nil {
			_ = h.homeGroup.Delete() // empty: the start's error is the one to report
		}
		return nil, fmt.Errorf("starting sandbox holder: %w", err)
	}
	h.proc = p
	if err := h.handshake(ctx, cfg, flags, o.ids != nil, o.readyTimeout); err != nil {
		h.close(o.readyTimeout)
		return nil, err
	}
	if o.ids != nil {
		return h, nil
	}
	err = p.WithPidfd(func(pidfd int) (err error) {
		h.ns, err = startNSThread(p, pidfd, int(flags))
		return err
	})
	if err != nil {
		h.close(o.readyTimeout)
		return nil, err
	}
	return h, nil
}

// makeHome creates the holder's own cgroup and opens its placement.
func (h *holder) makeHome(m *cgroups.Manager, group string) (*cgroups.Placement, error) {
	g, err := m.NewGroup(group, spec.Resources{})
	if err != nil {
		return nil, fmt.Errorf("creating the sandbox holder's cgroup: %w", err)
	}
	p, err := g.NewProcess("holder")
	if err != nil {
		_ = g.Delete() // just made and empty
		return nil, fmt.Errorf("creating the sandbox holder's cgroup: %w", err)
	}
	pl, err := p.OpenPlacement()
	if err != nil {
		_ = g.Delete() // just made and empty
		return nil, err
	}
	h.home, h.homeGroup = p, g
	return pl, nil
}

// handshake sends the config and waits for the holder's verdict, bounded by
// ctx and timeout: a holder that hangs or dies never hangs podsup.
func (h *holder) handshake(ctx context.Context, cfg spec.Sandbox, flags uintptr, userNS bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = h.ctl.SetDeadline(deadline) // a socket conn always takes deadlines
	stop := context.AfterFunc(ctx, func() { _ = h.ctl.SetDeadline(time.Now()) })
	defer stop()
	hc := holderConfig{
		Mount:    flags&unix.CLONE_NEWNS != 0,
		UTS:      flags&unix.CLONE_NEWUTS != 0,
		Net:      flags&unix.CLONE_NEWNET != 0,
		Hostname: cfg.Hostname,
		Mounts:   cfg.Mounts,
		Rootfs:   cfg.Rootfs,

		ReadOnlyRoot: cfg.ReadOnlyRootFilesystem,
		PrivateTmp:   cfg.PrivateTmp,
		MaskProc:     cfg.MaskProc(),

		UserNS: userNS,
		PID:    userNS && flags&unix.CLONE_NEWPID != 0,
	}
	b, err := json.Marshal(hc)
	if err != nil {
		return fmt.Errorf("encoding holder config: %w", err)
	}
	if _, err := h.ctl.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("configuring sandbox holder: %w", err)
	}
	line, err := bufio.NewReader(h.ctl).ReadBytes('\n')
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("waiting for sandbox holder: %w", ctx.Err())
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("waiting for sandbox holder: not ready after %s", timeout)
		}
		return fmt.Errorf("waiting for sandbox holder: it ended before it was ready (%v)", err)
	}
	var reply holderReply
	if err := json.Unmarshal(line, &reply); err != nil {
		return fmt.Errorf("reading sandbox holder reply %q: %w", line, err)
	}
	if reply.Error != "" {
		return fmt.Errorf("setting up sandbox: %s", reply.Error)
	}
	_ = h.ctl.SetDeadline(time.Time{})
	return nil
}

// removeHome removes an exited holder's own cgroup.
func (h *holder) removeHome() error {
	if h.homeGroup == nil {
		return nil
	}
	return errors.Join(h.homeGroup.Kill(), h.homeGroup.Delete())
}

// close ends the holder: it sees EOF and exits; as PID 1 its exit ends
// everything left in its PID namespace. If it has not exited after wait,
// it is SIGKILLed (through its pidfd) and waited for once more.
func (h *holder) close(wait time.Duration) error {
	if h.ns != nil {
		h.ns.Close()
	}
	if h.spawn != nil {
		h.spawn.close()
	}
	_ = h.ctl.Close() // EOF is the message
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-h.proc.Done():
		return h.removeHome()
	case <-t.C:
	}
	_ = h.proc.Signal(unix.SIGKILL) // ErrProcessDone: it exited meanwhile
	t.Reset(wait)
	select {
	case <-h.proc.Done():
		return h.removeHome()
	case <-t.C:
		return fmt.Errorf("sandbox holder %d did not exit after SIGKILL within %s: %w", h.proc.Pid(), wait, ErrUnavailable)
	}
}

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// procRec is one process of a sandbox.
type procRec struct {
	id  string
	sb  *sandboxRec
	cfg ProcessConfig
	cg  *cgroups.Process // nil without cgroups
	// kept is the cgroup cg belongs to when it outlives this record
	// (ProcessConfig.Cgroup); nil when cg is the record's own.
	kept *keptCgroup
	// base is the kept cgroup's CPU figure where this record's own CPU
	// time begins: that of its predecessor's exit (nil: the first
	// instance, from 0). Guarded by rt.mu.
	base *exitFigures

	// op serializes the lifecycle calls on this process (Start, Stop,
	// Remove), which block unlocked for forks and waits.
	op sync.Mutex

	// exited is closed once ended is set and the final usage read.
	exited chan struct{}

	// started and ended are all the lifecycle this runtime keeps (what
	// to run, restart or report is the supervisor's): each is set once,
	// in one place, under rt.mu. A process is running from just before
	// its fork (StartProcess sets started), so that an exit reaped before
	// the fork's outcome is known finds it running, until ended (endLocked:
	// its exit, a failed start, or a kill before it started).
	started, ended bool

	proc     *proc.Process // guarded by rt.mu; set when running
	created  time.Time     // guarded by rt.mu
	startAt  time.Time     // guarded by rt.mu
	finishAt time.Time     // guarded by rt.mu
	code     int           // guarded by rt.mu
	signal   syscall.Signal
	oom      bool
	message  string
	usage    Usage // guarded by rt.mu; final once exited
	// treeGone records that a SIGKILL of the cgroup tree succeeded after
	// the exit: the cgroup was seen empty with the main process gone, and
	// nothing enters it again but a later record. Removal and later tree
	// kills then skip their cgroup.events read (on every restart's path).
	// Guarded by rt.mu.
	treeGone bool
}

// endLocked records that pr is exited, at at: the one place it ends.
func (pr *procRec) endLocked(at time.Time) { pr.ended, pr.finishAt = true, at }

// stateLocked is what ProcessStatus reports of started and ended.
func (pr *procRec) stateLocked() State {
	switch {
	case pr.ended:
		return StateExited
	case pr.started:
		return StateRunning
	}
	return StateCreated
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// getProc finds a process; the caller holds rt.mu.
func (rt *Runtime) getProc(id string) (*procRec, error) {
	pr := rt.procs[id]
	if pr == nil {
		return nil, fmt.Errorf("process %q: %w", id, ErrNotFound)
	}
	return pr, nil
}

func (rt *Runtime) lookupProc(id string) (*procRec, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.getProc(id)
}

// CreateProcess records a process (state created) and creates its
// cgroup; nothing runs yet.
func (rt *Runtime) CreateProcess(_ context.Context, id string, cfg ProcessConfig) error {
	if err := validID("process", id); err != nil {
		return err
	}
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return fmt.Errorf("creating process %q: %w: empty command", id, ErrInvalidArgument)
	}
	pr := &procRec{id: id, cfg: cfg, created: time.Now(), exited: make(chan struct{})}
	rt.mu.Lock()
	sb, err := rt.getSandbox(cfg.Sandbox)
	switch {
	case err != nil:
	case sb.state != SandboxReady:
		err = fmt.Errorf("sandbox %q is %s: %w", sb.id, sb.state, ErrFailedPrecondition)
	case rt.procs[id] != nil:
		err = ErrAlreadyExists
	}
	if err != nil {
		rt.mu.Unlock()
		return fmt.Errorf("creating process %q: %w", id, err)
	}
	if sb.group == nil && cfg.Resources != (spec.Resources{}) {
		err = fmt.Errorf("%w: resource limits need cgroups, which are unavailable here", ErrUnavailable)
	}
	if err != nil {
		rt.mu.Unlock()
		return fmt.Errorf("creating process %q: %w", id, err)
	}
	pr.sb = sb
	// Registered before its cgroup exists so the id is taken; a Start
	// before CreateProcess returned would find it created, as it should.
	pr.op.Lock()
	defer pr.op.Unlock()
	rt.procs[id] = pr
	sb.procs[id] = pr
	rt.mu.Unlock()
	if sb.group != nil && cfg.Cgroup != "" {
		k, err := rt.keepCgroup(sb, cfg.Cgroup, cfg.Resources, cfg.KeepReady, pr)
		if err != nil {
			rt.mu.Lock()
			delete(rt.procs, id)
			delete(sb.procs, id)
			rt.mu.Unlock()
			return fmt.Errorf("creating process %q: %w", id, err)
		}
		pr.cg, pr.kept = k.cg, k
	} else if sb.group != nil {
		cg, err := sb.group.NewProcess(id)
		if err == nil && cfg.Resources != (spec.Resources{}) {
			if err = cg.SetResources(cfg.Resources); err != nil {
				_ = cg.Delete() // just made and empty; the limit's error is the one to report
			}
		}
		if err != nil {
			rt.mu.Lock()
			delete(rt.procs, id)
			delete(sb.procs, id)
			rt.mu.Unlock()
			if errors.Is(err, cgroups.ErrExist) {
				err = fmt.Errorf("%w: %w", ErrAlreadyExists, err)
			}
			return fmt.Errorf("creating process %q: %w", id, err)
		}
		pr.cg = cg
	}
	return nil
}

// forker prepares a fork into sb placed in cg: the Forker for Cmd, the
// cgroup fd (-1: none) and a release to call after Start. The placement is
// opened here, in podsup's own mount namespace, before the work goes to
// the namespace thread (package cgroups: Placement).
func (rt *Runtime) forker(sb *sandboxRec, cg *cgroups.Process, ready *cgroups.Ready) (proc.Forker, int, func(), error) {
	f := sandboxForker{}
	if sb.holder != nil {
		f.ns = sb.holder.ns
	}
	release := func() {}
	fd := -1
	if cg != nil {
		var pl *cgroups.Placement
		var err error
		if ready != nil {
			pl, err = ready.Placement(cg) // a dup of the kept directory
		}
		if ready == nil || err != nil {
			pl, err = cg.OpenPlacement()
		}
		if err != nil {
			return nil, -1, nil, err
		}
		f.pl = pl
		fd = pl.CgroupFD()
		release = func() { _ = pl.Close() } // only read-only handles to release
	}
	return f, fd, release, nil
}

// startIn starts cmd, whose Forker forker made, in sb: with proc.Start,
// or through the holder when sb has a user namespace.
func (rt *Runtime) startIn(sb *sandboxRec, cmd *proc.Cmd) (*proc.Process, error) {
	if sb.holder == nil || sb.holder.spawn == nil {
		return proc.Start(cmd)
	}
	var pl *cgroups.Placement
	if f, ok := cmd.Forker.(sandboxForker); ok {
		pl, _ = f.pl.(*cgroups.Placement)
	}
	return sb.holder.spawnInUserNS(cmd, pl)
}

// processForker is forker for pr: through a placement in its cgroup (its
// kept one, or its own) opened for this start.
func (rt *Runtime) processForker(pr *procRec) (proc.Forker, int, func(), error) {
	if pr.kept == nil {
		return rt.forker(pr.sb, pr.cg, nil)
	}
	return rt.forker(pr.sb, pr.kept.cg, pr.kept.ready.Load())
}

// StartProcess runs a created process (created → running). A program
// that cannot be run leaves it exited with StartErrorExitCode and returns
// the *proc.StartError.
func (rt *Runtime) StartProcess(_ context.Context, id string) error {
	pr, err := rt.lookupProc(id)
	if err != nil {
		return err
	}
	pr.op.Lock()
	defer pr.op.Unlock()
	rt.mu.Lock()
	removed, state, sbState := rt.procs[id] != pr, pr.stateLocked(), pr.sb.state
	rt.mu.Unlock()
	switch {
	case removed: // while this call waited for pr.op
		return fmt.Errorf("process %q: %w", id, ErrNotFound)
	case state != StateCreated:
		return fmt.Errorf("process %q: cannot start a process that is %s: %w", id, state, ErrFailedPrecondition)
	}
	if sbState != SandboxReady {
		return fmt.Errorf("starting process %q: sandbox %q is %s: %w", id, pr.sb.id, sbState, ErrFailedPrecondition)
	}
	forker, fd, release, err := rt.processForker(pr)
	if err != nil {
		return fmt.Errorf("starting process %q: %w", id, err)
	}
	c := pr.cfg
	cmd := &proc.Cmd{
		Path: c.Command[0], Args: c.Command, RunAs: c.RunAs, Security: c.Security,

		Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr, ExtraFiles: c.ExtraFiles,
		Forker: forker, UseCgroupFD: fd >= 0, CgroupFD: fd,
		// On the reaper's goroutine: the cgroup reads are a few
		// microseconds each, and a goroutine hand-off per exit cost a
		// restart more than that (docs/benchmarks.md, S1).
		OnExit: func(e proc.Exit) { rt.processExited(pr, e) },
	}
	switch {
	case pr.kept != nil:
		cmd.Tree = keptTree{rt, pr}
	case pr.cg != nil:
		cmd.Tree = pr.cg
	}
	// The record is running before the fork: the exit may be reaped, and
	// processExited run, before proc.Start returned. Until pr.proc is set
	// a signal finds nothing to signal (runningProc).
	rt.mu.Lock()
	pr.started = true
	pr.startAt = time.Now()
	if pr.kept != nil {
		pr.base = pr.kept.last
	}
	rt.mu.Unlock()
	p, err := rt.startIn(pr.sb, cmd)
	release()
	rt.mu.Lock()
	if err != nil {
		pr.endLocked(time.Now())
		pr.code = StartErrorExitCode // E3
		pr.message = err.Error()
		rt.mu.Unlock()
		close(pr.exited) // no OnExit: the error is the caller's news
		return fmt.Errorf("starting process %q: %w", id, err)
	}
	pr.proc = p
	rt.mu.Unlock()
	rt.log.Debug().Str("process", id).Str("sandbox", pr.sb.id).Int("pid", p.Pid()).Msg("started")
	return nil
}

// processExited turns a reaped exit into the exited state, with the OOM
// verdict read from the cgroup, and reports it (OnExit); then it reads the
// cgroup's final usage figures (exitFigures says why after) and closes
// pr.exited.
func (rt *Runtime) processExited(pr *procRec, e proc.Exit) {
	var (
		oomKills uint64
		oomKnown bool
	)
	if pr.cg != nil {
		if n, err := pr.cg.OOMKills(); err == nil {
			oomKills, oomKnown = n, true
		}
	}
	rt.mu.Lock()
	oom := false
	switch {
	case !oomKnown:
	case pr.kept != nil:
		// The cgroup's counters span its earlier instances: this one's
		// are what they grew by since the last exit (its tree was killed
		// before the next instance started, so the growth is its own).
		oom = pr.kept.oomSince(oomKills)
	default:
		// A fresh cgroup: any OOM kill counted there happened to this
		// process or its tree (kubelet says OOMKilled for either).
		oom = oomKills > 0
	}
	var figures *exitFigures
	if pr.kept != nil && pr.cg != nil && !pr.cfg.NoFinalUsage {
		// Until the read, the last baseline stands.
		figures = &exitFigures{read: make(chan struct{}), cpu: pr.kept.cpuSeen}
		pr.kept.last = figures
	}
	pr.endLocked(e.Time)
	pr.code = e.Code()
	pr.signal = e.Signal()
	pr.oom = oom
	if pr.sb.state == SandboxFailed && pr.message == "" {
		pr.message = pr.sb.message
	}
	// Until the cgroup's figures are read, and for good without a cgroup:
	// the kernel's account of the process and the children it waited for.
	// Not ru_maxrss: the kernel carries it over execve, so it counts
	// podsup's own memory at the fork.
	pr.usage = Usage{CPU: rusageCPU(e.Rusage)}
	st := rt.statusLocked(pr)
	rt.mu.Unlock()
	if pr.cfg.OnExit != nil {
		pr.cfg.OnExit(st)
		if !pr.cfg.KeepReady {
			// Whoever OnExit woke (the supervisor's worker, which
			// restarts the process) waits on this thread's run queue:
			// let it run now, while another thread carries on with the
			// figures. Not for a process restarted at once: OnExit has
			// forked its next instance already (an armed restart), and
			// the worker's bookkeeping, run here, kept this CPU from the
			// new instance, which the scheduler then moved to the other
			// one (docs/benchmarks.md, S1).
			runtime.Gosched()
		}
	}
	rt.readFinalUsage(pr, figures)
	close(pr.exited)
}

// readFinalUsage replaces an exited record's usage with its cgroup's
// figures and, for a kept cgroup, sets figures, where the next instance's
// CPU time begins.
func (rt *Runtime) readFinalUsage(pr *procRec, figures *exitFigures) {
	if pr.cg == nil || pr.cfg.NoFinalUsage {
		return
	}
	s, err := pr.cg.Stats()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	switch {
	case err != nil:
		// Kept: the next instance's CPU then counts from the last
		// baseline that could be read.
	case pr.kept != nil:
		pr.usage = Usage{CPU: pr.kept.cpuSince(s.CPU), MemoryPeak: s.MemoryPeak}
		figures.cpu = s.CPU
	default:
		pr.usage = Usage{CPU: s.CPU, MemoryPeak: s.MemoryPeak}
	}
	if figures != nil {
		close(figures.read)
	}
}

func rusageCPU(ru unix.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// killLocked is DeleteSandbox's end of a process, with pr.op held: one
// never started is exited without running; a running one has its tree
// SIGKILLed and its exit awaited; then what its tree left is killed.
func (rt *Runtime) killLocked(pr *procRec) error {
	rt.mu.Lock()
	switch {
	case pr.ended:
		p := pr.proc
		rt.mu.Unlock()
		return rt.killLeftovers(pr, p)
	case !pr.started:
		pr.endLocked(time.Now())
		rt.mu.Unlock()
		close(pr.exited)
		return nil
	}
	p := pr.proc
	rt.mu.Unlock()
	if err := p.KillTree(unix.SIGKILL); err != nil && !errors.Is(err, proc.ErrProcessDone) {
		return fmt.Errorf("killing process %q: %w", pr.id, err)
	}
	t := time.NewTimer(rt.opts.KillTimeout)
	defer t.Stop()
	select {
	case <-pr.exited:
	case <-t.C:
		return fmt.Errorf("stopping process %q: pid %d not reaped %s after SIGKILL: %w", pr.id, p.Pid(), rt.opts.KillTimeout, ErrUnavailable)
	}
	return rt.killLeftovers(pr, p)
}

// killLeftovers kills what the tree of an exited process left behind (a
// double-forked daemon, say): X10, kill means the tree.
func (rt *Runtime) killLeftovers(pr *procRec, p *proc.Process) error {
	if p == nil {
		return nil // never ran
	}
	if err := p.KillTree(unix.SIGKILL); err != nil && !errors.Is(err, proc.ErrProcessDone) {
		return fmt.Errorf("killing what process %q left behind: %w", pr.id, err)
	}
	return nil
}

// RemoveProcess forgets an exited (or never started) process and removes
// its cgroup, killing leftovers of its tree first. A kept cgroup
// (ProcessConfig.Cgroup) stays for the next process naming it.
func (rt *Runtime) RemoveProcess(_ context.Context, id string) error {
	pr, err := rt.lookupProc(id)
	if err != nil {
		return err
	}
	pr.op.Lock()
	defer pr.op.Unlock()
	return rt.removeLocked(pr)
}

// RetireProcess is RemoveProcess for a process that will not run again
// (its group is going), which also removes the process's cgroup, kept
// (ProcessConfig.Cgroup) or its own. It tries an rmdir first: the kernel
// refuses to remove a populated cgroup, so a removal that succeeds shows
// that the exited process left nothing behind, in one system call, where
// KillProcessTree's check after an exit opens and reads cgroup.events and
// the sandbox's deletion removes the directory later. In a stop of 10,000
// processes those reads were a tenth of podsup's CPU (docs/benchmarks.md).
// When something is left, it is killed as RemoveProcess kills it, and the
// cgroup goes with the sandbox.
func (rt *Runtime) RetireProcess(_ context.Context, id string) error {
	pr, err := rt.lookupProc(id)
	if err != nil {
		return err
	}
	pr.op.Lock()
	defer pr.op.Unlock()
	rt.mu.Lock()
	err = rt.removableLocked(pr)
	started := pr.proc != nil
	rt.mu.Unlock()
	if err != nil {
		return err
	}
	if started {
		<-pr.exited // the exit's readings of the cgroup are done
	}
	cg := pr.cg
	if k := pr.kept; k != nil {
		k.mu.Lock()
		if k.holder != pr {
			cg = nil // a newer record holds it: not this one's to remove
		}
		k.mu.Unlock()
	}
	if cg != nil {
		gone, err := cg.TryDelete()
		if err != nil {
			return fmt.Errorf("removing process %q: %w", pr.id, err)
		}
		if gone {
			rt.forgetKept(pr)
			rt.mu.Lock()
			pr.treeGone = true
			rt.mu.Unlock()
		}
	}
	return rt.removeLocked(pr)
}

// removableLocked says why pr cannot be removed, if it cannot: it is
// gone already, or running. rt.mu is held.
func (rt *Runtime) removableLocked(pr *procRec) error {
	switch {
	case rt.procs[pr.id] != pr:
		return fmt.Errorf("process %q: %w", pr.id, ErrNotFound)
	case pr.started && !pr.ended:
		return fmt.Errorf("process %q: cannot remove a process that is running: %w", pr.id, ErrFailedPrecondition)
	}
	return nil
}

// removeLocked is RemoveProcess with pr.op held.
func (rt *Runtime) removeLocked(pr *procRec) error {
	rt.mu.Lock()
	if err := rt.removableLocked(pr); err != nil {
		rt.mu.Unlock()
		return err
	}
	p := pr.proc
	treeGone := pr.treeGone
	rt.mu.Unlock()
	if p != nil && pr.kept == nil {
		// Its final figures read before its cgroup goes. A kept cgroup
		// stays; the next instance waits for them before its fork.
		<-pr.exited
	}
	if !treeGone {
		if err := rt.killLeftovers(pr, p); err != nil {
			return err
		}
	}
	if pr.kept != nil {
		rt.releaseKept(pr) // the cgroup stays for the next instance
	} else if pr.cg != nil {
		if err := pr.cg.Delete(); err != nil {
			return fmt.Errorf("removing process %q: %w", pr.id, err)
		}
	}
	rt.mu.Lock()
	delete(rt.procs, pr.id)
	delete(pr.sb.procs, pr.id)
	rt.mu.Unlock()
	return nil
}

// forceRemove is DeleteSandbox's way with a process in any state: kill it
// at once (tree SIGKILL) and remove it.
func (rt *Runtime) forceRemove(pr *procRec) error {
	pr.op.Lock()
	defer pr.op.Unlock()
	rt.mu.Lock()
	gone := rt.procs[pr.id] != pr
	rt.mu.Unlock()
	if gone {
		return nil // removed meanwhile
	}
	if err := rt.killLocked(pr); err != nil {
		return err
	}
	return rt.removeLocked(pr)
}

// ProcessStatus returns a process's status, with live usage while running.
func (rt *Runtime) ProcessStatus(id string) (ProcessStatus, error) {
	rt.mu.Lock()
	pr, err := rt.getProc(id)
	if err != nil {
		rt.mu.Unlock()
		return ProcessStatus{}, err
	}
	st := rt.statusLocked(pr)
	rt.mu.Unlock()
	rt.liveUsage(pr, &st)
	return st, nil
}

// ProcessPid is the process's pid (0 before it started): ProcessStatus
// without reading the cgroup's usage, for a caller that needs only that
// right after StartProcess.
func (rt *Runtime) ProcessPid(id string) (int, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	pr, err := rt.getProc(id)
	if err != nil || pr.proc == nil {
		return 0, err
	}
	return pr.proc.Pid(), nil
}

// liveUsage fills in the cgroup's figures of a running process; read
// outside rt.mu (file reads).
func (rt *Runtime) liveUsage(pr *procRec, st *ProcessStatus) {
	if st.State != StateRunning || pr.cg == nil {
		return
	}
	if s, err := pr.cg.Stats(); err == nil {
		cpu := s.CPU
		if pr.kept != nil {
			rt.mu.Lock()
			base := pr.base
			rt.mu.Unlock()
			if base != nil {
				<-base.read // read right after the predecessor's exit
				cpu = max(cpu-base.cpu, 0)
			}
		}
		st.Usage = Usage{CPU: cpu, MemoryCurrent: s.MemoryCurrent, MemoryPeak: s.MemoryPeak}
	}
}

func (rt *Runtime) statusLocked(pr *procRec) ProcessStatus {
	st := ProcessStatus{
		ID: pr.id, Sandbox: pr.sb.id, State: pr.stateLocked(),
		CreatedAt: pr.created, StartedAt: pr.startAt, FinishedAt: pr.finishAt,
		Message: pr.message,
	}
	if pr.proc != nil {
		st.Pid = pr.proc.Pid()
	}
	if pr.ended {
		st.ExitCode, st.Signal, st.OOMKilled = pr.code, pr.signal, pr.oom
		st.Usage = pr.usage
	}
	return st
}

// SignalProcess sends sig to the main process. Not running:
// ErrFailedPrecondition.
func (rt *Runtime) SignalProcess(id string, sig syscall.Signal) error {
	p, err := rt.runningProc(id)
	if err != nil {
		return err
	}
	if err := p.Signal(sig); err != nil {
		return fmt.Errorf("signalling process %q: %w", id, err)
	}
	return nil
}

// KillProcessTree sends sig to every process of the tree. It works after
// the main process exited too (to reach leftovers).
func (rt *Runtime) KillProcessTree(id string, sig syscall.Signal) error {
	rt.mu.Lock()
	pr, err := rt.getProc(id)
	var (
		p    *proc.Process
		gone bool
	)
	if err == nil {
		p, gone = pr.proc, pr.treeGone
	}
	rt.mu.Unlock()
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("process %q never started: %w", id, ErrFailedPrecondition)
	}
	if gone {
		return nil // exited, and its cgroup seen empty since: nothing to signal
	}
	if err := p.KillTree(sig); err != nil && !errors.Is(err, proc.ErrProcessDone) {
		return fmt.Errorf("signalling the tree of process %q: %w", id, err)
	}
	if sig == unix.SIGKILL && pr.cg != nil {
		rt.mu.Lock()
		if pr.ended {
			pr.treeGone = true
		}
		rt.mu.Unlock()
	}
	return nil
}

// ProcessTreeEmpty reports whether an exited process left nothing
// running in its cgroup, from one read of cgroup.events, and if so
// records its tree as gone, as a successful KillProcessTree after the exit
// does: its later tree kills and its removal then read nothing. It never
// signals or waits, so the reaper's goroutine may call it from an exit's
// callback. false means "not known empty" (still running, no cgroup2,
// something left, or a newer record already holds its kept cgroup): kill
// the tree as usual.
func (rt *Runtime) ProcessTreeEmpty(id string) bool {
	rt.mu.Lock()
	pr, err := rt.getProc(id)
	if err != nil || !pr.ended || pr.proc == nil || pr.cg == nil {
		rt.mu.Unlock()
		return false
	}
	gone := pr.treeGone
	rt.mu.Unlock()
	if gone {
		return true
	}
	empty := false
	if k := pr.kept; k != nil {
		k.mu.Lock() // as keptTree: only while pr still holds the cgroup
		if k.holder == pr {
			if r := k.ready.Load(); r != nil {
				empty = r.TreeEmpty()
			} else {
				empty = k.cg.TreeEmpty()
			}
		}
		k.mu.Unlock()
	} else {
		empty = pr.cg.TreeEmpty()
	}
	if empty {
		rt.mu.Lock()
		pr.treeGone = true
		rt.mu.Unlock()
	}
	return empty
}

func (rt *Runtime) runningProc(id string) (*proc.Process, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	pr, err := rt.getProc(id)
	if err != nil {
		return nil, err
	}
	if pr.ended || pr.proc == nil {
		return nil, fmt.Errorf("process %q is %s: %w", id, pr.stateLocked(), ErrFailedPrecondition)
	}
	return pr.proc, nil
}

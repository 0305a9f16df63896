package proc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Cmd describes a process to start.
type Cmd struct {
	// Path is the program. Without a slash it is looked up in the PATH of
	// Env (or of podsup's environment when Env is nil).
	Path string
	// Args is argv, including argv[0]; empty means [Path].
	Args []string
	RunAs
	// Credential, when not nil, is the uid, gid and supplementary groups
	// to run as, used as they are (no lookup); User and Group are then
	// ignored.
	Credential *syscall.Credential
	// NotRoot refuses to start the command (ErrWouldRunAsRoot) when it
	// would run as uid 0: its User, or podsup's own uid without one.
	NotRoot bool
	// NoNewPrivs starts the command with PR_SET_NO_NEW_PRIVS: neither it
	// nor anything it execs gains privileges through setuid or file
	// capabilities. It is Security.NoNewPrivs for a caller that sets
	// nothing else.
	NoNewPrivs bool
	// Security, when not nil, narrows what the command may do
	// (security.go).
	Security *Security
	// Stdin, Stdout and Stderr become fds 0-2; nil means /dev/null.
	Stdin, Stdout, Stderr *os.File
	// ExtraFiles become fds 3, 4, ...
	ExtraFiles []*os.File
	// Foreground makes the process group the foreground group of the
	// controlling terminal on Stdin (job control, ^C). Ignored when Stdin
	// is not podsup's controlling terminal.
	Foreground bool
	// Cloneflags are extra clone(2) flags, e.g. CLONE_NEWPID.
	Cloneflags uintptr
	// UidMappings and GidMappings, with CLONE_NEWUSER in Cloneflags, are
	// the new user namespace's maps, written by this process between the
	// fork and the exec (so the child execs as a mapped uid and keeps
	// the namespace's capabilities). setgroups stays allowed: a
	// privileged writer may map groups without denying it.
	UidMappings, GidMappings []syscall.SysProcIDMap
	// CgroupFD, when >= 0 and UseCgroupFD is set, places the child in that
	// cgroup2 directory at fork (clone3 CLONE_INTO_CGROUP).
	UseCgroupFD bool
	CgroupFD    int
	// Forker runs the fork on a thread of its choosing (a sandbox's
	// namespace thread, or HostForker's lean thread); nil forks from the
	// calling goroutine.
	Forker Forker
	// Tree, when set, replaces the process group as the way KillTree
	// reaches every descendant (a cgroup, say).
	Tree TreeKiller
	// OnExit is called once, from the reaper goroutine, when the exit is
	// known. It must not block: post the exit somewhere and return.
	OnExit func(Exit)
}

// Forker runs fork on a particular OS thread, e.g. one that has entered a
// sandbox's namespaces. Fork must call fn on that thread and return its error.
type Forker interface {
	Fork(fn func() error) error
}

// Resolver is a Forker that also wants Start's lookups (the program in
// PATH, User and Group in /etc/passwd and /etc/group) to run on its thread:
// a sandbox with a mount namespace has its own /usr/bin and /etc. Resolve
// must call fn on that thread and return its error.
type Resolver interface {
	Resolve(fn func() error) error
}

// Errors Start returns, wrapped in a *StartError.
var (
	ErrCommandNotFound = errors.New("command not found")
	ErrNotExecutable   = errors.New("permission denied")
)

// StartError says which command could not be started and why.
type StartError struct {
	Path string
	Err  error
}

func (e *StartError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// StartErrorExitCode is the exit code a supervisor records for a process
// that could not be started, whatever the cause: containerd's CRI records
// 128 with reason StartError. podsup's supervisor and sandbox runtime use
// it (both export it under the same name); podsup run, a wrapper, keeps
// the shell's codes instead (ExitCodeForStartError).
const StartErrorExitCode = 128

// ExitCodeForStartError is the shell's convention: 127 when the command
// does not exist, 126 when it exists but cannot be executed, 1 otherwise.
func ExitCodeForStartError(err error) int {
	switch {
	case errors.Is(err, ErrCommandNotFound):
		return 127
	case errors.Is(err, ErrNotExecutable):
		return 126
	default:
		return 1
	}
}

// Process is a started process. Its methods are safe for concurrent use.
type Process struct {
	pid  int
	pgid int
	tree TreeKiller
	// pidfd is the pidfd from the fork, kept only until the pid is
	// registered with the reaper; -1 afterwards.
	pidfd int

	done   chan struct{}
	exit   Exit
	onExit func(Exit)
	// onEnd, when set, releases the profile thread the process was
	// started from (profilethread.go).
	onEnd func()
}

// testHookBeforeRegister, when set by a test, runs between a successful
// fork+exec and the registration of the pid: it lets a test have the child
// exit and be reaped before Start has recorded it.
var testHookBeforeRegister func(pid int)

// Start starts c. On success the process runs in its own process group and
// its exit will be reaped by the package's one reaper.
func Start(c *Cmd) (*Process, error) { return start(c, false) }

// StartForParent starts c as Start does, with every setting of c applied
// the same way, but as a child of the caller's parent (CLONE_PARENT): a
// sandbox holder inside a user namespace starts the sandbox's processes
// for podsup, which reaps them (Adopt). The pid is not registered here and
// OOMScoreAdj is left to the adopter; the caller owns pidfd. It fails
// with EINVAL in the init of a PID namespace, which the kernel refuses
// CLONE_PARENT.
func StartForParent(c *Cmd) (pid, pidfd int, err error) {
	p, err := start(c, true)
	if err != nil {
		return 0, -1, err
	}
	return p.pid, p.pidfd, nil
}

func start(c *Cmd, forParent bool) (*Process, error) {
	r := getReaper()
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	var (
		path string
		cred *syscall.Credential
	)
	resolve := func() (err error) {
		if c.Credential != nil {
			cred = c.Credential
		} else if cred, err = credential(c.User, c.Group, c.Groups); err != nil {
			return err
		}
		// The command is looked up as the user it runs as: a PATH entry
		// that user cannot search or execute is skipped (lookpath.go).
		if path, err = lookPathAs(c.Path, env, c.Dir, cred); err != nil {
			return err
		}
		if c.NotRoot && (cred == nil && os.Getuid() == 0 || cred != nil && cred.Uid == 0) {
			return ErrWouldRunAsRoot
		}
		return nil
	}
	var err error
	if r, ok := c.Forker.(Resolver); ok {
		err = r.Resolve(resolve)
	} else {
		err = resolve()
	}
	if err != nil {
		return nil, &StartError{Path: c.Path, Err: err}
	}
	args := c.Args
	if len(args) == 0 {
		args = []string{c.Path}
	}
	files, err := stdFiles(c)
	if err != nil {
		return nil, &StartError{Path: c.Path, Err: err}
	}
	pidfd := -1
	sys := &syscall.SysProcAttr{
		Setpgid:     true,
		Credential:  cred,
		Cloneflags:  c.Cloneflags,
		UidMappings: c.UidMappings,
		GidMappings: c.GidMappings,
		PidFD:       &pidfd,
		UseCgroupFD: c.UseCgroupFD,
		CgroupFD:    c.CgroupFD,
	}
	if len(c.GidMappings) > 0 {
		sys.GidMappingsEnableSetgroups = true
	}
	if forParent {
		sys.Cloneflags |= unix.CLONE_PARENT
	}
	if c.Foreground && c.Stdin != nil && isControllingTTY(int(c.Stdin.Fd())) {
		sys.Foreground = true
		sys.Ctty = int(c.Stdin.Fd())
	}
	sec := c.security()
	var (
		thread   *profileThread
		threadTP *threadProfile // fork on a thread of this profile
		threadNS Namespaces     // in these namespaces
		nsf      NamespaceForker
		pre      preexec
		procfd   = -1
	)
	if sec != nil {
		if err := sec.validate(); err != nil {
			return nil, &StartError{Path: c.Path, Err: err}
		}
		tp := threadProfile{caps: sec.Capabilities, nnp: sec.NoNewPrivs, umask: sec.Umask, seccomp: sec.Seccomp}
		pre.rlimits = sec.Rlimits
		if sec.Seccomp != nil && (len(sec.Rlimits) > 0 || sec.Seccomp.KillsUnlisted || c.UseCgroupFD && !sec.Seccomp.AllowsClone3) {
			// The shim runs anyway, or the fork is a clone3 the filter
			// would deny: the shim installs it (preexec.go).
			tp.seccomp, pre.seccomp = nil, sec.Seccomp
		}
		if sec.Capabilities != nil && !runsAsRoot(cred) {
			sys.AmbientCaps = sec.Capabilities.list()
		}
		if sec.OOMScoreAdj != nil && !forParent {
			if procfd, err = procDir(); err != nil {
				return nil, &StartError{Path: c.Path, Err: &SecurityError{Setting: "oom_score_adj", Err: err}}
			}
		}
		if !tp.empty() {
			if c.Forker != nil {
				var ok bool
				if nsf, ok = c.Forker.(NamespaceForker); !ok {
					return nil, &StartError{Path: c.Path, Err: &SecurityError{Setting: "thread", Err: fmt.Errorf("%T cannot fork on a thread of a security profile: it is not a NamespaceForker", c.Forker)}}
				}
				threadNS = nsf.Namespaces()
			}
			threadTP = &tp
		}
	}
	if pre.needed() {
		path, args = preexecArgv(pre, path, args)
	}
	attr := &syscall.ProcAttr{Dir: c.Dir, Env: env, Files: files, Sys: sys}
	p := &Process{done: make(chan struct{}), onExit: c.OnExit}

	registered := false
	fork := func() error {
		if forParent {
			release := theForkGate.enter()
			pid, err := forkExecLean(path, args, attr)
			release()
			if err != nil {
				return err
			}
			p.pid, p.pgid, p.pidfd = pid, pid, pidfd
			return nil
		}
		s := r.subscribe()
		release := theForkGate.enter()
		pid, err := forkExecLean(path, args, attr)
		release()
		if err != nil {
			r.abandon(s)
			return err
		}
		p.pid, p.pgid, p.pidfd = pid, pid, pidfd
		var oomErr error
		if procfd >= 0 {
			if oomErr = writeOOMScoreAdj(procfd, pid, *sec.OOMScoreAdj); oomErr != nil {
				// Not started as asked: it goes, and its exit with it.
				_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
				p.onExit = nil
			}
		}
		if testHookBeforeRegister != nil {
			testHookBeforeRegister(pid)
		}
		r.register(s, p)
		registered = true
		// The pidfd told this child's exit from an earlier process's with
		// the same pid while registering; signals open their own
		// (WithPidfd), so a running process holds no fd.
		_ = unix.Close(pidfd) // a pidfd: nothing to flush
		p.pidfd = -1
		if oomErr != nil {
			return &SecurityError{Setting: "oom_score_adj", Err: oomErr}
		}
		return nil
	}
	switch {
	case threadTP != nil:
		thread, err = forkOnProfileThread(threadNS, *threadTP, func(t *profileThread) error {
			if !forParent {
				p.onEnd = t.release // before the fork registers p: its exit may come at once
			}
			if nsf != nil {
				return nsf.ForkHere(fork)
			}
			return fork()
		})
	case c.Forker != nil:
		err = c.Forker.Fork(fork)
	default:
		err = fork()
	}
	if forParent && thread != nil {
		// The child is the parent's to reap: this process never learns
		// of its exit. It has what the thread gave it already; the
		// thread lives on, idle, for the next start of its profile.
		thread.release()
	}
	if err != nil {
		if thread != nil && !registered && !forParent {
			thread.release()
		}
		var se *SecurityError
		if errors.As(err, &se) {
			return nil, &StartError{Path: c.Path, Err: err}
		}
		if pre.needed() && (err == syscall.ENOENT || err == syscall.ENOTDIR) {
			// The command itself was not looked at: the working
			// directory and /proc/self/exe were.
			why := fmt.Sprintf("with rlimits or this seccomp filter, a command starts through %s, and there is no /proc here: mount one in the sandbox (mount \"proc\" \"/proc\" {})", selfExe)
			if c.Dir != "" {
				why = fmt.Sprintf("its working directory %s does not exist, or %s", c.Dir, why)
			}
			return nil, &StartError{Path: c.Path, Err: fmt.Errorf("%w: %s", ErrNotExecutable, why)}
		}
		if err == syscall.ENOENT && c.Dir != "" && c.missingDir() {
			return nil, &StartError{Path: c.Path, Err: fmt.Errorf("%w: its working directory %s does not exist", ErrCommandNotFound, c.Dir)}
		}
		return nil, &StartError{Path: c.Path, Err: classifyExecError(forkFDError(err, files))}
	}
	p.tree = c.Tree
	if p.tree == nil {
		p.tree = processGroup{p}
	}
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.pid }

// Signal sends sig to the process through a pidfd (WithPidfd). After the
// exit is known it returns ErrProcessDone and signals nothing.
func (p *Process) Signal(sig syscall.Signal) error {
	return p.WithPidfd(func(pidfd int) error { return signalPidfd(pidfd, sig, 0) })
}

// WithPidfd calls fn with a pidfd naming the process, opened for the call
// and closed after it (ErrProcessDone once the process has ended, fn not
// called): a process costs podsup no fd between signals, which
// is what lets one podsup run tens of thousands of them within its
// RLIMIT_NOFILE. The pidfd names this very process, never a later user of
// its number: the process is still registered with the reaper after the
// pidfd was opened, and the reaper unregisters a pid in the same critical
// section as the wait4 that reaps it, so the process was not reaped when
// the pidfd was opened and its number could not have been reused.
//
// No system call runs under the reaper's lock: with thousands of processes
// stopping at once, signals that opened, checked and sent under it queued
// behind each other and starved the reaper (10,000 stopping took 13 s, most
// of it with their exits waiting to be reaped).
func (p *Process) WithPidfd(fn func(pidfd int) error) error {
	fd, err := p.OpenPidfd()
	if err != nil {
		return err
	}
	defer unix.Close(fd) // a pidfd: nothing to flush
	return fn(fd)
}

// OpenPidfd returns a new pidfd naming the process, as WithPidfd opens
// one, for a caller that signals it often (podsup run's signal thread):
// the caller owns it and closes it. ErrProcessDone once the exit is known.
func (p *Process) OpenPidfd() (int, error) {
	r := getReaper()
	if !r.owns(p) {
		return -1, ErrProcessDone // its exit has been dispatched
	}
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err == unix.ESRCH {
		return -1, ErrProcessDone // reaped; the exit is on its way
	}
	if err != nil {
		return -1, fmt.Errorf("opening a pidfd for pid %d: %w", p.pid, err)
	}
	if !r.owns(p) {
		_ = unix.Close(fd)        // a pidfd: nothing to flush
		return -1, ErrProcessDone // reaped before the open: fd may name another process
	}
	return fd, nil
}

// KillTree sends sig to every process of the tree: the process group by
// default, or the Tree given in Cmd.
func (p *Process) KillTree(sig syscall.Signal) error { return p.tree.KillTree(sig) }

// Done is closed when the exit is known.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit is how the process ended; valid once Done is closed.
func (p *Process) Exit() Exit {
	<-p.done
	return p.exit
}

// Wait blocks until the exit is known or ctx ends.
func (p *Process) Wait(ctx context.Context) (Exit, error) {
	select {
	case <-p.done:
		return p.exit, nil
	case <-ctx.Done():
		return Exit{}, ctx.Err()
	}
}

// Close releases nothing: a Process holds no fd (WithPidfd). It stays for
// callers that release what they started.
func (p *Process) Close() error { return nil }

// exited runs on the reaper goroutine.
func (p *Process) exited(e Exit) {
	p.exit = e
	close(p.done)
	if p.onEnd != nil {
		p.onEnd()
	}
	if p.onExit != nil {
		p.onExit(e)
	}
}

func classifyExecError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == syscall.ENOENT || err == syscall.ENOTDIR:
		return fmt.Errorf("%w (%v)", ErrCommandNotFound, err)
	case err == syscall.EACCES:
		return ErrNotExecutable
	case err == syscall.ENOEXEC || err == syscall.EISDIR || err == syscall.EPERM:
		return fmt.Errorf("%w (%v)", ErrNotExecutable, err)
	}
	return err
}

func stdFiles(c *Cmd) ([]uintptr, error) {
	files := make([]uintptr, 0, 3+len(c.ExtraFiles))
	for _, f := range []*os.File{c.Stdin, c.Stdout, c.Stderr} {
		if f == nil {
			var err error
			if f, err = sharedDevNull(); err != nil {
				return nil, err
			}
		}
		files = append(files, f.Fd())
	}
	for _, f := range c.ExtraFiles {
		files = append(files, f.Fd())
	}
	return files, nil
}

// isControllingTTY reports whether fd is a terminal this process controls;
// asking the kernel to hand a terminal to the child otherwise fails the
// whole fork (ENOTTY).
func isControllingTTY(fd int) bool {
	_, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return err == nil
}

func credential(userName, groupName string, groups []string) (*syscall.Credential, error) {
	if userName == "" && groupName == "" && len(groups) == 0 {
		return nil, nil
	}
	cred := &syscall.Credential{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()), NoSetGroups: true}
	if userName != "" {
		u, err := lookupUser(userName)
		if err != nil {
			return nil, err
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		cred.Uid, cred.Gid = uint32(uid), uint32(gid)
		cred.NoSetGroups = false
		if ids, err := u.GroupIds(); err == nil {
			for _, id := range ids {
				if g, err := strconv.ParseUint(id, 10, 32); err == nil {
					cred.Groups = append(cred.Groups, uint32(g))
				}
			}
		}
	}
	if groupName != "" {
		gid, err := lookupGroup(groupName)
		if err != nil {
			return nil, err
		}
		cred.Gid = gid
	}
	if len(groups) > 0 {
		if cred.NoSetGroups { // podsup's own user: its groups are podsup's
			cred.NoSetGroups = false
			own, err := unix.Getgroups()
			if err != nil {
				return nil, fmt.Errorf("reading podsup's groups: %w", err)
			}
			for _, g := range own {
				cred.Groups = append(cred.Groups, uint32(g))
			}
		}
		for _, name := range groups {
			gid, err := lookupGroup(name)
			if err != nil {
				return nil, fmt.Errorf("supplementary group: %w", err)
			}
			if !slices.Contains(cred.Groups, gid) {
				cred.Groups = append(cred.Groups, gid)
			}
		}
	}
	return cred, nil
}

func lookupUser(name string) (*user.User, error) {
	if _, err := strconv.ParseUint(name, 10, 32); err == nil {
		if u, err := user.LookupId(name); err == nil {
			return u, nil
		}
		// A numeric uid without a passwd entry is valid (containers).
		return &user.User{Uid: name, Gid: name}, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("unknown user %q: %w", name, err)
	}
	return u, nil
}

func lookupGroup(name string) (uint32, error) {
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		return uint32(n), nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, fmt.Errorf("unknown group %q: %w", name, err)
	}
	n, _ := strconv.ParseUint(g.Gid, 10, 32)
	return uint32(n), nil
}

// security is c's Security, with NoNewPrivs folded in; nil when neither
// asks for anything.
func (c *Cmd) security() *Security {
	if !c.NoNewPrivs {
		return c.Security
	}
	s := Security{}
	if c.Security != nil {
		s = *c.Security
	}
	s.NoNewPrivs = true
	return &s
}

// runsAsRoot reports whether a command started with cred runs as uid 0.
func runsAsRoot(cred *syscall.Credential) bool {
	if cred == nil {
		return os.Getuid() == 0
	}
	return cred.Uid == 0
}

// missingDir reports whether c's working directory is missing, looked at
// where the command would have started (a sandbox's files).
func (c *Cmd) missingDir() bool {
	missing := false
	look := func() error {
		_, err := os.Stat(c.Dir)
		missing = errors.Is(err, fs.ErrNotExist)
		return nil
	}
	if r, ok := c.Forker.(Resolver); ok {
		_ = r.Resolve(look) // its error is look's: none
	} else {
		_ = look()
	}
	return missing
}

// procDir is an fd of podsup's own /proc, opened once on a thread in
// podsup's namespaces: a fork on a sandbox's thread sees the sandbox's
// /proc, where podsup's pids mean nothing.
var procDir = sync.OnceValues(func() (int, error) {
	fd, err := unix.Open("/proc", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening /proc: %w", err)
	}
	return fd, nil
})

func writeOOMScoreAdj(procfd, pid, adj int) error {
	fd, err := unix.Openat(procfd, strconv.Itoa(pid)+"/oom_score_adj", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd) // a proc file: the write below is what counts
	_, err = unix.Write(fd, []byte(strconv.Itoa(adj)))
	return err
}

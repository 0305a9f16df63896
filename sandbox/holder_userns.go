package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// A sandbox with a user namespace of its own (spec.Sandbox.UserNamespace).
//
// podsup's namespace thread cannot join it: the kernel refuses
// setns(CLONE_NEWUSER) to a multithreaded process, and podsup is one. So
// the holder, cloned into the user namespace with the sandbox's other
// namespaces (podsup writes its maps between that clone and its exec),
// starts the sandbox's processes itself, on podsup's request:
//
//	podsup                                  holder (in the user namespace)
//	------                                  ------
//	Adopt: the reaper holds unknown exits
//	spawnRequest + fds (SCM_RIGHTS) ──────► StartForParent: proc's own start,
//	                                        with the security profile's
//	                                        thread or pre-exec shim, forked
//	                                        with CLONE_PARENT|CLONE_PIDFD
//	                                        from inside the process's
//	                                        cgroups (threadPlacer)
//	register pid ◄──────────────────────── spawnReply{Pid} + pidfd
//
// The child's parent is podsup (CLONE_PARENT): podsup's one reaper
// collects its exit, pidfds and cgroup trees work as for any process.
//
// CLONE_PARENT is refused to the init of a PID namespace, so with one the
// holder is not its init: it stays in podsup's PID namespace, unshares
// CLONE_NEWPID on one locked thread (pidThread) and forks a holder of the
// classic kind from it first, which becomes PID 1: it makes the mounts
// (its /proc is the sandbox's), reaps the sandbox's orphans and, when it
// exits, ends the PID namespace. Every later fork from that thread (and
// from a profile thread that entered the namespace through the init's
// pidfd) lands in it.

// holderSpawnFD is where a holder in a user namespace finds its end of
// the spawn socket (Cmd.ExtraFiles[1]), a SOCK_SEQPACKET socket: one
// request or reply per message, with its fds.
const holderSpawnFD = 4

// maxSpawnMessage bounds a spawn request (its environment and argv).
const maxSpawnMessage = 1 << 20

// spawnRequest is a proc.Cmd as it crosses the spawn socket. Its fds come
// with it, in this order: stdin, stdout, stderr (those Stdio marks),
// Extra extra files, the "cgroup.procs" files of the target's cgroup2
// directory and of the holder's own (Procs), then V1 "tasks" files of the
// target's v1 cgroups and V1 of the holder's own.
type spawnRequest struct {
	Path string   `json:"path"`
	Args []string `json:"args,omitempty"`
	proc.RunAs
	Credential *syscall.Credential `json:"credential,omitempty"`
	NotRoot    bool                `json:"not_root,omitempty"`
	NoNewPrivs bool                `json:"no_new_privs,omitempty"`
	Security   *proc.Security      `json:"security,omitempty"`
	Stdio      [3]bool             `json:"stdio"`
	Extra      int                 `json:"extra,omitempty"`
	Procs      bool                `json:"procs,omitempty"`
	V1         int                 `json:"v1,omitempty"`
}

// spawnReply carries the child's pid (in podsup's PID namespace, which
// is the holder's) and, with it, its pidfd; or why there is none. Kind
// tells proc's error classes apart: "not_found", "not_executable",
// "as_root", "security" (with Setting).
type spawnReply struct {
	Pid     int    `json:"pid,omitempty"`
	Error   string `json:"error,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Setting string `json:"setting,omitempty"`
}

// userNSHolderMain is HolderMain's life for a holder in a user namespace:
// set up (itself, or through the init it starts), say ready, start
// processes until EOF, then end the init and wait for it.
func userNSHolderMain(cfg holderConfig, ctl *os.File) int {
	// Caught and dropped rather than ignored: an ignored signal stays
	// ignored in the children it starts, through their exec, and a
	// process must get SIGTERM as it would anywhere else. The Go runtime
	// resets the signals it catches to their defaults in a child.
	signal.Reset(holderIgnores...)
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, holderIgnores...)
	go func() {
		for range sigs {
		}
	}()
	var (
		pt      *pidThread
		init    *proc.Process
		initCtl *os.File
		err     error
	)
	if cfg.PID {
		if pt, err = startPidThread(); err == nil {
			init, initCtl, err = startInit(pt, cfg)
		}
	} else {
		err = holderSetup(cfg)
	}
	reply := holderReply{}
	if err != nil {
		reply.Error = err.Error()
	}
	b, _ := json.Marshal(reply) // a struct of one string always marshals
	if _, werr := ctl.Write(append(b, '\n')); werr != nil || err != nil {
		return 1
	}
	srv := &spawnServer{pt: pt}
	if init != nil {
		srv.ns = &pidNS{init: init}
	}
	go srv.serve(os.NewFile(holderSpawnFD, "podsup-spawn"))
	eof := make(chan struct{})
	go func() {
		buf := make([]byte, 512)
		for {
			if _, err := ctl.Read(buf); err != nil {
				close(eof)
				return
			}
		}
	}()
	var initDone <-chan struct{}
	if init != nil {
		initDone = init.Done()
	}
	select {
	case <-eof:
		if init != nil {
			_ = initCtl.Close() // EOF ends the init, and with it the PID namespace
			select {
			case <-init.Done():
			case <-time.After(10 * time.Second):
				_ = init.Signal(unix.SIGKILL)
				<-init.Done()
			}
		}
		return 0
	case <-initDone:
		return 1 // the sandbox's PID namespace is gone: so is the sandbox
	}
}

// startInit starts the PID namespace's init from pt, a holder of the
// classic kind that sets the sandbox up, and returns once it is ready.
func startInit(pt *pidThread, cfg holderConfig) (*proc.Process, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the init's control socket: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "podsup-init-control")
	theirs := os.NewFile(uintptr(fds[1]), "podsup-init-control")
	p, err := proc.Start(&proc.Cmd{
		Path:       selfExe,
		Args:       []string{selfExe, HolderArg},
		Stderr:     os.Stderr,
		ExtraFiles: []*os.File{theirs},
		Forker:     pt,
	})
	_ = theirs.Close() // the init has it now; our copy would hide its EOF
	if err != nil {
		_ = ours.Close()
		return nil, nil, fmt.Errorf("starting the PID namespace's init: %w", err)
	}
	cfg.UserNS, cfg.PID = false, false
	b, err := json.Marshal(cfg)
	if err == nil {
		_, err = ours.Write(append(b, '\n'))
	}
	var line []byte
	if err == nil {
		line, err = bufio.NewReader(ours).ReadBytes('\n')
	}
	var reply holderReply
	if err == nil {
		err = json.Unmarshal(line, &reply)
	}
	if err == nil && reply.Error != "" {
		err = errors.New(reply.Error)
	}
	if err != nil {
		_ = ours.Close() // EOF: it exits, if it runs still
		<-p.Done()
		return nil, nil, err
	}
	return p, ours, nil
}

// selfExe is the holder's own binary, for the init it starts: before the
// init's setup, /proc is still the host's.
const selfExe = "/proc/self/exe"

// pidThread is a goroutine locked for good to an OS thread that unshared
// CLONE_NEWPID: its first child is the namespace's init, every later one
// a process in it. Like nsThread, never the main thread.
type pidThread struct {
	jobs chan func()
}

func startPidThread() (*pidThread, error) {
	t := &pidThread{jobs: make(chan func())}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, except on the main thread
		if unix.Gettid() != unix.Getpid() {
			t.serve(ready, nil)
			return
		}
		locked := make(chan struct{})
		go t.serve(ready, locked)
		<-locked
		runtime.UnlockOSThread()
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return t, nil
}

func (t *pidThread) serve(ready chan<- error, locked chan<- struct{}) {
	if locked != nil {
		runtime.LockOSThread() // never unlocked
		close(locked)
	}
	if unix.Gettid() == unix.Getpid() {
		ready <- errors.New("unsharing the PID namespace: refusing to taint the main thread")
		return
	}
	if err := unix.Unshare(unix.CLONE_NEWPID); err != nil {
		ready <- fmt.Errorf("unsharing the PID namespace: %w", err)
		return
	}
	ready <- nil
	for j := range t.jobs {
		j()
	}
}

// Fork runs fn on the thread (proc.Forker).
func (t *pidThread) Fork(fn func() error) error {
	errc := make(chan error, 1)
	t.jobs <- func() { errc <- fn() }
	return <-errc
}

// pidNS is the sandbox's PID namespace as a profile thread enters it
// (proc.Namespaces): through its init's pidfd.
type pidNS struct{ init *proc.Process }

func (n *pidNS) Enter() error {
	return n.init.WithPidfd(func(pidfd int) error {
		if err := unix.Setns(pidfd, unix.CLONE_NEWPID); err != nil {
			return fmt.Errorf("entering the sandbox's PID namespace: %w", err)
		}
		return nil
	})
}

func (n *pidNS) Gone() <-chan struct{} { return n.init.Done() }

// threadPlacer places a fork in the cgroups podsup opened for it, through
// the files podsup opened (the kernel checks the opener's rights, not the
// holder's). clone3's CLONE_INTO_CGROUP cannot be used: the kernel
// refuses CLONE_PARENT to a clone3 with an exit signal, and Go's always
// has one. So the holder moves into the cgroup2 directory whole (it
// forks one child at a time) and its forking thread into the v1 ones, as
// cgroups.Placement does in podsup, forks, and moves back to its own
// cgroups (podsup placed it in a cgroup of its own, "holder+ID").
type threadPlacer struct {
	procsEnter, procsLeave *os.File
	enter, leave           []*os.File
}

func (pl threadPlacer) Fork(fn func() error) error {
	if pl.procsEnter == nil && len(pl.enter) == 0 {
		return fn()
	}
	runtime.LockOSThread()
	tid := []byte(strconv.Itoa(unix.Gettid()))
	var errs []error
	entered := 0
	movedProcess := false
	if pl.procsEnter != nil {
		if _, err := pl.procsEnter.WriteAt([]byte("0"), 0); err != nil {
			errs = append(errs, fmt.Errorf("moving into the process's cgroup: %w", err))
		} else {
			movedProcess = true
		}
	}
	for _, f := range pl.enter {
		if len(errs) > 0 {
			break
		}
		if _, err := f.WriteAt(tid, 0); err != nil {
			errs = append(errs, fmt.Errorf("moving the spawning thread into a cgroup: %w", err))
			break
		}
		entered++
	}
	if len(errs) == 0 {
		errs = append(errs, fn())
	}
	stranded := false
	for _, f := range pl.leave[:entered] {
		if _, err := f.WriteAt(tid, 0); err != nil {
			errs = append(errs, fmt.Errorf("moving the spawning thread back: %w", err))
			stranded = true
		}
	}
	if movedProcess {
		if _, err := pl.procsLeave.WriteAt([]byte("0"), 0); err != nil {
			errs = append(errs, fmt.Errorf("moving back to the holder's cgroup: %w", err))
		}
	}
	if !stranded {
		runtime.UnlockOSThread()
	}
	return errors.Join(errs...)
}

// spawnForker forks a spawn's child: on the PID thread (nil: any thread,
// without a PID namespace), placed by pl.
type spawnForker struct {
	pt *pidThread
	ns *pidNS
	pl threadPlacer
}

func (f spawnForker) Fork(fn func() error) error {
	if f.pt == nil {
		return f.pl.Fork(fn)
	}
	return f.pt.Fork(func() error { return f.pl.Fork(fn) })
}

// Namespaces is the PID namespace, which a profile thread enters; the
// holder's other namespaces are every thread's already.
func (f spawnForker) Namespaces() proc.Namespaces {
	if f.ns == nil {
		return nil
	}
	return f.ns
}

func (f spawnForker) ForkHere(fn func() error) error { return f.pl.Fork(fn) }

// spawnServer answers spawn requests, one at a time.
type spawnServer struct {
	pt *pidThread
	ns *pidNS
}

func (s *spawnServer) serve(sock *os.File) {
	fd := int(sock.Fd())
	buf := make([]byte, maxSpawnMessage)
	oob := make([]byte, unix.CmsgSpace(4*maxSpawnFDs))
	for {
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return // podsup is gone; the control socket's EOF ends us
		}
		fds := receivedFDs(oob[:oobn])
		var reply spawnReply
		pidfd := -1
		var req spawnRequest
		if err := json.Unmarshal(buf[:n], &req); err != nil {
			reply.Error = fmt.Sprintf("decoding spawn request: %v", err)
			closeFDs(fds)
		} else {
			var err error
			reply.Pid, pidfd, err = s.spawn(req, fds)
			reply.setError(err)
		}
		b, _ := json.Marshal(reply) // strings and an int always marshal
		var rights []byte
		if pidfd >= 0 {
			rights = unix.UnixRights(pidfd)
		}
		err = unix.Sendmsg(fd, b, rights, nil, 0)
		if pidfd >= 0 {
			_ = unix.Close(pidfd) // podsup has its own now; a pidfd: nothing to flush
		}
		if err != nil {
			return
		}
	}
}

// maxSpawnFDs is the kernel's limit on fds in one message (SCM_MAX_FD).
const maxSpawnFDs = 253

func receivedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd) // received copies: nothing to flush
	}
}

// spawn starts req with fds (which it closes) and returns the child's
// pid and pidfd.
func (s *spawnServer) spawn(req spawnRequest, fds []int) (int, int, error) {
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), "spawn-fd-"+strconv.Itoa(i))
	}
	defer func() {
		for _, f := range files {
			_ = f.Close() // copies received for this spawn
		}
	}()
	want := req.Extra + 2*req.V1
	for _, set := range req.Stdio {
		if set {
			want++
		}
	}
	if req.Procs {
		want += 2
	}
	if want != len(fds) {
		return 0, -1, fmt.Errorf("spawn request with %d fds, %d announced", len(fds), want)
	}
	k := 0
	next := func() *os.File { k++; return files[k-1] }
	c := &proc.Cmd{Path: req.Path, Args: req.Args, RunAs: req.RunAs, Credential: req.Credential,
		NotRoot: req.NotRoot, NoNewPrivs: req.NoNewPrivs, Security: req.Security}
	if req.Stdio[0] {
		c.Stdin = next()
	}
	if req.Stdio[1] {
		c.Stdout = next()
	}
	if req.Stdio[2] {
		c.Stderr = next()
	}
	for range req.Extra {
		c.ExtraFiles = append(c.ExtraFiles, next())
	}
	var pl threadPlacer
	if req.Procs {
		pl.procsEnter, pl.procsLeave = next(), next()
	}
	for range req.V1 {
		pl.enter = append(pl.enter, next())
	}
	for range req.V1 {
		pl.leave = append(pl.leave, next())
	}
	c.Forker = spawnForker{pt: s.pt, ns: s.ns, pl: pl}
	return proc.StartForParent(c)
}

func (r *spawnReply) setError(err error) {
	if err == nil {
		return
	}
	var se *proc.StartError
	if errors.As(err, &se) {
		err = se.Err
	}
	r.Error = err.Error()
	var sec *proc.SecurityError
	switch {
	case errors.As(err, &sec):
		r.Kind, r.Setting, r.Error = "security", sec.Setting, sec.Err.Error()
	case errors.Is(err, proc.ErrCommandNotFound):
		r.Kind = "not_found"
	case errors.Is(err, proc.ErrNotExecutable):
		r.Kind = "not_executable"
	case errors.Is(err, proc.ErrWouldRunAsRoot):
		r.Kind = "as_root"
	}
}

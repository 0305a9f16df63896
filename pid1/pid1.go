// Package pid1 owns the duties of an init process for one command: start
// it in the foreground, forward every signal podsup receives to it, reap
// every zombie (through package proc's reaper, as PID 1 or as a child
// subreaper), and report its exit the way a shell would. It is what
// `podsup run` does, available to programs that embed podsup as their init.
//
// The duty list, in order (tini's, with pidfds):
//
//  1. catch the signals to forward, before the child exists, so none is lost;
//  2. install the reaper (PID 1, or PR_SET_CHILD_SUBREAPER otherwise);
//  3. start the command in its own process group, in the terminal's
//     foreground when there is one;
//  4. forward signals until it exits; after SIGTERM/SIGINT, SIGKILL its tree
//     once Grace has passed;
//  5. optionally end what is left of its process group;
//  6. return its exit code (128+N for signal N, 127/126 when it could not
//     be started), through RemapExit.
//
// # How signals travel
//
// Run's own OS thread is the signal thread: once the child runs, it blocks
// the forwarded signals (but five, see below) and takes them with
// sigtimedwait(2), forwarding each through the child's pidfd on the spot:
// one thread woken per signal, no goroutine hop, no polling (tini's loop).
// On amd64 and arm64 the forward is made inside the wait itself, before
// the thread returns to the Go scheduler (sigwaitForward), so that it
// comes as soon after the wake-up as tini's kill(2); SIGURG, which may be
// podsup's own, is forwarded just after. sigtimedwait also tells who sent
// a signal, which is how SIGURG from outside is told from the Go runtime's
// own preemption SIGURGs. The kernel offers a process-directed signal
// first to the thread group leader, so Run should be called on the main
// thread: from the main goroutine of a program whose init function called
// runtime.LockOSThread (cmd/podsup does).
//
// Only the signal thread blocks them: the Go runtime's other threads leave
// them unblocked (and it insists on SIGHUP, SIGINT, SIGTERM, SIGQUIT,
// SIGABRT, SIGURG, SIGPROF and 34 even where a program asks otherwise), so
// a signal can land on another thread while the signal thread is busy
// forwarding. The signal thread does not block the first five either
// (goUnblocked): blocked there, each one it took would have the kernel
// wake another thread for it (below), for nothing. What becomes of a
// signal that lands elsewhere, or on the signal thread while it is busy:
//
//   - os/signal catches it and it is forwarded all the same, a little
//     later: every forwarded signal but SIGURG, SIGPROF and 34;
//   - SIGURG: the same once Prepare has turned the runtime's asynchronous
//     preemption off, since every SIGURG then comes from outside. Without
//     Prepare a SIGURG that lands elsewhere is taken for a preemption
//     request and lost;
//   - SIGPROF and 34: no Go code can catch them there (the runtime's
//     profiler handler keeps SIGPROF, and 34 has no Go handler). On amd64
//     and arm64 Run installs a handler of its own for both, in assembly,
//     which re-sends them to the signal thread (redirect.go): they are
//     forwarded however busy podsup is. On other architectures 34 is
//     ignored there rather than fatal, and one of the two that lands there
//     is lost: mostly while the signal thread is not waiting, but it was
//     also seen with podsup idle (1 in 20 runs of a test sending each
//     signal once).
//
// # The assembly, and how to do without it
//
// On amd64 and arm64 pid1 uses assembly: that handler (redirect_*.s) and
// the forward made inside the wait (sigwait_*.s). What a program that
// embeds Run gives up for it:
//
//   - its own CPU profile: the handler replaces the Go runtime's SIGPROF
//     handler for the whole process, from Run's start and for good (it
//     stays installed after Run returns), so runtime/pprof's CPU profiles
//     get no samples; the profiler's SIGPROFs would be the child's;
//   - a build that depends on the Go runtime's internals only as far as
//     the runtime allows: the wait enters and leaves its system call
//     through runtime.entersyscall and exitsyscall (linkname), which a Go
//     release may change, and the race detector does not see it.
//
// A program builds without the assembly with -tags podsup_portable: the
// path of the other architectures (and of the 386, arm, riscv64, ppc64le
// and s390x release binaries), in Go alone. It costs SIGPROF and 34 that
// land on a busy thread (above), a forward made after the wait rather
// than within it (slower: see sigwaitForward), and one exec more per child:
// there 32 and 34 are ignored rather than handled, and the child passes
// through podsup's binary to get them back at the default (loose.go), so
// it needs /proc. CPU profiling then works, but for the signal thread: a
// SIGPROF the profiler aims at it is taken as one to forward. CI runs
// pid1's tests and `podsup run`'s both ways.
//
// # Contract on return
//
// Run leaves the forwarded signals caught (and, but for goUnblocked,
// blocked on its thread) when it returns: a signal that arrives between
// the child's exit and the program's exit must neither kill podsup nor
// change the exit status it reports, however many arrive. A program that
// embeds pid1 is expected to exit with Run's code soon after Run returns.
package pid1

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// Options configures Run.
type Options struct {
	// Argv is the command and its arguments, passed verbatim.
	Argv []string
	// ToGroup forwards signals to the child's whole process group
	// instead of the child alone (tini -g).
	ToGroup bool
	// Grace, when > 0, SIGKILLs the child's tree if it has not exited
	// Grace after a forwarded SIGTERM or SIGINT. 0 waits forever, like tini.
	Grace time.Duration
	// KillLeftovers ends what is left of the child's process group after
	// the child exits: SIGTERM, then SIGKILL after LeftoverGrace.
	KillLeftovers bool
	LeftoverGrace time.Duration
	// RemapExit replaces the child's exit code (128+N for signal N) by
	// another, like tini -e: {143: 0} reports a JVM stopped by SIGTERM as a
	// success. Codes not in it pass unchanged; podsup's own 126/127/2 for a
	// command it could not start are never remapped.
	RemapExit map[int]int
	// Stdin, Stdout and Stderr default to podsup's own.
	Stdin, Stdout, Stderr *os.File
	// Errors receives podsup's own messages ("podsup: CMD: not found").
	Errors io.Writer
	Logger zerolog.Logger
}

// DefaultLeftoverGrace is the SIGTERM → SIGKILL wait for leftovers.
const DefaultLeftoverGrace = 2 * time.Second

// Run starts the command and supervises it until it exits, returning the
// exit code podsup should exit with. See the package documentation for the
// thread it should be called on and the state it leaves signals in.
func Run(o Options) int {
	if o.Errors == nil {
		o.Errors = os.Stderr
	}
	if len(o.Argv) == 0 {
		fmt.Fprintln(o.Errors, "podsup: no command given")
		return 2
	}
	// This goroutine's thread becomes the signal thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if unix.Gettid() != unix.Getpid() {
		o.Logger.Warn().Msg("pid1.Run is not on the main thread: a signal that lands elsewhere while it forwards another may be lost")
	}
	if runtimeSendsSIGURG {
		o.Logger.Debug().Msg("asynchronous preemption is on (no pid1.Prepare): a SIGURG that arrives while a signal is being forwarded may be lost")
	}
	// 0. Signals 32 and 34 are dropped from here on: their default action
	// would end podsup, and with a child started, orphan it. Sent to podsup
	// run under load just after its child printed a line, 32 ended it in
	// 4 of 150 tries when this was done after the fork. Where the
	// redirecting handler exists, the signal thread takes them once it is
	// ready (redirectTo, below); elsewhere they are ignored, and the child
	// gets them back at the default through looseMain (loose.go).
	redirecting := dropRedirected()
	if !redirecting {
		ignoreLoose()
	}

	// 1. Catch before starting, so a signal sent at once is not lost: the
	// safety net first, then whatever is already queued for this thread.
	// Never signal.Stop: see "Contract on return".
	caught := make(chan os.Signal, 256)
	signal.Notify(caught, notifiedSignals()...)
	waited := waitedSignals()
	early := takePending(waited)
	// CMD gets fds 0-2 and nothing else podsup happened to inherit.
	CloseInheritedOnExec()
	// 2. The reaper.
	proc.StartReaper()
	if !proc.Stats().Subreaper {
		o.Logger.Warn().Msg("podsup is neither PID 1 nor a child subreaper: orphans will not be reaped here")
	}
	// 3. The child, forked from this thread while its mask is still
	// empty: a child inherits the forking thread's mask.
	child, err := startChild(o)
	if err != nil {
		fmt.Fprintf(o.Errors, "podsup: %v\n", err)
		return proc.ExitCodeForStartError(err)
	}
	f := &forwarder{child: child, toGroup: o.ToGroup, grace: o.Grace, log: o.Logger.With().Int("pid", child.Pid()).Logger(), pidfd: -1}
	f.log.Debug().Strs("argv", o.Argv).Msg("started")
	if !o.ToGroup {
		// Kept for the child's life: a signal then costs one system call.
		if fd, err := child.OpenPidfd(); err == nil {
			f.pidfd = fd
		}
	}
	if _, err := threadMask(unix.SIG_BLOCK, waited&^goUnblocked|sigsetOf(syscall.SIGCHLD)); err != nil {
		f.log.Warn().Err(err).Msg("could not block signals on the signal thread: forwarding through os/signal only")
	}
	if redirecting && !redirectTo(unix.Gettid()) {
		ignoreLoose()
	}
	for _, sig := range early {
		f.forward(sig)
	}

	// 4. Forward until it exits.
	caughtDone := make(chan struct{})
	go func() {
		defer close(caughtDone)
		f.forwardCaught(caught)
	}()
	var exited atomic.Bool
	go wakeOnExit(child, &exited)
	f.loop(waited, &exited)
	f.stopGrace()
	<-caughtDone // it ends with the child; then nothing signals through f.pidfd
	if f.pidfd >= 0 {
		_ = unix.Close(f.pidfd) // a pidfd: nothing to flush
	}
	e := child.Exit()
	f.log.Debug().Str("exit", e.String()).Msg("exited")
	// 5. Leftovers.
	if o.KillLeftovers {
		killLeftovers(child, or(o.LeftoverGrace, DefaultLeftoverGrace), f.log)
	}
	// 6.
	return remapExit(e.Code(), o.RemapExit)
}

// remapExit applies Options.RemapExit.
func remapExit(code int, remap map[int]int) int {
	if to, ok := remap[code]; ok {
		return to
	}
	return code
}

// startChild starts the command. A child inherits the forking thread's
// signal mask: it is emptied for the fork, in case an earlier Run in this
// process left it blocking signals. It also inherits ignored dispositions:
// see childCmd for those Run ignored.
func startChild(o Options) (*proc.Process, error) {
	c, err := childCmd(o)
	if err != nil {
		return nil, err
	}
	if set := sigset(looseIgnored.Load()); set != 0 && c.Path != selfExe {
		// No /proc for looseMain: put them back around the fork, at the
		// cost of the moment in which one of them ends podsup.
		for _, sig := range looseSignals {
			if set.has(sig) {
				restoreDefault(sig)
				defer ignoreIfDefault(sig)
			}
		}
	}
	if old, err := threadMask(unix.SIG_UNBLOCK, waitedSignals()|sigsetOf(syscall.SIGCHLD)); err == nil && old != 0 {
		defer func() { _, _ = threadMask(unix.SIG_SETMASK, old) }()
	}
	return proc.Start(c)
}

// takePending dequeues the signals of set already pending (left blocked
// by an earlier Run), to forward once the child exists.
func takePending(set sigset) []syscall.Signal {
	var (
		out  []syscall.Signal
		info siginfo
	)
	for {
		sig, ok := sigpoll(set, &info)
		if !ok {
			return out
		}
		if !selfSent(sig, &info) {
			out = append(out, sig)
		}
	}
}

// wakeOnExit wakes the signal thread once the child's exit is known, with
// a signal podsup sends itself (which is never forwarded).
func wakeOnExit(child *proc.Process, exited *atomic.Bool) {
	<-child.Done()
	exited.Store(true)
	wakeSignalThread()
}

// signalThread is the thread id of the running loop, 0 when none.
var signalThread atomic.Int32

func wakeSignalThread() {
	tid, pid := int(signalThread.Load()), unix.Getpid()
	if tid <= 0 || pid <= 0 {
		return // no loop to wake; never a tgkill to a pid <= 0
	}
	_ = unix.Tgkill(pid, tid, syscall.SIGURG)
}

// forwarder passes signals on to the child.
type forwarder struct {
	child   *proc.Process
	toGroup bool
	grace   time.Duration
	log     zerolog.Logger
	// pidfd names the child, -1 when signals go to its process group or
	// no pidfd could be opened (the child had ended already).
	pidfd int

	mu         sync.Mutex // guards graceTimer
	graceTimer *time.Timer
}

// loop is the signal thread's: take a signal, forward it, until the child
// has exited.
func (f *forwarder) loop(set sigset, exited *atomic.Bool) {
	signalThread.Store(int32(unix.Gettid()))
	defer signalThread.Store(0)
	if exited.Load() { // exited before the thread id was published
		return
	}
	// Forwarded within the wait itself (sigwaitForward): every waited
	// signal but SIGURG, which may be podsup's own (selfSent).
	var fast sigset
	if f.pidfd >= 0 {
		fast = set &^ sigsetOf(syscall.SIGURG)
	}
	var info siginfo
	for {
		r, errno, forwarded := sigwaitForward(&set, &info, fast, f.pidfd)
		sig := syscall.Signal(r)
		switch {
		case errno == uintptr(unix.EINTR) || errno == uintptr(unix.EAGAIN):
			continue
		case errno != 0:
			// Not expected; os/signal still catches the signals it can.
			f.log.Warn().Err(unix.Errno(errno)).Msg("sigtimedwait failed: forwarding through os/signal only")
			<-f.child.Done()
			return
		case forwarded:
			f.sent(sig)
		case selfSent(sig, &info):
			if exited.Load() {
				return
			}
		default:
			f.forward(sig)
		}
	}
}

// forwardCaught forwards what os/signal caught until the child exits.
func (f *forwarder) forwardCaught(caught <-chan os.Signal) {
	for {
		select {
		case s := <-caught:
			f.forward(s.(syscall.Signal))
		case <-f.child.Done():
			return
		}
	}
}

func (f *forwarder) forward(sig syscall.Signal) {
	var err error
	switch {
	case f.toGroup:
		err = f.child.KillTree(sig)
	case f.pidfd >= 0:
		if err = unix.PidfdSendSignal(f.pidfd, sig, nil, 0); err == unix.ESRCH {
			err = nil // it has ended; its exit is on the way
		}
	default:
		err = f.child.Signal(sig)
	}
	if err != nil && !errors.Is(err, proc.ErrProcessDone) {
		f.log.Warn().Err(err).Str("signal", unix.SignalName(sig)).Msg("could not forward signal")
		return
	}
	f.sent(sig)
}

// sent is what follows a forwarded signal.
func (f *forwarder) sent(sig syscall.Signal) {
	f.log.Debug().Str("signal", unix.SignalName(sig)).Msg("forwarded")
	if sig == syscall.SIGTERM || sig == syscall.SIGINT {
		f.startGrace()
	}
}

// startGrace arms the SIGKILL of the child's tree Grace after the first
// forwarded SIGTERM or SIGINT; later ones do not move it.
func (f *forwarder) startGrace() {
	if f.grace <= 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.graceTimer != nil {
		return
	}
	f.graceTimer = time.AfterFunc(f.grace, func() {
		f.log.Warn().Dur("grace", f.grace).Msg("still running after the grace period: killing its process tree")
		_ = f.child.KillTree(syscall.SIGKILL)
	})
}

func (f *forwarder) stopGrace() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.graceTimer != nil {
		f.graceTimer.Stop()
	}
}

// killLeftovers ends the rest of the exited child's process group. The
// group has no leader left to wait for and its members need not be our
// children, so its emptiness is checked every 10 ms for at most the grace
// period: a bounded shutdown step, not an idle cost.
func killLeftovers(p *proc.Process, grace time.Duration, log zerolog.Logger) {
	if p.KillTree(syscall.SIGTERM) != nil {
		return // nothing left (ESRCH) or not ours
	}
	log.Debug().Msg("sent SIGTERM to leftovers")
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		if p.KillTree(0) != nil {
			return
		}
	}
	log.Warn().Dur("grace", grace).Msg("leftovers still running after the grace period: SIGKILL")
	_ = p.KillTree(syscall.SIGKILL)
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// CloseInheritedOnExec marks every fd above 2 close-on-exec, so no fd
// podsup's parent leaked to it reaches a process podsup starts. Go opens
// its own fds close-on-exec already, and what podsup hands on deliberately
// (socket-activation fds, a readiness pipe) goes through a Cmd's
// ExtraFiles, which clears the flag in the child only. Call it once at
// start-up, after taking what podsup keeps (package systemd's
// ActivationFiles) and before the first process starts.
func CloseInheritedOnExec() {
	// One call on Linux 5.11 and later; the walk of /proc/self/fd otherwise.
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC)
		}
	}
}

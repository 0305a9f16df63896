// Package pid1 owns the duties of an init process for one command: start
// it in the foreground, forward every signal podsup receives to it, reap
// every zombie (through package sandbox's reaper, as PID 1 or as a child
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
//     be started).
package pid1

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox"
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
	// Stdin, Stdout and Stderr default to podsup's own.
	Stdin, Stdout, Stderr *os.File
	// Errors receives podsup's own messages ("podsup: CMD: not found").
	Errors io.Writer
	Logger zerolog.Logger
}

// DefaultLeftoverGrace is the SIGTERM → SIGKILL wait for leftovers.
const DefaultLeftoverGrace = 2 * time.Second

// Forwarded is every signal Run passes on. Not forwarded:
//   - SIGCHLD: it is about podsup's own children; the reaper consumes it;
//   - SIGURG: the Go runtime sends it to its own threads to preempt
//     goroutines, so a received SIGURG cannot be told apart from those;
//   - SIGKILL, SIGSTOP: cannot be caught;
//   - SIGTTIN, SIGTTOU: terminal job control of podsup itself (tini too);
//   - SIGPROF: the Go runtime keeps it for its profiler and never hands it
//     to os/signal, so podsup cannot see it;
//   - 32, 33 and 34: the Go runtime reserves them (glibc's and musl's
//     internal signals) and installs no handler a program can use, so one
//     sent to podsup takes its default action on podsup itself.
var Forwarded = func() []os.Signal {
	var sigs []os.Signal
	for s := syscall.Signal(1); s <= 64; s++ {
		switch s {
		case syscall.SIGCHLD, syscall.SIGURG, syscall.SIGKILL, syscall.SIGSTOP,
			syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGPROF, 32, 33, 34:
			continue
		}
		sigs = append(sigs, s)
	}
	return sigs
}()

// Run starts the command and supervises it until it exits, returning the
// exit code podsup should exit with.
func Run(o Options) int {
	if o.Errors == nil {
		o.Errors = os.Stderr
	}
	if len(o.Argv) == 0 {
		fmt.Fprintln(o.Errors, "podsup: no command given")
		return 2
	}
	stdin, stdout, stderr := or(o.Stdin, os.Stdin), or(o.Stdout, os.Stdout), or(o.Stderr, os.Stderr)

	// 1. Catch before starting, so a signal sent at once is not lost.
	sigs := make(chan os.Signal, 128)
	signal.Notify(sigs, Forwarded...)
	defer signal.Stop(sigs)
	// CMD gets fds 0-2 and nothing else podsup happened to inherit.
	CloseInheritedOnExec()
	// 2. The reaper.
	sandbox.StartReaper()
	if !sandbox.Stats().Subreaper {
		o.Logger.Warn().Msg("podsup is neither PID 1 nor a child subreaper: orphans will not be reaped here")
	}
	// 3. The child.
	child, err := sandbox.Start(&sandbox.Cmd{
		Path: o.Argv[0], Args: o.Argv,
		Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Foreground: true,
	})
	if err != nil {
		fmt.Fprintf(o.Errors, "podsup: %v\n", err)
		return sandbox.ExitCodeForStartError(err)
	}
	log := o.Logger.With().Int("pid", child.Pid()).Logger()
	log.Debug().Strs("argv", o.Argv).Msg("started")

	// 4. Forward until it exits.
	var graceC <-chan time.Time
	for {
		select {
		case s := <-sigs:
			sig := s.(syscall.Signal)
			forward(child, sig, o.ToGroup, log)
			if o.Grace > 0 && graceC == nil && (sig == syscall.SIGTERM || sig == syscall.SIGINT) {
				graceC = time.After(o.Grace)
			}
		case <-graceC:
			log.Warn().Dur("grace", o.Grace).Msg("still running after the grace period: killing its process tree")
			_ = child.KillTree(syscall.SIGKILL)
		case <-child.Done():
			e := child.Exit()
			log.Debug().Str("exit", e.String()).Msg("exited")
			// 5. Leftovers.
			if o.KillLeftovers {
				killLeftovers(child, or(o.LeftoverGrace, DefaultLeftoverGrace), log)
			}
			// 6.
			return e.Code()
		}
	}
}

func forward(p *sandbox.Process, sig syscall.Signal, toGroup bool, log zerolog.Logger) {
	var err error
	if toGroup {
		err = p.KillTree(sig)
	} else {
		err = p.Signal(sig)
	}
	if err != nil && !errors.Is(err, sandbox.ErrProcessDone) {
		log.Warn().Err(err).Str("signal", unix.SignalName(sig)).Msg("could not forward signal")
		return
	}
	log.Debug().Str("signal", unix.SignalName(sig)).Msg("forwarded")
}

// killLeftovers ends the rest of the exited child's process group. The
// group has no leader left to wait for and its members need not be our
// children, so its emptiness is checked every 10 ms for at most the grace
// period: a bounded shutdown step, not an idle cost.
func killLeftovers(p *sandbox.Process, grace time.Duration, log zerolog.Logger) {
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

package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// holderIgnores are the signals a holder must survive.
var holderIgnores = []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM,
	syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGXCPU, syscall.SIGXFSZ,
	syscall.SIGVTALRM, syscall.SIGPWR, syscall.SIGWINCH}

// HolderMain is the whole life of a sandbox holder (see HolderArg and the
// protocol above holderConfig). It returns the exit code. It starts
// nothing: as PID 1 of the sandbox it runs proc's reaper (only package proc
// may wait), and every exit that reaper sees is an orphan's.
//
// Duties, in order:
//  1. ignore the signals a process in the sandbox could send it (as PID 1
//     of a PID namespace only signals it handles reach it: Go handles
//     SIGTERM & co. by exiting, which would tear the sandbox down);
//  2. reap orphans: everything orphaned in the sandbox is reparented here;
//  3. read the config and set up mounts, hostname, loopback;
//  4. say ready (or why not) and wait for EOF on the control socket.
func HolderMain() int {
	runtime.GOMAXPROCS(1) // it only waits; fewer threads, less memory
	signal.Ignore(holderIgnores...)
	// The holder's children are the sandbox's orphans: proc's reaper reaps
	// them (the holder starts nothing, so every exit is an orphan's).
	proc.StartReaper()

	ctl := os.NewFile(holderControlFD, "podsup-control")
	if ctl == nil {
		fmt.Fprintln(os.Stderr, "podsup holder: no control socket on fd 3")
		return 2
	}
	in := bufio.NewReader(ctl)
	line, err := in.ReadBytes('\n')
	if err != nil {
		return 0 // podsup went away before configuring us: nothing to hold
	}
	var cfg holderConfig
	reply := holderReply{}
	if err := json.Unmarshal(line, &cfg); err != nil {
		reply.Error = fmt.Sprintf("decoding holder config: %v", err)
	} else if cfg.UserNS {
		return userNSHolderMain(cfg, ctl)
	} else if err := holderSetup(cfg); err != nil {
		reply.Error = err.Error()
	}
	b, _ := json.Marshal(reply) // a struct of one string always marshals
	if _, err := ctl.Write(append(b, '\n')); err != nil || reply.Error != "" {
		return 1
	}
	// Hold until podsup closes its end (or dies). Anything podsup sends
	// later is ignored: EOF is the only message that matters.
	buf := make([]byte, 512)
	for {
		if _, err := ctl.Read(buf); err != nil {
			return 0
		}
	}
}

// holderSetup applies cfg inside the new namespaces.
func holderSetup(cfg holderConfig) error {
	if cfg.Mount {
		if err := setupMounts(cfg); err != nil {
			return err
		}
	}
	if cfg.UTS && cfg.Hostname != "" {
		if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
			return fmt.Errorf("setting hostname %q: %w", cfg.Hostname, err)
		}
	}
	if cfg.Net {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	return nil
}

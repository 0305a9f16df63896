package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/spec"
)

// File descriptors are podsup's one resource that grows with the number
// of processes: each running process costs the read end of its output pipe
// (package logs; signals open a pidfd only for the call, package proc),
// and podsup itself needs a few dozen.
//
// RLIMIT_NOFILE: Go raises podsup's soft limit to just below the hard
// limit at start and gives every child the limit podsup was started with.
// That is enough until a configuration needs more fds than the hard limit
// allows; then podsup, when it may (CAP_SYS_RESOURCE, i.e. root), raises
// its hard limit to fs.nr_open as systemd does for itself, and re-executes
// itself once so that Go still starts every child with the soft limit
// podsup was started with. Such children get fs.nr_open as their hard
// limit (systemd gives services a raised hard limit too); their soft limit,
// which is what select(2)-era programs depend on, is unchanged. When the
// configuration still cannot fit, podsup says so once at start-up, with the
// numbers and how many processes can run. Those start, as many every time
// (package stack retries a start that ran out of fds with no other start
// under way); the others wait in back-off, each start failing with one
// reason that names the limit.

// baseFDs is the headroom podsup asks for besides its processes when it
// decides whether to raise its hard limit: stdio, the Go runtime's epoll,
// the log hub, the control socket and its clients, probe and hook
// commands in flight, and starts under way. Generous on purpose: raising
// costs nothing.
const baseFDs = 64

// What podsup itself holds once it runs, besides what it held when it
// decided on its limit (ownFDs): what the stack and the control socket
// open (the runtime directory, the log hub's epoll and eventfd, the notify
// socket, /dev/null for the processes' stdin, the control socket),
// and what one start holds until its child has its fds (the output
// pipe's write end, the cgroup's directory, the fork's error pipe and
// pidfd). Measured: 40 and 60 sleeps under a limit of 64
// (TestUpOutOfFDsStartsWhatFitsEveryTime).
const (
	stackFDs = 7
	startFDs = 5
)

// processFDs is what one running process of p costs podsup at rest.
func processFDs(p spec.Process, logDir bool) int {
	n := 0
	if p.Log.Mode != "passthrough" && !p.Log.Journal {
		n++ // the read end of its output pipe
		if p.Log.SeparateStreams {
			n++
		}
		if logDir {
			n++ // its log file, while it writes
		}
	}
	if p.Readiness == "notify" {
		n++ // its notify socket
	}
	return n
}

// fdsAtRest is about how many fds podsup needs with every process of cfg
// running, with baseFDs for itself.
func fdsAtRest(cfg *spec.Config) (need, processes int) {
	need = baseFDs
	for _, g := range cfg.Groups {
		for _, p := range g.Processes {
			need += processFDs(p, cfg.Supervisor.LogDir != "")
			processes++
		}
	}
	return need, processes
}

// ownFDs is about how many fds podsup holds once running with none of its
// processes: what it holds now, before the stack, and what the stack and
// a start add. baseFDs when its fds cannot be counted.
func ownFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return baseFDs
	}
	return len(ents) - 1 + stackFDs + startFDs // not the fd ReadDir read them through
}

// fileLimitPlan decides what to do about RLIMIT_NOFILE: raise reports
// whether to raise the hard limit to nrOpen (and re-execute), and warning,
// when not empty, is what to tell the user because the configuration will
// not fit in the limit podsup ends up with. need is fdsAtRest's, and own
// what podsup really holds without its processes (ownFDs): the raise
// is decided with the generous baseFDs, the warning, and the number of
// processes it says can run, with own.
func fileLimitPlan(need, processes, own int, cur, hard, nrOpen uint64, mayRaise bool) (raise bool, warning string) {
	if uint64(need) <= cur {
		return false, ""
	}
	if mayRaise && hard < nrOpen {
		if uint64(need) <= nrOpen-1 {
			return true, ""
		}
		cur, hard = nrOpen-1, nrOpen
	}
	procFDs := need - baseFDs
	perProcess := max(float64(procFDs)/float64(max(processes, 1)), 1)
	fit := max(int(float64(int(cur)-own)/perProcess), 0)
	if fit >= processes {
		return false, "" // fits, if not with baseFDs to spare
	}
	how := "raise the hard limit podsup starts with (ulimit -Hn, LimitNOFILE=) or run it as root"
	if mayRaise {
		how = "raise fs.nr_open"
	}
	return false, fmt.Sprintf("the configuration needs about %d file descriptors with its %d processes running "+
		"(%.1f each, about %d for podsup itself), but podsup may open only %d (RLIMIT_NOFILE %d:%d): "+
		"only about %d processes can run at once; the others will wait in back-off, their starts failing with \"too many open files\"; %s",
		own+procFDs, processes, perProcess, own, cur, cur, hard, fit, how)
}

// fitFileLimit applies fileLimitPlan to podsup: it returns the warning to
// log, or does not return at all when it re-executes podsup with a raised
// hard limit. Call it before podsup changes anything that the new image
// would see differently (the environment, fds) and before anything starts.
func fitFileLimit(cfg *spec.Config) string {
	need, processes := fdsAtRest(cfg)
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return ""
	}
	nrOpen := readNrOpen()
	raise, warning := fileLimitPlan(need, processes, ownFDs(), lim.Cur, lim.Max, nrOpen, hasCapSysResource())
	if !raise {
		return warning
	}
	if err := reexecWithHardLimit(nrOpen); err != nil {
		return fmt.Sprintf("the configuration needs about %d file descriptors but raising RLIMIT_NOFILE failed: %v", need, err)
	}
	return "" // not reached: podsup was re-executed
}

// reexecWithHardLimit re-executes podsup with its hard RLIMIT_NOFILE raised
// to max and its soft limit the one it was started with. Go's own
// bookkeeping does the rest: the new image raises its soft limit and
// restores the starting one in every child. It returns only on failure.
func reexecWithHardLimit(hard uint64) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding podsup's executable: %w", err)
	}
	soft := startingSoftLimit()
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: soft, Max: hard}); err != nil {
		return fmt.Errorf("raising the hard limit to %d: %w", hard, err)
	}
	err = syscall.Exec(exe, os.Args, os.Environ())
	// Still here: run with the soft limit as high as it goes (children
	// then get it too: Go no longer knows the starting one).
	_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: hard, Max: hard})
	return fmt.Errorf("re-executing podsup: %w", err)
}

// startingSoftLimit puts back, and returns, the soft RLIMIT_NOFILE podsup
// was started with. Go raised it at start and keeps the original only for
// its children; the one way to have it back is syscall.Exec, which restores
// it before calling execve: an exec that cannot succeed (an empty path)
// leaves podsup running with it.
func startingSoftLimit() uint64 {
	_ = syscall.Exec("", nil, nil) // ENOENT, after restoring the limit
	var lim unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
	return lim.Cur
}

// readNrOpen is fs.nr_open, the kernel's ceiling for RLIMIT_NOFILE; the
// kernel's default when it cannot be read.
func readNrOpen() uint64 {
	b, err := os.ReadFile("/proc/sys/fs/nr_open")
	if err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return n
		}
	}
	return 1 << 20
}

// hasCapSysResource reports whether podsup may raise its hard limits.
func hasCapSysResource() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[unix.CAP_SYS_RESOURCE/32].Effective&(1<<(unix.CAP_SYS_RESOURCE%32)) != 0
}

package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/internal/rootless"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// upRootless runs podsup up again in a user namespace of its own when a
// normal user's configuration has a sandbox with namespaces, which only
// root of some user namespace may make (package rootless), and returns
// its exit code with ran set. It forwards the signals podsup up acts on.
// ran is false when podsup goes on as it is: as root (or already
// rootless), with no namespaces to make, or on a host that gives it no
// user namespace (where the start failed, it says why in one line); the
// configuration is then refused as one whose namespaces cannot be made.
func upRootless(cfg *spec.Config, cgroupDir string) (code int, ran bool, err error) {
	if _, inner := rootless.Inner(); inner || os.Geteuid() == 0 {
		if cgroupDir != "" && !inner {
			return 0, false, fmt.Errorf("--cgroup is for a podsup that is not root (rootless); as root podsup makes its cgroups under its own")
		}
		return 0, false, nil
	}
	if !wantsNamespaces(cfg) {
		if cgroupDir != "" {
			return 0, false, fmt.Errorf("--cgroup is for a rootless podsup, which runs only for a configuration with sandbox namespaces")
		}
		return 0, false, nil
	}
	if rootless.Possible() != "" {
		return 0, false, nil // the configuration is refused, saying why
	}
	cgroupFD := -1
	if cgroupDir != "" {
		fd, err := unix.Open(cgroupDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, false, fmt.Errorf("--cgroup: %w", err)
		}
		defer unix.Close(fd)
		cgroupFD = fd
	}
	// Caught before the start, so none is lost; podsup in the namespace
	// acts on them, or logs the stray ones, as it would if the user had
	// sent them to it: none ends this podsup before the other one.
	sigs := make(chan os.Signal, 16)
	// SIGPIPE is caught, not ignored (an ignored signal would stay ignored
	// across the exec), and dropped.
	signal.Notify(sigs, append(append([]os.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE}, upSignals...), straySignals...)...)
	defer signal.Stop(sigs)
	// As PID 1 (a container started as a user) it reaps orphans; else a
	// subreaper, so that what the other podsup leaves is reaped here.
	proc.StartReaperAs(true)
	// The socket is named here, by the user: in the namespace podsup is
	// uid 0 and would take root's default path.
	args := append(os.Args[1:], "--socket", cfg.Supervisor.EffectiveSocket())
	maps := rootless.MapsFor(os.Getuid(), os.Getgid(), "/etc/subuid", "/etc/subgid")
	p, err := rootless.Start("/proc/self/exe", args, os.Environ(), maps, cgroupFD)
	if err != nil {
		if cgroupFD >= 0 {
			return 0, false, fmt.Errorf("%w (in the cgroup of --cgroup %s)", err, cgroupDir)
		}
		fmt.Fprintf(os.Stderr, "podsup: rootless: %v: sandboxes' namespaces need root here\n", err)
		return 0, false, nil
	}
	for {
		select {
		case s := <-sigs:
			if s != syscall.SIGPIPE {
				_ = p.Signal(s.(syscall.Signal))
			}
		case <-p.Done():
			return p.Exit().Code(), true, nil
		}
	}
}

// wantsNamespaces reports whether a group of cfg has a sandbox with
// namespaces.
func wantsNamespaces(cfg *spec.Config) bool {
	for _, g := range cfg.Groups {
		if g.Sandbox != nil && len(g.Sandbox.Namespaces) > 0 {
			return true
		}
	}
	return false
}

package cgroups

import (
	"errors"
	"fmt"
)

// Errors callers act on. Each is returned wrapped; test with errors.Is.
var (
	// ErrUnavailable: podsup cannot manage cgroups here (nothing mounted,
	// or creating a cgroup is denied: an unprivileged container, a
	// read-only cgroupfs). Fall back to process groups.
	ErrUnavailable = errors.New("cgroups unavailable")
	// ErrNoController: a limit or statistic needs a controller that no
	// hierarchy podsup uses offers (e.g. "memory" on a host without it).
	ErrNoController = errors.New("cgroup controller not available")
	// ErrBusy: a cgroup still held processes when the time allowed for
	// killing them or removing it ran out.
	ErrBusy = errors.New("cgroup still has processes")
	// ErrExist: a cgroup of that name already exists (a leftover; see
	// Manager.Sweep) or was already created by this Manager.
	ErrExist = errors.New("cgroup already exists")
	// ErrInvalidName: a name that cannot be a cgroup directory of podsup's.
	ErrInvalidName = errors.New("invalid cgroup name")
	// ErrThreadStranded: after a fork the spawning thread could not be
	// moved back to podsup's own cgroups. Placement.Fork leaves that
	// thread locked, so the Go runtime ends it when its goroutine returns;
	// the goroutine should return soon.
	ErrThreadStranded = errors.New("spawning thread left in a child's cgroup")
)

// errNoMemoryController is OOMKills' answer without a memory controller,
// made once: every exit asks, and on a host without the controller the
// error was formatted anew each time only to be dropped.
var errNoMemoryController = missingControllers([]string{"memory"})

// missingControllers is the error for limits nobody can enforce.
func missingControllers(names []string) error {
	return fmt.Errorf("%w: %v", ErrNoController, names)
}

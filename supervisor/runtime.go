package supervisor

import (
	"context"
	"errors"
	"os"
	"syscall"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Runtime is the imperative half of the CRI split (docs/architecture.md): it starts
// processes and signals them, and knows nothing of policies. The supervisor
// reaches the kernel only through it. The real ones live above the
// supervisor: hostrt.Runtime (host processes) and stack.SandboxRuntime
// (groups in sandboxes), which package stack wraps in its layers; tests use
// fakes.
//
// Every capability the supervisor uses is a method here, none is an optional
// interface found by a type assertion: a layer around another Runtime (its
// Next: notify.Runtime, systemd.JournalRuntime, package stack's capture)
// must implement each one, so the compiler catches a forgotten one. Such a
// wrapper passes Spawner, ReleaseGroup and ReleaseProcess on to Next (after
// doing its own part), and reports Next's Capabilities with its own added. A
// wrapper that dropped Spawner would run the group's exec probes and hooks on
// the host; one that dropped ReleaseGroup would leave sandboxes behind.
//
// The group's worker never waits for a call that may be slow. Start runs
// in a goroutine of its own and may take its time (creating the group's
// sandbox: a holder's handshake, cgroups); the worker carries on meanwhile
// (status, stop requests) and hears of the outcome through its mailbox. A
// stop requested while a start is in flight cancels Start's ctx and is
// carried out once Start returned. Instance.KillTree runs in a goroutine of
// its own too (a cgroup kill waits until the tree is empty); only
// Instance.Signal is called on the worker and must be quick.
//
// OnExit is called exactly once per successfully started instance, never
// for a failed Start, from any goroutine, and must not block (the
// supervisor's side only appends to a mailbox). It may come as soon as the
// process exists, also before Start returned (a program that exits at
// once): a runtime passes it on as it comes and holds nothing back. The
// supervisor guarantees that the group hears of an instance's exit only
// after its start: its worker puts the exit behind Start's outcome, the
// one place that order can be kept, since only the caller of Start knows
// when it has taken Start's result in. A failed Start leaves nothing
// behind: the runtime frees what it made for the instance.
//
// Who cleans up an instance: the group's worker, alone. After an instance
// exited, the worker SIGKILLs its tree (X10) and then calls its Remove;
// nothing in a runtime removes an instance on its own, so an exit is never
// raced by a second owner.
type Runtime interface {
	// Start starts one instance of req.Process.
	Start(ctx context.Context, req StartRequest) (Instance, error)

	// Spawner returns how to start a command inside group's sandbox as
	// things stand now, so that the group's exec probes and exec hooks run
	// in its namespaces and cgroup (X6); nil (or proc.Start) means in
	// podsup's own, as for a group without a sandbox. The supervisor asks
	// again for every exec probe or hook, so a sandbox created by the
	// group's first start is used from then on.
	Spawner(group string) func(*proc.Cmd) (*proc.Process, error)

	// ReleaseGroup frees what the runtime holds for group (its sandbox,
	// its captured output) once the group's worker has ended: the group
	// was removed or replaced by a reload, or podsup is stopping. It is
	// called exactly once per worker, before a replacement group of the
	// same name starts.
	ReleaseGroup(group string)

	// ReleaseProcess frees what the runtime keeps per process across its
	// instances (its captured output) when a reload removed the process:
	// the supervisor calls it from the group's worker once the process's
	// last instance has exited and no process of that name is in the group
	// any more, so a process that a later reload adds back under the same
	// name starts afresh. A removed group's processes are released with the
	// group (ReleaseGroup).
	ReleaseProcess(group, process string)

	// Capabilities says what of a configuration the runtime can honour
	// beyond plain processes. The supervisor refuses a configuration that
	// asks for more, at New and at Reload (Capabilities.Check).
	Capabilities() Capabilities
}

// StartRequest is everything a Runtime needs to start one instance.
type StartRequest struct {
	Group string
	// InstanceID is the supervisor's name for this instance, unique per
	// supervisor; the runtime may use it in logs or cgroup names.
	InstanceID string
	Process    spec.Process
	// Sandbox is the group's sandbox, nil for the host's namespaces.
	Sandbox *spec.Sandbox
	// Volumes are the group's volumes and VolumeMounts every mount of
	// them by its inits and processes: what its sandbox mounts when it is
	// made (spec.VolumeMount).
	Volumes      []spec.Volume
	VolumeMounts []spec.VolumeMount
	// FSGroup is the group's fs_group: the group of its volumes' files.
	FSGroup string
	// Stdout and Stderr receive the process's output; package stack's capture
	// wrapper sets them. nil means podsup's own with hostrt.Runtime and
	// /dev/null in a stack.SandboxRuntime sandbox.
	Stdout, Stderr *os.File
	// ExtraFiles become the process's fds 3, 4, ... (a nil entry leaves
	// that fd closed): socket-activation fds, a readiness pipe. The
	// runtime does not close them.
	ExtraFiles []*os.File
	// RestartsAtOnce says the process is restarted the moment it exits
	// (its back-off is always 0s, and its restarts may be armed: R8). A
	// runtime may keep ready, at the cost of a few fds, what the next
	// start would make anew (a cgroup's open files, an output pipe) until
	// ReleaseProcess or ReleaseGroup.
	RestartsAtOnce bool
	// OnExit reports the instance's end. It must not block.
	OnExit func(lifecycle.ExitStatus)
	// Report puts an event about the group on its record (a sandbox that
	// died and is rebuilt: SandboxChanged). It may be nil; it must not
	// block.
	Report func(lifecycle.RuntimeEvent)
}

// Instance is one started process as the runtime sees it.
// ProbeHoster is a Runtime that knows where a group's http_get and
// tcp_socket probes without a host connect, when not to 127.0.0.1: the
// address of the group's sandbox on a network of its own, which is where
// kubelet's probes go (the pod's IP). It is asked at each probe (a
// rebuilt sandbox may have another address); "" means 127.0.0.1. A
// wrapping Runtime passes it on.
type ProbeHoster interface {
	ProbeHost(group string) string
}

// ProbeHostOf asks rt for group's probe host; "" when rt is no
// ProbeHoster.
func ProbeHostOf(rt Runtime, group string) string {
	if h, ok := rt.(ProbeHoster); ok {
		return h.ProbeHost(group)
	}
	return ""
}

type Instance interface {
	Pid() int
	// Signal sends sig to the main process only (K6's stop signal).
	Signal(sig syscall.Signal) error
	// KillTree sends sig to every process the instance left behind (X10):
	// its cgroup, or its process group without cgroups. It is called again
	// after the main process exited, to clean up what it left behind. For
	// SIGKILL it may wait until the tree is gone; an error says what
	// survives (a task stuck in the kernel), and the worker retries.
	KillTree(sig syscall.Signal) error
	// Remove frees what the instance holds after its exit (a process
	// record, a cgroup); an instance that holds nothing returns nil. The
	// worker calls it exactly once, after the instance exited and the tree
	// kill that follows the exit returned; an error is reported as a
	// Warning event. It is a method of the instance, not of the Runtime,
	// because only the layer that made the instance knows what it holds,
	// and a layer that passes an instance on unchanged then has nothing to
	// forward.
	Remove() error
}

// Retirer is an Instance that can do, in one step, all that follows the
// exit of a process that will not run again (its group is shutting down):
// what KillTree(SIGKILL) and Remove do, and the removal of what the
// runtime kept for the process's next instance (its cgroup), which it may
// use to tell cheaply that nothing was left to kill. The worker calls
// Retire instead of KillTree and Remove there; when Retire fails, it goes
// the usual way.
type Retirer interface {
	Retire() error
}

// TreeChecker is an Instance that can tell, without signalling or
// waiting, that nothing its exited process left runs any more (X10's tree
// is empty), and then records the tree as gone, so that the post-exit
// KillTree reads nothing. The worker asks it on the reaper's goroutine
// before it starts an armed restart there (armed.go): false, also for
// "cannot tell", sends the exit the usual way.
type TreeChecker interface {
	TreeEmpty() bool
}

// ErrWouldWait is a Start's answer, under a context made by
// WithoutWaiting, when it could only go on by waiting (a start slot taken,
// a sandbox to be made, a lock held by a slow start), before it did
// anything: the caller starts the instance the usual way instead.
var ErrWouldWait = errors.New("the start would have to wait")

type noWaitKey struct{}

// WithoutWaiting marks ctx for a Start made on the reaper's goroutine
// (an armed restart, armed.go): a layer that would block answers
// ErrWouldWait instead. A layer may take a lock held only for moments.
func WithoutWaiting(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWaitKey{}, true)
}

// MustNotWait reports whether ctx was made by WithoutWaiting.
func MustNotWait(ctx context.Context) bool {
	v, _ := ctx.Value(noWaitKey{}).(bool)
	return v
}

// StartError is a start that failed before the program ran. Code is the
// exit code the failure is recorded with; podsup's runtimes always use
// StartErrorExitCode, as containerd does (E3), and 0 means it too. The
// cause (command not found, not executable, ...) is in Err.
type StartError struct {
	Code int
	Err  error
}

func (e *StartError) Error() string { return "unable to start process: " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// StartErrorExitCode is the exit code of a start that failed: containerd's
// CRI records 128 with reason StartError, whatever the cause (E3). It is
// proc.StartErrorExitCode, as is sandbox.StartErrorExitCode.
const StartErrorExitCode = proc.StartErrorExitCode

// startFailureCode is the exit code a failed start is reported with.
func startFailureCode(err error) int {
	var se *StartError
	if errors.As(err, &se) && se.Code != 0 {
		return se.Code
	}
	return StartErrorExitCode
}

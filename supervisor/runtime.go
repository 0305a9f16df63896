package supervisor

import (
	"context"
	"errors"
	"os"
	"syscall"

	"github.com/podsup/podsup/spec"
)

// Runtime is the imperative half of the CRI split (docs/architecture.md): it starts
// processes and signals them, and knows nothing of policies. The supervisor
// reaches the kernel only through it. The real one is SandboxRuntime; tests
// use a fake.
//
// The group's worker never waits for a call that may be slow. Start runs
// in a goroutine of its own and may take its time (creating the group's
// sandbox: a holder's handshake, cgroups); the worker carries on meanwhile
// (status, stop requests) and hears of the outcome through its mailbox. A
// stop requested while a start is in flight cancels Start's ctx and is
// carried out once Start returned. Instance.KillTree runs in a goroutine of
// its own too (a cgroup kill polls until the tree is empty); only
// Instance.Signal is called on the worker and must be quick.
//
// OnExit is called exactly once per successfully started instance, from any
// goroutine (also before Start returned), and must not block (the
// supervisor's side only appends to a mailbox). A failed Start leaves
// nothing behind: the runtime frees what it made for the instance.
//
// Who cleans up an instance: the group's worker, alone. After an instance
// exited, the worker SIGKILLs its tree (X10) and then, when the Instance is
// an InstanceRemover, removes it; nothing in a runtime removes an instance
// on its own, so an exit is never raced by a second owner.
type Runtime interface {
	Start(ctx context.Context, req StartRequest) (Instance, error)
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
	// Stdout and Stderr receive the process's output; nil means podsup's
	// own (passthrough); podsup up's capture wrapper sets them.
	Stdout, Stderr *os.File
	// ExtraFiles become the process's fds 3, 4, ... (a nil entry leaves
	// that fd closed): socket-activation fds, a readiness pipe. The
	// runtime does not close them.
	ExtraFiles []*os.File
	// OnExit reports the instance's end. It must not block.
	OnExit func(ExitStatus)
	// Report puts an event about the group on its record (a sandbox that
	// died and is rebuilt: SandboxChanged). It may be nil; it must not
	// block.
	Report func(RuntimeEvent)
}

// RuntimeEvent is something a runtime did to a group on its own account,
// published as one of the group's events.
type RuntimeEvent struct {
	Type    EventType
	Reason  string
	Message string
}

// InstanceRemover is an Instance that holds resources after its exit (a
// process record, a cgroup). The worker calls Remove exactly once, after
// the instance exited and the tree kill that follows the exit returned;
// an error is reported as a Warning event.
type InstanceRemover interface {
	Remove() error
}

// Instance is one started process as the runtime sees it.
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
}

// ExitStatus is how an instance ended.
type ExitStatus struct {
	// Code is the exit code, or 128+N when signal N killed it.
	Code int
	// Signal is the signal that killed it, 0 when it exited.
	Signal syscall.Signal
	// OOMKilled is set when the kernel's OOM killer ended it.
	OOMKilled bool
}

// StartError is a start that failed before the program ran. Code is the
// exit code the failure is reported as (127 command not found, 126 not
// executable, 128 otherwise, as shells and runc do).
type StartError struct {
	Code int
	Err  error
}

func (e *StartError) Error() string { return "unable to start process: " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// startFailureCode is the exit code a failed start is reported with.
func startFailureCode(err error) int {
	var se *StartError
	if errors.As(err, &se) && se.Code != 0 {
		return se.Code
	}
	return 128
}

// ProcessReleaser is a Runtime that keeps something per process across its
// instances (its captured output) to release when a reload removed the
// process: the supervisor calls ReleaseProcess from the group's worker once
// the process's last instance has exited and no process of that name is in
// the group any more, so a process that a later reload adds back under the
// same name starts afresh. A removed group's processes are released with
// the group (GroupReleaser).
type ProcessReleaser interface {
	ReleaseProcess(group, process string)
}

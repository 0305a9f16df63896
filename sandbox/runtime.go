package sandbox

import (
	"context"
	"os"
	"syscall"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// Runtime is the imperative half of the CRI's split (kubelet above, a runtime below): it does exactly what
// it is told to sandboxes and the processes in them, and reports status. It
// never restarts, retries or reacts on its own; policy (restart, back-off,
// probes, hooks, grace) belongs to its caller, the supervisor.
//
// A pod's life through it:
//
//	CreateSandbox ─► CreateProcess ─► StartProcess ─► … ─► StopProcess ─► RemoveProcess ─► DeleteSandbox
//	                                       │     Spawn runs commands inside, any time     │
//
// Every call either fails or blocks until its transition happened: after a
// successful CreateProcess the status says created. Errors are classes
// (ErrNotFound, ErrAlreadyExists, ErrFailedPrecondition, ErrInvalidArgument,
// ErrUnavailable) that say what to do next. All methods are safe for
// concurrent use. Ids are chosen by the caller: 1–63 letters, digits, '-',
// '_' and '.', starting with a letter or digit (spec.ValidName); process ids
// are unique across the runtime.
type Runtime interface {
	// CreateSandbox creates namespaces (none listed: the host's), mounts,
	// hostname, loopback and the cgroup with cfg.Resources, and returns
	// once the sandbox is ready.
	CreateSandbox(ctx context.Context, id string, cfg spec.Sandbox) error
	// DeleteSandbox kills every process still running in it, removes its
	// processes and cgroups and ends its namespaces. Deleting an id being
	// deleted waits for that deletion; an unknown id is ErrNotFound.
	DeleteSandbox(ctx context.Context, id string) error
	ListSandboxes() []SandboxStatus
	SandboxStatus(id string) (SandboxStatus, error)

	// CreateProcess records a process (state created) and creates its
	// cgroup; nothing runs yet.
	CreateProcess(ctx context.Context, id string, cfg ProcessConfig) error
	// StartProcess runs a created process (created → running). A program
	// that cannot be run leaves it exited with reason StartError and
	// returns the *StartError.
	StartProcess(ctx context.Context, id string) error
	// StopProcess sends the stop signal, waits up to timeout for the exit,
	// then SIGKILLs the whole tree (its cgroup, else its process group),
	// and once the main process is gone kills whatever of the tree is left.
	// timeout 0 kills at once. Stopping an exited process only kills its
	// leftovers; stopping a created one makes it exited without running.
	StopProcess(ctx context.Context, id string, timeout time.Duration) error
	// RemoveProcess forgets an exited (or never started) process and
	// removes its cgroup, killing leftovers of its tree first. A kept
	// cgroup (ProcessConfig.Cgroup) stays for the next process naming it;
	// once a newer process holds it, the older one's tree is empty.
	RemoveProcess(ctx context.Context, id string) error
	ListProcesses(filter ProcessFilter) []ProcessStatus
	ProcessStatus(id string) (ProcessStatus, error)
	// WaitProcess blocks until the process is exited (or ctx ends) and
	// returns its status.
	WaitProcess(ctx context.Context, id string) (ProcessStatus, error)
	// SignalProcess sends sig to the main process only (a stop signal, a
	// reload); KillProcessTree sends it to every process of its tree.
	SignalProcess(id string, sig syscall.Signal) error
	KillProcessTree(id string, sig syscall.Signal) error

	// Spawn starts c inside the sandbox (every namespace, a cgroup of its
	// own under the sandbox's) and hands back the Process. c's Forker,
	// CgroupFD and Tree are replaced; its OnExit is kept. To run a command
	// to completion in a sandbox (output, timeout, tree kill), give Spawn
	// to internal/execrun: podsup has one such path.
	Spawn(sandboxID string, c *proc.Cmd) (*proc.Process, error)
}

// SandboxState is a sandbox's condition.
type SandboxState string

const (
	// SandboxCreating: CreateSandbox has not returned yet.
	SandboxCreating SandboxState = "creating"
	// SandboxReady: processes can be created and started in it.
	SandboxReady SandboxState = "ready"
	// SandboxFailed: its holder died; its processes are gone (the PID
	// namespace ended, or podsup killed their trees). Only DeleteSandbox
	// is left to do.
	SandboxFailed SandboxState = "failed"
	// SandboxDeleting: DeleteSandbox is under way.
	SandboxDeleting SandboxState = "deleting"
)

// SandboxStatus is a snapshot of a sandbox.
type SandboxStatus struct {
	ID    string
	State SandboxState
	// Message says why it failed.
	Message    string
	Namespaces []string
	Hostname   string
	// HolderPid is the holder's pid in podsup's PID namespace; 0 without
	// new namespaces.
	HolderPid int
	// Cgroup is the sandbox's cgroup directory; "" without cgroups.
	Cgroup    string
	CreatedAt time.Time
	// Processes are the ids of its processes, sorted.
	Processes []string
}

// ProcessConfig is what CreateProcess needs.
type ProcessConfig struct {
	// Sandbox is the id of the sandbox to run in.
	Sandbox string
	// Command is argv; Command[0] without a slash is looked up in the PATH
	// of Env, inside the sandbox.
	Command []string
	// Env is the environment; nil means podsup's own.
	Env []string
	// Dir is the working directory inside the sandbox; "" is podsup's own
	// (the sandbox's root with a rootfs).
	Dir         string
	User, Group string
	// Stdin, Stdout, Stderr become fds 0–2 (nil: /dev/null); ExtraFiles
	// fds 3, 4, ….
	Stdin, Stdout, Stderr *os.File
	ExtraFiles            []*os.File
	// Cgroup, when set, names a process cgroup under the sandbox's that
	// outlives this process: the next process created with the same name
	// (the next instance of one supervised process) is placed in the same
	// cgroup, so a restart costs no mkdir, rmdir or open. It is removed
	// with the sandbox. One process at a time holds it: CreateProcess
	// fails with ErrFailedPrecondition while the previous holder has not
	// exited. Each holder's OOMKilled and CPU usage are its own (the growth
	// of the cgroup's counters since the previous exit); MemoryPeak spans
	// the cgroup's life. Empty: a cgroup of the process's own, named after
	// its id, removed with it. Ignored without cgroups.
	Cgroup string
	// NoFinalUsage spares the exit its read of the cgroup's usage figures,
	// for a caller that reads usage from the cgroups itself (package
	// stack). The exited process's Usage is then the kernel's rusage of it
	// and the children it waited for, and in a kept cgroup (Cgroup) the
	// next holder's live CPU figure counts from the last exit whose
	// figures were read. The read is cgroup2's cpu.stat, which flushes the
	// kernel's per-CPU counters first: right after an exit it was a tenth
	// of the CPU a restart cost (docs/benchmarks.md, S1).
	NoFinalUsage bool
	// StopSignal is what StopProcess sends first; 0 means SIGTERM.
	StopSignal syscall.Signal
	// OnExit, when set, is called once a started process is exited (not
	// after a failed StartProcess, whose error says it), at any time after
	// the fork, also before StartProcess returned, with its status: exit code, signal, reason and OOMKilled are final. Its Usage
	// is the kernel's account of the process and the children it waited
	// for (rusage); the cgroup's figures, which count its whole tree,
	// replace it in ProcessStatus once WaitProcess returns (they are read
	// after OnExit, so that a restart need not wait for them). It runs on
	// a goroutine of the runtime, before WaitProcess returns, and must not
	// block for long or wait for the process.
	OnExit func(ProcessStatus)
}

// Reasons a process ended, in kubelet's words.
const (
	ReasonCompleted  = "Completed"  // exit code 0
	ReasonError      = "Error"      // any other exit
	ReasonOOMKilled  = "OOMKilled"  // the OOM killer ended it (or something of its tree)
	ReasonStartError = "StartError" // the program could not be run
	ReasonStopped    = "Stopped"    // stopped before it was started
)

// StartErrorExitCode is the exit code of a process that could not be
// started, whatever the cause (not found, not executable, ...): containerd's
// CRI records 128 with reason StartError (E3). The cause is in Message.
// podsup run keeps the shell's 127 and 126 (proc.ExitCodeForStartError).
// It is proc.StartErrorExitCode, as is supervisor.StartErrorExitCode.
const StartErrorExitCode = proc.StartErrorExitCode

// ProcessStatus is a snapshot of a process.
type ProcessStatus struct {
	ID      string
	Sandbox string
	State   State
	// Pid is the pid in podsup's PID namespace (0 before start).
	Pid        int
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	// ExitCode is the exit status, or 128+N when signal N killed it, or
	// StartErrorExitCode when the program could not be started (E3).
	ExitCode int
	Signal   syscall.Signal
	// Reason is one of the Reason… constants once exited.
	Reason    string
	OOMKilled bool
	Message   string
	// Usage is read live while running; once exited it is the final figure.
	Usage Usage
}

// Usage is a process's resource use: from its cgroup (the whole tree), or
// without cgroups only the CPU time from wait4's rusage once it exited (the
// process and the children it waited for).
type Usage struct {
	CPU time.Duration
	// MemoryCurrent and MemoryPeak are bytes; MemoryCurrent is 0 once
	// exited.
	MemoryCurrent uint64
	MemoryPeak    uint64
}

// ProcessFilter narrows ListProcesses; zero fields match everything.
type ProcessFilter struct {
	Sandbox string
	State   State
}

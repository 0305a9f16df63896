package sandbox

import (
	"os"
	"syscall"
	"time"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

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
	// RunAs's Dir is inside the sandbox; "" is podsup's own (the
	// sandbox's root with a rootfs).
	proc.RunAs
	// Security, when not nil, narrows what the process may do
	// (proc.Cmd.Security).
	Security *proc.Security
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
	// Resources are the limits of the process's own cgroup (the kept one
	// with Cgroup), within the sandbox's: Kubernetes' per-container limits
	// under the pod's. Zero fields are unlimited; a limit without cgroups
	// is ErrUnavailable.
	Resources spec.Resources
	// NoFinalUsage spares the exit its read of the cgroup's usage figures,
	// for a caller that reads usage from the cgroups itself (package
	// stack). The exited process's Usage is then the kernel's rusage of it
	// and the children it waited for, and in a kept cgroup (Cgroup) the
	// next holder's live CPU figure counts from the last exit whose
	// figures were read. The read is cgroup2's cpu.stat, which flushes the
	// kernel's per-CPU counters first: right after an exit it was a tenth
	// of the CPU a restart cost (docs/benchmarks.md, S1).
	NoFinalUsage bool
	// KeepReady, with Cgroup, keeps the kept cgroup's directory and
	// cgroup.events open from this process on, for a process restarted at
	// once after each exit: its post-exit check (ProcessTreeEmpty) reads
	// the kept file and the next start forks through a dup of the kept
	// directory, where each would open them anew. Two fds, until the
	// sandbox is deleted or the cgroup retired; only with cgroup2 alone
	// (cgroups.OpenReady), ignored elsewhere.
	KeepReady bool
	// OnExit, when set, is called once a started process is exited (not
	// after a failed StartProcess, whose error says it), at any time after
	// the fork, also before StartProcess returned, with its status: exit
	// code, signal and OOMKilled are final. Its Usage is the kernel's account of the process and the children it waited
	// for (rusage); the cgroup's figures, which count its whole tree,
	// replace it in ProcessStatus soon after (they are read after OnExit,
	// so that a restart need not wait for them). It runs on a goroutine of
	// the runtime and must not block for long or wait for the process.
	OnExit func(ProcessStatus)
}

// StartErrorExitCode is the exit code of a process that could not be
// started, whatever the cause (not found, not executable, ...): containerd's
// CRI records 128 with reason StartError (E3). The cause is in Message.
// podsup run keeps the shell's 127 and 126 (proc.ExitCodeForStartError).
// It is proc.StartErrorExitCode, as is supervisor.StartErrorExitCode.
const StartErrorExitCode = proc.StartErrorExitCode

// State is where a process is: created by CreateProcess, running from
// StartProcess until its exit (or a failed start) makes it exited; one
// never started is exited by a kill before it ran.
type State string

const (
	StateCreated State = "created"
	StateRunning State = "running"
	StateExited  State = "exited"
)

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
	// OOMKilled says the OOM killer ended it (or something of its tree).
	// Why a process ended, in kubelet's words, is the supervisor's to say
	// (its core's reasons), not this runtime's.
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

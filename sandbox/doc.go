// Package sandbox is podsup's imperative runtime: it creates sandboxes
// (namespaces + a cgroup) and runs processes in them (Runtime: Create,
// Start, Signal, KillTree, Remove of a process; a process is created,
// running, then exited), execs commands inside a sandbox
// (Spawn; internal/execrun runs one to completion over it), and owns
// cgroup trees and its error classes (errors.go). It knows nothing of
// restart policies, probes or configuration files, and decides nothing:
// it does what it is told and reports exits.
//
// Its one caller in podsup is stack.SandboxRuntime, the supervisor's
// Runtime for groups in sandboxes, which calls it on the orders of the
// supervisor's workers; that is what the API is shaped for. A program
// embedding podsup uses package stack (or package supervisor with a
// Runtime) rather than this one; a program that wants sandboxes without a
// supervisor may use it directly. A binary using it must dispatch
// HolderArg at the top of main (see HolderMain).
//
// It stands on package proc, which owns starting, reaping and signalling a
// process (one process, on the host or through a Forker: proc.Start,
// proc.Cmd, proc.Process): this package adds where a process runs
// (namespaces, through its namespace thread's Forker), the cgroup it is
// placed in (CLONE_INTO_CGROUP) and the cgroup as its Tree. It never waits
// for a process itself.
//
// # Sandbox = holder + namespace thread
//
// A sandbox with new namespaces is held by podsup re-executed as a holder
// ("/proc/self/exe __podsup_init", started with proc.Start and Cloneflags
// for the namespaces asked for). With a PID namespace it is the sandbox's
// PID 1: it makes every mount private, mounts proc/tmpfs/bind mounts,
// pivot_roots into a rootfs, sets the hostname, brings lo up, reaps the
// sandbox's orphans with proc's reaper (its own, in its own process), says
// ready over its control socket and exits when that socket reaches EOF:
// when the sandbox is deleted or podsup dies (holder_protocol.go). Its exit
// ends the PID namespace and with it every process inside; if it dies early
// the sandbox is failed.
//
// Mount targets are paths inside the sandbox and are resolved inside the
// rootfs (openat2 RESOLVE_IN_ROOT), symlinks included: a rootfs's
// "etc -> /" leads to the rootfs's own root, never to the host's, and a
// missing mount point is created inside. Bind sources are host paths. A
// read-only bind is read-only recursively, submounts of its source too.
//
// A sandbox with a user namespace (spec.Sandbox.UserNamespace) differs:
// the holder is cloned into it and starts the sandbox's processes itself,
// with CLONE_PARENT so that they are still podsup's (holder_userns.go).
//
// Processes are not the holder's children. A goroutine per sandbox locks
// its OS thread for good, calls unshare(CLONE_FS) and setns(holder's pidfd,
// flags) (nsthread.go), and every fork into the sandbox (processes and
// Spawn) runs on it: the child lands in every namespace yet is podsup's own,
// so the one reaper, pidfds and cgroup placement apply unchanged. The cgroup
// placement is opened before the work goes to that thread (its mount
// namespace cannot see podsup's /sys/fs/cgroup) and composed inside it.
//
// # Trees and cgroups
//
// Each sandbox has a cgroup with its limits (package cgroups), each process
// a child cgroup, each Spawn a temporary one. A process's cgroup is its Tree:
// KillTree reaches a double-forked setsid daemon, and the cgroup's OOM
// counter tells an OOMKilled exit. Processes created with the same
// ProcessConfig.Cgroup (the instances of one supervised process) share one
// kept cgroup, one at a time, so a restart creates and removes nothing.
// Where cgroups are unavailable the runtime logs it once and falls back to
// process groups.
//
// NewRuntime kills and removes what an earlier run of the same instance
// left in its cgroups (a podsup that was SIGKILLed leaves its processes
// running) before it returns, and Recovered says what that was. The
// instance name is the caller's lock: two runtimes of one instance must not
// run at once (podsup names it after its control socket, which it takes
// first).
package sandbox

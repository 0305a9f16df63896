// Package sandbox is podsup's imperative runtime: it starts processes, owns
// the one wait4 loop that learns how they end, signals them race-free through
// pidfds and kills whole process trees. It knows nothing of restart
// policies, probes or configuration files.
//
// Two layers:
//
//   - Start, Cmd, Process: one process, on the host or through a Forker.
//   - Runtime (LocalRuntime, NewRuntime): the CRI-like imperative interface.
//     Sandboxes (namespaces + a cgroup) and the processes in them, with the
//     state machine created → running → exited → removed (state.go), exec,
//     and error classes (errors.go). A binary using it must dispatch
//     HolderArg at the top of main (see HolderMain).
//
// # Sandbox = holder + namespace thread
//
// A sandbox with new namespaces is held by podsup re-executed as a holder
// ("/proc/self/exe __podsup_init", started with Start and Cloneflags for the
// namespaces asked for). With a PID namespace it is the sandbox's PID 1: it
// makes every mount private, mounts proc/tmpfs/bind mounts, pivot_roots
// into a rootfs, sets the hostname, brings lo up, reaps the sandbox's
// orphans with a wait4 loop of its own, says ready over its control socket
// and exits when that socket reaches EOF: when the sandbox is deleted or
// podsup dies (holder_protocol.go). Its exit ends the PID namespace and
// with it every process inside; if it dies early the sandbox is failed.
//
// Mount targets are paths inside the sandbox and are resolved inside the
// rootfs (openat2 RESOLVE_IN_ROOT), symlinks included: a rootfs's
// "etc -> /" leads to the rootfs's own root, never to the host's, and a
// missing mount point is created inside. Bind sources are host paths. A
// read-only bind is read-only recursively, submounts of its source too.
//
// Processes are not the holder's children. A goroutine per sandbox locks
// its OS thread for good, calls unshare(CLONE_FS) and setns(holder's pidfd,
// flags) (nsthread.go), and every fork into the sandbox (processes, Exec,
// Spawn) runs on it: the child lands in every namespace yet is podsup's own,
// so the one reaper, pidfds and cgroup placement apply unchanged. The cgroup
// placement is opened before the work goes to that thread (its mount
// namespace cannot see podsup's /sys/fs/cgroup) and composed inside it.
//
// # Pidfds on demand
//
// A Process holds no fd while it runs: every signal to it opens a pidfd,
// checks that the process is still registered with the reaper (so the
// pidfd names it and not a later user of its number), sends through it and
// closes it (Process.withPidfd). The reaper's lock is taken only for the
// two lookups, never across a system call of a signal. A held pidfd per process would cost podsup one fd
// per process, which at tens of thousands of processes is the difference
// RLIMIT_NOFILE makes between running them all and failing to start them.
//
// # Trees and cgroups
//
// Each sandbox has a cgroup with its limits (package cgroups), each process
// a child cgroup, each Exec a temporary one. A process's cgroup is its Tree:
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
//
// # One reaper
//
// A process may have only one waiter: with a wait4(-1) loop running, any
// other wait (os/exec's Cmd.Wait, os.Process.Wait) races it and loses exit
// statuses. So the first Start installs a reaper that waits in the kernel
// for any child's exit (waitid(P_ALL, WNOWAIT), which the kernel ends by
// waking that thread: no signal hop), reaps that pid and hands the exit
// to whoever started it; SIGCHLD only wakes it when it had no child to
// wait for. Exits of
// processes nobody started here (orphans reparented to podsup as PID 1 or
// child subreaper) are reaped and counted. Nothing else in podsup may wait
// for a process; CI enforces this.
//
// The race that makes this hard is an exit reaped before the spawner has
// recorded the pid. Start does not hold the reaper's lock across fork+exec:
// an exec can take as long as the filesystem holding the binary (a hung
// network mount: forever), and every other spawn and every exit dispatch
// would wait for it. Instead Start subscribes before the fork (containerd's
// reaper is the model): while any Start is in flight, an exit of a pid
// nobody registered is held rather than counted as an orphan, and Start
// claims it when it registers that pid. The lock is held only for map
// operations and for each wait4(pid, WNOHANG):
//
//	spawner                         reaper
//	-------                         ------
//	lock; subscribe; unlock
//	fork+exec  ──── child exits ──► waitid(WNOWAIT) → pid
//	                                lock; wait4(pid); unknown: hold; unlock
//	lock; register pid
//	  held exit of pid? claim it
//	unlock; deliver the claimed exit (on a goroutine of its own)
//
// A held exit becomes an orphan once every Start that was in flight when
// it was reaped has ended without claiming it. A Start whose exec failed
// claims nothing, but the child ForkExec forked did exist: ForkExec waits
// for it, and if the reaper was quicker, the Start drops the held exit of
// that child (status 253, reaped while it was in flight) so that it is not
// counted as an orphan. Exits always reach their owners on the reaper
// goroutine, so Cmd.OnExit never runs on a spawner's thread.
package sandbox

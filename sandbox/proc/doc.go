// Package proc holds podsup's process primitives: it starts a process
// (Start, Cmd, Process, optionally on another thread through a Forker),
// owns the one reaper that learns how every process ends (Exit), signals
// processes race-free through pidfds and kills a process group whole. It
// knows nothing of sandboxes, namespace set-up, cgroup management,
// restart policies, probes or configuration files, and imports no other
// package of podsup: pid1, internal/execrun and hooks link it without the
// runtime. Package sandbox, the runtime, builds sandboxes on it; a cgroup
// reaches proc only as a Cmd's CgroupFD and Tree.
//
// It is the only package of podsup that may wait for a process (CI's
// onereaper analyzer enforces it), so what must wait without the reaper,
// the fork+exec floors of the benchmarks, lives here too (floor.go).
//
// # Pidfds on demand
//
// A Process holds no fd while it runs: every signal to it opens a pidfd,
// checks that the process is still registered with the reaper (so the
// pidfd names it and not a later user of its number), sends through it and
// closes it (Process.WithPidfd). The reaper's lock is taken only for the
// two lookups, never across a system call of a signal. A held pidfd per process would cost podsup one fd
// per process, which at tens of thousands of processes is the difference
// RLIMIT_NOFILE makes between running them all and failing to start them.
//
// # One reaper
//
// A process may have only one waiter: with a wait4(-1) loop running, any
// other wait (os/exec's Cmd.Wait, os.Process.Wait) races it and loses exit
// statuses. So the first Start installs a reaper that waits in the kernel
// for any child's exit (waitid(P_ALL, WNOWAIT), which the kernel ends by
// waking that thread: no signal hop), reaps that pid and hands the exit
// to whoever started it. When it has no child to wait for, a Start wakes
// it, and in PID 1 so does SIGCHLD. Exits of
// processes nobody started here (orphans reparented to podsup as PID 1 or
// child subreaper) are reaped and counted. Nothing else in podsup may wait
// for a process; CI enforces this.
//
// The reaper belongs to the whole program that links this package: once it
// runs, os/exec's Wait (and any other wait) loses exits to it, and in
// PID 1 SIGCHLD is no longer the program's either. Nor are SIGHUP and
// SIGINT when the program was started ignoring them (nohup): installing
// the reaper hands them to os/signal, so that no process it starts
// inherits that SIG_IGN (every one starts with each signal's default
// disposition and none blocked); the program goes on ignoring them in
// effect. Becoming a child
// subreaper (PR_SET_CHILD_SUBREAPER), so that orphaned descendants come
// back to be reaped here, is the program's choice: StartReaper and
// StartReaperAs(true) make it, and the first Start, when nothing chose
// before, does not.
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
package proc

// Package sandbox is podsup's imperative runtime: it starts processes, owns
// the one wait4 loop that learns how they end, signals them race-free through
// pidfds and kills whole process trees. It knows nothing of restart
// policies, probes or configuration files (../shared/DESIGN.md).
//
// # One reaper
//
// A process may have only one waiter: with a wait4(-1) loop running, any
// other wait (os/exec's Cmd.Wait, os.Process.Wait) races it and loses exit
// statuses. So the first Start installs a SIGCHLD-driven reaper that drains
// wait4(-1, WNOHANG) and hands each exit to whoever started that pid; exits of
// processes nobody started here (orphans reparented to podsup as PID 1 or
// child subreaper) are reaped and counted. Nothing else in podsup may wait
// for a process; CI enforces this.
//
// The race that makes this hard is an exit reaped before the spawner has
// recorded the pid. Start forks while holding the reaper's lock and records
// the pid before releasing it; the reaper takes that lock before it looks a
// pid up, so an early exit simply waits for its owner:
//
//	spawner                         reaper
//	-------                         ------
//	lock
//	fork+exec  ──── child exits ──► wait4 → pid
//	register pid                    lock (blocks)
//	unlock                          ...
//	                                lookup pid → owner found, dispatch
package sandbox

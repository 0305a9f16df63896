// Package supervisor is podsup's declarative half (DESIGN.md): it owns what
// should run and reacts to what did. Per group it owns the init order
// (I1–I4), restart policies (R1–R5), the CrashLoopBackOff throttle (B1–B12
// with X2–X4), graceful termination (K1–K6, X9, X10, X12), critical
// processes (X11), explicit start/stop/restart requests (X7) and recreate
// requests (part C with X8: Recreate, WaitRecreate); it publishes
// kubelet-style events and status snapshots. It reaches the
// kernel only through a Runtime (SandboxRuntime by default).
//
// # Shape
//
// One worker goroutine per group owns that group's state. Everything that
// happens reaches it as a value in its mailbox (an exit, a request, a probe
// result, a hook's end) or as its one timer firing. The worker hands each
// to the group's core, a deterministic state machine that takes the
// current time as an argument and returns a plan: actions (start, stop
// signal, SIGKILL of the tree, run pre_stop, emit an event, critical exit)
// and the next wake-up. The worker then carries the plan out (decide, then
// do, as the kubelet's computePodActions and SyncPod). Starting and
// signalling are quick syscalls done inline, so an exit is answered by the
// next start without another goroutine hop; slow effects (hooks) run in
// goroutines of their own and report back through the mailbox. Readers get
// immutable snapshots: Status copies, events through Subscribe.
//
// # Time
//
// The clock is injected (Options.Clock); the core never reads one. A
// process in back-off restarts on a timer at exactly FinishedAt + back-off
// on that clock (X3), and since every wake-up re-evaluates the back-off
// with the time it is given, nothing can start early.
//
// # Extension points
//
// Probes deliver results with ProbeResult (ready, started, and kills with
// the probe's grace and B8's pre-kill back-off check are implemented in the
// core). Hooks plug in through Options.Hooks; pre_stop is wired and charged
// to the grace (K3); the seams for the others are described on HookRunner.
// Apply reloads live: only the added, removed or changed processes when a
// group's main processes alone changed, the whole group otherwise.
package supervisor

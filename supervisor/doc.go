// Package supervisor is podsup's declarative half (docs/architecture.md): it owns what
// should run and reacts to what did. Per group it owns the init order
// (I1–I4), restart policies (R1–R5), the CrashLoopBackOff throttle (B1–B12
// with X2–X4), graceful termination (K1–K6, X9, X10, X12), probe
// reactions and lifecycle hooks (P, H, X5, X6), critical processes (X11),
// explicit start/stop/restart requests (X7) and recreate requests (part C
// with X8: Recreate, WaitRecreate); it publishes kubelet-style events and
// status snapshots. It reaches the
// kernel only through the Runtime it is given (Options.Runtime, required):
// package stack has the real ones and assembles the whole runtime podsup
// up runs (stack.New); tests use fakes.
//
// # Shape
//
// One worker goroutine per group owns that group's state. Everything that
// happens reaches it as a value in its mailbox (an exit, a request, a probe
// result, a hook's end) or as its one timer firing. The worker hands each
// to the group's core (package internal/core), a deterministic state machine that takes the
// current time as an argument and returns a plan: actions (start, stop
// signal, SIGKILL of the tree, run pre_stop, emit an event, critical exit)
// and the next wake-up. The worker then carries the plan out (decide, then
// do, as the kubelet's computePodActions and SyncPod). The worker never
// waits for anything that may be slow: only the stop signal (a pidfd send)
// is done inline; starts (which may create the group's sandbox), SIGKILLs
// of a tree (a cgroup kill waits until the tree is empty) and hooks run in
// goroutines of their own and report back through the mailbox, so status
// reads and stop requests are never stuck behind them. A stop requested
// while a start is in flight cancels the start and follows once it
// returned. Readers get immutable snapshots: Status copies, events through
// Subscribe.
//
// # Faults
//
// A SIGKILL of a tree that does not end the instance (a task stuck in the
// kernel) is a FailedKill Warning naming what survives, and is tried again
// on a deadline (Options.KillRetry, doubling); a shutdown gives up on such
// an instance after Options.KillAttempts SIGKILLs, records it as
// Unkillable and ends. The worker is the one owner of an instance's
// cleanup: after the exit it kills what the instance left behind and then
// removes it from the runtime (Instance.Remove), reporting any failure as
// a Warning. Each instance's state changes only through a transition
// table of the core; a change the table does not allow (a bug) is an
// InternalError Warning event, and the group goes on. A runtime reports
// what it did on its own account through StartRequest.Report
// (stack.SandboxRuntime's SandboxChanged when it rebuilds a dead sandbox).
//
// # Runtime
//
// Runtime is one interface with every runtime capability the supervisor
// uses, and the supervisor discovers nothing by type assertion: Start,
// Spawner (the group's exec seam for probes and hooks), ReleaseGroup and
// ReleaseProcess (what the runtime holds for a group or a removed process),
// and Capabilities. An Instance has Pid, Signal, KillTree and Remove. A
// runtime that has nothing to do for one of them implements it as a no-op
// (hostrt.Runtime: no sandbox, nothing kept).
//
// A layer around another runtime (notify.Runtime, systemd.JournalRuntime,
// package stack's output capture) implements the whole interface: it passes
// Spawner, ReleaseGroup and ReleaseProcess on to the runtime it wraps,
// after its own part (the capture layer forgets the group's output first),
// and reports the wrapped runtime's Capabilities with its own added. An
// instance it starts through the wrapped runtime it returns unchanged, or
// wraps with every Instance method passed on. Since every method is
// required, a layer cannot drop one by forgetting it.
//
// Capabilities says what of a configuration the runtime can honour: a
// sandbox block (Sandboxes), readiness = "notify" or "fd:N"
// (ReadinessProtocols), sockets (SocketActivation), a log block
// (OutputCapture; journal = true also with Journal). New and Reload refuse
// a configuration that asks for more, with an error wrapping ErrUnsupported
// that names every such setting by its path (group.web.sandbox); a refused
// reload changes nothing. The runtime package stack builds (podsup up's)
// has all of them (Journal when podsup runs under journald).
//
// # Time
//
// The clock is injected (Options.Clock); the core never reads one. A
// process in back-off restarts on a timer at exactly FinishedAt + back-off
// on that clock (X3), and since every wake-up re-evaluates the back-off
// with the time it is given, nothing can start early.
//
// # Probes and hooks
//
// Each process's probes run in probe workers of package probes, one per
// process and probe kind for the group's life (P1); their
// results reach the core through the mailbox like everything else:
// readiness sets ready and the group is ready when all its processes are
// (P12), startup success sets started (P5), and a liveness or startup
// failure kills the instance with the probe's grace (K1.2) and restarts it
// unless the policy is never, with B8's pre-kill back-off check (R4, X4).
// Each failed probe is an Unhealthy event with the probe's output. Hooks
// (X5, H1–H4) run through Options.Hooks (package hooks by
// default) in goroutines of their own: pre_start vetoes a start, post_start
// holds running/started and kills on failure, pre_stop is charged to the
// grace (K3), post_stop follows every exit. Exec probes and hooks run in the
// group's sandbox, through the Runtime's Spawner (X6). ProbeResult lets a
// library user deliver results of their own.
//
// # Reload
//
// Apply (and Reload, which also returns spec.Diff's answer it acted on)
// reloads live: only the added, removed or changed processes when a
// group's main processes alone changed, the whole group otherwise. The
// supervisor block is no part of any group: changing it restarts nothing,
// and its minimum_grace applies to every stop that begins afterwards.
package supervisor

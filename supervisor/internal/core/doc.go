// Package core is the supervisor's decision core: per group, a
// deterministic state machine that owns what should run and decides what
// to do about what happened. It owns the init order (I1–I4), sidecars
// (O1–O7: sidecar.go), restart policies (R1–R5), the CrashLoopBackOff throttle (B1–B12 with X2–X4),
// graceful termination (K1–K6, X9, X10, X12), reactions to probes and
// lifecycle hooks (P, H, X5), the start order's gates and the ordered
// shutdown (W1–W9: depends.go, stoporder.go; another group's state comes
// in as a DependencyInput), critical processes (X11), explicit
// start/stop/restart requests (X7), recreate requests (part C with X8),
// process-level reloads, kill retries, and the status snapshots and events
// that report all of it.
//
// It does no I/O and reads no clock: it imports only spec and the standard
// library's pure packages (internal/lint/layers holds it to that). The
// supervisor's worker feeds a Group inputs (values) with the current time;
// Step returns a Plan: the actions to carry out, in order, and the next
// time it wants to be stepped (the kubelet's computePodActions and
// SyncPod, folded into one step: observe the input, then reconcile desired
// against observed state). Starting processes, sending signals, running
// hooks and probes, publishing events: all of that is the worker's, in
// package supervisor.
//
//	    command / exit / timer / probe result / hook done
//	                       │
//	                       ▼
//	┌──────────── Group.Step(now, input) ────────────────┐
//	│ observe: record the exit, the request, the result  │
//	│ reconcile: stop deadlines (K3, K5, K6), init order │
//	│   (I1–I3), restart policy (R1–R5), back-off (B6)   │
//	└──────────────────────┬──────────────────────────────┘
//	                       ▼
//	  Plan{Actions: start / signal / kill tree / pre_stop /
//	                emit event / critical exit, Wake: time}
//
// A process's life inside the core:
//
//	            start                     exit
//	waiting ───────────► running ───────────────────► terminated
//	  ▲                    │ stop request, probe kill     │
//	  │                    ▼                              │ policy says restart
//	  │              stopping: pre_stop → signalled →     │
//	  │                        killed ──── exit ──────────┤
//	  └───── CrashLoopBackOff (timer at F + back-off) ◄───┘
//
// Each instance of a process is in exactly one phase, from its birth
// (New, launched at once) to its end, and phases change only through the
// transition table in instance.go: fire is their one writer.
//
// Every time the core compares comes from the supervisor's clock (with Go's
// monotonic reading); wall-clock times are for display only (C9).
package core

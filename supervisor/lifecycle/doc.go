// Package lifecycle is the vocabulary of a process's lifecycle as the
// supervisor reports it: events and their reasons, process states and
// waiting and termination reasons, group phases, the status snapshots
// (GroupStatus, ProcessStatus, Termination, Terminating), how an instance
// ended (ExitStatus), what a runtime reports on its own account
// (RuntimeEvent), why an instance is stopped (KillReason) and the kill
// retries' defaults, and recreate requests (RecreateSpec, RecreateStatus,
// their phases, failure policy and errors).
//
// The supervisor's decision core produces these values and package
// supervisor publishes them; both import this package, which imports only
// spec and the standard library, so a reader of statuses and events
// depends on no supervisor code.
package lifecycle

package lifecycle

import "time"

// KillReason says why an instance is being stopped. It selects the grace
// period (K1) and decides what happens after the exit.
type KillReason string

const (
	// KillStop is an explicit stop request (X7, K2 override allowed).
	KillStop KillReason = "Stop"
	// KillRestart is an explicit restart request (X7).
	KillRestart KillReason = "Restart"
	// KillShutdown is podsup stopping everything (X9, X11).
	KillShutdown KillReason = "Shutdown"
	// KillLiveness and KillStartup are probe failures (R4, P11); the
	// probe's own grace applies (K1.2).
	KillLiveness KillReason = "LivenessProbe"
	KillStartup  KillReason = "StartupProbe"
)

// KillPostStartHook is the kill after a failed post_start (H2): the
// group's grace, pre_stop included, and afterwards restart policy and
// back-off as for any exit.
const KillPostStartHook KillReason = "FailedPostStartHook"

// KillReload is a kill caused by a reload that removed or changed the
// process (R4: a spec change always restarts).
const KillReload KillReason = "Reload"

// KillRecreate is a kill ordered by a recreate request (C4, X7): the
// request's grace overrides K1 and the new instance starts at once.
const KillRecreate KillReason = "Recreate"

// KillGroupCompleted stops a sidecar whose group has ended: every main
// process ended for good, or an init failed it (O4).
const KillGroupCompleted KillReason = "GroupCompleted"

// Defaults for the kill retries (the supervisor's Options.KillRetry and
// KillAttempts): the first retry comes this long after a SIGKILL that did
// not end the instance, each further one twice as late up to a minute; a
// shutdown gives up on an instance after so many SIGKILLs.
const (
	DefaultKillRetry    = 2 * time.Second
	DefaultKillAttempts = 3
)

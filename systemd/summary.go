package systemd

import (
	"fmt"

	"github.com/podsup/podsup/supervisor"
)

// GroupReady reports whether a group has started and is ready: its init
// processes are done and every main process is running, started and ready,
// or has completed (exit 0) for good, or was stopped on request. A group
// that succeeded as a whole is ready; one still initialising, crash-looping
// or failed is not.
func GroupReady(g supervisor.GroupStatus) bool {
	switch g.Phase {
	case supervisor.PhaseSucceeded:
		return true
	case supervisor.PhaseRunning:
	default:
		return false
	}
	for _, p := range g.Processes {
		switch {
		case p.State == supervisor.StateRunning && p.Started && p.Ready:
		case p.State == supervisor.StateTerminated && p.Reason == supervisor.ReasonCompleted:
		case p.State == supervisor.StateWaiting && p.Reason == supervisor.ReasonStopped:
		case p.State == supervisor.StateTerminated && p.Reason == supervisor.ReasonStopped: // X13
		default:
			return false
		}
	}
	return true
}

// AllReady reports whether every group is ready (GroupReady). No groups at
// all counts as ready: there is nothing to wait for.
func AllReady(st supervisor.Status) bool {
	for _, g := range st.Groups {
		if !GroupReady(g) {
			return false
		}
	}
	return true
}

// Summary is the one-line STATUS: "3/3 groups ready, 0 in back-off", where
// back-off counts processes waiting in CrashLoopBackOff.
func Summary(st supervisor.Status) string {
	ready, backoff := 0, 0
	for _, g := range st.Groups {
		if GroupReady(g) {
			ready++
		}
		for _, list := range [][]supervisor.ProcessStatus{g.Init, g.Processes} {
			for _, p := range list {
				if p.State == supervisor.StateWaiting && p.Reason == supervisor.ReasonCrashLoopBackOff {
					backoff++
				}
			}
		}
	}
	return fmt.Sprintf("%d/%d groups ready, %d in back-off", ready, len(st.Groups), backoff)
}

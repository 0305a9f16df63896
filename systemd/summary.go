package systemd

import (
	"fmt"

	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// GroupReady reports whether a group has started and is ready: its init
// processes are done and every main process is running, started and ready,
// or has completed (exit 0) for good, or was stopped on request. A group
// that succeeded as a whole is ready; one still initialising, crash-looping
// or failed is not.
func GroupReady(g lifecycle.GroupStatus) bool {
	switch g.Phase {
	case lifecycle.PhaseSucceeded:
		return true
	case lifecycle.PhaseRunning:
	default:
		return false
	}
	for _, p := range g.Processes {
		switch {
		case p.State == lifecycle.StateRunning && p.Started && p.Ready:
		case p.State == lifecycle.StateTerminated && p.Reason == lifecycle.ReasonCompleted:
		case p.State == lifecycle.StateWaiting && p.Reason == lifecycle.ReasonStopped:
		case p.State == lifecycle.StateTerminated && p.Reason == lifecycle.ReasonStopped: // X13
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
		for _, list := range [][]lifecycle.ProcessStatus{g.Init, g.Processes} {
			for _, p := range list {
				if p.State == lifecycle.StateWaiting && p.Reason == lifecycle.ReasonCrashLoopBackOff {
					backoff++
				}
			}
		}
	}
	return fmt.Sprintf("%d/%d groups ready, %d in back-off", ready, len(st.Groups), backoff)
}

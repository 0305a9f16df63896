package apiserver

import (
	"testing"

	"github.com/podsup/podsup/supervisor/lifecycle"
)

// TestInitializedAsKubelet: describe's Initialized condition follows
// kubelet's GeneratePodInitializedCondition (semantics S9): completed
// inits and started sidecars; a running main process keeps the group
// initialized while a sidecar restarts; a Succeeded group is initialized.
func TestInitializedAsKubelet(t *testing.T) {
	done := lifecycle.ProcessStatus{Name: "setup", Init: true, State: "terminated", Terminated: &lifecycle.Termination{ExitCode: 0}}
	failed := lifecycle.ProcessStatus{Name: "setup", Init: true, State: "terminated", Terminated: &lifecycle.Termination{ExitCode: 1}}
	runningInit := lifecycle.ProcessStatus{Name: "setup", Init: true, State: "running"}
	sidecar := lifecycle.ProcessStatus{Name: "proxy", Init: true, Sidecar: true, State: "running", Started: true}
	sidecarStarting := lifecycle.ProcessStatus{Name: "proxy", Init: true, Sidecar: true, State: "running"}
	sidecarWaiting := lifecycle.ProcessStatus{Name: "proxy", Init: true, Sidecar: true, State: "waiting", Reason: "CrashLoopBackOff"}
	app := lifecycle.ProcessStatus{Name: "app", State: "running"}
	appWaiting := lifecycle.ProcessStatus{Name: "app", State: "waiting", Reason: "PodInitializing"}
	for _, c := range []struct {
		name string
		g    lifecycle.GroupStatus
		want bool
	}{
		{"no inits", lifecycle.GroupStatus{Phase: "Pending", Processes: []lifecycle.ProcessStatus{appWaiting}}, true},
		{"init done", lifecycle.GroupStatus{Phase: "Pending", Init: []lifecycle.ProcessStatus{done}, Processes: []lifecycle.ProcessStatus{appWaiting}}, true},
		{"init running", lifecycle.GroupStatus{Phase: "Pending", Init: []lifecycle.ProcessStatus{runningInit}, Processes: []lifecycle.ProcessStatus{appWaiting}}, false},
		{"init failed", lifecycle.GroupStatus{Phase: "Pending", Init: []lifecycle.ProcessStatus{failed}, Processes: []lifecycle.ProcessStatus{appWaiting}}, false},
		{"init done, sidecar started", lifecycle.GroupStatus{Phase: "Running", Init: []lifecycle.ProcessStatus{done, sidecar}, Processes: []lifecycle.ProcessStatus{app}}, true},
		{"sidecar not yet started", lifecycle.GroupStatus{Phase: "Pending", Init: []lifecycle.ProcessStatus{done, sidecarStarting}, Processes: []lifecycle.ProcessStatus{appWaiting}}, false},
		{"sidecar restarting beside a running app", lifecycle.GroupStatus{Phase: "Running", Init: []lifecycle.ProcessStatus{done, sidecarWaiting}, Processes: []lifecycle.ProcessStatus{app}}, true},
		{"succeeded, sidecar stopped", lifecycle.GroupStatus{Phase: "Succeeded", Init: []lifecycle.ProcessStatus{done, sidecarWaiting}}, true},
	} {
		if got := initialized(&c.g); got != c.want {
			t.Errorf("%s: Initialized %v, want %v", c.name, got, c.want)
		}
	}
}

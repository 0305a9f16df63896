package apiserver

import (
	"testing"

	"github.com/podsup/podsup/api"
)

// TestInitializedAsKubelet: describe's Initialized condition follows
// kubelet's GeneratePodInitializedCondition (semantics S9): completed
// inits and started sidecars; a running main process keeps the group
// initialized while a sidecar restarts; a Succeeded group is initialized.
func TestInitializedAsKubelet(t *testing.T) {
	done := api.ProcessStatus{Name: "setup", Init: true, State: "terminated", Terminated: &api.Termination{ExitCode: 0}}
	failed := api.ProcessStatus{Name: "setup", Init: true, State: "terminated", Terminated: &api.Termination{ExitCode: 1}}
	runningInit := api.ProcessStatus{Name: "setup", Init: true, State: "running"}
	sidecar := api.ProcessStatus{Name: "proxy", Init: true, Sidecar: true, State: "running", Started: true}
	sidecarStarting := api.ProcessStatus{Name: "proxy", Init: true, Sidecar: true, State: "running"}
	sidecarWaiting := api.ProcessStatus{Name: "proxy", Init: true, Sidecar: true, State: "waiting", Reason: "CrashLoopBackOff"}
	app := api.ProcessStatus{Name: "app", State: "running"}
	appWaiting := api.ProcessStatus{Name: "app", State: "waiting", Reason: "PodInitializing"}
	for _, c := range []struct {
		name string
		g    api.GroupStatus
		want bool
	}{
		{"no inits", api.GroupStatus{Phase: "Pending", Processes: []api.ProcessStatus{appWaiting}}, true},
		{"init done", api.GroupStatus{Phase: "Pending", Init: []api.ProcessStatus{done}, Processes: []api.ProcessStatus{appWaiting}}, true},
		{"init running", api.GroupStatus{Phase: "Pending", Init: []api.ProcessStatus{runningInit}, Processes: []api.ProcessStatus{appWaiting}}, false},
		{"init failed", api.GroupStatus{Phase: "Pending", Init: []api.ProcessStatus{failed}, Processes: []api.ProcessStatus{appWaiting}}, false},
		{"init done, sidecar started", api.GroupStatus{Phase: "Running", Init: []api.ProcessStatus{done, sidecar}, Processes: []api.ProcessStatus{app}}, true},
		{"sidecar not yet started", api.GroupStatus{Phase: "Pending", Init: []api.ProcessStatus{done, sidecarStarting}, Processes: []api.ProcessStatus{appWaiting}}, false},
		{"sidecar restarting beside a running app", api.GroupStatus{Phase: "Running", Init: []api.ProcessStatus{done, sidecarWaiting}, Processes: []api.ProcessStatus{app}}, true},
		{"succeeded, sidecar stopped", api.GroupStatus{Phase: "Succeeded", Init: []api.ProcessStatus{done, sidecarWaiting}}, true},
	} {
		if got := initialized(c.g); got != c.want {
			t.Errorf("%s: Initialized %v, want %v", c.name, got, c.want)
		}
	}
}

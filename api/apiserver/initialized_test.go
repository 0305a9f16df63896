package apiserver

import (
	"testing"

	"github.com/podsup/podsup/supervisor"
)

// TestInitializedAsKubelet: describe's Initialized condition follows
// kubelet's GeneratePodInitializedCondition (semantics S9): completed
// inits and started sidecars; a running main process keeps the group
// initialized while a sidecar restarts; a Succeeded group is initialized.
func TestInitializedAsKubelet(t *testing.T) {
	done := supervisor.ProcessStatus{Name: "setup", Init: true, State: "terminated", Terminated: &supervisor.Termination{ExitCode: 0}}
	failed := supervisor.ProcessStatus{Name: "setup", Init: true, State: "terminated", Terminated: &supervisor.Termination{ExitCode: 1}}
	runningInit := supervisor.ProcessStatus{Name: "setup", Init: true, State: "running"}
	sidecar := supervisor.ProcessStatus{Name: "proxy", Init: true, Sidecar: true, State: "running", Started: true}
	sidecarStarting := supervisor.ProcessStatus{Name: "proxy", Init: true, Sidecar: true, State: "running"}
	sidecarWaiting := supervisor.ProcessStatus{Name: "proxy", Init: true, Sidecar: true, State: "waiting", Reason: "CrashLoopBackOff"}
	app := supervisor.ProcessStatus{Name: "app", State: "running"}
	appWaiting := supervisor.ProcessStatus{Name: "app", State: "waiting", Reason: "PodInitializing"}
	for _, c := range []struct {
		name string
		g    supervisor.GroupStatus
		want bool
	}{
		{"no inits", supervisor.GroupStatus{Phase: "Pending", Processes: []supervisor.ProcessStatus{appWaiting}}, true},
		{"init done", supervisor.GroupStatus{Phase: "Pending", Init: []supervisor.ProcessStatus{done}, Processes: []supervisor.ProcessStatus{appWaiting}}, true},
		{"init running", supervisor.GroupStatus{Phase: "Pending", Init: []supervisor.ProcessStatus{runningInit}, Processes: []supervisor.ProcessStatus{appWaiting}}, false},
		{"init failed", supervisor.GroupStatus{Phase: "Pending", Init: []supervisor.ProcessStatus{failed}, Processes: []supervisor.ProcessStatus{appWaiting}}, false},
		{"init done, sidecar started", supervisor.GroupStatus{Phase: "Running", Init: []supervisor.ProcessStatus{done, sidecar}, Processes: []supervisor.ProcessStatus{app}}, true},
		{"sidecar not yet started", supervisor.GroupStatus{Phase: "Pending", Init: []supervisor.ProcessStatus{done, sidecarStarting}, Processes: []supervisor.ProcessStatus{appWaiting}}, false},
		{"sidecar restarting beside a running app", supervisor.GroupStatus{Phase: "Running", Init: []supervisor.ProcessStatus{done, sidecarWaiting}, Processes: []supervisor.ProcessStatus{app}}, true},
		{"succeeded, sidecar stopped", supervisor.GroupStatus{Phase: "Succeeded", Init: []supervisor.ProcessStatus{done, sidecarWaiting}}, true},
	} {
		if got := initialized(&c.g); got != c.want {
			t.Errorf("%s: Initialized %v, want %v", c.name, got, c.want)
		}
	}
}

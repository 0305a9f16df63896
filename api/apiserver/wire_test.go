package apiserver

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

var updateWire = flag.Bool("update-wire", false, "rewrite testdata/wire.json from the current conversions")

// TestWireFormatIsStable pins the JSON of the v1 objects built from the
// supervisor's snapshots: `podsup ... -o json` prints exactly these, and
// scripts read them, so a field's name, its omission when empty and the
// shape of times and signals must not change by accident.
func TestWireFormatIsStable(t *testing.T) {
	readCgroup = func(int) (cgroupDirs, bool) { return cgroupDirs{}, false } // pid 4242 is not the sample's
	defer func() { readCgroup = processCgroup }()
	readSecurity = func(pid int) (*api.LiveSecurity, bool) {
		return &api.LiveSecurity{Pid: pid, UID: 1000, GID: 1000, Groups: []int{1000, 44}, CapEffective: []string{"NET_BIND_SERVICE"},
			CapBounding: []string{"NET_BIND_SERVICE"}, CapAmbient: []string{"NET_BIND_SERVICE"}, NoNewPrivs: true, Seccomp: "filter"}, true
	}
	defer func() { readSecurity = procSecurity }()
	got, err := json.MarshalIndent(wireSample(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "wire.json")
	if *updateWire {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the pinned wire format: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the wire format changed; got:\n%s\nwant (%s):\n%s", got, path, want)
	}
}

// describedSpec is the configuration of wireSample's group "web", with
// every part a description shows.
func describedSpec() *spec.Group {
	grace := 20 * time.Second
	return &spec.Group{Name: "web", RestartPolicy: spec.RestartOnFailure, TerminationGracePeriod: &grace,
		Backoff: &spec.Backoff{Initial: time.Second, Max: time.Minute, Reset: time.Hour},
		Sandbox: &spec.Sandbox{Namespaces: []string{"pid", "mount"}, Hostname: "web",
			Mounts:    []spec.Mount{{Type: "tmpfs", Target: "/tmp"}, {Type: "bind", Source: "/data", Target: "/data", ReadOnly: true}},
			Resources: spec.Resources{Memory: 64 << 20, CPU: 0.5, Pids: 100}, ReadOnlyRootFilesystem: true, PrivateTmp: true},
		Security: spec.Security{RunAsNonRoot: spec.Bool(true), Seccomp: spec.SeccompRuntimeDefault, SupplementalGroups: []string{"44"}},
		Init:     []spec.Process{{Name: "migrate", Command: []string{"migrate", "up"}}},
		Processes: []spec.Process{{Name: "api", Command: []string{"api", "--port", "8080"}, User: "app", WorkingDir: "/srv", Critical: true,
			Security:       spec.Security{NoNewPrivileges: spec.Bool(true), Capabilities: &spec.Capabilities{Drop: []string{"ALL"}, Add: []string{"NET_BIND_SERVICE"}}},
			StartupProbe:   &spec.Probe{Handler: spec.Handler{TCPSocket: &spec.TCPSocketAction{Port: 8080}}},
			LivenessProbe:  &spec.Probe{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"/bin/true"}}}},
			ReadinessProbe: &spec.Probe{Handler: spec.Handler{HTTPGet: &spec.HTTPGetAction{Port: 8080, Path: "/ready"}}, InitialDelay: time.Second, Period: 5 * time.Second},
			PreStop:        &spec.Hook{Handler: spec.Handler{Sleep: &spec.SleepAction{Duration: time.Second}}, Timeout: 5 * time.Second},
			PostStart:      &spec.Hook{Handler: spec.Handler{Exec: &spec.ExecAction{Command: []string{"warm"}}}}}}}
}

// wireSample converts snapshots with every field set, and with every
// optional one empty, into the wire objects.
func wireSample() any {
	t0 := time.Date(2026, 11, 25, 1, 2, 3, 456_000_000, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	dur := func(d time.Duration) *time.Duration { return &d }
	full := lifecycle.ProcessStatus{
		Name: "api", State: lifecycle.StateRunning, Reason: "Started", Message: "probe ok",
		Ready: true, Started: true, StatusText: "serving 3 clients", RestartCount: 2,
		InstanceID: "api-3", Pid: 4242, StartedAt: at(10), NextStartAt: at(40),
		Terminated: &lifecycle.Termination{InstanceID: "api-3", ExitCode: 137, Signal: syscall.SIGKILL,
			Reason: "Error", Message: "killed", StartedAt: at(10), FinishedAt: at(20)},
		LastTermination: &lifecycle.Termination{InstanceID: "api-2", ExitCode: 1, Reason: "Error", StartedAt: at(1), FinishedAt: at(2)},
		FinishedAt:      at(20),
	}
	status := supervisor.Status{Groups: []lifecycle.GroupStatus{
		{Name: "web", Phase: lifecycle.PhaseRunning, Ready: true, ReadinessHeldBy: "rc-1",
			Init:      []lifecycle.ProcessStatus{{Name: "migrate", Init: true, State: lifecycle.StateTerminated}},
			Processes: []lifecycle.ProcessStatus{full, {Name: "idle", State: lifecycle.StateWaiting}}},
		{Name: "empty", Phase: lifecycle.PhasePending},
	}}
	events := []lifecycle.Event{
		{Seq: 7, Time: at(30), Count: 3, FirstTime: at(5), Type: lifecycle.EventWarning, Reason: "BackOff",
			Group: "web", Process: "api", InstanceID: "api-3", RestartCount: 2, Pid: 4242, Message: "back-off 20s"},
		{Seq: 8, Time: at(31), Type: lifecycle.EventNormal, Reason: "Started", Group: "web"},
	}
	recreates := []lifecycle.RecreateStatus{
		{ID: "rc-1", Phase: lifecycle.RecreateCompleted, Message: "done", HoldsReadiness: true,
			CreationTime: at(1), StartTime: at(2), CompletionTime: at(3),
			Spec: lifecycle.RecreateSpec{Group: "web", Processes: []string{"api", "idle"}, Ordered: true,
				FailurePolicy: lifecycle.FailurePolicyIgnore, TerminationGracePeriod: dur(10 * time.Second),
				UnreadyGracePeriod: dur(time.Second), MinStarted: 5 * time.Second, ActiveDeadline: time.Minute,
				TTLAfterFinished: dur(time.Hour), Requester: "api (uid 0, pid 1)"},
			Processes: []lifecycle.ProcessRecreateStatus{
				{Name: "api", Phase: lifecycle.ProcessRecreateSucceeded, PreviousInstanceID: "api-2", InstanceID: "api-3"},
				{Name: "idle", Phase: lifecycle.ProcessRecreateFailed, Message: "exited"}}},
		{ID: "rc-2", Phase: lifecycle.RecreatePending, Spec: lifecycle.RecreateSpec{Group: "web", Processes: []string{"api"}}},
	}
	out := struct {
		Status    api.StatusResponse   `json:"status"`
		Events    []api.Event          `json:"events"`
		Recreates api.RecreateList     `json:"recreates"`
		Describe  api.DescribeResponse `json:"describe"`
	}{Status: toStatus(status), Recreates: api.RecreateList{Recreates: []api.Recreate{}}}
	for _, e := range events {
		out.Events = append(out.Events, toEvent(e))
	}
	for _, r := range recreates {
		out.Recreates.Recreates = append(out.Recreates.Recreates, toRecreate(r))
	}
	out.Describe = api.DescribeResponse{Group: describeGroup(status.Groups[0], describedSpec(), spec.Backoff{}, toEvents(events), at(31))}
	return out
}

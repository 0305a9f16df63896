package spec

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

func validGroup() Group {
	return Group{Name: "web", Processes: []Process{{Name: "api", Command: []string{"/bin/true"}}}}
}

func TestValidateReportsEachProblemWithItsPath(t *testing.T) {
	cases := []struct {
		name     string
		mutate   func(g *Group)
		wantPath string
		wantMsg  string
	}{
		{"empty command", func(g *Group) { g.Processes[0].Command = nil }, "group.web.process.api.command", "command is empty"},
		{"D4 liveness success_threshold", func(g *Group) {
			g.Processes[0].LivenessProbe = &Probe{Handler: Handler{Exec: &ExecAction{Command: []string{"x"}}}, SuccessThreshold: 2}
		}, "group.web.process.api.liveness_probe.success_threshold", "must be 1"},
		{"D6 two handlers", func(g *Group) {
			g.Processes[0].ReadinessProbe = &Probe{Handler: Handler{Exec: &ExecAction{Command: []string{"x"}}, TCPSocket: &TCPSocketAction{Port: 80}}}
		}, "group.web.process.api.readiness_probe", "exactly one"},
		{"D6 no handler", func(g *Group) { g.Processes[0].PreStop = &Hook{} }, "group.web.process.api.pre_stop", "exactly one"},
		{"D3 negative period", func(g *Group) {
			g.Processes[0].StartupProbe = &Probe{Handler: Handler{TCPSocket: &TCPSocketAction{Port: 80}}, Period: -time.Second}
		}, "group.web.process.api.startup_probe.period", "negative"},
		{"period below the floor", func(g *Group) {
			g.Processes[0].LivenessProbe = &Probe{Handler: Handler{TCPSocket: &TCPSocketAction{Port: 80}}, Period: time.Nanosecond}
		}, "group.web.process.api.liveness_probe.period", "period must be at least 100ms (or unset for the default), got 1ns"},
		{"timeout below the floor", func(g *Group) {
			g.Processes[0].ReadinessProbe = &Probe{Handler: Handler{TCPSocket: &TCPSocketAction{Port: 80}}, Timeout: time.Millisecond}
		}, "group.web.process.api.readiness_probe.timeout", "timeout must be at least 10ms"},
		{"D5 readiness grace", func(g *Group) {
			g.Processes[0].ReadinessProbe = &Probe{Handler: Handler{TCPSocket: &TCPSocketAction{Port: 80}}, TerminationGracePeriod: Durp(time.Second)}
		}, "group.web.process.api.readiness_probe.termination_grace_period", "liveness and startup"},
		{"bad policy", func(g *Group) { g.RestartPolicy = "sometimes" }, "group.web.restart_policy", "not one of"},
		{"duplicate process", func(g *Group) { g.Processes = append(g.Processes, g.Processes[0]) }, "group.web.process.api", "duplicate"},
		{"no process", func(g *Group) { g.Processes = nil }, "group.web", "no process"},
		{"hostname without uts", func(g *Group) { g.Sandbox = &Sandbox{Hostname: "x"} }, "group.web.sandbox.hostname", "uts"},
		{"rootfs is the host's root", func(g *Group) {
			g.Sandbox = &Sandbox{Namespaces: []string{"mount"}, Rootfs: "/"}
		}, "group.web.sandbox.rootfs", "leave rootfs out"},
		{"read-only root without a mount namespace", func(g *Group) {
			g.Sandbox = &Sandbox{Namespaces: []string{"pid"}, ReadOnlyRootFilesystem: true}
		}, "group.web.sandbox", "need the \"mount\" namespace"},
		{"private tmp without a mount namespace", func(g *Group) { g.Sandbox = &Sandbox{PrivateTmp: true} }, "group.web.sandbox", "need the \"mount\" namespace"},
		{"unknown proc_mount", func(g *Group) {
			g.Sandbox = &Sandbox{Namespaces: []string{"mount"}, ProcMount: "Masked"}
		}, "group.web.sandbox.proc_mount", "Default"},
		{"O1 init restart policy other than always", func(g *Group) {
			g.Init = []Process{{Name: "migrate", Command: []string{"x"}, RestartPolicy: RestartOnFailure}}
		}, "group.web.init.migrate.restart_policy", `only restart_policy = "always"`},
		{"O5 a plain init takes no probe", func(g *Group) {
			g.Init = []Process{{Name: "migrate", Command: []string{"x"}, ReadinessProbe: &Probe{Handler: Handler{TCPSocket: &TCPSocketAction{Port: 80}}}}}
		}, "group.web.init.migrate.readiness_probe", "run to completion"},
		{"watchdog without notify", func(g *Group) { g.Processes[0].Watchdog = time.Second }, "group.web.process.api.watchdog", "notify"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := validGroup()
			tc.mutate(&g)
			es, ok := AsErrors(g.Validate())
			if !ok {
				t.Fatalf("no error, want %s: %s", tc.wantPath, tc.wantMsg)
			}
			for _, e := range es {
				if strings.Join(e.Path, ".") == tc.wantPath && strings.Contains(e.Msg, tc.wantMsg) {
					return
				}
			}
			t.Fatalf("got %v, want %s: …%s…", es, tc.wantPath, tc.wantMsg)
		})
	}
}

func TestValidGroupPasses(t *testing.T) {
	g := validGroup()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	c := Config{Groups: []Group{validGroup(), validGroup()}}
	es, _ := AsErrors(c.Validate())
	if len(es) != 1 || !strings.Contains(es[0].Msg, "duplicate group") {
		t.Fatalf("duplicate groups: got %v", es)
	}
}

// O5: a sidecar takes probes and a readiness protocol, which a plain init
// does not.
func TestSidecarTakesProbesAndReadiness(t *testing.T) {
	g := validGroup()
	probe := &Probe{Handler: Handler{TCPSocket: &TCPSocketAction{Port: 80}}}
	g.Init = []Process{{Name: "proxy", Command: []string{"x"}, RestartPolicy: RestartAlways,
		StartupProbe: probe, LivenessProbe: probe, ReadinessProbe: probe, Readiness: "notify"}}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if !IsSidecar(&g.Init[0]) {
		t.Error("an init with restart_policy always is a sidecar")
	}
	if g.Init[0].RestartPolicy = ""; IsSidecar(&g.Init[0]) {
		t.Error("an init without restart_policy is no sidecar")
	}
}

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "term": syscall.SIGTERM, "9": syscall.SIGKILL, "SIGRTMIN+2": 36, "QUIT": syscall.SIGQUIT} {
		got, err := ParseSignal(in)
		if err != nil || got != want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"SIGFOO", "0", "65", ""} {
		if _, err := ParseSignal(bad); err == nil {
			t.Errorf("ParseSignal(%q) accepted", bad)
		}
	}
	if SignalName(syscall.SIGTERM) != "SIGTERM" {
		t.Errorf("SignalName(15) = %s", SignalName(syscall.SIGTERM))
	}
}

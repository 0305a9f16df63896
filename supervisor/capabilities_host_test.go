package supervisor

import (
	"strings"
	"testing"

	"github.com/podsup/podsup/spec"
)

// TestHostFaultsAreRefusedWithTheirFix: what podsup's own process cannot
// have (namespaces without CAP_SYS_ADMIN, limits without a cgroup it may
// write, sockets it was not passed) is refused with the configuration, at
// New and at Reload, naming the fix; none of it failed at every start in
// a back-off loop (issue #26, item 9; docs/semantics.md D8).
func TestHostFaultsAreRefusedWithTheirFix(t *testing.T) {
	all := Capabilities{Sandboxes: true, ReadinessProtocols: true, SocketActivation: true, OutputCapture: true, Journal: true}
	group := func() spec.Group {
		return spec.Group{Name: "web",
			Sandbox:   &spec.Sandbox{Namespaces: []string{"pid"}, Resources: spec.Resources{Memory: 1 << 20}},
			Processes: []spec.Process{{Name: "api", Command: []string{"x"}, Sockets: []string{"web", "admin"}}}}
	}
	cfg := &spec.Config{Groups: []spec.Group{group()}}
	if err := all.Check(cfg); err != nil {
		t.Fatalf("nothing kept back: %v", err)
	}
	held := all
	held.NoNamespaces = "they need root: run podsup as root"
	held.NoResourceLimits = "they need a delegated cgroup: Delegate=yes"
	held.ActivationChecked, held.ActivationSockets = true, "web:metrics"
	err := held.Check(cfg)
	es, _ := spec.AsErrors(err)
	want := []string{
		`group.web.sandbox.namespaces: namespaces = ["pid"] cannot be made: they need root: run podsup as root`,
		"group.web.sandbox.resources: resource limits cannot be enforced: they need a delegated cgroup: Delegate=yes",
		`group.web.process.api.sockets: no socket named "admin" was passed to podsup (passed: "web", "metrics"): start podsup from a systemd .socket unit with FileDescriptorName=admin`,
	}
	if len(es) != len(want) {
		t.Fatalf("refused %d settings, want %d:\n%v", len(es), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(es[i].Error(), w) {
			t.Errorf("refusal %d: %q, want %q", i, es[i].Error(), w)
		}
	}
	none := all
	none.ActivationChecked = true
	if err := none.Check(cfg); err == nil || !strings.Contains(err.Error(), `no socket named "web", "admin" was passed to podsup (passed: none: podsup was not socket-activated)`) {
		t.Errorf("not socket-activated: %v", err)
	}
	// A group without a sandbox, or a process without sockets, asks for
	// nothing the host keeps back.
	g := group()
	g.Sandbox, g.Processes[0].Sockets = nil, nil
	if err := held.Check(&spec.Config{Groups: []spec.Group{g}}); err != nil {
		t.Errorf("a plain group: %v", err)
	}
}

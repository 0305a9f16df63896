package supervisor

import (
	"slices"
	"strings"
	"testing"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

func capsOf(names ...string) proc.CapSet {
	var s proc.CapSet
	for _, n := range names {
		i, _ := spec.CapabilityNumber(n)
		s |= 1 << i
	}
	return s
}

func TestSecurityOfCapabilities(t *testing.T) {
	t.Parallel()
	all := AllCaps()
	def := DefaultCapSet()
	if n := len(CapNames(def)); n != 14 {
		t.Fatalf("the default set has %d capabilities, want runc's 14: %v", n, CapNames(def))
	}
	drop := func(names ...string) *spec.Capabilities { return &spec.Capabilities{Drop: names} }
	cases := []struct {
		name            string
		s               spec.Security
		sandboxed, root bool
		want            *proc.CapSet // nil: podsup's own
	}{
		{"root in a sandbox: the default set", spec.Security{NoNewPrivileges: spec.Bool(true)}, true, true, &def},
		{"root on the host: podsup's", spec.Security{NoNewPrivileges: spec.Bool(true)}, false, true, nil},
		{"root on the host, privileged = false: the default set", spec.Security{Privileged: spec.Bool(false)}, false, true, &def},
		{"privileged in a sandbox: podsup's", spec.Security{Privileged: spec.Bool(true)}, true, true, nil},
		{"drop on the host: from all", spec.Security{Capabilities: drop("NET_RAW")}, false, true, ptr(all &^ capsOf("NET_RAW"))},
		{"drop in a sandbox: from the default set", spec.Security{Capabilities: drop("cap_net_raw", "KILL")}, true, true, ptr(def &^ capsOf("NET_RAW", "KILL"))},
		{"drop ALL then add", spec.Security{Capabilities: &spec.Capabilities{Drop: []string{"ALL"}, Add: []string{"NET_BIND_SERVICE"}}}, false, true, ptr(capsOf("NET_BIND_SERVICE"))},
		{"add beyond the default set", spec.Security{Capabilities: &spec.Capabilities{Add: []string{"SYS_PTRACE"}}}, true, true, ptr(def | capsOf("SYS_PTRACE"))},
		{"add ALL", spec.Security{Capabilities: &spec.Capabilities{Drop: []string{"ALL"}, Add: []string{"ALL"}}}, true, true, &all},
		{"non-root without a block: podsup's bounding set", spec.Security{NoNewPrivileges: spec.Bool(true)}, true, false, nil},
		{"non-root: only what add names", spec.Security{Capabilities: &spec.Capabilities{Add: []string{"NET_BIND_SERVICE"}}}, true, false, ptr(capsOf("NET_BIND_SERVICE"))},
		{"non-root, privileged = false: none", spec.Security{Privileged: spec.Bool(false)}, false, false, ptr(proc.CapSet(0))},
	}
	for _, tc := range cases {
		got, err := SecurityOf(tc.s, tc.sandboxed, tc.root)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		switch {
		case tc.want == nil && got.Capabilities != nil:
			t.Errorf("%s: capabilities %v, want podsup's", tc.name, CapNames(*got.Capabilities))
		case tc.want != nil && (got.Capabilities == nil || *got.Capabilities != *tc.want):
			t.Errorf("%s: capabilities %v, want %v", tc.name, got.Capabilities, CapNames(*tc.want))
		}
	}
}

func ptr(s proc.CapSet) *proc.CapSet { return &s }

func TestSecurityOfTheRest(t *testing.T) {
	umask, oom := uint32(0o27), -100
	s := spec.Security{
		NoNewPrivileges: spec.Bool(true), Umask: &umask, OOMScoreAdj: &oom, Seccomp: spec.SeccompUnconfined,
		Rlimits: map[string]spec.Rlimit{"nofile": {Soft: 10, Hard: 20}, "core": {}},
	}
	got, err := SecurityOf(s, false, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []proc.Rlimit{{Resource: unix.RLIMIT_CORE}, {Resource: unix.RLIMIT_NOFILE, Soft: 10, Hard: 20}}
	if !got.NoNewPrivs || *got.Umask != 0o27 || *got.OOMScoreAdj != -100 || got.Seccomp != nil || !slices.Equal(got.Rlimits, want) {
		t.Errorf("SecurityOf = %+v, rlimits %v", got, got.Rlimits)
	}

	if _, err := SecurityOf(spec.Security{RunAsNonRoot: spec.Bool(true)}, true, true); err == nil || !strings.Contains(err.Error(), "run_as_non_root") {
		t.Errorf("run_as_non_root as root: %v", err)
	}
	if _, err := SecurityOf(spec.Security{RunAsNonRoot: spec.Bool(true)}, true, false); err != nil {
		t.Errorf("run_as_non_root as another user: %v", err)
	}
	sg := spec.Process{User: "65534", Security: spec.Security{SupplementalGroups: []string{"video", "4242"}}}
	if sec, err := SecurityOf(sg.Security, false, false); err != nil || sec == nil {
		t.Errorf("supplemental_groups refused: %+v, %v", sec, err)
	}
	if ra := RunAs(sg); !slices.Equal(ra.Groups, []string{"video", "4242"}) {
		t.Errorf("RunAs carries supplementary groups %q", ra.Groups)
	}
}

// The seccomp setting is compiled where the context is made, by package
// seccomp, for the capabilities the process keeps: an embedder of the
// supervisor sets nothing for it.
func TestSecurityOfCompilesSeccomp(t *testing.T) {
	t.Parallel()
	got, err := SecurityOf(spec.Security{Seccomp: spec.SeccompRuntimeDefault}, true, true)
	if err != nil || got.Seccomp == nil || got.Seccomp.Name != spec.SeccompRuntimeDefault || len(got.Seccomp.Program) == 0 {
		t.Fatalf("runtime/default: %+v, %v", got, err)
	}
	// Docker's default allows mount and friends to CAP_SYS_ADMIN alone:
	// root on the host (every capability) gets a wider filter than a
	// sandbox's default set.
	host, err := SecurityOf(spec.Security{Seccomp: spec.SeccompRuntimeDefault}, false, true)
	if err != nil || host.Seccomp == nil {
		t.Fatalf("on the host: %+v, %v", host, err)
	}
	if slices.Equal(host.Seccomp.Program, got.Seccomp.Program) {
		t.Error("the filter does not follow the capabilities kept")
	}
	if _, err := SecurityOf(spec.Security{Seccomp: "/nonexistent/profile.json"}, true, true); err == nil || !strings.Contains(err.Error(), "seccomp") {
		t.Errorf("a missing profile: %v", err)
	}
}

// TestStartSecurityDefaults (docs/security.md, "The default capability
// set"): a root process in a sandbox that sets nothing gets the container
// engines' default set, as in a container; on the host, and as another
// user, a process that sets nothing starts as before security contexts.
func TestStartSecurityDefaults(t *testing.T) {
	t.Parallel()
	bare := spec.Process{Name: "p", Command: []string{"x"}, User: "0"}
	if s, err := StartSecurity(bare, true); err != nil || s == nil || s.Capabilities == nil || *s.Capabilities != DefaultCapSet() {
		t.Errorf("a root process in a sandbox without a security context gets %+v, %v; want the default set", s, err)
	}
	if s, err := StartSecurity(bare, false); s != nil || err != nil {
		t.Errorf("a root host process without a security context gets %+v, %v; want nil (podsup's own)", s, err)
	}
	bare.User = "65534"
	if s, err := StartSecurity(bare, true); s != nil || err != nil {
		t.Errorf("a non-root process in a sandbox without a security context gets %+v, %v; want nil", s, err)
	}
	if s, err := StartSecurity(spec.Process{Security: spec.Security{NoNewPrivileges: spec.Bool(true)}, User: "0"}, true); err != nil || s == nil || s.Capabilities == nil || *s.Capabilities != DefaultCapSet() {
		t.Errorf("a root process in a sandbox with a context: %+v, %v", s, err)
	}
	for u, want := range map[string]bool{"0": true, "root": true, "65534": false, "nobody": false, "no-such-user-x": false} {
		if RunsAsRoot(u) != want {
			t.Errorf("RunsAsRoot(%q) = %v", u, !want)
		}
	}
}

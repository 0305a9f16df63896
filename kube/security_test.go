package kube

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podsup/podsup/spec"
	"sigs.k8s.io/yaml"
)

// TestKubernetesWebsiteSecurityContexts converts kubernetes/website's
// security-context examples (testdata/k8s-website): every securityContext
// field issue #29 names maps without a warning. The ones podsup has no
// meaning for (fsGroup, supplementalGroupsPolicy) are
// reported by path. The examples run images, which podsup does not: a
// container without a command gets one here, as a user would write it.
func TestKubernetesWebsiteSecurityContexts(t *testing.T) {
	t.Parallel()
	want := map[string]func(g spec.Group) bool{
		"security-context.yaml": func(g spec.Group) bool {
			p := g.Processes[0]
			return p.User == "1000" && spec.IsSet(p.Security.NoNewPrivileges)
		},
		"security-context-2.yaml": func(g spec.Group) bool { return g.Processes[0].User == "2000" },
		"security-context-3.yaml": func(g spec.Group) bool { return g.Processes[0].Security.IsZero() && g.Security.IsZero() },
		"security-context-4.yaml": func(g spec.Group) bool {
			c := g.Processes[0].Security.Capabilities
			return c != nil && slices.Equal(c.Add, []string{"NET_ADMIN", "SYS_TIME"})
		},
		"security-context-5.yaml": func(g spec.Group) bool {
			return g.Processes[0].Group == "3000" && slices.Equal(g.Security.SupplementalGroups, []string{"4000"})
		},
		"security-context-6.yaml": func(g spec.Group) bool { return slices.Equal(g.Security.SupplementalGroups, []string{"4000"}) },
		"seccomp-default-pod.yaml": func(g spec.Group) bool {
			return g.Security.Seccomp == spec.SeccompRuntimeDefault && spec.IsSet(g.Processes[0].Security.NoNewPrivileges)
		},
	}
	unmapped := []string{"securityContext.fsGroup", "securityContext.supplementalGroupsPolicy"}
	files, _ := filepath.Glob("testdata/k8s-website/*.yaml")
	if len(files) != len(want) {
		t.Fatalf("found %v, want the %d examples of the table", files, len(want))
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Convert(bytes.NewReader(withCommands(t, src)), Options{})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, fd := range res.Findings {
			if strings.Contains(fd.Path, "ecurityContext") || strings.Contains(fd.Path, "hostUsers") {
				if !slices.ContainsFunc(unmapped, func(u string) bool { return strings.Contains(fd.Path, u) }) {
					t.Errorf("%s: %s", f, fd)
				}
			}
		}
		if check := want[filepath.Base(f)]; !check(res.Config.Groups[0]) {
			t.Errorf("%s converts to %s", f, show(res.Config.Groups[0]))
		}
	}
}

// withCommands gives every container of the manifest src a command.
func withCommands(t *testing.T, src []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(src, &m); err != nil {
		t.Fatal(err)
	}
	for _, c := range m["spec"].(map[string]any)["containers"].([]any) {
		ct := c.(map[string]any)
		if ct["command"] == nil {
			ct["command"] = []any{"sleep", "1"}
		}
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every field of the bridge's list converts and exports back to itself:
// a restricted-profile pod, a privileged one and a Localhost profile.
func TestSecurityContextBothWays(t *testing.T) {
	t.Parallel()
	src := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  hostUsers: true
  securityContext:
    runAsNonRoot: true
    runAsUser: 1000
    runAsGroup: 1000
    supplementalGroups: [5, 6]
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: restricted
    command: ["sleep", "1"]
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}
      procMount: Default
  - name: privileged
    command: ["sleep", "1"]
    securityContext:
      runAsNonRoot: false
      runAsUser: 0
      privileged: true
      allowPrivilegeEscalation: true
      seccompProfile: {type: Unconfined}
  - name: local
    command: ["sleep", "1"]
    securityContext:
      seccompProfile: {type: Localhost, localhostProfile: /etc/hostname}
`
	res, err := Convert(strings.NewReader(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range res.Findings {
		t.Errorf("finding: %s", fd)
	}
	g := res.Config.Groups[0]
	r, p, l := g.Processes[0].Security, g.Processes[1].Security, g.Processes[2].Security
	if !spec.IsSet(g.Security.RunAsNonRoot) || g.Security.Seccomp != spec.SeccompRuntimeDefault || !slices.Equal(g.Security.SupplementalGroups, []string{"5", "6"}) {
		t.Errorf("pod-level: %+v", g.Security)
	}
	if !spec.IsSet(r.NoNewPrivileges) || r.Capabilities == nil || r.Capabilities.Drop[0] != "ALL" || r.Capabilities.Add[0] != "NET_BIND_SERVICE" {
		t.Errorf("restricted: %+v", r)
	}
	if !spec.IsSet(p.Privileged) || p.NoNewPrivileges == nil || *p.NoNewPrivileges || p.Seccomp != spec.SeccompUnconfined || p.RunAsNonRoot == nil || *p.RunAsNonRoot {
		t.Errorf("privileged: %+v", p)
	}
	if l.Seccomp != "/etc/hostname" {
		t.Errorf("Localhost: %+v", l)
	}
	giveImages(res.Config)
	var out bytes.Buffer
	if _, err := Export(&out, res.Config, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	back, err := Convert(&out, Options{})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !equal(back.Config.Groups[0].Security, g.Security) || !equal(back.Config.Groups[0].Processes, g.Processes) {
		t.Errorf("export and convert changed it:\n%s\n%s", show(g), show(back.Config.Groups[0]))
	}
	if got := seccompProfile(SeccompRoot + "/profiles/audit.json"); *got.LocalhostProfile != "profiles/audit.json" {
		t.Errorf("a profile under kubelet's root exports as %q", *got.LocalhostProfile)
	}
}

// What podsup cannot honour is reported by path.
func TestSecurityContextWarnsWhatItCannot(t *testing.T) {
	t.Parallel()
	src := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  hostUsers: false
  securityContext:
    seLinuxOptions: {level: "s0:c1"}
    sysctls: [{name: net.ipv4.ip_forward, value: "1"}]
  containers:
  - name: c
    command: ["sleep", "1"]
    securityContext:
      appArmorProfile: {type: RuntimeDefault}
      procMount: Unmasked
      readOnlyRootFilesystem: true
  - name: d
    command: ["sleep", "1"]
`
	res, err := Convert(strings.NewReader(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, fd := range res.Findings {
		paths = append(paths, fd.Path)
	}
	for _, p := range []string{"spec.securityContext.seLinuxOptions", "spec.securityContext.sysctls", "spec.containers[0].securityContext.appArmorProfile",
		"spec.containers[0].securityContext.procMount", "spec.containers[0].securityContext.readOnlyRootFilesystem"} {
		if !slices.ContainsFunc(paths, func(s string) bool { return strings.HasPrefix(s, p) }) {
			t.Errorf("no warning at %s: %v", p, paths)
		}
	}
	if slices.ContainsFunc(paths, func(s string) bool { return strings.HasPrefix(s, "spec.hostUsers") }) {
		t.Errorf("hostUsers: false is warned of: it is the sandbox's user_namespace: %v", paths)
	}
	if sb := res.Config.Groups[0].Sandbox; sb != nil && (sb.ReadOnlyRootFilesystem || sb.ProcMount != "") {
		t.Errorf("one container's wish became the sandbox's: %+v", sb)
	}
}

// readOnlyRootFilesystem and procMount: Unmasked set by every container
// are the sandbox's, and export back onto every container.
func TestSandboxFilesystemBothWays(t *testing.T) {
	t.Parallel()
	src := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers:
  - name: i
    command: ["true"]
    securityContext: {readOnlyRootFilesystem: true, procMount: Unmasked}
  containers:
  - name: a
    command: ["sleep", "1"]
    securityContext: {readOnlyRootFilesystem: true, procMount: Unmasked}
  - name: b
    command: ["sleep", "1"]
    securityContext: {readOnlyRootFilesystem: true, procMount: Unmasked}
`
	res, err := Convert(strings.NewReader(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range res.Findings {
		t.Errorf("finding: %s", fd)
	}
	sb := res.Config.Groups[0].Sandbox
	if sb == nil || !sb.ReadOnlyRootFilesystem || sb.ProcMount != spec.ProcMountUnmasked || !slices.Contains(sb.Namespaces, "mount") {
		t.Fatalf("sandbox: %+v", sb)
	}
	giveImages(res.Config)
	var out bytes.Buffer
	warns, err := Export(&out, res.Config, ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) > 0 {
		t.Errorf("export warns: %v\n%s", warns, out.String())
	}
	if n := strings.Count(out.String(), "readOnlyRootFilesystem: true"); n != 3 {
		t.Errorf("readOnlyRootFilesystem on %d containers, want 3:\n%s", n, out.String())
	}
	back, err := Convert(&out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !equal(back.Config.Groups[0].Sandbox, sb) {
		t.Errorf("export and convert changed the sandbox: %+v, want %+v", back.Config.Groups[0].Sandbox, sb)
	}
}

// hostUsers: false is the sandbox's user_namespace, both ways.
func TestHostUsersFalseIsUserNamespace(t *testing.T) {
	t.Parallel()
	src := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  hostUsers: false
  containers:
  - name: c
    command: ["sleep", "1"]
`
	res, err := Convert(strings.NewReader(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) != 0 {
		t.Errorf("findings: %v", res.Findings)
	}
	g := res.Config.Groups[0]
	if g.Sandbox == nil || !g.Sandbox.UserNamespace {
		t.Fatalf("hostUsers: false converts to %s, want sandbox { user_namespace = true }", show(g))
	}
	pod, _, _ := exportGroup(&g)
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		t.Errorf("user_namespace exports hostUsers %v, want false", pod.Spec.HostUsers)
	}
}

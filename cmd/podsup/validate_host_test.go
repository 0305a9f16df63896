package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/podsup/podsup/internal/rootless"
	"github.com/podsup/podsup/internal/testusers"
)

// TestValidateAndUpAsNonRootSayWhatTheHostWillNotRun: examples/edge.hcl
// as a user that is not root was "valid", and up then failed every start
// in a back-off loop (StartError 128, "/proc/self/exe: permission
// denied"). validate warns, naming the fix (root, or a cgroup delegated
// with Delegate=yes), --strict makes that an error, and up refuses the
// configuration once, at once, saying the same (issue #26, item 9).
// Where the host gives a user a user namespace, podsup up makes the
// namespaces in one (rootless, issue #29 item 8): then only the limits are
// warned of, with the rootless fixes, and up runs the file
// (TestRootlessUpRunsTheExampleAsAUser).
func TestValidateAndUpAsNonRootSayWhatTheHostWillNotRun(t *testing.T) {
	testusers.RequireRoot(t)
	t.Parallel()
	u := testusers.NewUser(t)
	exe := testusers.SharedExecutable(t)
	dir := testusers.SharedDir(t)
	edge := filepath.Join(dir, "edge.hcl")
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "edge.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(edge, src, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{asPodsupEnv + "=1", "PATH=/usr/bin:/bin"}
	who := "podsup runs as uid " + strconv.Itoa(u.UID)
	needs := []string{
		`group.sensors.sandbox.namespaces: namespaces = ["pid", "mount", "uts", "ipc", "net"] cannot be made: they need root (CAP_SYS_ADMIN) or a user namespace, and ` + who + " without it, and ",
		`group.uplink.sandbox.namespaces: namespaces = ["pid", "mount"] cannot be made`,
		"group.sensors.sandbox.resources: resource limits cannot be enforced: they need root or a delegated cgroup, and " + who,
		"group.uplink.sandbox.resources: resource limits cannot be enforced",
		"Delegate=yes",
	}
	wantNamespaces := 2
	userns := rootless.Possible() == ""
	if userns {
		needs = append(needs[2:], "(podsup up would run rootless, in a user namespace, and start without them)", "--cgroup")
		wantNamespaces = 0
	}
	has := func(out string, want ...string) bool {
		for _, w := range want {
			if !strings.Contains(out, w) {
				return false
			}
		}
		return true
	}

	// The example's groups may grow: every warning is counted, and each
	// must be said once.
	out, code := testusers.Run(t, u, env, exe, "validate", "-f", edge)
	warnings := strings.Count(out, "warning: ")
	noNamespaces := strings.Count(out, "cannot be made")
	if code != 0 || !has(out, needs...) || warnings < 2+wantNamespaces || noNamespaces != wantNamespaces || !has(out, fmt.Sprintf(" processes), %d warnings: this host would not run it", warnings)) {
		t.Errorf("validate as uid %d: exit %d\n%s\nwant exit 0 with a warning naming the fix for each sandbox's namespaces and limits", u.UID, code, out)
	}
	out, code = testusers.Run(t, u, env, exe, "validate", "--strict", "-f", edge)
	if code != 1 || !has(out, needs...) || !has(out, "error: ", fmt.Sprintf("invalid with --strict: %d warnings", warnings)) {
		t.Errorf("validate --strict as uid %d: exit %d\n%s\nwant exit 1 with the same, as errors", u.UID, code, out)
	}

	// As root (CI), the same file has nothing to warn of.
	out, code = testusers.Run(t, testusers.User{}, env, exe, "validate", "--strict", "-f", edge)
	if code != 0 || strings.Contains(out, "warning") || strings.Contains(out, "error") {
		t.Errorf("validate --strict as root: exit %d\n%s\nwant valid: root makes namespaces and cgroups", code, out)
	}

	// up refuses it at once, with the same reasons, instead of a back-off
	// loop that never ends (which timeout would end, with 124); rootless,
	// it runs it.
	if userns {
		return
	}
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(run, u.UID, u.GID); err != nil {
		t.Fatal(err)
	}
	out, code = testusers.Run(t, u, env, "timeout", "30", exe, "up", "-f", edge, "--socket", filepath.Join(run, "podsup.sock"))
	if code == 0 || code == 124 || !has(out, needs...) {
		t.Errorf("up as uid %d: exit %d\n%s\nwant it refused at once, naming the fix", u.UID, code, out)
	}
	if n := strings.Count(out, "cannot be made"); n != noNamespaces {
		t.Errorf("up said %d times that namespaces cannot be made, want once per group with namespaces (%d):\n%s", n, noNamespaces, out)
	}
}

// TestValidateWarnsOfSocketsAndCommandsUpWouldNotFind: a process naming an
// activation socket podsup was not passed failed every start; validate
// warns (LISTEN_FDNAMES names what systemd would pass), up refuses it at
// once. A command missing, or that the process's user may not execute,
// is warned of with the file and the reason (issue #26, items 9 and 10).
func TestValidateWarnsOfSocketsAndCommandsUpWouldNotFind(t *testing.T) {
	testusers.RequireRoot(t)
	t.Parallel()
	u := testusers.NewUser(t)
	private, err := os.MkdirTemp("", "podsup-private-") // 0700, root's: like /root/bin
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(private) })
	tool := filepath.Join(private, "podsup-validate-tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\nexec sleep 1000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "podsup.hcl")
	body := `group "a" {
  process "web" {
    command = ["sleep", "1000"]
    sockets = ["web"]
  }
  process "missing" {
    command = ["podsup-no-such-command"]
  }
  process "private" {
    command = ["podsup-validate-tool"]
    user    = "` + u.Name + `"
    env     = { PATH = "` + private + `:/usr/bin:/bin" }
  }
}
`
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{asPodsupEnv + "=1", "PATH=/usr/bin:/bin"}
	exe := testExe(t)
	sockets := `group.a.process.web.sockets: no socket named "web" was passed to podsup (passed: none: podsup was not socket-activated): start podsup from a systemd .socket unit with FileDescriptorName=web`
	missing := "group.a.process.missing.command: podsup-no-such-command: command not found"
	private1 := "group.a.process.private.command: podsup-validate-tool: permission denied: " + tool + ": not executable by user " + u.Name + " (uid " + strconv.Itoa(u.UID) + "): directory " + private + " is mode 0700 owner root"
	out, code := testusers.Run(t, testusers.User{}, env, exe, "validate", "-f", cfg)
	for _, want := range []string{sockets, missing, private1, "3 warnings"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("validate: exit %d\n%s\nwant exit 0 and %q", code, out, want)
		}
	}
	out, _ = testusers.Run(t, testusers.User{}, append(env, "LISTEN_FDNAMES=web"), exe, "validate", "-f", cfg)
	if strings.Contains(out, "sockets") {
		t.Errorf("validate with LISTEN_FDNAMES=web still warns of the socket:\n%s", out)
	}
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	out, code = testusers.Run(t, testusers.User{}, env, "timeout", "30", exe, "up", "-f", cfg, "--socket", filepath.Join(run, "podsup.sock"))
	if code == 0 || code == 124 || !strings.Contains(out, sockets) {
		t.Errorf("up: exit %d\n%s\nwant it refused at once, naming the socket and the fix", code, out)
	}
}

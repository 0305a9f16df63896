package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/rootless"
	"github.com/podsup/podsup/internal/testusers"
	"github.com/podsup/podsup/sandbox/proc"
)

// TestRootlessUpRunsTheExampleAsAUser: examples/rootless.hcl, whose
// sandbox has pid, mount, uts, ipc and net namespaces and limits, run by
// podsup up as a normal user (made for the test). podsup runs itself in a
// user namespace where the user is root: the app is uid 0 inside and the
// user's uid on the host (/proc/PID/uid_map, Uid in /proc/PID/status), it
// is the child of that podsup (PPid), which is the child of the podsup the
// user started; its exit reaches podsup; start-up says in one line that
// the limits are lost without a delegated cgroup and how to have them;
// validate says the same and nothing of namespaces; describe and security
// show the user namespace; SIGTERM stops all and
// exits 0 (issue #29, item 8). Before, up refused the file: namespaces
// need root.
func TestRootlessUpRunsTheExampleAsAUser(t *testing.T) {
	testusers.RequireRoot(t)
	if why := rootless.Possible(); why != "" {
		t.Skipf("this host gives no user namespace to a user: %s", why)
	}
	t.Parallel()
	u := testusers.NewUser(t)
	exe := testusers.SharedExecutable(t)
	dir := testusers.SharedDir(t)
	file := filepath.Join(dir, "rootless.hcl")
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "rootless.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(run, u.UID, u.GID); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(run, "podsup.sock")
	env := []string{asPodsupEnv + "=1", "PATH=/usr/bin:/bin"}
	lost := "resource limits are not enforced"

	out, code := testusers.Run(t, u, env, exe, "validate", "-f", file)
	if code != 0 || strings.Contains(out, "cannot be made") || !strings.Contains(out, "podsup up would run rootless") ||
		!strings.Contains(out, "Delegate=yes") || !strings.Contains(out, "--cgroup") {
		t.Errorf("validate as uid %d: exit %d\n%s\nwant valid, no word of namespaces, a warning that limits need a delegated cgroup, naming the fixes", u.UID, code, out)
	}

	up := start(t, &proc.Cmd{Path: exe, Args: []string{exe, "up", "-f", file, "--socket", socket}, RunAs: proc.RunAs{User: u.Name, Env: env}})
	status := func() (api.ProcessStatus, bool) {
		out, code := testusers.Run(t, u, env, exe, "status", "rootless/app", "-o", "json", "--socket", socket)
		var st api.StatusResponse
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Groups) != 1 || len(st.Groups[0].Processes) != 1 {
			return api.ProcessStatus{}, false
		}
		return st.Groups[0].Processes[0], true
	}
	var app api.ProcessStatus
	if !eventually(func() bool { var ok bool; app, ok = status(); return ok && app.State == "running" && app.Pid > 0 }) {
		t.Fatalf("the app did not come up: %+v\n%s", app, up.sofar(t))
	}

	pid := app.Pid
	if m := field(t, pid, "uid_map"); m != fmt.Sprintf("0 %d 1", u.UID) {
		t.Errorf("the app's uid_map is %q, want root inside = uid %d on the host", m, u.UID)
	}
	if uids, want := statusLine(t, pid, "Uid"), strings.TrimSpace(strings.Repeat(strconv.Itoa(u.UID)+" ", 4)); uids != want {
		t.Errorf("the app runs as Uid %q on the host, want %d everywhere", uids, u.UID)
	}
	inner, _ := strconv.Atoi(statusLine(t, pid, "PPid"))
	if pp, _ := strconv.Atoi(statusLine(t, inner, "PPid")); inner <= 0 || pp != up.p.Pid() {
		t.Errorf("the app's parent is %d, whose parent is %d: want podsup in the user namespace, the child of podsup up (%d)", inner, pp, up.p.Pid())
	}
	if m := field(t, inner, "uid_map"); m != fmt.Sprintf("0 %d 1", u.UID) {
		t.Errorf("the app's parent (%d) has uid_map %q, want podsup in the user namespace", inner, m)
	}

	// describe reads the user namespace from /proc, and security counts it.
	if out, code := testusers.Run(t, u, env, exe, "describe", "rootless/app", "--socket", socket); code != 0 ||
		!strings.Contains(out, "User Namespace") || !strings.Contains(out, "yes (root inside is an unprivileged user on the host") {
		t.Errorf("describe rootless/app: exit %d\n%s\nwant its user namespace shown", code, out)
	}
	if out, code := testusers.Run(t, u, env, exe, "security", "rootless/app", "--socket", socket); code != 0 ||
		!strings.Contains(out, "root inside is unprivileged on the host") {
		t.Errorf("security rootless/app: exit %d\n%s\nwant user_namespace on", code, out)
	}

	// Its exit reaches podsup, which restarts it.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool {
		var ok bool
		app, ok = status()
		return ok && app.RestartCount >= 1 && app.LastTermination != nil && app.LastTermination.ExitCode == 137
	}) {
		t.Errorf("after SIGKILL of the app: %+v, want a restart with its exit (137) recorded", app)
	}

	_ = up.p.Signal(syscall.SIGTERM)
	e := up.wait(t)
	log := up.rest(t)
	if e.Code() != 0 {
		t.Errorf("podsup up after SIGTERM: %s\n%s", e, log)
	}
	if !strings.Contains(log, "uid 0 on rootless") {
		t.Errorf("the app did not say it is root in its sandbox:\n%s", log)
	}
	if n := strings.Count(log, lost); n != 1 {
		t.Errorf("start-up said %d times %q, want once, with the fix:\n%s", n, lost, log)
	}
	for _, p := range []int{pid, inner} {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); err == nil {
			if _, ppid, ok := procStat(p); ok && (ppid == inner || ppid == up.p.Pid()) {
				t.Errorf("process %d is left after podsup up exited", p)
			}
		}
	}
}

// field is /proc/PID/NAME with its runs of spaces made one.
func field(t *testing.T, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// statusLine is the value of a line of /proc/PID/status, spaces made one.
func statusLine(t *testing.T, pid int, key string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, key)
	return ""
}

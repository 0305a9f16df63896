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
	"time"

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
// show the user namespace; SIGHUP to the podsup the user started reloads,
// SIGTERM stops all and exits 0 (issue #29, item 8). Before, up refused
// the file: namespaces need root.
func TestRootlessUpRunsTheExampleAsAUser(t *testing.T) {
	requireUserNamespaces(t)
	t.Parallel()
	u := testusers.NewUser(t)
	r := newRootlessUser(t, u, example(t, "rootless.hcl"))
	lost := "resource limits are not enforced"

	out, code := r.run(t, "validate", "-f", r.file)
	if code != 0 || strings.Contains(out, "cannot be made") || !strings.Contains(out, "podsup up would run rootless") ||
		!strings.Contains(out, "Delegate=yes") || !strings.Contains(out, "--cgroup") {
		t.Errorf("validate as uid %d: exit %d\n%s\nwant valid, no word of namespaces, a warning that limits need a delegated cgroup, naming the fixes", u.UID, code, out)
	}

	up := r.up(t, proc.Cmd{})
	app := r.running(t, up, "rootless/app")

	pid := app.Pid
	// Root is the user; with a subordinate range (useradd gives a new user
	// one where /etc/subuid exists) and newuidmap, ids 1.. are the range.
	wantMap := fmt.Sprintf("0 %d 1", u.UID)
	if m := rootless.MapsFor(u.UID, u.GID, "/etc/subuid", "/etc/subgid"); m.Helpers {
		wantMap += fmt.Sprintf(" 1 %d %d", m.UID[1].Outside, m.UID[1].Count)
	}
	if m := field(t, pid, "uid_map"); m != wantMap {
		t.Errorf("the app's uid_map is %q, want %q: root inside = uid %d on the host", m, wantMap, u.UID)
	}
	if uids, want := statusLine(t, pid, "Uid"), strings.TrimSpace(strings.Repeat(strconv.Itoa(u.UID)+" ", 4)); uids != want {
		t.Errorf("the app runs as Uid %q on the host, want %d everywhere", uids, u.UID)
	}
	inner, _ := strconv.Atoi(statusLine(t, pid, "PPid"))
	if pp, _ := strconv.Atoi(statusLine(t, inner, "PPid")); inner <= 0 || pp != up.p.Pid() {
		t.Errorf("the app's parent is %d, whose parent is %d: want podsup in the user namespace, the child of podsup up (%d)", inner, pp, up.p.Pid())
	}
	if m := field(t, inner, "uid_map"); m != wantMap {
		t.Errorf("the app's parent (%d) has uid_map %q, want podsup in the user namespace", inner, m)
	}

	// describe reads the user namespace from /proc, and security counts it.
	if out, code := r.run(t, "describe", "rootless/app", "--socket", r.socket); code != 0 ||
		!strings.Contains(out, "User Namespace") || !strings.Contains(out, "yes (root inside is an unprivileged user on the host") {
		t.Errorf("describe rootless/app: exit %d\n%s\nwant its user namespace shown", code, out)
	}
	if out, code := r.run(t, "security", "rootless/app", "--socket", r.socket); code != 0 ||
		!strings.Contains(out, "root inside is unprivileged on the host") {
		t.Errorf("security rootless/app: exit %d\n%s\nwant user_namespace on", code, out)
	}

	// Its exit reaches podsup, which restarts it.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool {
		var ok bool
		app, ok = r.status(t, "rootless/app")
		return ok && app.RestartCount >= 1 && app.LastTermination != nil && app.LastTermination.ExitCode == 137
	}) {
		t.Errorf("after SIGKILL of the app: %+v, want a restart with its exit (137) recorded", app)
	}

	// The podsup the user started passes its signals on: SIGHUP reloads.
	_ = up.p.Signal(syscall.SIGHUP)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "reloaded: ") {
		l, ok := up.lineWithin(t, 30*time.Second)
		if !ok {
			t.Fatalf("no reload within 30s of SIGHUP to the podsup the user started:\n%s", seen.String())
		}
		seen.WriteString(l + "\n")
	}

	_ = up.p.Signal(syscall.SIGTERM)
	e := up.wait(t)
	log := seen.String() + up.rest(t)
	if e.Code() != 0 {
		t.Errorf("podsup up after SIGTERM: %s\n%s", e, log)
	}
	if !strings.Contains(log, "uid 0 on rootless, pid") {
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

// TestRootlessRunsAUserOfTheSubordinateRange: with a range for the user in
// /etc/subuid and /etc/subgid and newuidmap installed, ids 1.. of the
// rootless podsup's namespace are that range, so a process with user =
// "1000" runs as the range's 1000th id on the host (as podman rootless
// maps a container's users).
func TestRootlessRunsAUserOfTheSubordinateRange(t *testing.T) {
	requireUserNamespaces(t)
	u := testusers.NewUser(t) // with a range, where useradd gives one
	maps := rootless.MapsFor(u.UID, u.GID, "/etc/subuid", "/etc/subgid")
	if !maps.Helpers {
		t.Skip("needs newuidmap and newgidmap (package uidmap) and a range for a new user in /etc/subuid and /etc/subgid")
	}
	t.Parallel()
	cfg := `group "ranged" {
  sandbox {
    namespaces = ["pid", "mount"]
    mount {
      type   = "proc"
      target = "/proc"
    }
  }
  process "other" {
    user    = "1000"
    group   = "1000"
    command = ["sh", "-c", "echo \"inside $(id -u):$(id -g)\"; trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done"]
  }
}
`
	r := newRootlessUser(t, u, []byte(cfg))
	up := r.up(t, proc.Cmd{})
	p := r.running(t, up, "ranged/other")
	uid := maps.UID[1].Outside + 999
	gid := maps.GID[1].Outside + 999
	if got := statusLine(t, p.Pid, "Uid"); got != strings.TrimSpace(strings.Repeat(strconv.Itoa(uid)+" ", 4)) {
		t.Errorf("user 1000 of the sandbox is Uid %q on the host, want %d (the range from %d)", got, uid, maps.UID[1].Outside)
	}
	if got := statusLine(t, p.Pid, "Gid"); got != strings.TrimSpace(strings.Repeat(strconv.Itoa(gid)+" ", 4)) {
		t.Errorf("group 1000 of the sandbox is Gid %q on the host, want %d", got, gid)
	}
	_ = up.p.Signal(syscall.SIGTERM)
	if e := up.wait(t); e.Code() != 0 {
		t.Errorf("podsup up after SIGTERM: %s\n%s", e, up.rest(t))
	} else if log := up.rest(t); !strings.Contains(log, "inside 1000:1000") {
		t.Errorf("the process did not say it is 1000:1000 inside:\n%s", log)
	}
}

// TestRootlessCgroupFlagPlacesPodsupInTheDelegatedCgroup: up --cgroup DIR
// starts the rootless podsup in DIR, a cgroup v2 directory delegated to
// the user (here made and chowned by the test, as systemd delegates a
// user's service), so its own cgroups and limits go there.
func TestRootlessCgroupFlagPlacesPodsupInTheDelegatedCgroup(t *testing.T) {
	requireUserNamespaces(t)
	mount := v2Mount()
	if mount == "" {
		t.Skip("no cgroup v2 hierarchy is mounted")
	}
	t.Parallel()
	u := testusers.NewUser(t)
	base, err := os.MkdirTemp(mount, "podsup-rltest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCgroupTree(t, base) })
	outer, target := filepath.Join(base, "outer"), filepath.Join(base, "target")
	for _, d := range []string{outer, target} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Delegation as systemd makes it: the directories and the files a
	// delegated cgroup's owner writes.
	for _, d := range []string{base, outer, target} {
		for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
			if err := os.Chown(filepath.Join(d, f), u.UID, u.GID); err != nil && f == "" {
				t.Fatal(err)
			}
		}
	}
	r := newRootlessUser(t, u, example(t, "rootless.hcl"))
	fd, err := syscall.Open(outer, syscall.O_DIRECTORY|syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	up := r.up(t, proc.Cmd{UseCgroupFD: true, CgroupFD: fd}, "--cgroup", target)
	app := r.running(t, up, "rootless/app")
	inner, _ := strconv.Atoi(statusLine(t, app.Pid, "PPid"))
	if got := v2CgroupDir(inner); !strings.HasPrefix(got+"/", target+"/") {
		t.Errorf("the rootless podsup (%d) is in cgroup %q, want %q or below", inner, got, target)
	}
	if got := v2CgroupDir(up.p.Pid()); got != outer {
		t.Errorf("the podsup the user started is in %q, want it left where it was started (%s)", got, outer)
	}
	_ = up.p.Signal(syscall.SIGTERM)
	if e := up.wait(t); e.Code() != 0 {
		t.Errorf("podsup up after SIGTERM: %s\n%s", e, up.rest(t))
	}
}

// removeCgroupTree removes dir and the cgroups below it, deepest first;
// they must be empty of processes by then.
func removeCgroupTree(t *testing.T, dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeCgroupTree(t, filepath.Join(dir, e.Name()))
		}
	}
	if err := syscall.Rmdir(dir); err != nil {
		t.Errorf("removing cgroup %s: %v", dir, err)
	}
}

// TestRootlessPodsupStopsWhenItsStarterIsKilled: a SIGKILL of the podsup
// the user started, which no signal passes on, stops the podsup in the
// user namespace and its processes instead of leaving them running.
func TestRootlessPodsupStopsWhenItsStarterIsKilled(t *testing.T) {
	requireUserNamespaces(t)
	t.Parallel()
	r := newRootlessUser(t, testusers.NewUser(t), example(t, "rootless.hcl"))
	up := r.up(t, proc.Cmd{})
	app := r.running(t, up, "rootless/app")
	inner, _ := strconv.Atoi(statusLine(t, app.Pid, "PPid"))
	_ = up.p.Signal(syscall.SIGKILL)
	<-up.p.Done()
	gone := func(pid int) bool {
		// Reparented to this test (a subreaper), reaped by its reaper.
		state, _, ok := procStat(pid)
		return !ok || state == "Z"
	}
	if !eventually(func() bool { return gone(app.Pid) && gone(inner) }) {
		t.Fatalf("after SIGKILL of podsup up (%d), the app (%d) or the podsup in the namespace (%d) runs on", up.p.Pid(), app.Pid, inner)
	}
	if log := up.rest(t); !strings.Contains(log, "is gone: stopping every group") {
		t.Errorf("the podsup in the namespace did not say why it stopped:\n%s", log)
	}
}

// rootlessUser is a user made for a rootless test, the files it runs
// podsup with, and the status of one of its processes.
type rootlessUser struct {
	u      testusers.User
	exe    string // the test binary, which every user may run
	file   string // the configuration
	socket string
	env    []string
}

// newRootlessUser makes a user and writes the configuration src where it
// may read it, with a directory of its own for the socket.
func newRootlessUser(t *testing.T, u testusers.User, src []byte) *rootlessUser {
	t.Helper()
	dir := testusers.SharedDir(t)
	r := &rootlessUser{u: u, exe: testusers.SharedExecutable(t), file: filepath.Join(dir, "podsup.hcl"),
		env: []string{asPodsupEnv + "=1", "PATH=/usr/bin:/bin"}}
	if err := os.WriteFile(r.file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(run, u.UID, u.GID); err != nil {
		t.Fatal(err)
	}
	r.socket = filepath.Join(run, "podsup.sock")
	return r
}

// example is examples/NAME.
func example(t *testing.T, name string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// up starts podsup up as the user; extra goes after its arguments.
func (r *rootlessUser) up(t *testing.T, c proc.Cmd, extra ...string) *started {
	c.Path, c.Args = r.exe, append([]string{r.exe, "up", "-f", r.file, "--socket", r.socket}, extra...)
	c.RunAs = proc.RunAs{User: r.u.Name, Env: r.env}
	return start(t, &c)
}

// run runs a podsup command as the user.
func (r *rootlessUser) run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return testusers.Run(t, r.u, r.env, append([]string{r.exe}, args...)...)
}

// running waits until GROUP/PROCESS runs and returns its status.
func (r *rootlessUser) running(t *testing.T, up *started, name string) api.ProcessStatus {
	t.Helper()
	var p api.ProcessStatus
	if !eventually(func() bool {
		var ok bool
		p, ok = r.status(t, name)
		return ok && p.State == "running" && p.Pid > 0
	}) {
		t.Fatalf("%s did not come up: %+v\n%s", name, p, up.sofar(t))
	}
	return p
}

func (r *rootlessUser) status(t *testing.T, name string) (api.ProcessStatus, bool) {
	out, code := r.run(t, "status", name, "-o", "json", "--socket", r.socket)
	var st api.StatusResponse
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Groups) != 1 || len(st.Groups[0].Processes) != 1 {
		return api.ProcessStatus{}, false
	}
	return st.Groups[0].Processes[0], true
}

// requireUserNamespaces skips t where a user gets no user namespace.
func requireUserNamespaces(t *testing.T) {
	t.Helper()
	testusers.RequireRoot(t)
	if why := rootless.Possible(); why != "" {
		t.Skipf("this host gives no user namespace to a user: %s", why)
	}
}

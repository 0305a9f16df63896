package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/rttest/testproc"
)

// daemonConfig has a host group (no sandbox block) and a group in a
// sandbox without a PID namespace, so that nothing but podsup ends its
// processes. Each process double-forks a setsid daemon, which appends its
// pid to <group>.daemons in the test's directory, and then sleeps: killing
// the process group of the main process misses the daemon.
const daemonConfig = `
supervisor {
  socket        = "%[1]s"
  minimum_grace = "100ms"
}
backoff {
  initial = "100ms"
  max     = "400ms"
}
group "host" {
  termination_grace_period = "1s"
  process "d" {
    command = ["sh", "-c", "( setsid sh -c 'echo $$ >> %[2]s/host.daemons; exec sleep 1000' & ); exec sleep 1001"]
  }
}
group "boxed" {
  termination_grace_period = "1s"
  sandbox {
    namespaces = ["mount", "uts"]
    hostname   = "boxed"
  }
  process "d" {
    command = ["sh", "-c", "( setsid sh -c 'echo $$ >> %[2]s/boxed.daemons; exec sleep 1000' & ); exec sleep 1001"]
  }
}
`

// startDaemons is startUp for daemonConfig.
func startDaemons(t *testing.T) *upFixture {
	t.Helper()
	needCgroupRoot(t)
	dir := t.TempDir()
	f := &upFixture{dir: dir, cfg: filepath.Join(dir, "podsup.hcl"), socket: filepath.Join(dir, "podsup.sock")}
	f.write(t, fmt.Sprintf(daemonConfig, f.socket, f.dir))
	f.c = api.NewClient(f.socket)
	f.restart(t)
	return f
}

// needCgroupRoot skips where podsup cannot have cgroups: there it falls
// back to process groups, and a setsid daemon escapes by design.
func needCgroupRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: podsup creates cgroups")
	}
	if _, err := os.Stat("/sys/fs/cgroup"); err != nil {
		t.Skip("no cgroup filesystem: podsup falls back to process groups")
	}
}

// restart starts another podsup up on the fixture's file and socket.
func (f *upFixture) restart(t *testing.T) {
	t.Helper()
	f.up = start(t, podsupCmd(t, "up", "-f", f.cfg))
	if !eventually(func() bool { _, err := f.c.Version(context.Background()); return err == nil }) {
		t.Fatalf("podsup up never answered on %s: %s", f.socket, f.up.sofar(t))
	}
}

// watched is a process the test holds a pidfd of, so that "gone" is
// known without trusting a pid number that may be reused.
type watched struct {
	pid, fd int
	what    string
}

// watch opens a pidfd of pid, and closes (and, should the test fail with
// it still running, kills) it at cleanup.
func watch(t *testing.T, pid int, what string) *watched {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("%s: no pid (%d)", what, pid)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("%s: pidfd_open(%d): %v", what, pid, err)
	}
	w := &watched{pid: pid, fd: fd, what: what}
	t.Cleanup(func() {
		if !w.gone(0) {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) // a failed test must not leave it running
			w.gone(10 * time.Second)
		}
		_ = unix.Close(fd)
	})
	return w
}

// gone waits up to d for the process to end.
func (w *watched) gone(d time.Duration) bool { return testproc.PidfdExited(w.fd, d) }

// daemons reads the pids the group's daemons wrote, waiting for n of them.
func (f *upFixture) daemons(t *testing.T, group string, n int) []int {
	t.Helper()
	var pids []int
	file := filepath.Join(f.dir, group+".daemons")
	if !eventually(func() bool {
		b, _ := os.ReadFile(file)
		pids = pids[:0]
		for _, s := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(s); err == nil {
				pids = append(pids, pid)
			}
		}
		return len(pids) >= n
	}) {
		t.Fatalf("%s: %d daemons reported, want %d", group, len(pids), n)
	}
	return pids[:n]
}

// newDaemon watches the group's n-th daemon, checking it is what the test
// thinks: a sleep in a session of its own, outside the main process's
// process group.
func (f *upFixture) newDaemon(t *testing.T, group string, n, mainPid int) *watched {
	t.Helper()
	pid := f.daemons(t, group, n)[n-1]
	w := watch(t, pid, fmt.Sprintf("%s daemon %d", group, n))
	var cmd []byte
	if !eventually(func() bool {
		cmd, _ = os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return strings.HasPrefix(string(cmd), "sleep\x001000")
	}) {
		t.Fatalf("pid %d is not the daemon: %q", pid, cmd)
	}
	if sid, _ := unix.Getsid(pid); sid != pid {
		t.Fatalf("daemon %d: session %d, want its own", pid, sid)
	}
	if pgid, _ := unix.Getpgid(pid); pgid == mainPid {
		t.Fatalf("daemon %d is in the main process's group: a group kill would reach it; the test proves nothing", pid)
	}
	return w
}

// cgroupOf is pid's cgroup in the cgroup2 hierarchy ("0::" line), or its
// first line where there is none.
func cgroupOf(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Errorf("reading the cgroup of %d: %v", pid, err)
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "0::") {
			return strings.TrimPrefix(l, "0::")
		}
	}
	return lines[0]
}

// A host group's setsid daemon dies with its process's instance: on a
// restart, on a stop, and when podsup stops. Each process has one cgroup,
// the same across its instances.
func TestUpHostGroupDaemonDiesWithItsInstance(t *testing.T) {
	t.Parallel()
	f := startDaemons(t)
	main1 := f.waitRunning(t, "host", "d")
	d1 := f.newDaemon(t, "host", 1, main1)
	cg, daemonCg := cgroupOf(t, main1), cgroupOf(t, d1.pid)

	if code, out := f.ctl(t, "restart", "host/d"); code != 0 {
		t.Fatalf("restart: %d %s", code, out)
	}
	if !d1.gone(20 * time.Second) {
		t.Fatalf("the setsid daemon %d of host/d survived a restart", d1.pid)
	}
	if !strings.HasSuffix(cg, "/host/d") || daemonCg != cg {
		t.Fatalf("host/d ran in cgroup %q and its daemon in %q, want both in one of its own (…/host/d)", cg, daemonCg)
	}
	var main2 int
	if !eventually(func() bool { main2 = f.pid(t, "host", "d"); return main2 > 0 && main2 != main1 }) {
		t.Fatal("host/d was not restarted")
	}
	if got := cgroupOf(t, main2); got != cg {
		t.Fatalf("the restarted host/d is in cgroup %q, the first instance was in %q: want it kept", got, cg)
	}
	d2 := f.newDaemon(t, "host", 2, main2)

	if code, out := f.ctl(t, "stop", "host/d"); code != 0 {
		t.Fatalf("stop: %d %s", code, out)
	}
	if !d2.gone(20 * time.Second) {
		t.Fatalf("the setsid daemon %d of host/d survived a stop", d2.pid)
	}

	if code, out := f.ctl(t, "start", "host/d"); code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	main3 := f.waitRunning(t, "host", "d")
	d3 := f.newDaemon(t, "host", 3, main3)
	_ = f.up.p.Signal(syscall.SIGTERM)
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup up after SIGTERM: %s", e)
	}
	if !d3.gone(10 * time.Second) {
		t.Fatalf("the setsid daemon %d of host/d survived podsup's stop", d3.pid)
	}
}

// A podsup SIGKILLed leaves its processes running; the next podsup on the
// same configuration (so the same socket, so the same cgroups) kills every
// one of them before it starts anything, host and sandbox groups alike,
// and says so with an event per group.
func TestUpAfterSIGKILLKillsWhatTheDeadOneLeft(t *testing.T) {
	t.Parallel()
	f := startDaemons(t)
	var old []*watched
	for _, g := range []string{"host", "boxed"} {
		main := f.waitRunning(t, g, "d")
		old = append(old, watch(t, main, g+"/d"), f.newDaemon(t, g, 1, main))
	}
	if err := f.up.p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	f.up.wait(t)
	for _, w := range old {
		if w.gone(100 * time.Millisecond) {
			t.Fatalf("%s (pid %d) ended with podsup: nothing is left for the next podsup to find; the test proves nothing", w.what, w.pid)
		}
	}

	f.restart(t)
	for _, w := range old {
		if !w.gone(20 * time.Second) {
			t.Errorf("%s (pid %d) of the SIGKILLed podsup still runs beside the new one", w.what, w.pid)
		}
	}
	for _, g := range []string{"host", "boxed"} {
		f.waitRunning(t, g, "d") // the new podsup runs its own instances
	}
	var recovered []api.Event
	err := f.c.Events(context.Background(), false, func(e api.Event) error {
		if e.Reason == "Recovered" {
			recovered = append(recovered, e)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"host", "boxed"} {
		found := false
		for _, e := range recovered {
			if e.Group == g && e.Type == "Warning" && strings.Contains(e.Message, "killed 2 processes left by a previous podsup") {
				found = true
			}
		}
		if !found {
			t.Errorf("no Recovered event for group %s saying it killed its 2 processes; got %+v", g, recovered)
		}
	}
	if code, out := f.ctl(t, "events"); code != 0 || !strings.Contains(out, "Recovered") {
		t.Errorf("podsup events does not show the recovery: %d\n%s", code, out)
	}
	_ = f.up.p.Signal(syscall.SIGTERM)
	if e := f.up.wait(t); e.Code() != 0 {
		t.Fatalf("podsup up after SIGTERM: %s", e)
	}
}

// A second podsup on the socket of one that runs must fail without
// touching the running one's processes (it would take them for a crashed
// predecessor's and kill them).
func TestUpSecondOnSameSocketLeavesTheFirstAlone(t *testing.T) {
	t.Parallel()
	f := startDaemons(t)
	var live []*watched
	for _, g := range []string{"host", "boxed"} {
		live = append(live, watch(t, f.waitRunning(t, g, "d"), g+"/d"))
	}
	code, out := runPodsup(t, "up", "-f", f.cfg)
	if code == 0 || !strings.Contains(out, "already listening") {
		t.Fatalf("a second podsup up on a live socket: %d\n%s", code, out)
	}
	for _, w := range live {
		if w.gone(0) {
			t.Errorf("%s (pid %d) of the running podsup was killed by the second one", w.what, w.pid)
		}
	}
	_ = f.up.p.Signal(syscall.SIGTERM)
	f.up.wait(t)
}

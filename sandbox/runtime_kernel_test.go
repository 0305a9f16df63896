package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/execrun"
	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// Two processes of one sandbox see each other's pids, one hostname and one
// tmpfs; another sandbox and the host see none of it; the first pid inside
// is the holder.
func TestSandboxIsolatesPidsHostnameAndTmpfs(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	mounts := []spec.Mount{{Type: "proc", Target: "/proc"}, {Type: "tmpfs", Target: shared}}
	mustCreateSandbox(t, rt, "a", spec.Sandbox{Namespaces: []string{"pid", "mount", "uts", "ipc"}, Hostname: "sandbox-a", Mounts: mounts})
	mustCreateSandbox(t, rt, "b", spec.Sandbox{Namespaces: []string{"pid", "mount", "uts", "ipc"}, Hostname: "sandbox-b",
		Mounts: []spec.Mount{{Type: "proc", Target: "/proc"}}})

	a1 := runHelper(t, rt, "a", "a1", "sleep")
	a2 := runHelper(t, rt, "a", "a2", "sleep")
	b1 := runHelper(t, rt, "b", "b1", "sleep")
	a1ns, a2ns := nsPid(t, a1.Pid), nsPid(t, a2.Pid)
	if a1ns == a1.Pid || a1ns <= 1 {
		t.Fatalf("a1 has pid %d inside, %d outside: not in a new PID namespace", a1ns, a1.Pid)
	}

	// a1 writes into the tmpfs; a2 (an exec standing in for it) reads.
	execHelper(t, rt, "a", "writefile", filepath.Join(shared, "note"), "from a1")
	ra := reportIn(t, rt, "a", filepath.Join(shared, "note"))
	if ra.Hostname != "sandbox-a" {
		t.Errorf("hostname inside a: %q", ra.Hostname)
	}
	if ra.File != "from a1" {
		t.Errorf("tmpfs inside a reads %q (%s), want %q", ra.File, ra.FileErr, "from a1")
	}
	if len(ra.Pids) == 0 || ra.Pids[0] != 1 || !strings.Contains(ra.Init, HolderArg) {
		t.Errorf("first pid inside a is %v with cmdline %q, want 1 = the holder", ra.Pids, ra.Init)
	}
	if !slices.Contains(ra.Pids, a1ns) || !slices.Contains(ra.Pids, a2ns) {
		t.Errorf("inside a pids %v, want a1=%d and a2=%d among them", ra.Pids, a1ns, a2ns)
	}

	rb := reportIn(t, rt, "b", filepath.Join(shared, "note"))
	if rb.Hostname != "sandbox-b" {
		t.Errorf("hostname inside b: %q", rb.Hostname)
	}
	if rb.FileErr == "" {
		t.Errorf("b reads a's tmpfs file: %q", rb.File)
	}
	// b sees its holder, b1 and the exec itself: nothing of a.
	if len(rb.Pids) != 3 || rb.Pids[0] != 1 {
		t.Errorf("inside b pids %v, want [1 b1 self]", rb.Pids)
	}
	if b1ns := nsPid(t, b1.Pid); !slices.Contains(rb.Pids, b1ns) {
		t.Errorf("inside b pids %v, want b1=%d among them", rb.Pids, b1ns)
	}

	host, _ := os.Hostname()
	if host == "sandbox-a" || host == "sandbox-b" {
		t.Errorf("the host's hostname became %q", host)
	}
	if _, err := os.Stat(filepath.Join(shared, "note")); err == nil {
		t.Error("the host sees the sandbox's tmpfs file")
	}
}

// Exec lands in every namespace of the sandbox: the same ones the holder
// holds, none of the host's.
func TestExecRunsInEveryNamespace(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	mustCreateSandbox(t, rt, "all", spec.Sandbox{Namespaces: []string{"pid", "mount", "uts", "ipc", "net"}, Hostname: "all"})
	st, err := rt.SandboxStatus("all")
	if err != nil {
		t.Fatal(err)
	}
	r := reportIn(t, rt, "all")
	for _, n := range nsNames {
		holder, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", st.HolderPid, n))
		if err != nil {
			t.Fatal(err)
		}
		host, _ := os.Readlink("/proc/self/ns/" + n)
		if r.NS[n] != holder || r.NS[n] == host {
			t.Errorf("%s namespace: exec in %s, holder in %s, host in %s", n, r.NS[n], holder, host)
		}
	}
	// A process started through the runtime too.
	p := runHelper(t, rt, "all", "p", "sleep")
	for _, n := range nsNames {
		got, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", p.Pid, n))
		if got != r.NS[n] {
			t.Errorf("%s namespace: process in %s, exec in %s", n, got, r.NS[n])
		}
	}
	// Yet it is podsup's own child: the one reaper and pidfds apply.
	if _, ppid, _ := testproc.State(p.Pid); ppid != os.Getpid() {
		t.Errorf("process's parent is %d, want podsup (%d)", ppid, os.Getpid())
	}
}

// Orphans inside a PID namespace go to the holder, its PID 1, which reaps
// them: 1000 orphans, no zombie left.
func TestHolderReapsOrphans(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	mustCreateSandbox(t, rt, "o", spec.Sandbox{Namespaces: []string{"pid", "mount"}})
	st, _ := rt.SandboxStatus("o")
	holder := st.HolderPid
	// They outlive the maker by seconds, so they are still there to be
	// seen as the holder's when the maker's exit is known.
	runHelper(t, rt, "o", "maker", "orphans", "1000", "3")
	ps, err := rt.waitProcess(testCtx(t), "maker")
	if err != nil || ps.ExitCode != 0 {
		t.Fatalf("orphan maker: %+v %v", ps, err)
	}
	adopted := len(childrenOf(holder))
	if adopted == 0 {
		t.Errorf("no orphan was reparented to the holder (pid %d)", holder)
	}
	if !testproc.Eventually(20*time.Second, func() bool { return len(childrenOf(holder)) == 0 }) {
		left := childrenOf(holder)
		t.Fatalf("holder still has %d children (zombies: %d) 20s later", len(left), len(testproc.ZombiesOf(holder)))
	}
	t.Logf("%d orphans were the holder's at the maker's exit; all reaped", adopted)
}

// childrenOf lists the processes (zombies included) whose parent is ppid.
func childrenOf(ppid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, parent, ok := testproc.State(pid); ok && parent == ppid {
			out = append(out, pid)
		}
	}
	return out
}

// The double-fork + setsid daemon escapes a process-group kill but not
// StopProcess: the process's cgroup takes it along.
func TestStopKillsSetsidDaemon(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	if !rt.CgroupsEnabled() {
		t.Skip("needs cgroups: without them a setsid daemon escapes by design (process-group fallback)")
	}
	for _, ns := range [][]string{nil, {"pid", "mount"}} {
		t.Run(fmt.Sprintf("namespaces=%v", ns), func(t *testing.T) {
			id := "d" + strconv.Itoa(len(ns))
			mustCreateSandbox(t, rt, id, spec.Sandbox{Namespaces: ns})
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			cfg := ProcessConfig{Sandbox: id, Command: helperArgv(), RunAs: proc.RunAs{Env: testproc.HelperEnv("daemon-and-wait")}, Stdout: w}
			if err := rt.CreateProcess(testCtx(t), id, cfg); err != nil {
				t.Fatal(err)
			}
			if err := rt.StartProcess(testCtx(t), id); err != nil {
				t.Fatal(err)
			}
			w.Close()
			line, err := bufio.NewReader(r).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			st, _ := rt.ProcessStatus(id)
			daemon := daemonHostPid(t, st.Pid, strings.TrimSpace(line))
			if !testproc.Alive(daemon) {
				t.Fatalf("daemon %d not running", daemon)
			}
			if err := rt.stopProcess(testCtx(t), id, 2*time.Second); err != nil {
				t.Fatal(err)
			}
			if !testproc.Eventually(5*time.Second, func() bool { return !testproc.Alive(daemon) }) {
				t.Errorf("daemon %d still alive after StopProcess", daemon)
			}
			st, _ = rt.ProcessStatus(id)
			if st.State != StateExited || st.ExitCode != 128+15 {
				t.Errorf("status after stop: %s, exit %d; want exited, 143 (SIGTERM)", st.State, st.ExitCode)
			}
		})
	}
}

// daemonHostPid turns the pid the daemon's parent printed (in its own
// namespace) into a host pid: the one process in the parent's session-less
// cgroup siblings... simply, the process whose NSpid ends in it and whose
// PID namespace is the parent's.
func daemonHostPid(t *testing.T, parent int, printed string) int {
	t.Helper()
	want, err := strconv.Atoi(printed)
	if err != nil {
		t.Fatalf("daemon pid %q: %v", printed, err)
	}
	parentNS, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", parent))
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
		if ns == parentNS && nsPidOK(pid) == want {
			return pid
		}
	}
	t.Fatalf("no process %d in the PID namespace of %d", want, parent)
	return 0
}

func nsPidOK(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
			fs := strings.Fields(v)
			n, _ := strconv.Atoi(fs[len(fs)-1])
			return n
		}
	}
	return -1
}

// A memory limit kills a process that exceeds it, and the status says so.
func TestMemoryLimitOOMKilled(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	if !rt.CgroupsEnabled() {
		t.Skip("needs cgroups for a memory limit")
	}
	mustCreateSandbox(t, rt, "m", spec.Sandbox{Namespaces: []string{"pid"}, Resources: spec.Resources{Memory: 64 << 20}})
	runHelper(t, rt, "m", "hog", "hog")
	st, err := rt.waitProcess(testCtx(t), "hog")
	if err != nil {
		t.Fatal(err)
	}
	if !st.OOMKilled || st.Signal != syscall.SIGKILL {
		t.Errorf("hog ended %+v; want OOMKilled by SIGKILL", st)
	}
	if st.Usage.MemoryPeak < 32<<20 || st.Usage.MemoryPeak > 80<<20 {
		t.Errorf("memory peak %d bytes; want near the 64 MiB limit", st.Usage.MemoryPeak)
	}
	// A process that just exits is not reported OOMKilled.
	res, err := runIn(testCtx(t), rt, "m", execrun.Request{Argv: []string{"/bin/true"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec true: %+v %v", res, err)
	}
}

// A pids limit stops a fork bomb, and podsup stays responsive meanwhile.
func TestPidsLimitStopsForkBomb(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	if !rt.CgroupsEnabled() {
		t.Skip("needs cgroups for a pids limit")
	}
	mustCreateSandbox(t, rt, "f", spec.Sandbox{Namespaces: []string{"pid"}, Resources: spec.Resources{Pids: 32}})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cfg := ProcessConfig{Sandbox: "f", Command: helperArgv("3000"), RunAs: proc.RunAs{Env: testproc.HelperEnv("forkbomb")}, Stdout: w}
	if err := rt.CreateProcess(testCtx(t), "bomb", cfg); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartProcess(testCtx(t), "bomb"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// While it forks: podsup still spawns and answers.
	begin := time.Now()
	e := runHost(t, &proc.Cmd{Path: "/bin/true"})
	if _, err := rt.ProcessStatus("bomb"); err != nil || e.Code() != 0 {
		t.Fatalf("status %v, host spawn %s", err, e)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("a host spawn and a status took %s during the fork bomb", d)
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if failed, _ := strconv.Atoi(strings.TrimSpace(line)); failed < 3000-32 {
		t.Errorf("only %d of 3000 forks failed under pids=32", failed)
	}
	if err := rt.stopProcess(testCtx(t), "bomb", 0); err != nil {
		t.Fatal(err)
	}
	st, _ := rt.SandboxStatus("f")
	if procs := cgroupProcs(st.Cgroup); len(procs) != 0 {
		t.Errorf("sandbox cgroup still holds %v after stop", procs)
	}
}

func cgroupProcs(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "cgroup.procs" {
			b, _ := os.ReadFile(path)
			out = append(out, strings.Fields(string(b))...)
		}
		return nil
	})
	return out
}

// A server in a network namespace is reachable from inside its sandbox (an
// exec probe) and not from the host.
func TestServerReachableOnlyInsideItsSandbox(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	mustCreateSandbox(t, rt, "web", spec.Sandbox{Namespaces: []string{"pid", "mount", "uts", "ipc", "net"}, Hostname: "web"})
	portFile := filepath.Join(t.TempDir(), "port")
	token := fmt.Sprintf("hello from the sandbox %d", os.Getpid())
	runHelper(t, rt, "web", "server", "serve", portFile, token)
	var port string
	if !testproc.Eventually(10*time.Second, func() bool { b, err := os.ReadFile(portFile); port = string(b); return err == nil }) {
		t.Fatal("the server never wrote its port")
	}
	url := "http://127.0.0.1:" + port + "/"
	if out := execHelper(t, rt, "web", "get", url); out != token {
		t.Errorf("exec probe inside got %q, want %q", out, token)
	}
	// From the host: refused, or (if the port happens to be taken here)
	// someone else's answer, never ours.
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 2*time.Second)
	if err == nil {
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		fmt.Fprintf(conn, "GET / HTTP/1.0\r\n\r\n")
		b, _ := io.ReadAll(conn)
		conn.Close()
		if strings.Contains(string(b), token) {
			t.Error("the host reached the sandbox's server")
		}
	}
}

// With a rootfs the sandbox pivot_roots: it sees only the rootfs and its
// mounts, a read-only bind cannot be written, and programs are looked up
// inside.
func TestRootfsPivotRootAndReadOnlyBind(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	rootfs := t.TempDir()
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if target, err := os.Readlink("/" + l); err == nil {
			_ = os.Symlink(target, filepath.Join(rootfs, l)) // usr-merged host: /bin -> usr/bin
		}
	}
	mustCreateSandbox(t, rt, "r", spec.Sandbox{Namespaces: []string{"pid", "mount"}, Rootfs: rootfs,
		Mounts: []spec.Mount{
			{Type: "bind", Source: "/usr", Target: "/usr", ReadOnly: true},
			{Type: "proc", Target: "/proc"},
			{Type: "tmpfs", Target: "/tmp"},
		}})
	res, err := runIn(testCtx(t), rt, "r", execrun.Request{
		Argv:  []string{"sh", "-c", "ls /; touch /usr/podsup-test 2>/dev/null && echo WROTE; echo x > /tmp/x && cat /tmp/x"},
		RunAs: proc.RunAs{Env: []string{"PATH=/usr/bin:/bin"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(res.Output))
	want := []string{"bin", "lib", "lib64", "proc", "sbin", "tmp", "usr", "x"}
	if _, err := os.Readlink("/bin"); err != nil {
		t.Skip("host without a merged /usr: the rootfs would need copies of /bin and /lib")
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("inside: %q; want %v", res.Output, want)
			break
		}
	}
	if slices.Contains(got, "WROTE") || slices.Contains(got, "etc") || slices.Contains(got, "root") {
		t.Errorf("inside: %q: wrote to the read-only /usr or sees the host's root", res.Output)
	}
	if _, err := os.Stat("/usr/podsup-test"); err == nil {
		_ = os.Remove("/usr/podsup-test")
		t.Error("the read-only bind let a write reach the host's /usr")
	}
}

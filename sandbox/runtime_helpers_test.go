package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/execrun"
	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/sandbox/cgroups"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// Workloads for the runtime tests (the test binary is its own child).

var _ = testproc.Register("sleep", func([]string) int {
	time.Sleep(5 * time.Minute)
	return 0
})

// nsReport is what the "nsreport" helper sees from inside a sandbox.
type nsReport struct {
	Hostname string            `json:"hostname"`
	Pids     []int             `json:"pids"`     // numeric entries of /proc
	Init     string            `json:"init"`     // /proc/1/cmdline, NULs as spaces
	NS       map[string]string `json:"ns"`       // /proc/self/ns/* links
	File     string            `json:"file"`     // content of args[0], if given
	FileErr  string            `json:"file_err"` // why it could not be read
}

var nsNames = []string{"pid", "mnt", "uts", "ipc", "net"}

var _ = testproc.Register("nsreport", func(args []string) int {
	var r nsReport
	r.Hostname, _ = os.Hostname()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			r.Pids = append(r.Pids, pid)
		}
	}
	sort.Ints(r.Pids)
	b, _ := os.ReadFile("/proc/1/cmdline")
	r.Init = strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	r.NS = map[string]string{}
	for _, n := range nsNames {
		r.NS[n], _ = os.Readlink("/proc/self/ns/" + n)
	}
	if len(args) > 0 {
		b, err := os.ReadFile(args[0])
		r.File = string(b)
		if err != nil {
			r.FileErr = err.Error()
		}
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
	return 0
})

// writefile writes args[1] to args[0].
var _ = testproc.Register("writefile", func(args []string) int {
	if err := os.WriteFile(args[0], []byte(args[1]), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
})

// serve listens on 127.0.0.1:0, writes the port to args[0] and answers
// every request with args[1].
var _ = testproc.Register("serve", func(args []string) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	if err := os.WriteFile(args[0]+".tmp", []byte(port), 0o644); err != nil {
		return 1
	}
	_ = os.Rename(args[0]+".tmp", args[0])
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, args[1]) }))
	return 1
})

// get fetches args[0] and prints the body; exit 1 when it cannot.
var _ = testproc.Register("get", func(args []string) int {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(args[0])
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer resp.Body.Close()
	_, _ = io.Copy(os.Stdout, resp.Body)
	return 0
})

// daemon-and-wait starts a sleeper in a new session (the classic daemon:
// not in our process group), prints its pid and waits to be stopped.
var _ = testproc.Register("daemon-and-wait", func([]string) int {
	exe, _ := os.Executable()
	pid, err := syscall.ForkExec(exe, []string{exe}, &syscall.ProcAttr{
		Env: testproc.HelperEnv("sleep"), Sys: &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(pid)
	time.Sleep(5 * time.Minute)
	return 0
})

// hog touches 1 GiB page by page; under a memory limit the OOM killer
// ends it. Exit 3 says the limit did not hold.
var _ = testproc.Register("hog", func([]string) int {
	const size = 1 << 30
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return 4
	}
	for i := 0; i < size; i += 4096 {
		b[i] = 1
	}
	return 3
})

var _ = testproc.Register("orphans", testproc.Orphans)

// forkbomb forks sleepers as fast as it can, args[0] attempts at most,
// prints how many forks failed, and waits.
var _ = testproc.Register("forkbomb", func(args []string) int {
	n, _ := strconv.Atoi(args[0])
	failed := 0
	for i := 0; i < n; i++ {
		if _, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "60"}, &syscall.ProcAttr{}); err != nil {
			failed++
		}
	}
	fmt.Println(failed)
	time.Sleep(5 * time.Minute)
	return 0
})

// Test scaffolding.

var instanceSeq atomic.Int64

// testInstancePrefix names this run's runtimes after the PID namespace and
// our pid, so a later run can tell which leftovers belong to a dead run.
func testInstancePrefix() string {
	var st unix.Stat_t
	_ = unix.Stat("/proc/self/ns/pid", &st) // 0 if unreadable: still unique by pid
	return fmt.Sprintf("sbtest-%d-%d-", st.Ino, os.Getpid())
}

// newTestRuntime is a runtime of an instance of its own. The tests that
// make one do not run in parallel: its cgroup manager may move this whole
// process into a leaf of its own cgroup (cgroups' _supervisor leaf, when
// that cgroup holds other processes) and back on Close, which is
// process-wide; a second manager made meanwhile would nest under the
// first's leaf.
func newTestRuntime(t testing.TB) *Runtime {
	t.Helper()
	rt, err := NewRuntime(Options{
		Instance:     testInstancePrefix() + strconv.FormatInt(instanceSeq.Add(1), 10),
		HolderStderr: os.Stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("closing runtime: %v", err)
		}
	})
	return rt
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustCreateSandbox(t testing.TB, rt *Runtime, id string, cfg spec.Sandbox) {
	t.Helper()
	if err := rt.CreateSandbox(testCtx(t), id, cfg); err != nil {
		t.Fatalf("CreateSandbox(%s): %v", id, err)
	}
}

// helperArgv is argv running the named helper (set Env to testproc.HelperEnv(name)).
func helperArgv(args ...string) []string {
	exe, _ := os.Executable()
	return append([]string{exe}, args...)
}

// runHelper creates and starts process id running helper name.
func runHelper(t testing.TB, rt *Runtime, sb, id, name string, args ...string) ProcessStatus {
	t.Helper()
	cfg := ProcessConfig{Sandbox: sb, Command: helperArgv(args...), RunAs: proc.RunAs{Env: testproc.HelperEnv(name)}, Stderr: os.Stderr}
	if err := rt.CreateProcess(testCtx(t), id, cfg); err != nil {
		t.Fatalf("CreateProcess(%s): %v", id, err)
	}
	if err := rt.StartProcess(testCtx(t), id); err != nil {
		t.Fatalf("StartProcess(%s): %v", id, err)
	}
	st, err := rt.ProcessStatus(id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// runIn runs req to completion inside sandbox sb the way podsup runs exec
// probes, hooks and podsup exec there: execrun over Spawn.
func runIn(ctx context.Context, rt *Runtime, sb string, req execrun.Request) (execrun.Result, error) {
	spawn := func(c *proc.Cmd) (*proc.Process, error) { return rt.Spawn(sb, c) }
	return execrun.SandboxRunner{Spawn: spawn}.Run(ctx, req)
}

// execHelper runs helper name inside sandbox sb and returns its output,
// failing the test unless it exits 0.
func execHelper(t testing.TB, rt *Runtime, sb, name string, args ...string) string {
	t.Helper()
	res, err := runIn(testCtx(t), rt, sb, execrun.Request{Argv: helperArgv(args...), RunAs: proc.RunAs{Env: testproc.HelperEnv(name)}, Timeout: 20 * time.Second, OutputLimit: 64 << 10})
	if err != nil {
		t.Fatalf("Exec %s in %s: %v", name, sb, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("Exec %s in %s: exit %d: %s", name, sb, res.ExitCode, res.Output)
	}
	return string(res.Output)
}

func reportIn(t testing.TB, rt *Runtime, sb string, file ...string) nsReport {
	t.Helper()
	out := execHelper(t, rt, sb, "nsreport", file...)
	var r nsReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("nsreport output %q: %v", out, err)
	}
	return r
}

// nsPid is the pid of host pid in its innermost PID namespace (NSpid).
func nsPid(t testing.TB, pid int) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "NSpid:"); ok {
			fs := strings.Fields(v)
			n, _ := strconv.Atoi(fs[len(fs)-1])
			return n
		}
	}
	t.Fatalf("no NSpid for %d", pid)
	return 0
}

// Before and after the whole run: sweep trees of dead runs, then check
// that this run left nothing behind.

// sweepStaleTestInstances removes the cgroup trees of earlier runs of
// these tests that died before cleaning up (named after our PID namespace
// and a pid that no longer exists).
func sweepStaleTestInstances() {
	ours := strings.TrimSuffix(testInstancePrefix(), strconv.Itoa(os.Getpid())+"-")
	for _, inst := range testInstances() {
		rest, ok := strings.CutPrefix(inst, ours)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 1 || unix.Kill(pid, 0) != unix.ESRCH { // signal 0 only asks
			continue
		}
		m, err := cgroups.New(cgroups.Options{Instance: inst})
		if err != nil {
			continue
		}
		if _, err := m.Sweep(); err != nil {
			fmt.Fprintf(os.Stderr, "sweeping stale test cgroups %s: %v\n", inst, err)
		}
		if err := m.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "removing stale test cgroups %s: %v\n", inst, err)
		}
	}
}

// testInstances lists "podsup-sbtest-*" roots next to our own cgroup.
func testInstances() []string {
	l, err := cgroups.Detect()
	if err != nil {
		return nil
	}
	var out []string
	for _, h := range append([]*cgroups.Hierarchy{l.V2}, l.V1...) {
		if h == nil {
			continue
		}
		own, err := h.OwnDir()
		if err != nil {
			continue
		}
		ents, _ := os.ReadDir(own)
		for _, e := range ents {
			if inst, ok := strings.CutPrefix(e.Name(), "podsup-"); ok && strings.HasPrefix(inst, "sbtest-") && !slices.Contains(out, inst) {
				out = append(out, inst)
			}
		}
	}
	return out
}

// mountsNow are the mounts of this process's namespace, by mount id,
// each with its mount point.
func mountsNow() map[string]string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 {
			out[f[0]] = f[4]
		}
	}
	return out
}

// newMounts are the mounts of now not in before. The other packages'
// tests run beside these and mount and unmount in the same namespace (a
// bridged sandbox's kept network namespace, say): one of theirs that
// was there at start and is gone is not this package's doing, and one
// of theirs made meanwhile goes again; so only a new mount that stays
// for two seconds counts.
func newMounts(before map[string]string) []string {
	var left []string
	for try := 0; try < 10; try++ {
		left = left[:0]
		for id, at := range mountsNow() {
			if _, ok := before[id]; !ok {
				left = append(left, at)
			}
		}
		if len(left) == 0 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	slices.Sort(left)
	return left
}

// leftovers reports what this run left: cgroups of its instances, child
// processes (alive or zombie), mounts made since the start.
func leftovers(mountsAtStart map[string]string) []string {
	var out []string
	mine := testInstancePrefix()
	for _, inst := range testInstances() {
		if strings.HasPrefix(inst, mine) {
			out = append(out, "cgroup root podsup-"+inst)
		}
	}
	out = append(out, testproc.ChildrenLeft()...)
	for _, at := range newMounts(mountsAtStart) {
		out = append(out, "a mount on "+at+" made since the start")
	}
	return out
}

// runHost starts c on the host and waits for its exit.
func runHost(t *testing.T, c *proc.Cmd) proc.Exit {
	t.Helper()
	p, err := proc.Start(c)
	if err != nil {
		t.Fatal(err)
	}
	e, err := p.Wait(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// runChecked runs the tests and then fails the run if anything is left.
func runChecked(m *testing.M) int {
	if os.Geteuid() != 0 {
		return m.Run()
	}
	sweepStaleTestInstances()
	mounts := mountsNow()
	return testproc.RunChecked(m, func() []string { return leftovers(mounts) })
}

package cgroups

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// The test binary is its own child: with PODSUP_CGROUPS_HELPER set it runs
// one of these workloads instead of the tests.
const helperEnv = "PODSUP_CGROUPS_HELPER"

var helpers = map[string]func(){
	// sleeper waits to be killed.
	"sleeper": func() { time.Sleep(5 * time.Minute) },
	// spin burns CPU until killed (bounded, should the test forget).
	"spin": func() {
		for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); {
		}
	},
	// hog touches 1 GiB page by page; under a memory limit the OOM killer
	// ends it. Exit 3 says the limit did not hold.
	"hog": func() {
		const size = 1 << 30
		b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			os.Exit(4)
		}
		for i := 0; i < size; i += 4096 {
			b[i] = 1
		}
		os.Exit(3)
	},
	// daemonize is the classic daemon: it starts a sleeper in a new
	// session (so not in its process group) and exits; the sleeper is
	// orphaned, and killing the first process's group misses it.
	"daemonize": func() {
		_, err := syscall.ForkExec(os.Args[0], []string{os.Args[0], "-test.run=^$"}, &syscall.ProcAttr{
			Env:   helperEnviron("sleeper"),
			Files: []uintptr{0, 1, 2},
			Sys:   &syscall.SysProcAttr{Setsid: true},
		})
		if err != nil {
			os.Exit(5)
		}
		os.Exit(0)
	},
}

// helperEnviron is the environment that runs helper name. The variable is
// replaced, not appended: Go's Getenv takes the first of two entries, and
// a helper that starts another would otherwise start itself forever.
func helperEnviron(name string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, helperEnv+"=") })
	return append(env, helperEnv+"="+name)
}

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		h := helpers[name]
		if h == nil {
			fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
			os.Exit(2)
		}
		h()
		os.Exit(0)
	}
	sweepStaleTestRoots()
	os.Exit(m.Run())
}

// testInstancePrefix names this run's instances: the pid namespace (so a
// run in another namespace, whose pids we cannot see, is never taken for
// dead) and the pid.
func testInstancePrefix() string {
	var st unix.Stat_t
	_ = unix.Stat("/proc/self/ns/pid", &st) // 0 if unreadable: still unique by pid
	return fmt.Sprintf("test-%d-%d-", st.Ino, os.Getpid())
}

// sweepStaleTestRoots removes the trees of earlier runs of these tests that
// died before their cleanups ran (a killed go test): instances named after
// our pid namespace and a pid that no longer exists. It kills only what is
// inside those trees: processes earlier runs of this binary started.
func sweepStaleTestRoots() {
	if os.Geteuid() != 0 {
		return
	}
	l, err := Detect()
	if err != nil {
		return
	}
	ours := strings.TrimSuffix(testInstancePrefix(), strconv.Itoa(os.Getpid())+"-")
	stale := map[string]bool{}
	for _, h := range append([]*Hierarchy{l.V2}, l.V1...) {
		if h == nil {
			continue
		}
		own, err := h.OwnDir()
		if err != nil {
			continue
		}
		entries, _ := os.ReadDir(own)
		for _, e := range entries {
			inst, ok := strings.CutPrefix(e.Name(), "podsup-")
			rest, ok2 := strings.CutPrefix(inst, ours)
			if !ok || !ok2 {
				continue
			}
			pidText, _, _ := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(pidText)
			if err != nil || pid <= 1 {
				continue
			}
			if unix.Kill(pid, 0) == unix.ESRCH { // signal 0: only asks whether it exists
				stale[inst] = true
			}
		}
	}
	for inst := range stale {
		// Both views: a run with DisableV2 used the v1 freezer and cpuacct.
		for _, disableV2 := range []bool{false, true} {
			m, err := New(Options{Instance: inst, DisableV2: disableV2})
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
}

// child is a process a test started through package proc, whose one
// reaper learns its exit: only proc may wait for a process.
type child struct {
	pid int
	p   *proc.Process
}

// startIn starts argv (or, with argv nil, the named helper) inside p.
func startIn(t *testing.T, p *Process, helper string, argv ...string) *child {
	t.Helper()
	path, args, env := os.Args[0], []string{os.Args[0], "-test.run=^$"}, helperEnviron(helper)
	if helper == "" {
		path, args, env = argv[0], argv, os.Environ()
	}
	var pp *proc.Process
	err := p.Place(func(fd int) error {
		var serr error
		pp, serr = proc.Start(&proc.Cmd{
			Path: path, Args: args, RunAs: proc.RunAs{Env: env}, Stdout: os.Stderr, Stderr: os.Stderr,
			UseCgroupFD: fd >= 0, CgroupFD: fd,
		})
		return serr
	})
	if err != nil {
		t.Fatalf("starting %s %v in %s: %v", helper, argv, p.Path(), err)
	}
	c := &child{pid: pp.Pid(), p: pp}
	t.Cleanup(func() {
		if !c.ended() {
			_ = pp.Signal(unix.SIGKILL) // through a pidfd: never a reused number
			c.wait(t, 10*time.Second)
		}
	})
	return c
}

// ended reports whether the child's exit is known.
func (c *child) ended() bool {
	select {
	case <-c.p.Done():
		return true
	default:
		return false
	}
}

// wait returns how the child ended, failing the test if it is still
// running after d.
func (c *child) wait(t *testing.T, d time.Duration) unix.WaitStatus {
	t.Helper()
	select {
	case <-c.p.Done():
		return c.p.Exit().Status
	case <-time.After(d):
		_ = c.p.Signal(unix.SIGKILL)
		t.Fatalf("pid %d still running after %v", c.pid, d)
		return 0
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates cgroups")
	}
}

var instanceSeq atomic.Int64

// newTestManager creates a Manager with a unique instance name (other
// test runs share this machine) and checks at cleanup that Close left no
// cgroup behind.
func newTestManager(t *testing.T, opts Options) *Manager {
	t.Helper()
	requireRoot(t)
	if opts.Instance == "" {
		opts.Instance = testInstancePrefix() + strconv.FormatInt(instanceSeq.Add(1), 10)
	}
	m, err := New(opts)
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("cgroups unavailable on this host: %v", err)
	}
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Logf("layout %s, controllers %v, root %v", m.Layout().Kind(), m.Controllers(), m.Roots())
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		assertRootGone(t, m)
	})
	return m
}

// assertRootGone fails unless the Manager's root is gone from every
// hierarchy: nothing left behind.
func assertRootGone(t *testing.T, m *Manager) {
	t.Helper()
	for _, dir := range m.Roots() {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup root %s left behind (stat: %v)", dir, err)
		}
	}
}

// cgroupsOf reads /proc/<pid>/cgroup as controllers -> path ("" for v2).
func cgroupsOf(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			out[parts[1]] = parts[2]
		}
	}
	return out
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

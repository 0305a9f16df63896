package cgroups

// Tests against the real kernel: they need root, and skip with the reason
// when a hierarchy they exercise is absent. CI runs them on the same hybrid
// layout as the development machines, where none skips.

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/spec"
	"golang.org/x/sys/unix"
)

// newGroupProcess creates group "g" with r and process "p" in it.
func newGroupProcess(t *testing.T, m *Manager, r spec.Resources) (*Group, *Process) {
	t.Helper()
	g, err := m.NewGroup("g", r)
	if err != nil {
		t.Fatalf("NewGroup: %v", err)
	}
	p, err := g.NewProcess("p")
	if err != nil {
		t.Fatalf("NewProcess: %v", err)
	}
	return g, p
}

// allLimits asks for every controller podsup uses, so that a group lives
// in every hierarchy in use (Manager.groupHiers).
var allLimits = spec.Resources{Memory: 256 << 20, CPU: 1, Pids: 1000}

// wantCgroup checks that pid sits in p in every hierarchy p lives in.
func wantCgroup(t *testing.T, m *Manager, p *Process, pid int) {
	t.Helper()
	got := cgroupsOf(t, pid)
	for _, h := range p.hiers() {
		key := strings.Join(h.Controllers, ",")
		if h.Version == 2 {
			key = ""
		}
		want := path.Join(h.Own, m.root, p.rel)
		if got[key] != want {
			t.Errorf("pid %d in %q hierarchy: cgroup %q, want %q", pid, key, got[key], want)
		}
	}
}

func TestPlacementPutsChildInEveryHierarchy(t *testing.T) {
	m := newTestManager(t, Options{})
	_, p := newGroupProcess(t, m, allLimits)
	if len(p.hiers()) != len(m.hiers) {
		t.Fatalf("a group with every limit lives in %d of the %d hierarchies", len(p.hiers()), len(m.hiers))
	}
	c := startIn(t, p, "sleeper")
	wantCgroup(t, m, p, c.pid)
	procs, err := p.Procs()
	if err != nil || len(procs) != 1 || procs[0] != c.pid {
		t.Fatalf("Procs = %v, %v; want [%d]", procs, err, c.pid)
	}
	// The spawning thread went back: no thread of the test is in the tree.
	tasks, _ := filepath.Glob("/proc/self/task/*/cgroup")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), m.root) {
			t.Errorf("%s still names podsup's tree:\n%s", f, b)
		}
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if ws := c.wait(t, 10*time.Second); ws.Signal() != unix.SIGKILL {
		t.Errorf("child ended with %v, want SIGKILL", ws)
	}
}

// With cgroup2 mounted, a group without limits lives in v2 alone: its
// children are placed there at fork, the forking thread never enters a v1
// cgroup (that move is most of a placed start's cost), and the tree is
// still listed, killed whole and accounted.
func TestGroupWithoutLimitsLivesInV2Only(t *testing.T) {
	m := newTestManager(t, Options{})
	if m.v2 == nil {
		t.Skip("no cgroup2 hierarchy: every v1 hierarchy tracks the tree")
	}
	g, p := newGroupProcess(t, m, spec.Resources{})
	if hs := p.hiers(); len(hs) != 1 || hs[0] != m.v2 {
		t.Fatalf("a group without limits lives in %d hierarchies, want v2 alone", len(hs))
	}
	for _, h := range m.hiers[1:] {
		if _, err := os.Stat(filepath.Join(h.base, "g")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("group without limits has a cgroup in v1 %v: %v", h.Controllers, err)
		}
	}
	pl, err := p.OpenPlacement()
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	if len(pl.enter) != 0 || pl.CgroupFD() < 0 {
		t.Fatalf("placement enters %d v1 cgroups, cgroup fd %d; want none and a v2 fd", len(pl.enter), pl.CgroupFD())
	}
	c := startIn(t, p, "daemonize")
	if ws := c.wait(t, 10*time.Second); ws.ExitStatus() != 0 {
		t.Fatalf("daemonize exited %v", ws)
	}
	var daemon []int
	waitFor(t, 10*time.Second, "the setsid daemon listed in the tree", func() bool {
		daemon, _ = g.Procs()
		return len(daemon) == 1
	})
	wantCgroup(t, m, p, daemon[0])
	if err := p.KillTree(unix.SIGKILL); err != nil {
		t.Fatalf("KillTree: %v", err)
	}
	if procs, err := g.Procs(); err != nil || len(procs) != 0 {
		t.Fatalf("after KillTree the tree lists %v, %v", procs, err)
	}
	if err := g.SetResources(spec.Resources{Memory: 64 << 20}); m.ctl["memory"] != m.v2 && !errors.Is(err, ErrNoController) {
		t.Errorf("a memory limit on a group created without one, memory on v1: %v; want ErrNoController", err)
	}
}

func TestForkSeesThreadInsideAndProcsLeavesPodsupOut(t *testing.T) {
	m := newTestManager(t, Options{})
	if len(m.hiers) == 1 && m.v2 != nil {
		t.Skip("pure v2 host: no v1 cgroup to move a thread into")
	}
	_, p := newGroupProcess(t, m, allLimits)
	pl, err := p.OpenPlacement()
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	err = pl.Fork(func() error {
		b, err := os.ReadFile("/proc/thread-self/cgroup")
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), path.Join(m.root, p.rel)) {
			t.Errorf("inside Fork the thread is not in %s:\n%s", p.rel, b)
		}
		procs, self, err := p.procs()
		if err != nil {
			return err
		}
		if len(procs) != 0 || !self {
			t.Errorf("inside Fork: procs %v, self listed %v; want none and true", procs, self)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	if b, _ := os.ReadFile("/proc/thread-self/cgroup"); strings.Contains(string(b), m.root) {
		t.Errorf("after Fork a thread is still inside:\n%s", b)
	}
}

func TestMemoryLimitOOMKillsAndCounts(t *testing.T) {
	m := newTestManager(t, Options{})
	if m.ctl["memory"] == nil {
		t.Skip("no memory controller in any hierarchy")
	}
	t.Logf("memory controller: cgroup v%d", m.ctl["memory"].Version)
	g, p := newGroupProcess(t, m, spec.Resources{Memory: 64 << 20})
	c := startIn(t, p, "hog")
	ws := c.wait(t, 60*time.Second)
	if ws.Signal() != unix.SIGKILL {
		t.Fatalf("hog ended with %v (exit %d), want SIGKILL by the OOM killer", ws, ws.ExitStatus())
	}
	for _, n := range []*node{&p.node, &g.node} {
		kills, err := n.OOMKills()
		if err != nil || kills < 1 {
			t.Errorf("OOMKills(%s) = %d, %v; want >= 1", n.rel, kills, err)
		}
	}
	st, err := p.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if st.OOMKills < 1 || st.MemoryPeak < 32<<20 || st.MemoryPeak > 80<<20 {
		t.Errorf("Stats = %+v; want OOMKills >= 1 and a peak near the 64 MiB limit", st)
	}
}

func TestPidsLimitStopsForkBomb(t *testing.T) {
	m := newTestManager(t, Options{})
	h := m.ctl["pids"]
	if h == nil {
		t.Skip("no pids controller in any hierarchy")
	}
	g, p := newGroupProcess(t, m, spec.Resources{Pids: 20})
	// Bounded: 200 background sleeps at most, and the limit stops it at 20
	// tasks; everything is killed below.
	c := startIn(t, p, "", "/bin/sh", "-c", "i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); done; wait")
	maxEvents := func() uint64 {
		var total uint64
		dirs, _ := subdirs(g.dir(h))
		for _, d := range append(dirs, g.dir(h)) {
			n, _ := readKeyed(filepath.Join(d, "pids.events"), "max")
			total += n
		}
		return total
	}
	waitFor(t, 20*time.Second, "a fork refused by pids.max", func() bool { return maxEvents() > 0 })
	procs, err := g.Procs()
	if err != nil {
		t.Fatal(err)
	}
	if len(procs) == 0 || len(procs) > 20 {
		t.Errorf("%d processes in the group, want 1..20", len(procs))
	}
	if err := g.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if procs, _ := g.Procs(); len(procs) != 0 {
		t.Errorf("after Kill: %v", procs)
	}
	c.wait(t, 10*time.Second)
}

// testKillDaemon starts a double-forked setsid daemon in a process cgroup
// and checks that Kill ends it: what a process-group kill misses.
func testKillDaemon(t *testing.T, m *Manager) {
	_, p := newGroupProcess(t, m, spec.Resources{})
	c := startIn(t, p, "daemonize")
	if ws := c.wait(t, 10*time.Second); ws.ExitStatus() != 0 {
		t.Fatalf("daemonize exited %v", ws)
	}
	// Exactly one process, and it stays the same: the sleeper, not a chain.
	var daemon int
	waitFor(t, 10*time.Second, "the daemon to be listed", func() bool {
		procs, _ := p.Procs()
		if len(procs) == 1 {
			daemon = procs[0]
		}
		return daemon > 0
	})
	if env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", daemon)); !strings.Contains(string(env), helperEnv+"=sleeper\x00") {
		t.Fatalf("pid %d is not the daemon (environment %q)", daemon, env)
	}
	pidfd, err := unix.PidfdOpen(daemon, 0)
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", daemon, err)
	}
	defer unix.Close(pidfd)
	if sid, _ := unix.Getsid(daemon); sid != daemon {
		t.Errorf("daemon %d: session %d, want its own", daemon, sid)
	}
	if pgid, _ := unix.Getpgid(daemon); pgid == c.pid {
		t.Fatalf("daemon is in the first process's group %d: a group kill would reach it; test proves nothing", pgid)
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if !testproc.PidfdExited(pidfd, 10*time.Second) {
		t.Fatalf("daemon %d still alive 10 s after Kill", daemon)
	}
	if procs, _ := p.Procs(); len(procs) != 0 {
		t.Errorf("after Kill: %v", procs)
	}
}

func TestKillV2CgroupKillReachesSetsidDaemon(t *testing.T) {
	m := newTestManager(t, Options{})
	if m.v2 == nil {
		t.Skip("no cgroup2 hierarchy")
	}
	if !exists(filepath.Join(m.v2.base, "cgroup.kill")) {
		t.Skip("kernel without cgroup.kill (< 5.14)")
	}
	testKillDaemon(t, m)
}

func TestKillV1FreezerReachesSetsidDaemon(t *testing.T) {
	m := newTestManager(t, Options{DisableV2: true})
	if m.ctl["freezer"] == nil {
		t.Skip("no v1 freezer hierarchy")
	}
	testKillDaemon(t, m)
}

func TestStatsCountBusyCPU(t *testing.T) {
	m := newTestManager(t, Options{})
	g, p := newGroupProcess(t, m, spec.Resources{Memory: 256 << 20})
	c := startIn(t, p, "spin")
	waitFor(t, 20*time.Second, "CPU usage of the spinning process", func() bool {
		st, err := g.Stats()
		return err == nil && st.CPU >= 50*time.Millisecond
	})
	st, err := p.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if p.ctl("memory") != nil && st.MemoryCurrent == 0 {
		t.Errorf("Stats = %+v: no memory charged to a running process", st)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	c.wait(t, 10*time.Second)
}

func TestSweepRemovesWhatACrashedPodsupLeft(t *testing.T) {
	crashed := newTestManager(t, Options{})
	_, p := newGroupProcess(t, crashed, spec.Resources{Memory: 64 << 20, Pids: 50})
	c := startIn(t, p, "sleeper")
	// "crashed" is never closed before the new one sweeps (its cleanup
	// runs last and finds nothing).
	m := newTestManager(t, Options{Instance: crashed.root[len("podsup-"):]})
	removed, err := m.Sweep()
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if len(removed) != 1 || removed[0].Path != filepath.Join(m.Root(), "g") || removed[0].Name != "g" {
		t.Errorf("Sweep removed %+v, want the leftover group", removed)
	} else if len(removed[0].Pids) != 1 || removed[0].Pids[0] != c.pid {
		t.Errorf("Sweep found pids %v in the leftover group, want [%d]", removed[0].Pids, c.pid)
	}
	if ws := c.wait(t, 10*time.Second); ws.Signal() != unix.SIGKILL {
		t.Errorf("leftover process ended with %v, want SIGKILL", ws)
	}
	for _, d := range p.Dirs() {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survived Sweep", d)
		}
	}
	// The new instance can use the name again.
	if _, err := m.NewGroup("g", spec.Resources{}); err != nil {
		t.Errorf("NewGroup after Sweep: %v", err)
	}
}

// A process may make cgroups of its own below its cgroup (a nested
// supervisor, say): Delete, which tries each cgroup's rmdir before it
// lists the cgroup's children, still removes them, deepest first.
func TestDeleteRemovesNestedCgroups(t *testing.T) {
	m := newTestManager(t, Options{Timeout: 300 * time.Millisecond})
	g, p := newGroupProcess(t, m, spec.Resources{})
	var nested []string
	for _, d := range p.Dirs() {
		deep := filepath.Join(d, "a", "b")
		if err := os.MkdirAll(deep, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(d, "c"), 0o755); err != nil {
			t.Fatal(err)
		}
		nested = append(nested, deep, filepath.Join(d, "c"))
	}
	if err := g.Delete(); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, d := range append(append(g.Dirs(), p.Dirs()...), nested...) {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind", d)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDeleteLeavesNothingAndWaitsForKill(t *testing.T) {
	m := newTestManager(t, Options{Timeout: 300 * time.Millisecond})
	g, p := newGroupProcess(t, m, spec.Resources{Pids: 10})
	if _, err := g.NewProcess("q"); err != nil {
		t.Fatal(err)
	}
	c := startIn(t, p, "sleeper")
	if err := g.Delete(); !errors.Is(err, ErrBusy) {
		t.Fatalf("Delete with a live process = %v, want ErrBusy", err)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	// Delete right after Kill: the kernel may list the exiting task for a
	// moment, and Delete must ride that out.
	if err := g.Delete(); err != nil {
		t.Fatalf("Delete after Kill: %v", err)
	}
	for _, d := range append(g.Dirs(), p.Dirs()...) {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind", d)
		}
	}
	if err := g.Delete(); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	c.wait(t, 10*time.Second)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	assertRootGone(t, m)
}

func TestNewGroupRefusesDuplicatesAndBadNames(t *testing.T) {
	m := newTestManager(t, Options{})
	if _, err := m.NewGroup("g", spec.Resources{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.NewGroup("g", spec.Resources{}); !errors.Is(err, ErrExist) {
		t.Errorf("second NewGroup(g) = %v, want ErrExist", err)
	}
	for _, bad := range []string{"", "a/b", "..", "_supervisor", ".hidden"} {
		if _, err := m.NewGroup(bad, spec.Resources{}); !errors.Is(err, ErrInvalidName) {
			t.Errorf("NewGroup(%q) = %v, want ErrInvalidName", bad, err)
		}
	}
}

// A Process cgroup takes the next instance of its process after KillTree
// emptied it: the child placed there at fork runs. (On Linux 6.18 a
// cgroup once killed through cgroup.kill SIGKILLs every child later
// cloned into it, which is why KillTree does not use it.)
func TestKillTreeLeavesTheCgroupUsableForTheNextChild(t *testing.T) {
	m := newTestManager(t, Options{})
	_, p := newGroupProcess(t, m, spec.Resources{})
	first := startIn(t, p, "sleeper")
	if err := p.KillTree(unix.SIGKILL); err != nil {
		t.Fatalf("KillTree: %v", err)
	}
	if ws := first.wait(t, 10*time.Second); ws.Signal() != unix.SIGKILL {
		t.Fatalf("first child ended with %v, want SIGKILL", ws)
	}
	next := startIn(t, p, "sleeper")
	time.Sleep(200 * time.Millisecond) // a SIGKILL at fork lands at once
	if next.ended() {
		t.Fatalf("the next child in the killed cgroup ended at once: %v", next.p.Exit())
	}
	if err := p.KillTree(unix.SIGKILL); err != nil {
		t.Fatalf("KillTree: %v", err)
	}
	next.wait(t, 10*time.Second)
}

// A tree that keeps forking is dead after KillTree, which first chases it
// pid by pid and then freezes it; the cgroup takes the next child.
func TestKillTreeEndsAForkingTree(t *testing.T) {
	m := newTestManager(t, Options{})
	_, p := newGroupProcess(t, m, spec.Resources{})
	forker := startIn(t, p, "", "/bin/sh", "-c", "while :; do sleep 300 & done")
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids, err := p.Procs()
		if err != nil {
			t.Fatal(err)
		}
		if len(pids) >= 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the forker made only %d processes", len(pids))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.KillTree(unix.SIGKILL); err != nil {
		t.Fatalf("KillTree: %v", err)
	}
	if pids, err := p.Procs(); err != nil || len(pids) != 0 {
		t.Fatalf("after KillTree the tree still lists %v (%v)", pids, err)
	}
	if ws := forker.wait(t, 10*time.Second); ws.Signal() != unix.SIGKILL {
		t.Fatalf("the forker ended with %v, want SIGKILL", ws)
	}
	next := startIn(t, p, "sleeper")
	time.Sleep(200 * time.Millisecond) // a SIGKILL at fork lands at once
	if next.ended() {
		t.Fatalf("the next child in the cgroup ended at once: %v", next.p.Exit())
	}
}

// TryDelete is one rmdir: it refuses, without an error and without
// killing anything, while a process runs in the cgroup, and removes it
// once the cgroup is empty.
func TestTryDeleteRemovesOnlyAnEmptyCgroup(t *testing.T) {
	m := newTestManager(t, Options{Timeout: 300 * time.Millisecond})
	if m.Layout().V2 == nil {
		t.Skip("no cgroup2 hierarchy here: TryDelete applies to cgroup2 alone")
	}
	g, p := newGroupProcess(t, m, spec.Resources{})
	c := startIn(t, p, "sleeper")
	gone, err := p.TryDelete()
	if err != nil || gone {
		t.Fatalf("TryDelete with a live process = %v, %v; want false, nil", gone, err)
	}
	if err := p.KillTree(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.wait(t, 10*time.Second)
	if gone, err := p.TryDelete(); err != nil || !gone {
		t.Fatalf("TryDelete of the emptied cgroup = %v, %v; want true, nil", gone, err)
	}
	if _, err := os.Stat(p.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s left behind", p.Path())
	}
	if gone, err := p.TryDelete(); err != nil || !gone {
		t.Fatalf("TryDelete of a removed cgroup = %v, %v; want true, nil", gone, err)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
}

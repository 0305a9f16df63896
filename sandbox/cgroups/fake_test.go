package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/spec"
)

// fakeCgroupfs imitates cgroupfs in a temp dir: mkdir makes the control
// files of the hierarchy's controllers appear, rmdir refuses cgroups with
// children or processes, and writes follow the kernel's rules for
// cgroup.subtree_control and cgroup.procs on v2 (no internal processes).
// Controller files hold the kernel's defaults and fixed usage figures.
//
// Only podsup's own pid, or pids above the kernel's pid_max (nobody's), are
// ever listed, so nothing the code under test signals can exist.
type fakeCgroupfs struct {
	t      *testing.T
	v2     string              // mount of the v2 hierarchy, "" for none
	v1     map[string][]string // mount -> controllers
	writes []string            // "path-below-the-temp-dir=value", in order
	top    string
}

// noSuchPid is above any pid_max (at most 2^22): never a real process.
const noSuchPid = 1 << 30

// newFake builds a layout of the given kind: "v2" (controllers cpu, memory,
// pids; podsup in a non-root cgroup /podsup.service), "hybrid" (v2 without
// controllers, podsup in its root, plus v1), or "v1" (memory, cpu+cpuacct
// co-mounted, pids, freezer; podsup in /podsup.service in memory).
func newFake(t *testing.T, kind string) (*fakeCgroupfs, *Layout) {
	f := &fakeCgroupfs{t: t, v1: map[string][]string{}, top: t.TempDir()}
	l := &Layout{}
	self := strconv.Itoa(os.Getpid())
	if kind == "v2" || kind == "hybrid" {
		f.v2 = filepath.Join(f.top, "unified")
		ctrls := ""
		own := "/"
		if kind == "v2" {
			ctrls = "cpu memory pids"
			own = "/podsup.service"
		}
		f.mkdirOrFail(f.v2)
		f.set(filepath.Join(f.v2, "cgroup.controllers"), ctrls)
		f.set(filepath.Join(f.v2, "cgroup.subtree_control"), ctrls)
		ownDir := filepath.Join(f.v2, own)
		if own != "/" {
			f.mkdirOrFail(ownDir)
		}
		f.set(filepath.Join(ownDir, "cgroup.procs"), self+"\n")
		l.V2 = &Hierarchy{Version: 2, Mount: f.v2, Root: "/", Own: own, Controllers: strings.Fields(ctrls)}
	}
	if kind == "v1" || kind == "hybrid" {
		for _, ctrls := range [][]string{{"memory"}, {"cpu", "cpuacct"}, {"pids"}, {"freezer"}} {
			mount := filepath.Join(f.top, strings.Join(ctrls, ","))
			f.v1[mount] = ctrls
			f.mkdirOrFail(mount)
			own := "/"
			if ctrls[0] == "memory" {
				own = "/podsup.service"
				f.mkdirOrFail(filepath.Join(mount, own))
			}
			f.set(filepath.Join(mount, own, "cgroup.procs"), self+"\n")
			l.V1 = append(l.V1, &Hierarchy{Version: 1, Mount: mount, Root: "/", Own: own, Controllers: ctrls})
		}
	}
	return f, l
}

func (f *fakeCgroupfs) ops() fsOps {
	return fsOps{mkdir: f.mkdir, rmdir: f.rmdir, write: f.write}
}

func (f *fakeCgroupfs) mkdirOrFail(dir string) {
	if err := f.mkdir(dir); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeCgroupfs) set(file, content string) {
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeCgroupfs) get(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		f.t.Fatalf("reading %s: %v", file, err)
	}
	return strings.TrimSpace(string(b))
}

// mountOf returns the mount a path belongs to and whether it is v2.
func (f *fakeCgroupfs) mountOf(p string) (string, []string, bool) {
	if f.v2 != "" && (p == f.v2 || strings.HasPrefix(p, f.v2+"/")) {
		return f.v2, nil, true
	}
	for m, c := range f.v1 {
		if p == m || strings.HasPrefix(p, m+"/") {
			return m, c, false
		}
	}
	f.t.Fatalf("fake cgroupfs: %s is in no hierarchy", p)
	return "", nil, false
}

func (f *fakeCgroupfs) mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	mount, ctrls, v2 := f.mountOf(dir)
	files := map[string]string{"cgroup.procs": ""}
	if v2 {
		if dir != mount {
			ctrls = strings.Fields(f.get(filepath.Join(filepath.Dir(dir), "cgroup.subtree_control")))
			files["cgroup.controllers"] = strings.Join(ctrls, " ")
			files["cgroup.subtree_control"] = ""
		}
		files["cgroup.kill"] = ""
		files["cgroup.freeze"] = "0"
		files["cgroup.events"] = "populated 0\nfrozen 0\n"
		files["cpu.stat"] = "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n"
		for _, c := range ctrls {
			switch c {
			case "memory":
				files["memory.max"] = "max"
				files["memory.swap.max"] = "max"
				files["memory.current"] = "4096"
				files["memory.peak"] = "8192"
				files["memory.events"] = "low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n"
			case "cpu":
				files["cpu.max"] = "max 100000"
				files["cpu.weight"] = "100"
			case "pids":
				files["pids.max"] = "max"
			}
		}
	} else {
		files["tasks"] = ""
		for _, c := range ctrls {
			switch c {
			case "memory":
				files["memory.limit_in_bytes"] = "9223372036854771712"
				files["memory.memsw.limit_in_bytes"] = "9223372036854771712"
				files["memory.usage_in_bytes"] = "4096"
				files["memory.max_usage_in_bytes"] = "8192"
				files["memory.oom_control"] = "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"
			case "cpu":
				files["cpu.cfs_period_us"] = "100000"
				files["cpu.cfs_quota_us"] = "-1"
				files["cpu.shares"] = "1024"
			case "cpuacct":
				files["cpuacct.usage"] = "2000000"
			case "pids":
				files["pids.max"] = "max"
			case "freezer":
				files["freezer.state"] = "THAWED"
			}
		}
	}
	for name, content := range files {
		f.set(filepath.Join(dir, name), content)
	}
	return nil
}

func (f *fakeCgroupfs) rmdir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			return &os.PathError{Op: "rmdir", Path: dir, Err: unix.EBUSY}
		}
	}
	if f.get(filepath.Join(dir, "cgroup.procs")) != "" {
		return &os.PathError{Op: "rmdir", Path: dir, Err: unix.EBUSY}
	}
	return os.RemoveAll(dir)
}

func (f *fakeCgroupfs) write(file, value string) error {
	rel, _ := filepath.Rel(f.top, file)
	f.writes = append(f.writes, rel+"="+value)
	dir := filepath.Dir(file)
	mount, _, v2 := f.mountOf(dir)
	if !exists(file) {
		return &os.PathError{Op: "open", Path: file, Err: unix.ENOENT}
	}
	ebusy := &os.PathError{Op: "write", Path: file, Err: unix.EBUSY}
	switch {
	case v2 && filepath.Base(file) == "cgroup.subtree_control":
		set := strings.Fields(f.get(file))
		for _, tok := range strings.Fields(value) {
			c := tok[1:]
			if tok[0] == '+' {
				if dir != mount && f.get(filepath.Join(dir, "cgroup.procs")) != "" {
					return ebusy // no internal processes
				}
				if !slices.Contains(set, c) {
					set = append(set, c)
				}
			} else {
				set = slices.DeleteFunc(set, func(s string) bool { return s == c })
			}
		}
		slices.Sort(set)
		f.set(file, strings.Join(set, " "))
		return nil
	case v2 && filepath.Base(file) == "cgroup.procs":
		if dir != mount && f.get(filepath.Join(dir, "cgroup.subtree_control")) != "" {
			return ebusy
		}
		// Move the process: out of every cgroup of the hierarchy, into this.
		_ = filepath.WalkDir(mount, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == "cgroup.procs" {
				lines := slices.DeleteFunc(strings.Fields(f.get(p)), func(s string) bool { return s == value })
				f.set(p, strings.Join(lines, "\n"))
			}
			return nil
		})
		f.set(file, strings.TrimSpace(f.get(file)+"\n"+value))
		return nil
	}
	return writeFile(file, value)
}

// wrote reports the index of a write in the log, or -1.
func (f *fakeCgroupfs) wrote(suffix string) int {
	return slices.IndexFunc(f.writes, func(w string) bool { return strings.HasSuffix(w, suffix) })
}

func newFakeManager(t *testing.T, f *fakeCgroupfs, l *Layout) *Manager {
	t.Helper()
	m, err := newManager(Options{Instance: "fake", Layout: l}, f.ops())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// wantFiles checks control files of dir.
func (f *fakeCgroupfs) wantFiles(dir string, want map[string]string) {
	f.t.Helper()
	for name, v := range want {
		if got := f.get(filepath.Join(dir, name)); got != v {
			f.t.Errorf("%s/%s = %q, want %q", dir, name, got, v)
		}
	}
}

func TestFakeV2MovesPodsupToLeafEnablesControllersAndWritesLimits(t *testing.T) {
	f, l := newFake(t, "v2")
	m := newFakeManager(t, f, l)
	own := filepath.Join(f.v2, "podsup.service")
	self := strconv.Itoa(os.Getpid())
	if !m.moved {
		t.Fatal("podsup did not move out of its own cgroup to enable controllers")
	}
	f.wantFiles(own, map[string]string{"cgroup.procs": "", "cgroup.subtree_control": "cpu memory pids"})
	f.wantFiles(m.Root(), map[string]string{"cgroup.subtree_control": "cpu memory pids"})
	f.wantFiles(filepath.Join(m.Root(), supervisorLeaf), map[string]string{"cgroup.procs": self})
	if got := m.Controllers(); len(got) != 3 || got["memory"] != 2 || got["cpu"] != 2 || got["pids"] != 2 {
		t.Errorf("Controllers = %v, want cpu, memory, pids on v2", got)
	}

	g, err := m.NewGroup("web", specResources(256<<20, 0.5, 200, 64))
	if err != nil {
		t.Fatal(err)
	}
	f.wantFiles(g.Path(), map[string]string{
		"cgroup.subtree_control": "cpu memory pids",
		"memory.max":             "268435456",
		"memory.swap.max":        "0",
		"cpu.max":                "50000 100000",
		"cpu.weight":             "200",
		"pids.max":               "64",
	})
	p, err := g.NewProcess("api")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p.Path(), "memory.events")); err != nil {
		t.Errorf("process cgroup has no memory controller: %v", err)
	}
	st, err := p.Stats()
	want := Stats{CPU: 1500 * 1000, MemoryCurrent: 4096, MemoryPeak: 8192, OOMKills: 2}
	if err != nil || st != want {
		t.Errorf("Stats = %+v, %v; want %+v", st, err, want)
	}
	pl, err := p.OpenPlacement()
	if err != nil {
		t.Fatal(err)
	}
	if pl.CgroupFD() < 0 || len(pl.enter) != 0 {
		t.Errorf("pure v2 placement: fd %d, %d v1 cgroups; want an fd and none", pl.CgroupFD(), len(pl.enter))
	}
	pl.Close()

	if err := g.SetResources(specResources(0, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	f.wantFiles(g.Path(), map[string]string{
		"memory.max": "max", "memory.swap.max": "max", "cpu.max": "max 100000", "cpu.weight": "100", "pids.max": "max",
	})

	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Back home; the kernel refused that until the controllers podsup had
	// enabled in its own cgroup were off again.
	f.wantFiles(own, map[string]string{"cgroup.procs": self, "cgroup.subtree_control": ""})
	assertRootGone(t, m)
}

func TestFakeV2OtherProcessesKeepV2ControllersOff(t *testing.T) {
	f, l := newFake(t, "v2")
	own := filepath.Join(f.v2, "podsup.service")
	self := strconv.Itoa(os.Getpid())
	f.set(filepath.Join(own, "cgroup.procs"), self+"\n"+strconv.Itoa(noSuchPid))
	m := newFakeManager(t, f, l)
	if m.moved || len(m.Controllers()) != 0 {
		t.Errorf("moved %v, controllers %v; want podsup back home and no controllers", m.moved, m.Controllers())
	}
	f.wantFiles(own, map[string]string{"cgroup.subtree_control": ""})
	if procs := strings.Fields(f.get(filepath.Join(own, "cgroup.procs"))); !slices.Contains(procs, self) || len(procs) != 2 {
		t.Errorf("own cgroup.procs = %v, want podsup back with the other process", procs)
	}
	if _, err := m.NewGroup("web", specResources(1<<20, 0, 0, 0)); !errors.Is(err, ErrNoController) {
		t.Errorf("NewGroup with a memory limit = %v, want ErrNoController", err)
	}
	if _, err := m.NewGroup("web", specResources(0, 0, 0, 0)); err != nil {
		t.Errorf("NewGroup without limits: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	assertRootGone(t, m)
}

func TestFakeV1WritesLimitsInTheOrderTheKernelNeeds(t *testing.T) {
	f, l := newFake(t, "v1")
	m := newFakeManager(t, f, l)
	want := map[string]int{"memory": 1, "cpu": 1, "cpuacct": 1, "pids": 1, "freezer": 1}
	if got := m.Controllers(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Controllers = %v, want %v", got, want)
	}
	if len(m.hiers) != 4 {
		t.Errorf("%d hierarchies in use, want 4 (cpu and cpuacct share one)", len(m.hiers))
	}
	g, err := m.NewGroup("web", specResources(256<<20, 0.5, 200, 64))
	if err != nil {
		t.Fatal(err)
	}
	dir := func(c string) string { return g.dir(m.ctl[c]) }
	f.wantFiles(dir("memory"), map[string]string{"memory.limit_in_bytes": "268435456", "memory.memsw.limit_in_bytes": "268435456"})
	f.wantFiles(dir("cpu"), map[string]string{"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "50000", "cpu.shares": "2048"})
	f.wantFiles(dir("pids"), map[string]string{"pids.max": "64"})
	// Lowering from unlimited: the memory limit first, then memsw (the
	// kernel keeps memsw >= limit).
	if a, b := f.wrote("web/memory.limit_in_bytes=268435456"), f.wrote("web/memory.memsw.limit_in_bytes=268435456"); a < 0 || b < a {
		t.Errorf("write order %v: limit at %d, memsw at %d", f.writes, a, b)
	}
	f.writes = nil
	if err := g.SetResources(specResources(512<<20, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if a, b := f.wrote("web/memory.limit_in_bytes=536870912"), f.wrote("web/memory.memsw.limit_in_bytes=536870912"); b < 0 || a < b {
		t.Errorf("raising: write order %v: memsw must come first", f.writes)
	}
	f.wantFiles(dir("cpu"), map[string]string{"cpu.cfs_quota_us": "-1", "cpu.shares": "1024"})
	f.wantFiles(dir("pids"), map[string]string{"pids.max": "max"})

	p, err := g.NewProcess("api")
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.Stats()
	// OOM kills are summed over the tree on v1: group 1 + process 1.
	wantStats := Stats{CPU: 2000000, MemoryCurrent: 4096, MemoryPeak: 8192, OOMKills: 2}
	if err != nil || st != wantStats {
		t.Errorf("Stats = %+v, %v; want %+v", st, err, wantStats)
	}
	pl, err := p.OpenPlacement()
	if err != nil {
		t.Fatal(err)
	}
	if pl.CgroupFD() != -1 || len(pl.enter) != 4 {
		t.Errorf("pure v1 placement: fd %d, %d v1 cgroups; want -1 and 4", pl.CgroupFD(), len(pl.enter))
	}
	// Inside Fork the thread's id is in every target tasks file; after it,
	// in podsup's own.
	tid := ""
	err = pl.Fork(func() error {
		tid = strconv.Itoa(unix.Gettid())
		for _, h := range m.hiers {
			if got := f.get(filepath.Join(p.dir(h), "tasks")); got != tid {
				t.Errorf("inside Fork: %s/tasks = %q, want %s", p.dir(h), got, tid)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range m.hiers {
		if got := f.get(filepath.Join(h.own, "tasks")); got != tid {
			t.Errorf("after Fork: %s/tasks = %q, want %s", h.own, got, tid)
		}
	}
	pl.Close()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	assertRootGone(t, m)
}

func TestFakeHybridUsesV2ForPlacementAndV1ForLimits(t *testing.T) {
	f, l := newFake(t, "hybrid")
	m := newFakeManager(t, f, l)
	if got := fmt.Sprint(m.Controllers()); got != "map[cpu:1 memory:1 pids:1]" {
		t.Errorf("Controllers = %s; want cpu, memory, pids on v1 (no freezer or cpuacct: v2 kills and counts)", got)
	}
	if m.moved || m.hiers[0] != m.v2 || len(m.hiers) != 4 {
		t.Errorf("moved %v, hierarchies %v", m.moved, m.Roots())
	}
	g, err := m.NewGroup("web", specResources(64<<20, 1, 0, 20))
	if err != nil {
		t.Fatal(err)
	}
	f.wantFiles(g.dir(m.ctl["memory"]), map[string]string{"memory.limit_in_bytes": "67108864"})
	f.wantFiles(g.dir(m.ctl["cpu"]), map[string]string{"cpu.cfs_quota_us": "100000"})
	f.wantFiles(g.dir(m.ctl["pids"]), map[string]string{"pids.max": "20"})
	f.wantFiles(g.Path(), map[string]string{"cgroup.subtree_control": ""})
	p, err := g.NewProcess("api")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := p.OpenPlacement()
	if err != nil {
		t.Fatal(err)
	}
	if pl.CgroupFD() < 0 || len(pl.enter) != 3 {
		t.Errorf("hybrid placement: fd %d, %d v1 cgroups; want an fd and 3", pl.CgroupFD(), len(pl.enter))
	}
	pl.Close()
	st, err := p.Stats()
	if err != nil || st.CPU != 1500*1000 || st.MemoryCurrent != 4096 {
		t.Errorf("Stats = %+v, %v; want CPU from v2 cpu.stat, memory from v1", st, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	assertRootGone(t, m)
}

func TestFakeSweepRemovesOnlyLeftovers(t *testing.T) {
	f, l := newFake(t, "hybrid")
	// A previous run of the same instance left a group behind.
	old := newFakeManager(t, f, l)
	og, err := old.NewGroup("old", specResources(0, 0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := og.NewProcess("p"); err != nil {
		t.Fatal(err)
	}
	m := newFakeManager(t, f, l)
	if _, err := m.NewGroup("new", specResources(0, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	removed, err := m.Sweep()
	if err != nil || len(removed) != 1 || removed[0].Path != filepath.Join(m.Root(), "old") || removed[0].Name != "old" {
		t.Errorf("Sweep = %v, %v; want the old group only", removed, err)
	}
	for _, d := range og.Dirs() {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survived Sweep", d)
		}
	}
	if _, err := os.Stat(filepath.Join(m.Root(), "new")); err != nil {
		t.Errorf("Sweep removed this run's group: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	assertRootGone(t, m)
}

func TestFakeUnavailable(t *testing.T) {
	f, l := newFake(t, "hybrid")
	ops := f.ops()
	ops.mkdir = func(dir string) error { return &os.PathError{Op: "mkdir", Path: dir, Err: unix.EROFS} }
	if _, err := newManager(Options{Instance: "x", Layout: l}, ops); !errors.Is(err, ErrUnavailable) {
		t.Errorf("read-only cgroupfs: New = %v, want ErrUnavailable", err)
	}
	ops.mkdir = func(dir string) error { return &os.PathError{Op: "mkdir", Path: dir, Err: unix.EACCES} }
	if _, err := newManager(Options{Instance: "x", Layout: l}, ops); !errors.Is(err, ErrUnavailable) {
		t.Errorf("denied: New = %v, want ErrUnavailable", err)
	}
	if _, err := newManager(Options{Instance: "x", Layout: &Layout{}}, f.ops()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("nothing mounted: New = %v, want ErrUnavailable", err)
	}
	if _, err := newManager(Options{Instance: "a/b", Layout: l}, f.ops()); !errors.Is(err, ErrInvalidName) {
		t.Errorf("instance a/b: New = %v, want ErrInvalidName", err)
	}
	entries, _ := os.ReadDir(filepath.Join(f.top, "unified"))
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("failed New left %s behind", e.Name())
		}
	}
}

func TestFakeV1FreezeBlocksForksOfItsGroupOnly(t *testing.T) {
	// A freeze (v1 freezer) waits for the forks into its own group and
	// holds them back while the tree is frozen; a fork into another group
	// goes on meanwhile. Here the freeze of a/p is held in the middle (its
	// FROZEN write blocks) while b/p and a/p fork.
	f, l := newFake(t, "v1")
	m := newFakeManager(t, f, l)
	procs := map[string]*Process{}
	for _, name := range []string{"a", "b"} {
		g, err := m.NewGroup(name, spec.Resources{})
		if err != nil {
			t.Fatal(err)
		}
		if procs[name], err = g.NewProcess("p"); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range procs["a"].Dirs() {
		f.set(filepath.Join(d, "cgroup.procs"), strconv.Itoa(noSuchPid))
	}
	freezing, release := make(chan struct{}), make(chan struct{})
	write := m.fs.write
	m.fs.write = func(file, value string) error {
		if value == "FROZEN" && strings.Contains(file, "/a/p/") {
			close(freezing)
			<-release
			for _, d := range procs["a"].Dirs() {
				f.set(filepath.Join(d, "cgroup.procs"), "") // the tree died
			}
		}
		return write(file, value)
	}
	killed := make(chan error, 1)
	go func() { killed <- procs["a"].Kill() }()
	<-freezing

	forked := func(p *Process) <-chan error {
		c := make(chan error, 1)
		go func() { c <- p.Place(func(int) error { return nil }) }()
		return c
	}
	select {
	case err := <-forked(procs["b"]):
		if err != nil {
			t.Fatalf("fork into b: %v", err)
		}
	case <-time.After(15 * time.Second):
		close(release)
		t.Fatal("a freeze of group a blocked a fork into group b")
	}
	intoA := forked(procs["a"])
	select {
	case <-intoA:
		t.Error("a fork into group a went on while a's tree was being frozen")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-killed; err != nil {
		t.Errorf("kill: %v", err)
	}
	select {
	case err := <-intoA:
		if err != nil {
			t.Errorf("fork into a after the thaw: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the fork into a never went on after the thaw")
	}
}

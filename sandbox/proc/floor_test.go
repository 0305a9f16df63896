package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"golang.org/x/sys/unix"
)

// The floor waits with wait4(pid); beside the reaper's wait4(-1) one of
// them would lose the exit, so it must refuse.
func TestForkExecFloorRefusesBesideTheReaper(t *testing.T) {
	StartReaper()
	if _, err := ForkExecFloor([]string{"/bin/true"}, 10*time.Millisecond); !errors.Is(err, ErrReaperRunning) {
		t.Fatalf("ForkExecFloor beside the reaper: %v, want ErrReaperRunning", err)
	}
	if _, err := ForkExecFloorAs([]string{"/bin/true"}, 10*time.Millisecond, FloorSpawn{}); !errors.Is(err, ErrReaperRunning) {
		t.Fatalf("ForkExecFloorAs beside the reaper: %v, want ErrReaperRunning", err)
	}
}

// floorAs runs ForkExecFloorAs like Start in the cgroup2 directory
// args[0] for a moment, its children being floorChild, and appends to the
// file args[1] how many it ran and its open fds before and after.
var _ = testproc.Register("floorAs", func(args []string) int {
	dir, out := args[0], args[1]
	exe, _ := os.Executable()
	env := append(testproc.HelperEnv("floorChild"), "FLOOR_OUT="+out, "FLOOR_CGROUP="+filepath.Base(dir))
	before := openFDs()
	n, err := ForkExecFloorAs([]string{exe}, 100*time.Millisecond, FloorSpawn{LikeStart: true, CgroupDir: dir, Env: env})
	appendTo(out, fmt.Sprintf("ran %d %v fds %d %d", n, err, before, openFDs()))
	return 0
})

// floorChild appends "ok" to $FLOOR_OUT when it leads a process group of
// its own and sits in the cgroup named $FLOOR_CGROUP, and what it found
// otherwise.
var _ = testproc.Register("floorChild", func([]string) int {
	pgid, _ := unix.Getpgid(0)
	cg, _ := os.ReadFile("/proc/self/cgroup")
	var v2 string
	for _, l := range strings.Split(string(cg), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			v2 = p
		}
	}
	line := "ok"
	if pgid != os.Getpid() || filepath.Base(v2) != os.Getenv("FLOOR_CGROUP") {
		line = fmt.Sprintf("bad: pgid %d pid %d cgroup %q", pgid, os.Getpid(), v2)
	}
	appendTo(os.Getenv("FLOOR_OUT"), line)
	return 0
})

func appendTo(file, line string) {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(line + "\n")
}

func openFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

// The floor with Start's attributes, which bench/sidebyside sets beside
// podsup's restarts, gives every child what Start gives it (a process
// group of its own, placement in the cgroup at fork) and leaves no pidfd
// open: otherwise its figure would not be the floor of podsup's spawn.
func TestForkExecFloorAsSpawnsLikeStart(t *testing.T) {
	dir := testCgroupDir(t, "floor", "to place the floor's children in")
	out := filepath.Join(t.TempDir(), "floor")
	p, err := Start(helperCmd(t, "floorAs", dir, out))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := p.Wait(ctx)
	if err != nil {
		_ = p.Signal(unix.SIGKILL)
		t.Fatalf("the floor did not end: %v", err)
	}
	if e.Code() != 0 {
		t.Fatalf("the floor's helper exited %d", e.Code())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := strings.Fields(lines[len(lines)-1])
	if len(last) != 6 || last[0] != "ran" || last[2] != "<nil>" {
		t.Fatalf("the floor's report: %q", lines[len(lines)-1])
	}
	ran, _ := strconv.Atoi(last[1])
	children := lines[:len(lines)-1]
	if ran == 0 || len(children) != ran {
		t.Fatalf("the floor ran %d children, %d of them reported", ran, len(children))
	}
	for _, l := range children {
		if l != "ok" {
			t.Fatalf("a child of the floor: %s", l)
		}
	}
	if last[4] != last[5] {
		t.Errorf("the floor's open fds went from %s to %s: it leaks its pidfds", last[4], last[5])
	}
}

// stopFloor runs StopFloor with three stopFloorChild processes and the
// environment FLOOR_MARK=args[1], and appends its result to the file
// args[0].
var _ = testproc.Register("stopFloor", func(args []string) int {
	out, mark := args[0], args[1]
	exe, _ := os.Executable()
	env := append(testproc.HelperEnv("stopFloorChild"), "FLOOR_OUT="+out, "FLOOR_MARK="+mark)
	_, err := StopFloor([]string{exe, "-test.run=^$"}, env, 3, "")
	appendTo(out, fmt.Sprintf("done %v", err))
	return 0
})

// stopFloorChild appends its FLOOR_MARK to $FLOOR_OUT and waits for the
// floor's SIGTERM.
var _ = testproc.Register("stopFloorChild", func([]string) int {
	appendTo(os.Getenv("FLOOR_OUT"), "mark "+os.Getenv("FLOOR_MARK"))
	time.Sleep(time.Minute)
	return 3
})

// The stop floor gives its processes the environment it is asked to: the
// one podsup gives its own, so that both sides stop the same processes.
func TestStopFloorGivesTheEnvironmentAsked(t *testing.T) {
	out := filepath.Join(t.TempDir(), "stopfloor")
	p, err := Start(helperCmd(t, "stopFloor", out, "podsup-like"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Wait(ctx); err != nil {
		_ = p.Signal(unix.SIGKILL)
		t.Fatalf("the floor did not end: %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := "mark podsup-like\nmark podsup-like\nmark podsup-like\ndone <nil>\n"
	if string(b) != want {
		t.Fatalf("the floor and its processes wrote %q, want %q", b, want)
	}
}

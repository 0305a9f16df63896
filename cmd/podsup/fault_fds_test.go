package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/sandbox"
)

// File descriptors under `podsup up`: what podsup inherits stays podsup's,
// what it opens per process is bounded and goes away with the process.

// fdsOf lists the open fds of pid.
func fdsOf(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("listing the fds of pid %d: %v", pid, err)
	}
	fds := make([]int, 0, len(ents))
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			fds = append(fds, n)
		}
	}
	slices.Sort(fds)
	return fds
}

func TestUpInheritedFDsDoNotReachProcesses(t *testing.T) {
	leak, err := os.Open("/etc/hostname")
	if err != nil {
		leak, err = os.Open(os.DevNull)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer leak.Close()
	// podsup starts with fds 3..9 open without close-on-exec, as from
	// `podsup up 9</etc/hostname` in a shell that leaks a few more.
	f := startUpWith(t, `
supervisor {
  socket = "%s"
}
group "g" {
  process "p" {
    command = ["sleep", "1000"]
  }
  process "passthrough" {
    command = ["sleep", "1001"]
    log {
      mode = "passthrough"
    }
  }
}
`, func(c *sandbox.Cmd) { c.ExtraFiles = slices.Repeat([]*os.File{leak}, 7) })
	if fds := fdsOf(t, f.up.p.Pid()); !slices.Contains(fds, 9) {
		t.Fatalf("podsup did not inherit fd 9 (it has %v): the test sets nothing up", fds)
	}
	for _, name := range []string{"p", "passthrough"} {
		pid := f.waitRunning(t, "g", name)
		if fds := fdsOf(t, pid); !slices.Equal(fds, []int{0, 1, 2}) {
			t.Errorf("g/%s has fds %v, want 0 1 2 only: podsup's inherited fds reached it", name, fds)
		}
	}
}

// startUpWith is startUp with a change to podsup's command (its fds, its
// limits) before it starts.
func startUpWith(t *testing.T, config string, change func(*sandbox.Cmd)) *upFixture {
	t.Helper()
	dir := t.TempDir()
	f := &upFixture{dir: dir, cfg: filepath.Join(dir, "podsup.hcl"), socket: filepath.Join(dir, "podsup.sock")}
	f.write(t, fmt.Sprintf(config, f.socket))
	c := podsupCmd(t, "up", "-f", f.cfg)
	change(c)
	f.up = start(t, c)
	f.c = api.NewClient(f.socket)
	if !eventually(func() bool { _, err := f.c.Version(context.Background()); return err == nil }) {
		t.Fatalf("podsup up never answered on %s: %s", f.socket, f.up.rest(t))
	}
	return f
}

// renamedConfig is one group of n sleeps named after gen.
func renamedConfig(gen, n int) string {
	var b strings.Builder
	b.WriteString(`
supervisor {
  socket        = "%s"
  minimum_grace = "100ms"
}
group "g" {
  termination_grace_period = "5s"
`)
	for i := range n {
		fmt.Fprintf(&b, "  process \"p%d-%d\" {\n    command = [\"sleep\", \"1000\"]\n  }\n", gen, i)
	}
	b.WriteString("}\n")
	return b.String()
}

// runningNames lists the running processes of group g.
func runningNames(t *testing.T, f *upFixture) []string {
	st, err := f.c.Status(context.Background(), "g", "")
	if err != nil || len(st.Groups) != 1 {
		return nil
	}
	var names []string
	for _, p := range st.Groups[0].Processes {
		if p.State == "running" {
			names = append(names, p.Name)
		}
	}
	return names
}

func TestUpReloadsRenamingProcessesLeaveNoFDs(t *testing.T) {
	const n = 20
	f := startUp(t, renamedConfig(0, n))
	podsup := f.up.p.Pid()
	if !eventually(func() bool { return len(runningNames(t, f)) == n }) {
		t.Fatalf("the %d processes never all ran: %v", n, runningNames(t, f))
	}
	before := len(fdsOf(t, podsup))
	for gen := 1; gen <= 3; gen++ {
		f.write(t, fmt.Sprintf(renamedConfig(gen, n), f.socket))
		if code, out := f.ctl(t, "reload"); code != 0 {
			t.Fatalf("reload %d: %d %s", gen, code, out)
		}
		want := fmt.Sprintf("p%d-", gen)
		if !eventually(func() bool {
			names := runningNames(t, f)
			return len(names) == n && strings.HasPrefix(names[0], want) && strings.HasPrefix(names[n-1], want)
		}) {
			t.Fatalf("reload %d: running %v", gen, runningNames(t, f))
		}
	}
	// The removed processes are gone, their output read to its end.
	var after int
	if !eventually(func() bool { after = len(fdsOf(t, podsup)); return after <= before+10 }) {
		t.Fatalf("3 reloads renaming %d processes took podsup from %d to %d fds: capture pipes leak", n, before, after)
	}
	t.Logf("podsup's fds: %d with %d processes, %d after 3 reloads renaming them", before, n, after)
	// What podsup kept of a removed process's output is gone too.
	if !eventually(func() bool {
		code, out := f.ctl(t, "logs", "g/p0-0")
		return code != 0 && strings.Contains(out, "no such process")
	}) {
		code, out := f.ctl(t, "logs", "g/p0-0")
		t.Fatalf("logs of a process removed two reloads ago: %d %q, want no such process", code, out)
	}
}

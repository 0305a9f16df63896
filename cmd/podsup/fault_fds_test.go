package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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

package cgroups

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// A process cgroup's files kept ready for its restarts: a fork placed
// through the kept directory lands in the cgroup, the kept cgroup.events
// tells a populated tree from an empty one, and Close ends both.
func TestReadyPlacesAForkAndTellsTheTreeEmpty(t *testing.T) {
	m := newTestManager(t, Options{})
	if m.v2 == nil {
		t.Skip("needs a cgroup2 hierarchy: Ready keeps cgroup2 files")
	}
	_, p := newGroupProcess(t, m, spec.Resources{})
	r, err := p.OpenReady()
	if errors.Is(err, ErrNotReady) {
		t.Skipf("this host's process cgroups live in v1 hierarchies too (%s): %v", m.Layout().Kind(), err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.TreeEmpty() {
		t.Fatal("a new cgroup's tree is not empty")
	}
	for round := range 3 { // the kept files serve one instance after another
		pl, err := r.Placement(p)
		if err != nil {
			t.Fatal(err)
		}
		c, err := proc.Start(&proc.Cmd{Path: "/bin/sleep", Args: []string{"sleep", "100"}, UseCgroupFD: true, CgroupFD: pl.CgroupFD()})
		_ = pl.Close() // the dup; the kept fd stays
		if err != nil {
			t.Fatalf("round %d: a fork through the kept directory: %v", round, err)
		}
		wantCgroup(t, m, p, c.Pid())
		if r.TreeEmpty() {
			t.Fatalf("round %d: the tree is empty with a process in it", round)
		}
		_ = c.Signal(unix.SIGKILL) // through its pidfd
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the sleep did not die")
		}
		if !r.TreeEmpty() {
			t.Fatalf("round %d: the tree is not empty after its one process was reaped", round)
		}
	}
	r.Close()
	r.Close() // a second Close does nothing
	if r.TreeEmpty() {
		t.Error("a closed Ready says the tree is empty")
	}
	if _, err := r.Placement(p); err == nil {
		t.Error("a closed Ready gave a placement")
	}
}

package cgroups

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/spec"
)

// A wait on cgroup.events ends when the tree empties, woken by the
// kernel's notification: long before its own deadline, which is how a
// wait that only slept would end.
func TestEventsWatchWakesWhenTheTreeEmpties(t *testing.T) {
	m := newTestManager(t, Options{})
	if m.v2 == nil {
		t.Skip("needs a cgroup2 hierarchy: cgroup.events is a cgroup2 file")
	}
	_, p := newGroupProcess(t, m, spec.Resources{})
	c := startIn(t, p, "sleeper")
	w := watchEvents(filepath.Join(p.dir(m.v2), "cgroup.events"))
	if w == nil {
		t.Fatal("cgroup.events could not be watched")
	}
	defer w.close()
	if n, err := w.populated(); err != nil || n != 1 {
		t.Fatalf("populated = %d, %v with a process inside; want 1", n, err)
	}
	// The first wait may come back at once: the poller reports the file
	// ready when it takes it. Any later wait with the tree unchanged runs
	// to its deadline.
	w.wait(100 * time.Millisecond)
	if n, err := w.populated(); err != nil || n != 1 {
		t.Fatalf("populated = %d, %v; want 1", n, err)
	}
	start := time.Now()
	w.wait(50 * time.Millisecond)
	if waited := time.Since(start); waited < 40*time.Millisecond {
		t.Fatalf("a wait with nothing changed came back after %v: it would spin a kill's rounds", waited)
	}
	if n, err := w.populated(); err != nil || n != 1 {
		t.Fatalf("populated = %d, %v; want 1", n, err)
	}

	const deadline = time.Minute
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		time.Sleep(100 * time.Millisecond) // the wait below has begun
		_ = c.p.Signal(unix.SIGKILL)
	}()
	start = time.Now()
	for {
		w.wait(deadline)
		n, err := w.populated()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Since(start) > deadline {
			t.Fatal("the tree never showed empty")
		}
	}
	if waited := time.Since(start); waited > deadline/2 {
		t.Fatalf("the wait ended after %v: the emptying did not wake it", waited)
	}
	<-killed
	c.wait(t, 10*time.Second)
}

// A file Go's poller will not take (a regular file) gives no watch, so
// that a kill sleeps between its rounds rather than spinning through
// waits that return at once.
func TestEventsWatchRefusesAFileThePollerWillNotTake(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cgroup.events")
	if err := os.WriteFile(file, []byte("populated 1\nfrozen 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if w := watchEvents(file); w != nil {
		w.close()
		t.Fatal("a regular file was taken for a watch")
	}
	if w := watchEvents(filepath.Join(t.TempDir(), "missing")); w != nil {
		t.Fatal("a missing file gave a watch")
	}
}

// Between a kill's rounds, an empty cgroup2 tree ends the wait at once
// where cgroup2 sees the whole tree, and where a process may sit in a v1
// cgroup alone the wait sleeps its time: the next round must not come at
// once and again, spinning until that process is gone.
func TestWaitBetweenKillRoundsSleepsWhereCgroup2MaySeeTooLittle(t *testing.T) {
	m := newTestManager(t, Options{})
	if m.v2 == nil {
		t.Skip("needs a cgroup2 hierarchy: cgroup.events is a cgroup2 file")
	}
	_, p := newGroupProcess(t, m, spec.Resources{}) // empty: nothing started in it
	events := filepath.Join(p.dir(m.v2), "cgroup.events")

	trusted := &lazyEventsWatch{file: events, emptyEnds: true}
	defer trusted.close()
	start := time.Now()
	trusted.waitEmptyOrSleep(time.Minute)
	if waited := time.Since(start); waited > 30*time.Second {
		t.Fatalf("an empty tree held the wait for %v", waited)
	}
	if trusted.w == nil {
		t.Fatal("no watch was opened on cgroup.events")
	}

	v1Too := &lazyEventsWatch{file: events, emptyEnds: false}
	defer v1Too.close()
	start = time.Now()
	v1Too.waitEmptyOrSleep(50 * time.Millisecond)
	if waited := time.Since(start); waited < 40*time.Millisecond {
		t.Fatalf("the wait came back after %v: with v1 hierarchies an empty cgroup2 tree is no proof", waited)
	}
}

// A freeze on cgroup2 is waited for through cgroup.events' "frozen": the
// kernel's notification of the freeze ends the wait, long before its own
// deadline.
func TestFreezeWaitIsWokenWhenTheTreeIsFrozen(t *testing.T) {
	m := newTestManager(t, Options{})
	if m.v2 == nil {
		t.Skip("needs a cgroup2 hierarchy: cgroup.freeze is a cgroup2 file")
	}
	_, p := newGroupProcess(t, m, spec.Resources{})
	c := startIn(t, p, "sleeper")
	fz := p.freezer()
	if fz == nil || fz.events == "" {
		t.Skip("this kernel's cgroup2 has no cgroup.freeze")
	}
	until := fz.untilFrozen()
	defer until.close()
	if until.w == nil {
		t.Fatal("cgroup.events could not be watched")
	}
	// The first wait may come back at once (the poller reports the file
	// ready when it takes it); then the file is read, as the loop of
	// freezeKillThaw reads it before each wait.
	until.wait(100 * time.Millisecond)
	if until.frozen() {
		t.Fatal("frozen before any freeze")
	}
	if err := m.fs.write(fz.file, fz.freeze); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.fs.write(fz.file, fz.thaw); err != nil {
			t.Errorf("thawing: %v", err)
		}
		_ = c.p.Signal(unix.SIGKILL)
		c.wait(t, 10*time.Second)
	}()
	start := time.Now()
	until.wait(time.Minute) // the freeze changed the file: this ends at once
	if waited := time.Since(start); waited > 30*time.Second {
		t.Fatalf("the wait ended after %v: the freeze's notification did not wake it", waited)
	}
	waitFor(t, 10*time.Second, "the tree to show frozen", until.frozen)
}

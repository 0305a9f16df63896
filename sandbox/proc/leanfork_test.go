package proc

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// forceLeanFork makes every host fork of the test go through the lean
// thread, or skips the test where the kernel offers none.
func forceLeanFork(t *testing.T) *leanThread {
	t.Helper()
	old := leanForkAbove.Load()
	leanForkAbove.Store(0)
	t.Cleanup(func() { leanForkAbove.Store(old) })
	lt := leanThreadOnce()
	if lt == nil {
		t.Skip("no lean thread here (unshare or pidfd_getfd refused)")
	}
	return lt
}

// A child forked on the lean thread gets exactly the fds it was given,
// from the main table, and nothing of podsup's: a pipe podsup holds open
// is not in it, and the lean thread keeps no copy of the child's pipe, so
// the reader sees EOF once the child and podsup closed their ends.
func TestLeanForkGivesTheChildItsFilesAndNothingElse(t *testing.T) {
	forceLeanFork(t)
	held, heldW, err := os.Pipe() // podsup's own: must not reach the child
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	defer heldW.Close()
	extra, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	// fd 3 is the extra file; the listing's own directory fd comes next.
	e, out := run(t, &Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "ls /proc/self/fd; readlink /proc/self/fd/3"}, ExtraFiles: []*os.File{extra}, Forker: HostForker})
	if e.Code() != 0 {
		t.Fatalf("the child: %s, %q", e, out)
	}
	lines := strings.Fields(out)
	if len(lines) < 2 || lines[len(lines)-1] != "/dev/null" {
		t.Fatalf("the child's fd 3 is not the extra file: %q", out)
	}
	fds := lines[:len(lines)-1]
	// 0-3 and the directory ls reads (ls's own fd, 4 or so).
	if len(fds) > 5 {
		t.Errorf("the child has fds %v: more than its four and ls's own", fds)
	}
}

// The lean table holds no fd of podsup's but stdio and the poller's: what
// podsup closes is closed.
func TestLeanThreadHoldsNoneOfPodsupsFiles(t *testing.T) {
	lt := forceLeanFork(t)
	var links []string
	err := HostForker.Fork(func() error {
		if onLeanThread() != lt {
			t.Error("HostForker did not run the work on the lean thread")
		}
		ents, err := os.ReadDir("/proc/thread-self/fd")
		if err != nil {
			return err
		}
		for _, e := range ents {
			l, _ := os.Readlink(filepath.Join("/proc/thread-self/fd", e.Name()))
			links = append(links, e.Name()+" "+l)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		name, target, _ := strings.Cut(l, " ")
		switch {
		case name == "0" || name == "1" || name == "2":
		case strings.HasPrefix(target, "anon_inode:[eventpoll]"), strings.HasPrefix(target, "anon_inode:[eventfd]"):
		case strings.HasPrefix(target, "anon_inode:[pidfd]"), strings.HasPrefix(target, "pidfd:"):
			// its pidfd of this process
		case target == "" || strings.HasPrefix(target, "/proc/") && strings.HasSuffix(target, "/fd"):
			// ReadDir's own, closed by now
		default:
			t.Errorf("the lean table holds %s -> %s", name, target)
		}
	}
}

// Placement at fork works from the lean thread: the cgroup's fd is taken
// from the main table like the files.
func TestLeanForkPlacesTheChildInItsCgroup(t *testing.T) {
	forceLeanFork(t)
	dir := testCgroupDir(t, "lean", "to place a child in")
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := Start(&Cmd{Path: "/bin/cat", Args: []string{"cat", "/proc/self/cgroup"}, Stdout: w, UseCgroupFD: true, CgroupFD: fd, Forker: HostForker})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	<-p.Done()
	if !strings.Contains(string(out), "/"+filepath.Base(dir)+"\n") {
		t.Fatalf("the child's cgroup: %q, want it in %s", out, dir)
	}
}

// A fork stuck on the lean thread (an exec on a hung filesystem) holds
// the other forks only for the fork gate's patience: they then run on
// their own threads, as at the gate.
func TestLeanThreadStuckHoldsNoOtherFork(t *testing.T) {
	forceLeanFork(t)
	release, entered := make(chan struct{}), make(chan struct{})
	stuck := make(chan error, 1)
	go func() {
		stuck <- HostForker.Fork(func() error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	other := make(chan error, 1)
	go func() {
		other <- HostForker.Fork(func() error {
			if onLeanThread() != nil {
				t.Error("the second fork ran on the lean thread, which was stuck")
			}
			return nil
		})
	}()
	select {
	case err := <-other:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a fork waited 20s behind one stuck on the lean thread")
	}
	close(release)
	if err := <-stuck; err != nil {
		t.Fatal(err)
	}
}

// Fds kept ready for restarts (HoldFDs) count towards the lean fork as
// running processes do: each is copied by every fork from the main table.
func TestHeldFDsSendForksToTheLeanThread(t *testing.T) {
	old := leanForkAbove.Load()
	t.Cleanup(func() { leanForkAbove.Store(old) })
	leanForkAbove.Store(tracked() + heldFDs.Load() + 10)
	if leanForkDue() {
		t.Fatal("a lean fork is due below the threshold")
	}
	HoldFDs(10)
	if !leanForkDue() {
		t.Error("10 fds held at the threshold: no lean fork")
	}
	HoldFDs(-10)
	if leanForkDue() {
		t.Error("the fds given back: a lean fork is still due")
	}
}

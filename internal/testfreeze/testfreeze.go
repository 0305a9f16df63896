// Package testfreeze simulates a task in D state for tests: a process in a
// frozen v1 freezer cgroup cannot act on SIGKILL, as a task stuck in the
// kernel cannot (a v2 freeze lets SIGKILL through). Tests only.
package testfreeze

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podsup/podsup/sandbox/cgroups"
)

var seq atomic.Uint64

// Root is the v1 freezer hierarchy's mount, or a skip saying why not.
func Root(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: freezes a cgroup")
	}
	l, err := cgroups.Detect()
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	for _, h := range l.V1 {
		if h.Version == 1 && h.Has("freezer") {
			return h.Mount
		}
	}
	t.Skip("no v1 freezer hierarchy on this host: the frozen-task simulation needs one (a v2 freeze lets SIGKILL through)")
	return ""
}

// Pid moves pid into a fresh freezer cgroup of the test's own (not named
// podsup-*) under root and freezes it. The returned thaw (safe to call
// twice) thaws it, moves what is left back to the root and removes the
// cgroup.
func Pid(t testing.TB, root string, pid int) (thaw func()) {
	t.Helper()
	if pid <= 1 {
		t.Fatalf("refusing to freeze pid %d", pid)
	}
	dir := filepath.Join(root, fmt.Sprintf("faulttest-%d-%d", os.Getpid(), seq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw = func() {
		if thawed {
			return
		}
		thawed = true
		_ = os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("THAWED"), 0)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				_ = os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(f), 0)
			}
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("could not remove the test's freezer cgroup %s", dir)
	}
	for _, w := range []struct{ file, val string }{{"cgroup.procs", strconv.Itoa(pid)}, {"freezer.state", "FROZEN"}} {
		if err := os.WriteFile(filepath.Join(dir, w.file), []byte(w.val), 0); err != nil {
			thaw()
			t.Fatalf("freezing pid %d: %v", pid, err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "freezer.state"))
		if strings.TrimSpace(string(b)) == "FROZEN" {
			return thaw
		}
		if time.Now().After(deadline) {
			thaw()
			t.Fatalf("pid %d did not freeze: %s", pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

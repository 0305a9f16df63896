package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podsup/podsup/spec"
)

// Two processes of one sandbox see each other's pids, one hostname and one
// tmpfs; another sandbox and the host see none of it; the first pid inside
// is the holder.
func TestSandboxIsolatesPidsHostnameAndTmpfs(t *testing.T) {
	needRoot(t)
	rt := newTestRuntime(t)
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	mounts := []spec.Mount{{Type: "proc", Target: "/proc"}, {Type: "tmpfs", Target: shared}}
	mustCreateSandbox(t, rt, "a", spec.Sandbox{Namespaces: []string{"pid", "mount", "uts", "ipc"}, Hostname: "sandbox-a", Mounts: mounts})
	mustCreateSandbox(t, rt, "b", spec.Sandbox{Namespaces: []string{"pid", "mount", "uts", "ipc"}, Hostname: "sandbox-b",
		Mounts: []spec.Mount{{Type: "proc", Target: "/proc"}}})

	a1 := runHelper(t, rt, "a", "a1", "sleep")
	a2 := runHelper(t, rt, "a", "a2", "sleep")
	b1 := runHelper(t, rt, "b", "b1", "sleep")
	a1ns, a2ns := nsPid(t, a1.Pid), nsPid(t, a2.Pid)
	if a1ns == a1.Pid || a1ns <= 1 {
		t.Fatalf("a1 has pid %d inside, %d outside: not in a new PID namespace", a1ns, a1.Pid)
	}

	// a1 writes into the tmpfs; a2 (an exec standing in for it) reads.
	execHelper(t, rt, "a", "writefile", filepath.Join(shared, "note"), "from a1")
	ra := reportIn(t, rt, "a", filepath.Join(shared, "note"))
	if ra.Hostname != "sandbox-a" {
		t.Errorf("hostname inside a: %q", ra.Hostname)
	}
	if ra.File != "from a1" {
		t.Errorf("tmpfs inside a reads %q (%s), want %q", ra.File, ra.FileErr, "from a1")
	}
	if len(ra.Pids) == 0 || ra.Pids[0] != 1 || !strings.Contains(ra.Init, HolderArg) {
		t.Errorf("first pid inside a is %v with cmdline %q, want 1 = the holder", ra.Pids, ra.Init)
	}
	if !slices.Contains(ra.Pids, a1ns) || !slices.Contains(ra.Pids, a2ns) {
		t.Errorf("inside a pids %v, want a1=%d and a2=%d among them", ra.Pids, a1ns, a2ns)
	}

	rb := reportIn(t, rt, "b", filepath.Join(shared, "note"))
	if rb.Hostname != "sandbox-b" {
		t.Errorf("hostname inside b: %q", rb.Hostname)
	}
	if rb.FileErr == "" {
		t.Errorf("b reads a's tmpfs file: %q", rb.File)
	}
	// b sees its holder, b1 and the exec itself: nothing of a.
	if len(rb.Pids) != 3 || rb.Pids[0] != 1 {
		t.Errorf("inside b pids %v, want [1 b1 self]", rb.Pids)
	}
	if b1ns := nsPid(t, b1.Pid); !slices.Contains(rb.Pids, b1ns) {
		t.Errorf("inside b pids %v, want b1=%d among them", rb.Pids, b1ns)
	}

	host, _ := os.Hostname()
	if host == "sandbox-a" || host == "sandbox-b" {
		t.Errorf("the host's hostname became %q", host)
	}
	if _, err := os.Stat(filepath.Join(shared, "note")); err == nil {
		t.Error("the host sees the sandbox's tmpfs file")
	}
}

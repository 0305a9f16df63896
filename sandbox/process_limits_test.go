package sandbox

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// A process's own limits (ProcessConfig.Resources) are written to its
// cgroup, inside the sandbox's with its own limits: a process over its
// pids limit cannot fork, though the sandbox's limit is far away. The
// next holder of the kept cgroup with other limits rewrites them, back
// to unlimited too. (On a hybrid host a v1 controller reaches a process's
// cgroup only when its group has a limit of that kind: the group here
// has both.)
func TestProcessLimitsOnItsOwnCgroup(t *testing.T) {
	testproc.NeedRoot(t)
	rt := newTestRuntime(t)
	if !rt.CgroupsEnabled() {
		t.Skip("needs cgroups")
	}
	mustCreateSandbox(t, rt, "pl", spec.Sandbox{Namespaces: []string{"pid"}, Resources: spec.Resources{Memory: 1 << 30, Pids: 512}})
	// The process's cgroup in every hierarchy in use: on a hybrid host a
	// controller may be in a v1 one.
	dirs := func() []string {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return rt.sandboxes["pl"].kept["bomb"].cg.Dirs()
	}
	read := func(file string) string {
		t.Helper()
		for _, d := range dirs() {
			if b, err := os.ReadFile(filepath.Join(d, file)); err == nil {
				return strings.TrimSpace(string(b))
			}
		}
		t.Fatalf("no %s in %v", file, dirs())
		return ""
	}
	memMax := func() string {
		t.Helper()
		for _, d := range dirs() {
			if _, err := os.Stat(filepath.Join(d, "memory.max")); err == nil {
				return read("memory.max")
			}
		}
		if v := read("memory.limit_in_bytes"); v != "9223372036854771712" {
			return v
		}
		return "max"
	}
	start := func(id string, r spec.Resources) (failed int) {
		t.Helper()
		rd, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		cfg := ProcessConfig{Sandbox: "pl", Command: helperArgv("100"), RunAs: proc.RunAs{Env: testproc.HelperEnv("forkbomb")},
			Stdout: w, Cgroup: "bomb", Resources: r}
		if err := rt.CreateProcess(testCtx(t), id, cfg); err != nil {
			w.Close()
			t.Fatal(err)
		}
		err = rt.StartProcess(testCtx(t), id)
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(rd).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		failed, _ = strconv.Atoi(strings.TrimSpace(line))
		if err := rt.stopProcess(testCtx(t), id, 0); err != nil {
			t.Fatal(err)
		}
		if err := rt.RemoveProcess(testCtx(t), id); err != nil {
			t.Fatal(err)
		}
		return failed
	}
	failed := start("bomb-1", spec.Resources{Memory: 64 << 20, Pids: 8})
	if failed < 100-8 {
		t.Errorf("only %d of 100 forks failed under the process's pids = 8", failed)
	}
	if got := read("pids.max"); got != "8" {
		t.Errorf("pids.max of the process's cgroup: %s, want 8", got)
	}
	if got := memMax(); got != strconv.Itoa(64<<20) {
		t.Errorf("memory.max of the process's cgroup: %s, want %d", got, 64<<20)
	}
	if failed := start("bomb-2", spec.Resources{}); failed != 0 {
		t.Errorf("%d forks failed with the process's limits lifted", failed)
	}
	if got, mem := read("pids.max"), memMax(); got != "max" || mem != "max" {
		t.Errorf("the next holder without limits: pids.max %s, memory.max %s; want max", got, mem)
	}
}

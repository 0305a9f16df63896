package supervisor_test

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/internal/coresim"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// The test binary is its own child (the os/exec suite's pattern): with
// PODSUP_TEST_HELPER set, TestMain runs that workload instead of the tests.
var helpers = map[string]func(args []string) int{
	// exit N
	"exit": func(args []string) int {
		n, _ := strconv.Atoi(args[0])
		return n
	},
	// sleep: dies on SIGTERM (Go's default disposition)
	"sleep": func([]string) int {
		time.Sleep(time.Hour)
		return 0
	},
	// ignore-term FILE: ignores SIGTERM, then writes its pid to FILE
	"ignore-term": func(args []string) int {
		signal.Ignore(syscall.SIGTERM)
		writePid(args[0], os.Getpid())
		time.Sleep(time.Hour)
		return 0
	},
	// fork-child FILE: starts a TERM-ignoring child in its own process
	// group and writes the child's pid to FILE; then dies on SIGTERM.
	"fork-child": func(args []string) int {
		exe, _ := os.Executable()
		pid, err := syscall.ForkExec(exe, []string{exe, args[0] + ".child"}, &syscall.ProcAttr{
			Env: testproc.HelperEnv("ignore-term"), Files: []uintptr{0, 1, 2},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		// Wait until the child ignores TERM before announcing it.
		for i := 0; i < 500; i++ {
			if _, err := os.Stat(args[0] + ".child"); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		writePid(args[0], pid)
		time.Sleep(time.Hour)
		return 0
	},
}

func writePid(path string, pid int) {
	tmp := path + ".tmp"
	_ = os.WriteFile(tmp, []byte(strconv.Itoa(pid)), 0o600)
	_ = os.Rename(tmp, path)
}

func TestMain(m *testing.M) {
	stack.ReexecMain() // the test binary is its own sandbox holder
	for name, f := range helpers {
		testproc.Register(name, f)
	}
	testproc.RunHelper()
	os.Exit(m.Run())
}

// helperProcess is a process spec running helper name with args.
func helperProcess(t testing.TB, name, helper string, args ...string) spec.Process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return spec.Process{
		Name:    name,
		Command: append([]string{exe}, args...),
		Env:     map[string]string{"PODSUP_TEST_HELPER": helper},
	}
}

// waitPidFile waits for a helper to write its pid file.
func waitPidFile(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(string(b)); err == nil && pid > 0 {
				return pid
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("helper did not write %s", path)
	return 0
}

// processGone reports whether pid no longer exists (or is a zombie about
// to be reaped).
func processGone(pid int) bool { return !testproc.Alive(pid) }

// The back-off and durations the worker's tests use (package coresim).
var (
	scaled = coresim.Scaled
	secs   = coresim.Secs
)

// processStatus is the status of group's process name, which must exist.
func processStatus(t *testing.T, sup *supervisor.Supervisor, group, name string) lifecycle.ProcessStatus {
	t.Helper()
	g, ok := sup.Status().Group(group)
	if !ok {
		t.Fatalf("no group %s", group)
	}
	p, ok := g.Process(name)
	if !ok {
		t.Fatalf("no process %s in %s", name, group)
	}
	return p
}

// Package testproc is what the tests of podsup's process layers share
// about the test binary's own children: running the binary as a helper
// workload (the os/exec test suite's pattern: with PODSUP_TEST_HELPER set,
// TestMain runs the named helper instead of the tests), reading a child's
// state and parent from /proc, listing what a run left behind, and
// killing a process the test made (the supervisor's and podsup up's
// real-process tests too).
//
// It imports no podsup package, so sandbox/proc's own tests can use it
// (package rttest, above the supervisor, cannot be imported there). Tests
// only.
package testproc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// HelperVar is the environment variable that names the helper a child of
// the test binary runs.
const HelperVar = "PODSUP_TEST_HELPER"

var helpers = map[string]func(args []string) int{}

// Register makes f the helper called name; it returns true so that a test
// file can register at package level (var _ = testproc.Register(...)).
func Register(name string, f func(args []string) int) bool {
	helpers[name] = f
	return true
}

// RunHelper is for the top of TestMain: when HelperVar names a helper,
// the process is a helper child, and RunHelper runs it with the
// command-line arguments and exits with its status (2 for a name not
// registered). Otherwise it returns, and the tests run.
func RunHelper() {
	name := os.Getenv(HelperVar)
	if name == "" {
		return
	}
	f, ok := helpers[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
		os.Exit(2)
	}
	os.Exit(f(os.Args[1:]))
}

// Argv is the command line that runs the test binary with args.
func Argv(t testing.TB, args ...string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{exe}, args...)
}

// HelperEnv is this process's environment naming helper name. The
// variable is replaced, not appended: Getenv takes the first of two
// entries, and a helper that starts another would start itself forever.
func HelperEnv(name string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, HelperVar+"=") {
			env = append(env, kv)
		}
	}
	return append(env, HelperVar+"="+name)
}

// State reads the state letter and parent pid of pid from /proc.
func State(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold anything
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid, true
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	st, _, ok := State(pid)
	return ok && st != "Z"
}

// RandomReadMappings counts the read-only mappings of pid's executable
// file that carry MADV_RANDOM (VmFlags "rr" in /proc/PID/smaps), and all
// of them: what package memtrim's trim leaves, and its shutdown undoes.
func RandomReadMappings(pid int) (random, all int) {
	ExecutableSmaps(pid, func(f []string) {
		if f[0] != "VmFlags:" {
			return
		}
		all++
		for _, flag := range f[1:] {
			if flag == "rr" {
				random++
			}
		}
	})
	return random, all
}

// ExecutableSmaps calls fn with the fields of each line of pid's
// /proc/PID/smaps that describes a read-only mapping of its executable
// file ("Rss:", "VmFlags:" and the others; never empty), and reports
// whether it could read them.
func ExecutableSmaps(pid int, fn func(fields []string)) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return false
	}
	inExe := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 6 && strings.Contains(f[0], "-"): // a mapping's header
			inExe = f[5] == exe && !strings.Contains(f[1], "w")
		case inExe && len(f) > 0:
			fn(f)
		}
	}
	return true
}

// ZombiesOf lists the zombie children of ppid.
func ZombiesOf(ppid int) []int {
	var out []int
	for _, pid := range pids() {
		if st, parent, ok := State(pid); ok && st == "Z" && parent == ppid {
			out = append(out, pid)
		}
	}
	return out
}

// ChildrenLeft describes every child of this process, alive or a zombie:
// what a run's end should find none of.
func ChildrenLeft() []string {
	var out []string
	for _, pid := range pids() {
		if st, ppid, ok := State(pid); ok && ppid == os.Getpid() {
			b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			out = append(out, fmt.Sprintf("process %d (%s, state %s)", pid, strings.ReplaceAll(string(b), "\x00", " "), st))
		}
	}
	return out
}

func pids() []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// Eventually polls cond until it holds or d has passed.
func Eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); ; {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// PidfdExited waits up to d (0: not at all) for the process behind pidfd
// to exit, and reports whether it has: a pidfd is readable once its
// process is gone. A poll interrupted by a signal (the Go runtime's
// preemption signal, EINTR) is polled again for the time left: taken for
// an answer, it called a live process dead (TestKeptCgroupOutlivesItsInstances
// then waited 30 s for an exit that never came).
func PidfdExited(pidfd int, d time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	end := time.Now().Add(d)
	for {
		ms := 0
		if left := time.Until(end); left > 0 {
			ms = int((left + time.Millisecond - 1) / time.Millisecond)
		}
		n, err := unix.Poll(fds, ms)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 1
	}
}

// NeedRoot skips the test unless it runs as root.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates PID and mount namespaces (CI runs as root)")
	}
}

// KillPid SIGKILLs pid through a pidfd, so that a recycled pid is never
// hit, and refuses a pid <= 1.
func KillPid(t testing.TB, pid int) {
	t.Helper()
	if pid <= 1 {
		t.Fatalf("refusing to signal pid %d", pid)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd of %d: %v", pid, err)
	}
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		t.Fatalf("SIGKILL of %d: %v", pid, err)
	}
}

// Orphans is a helper (register it as "orphans"): orphans N [SECONDS]
// forks N children that each sleep SECONDS (default 0.2), then exits
// without waiting, so that they become orphans of the nearest subreaper
// (in a sandbox with a PID namespace, its holder).
func Orphans(args []string) int {
	n, _ := strconv.Atoi(args[0])
	life := "0.2"
	if len(args) > 1 {
		life = args[1]
	}
	for i := 0; i < n; i++ {
		if _, err := syscall.ForkExec("/bin/sleep", []string{"sleep", life}, &syscall.ProcAttr{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// RunChecked runs the tests and then fails the run (exit status 1) if
// left, what the run left behind (ChildrenLeft, say), still lists
// anything after a grace for the last exits to reach the reaper.
func RunChecked(m *testing.M, left func() []string) int {
	code := m.Run()
	var l []string
	Eventually(10*time.Second, func() bool { l = left(); return len(l) == 0 })
	if len(l) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the tests left behind:\n  %s\n", strings.Join(l, "\n  "))
		return 1
	}
	return code
}

package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary is its own child: with PODSUP_TEST_HELPER set, TestMain
// runs the named helper instead of the tests (the os/exec test suite's
// pattern). Each helper is a tiny workload or an in-namespace test driver.
var helpers = map[string]func(args []string) int{}

func registerHelper(name string, f func(args []string) int) bool {
	helpers[name] = f
	return true
}

func TestMain(m *testing.M) {
	if name := os.Getenv("PODSUP_TEST_HELPER"); name != "" {
		f, ok := helpers[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
			os.Exit(2)
		}
		os.Exit(f(os.Args[1:]))
	}
	// Explicitly a child subreaper (a Start alone would not make it one):
	// the subreaper test needs it, and runChecked then sees every process
	// a test orphaned as a child of this one.
	StartReaperAs(true)
	os.Exit(runChecked(m))
}

// helperCmd is a Cmd that runs helper name with args.
func helperCmd(t testing.TB, name string, args ...string) *Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Cmd{
		Path:  exe,
		Args:  append([]string{exe}, args...),
		RunAs: RunAs{Env: helperEnv(name)},
	}
}

// helperEnv is this process's environment naming helper name.
func helperEnv(name string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PODSUP_TEST_HELPER=") {
			env = append(env, kv)
		}
	}
	return append(env, "PODSUP_TEST_HELPER="+name)
}

// zombiesOf lists zombie children of ppid, read from /proc.
func zombiesOf(ppid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, parent, ok := procState(pid)
		if ok && state == "Z" && parent == ppid {
			out = append(out, pid)
		}
	}
	return out
}

// procState reads the state letter and parent pid of pid.
func procState(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
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

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	st, _, ok := procState(pid)
	return ok && st != "Z"
}

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates PID and mount namespaces (CI runs as root)")
	}
}

// runChecked runs the tests and then fails the run if any child of the
// test binary is left, alive or a zombie.
func runChecked(m *testing.M) int {
	code := m.Run()
	var left []string
	// Exits of the last tests may still be on their way to the reaper.
	eventually(10*time.Second, func() bool { left = childrenLeft(); return len(left) == 0 })
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the tests left behind:\n  %s\n", strings.Join(left, "\n  "))
		return 1
	}
	return code
}

// childrenLeft describes every child of this process.
func childrenLeft() []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ppid, ok := procState(pid); ok && ppid == os.Getpid() {
			b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			out = append(out, fmt.Sprintf("process %d (%s, state %s)", pid, strings.ReplaceAll(string(b), "\x00", " "), st))
		}
	}
	return out
}

// eventually polls cond until it holds or d has passed.
func eventually(d time.Duration, cond func() bool) bool {
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

// testInstancePrefix names what a test creates outside the process (a
// cgroup) after the PID namespace and our pid, so that it cannot collide
// with a concurrent run's.
func testInstancePrefix() string {
	var st unix.Stat_t
	_ = unix.Stat("/proc/self/ns/pid", &st) // 0 if unreadable: still unique by pid
	return fmt.Sprintf("proctest-%d-%d-", st.Ino, os.Getpid())
}

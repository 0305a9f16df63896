package proc

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"golang.org/x/sys/unix"
)

// The test binary is its own child (package testproc): with
// PODSUP_TEST_HELPER set, TestMain runs the named helper instead of the
// tests. Each helper is a tiny workload or an in-namespace test driver.
func TestMain(m *testing.M) {
	testproc.RunHelper()
	// Explicitly a child subreaper (a Start alone would not make it one):
	// the subreaper test needs it, and runChecked then sees every process
	// a test orphaned as a child of this one.
	StartReaperAs(true)
	os.Exit(runChecked(m))
}

// helperCmd is a Cmd that runs helper name with args.
func helperCmd(t testing.TB, name string, args ...string) *Cmd {
	t.Helper()
	argv := testproc.Argv(t, args...)
	return &Cmd{Path: argv[0], Args: argv, RunAs: RunAs{Env: testproc.HelperEnv(name)}}
}

// runChecked runs the tests and then fails the run if any child of the
// test binary is left, alive or a zombie.
func runChecked(m *testing.M) int {
	code := m.Run()
	var left []string
	// Exits of the last tests may still be on their way to the reaper.
	testproc.Eventually(10*time.Second, func() bool { left = testproc.ChildrenLeft(); return len(left) == 0 })
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the tests left behind:\n  %s\n", strings.Join(left, "\n  "))
		return 1
	}
	return code
}

// testInstancePrefix names what a test creates outside the process (a
// cgroup) after the PID namespace and our pid, so that it cannot collide
// with a concurrent run's.
func testInstancePrefix() string {
	var st unix.Stat_t
	_ = unix.Stat("/proc/self/ns/pid", &st) // 0 if unreadable: still unique by pid
	return fmt.Sprintf("proctest-%d-%d-", st.Ino, os.Getpid())
}

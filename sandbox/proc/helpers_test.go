package proc

import (
	"fmt"
	"os"
	"testing"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"golang.org/x/sys/unix"
)

// The test binary is its own child (package testproc): with
// PODSUP_TEST_HELPER set, TestMain runs the named helper instead of the
// tests. Each helper is a tiny workload or an in-namespace test driver.
func TestMain(m *testing.M) {
	testproc.RunHelper()
	// Explicitly a child subreaper (a Start alone would not make it one):
	// the subreaper test needs it, and RunChecked then sees every process
	// a test orphaned as a child of this one.
	StartReaperAs(true)
	os.Exit(testproc.RunChecked(m, testproc.ChildrenLeft))
}

// helperCmd is a Cmd that runs helper name with args.
func helperCmd(t testing.TB, name string, args ...string) *Cmd {
	t.Helper()
	argv := testproc.Argv(t, args...)
	return &Cmd{Path: argv[0], Args: argv, RunAs: RunAs{Env: testproc.HelperEnv(name)}}
}

// testInstancePrefix names what a test creates outside the process (a
// cgroup) after the PID namespace and our pid, so that it cannot collide
// with a concurrent run's.
func testInstancePrefix() string {
	var st unix.Stat_t
	_ = unix.Stat("/proc/self/ns/pid", &st) // 0 if unreadable: still unique by pid
	return fmt.Sprintf("proctest-%d-%d-", st.Ino, os.Getpid())
}

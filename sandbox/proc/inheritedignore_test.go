package proc

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest/testproc"
)

// sigIgnLine is the SigIgn line of /proc/self/status.
func sigIgnLine() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "SigIgn:") {
			return strings.Join(strings.Fields(line), " ")
		}
	}
	return "SigIgn: ?"
}

// ignoredStart prints what it was started ignoring, then starts a shell
// that prints what it ignores: the helper of
// TestChildOfAProgramStartedIgnoringSIGHUPGetsTheDefault.
var _ = testproc.Register("ignoredStart", func([]string) int {
	fmt.Println("helper", sigIgnLine()) // before anything of proc runs
	p, err := Start(&Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", `echo child $(grep '^SigIgn' /proc/self/status)`}, Stdout: os.Stdout})
	if err != nil {
		fmt.Println("start:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if e, err := p.Wait(ctx); err != nil || e.Code() != 0 {
		fmt.Println("child:", e, err)
		return 1
	}
	return 0
})

// A program started with SIGHUP and SIGINT ignored (by nohup, or as a
// shell's background job) must not hand that on to what it starts. Go
// keeps an inherited SIG_IGN for those two signals alone, installing no
// handler of its own, and a signal ignored survives fork and exec: every
// child would have started deaf to them. (Seen when CI ran under nohup:
// TestChildGetsCleanSignalStateAndOwnProcessGroup found SIGHUP ignored.)
func TestChildOfAProgramStartedIgnoringSIGHUPGetsTheDefault(t *testing.T) {
	argv := testproc.Argv(t)
	// The shell ignores both, then becomes the helper, which keeps them.
	e, out := run(t, &Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", `trap '' HUP INT; exec "$0"`, argv[0]},
		RunAs: RunAs{Env: testproc.HelperEnv("ignoredStart")}})
	if e.Code() != 0 {
		t.Fatalf("helper: %s\n%s", e, out)
	}
	// SIGHUP is bit 0 and SIGINT bit 1 of the mask.
	if !strings.Contains(out, "helper SigIgn: 0000000000000003") {
		t.Fatalf("the helper did not start with SIGHUP and SIGINT ignored (and only them), so this test shows nothing:\n%s", out)
	}
	if !strings.Contains(out, "child SigIgn: 0000000000000000") {
		t.Fatalf("the child of a program started ignoring SIGHUP and SIGINT ignores signals too, want none:\n%s", out)
	}
}

package hostrt_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/internal/selftest"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// subreaperChildEnv makes the test binary a child that starts one process
// through Runtime and prints whether it then is a child subreaper: the
// reaper and the subreaper flag belong to the whole process, which the
// tests in this package share, so each case needs a process of its own.
// "implicit" starts the process and nothing else; "opt-in" calls
// proc.StartReaperAs(true) first, as the docs tell a program that wants
// its orphans back.
const subreaperChildEnv = "PODSUP_HOSTRT_TEST_SUBREAPER"

func TestMain(m *testing.M) {
	if v := os.Getenv(subreaperChildEnv); v != "" {
		os.Exit(subreaperChild(v))
	}
	os.Exit(m.Run())
}

func subreaperChild(mode string) int {
	if mode == "opt-in" {
		proc.StartReaperAs(true)
	}
	exited := make(chan lifecycle.ExitStatus, 1)
	inst, err := hostrt.Runtime{}.Start(context.Background(), supervisor.StartRequest{
		Group: "g", Process: spec.Process{Name: "p", Command: []string{"true"}},
		OnExit: func(es lifecycle.ExitStatus) { exited <- es }})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	select {
	case <-exited:
	case <-time.After(time.Minute):
		_ = inst.KillTree(9)
		fmt.Println("true did not exit within a minute")
		return 1
	}
	// PR_GET_CHILD_SUBREAPER stores the flag at arg2: a heap int, which
	// does not move.
	flag := new(int32)
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(flag)), 0, 0, 0); err != nil {
		fmt.Println(err)
		return 1
	}
	runtime.KeepAlive(flag)
	fmt.Printf("subreaper=%d reaper.subreaper=%v\n", *flag, proc.Stats().Subreaper)
	return 0
}

// A program that starts processes through Runtime without asking is not
// made a child subreaper by it; one that calls proc.StartReaperAs(true)
// first is. (supervisor.New's doc tells a library user so.)
func TestFirstStartDoesNotMakeTheProgramASubreaper(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ mode, want string }{
		{"implicit", "subreaper=0 reaper.subreaper=false"},
		{"opt-in", "subreaper=1 reaper.subreaper=true"},
	} {
		if got := selftest.Run(t, subreaperChildEnv+"="+c.mode); got != c.want {
			t.Errorf("child %s printed %q, want %q", c.mode, got, c.want)
		}
	}
}

package hostrt_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/stack/hostrt"
	"github.com/podsup/podsup/supervisor"
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
	exited := make(chan supervisor.ExitStatus, 1)
	inst, err := hostrt.Runtime{}.Start(context.Background(), supervisor.StartRequest{
		Group: "g", Process: spec.Process{Name: "p", Command: []string{"true"}},
		OnExit: func(es supervisor.ExitStatus) { exited <- es }})
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
		if got := runSelf(t, subreaperChildEnv+"="+c.mode); got != c.want {
			t.Errorf("child %s printed %q, want %q", c.mode, got, c.want)
		}
	}
}

// runSelf runs the test binary with env added and returns what it
// printed, trimmed; it fails the test if the child fails.
func runSelf(t *testing.T, env string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := proc.Start(&proc.Cmd{Path: exe, Args: []string{exe}, Env: append(os.Environ(), env), Stdout: w, Stderr: os.Stderr})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	read := make(chan error, 1)
	go func() { _, err := buf.ReadFrom(r); read <- err }()
	select {
	case <-p.Done():
	case <-time.After(time.Minute):
		_ = p.KillTree(9)
		<-p.Done()
		t.Fatal("the child did not end within a minute")
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	out := strings.TrimSpace(buf.String())
	if e := p.Exit(); e.Code() != 0 {
		t.Fatalf("child (%s) exited %d: %s", env, e.Code(), out)
	}
	return out
}

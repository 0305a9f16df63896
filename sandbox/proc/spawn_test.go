package proc

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"golang.org/x/sys/unix"
)

// run starts c with stdout captured and returns the exit and the output.
func run(t *testing.T, c *Cmd) (Exit, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c.Stdout = w
	p, err := Start(c)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return e, string(out)
}

func TestExitCodesAndSignals(t *testing.T) {
	cases := []struct {
		script   string
		code     int
		sig      syscall.Signal
		coreDump bool
	}{
		{"exit 0", 0, 0, false},
		{"exit 3", 3, 0, false},
		{"exit 255", 255, 0, false},
		{"kill -TERM $$", 128 + 15, syscall.SIGTERM, false},
		{"kill -KILL $$", 128 + 9, syscall.SIGKILL, false},
	}
	for _, tc := range cases {
		e, _ := run(t, &Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", tc.script}})
		if e.Code() != tc.code || e.Signal() != tc.sig {
			t.Errorf("%q: code %d signal %d (%s), want %d %d", tc.script, e.Code(), e.Signal(), e, tc.code, tc.sig)
		}
		if e.Pid <= 0 || e.Time.IsZero() {
			t.Errorf("%q: exit lacks pid or time: %+v", tc.script, e)
		}
	}
}

func TestStartErrorsFollowTheShellConvention(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "data")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		want error
		code int
	}{
		{"no-such-command-podsup", ErrCommandNotFound, 127},
		{filepath.Join(dir, "missing"), ErrCommandNotFound, 127},
		{notExec, ErrNotExecutable, 126},
		{dir, ErrNotExecutable, 126},
	}
	if os.Geteuid() == 0 {
		// root may exec any file with an x bit, but not one without.
		t.Log("running as root: permission checks rely on the missing x bit")
	}
	for _, tc := range cases {
		_, err := Start(&Cmd{Path: tc.path})
		var se *StartError
		if !errors.As(err, &se) || !errors.Is(err, tc.want) {
			t.Errorf("Start(%q) = %v, want %v", tc.path, err, tc.want)
			continue
		}
		if got := ExitCodeForStartError(err); got != tc.code {
			t.Errorf("Start(%q): exit code %d, want %d", tc.path, got, tc.code)
		}
		if !strings.Contains(err.Error(), tc.path) {
			t.Errorf("error %q does not name the command", err)
		}
	}
}

func TestChildGetsCleanSignalStateAndOwnProcessGroup(t *testing.T) {
	e, out := run(t, &Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "grep -E '^Sig(Blk|Ign)' /proc/self/status; ps -o pgid= -p $$ 2>/dev/null || cut -d' ' -f5 /proc/$$/stat"}})
	if e.Code() != 0 {
		t.Fatalf("child: %s", e)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "SigBlk:") || strings.HasPrefix(line, "SigIgn:") {
			f := strings.Fields(line)
			if n, _ := strconv.ParseUint(f[1], 16, 64); n != 0 {
				t.Errorf("child %s (want no blocked or ignored signal)", line)
			}
		}
	}
	lines := strings.Fields(out)
	pgid := lines[len(lines)-1]
	if pgid != strconv.Itoa(e.Pid) {
		t.Errorf("child's process group %s, want its own pid %d", pgid, e.Pid)
	}
}

func TestArgsEnvDirAndFilesPassVerbatim(t *testing.T) {
	dir := t.TempDir()
	args := []string{"sh", "-c", `printf '%s|' "$@"; printf 'env=%s|' "$PODSUP_X"; pwd`, "sh", "a b", "", `"q"`, "$HOME"}
	e, out := run(t, &Cmd{Path: "/bin/sh", Args: args, RunAs: RunAs{Env: []string{"PODSUP_X=v 1", "PATH=/usr/bin:/bin"}, Dir: dir}})
	want := `a b||"q"|$HOME|env=v 1|` + dir + "\n"
	if e.Code() != 0 || out != want {
		t.Fatalf("got %q (%s), want %q", out, e, want)
	}
}

func TestUserAndGroup(t *testing.T) {
	testproc.NeedRoot(t)
	e, out := run(t, &Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "id -u; id -g"}, RunAs: RunAs{User: "nobody"}})
	if e.Code() != 0 || strings.Fields(out)[0] != "65534" {
		t.Fatalf("as nobody: %q (%s)", out, e)
	}
	e, out = run(t, &Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "id -u; id -g"}, RunAs: RunAs{User: "1234", Group: "4321"}})
	if f := strings.Fields(out); e.Code() != 0 || len(f) != 2 || f[0] != "1234" || f[1] != "4321" {
		t.Fatalf("as 1234:4321: %q (%s)", out, e)
	}
	if _, err := Start(&Cmd{Path: "/bin/true", RunAs: RunAs{User: "no-such-user-podsup"}}); err == nil || !strings.Contains(err.Error(), "no-such-user-podsup") {
		t.Fatalf("unknown user: %v", err)
	}
}

func TestKillTreeReachesGrandchildren(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	p, err := Start(&Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "sleep 100 & echo $! >> " + pids + "; sleep 100 & echo $! >> " + pids + "; wait"}})
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	deadline := time.Now().Add(10 * time.Second)
	for len(kids) < 2 && time.Now().Before(deadline) {
		b, _ := os.ReadFile(pids)
		kids = kids[:0]
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			kids = append(kids, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(kids) < 2 {
		t.Fatal("grandchildren did not start")
	}
	if err := p.KillTree(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if e := p.Exit(); e.Signal() != syscall.SIGKILL {
		t.Fatalf("leader: %s", e)
	}
	for _, k := range kids {
		deadline := time.Now().Add(10 * time.Second)
		for testproc.Alive(k) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if testproc.Alive(k) {
			t.Errorf("grandchild %d survived KillTree", k)
		}
	}
	if err := p.Signal(syscall.SIGTERM); err != ErrProcessDone {
		t.Errorf("Signal after exit = %v, want ErrProcessDone", err)
	}
}

func TestGuardRefusesPidsThatMeanMoreThanOneTree(t *testing.T) {
	// Signal 0 only checks permission: if the guard ever broke, this test
	// would report it instead of killing every process on the machine.
	for _, pgid := range []int{-1, 0, 1, unix.Getpgrp()} {
		if err := killProcessGroup(pgid, 0); !errors.Is(err, ErrRefusedTarget) {
			t.Errorf("killProcessGroup(%d) = %v, want ErrRefusedTarget", pgid, err)
		}
	}
	if err := signalPidfd(-1, 0, 0); err != ErrProcessDone {
		t.Errorf("signalPidfd(-1) = %v, want ErrProcessDone", err)
	}
}

func TestOnExitRunsOnceAndDoneCloses(t *testing.T) {
	got := make(chan Exit, 2)
	p, err := Start(&Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "exit 7"}, OnExit: func(e Exit) { got <- e }})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-got:
		if e.Code() != 7 || e.Pid != p.Pid() {
			t.Fatalf("OnExit got %+v", e)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit reported")
	}
	<-p.Done()
	if p.Exit().Code() != 7 {
		t.Fatal("Exit() disagrees with OnExit")
	}
	select {
	case e := <-got:
		t.Fatalf("OnExit ran twice: %+v", e)
	case <-time.After(50 * time.Millisecond):
	}
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		argv    []string
		code    int
		message string
	}{
		{[]string{"sh", "-c", "exit 0"}, 0, ""},
		{[]string{"sh", "-c", "exit 1"}, 1, ""},
		{[]string{"sh", "-c", "exit 3"}, 3, ""},
		{[]string{"sh", "-c", "exit 255"}, 255, ""},
		{[]string{"sh", "-c", "kill -TERM $$"}, 128 + 15, ""},
		{[]string{"sh", "-c", "kill -KILL $$"}, 128 + 9, ""},
		{[]string{"no-such-command-podsup"}, 127, "no-such-command-podsup: command not found"},
		{[]string{plain}, 126, plain + ": permission denied"},
	}
	for _, tc := range cases {
		code, out := runPodsup(t, append([]string{"run", "--"}, tc.argv...)...)
		if code != tc.code {
			t.Errorf("podsup run %q: exit %d, want %d (output %q)", tc.argv, code, tc.code, out)
		}
		if tc.message != "" && !strings.Contains(out, tc.message) {
			t.Errorf("podsup run %q: output %q lacks %q", tc.argv, out, tc.message)
		}
	}
}

func TestRunForwardsEverySignal(t *testing.T) {
	t.Parallel()
	r, w, _ := os.Pipe()
	c := podsupCmd(t, append([]string{"run", "--"}, helperArgv(t, "sigecho")...)...)
	c.Stdin = r
	ps := start(t, c)
	r.Close()
	if l := ps.line(t); l != "ready" {
		t.Fatalf("helper said %q", l)
	}
	for _, s := range goEchoable() {
		sig := s.(syscall.Signal)
		if err := ps.p.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if got := ps.line(t); got != strconv.Itoa(int(sig)) {
			t.Fatalf("sent %s (%d) to podsup, child got %q", unix.SignalName(sig), sig, got)
		}
	}
	w.Close()
	if e := ps.wait(t); e.Code() != 0 {
		t.Errorf("podsup %s", e)
	}
}

func TestRunPassesArgsStdinStdoutVerbatim(t *testing.T) {
	t.Parallel()
	code, out := runPodsup(t, "run", "--", "printf", "%s|", "a b", "", `"q"`, "$HOME", "-x")
	if code != 0 || out != `a b||"q"|$HOME|-x|` {
		t.Fatalf("args: %d %q", code, out)
	}
	// Flags after CMD belong to CMD even without "--".
	code, out = runPodsup(t, "run", "printf", "%s", "-g")
	if code != 0 || out != "-g" {
		t.Fatalf("flags after CMD: %d %q", code, out)
	}
	r, w, _ := os.Pipe()
	c := podsupCmd(t, "run", "--", "cat")
	c.Stdin = r
	s := start(t, c)
	r.Close()
	fmt.Fprint(w, "through stdin\n")
	w.Close()
	if l := s.line(t); l != "through stdin" {
		t.Fatalf("stdin→stdout: %q", l)
	}
	if e := s.wait(t); e.Code() != 0 {
		t.Fatal(e)
	}
}

// TestRunPassesTheEnvironmentVerbatim: podsup re-executes itself with
// GODEBUG changed (package pid1's Prepare); the child still gets the
// environment podsup was given, GODEBUG set or not.
func TestRunPassesTheEnvironmentVerbatim(t *testing.T) {
	t.Parallel() // after the serial tests, so no t.Setenv changes the environment under it
	for _, godebug := range []string{"", "GODEBUG=madvdontneed=1", "GODEBUG="} {
		c := podsupCmd(t, "run", "--", "env")
		if godebug != "" {
			c.Env = append(c.Env, godebug)
		}
		s := start(t, c)
		out := s.rest(t)
		if e := s.wait(t); e.Code() != 0 {
			t.Fatalf("podsup run -- env: %s", e)
		}
		got := strings.Split(strings.TrimSpace(out), "\n")
		want := c.Env
		slices.Sort(got)
		want = slices.Sorted(slices.Values(want))
		if !slices.Equal(got, want) {
			t.Errorf("started with %q: the child's environment is\n%q\nwant\n%q", godebug, got, want)
		}
	}
}

func TestRunChildHasOnlyFds012AndAnEmptySignalMask(t *testing.T) {
	t.Parallel()
	leak, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer leak.Close()
	c := podsupCmd(t, "run", "--", "sh", "-c", `ls /proc/$$/fd`)
	c.ExtraFiles = []*os.File{leak} // fd 3 in podsup, without close-on-exec
	s := start(t, c)
	if got := strings.Fields(s.rest(t)); strings.Join(got, " ") != "0 1 2" {
		t.Errorf("child's fds: %q, want 0 1 2", got)
	}
	s.wait(t)

	// A parent that blocks signals before exec'ing podsup must not pass
	// the mask on to the child.
	exe := testExe(t)
	bc := &proc.Cmd{Path: exe, Args: []string{exe, "run", "--", "grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"},
		RunAs: proc.RunAs{Env: append(cleanEnv(), helperEnv+"=blocked-exec")}}
	s = start(t, bc)
	out := s.rest(t)
	if e := s.wait(t); e.Code() != 0 {
		t.Fatalf("podsup under a blocked mask: %s: %s", e, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 || strings.Trim(f[1], "0") != "" {
			t.Errorf("child's %q: want no blocked or ignored signal", l)
		}
	}
	if !strings.Contains(out, "SigBlk") {
		t.Fatalf("no SigBlk line in %q", out)
	}
}

func TestRunGraceKillsATermIgnoringChild(t *testing.T) {
	t.Parallel()
	s := start(t, podsupCmd(t, "run", "--grace", "300ms", "--", "sh", "-c", `trap "" TERM; echo ready; while :; do sleep 0.05; done`))
	if l := s.line(t); l != "ready" {
		t.Fatal(l)
	}
	_ = s.p.Signal(syscall.SIGTERM)
	if e := s.wait(t); e.Code() != 128+9 {
		t.Fatalf("podsup %s, want exit 137 (child SIGKILLed after grace)", e)
	}
}

func TestRunGroupFlagSignalsTheWholeGroup(t *testing.T) {
	t.Parallel()
	s := start(t, podsupCmd(t, "run", "-g", "--", "sh", "-c", `sleep 100 & echo $!; wait`))
	kid, _ := strconv.Atoi(s.line(t))
	if kid <= 0 {
		t.Fatal("no grandchild pid")
	}
	_ = s.p.Signal(syscall.SIGTERM)
	s.wait(t)
	if !eventually(func() bool { return !alive(kid) }) {
		t.Fatalf("grandchild %d survived a group-forwarded SIGTERM", kid)
	}
}

func TestRunKillLeftovers(t *testing.T) {
	t.Parallel()
	code, out := runPodsup(t, "run", "--kill-leftovers", "--grace", "5s", "--", "sh", "-c", `sleep 100 & echo $!; exit 4`)
	kid, _ := strconv.Atoi(strings.TrimSpace(out))
	if code != 4 || kid <= 0 {
		t.Fatalf("exit %d output %q", code, out)
	}
	if !eventually(func() bool { return !alive(kid) }) {
		t.Fatalf("leftover %d survived --kill-leftovers", kid)
	}
}

// TestRunReapsOrphansAsPID1 is the container case: as PID 1 of a
// new PID namespace, 200 double-forked sleeps leave no zombie behind once
// they have ended.
func TestRunReapsOrphansAsPID1(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a PID namespace (CI runs as root)")
	}
	marker := filepath.Join(t.TempDir(), "forked")
	c := podsupCmd(t, "run", "--", "sh", "-c", `for i in $(seq 200); do (sleep 0.2 &); done; touch `+marker+`; sleep 2`)
	c.Cloneflags = unix.CLONE_NEWPID
	s := start(t, c)
	pid := s.p.Pid()
	if !eventually(func() bool { _, err := os.Stat(marker); return err == nil }) {
		t.Fatal("the orphans were never forked")
	}
	time.Sleep(800 * time.Millisecond) // 0.2s sleeps, with a generous margin
	for i := 0; i < 10; i++ {
		if z := zombieChildren(pid); len(z) > 0 {
			t.Fatalf("podsup (PID 1) left %d zombies: %v", len(z), z)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if e := s.wait(t); e.Code() != 0 {
		t.Fatalf("podsup: %s", e)
	}
}

func eventually(cond func() bool) bool {
	deadline := time.Now().Add(30 * time.Second) // generous: tests run in parallel on a shared machine
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

func procStat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid, true
}

func alive(pid int) bool {
	st, _, ok := procStat(pid)
	return ok && st != "Z"
}

func zombieChildren(ppid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, pp, ok := procStat(pid); ok && st == "Z" && pp == ppid {
			out = append(out, pid)
		}
	}
	return out
}

// TestRunInATerminal runs podsup on a pseudo-terminal (util-linux's
// script(1) makes one): the child must be the terminal's foreground process
// group, so a ^C typed there reaches it and job control works.
func TestRunInATerminal(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/script"); err != nil {
		t.Skip("needs script(1) from util-linux to make a pty (.ci/run installs it)")
	}
	podsup := "env " + asPodsupEnv + "=1 " + testExe(t) + " run -- "
	// Field 5 of /proc/PID/stat is the process group, field 8 the
	// terminal's foreground process group.
	code, out := runScript(t, nil, podsup+`sh -c 'cut -d" " -f5,8 /proc/$$/stat'`)
	f := strings.Fields(out)
	if code != 0 || len(f) != 2 || f[0] != f[1] {
		t.Fatalf("pgrp and foreground pgrp %q (exit %d): the child is not in the foreground", out, code)
	}

	r, w, _ := os.Pipe()
	go func() {
		defer w.Close()
		time.Sleep(500 * time.Millisecond) // let the child start; ^C before it would hit nobody
		_, _ = w.Write([]byte{3})
	}()
	code, out = runScript(t, r, podsup+`sh -c 'echo ready; sleep 30'`)
	if code != 128+2 {
		t.Fatalf("after ^C: exit %d (output %q), want 130", code, out)
	}
}

func runScript(t *testing.T, stdin *os.File, command string) (int, string) {
	t.Helper()
	c := &proc.Cmd{Path: "/usr/bin/script", Args: []string{"script", "-qec", command, "/dev/null"}, RunAs: proc.RunAs{Env: cleanEnv()}, Stdin: stdin}
	s := start(t, c)
	if stdin != nil {
		stdin.Close()
	}
	out := s.rest(t)
	return s.wait(t).Code(), out
}

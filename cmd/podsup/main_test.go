package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/pid1"
	"github.com/podsup/podsup/sandbox/proc"
)

// The test binary plays two parts besides running the tests:
//   - with PODSUP_TEST_AS_PODSUP set it *is* podsup (it runs main), so the
//     tests exercise the real command without building it with os/exec;
//   - with PODSUP_TEST_HELPER set it runs a small workload for podsup to
//     supervise.
const (
	asPodsupEnv = "PODSUP_TEST_AS_PODSUP"
	helperEnv   = "PODSUP_TEST_HELPER"
)

var helpers = map[string]func(args []string) int{
	// sigecho catches every signal podsup forwards that os/signal can
	// deliver (goEchoable), says "ready", prints the number of each one it
	// gets, and exits when stdin closes.
	"sigecho": func([]string) int {
		c := make(chan os.Signal, 64)
		signal.Notify(c, goEchoable()...)
		eof := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(eof) }()
		fmt.Println("ready")
		for {
			select {
			case s := <-c:
				fmt.Println(int(s.(syscall.Signal)))
			case <-eof:
				return 0
			}
		}
	},
	// accept answers one connection on its socket-activation fd 3 with
	// its pid, after checking LISTEN_PID is its own, then exits.
	"accept": func([]string) int {
		if os.Getenv("LISTEN_PID") != fmt.Sprint(os.Getpid()) || os.Getenv("LISTEN_FDNAMES") != "web" {
			fmt.Fprintln(os.Stderr, "bad activation environment:", os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDNAMES"))
			return 3
		}
		l, err := net.FileListener(os.NewFile(3, "web"))
		if err != nil {
			return 4
		}
		c, err := l.Accept()
		if err != nil {
			return 5
		}
		fmt.Fprintf(c, "%d\n", os.Getpid())
		c.Close()
		return 0
	},
	// blocked-exec blocks a few signals, then execs podsup with the rest of
	// its arguments: a parent that leaks a signal mask.
	"blocked-exec": func(args []string) int {
		blockSignalsAndExecPodsup(args)
		return 1
	},
}

// goEchoable is pid1.Forwarded less what a Go child cannot report: SIGURG
// (its own runtime sends it too), SIGPROF (the runtime's profiler keeps
// it) and 34 (os/signal cannot catch it). A bash child reports those in
// TestRunForwardsURGPROFAndRealtimeOnce.
func goEchoable() []os.Signal {
	var sigs []os.Signal
	for _, s := range pid1.Forwarded {
		switch s {
		case syscall.SIGURG, syscall.SIGPROF, syscall.Signal(34):
			continue
		}
		sigs = append(sigs, s)
	}
	return sigs
}

func TestMain(m *testing.M) {
	// Helpers first: a helper started by podsup inherits podsup's
	// environment, both variables included. The podsup variable stays set so
	// that podsup's own re-exec (resetInheritedSignalState) stays podsup.
	if name := os.Getenv(helperEnv); name != "" {
		os.Unsetenv(helperEnv)
		os.Exit(helpers[name](os.Args[1:]))
	}
	if os.Getenv(asPodsupEnv) != "" {
		main()
		os.Exit(0)
	}
	raiseParallel(4)
	// Explicitly a child subreaper (a proc.Start alone would not make it
	// one): checkNothingLeft and killOrphanOnFailure find what a test
	// orphaned among this process's children.
	proc.StartReaperAs(true)
	cgBefore := podsupCgroups()
	code := m.Run()
	if code == 0 {
		code = checkNothingLeft(cgBefore)
	}
	os.Exit(code)
}

// raiseParallel lets up to n of this package's parallel tests run at once
// where -test.parallel was not given: the default, GOMAXPROCS, is 2 on a
// small machine, yet these tests spend most of their time waiting for the
// processes they start (a podsup, its children, a grace period) rather than
// on a CPU.
func raiseParallel(n int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given && runtime.GOMAXPROCS(0) < n {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// checkNothingLeft fails the run when the tests left a process or a cgroup
// behind. The test binary is a child subreaper (package proc's reaper),
// so anything a test orphaned has become its child.
func checkNothingLeft(cgBefore map[string]bool) int {
	var left []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		left = left[:0]
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if st, ppid, ok := procStat(pid); ok && ppid == os.Getpid() && st != "Z" {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				left = append(left, fmt.Sprintf("pid %d: %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
			}
		}
		for cg := range podsupCgroups() {
			if !cgBefore[cg] {
				left = append(left, "cgroup "+cg)
			}
		}
		if len(left) == 0 {
			return 0
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "FAIL: the tests left behind:\n  %s\n", strings.Join(left, "\n  "))
			return 1
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// podsupCgroups lists the cgroup roots of the podsup instances this
// package's tests create: `podsup up` names its instance after its socket
// (eight hex digits, instanceName) and the holder tests use cmdtest-PID.
// Other packages' tests run at the same time and create podsup-sbtest-*,
// podsup-suptest-* and the like; those are theirs to check.
func podsupCgroups() map[string]bool {
	out := map[string]bool{}
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/podsup-*")
	more, _ := filepath.Glob("/sys/fs/cgroup/podsup-*")
	for _, d := range append(dirs, more...) {
		if ownInstance(strings.TrimPrefix(filepath.Base(d), "podsup-")) {
			out[d] = true
		}
	}
	return out
}

// ownInstance reports whether a podsup instance name is one this
// package's tests create.
func ownInstance(name string) bool {
	if name == fmt.Sprintf("cmdtest-%d", os.Getpid()) {
		return true
	}
	if len(name) != 8 {
		return false
	}
	for _, c := range name {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

func testExe(t testing.TB) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// podsupCmd is a proc.Cmd running `podsup ARGS...`.
func podsupCmd(t testing.TB, args ...string) *proc.Cmd {
	exe := testExe(t)
	return &proc.Cmd{Path: exe, Args: append([]string{"podsup"}, args...), Env: append(cleanEnv(), asPodsupEnv+"=1")}
}

// helperArgv is the argv that makes the test binary run helper name;
// the environment variable travels through podsup to it.
func helperArgv(t testing.TB, name string) []string {
	return []string{"env", helperEnv + "=" + name, testExe(t)}
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, asPodsupEnv+"=") && !strings.HasPrefix(kv, helperEnv+"=") {
			env = append(env, kv)
		}
	}
	return env
}

// started is a running podsup with its stdout (and stderr) readable.
type started struct {
	p   *proc.Process
	out *bufio.Reader
	r   *os.File

	pending chan lineRead // a read lineWithin gave up waiting for
}

type lineRead struct {
	l   string
	err error
}

func start(t *testing.T, c *proc.Cmd) *started {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stdout = w
	if c.Stderr == nil {
		c.Stderr = w
	}
	p, err := proc.Start(c)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Stop it the way a user would: a podsup up still running must stop
		// its processes (in process groups of their own) and remove its
		// cgroups; SIGKILL of its group would orphan them.
		select {
		case <-p.Done():
		default:
			// The test is done with the output: drain it, or a podsup
			// whose log has filled the pipe blocks in write and never
			// gets to its exit.
			go func() { _, _ = io.Copy(io.Discard, r) }()
			_ = p.Signal(syscall.SIGTERM)
			select {
			case <-p.Done():
			case <-time.After(20 * time.Second):
				_ = p.KillTree(syscall.SIGKILL)
				<-p.Done()
			}
		}
		r.Close()
	})
	return &started{p: p, out: bufio.NewReader(r), r: r}
}

func (s *started) line(t *testing.T) string {
	t.Helper()
	return s.lineOr(t, "")
}

// lineOr is line, saying what the test had just done when no line comes.
func (s *started) lineOr(t *testing.T, after string) string {
	t.Helper()
	l, ok := s.lineWithin(t, 30*time.Second)
	if !ok {
		if after != "" {
			t.Fatalf("no output from podsup within 30s (%s)", after)
		}
		t.Fatal("no output from podsup within 30s")
	}
	return l
}

// lineWithin is the next line, or false when none came within d; the read
// goes on, and the next call takes its line.
func (s *started) lineWithin(t *testing.T, d time.Duration) (string, bool) {
	t.Helper()
	c := s.pending
	if c == nil {
		c = make(chan lineRead, 1)
		go func() { l, err := s.out.ReadString('\n'); c <- lineRead{l, err} }()
	}
	select {
	case r := <-c:
		s.pending = nil
		if r.err != nil && r.l == "" {
			t.Fatalf("reading podsup's output: %v", r.err)
		}
		return strings.TrimSpace(r.l), true
	case <-time.After(d):
		s.pending = c
		return "", false
	}
}

// rest reads podsup's output to its end: podsup must have exited (or be
// about to), or rest waits for it.
func (s *started) rest(t *testing.T) string {
	b, _ := io.ReadAll(s.out)
	return string(b)
}

// sofar is what podsup has written until now, for the message of a test
// that fails while podsup still runs (rest would wait for its exit).
func (s *started) sofar(t *testing.T) string {
	_ = s.r.SetReadDeadline(time.Now().Add(time.Second))
	b, _ := io.ReadAll(s.out)
	return string(b)
}

func (s *started) wait(t *testing.T) proc.Exit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, err := s.p.Wait(ctx)
	if err != nil {
		t.Fatalf("podsup did not exit: %v", err)
	}
	return e
}

// runPodsup runs podsup to completion and returns its exit code and output.
func runPodsup(t *testing.T, args ...string) (int, string) {
	t.Helper()
	s := start(t, podsupCmd(t, args...))
	out := s.rest(t)
	return s.wait(t).Code(), out
}

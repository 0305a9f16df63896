package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/pid1"
	"github.com/podsup/podsup/sandbox/proc"
	"github.com/podsup/podsup/spec"
)

// The test binary plays two parts besides running the tests:
//   - with PODSUP_TEST_AS_PODSUP set it *is* podsup (it runs main), so the
//     tests exercise the real command without building it with os/exec;
//   - with PODSUP_TEST_HELPER set it runs a small workload for podsup to
//     supervise.
const (
	asPodsupEnv = "PODSUP_TEST_AS_PODSUP"
	helperEnv   = "PODSUP_TEST_HELPER"
	// instancesEnv names the file where each podsup up the tests start
	// records its instance (recordInstance), so that the leak check
	// counts only the tests' own cgroups, never those of another podsup
	// on the host (another user's, another test run's).
	instancesEnv = "PODSUP_TEST_INSTANCES"
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
		recordInstance(os.Args[1:])
		main()
		os.Exit(0)
	}
	raiseParallel(4)
	// Explicitly a child subreaper (a proc.Start alone would not make it
	// one): checkNothingLeft and killOrphanOnFailure find what a test
	// orphaned among this process's children.
	proc.StartReaperAs(true)
	cleanup, err := makeInstancesFile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: the record of the tests' podsup instances:", err)
		os.Exit(1)
	}
	// Every podsup cgroup there is now, ours or not: one of ours that an
	// earlier run left, or a host podsup's that a test happened to share
	// a socket with, is not this run's leak.
	cgBefore := allPodsupCgroups()
	code := m.Run()
	if code == 0 {
		code = checkNothingLeft(cgBefore)
	}
	cleanup()
	os.Exit(code)
}

// makeInstancesFile creates the file podsups started by the tests record
// their instance in, and names it in instancesEnv for them. Writable by
// all: a test may run podsup as another user. A name a stranger adds
// makes the check count one more cgroup, never hides one of ours.
func makeInstancesFile() (cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "podsup-cmdtest-")
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "instances")
	if err := os.WriteFile(file, nil, 0o666); err != nil {
		return nil, err
	}
	if err := errors.Join(os.Chmod(dir, 0o755), os.Chmod(file, 0o666)); err != nil {
		return nil, err
	}
	os.Setenv(instancesEnv, file)
	return func() { os.RemoveAll(dir) }, nil
}

// recordInstance, run by the test binary when it plays podsup, appends the
// instance of a podsup up to the tests' record before podsup starts: the
// instance names its cgroups (instanceName of its socket). The socket
// is --socket, PODSUP_SOCKET or the configuration's supervisor.socket,
// read here with a pattern rather than the loader (the fd and memory tests
// measure podsup, not a second load); a configuration that computes its
// socket would need the loader.
func recordInstance(args []string) {
	file := os.Getenv(instancesEnv)
	if file == "" || !slices.Contains(args, "up") {
		return
	}
	var sockets, files []string
	if s := os.Getenv("PODSUP_SOCKET"); s != "" {
		sockets = append(sockets, s)
	}
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		switch name {
		case "--socket":
			sockets = append(sockets, value)
		case "-f", "--file":
			files = append(files, value)
		}
	}
	if len(files) == 0 {
		files = []string{"podsup.hcl", "/etc/podsup/podsup.hcl"}
	}
	for _, f := range files {
		paths := []string{f}
		if more, err := filepath.Glob(filepath.Join(f, "*.hcl")); err == nil && len(more) > 0 {
			paths = more // a conf.d directory
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			for _, m := range socketSetting.FindAllSubmatch(b, -1) {
				sockets = append(sockets, string(m[1]))
			}
		}
	}
	if len(sockets) == 0 {
		sockets = append(sockets, spec.DefaultSocketPath())
	}
	var b strings.Builder
	for _, s := range sockets {
		b.WriteString(instanceName(s) + "\n")
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	_, _ = f.WriteString(b.String())
	f.Close()
}

// socketSetting is supervisor.socket as the tests write it.
var socketSetting = regexp.MustCompile(`(?m)^\s*socket\s*=\s*"([^"]+)"`)

// recordedInstances are the instances the tests' podsups recorded.
func recordedInstances() map[string]bool {
	out := map[string]bool{}
	b, _ := os.ReadFile(os.Getenv(instancesEnv))
	for _, l := range strings.Fields(string(b)) {
		out[l] = true
	}
	return out
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
// run's tests created: those of every podsup up they started (named after
// its socket, instanceName, and recorded by recordInstance) and the
// holder tests' cmdtest-PID. Another podsup on the host, another run of
// these tests, and other packages' tests (podsup-sbtest-*,
// podsup-suptest-*, ...) have cgroups of the same form; they are not
// this run's to count.
func podsupCgroups() map[string]bool {
	out := map[string]bool{}
	own := recordedInstances()
	own[fmt.Sprintf("cmdtest-%d", os.Getpid())] = true
	for d := range allPodsupCgroups() {
		if own[strings.TrimPrefix(filepath.Base(d), "podsup-")] {
			out[d] = true
		}
	}
	return out
}

// allPodsupCgroups is every podsup cgroup root on the host, whoever's.
func allPodsupCgroups() map[string]bool {
	out := map[string]bool{}
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/podsup-*")
	more, _ := filepath.Glob("/sys/fs/cgroup/podsup-*")
	for _, d := range append(dirs, more...) {
		out[d] = true
	}
	return out
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
	return &proc.Cmd{Path: exe, Args: append([]string{"podsup"}, args...), RunAs: proc.RunAs{Env: append(cleanEnv(), asPodsupEnv+"=1")}}
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

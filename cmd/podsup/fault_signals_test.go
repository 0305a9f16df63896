package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// floodSignals are the signals of the flood: one of them (SIGHUP) ends its
// receiver by default, so a single one that reaches podsup or the child
// outside a handler changes the exit status.
var floodSignals = []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGHUP}

// urgChildArgv starts urg-child with the Go runtime's asynchronous
// preemption off, so that every SIGURG it gets came from outside.
func urgChildArgv(t *testing.T) []string {
	argv := helperArgv(t, "urg-child")
	return append([]string{argv[0], "GODEBUG=asyncpreemptoff=1"}, argv[1:]...)
}

func init() {
	// urg-child says "ready", then "URG" for every SIGURG, "stop" for
	// SIGQUIT, and "end" for SIGTERM, on which it exits 0. It takes the
	// flood's signals and says nothing.
	helpers["urg-child"] = func([]string) int {
		c := make(chan os.Signal, 64)
		signal.Notify(c, syscall.SIGURG, syscall.SIGQUIT, syscall.SIGTERM,
			syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGHUP)
		fmt.Println("ready")
		for s := range c {
			switch s {
			case syscall.SIGURG:
				fmt.Println("URG")
			case syscall.SIGQUIT:
				fmt.Println("stop")
			case syscall.SIGTERM:
				fmt.Println("end")
				return 0
			}
		}
		return 0
	}
	// flood-child catches the flood's signals, says "ready", and exits 42
	// once it has received 50 of them (or after 5s), in the middle of the
	// flood.
	helpers["flood-child"] = func([]string) int {
		c := make(chan os.Signal, 64)
		signal.Notify(c, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGHUP)
		fmt.Println("ready")
		deadline := time.After(5 * time.Second)
		for n := 0; n < 50; n++ {
			select {
			case <-c:
			case <-deadline:
				return 42
			}
		}
		return 42
	}
}

// TestRunFloodKeepsExitCode sends podsup run 5000 signals or more, without
// pause, while its child runs and while the child exits 42: podsup must
// exit 42 every time, as PID 1 of a new PID namespace and as a subreaper.
func TestRunFloodKeepsExitCode(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name  string
		flags uintptr
	}{{"subreaper", 0}, {"pid1", unix.CLONE_NEWPID}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			if mode.flags != 0 && os.Geteuid() != 0 {
				t.Skip("needs root: creates a PID namespace (CI runs as root)")
			}
			for i := 0; i < 20; i++ {
				c := podsupCmd(t, append([]string{"run", "--"}, helperArgv(t, "flood-child")...)...)
				c.Cloneflags = mode.flags
				s := start(t, c)
				if l := s.line(t); l != "ready" {
					t.Fatalf("child said %q", l)
				}
				sent := flood(s.p, 5000)
				if e := s.wait(t); e.Code() != 42 {
					t.Fatalf("run %d: podsup %s after %d signals, want exit 42", i, e, sent)
				}
			}
		})
	}
}

// flood signals p, cycling through floodSignals, at least min times and
// then on until p has exited (at most 20 times min), so that the flood
// spans the child's exit and podsup's own. It returns how many it sent.
func flood(p *proc.Process, min int) int {
	n := 0
	for ; n < 20*min; n++ {
		if err := p.Signal(floodSignals[n%len(floodSignals)]); err != nil {
			break // podsup's exit is known
		}
		if n >= min {
			select {
			case <-p.Done():
				return n
			default:
			}
		}
	}
	return n
}

// trapScript is a bash child that prints the name (or number) of every
// signal of sigs it gets, says "ready", and on SIGTERM says "end" and exits.
func trapScript(sigs []string) string {
	var b strings.Builder
	for _, s := range sigs {
		fmt.Fprintf(&b, "trap 'echo %s' %s\n", s, s)
	}
	b.WriteString(`trap 'kill $! 2>/dev/null; echo end; exit 0' TERM
echo ready
while :; do sleep 0.2 & wait $!; done
`)
	return b.String()
}

func needBash(t *testing.T) string {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash: the children here are bash scripts (dash cannot trap the real-time signals by number)")
	}
	return bash
}

// TestRunForwardsURGPROFAndRealtimeOnce: each of SIGURG, SIGPROF and
// SIGRTMIN..SIGRTMAX (34-64) sent to an idle podsup from outside reaches
// the child exactly once (SIGPROF and 34 only with pid1's assembly). (Sent to a busy podsup, see
// TestRunForwardsSIGURGOnAnyThread.)
func TestRunForwardsURGPROFAndRealtimeOnce(t *testing.T) {
	t.Parallel()
	bash := needBash(t)
	sigs := []syscall.Signal{syscall.SIGURG}
	names := []string{"URG"}
	if signalAssembly {
		// Without pid1's handler a SIGPROF or 34 the kernel hands to
		// another thread is lost (pid1's doc): it happened in 1 of 20 runs
		// of this test with -tags podsup_portable, podsup idle.
		sigs = append(sigs, syscall.SIGPROF, 34)
		names = append(names, "PROF", "34")
	}
	for s := syscall.Signal(35); s <= 64; s++ {
		sigs = append(sigs, s)
		names = append(names, strconv.Itoa(int(s)))
	}
	s := start(t, podsupCmd(t, "run", "--", bash, "-c", trapScript(names)))
	if l := s.line(t); l != "ready" {
		t.Fatalf("child said %q", l)
	}
	for i, sig := range sigs {
		waitSignalThreadIdle(t, s.p.Pid())
		if err := s.p.Signal(sig); err != nil {
			t.Fatalf("signalling podsup: %v", err)
		}
		if got := s.lineOr(t, "sent "+unix.SignalName(sig)+" ("+strconv.Itoa(int(sig))+")"); got != names[i] {
			t.Fatalf("sent %s (%d) to podsup, child reported %q", unix.SignalName(sig), sig, got)
		}
	}
	_ = s.p.Signal(syscall.SIGTERM)
	if rest := strings.TrimSpace(s.rest(t)); rest != "end" {
		t.Errorf("after the last signal the child also reported %q: a signal reached it more than once", rest)
	}
	if e := s.wait(t); e.Code() != 0 {
		t.Errorf("podsup %s", e)
	}
}

// TestRunForwardsSIGURGOnAnyThread: a signal from outside that lands on a
// thread of podsup other than its signal thread, as one does while the
// signal thread is busy forwarding another, still reaches the child. The
// test puts it there with tgkill, on every thread in turn. SIGURG, SIGPROF
// and 34 are the hard cases: the Go runtime keeps them unblocked
// everywhere; with asynchronous preemption on it takes a SIGURG for a
// preemption request, and no Go code can catch the other two there (on
// amd64 and arm64 package pid1's own handler takes them; see
// redirect.go).
func TestRunForwardsSIGURGOnAnyThread(t *testing.T) {
	t.Parallel()
	bash := needBash(t)
	sigs := []syscall.Signal{syscall.SIGURG, syscall.SIGUSR1}
	names := []string{"URG", "USR1"}
	if signalAssembly { // else they are forwarded only from the signal thread
		sigs = append(sigs, syscall.SIGPROF, 34)
		names = append(names, "PROF", "34")
	}
	s := start(t, podsupCmd(t, "run", "--", bash, "-c", trapScript(names)))
	if l := s.line(t); l != "ready" {
		t.Fatalf("child said %q", l)
	}
	pid := s.p.Pid()
	tids := threadsOf(t, pid)
	if len(tids) < 2 {
		t.Fatalf("podsup has threads %v: want the signal thread and the Go runtime's", tids)
	}
	for _, tid := range tids {
		for i, sig := range sigs {
			if pid <= 0 || tid <= 0 {
				t.Fatalf("pid %d tid %d", pid, tid) // never a tgkill to a pid <= 0
			}
			if err := unix.Tgkill(pid, tid, sig); errors.Is(err, unix.ESRCH) {
				break // the thread has ended
			} else if err != nil {
				t.Fatal(err)
			}
			want := names[i]
			if got := s.lineOr(t, fmt.Sprintf("sent %s to thread %d", want, tid)); got != want {
				t.Fatalf("sent %s to thread %d of podsup, child reported %q", want, tid, got)
			}
		}
	}
	_ = s.p.Signal(syscall.SIGTERM)
	if rest := strings.TrimSpace(s.rest(t)); rest != "end" {
		t.Errorf("the child also reported %q: a signal reached it more than once", rest)
	}
	if e := s.wait(t); e.Code() != 0 {
		t.Errorf("podsup %s", e)
	}
}

// threadsOf lists the thread ids of process pid.
func threadsOf(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids
}

// waitSignalThreadIdle waits until podsup's main thread, its signal thread,
// is waiting in rt_sigtimedwait (/proc/PID/task/PID/syscall).
func waitSignalThreadIdle(t *testing.T, pid int) {
	t.Helper()
	path := fmt.Sprintf("/proc/%d/task/%d/syscall", pid, pid)
	want := strconv.Itoa(unix.SYS_RT_SIGTIMEDWAIT) + " "
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reading the signal thread's system call: %v", err)
		}
		if strings.HasPrefix(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("podsup's signal thread is not waiting in sigtimedwait after 30s: %s", b)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRunNeverForwardsRuntimeSIGURG: the Go runtime sends SIGURG to its
// own threads to preempt goroutines; none of those may reach the child. The
// child counts SIGURGs while podsup, logging every signal it forwards, is
// kept busy by a flood; then one SIGURG from outside must arrive, once.
func TestRunNeverForwardsRuntimeSIGURG(t *testing.T) {
	t.Parallel()
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	// Not a bash child: under this flood bash now and then loses a trap
	// (podsup's log showed SIGQUIT forwarded, the trap never ran).
	c := podsupCmd(t, append([]string{"run", "-v", "--"}, urgChildArgv(t)...)...)
	c.Stderr = devnull // -v's log: busy work, not output to check
	s := start(t, c)
	if l := s.line(t); l != "ready" {
		t.Fatalf("child said %q", l)
	}
	for round := 0; round < 3; round++ {
		flood(s.p, 1000)
		time.Sleep(50 * time.Millisecond)
	}
	// QUIT marks the end of the busy phase in the child's output.
	_ = s.p.Signal(syscall.SIGQUIT)
	var before []string
	for l := s.line(t); l != "stop"; l = s.line(t) {
		before = append(before, l)
	}
	if len(before) > 0 {
		t.Fatalf("the child got %q while podsup was busy: the runtime's own SIGURGs were forwarded", before)
	}
	_ = s.p.Signal(syscall.SIGURG)
	if l := s.line(t); l != "URG" {
		t.Fatalf("SIGURG from outside: child reported %q", l)
	}
	_ = s.p.Signal(syscall.SIGTERM)
	if rest := strings.TrimSpace(s.rest(t)); rest != "end" {
		t.Errorf("child also reported %q", rest)
	}
	s.wait(t)
}

func TestRunRemapExit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"-e", "143:0", "--", "sh", "-c", "kill $$"}, 0},
		{[]string{"-e", "143:0", "--remap-exit", "3:7", "--", "sh", "-c", "exit 3"}, 7},
		{[]string{"-e", "3:7", "--", "sh", "-c", "exit 4"}, 4},
		{[]string{"-e", "127:0", "--", "no-such-command-podsup"}, 127}, // podsup's own code: not the child's
	}
	for _, tc := range cases {
		if code, out := runPodsup(t, append([]string{"run"}, tc.args...)...); code != tc.code {
			t.Errorf("podsup run %q: exit %d, want %d (output %q)", tc.args, code, tc.code, out)
		}
	}
	for _, bad := range []string{"143", "143:", "x:0", "256:0", "1:-1"} {
		code, out := runPodsup(t, "run", "-e", bad, "--", "true")
		if code != 2 || !strings.Contains(out, "--remap-exit") {
			t.Errorf("-e %q: exit %d output %q, want 2 and a message naming --remap-exit", bad, code, out)
		}
	}
}

// doubleTermConfig: two processes that each need their pre_stop hook
// (300ms) and then a graceful SIGTERM handling (200ms) to stop cleanly;
// each records both in the directory %[2]s.
const doubleTermConfig = `
supervisor {
  socket        = "%[1]s"
  minimum_grace = "100ms"
}
group "web" {
  termination_grace_period = "10s"
  process "a" {
    command = ["sh", "-c", "trap 'sleep 0.2; touch %[2]s/a.term; exit 0' TERM; while :; do sleep 0.1; done"]
    pre_stop {
      exec {
        command = ["sh", "-c", "sleep 0.3; touch %[2]s/a.prestop"]
      }
    }
  }
  process "b" {
    command = ["sh", "-c", "trap 'sleep 0.2; touch %[2]s/b.term; exit 0' TERM; while :; do sleep 0.1; done"]
    pre_stop {
      exec {
        command = ["sh", "-c", "sleep 0.3; touch %[2]s/b.prestop"]
      }
    }
  }
}
`

// TestUpDoubleSIGTERMKeepsGracefulStop: two SIGTERMs 5ms apart (what
// `timeout` sends, to the pid and then its group) must run every pre_stop
// hook and let every process handle SIGTERM within its grace, 20 times in
// 20, and podsup up exits 0. The 20 runs are independent podsups (each its
// own socket and cgroups), so they run at once.
func TestUpDoubleSIGTERMKeepsGracefulStop(t *testing.T) {
	t.Parallel()
	for i := range 20 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			doubleSIGTERMRun(t)
		})
	}
}

// doubleSIGTERMRun is one run of TestUpDoubleSIGTERMKeepsGracefulStop.
func doubleSIGTERMRun(t *testing.T) {
	marks := t.TempDir()
	f := startUp(t, fmt.Sprintf(doubleTermConfig, "%s", marks))
	f.waitRunning(t, "web", "a")
	f.waitRunning(t, "web", "b")
	_ = f.up.p.Signal(syscall.SIGTERM)
	time.Sleep(5 * time.Millisecond)
	_ = f.up.p.Signal(syscall.SIGTERM)
	e := f.up.wait(t)
	if missing := missingStopMarks(marks); e.Code() != 0 || len(missing) > 0 {
		t.Fatalf("podsup up %s; missing %v: the second SIGTERM cut the graceful stop short", e, missing)
	}
}

// missingStopMarks lists the marks of doubleTermConfig's graceful stop
// (each process's pre_stop and its SIGTERM handler) that are not in dir.
func missingStopMarks(dir string) []string {
	var missing []string
	for _, m := range []string{"a.prestop", "a.term", "b.prestop", "b.term"} {
		if _, err := os.Stat(filepath.Join(dir, m)); errors.Is(err, os.ErrNotExist) {
			missing = append(missing, m)
		}
	}
	return missing
}

// TestUpSecondSignalAfterASecondEscalates: the rule's other half, a
// deliberate second request (1s or more later) kills what is still
// stopping.
func TestUpSecondSignalAfterASecondEscalates(t *testing.T) {
	t.Parallel()
	marks := t.TempDir()
	cfg := strings.ReplaceAll(doubleTermConfig, "sleep 0.3;", "sleep 30;")
	f := startUp(t, fmt.Sprintf(cfg, "%s", marks))
	f.waitRunning(t, "web", "a")
	_ = f.up.p.Signal(syscall.SIGTERM)
	time.Sleep(1500 * time.Millisecond)
	sent := time.Now()
	_ = f.up.p.Signal(syscall.SIGINT)
	f.up.wait(t)
	if d := time.Since(sent); d > 20*time.Second {
		t.Fatalf("podsup up took %s after the second signal: it did not escalate", d)
	}
	if _, err := os.Stat(filepath.Join(marks, "a.prestop")); err == nil {
		t.Fatal("the 30s pre_stop hook ran to its end: no escalation")
	}
}

// TestRunTakesSignalsOnTheMainThread: podsup run's main thread waits in
// rt_sigtimedwait while the child runs (tini's loop: the kernel offers
// podsup's signals to that thread first), also when global flags come
// before "run".
func TestRunTakesSignalsOnTheMainThread(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"run"}, {"--socket", "/nonexistent/podsup.sock", "run"}} {
		r, w, _ := os.Pipe()
		c := podsupCmd(t, append(args, "--", "sh", "-c", "echo ready; read x; exit 0")...)
		c.Stdin = r
		s := start(t, c)
		r.Close()
		if l := s.line(t); l != "ready" {
			t.Fatalf("child said %q", l)
		}
		file := fmt.Sprintf("/proc/%d/task/%d/syscall", s.p.Pid(), s.p.Pid())
		want := strconv.Itoa(unix.SYS_RT_SIGTIMEDWAIT) + " "
		var last string
		if !eventually(func() bool {
			b, _ := os.ReadFile(file)
			last = string(b)
			return strings.HasPrefix(last, want)
		}) {
			t.Errorf("podsup %q: main thread in syscall %q, want rt_sigtimedwait (%d)", args, strings.Fields(last + " ?")[0], unix.SYS_RT_SIGTIMEDWAIT)
		}
		w.Close()
		if e := s.wait(t); e.Code() != 0 {
			t.Errorf("podsup %q: %s", args, e)
		}
	}
}

// TestUpSurvivesStraySignals: `podsup up` acts on SIGTERM, SIGINT, SIGQUIT
// and SIGHUP; any other signal sent to it (as a subreaper, where the
// kernel delivers every signal: not PID 1) must leave it and its processes
// running. Before: 32 and 34 ended it (no Go handler, default action),
// SIGABRT, SIGTRAP, SIGSYS, SIGILL, SIGSEGV and the like made the Go
// runtime dump and exit, each orphaning the process. Then SIGQUIT stops
// it gracefully, pre_stop hooks included (X9: nginx's graceful stop).
func TestUpSurvivesStraySignals(t *testing.T) {
	t.Parallel()
	marks := t.TempDir()
	f := startUp(t, fmt.Sprintf(doubleTermConfig, "%s", marks))
	a := f.waitRunning(t, "web", "a")
	stray := []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM, syscall.SIGVTALRM,
		syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGIO, syscall.SIGPWR, syscall.SIGPROF, syscall.SIGWINCH, syscall.SIGURG,
		syscall.SIGABRT, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGSTKFLT,
		syscall.SIGSYS, 32, 33, 34, 35, 50, 64}
	for _, sig := range stray {
		if err := f.up.p.Signal(sig); err != nil {
			t.Fatalf("signal %d: %v", sig, err)
		}
		if e, gone := f.exitsWithin(t, 20*time.Millisecond); gone {
			t.Fatalf("podsup up ended on signal %d (%s): %s; %s", sig, unix.SignalName(sig), e, f.up.sofar(t))
		}
	}
	if e, gone := f.exitsWithin(t, 500*time.Millisecond); gone {
		t.Fatalf("podsup up ended after the stray signals: %s", e)
	}
	if _, err := f.c.Version(context.Background()); err != nil {
		t.Fatalf("podsup up does not answer after the stray signals: %v", err)
	}
	if got := f.pid(t, "web", "a"); got != a {
		t.Fatalf("web/a is pid %d after the stray signals, was %d: a signal reached the supervision", got, a)
	}
	_ = f.up.p.Signal(syscall.SIGQUIT)
	e := f.up.wait(t)
	if missing := missingStopMarks(marks); e.Code() != 0 || len(missing) > 0 {
		t.Fatalf("podsup up %s after SIGQUIT; missing %v: want a graceful stop", e, missing)
	}
}

// TestRunSurvivesSignal32: 32 is not forwarded (the C library's own), and
// has no Go handler; sent to podsup run as a subreaper (not PID 1, where
// the kernel delivers it) it must not end podsup, and the child runs on
// until SIGTERM, whose exit status podsup reports. Twenty runs side by
// side each get three 32s the moment their child has printed its first
// line, when podsup is between the fork and its signal thread's
// readiness: there 32 once ended podsup (CI, and 4 of 150 tries under
// load) and orphaned the child.
func TestRunSurvivesSignal32(t *testing.T) {
	t.Parallel()
	bash := needBash(t)
	script := "echo $$\n" + trapScript([]string{"USR1"})
	for i := range 20 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			s := start(t, podsupCmd(t, "run", "--", bash, "-c", script))
			child, err := strconv.Atoi(strings.TrimSpace(s.line(t)))
			if err != nil || child <= 1 {
				t.Fatalf("the child's first line is not its pid: %v", err)
			}
			t.Cleanup(func() { killOrphanedChild(t, s, child) })
			for range 3 {
				if err := s.p.Signal(32); errors.Is(err, proc.ErrProcessDone) {
					t.Fatalf("podsup run ended on signal 32: %s", s.p.Exit())
				} else if err != nil {
					t.Fatal(err)
				}
			}
			if l := s.line(t); l != "ready" {
				t.Fatalf("child said %q", l)
			}
			// Still there, and still forwarding.
			_ = s.p.Signal(syscall.SIGUSR1)
			if got := s.lineOr(t, "sent USR1 after three signals 32"); got != "USR1" {
				t.Fatalf("child reported %q, want USR1", got)
			}
			_ = s.p.Signal(syscall.SIGTERM)
			if rest := strings.TrimSpace(s.rest(t)); rest != "end" {
				t.Errorf("the child also reported %q", rest)
			}
			if e := s.wait(t); e.Code() != 0 {
				t.Errorf("podsup %s, want exit 0", e)
			}
		})
	}
}

// killOrphanedChild SIGKILLs, through a pidfd, podsup run's child pid when
// podsup has ended without it (the bug a test caught): nothing a test
// starts may outlive it. It checks that pid is still that bash script.
func killOrphanedChild(t *testing.T, s *started, pid int) {
	select {
	case <-s.p.Done():
	default:
		return // podsup runs: its own cleanup stops the child
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(b), "echo ready") {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		t.Logf("killed the child %d that podsup left behind", pid)
	}
}

package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/podsup/podsup/internal/rttest/testproc"
	"github.com/podsup/podsup/sandbox/cgroups"
	"golang.org/x/sys/unix"
)

// exerciseReaper starts tracked children with distinct exit codes and a
// helper that leaves `orphans` orphans behind, all at once, and checks
// that no status is lost and no zombie stays. It is shared by the
// subreaper test and the PID-1 test (which runs it inside a new PID
// namespace). It returns a description of the first failure, or "".
func exerciseReaper(tracked, orphans int, orphanCmd *Cmd) string {
	before := Stats().Orphans
	var wg sync.WaitGroup
	type result struct{ want, got int }
	results := make([]result, tracked)
	procs := make([]*Process, 0, tracked)
	if err := func() error {
		op, err := Start(orphanCmd)
		if err != nil {
			return err
		}
		procs = append(procs, op)
		for i := 0; i < tracked; i++ {
			code := i % 256
			i := i
			wg.Add(1)
			p, err := Start(&Cmd{
				Path: "/bin/sh", Args: []string{"sh", "-c", "exit " + strconv.Itoa(code)},
				OnExit: func(e Exit) { results[i] = result{code, e.Code()}; wg.Done() },
			})
			if err != nil {
				return err
			}
			procs = append(procs, p)
		}
		return nil
	}(); err != nil {
		return "start: " + err.Error()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		return "tracked exits still missing after 60s"
	}
	for i, r := range results {
		if r.want != r.got {
			return fmt.Sprintf("child %d: exit code %d, want %d", i, r.got, r.want)
		}
	}
	if e := procs[0].Exit(); e.Code() != 0 {
		return "orphan maker: " + e.String()
	}
	deadline := time.Now().Add(60 * time.Second)
	for Stats().Orphans-before < uint64(orphans) {
		if time.Now().After(deadline) {
			return fmt.Sprintf("reaped %d orphans, want %d", Stats().Orphans-before, orphans)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Every orphan has been reaped, so none can be a zombie now, and no
	// tracked child may be one either.
	if z := testproc.ZombiesOf(os.Getpid()); len(z) > 0 {
		return fmt.Sprintf("%d zombies left: %v", len(z), z)
	}
	if n := Stats().Tracked; n != 0 {
		return fmt.Sprintf("%d tracked processes still registered", n)
	}
	return ""
}

var _ = testproc.Register("orphans", testproc.Orphans)

func TestReaperAsSubreaperLosesNoStatusAndLeavesNoZombie(t *testing.T) {
	if !Stats().Subreaper {
		t.Skip("cannot become a child subreaper: orphans would go to the host's init")
	}
	if msg := exerciseReaper(100, 1000, helperCmd(t, "orphans", "1000")); msg != "" {
		t.Fatal(msg)
	}
}

// pid1Reaper runs inside a new PID and mount namespace as PID 1 and
// repeats the reaper exercise there, with a private /proc.
var _ = testproc.Register("pid1-reaper", func(args []string) int {
	if err := mountPrivateProc(); err != nil {
		fmt.Println("FAIL mount /proc:", err)
		return 1
	}
	if os.Getpid() != 1 {
		fmt.Println("FAIL: pid is", os.Getpid())
		return 1
	}
	exe, _ := os.Executable()
	oc := &Cmd{Path: exe, Args: []string{exe, "1000"}, RunAs: RunAs{Env: testproc.HelperEnv("orphans")}, Stderr: os.Stdout}
	if msg := exerciseReaper(100, 1000, oc); msg != "" {
		fmt.Println("FAIL", msg)
		return 1
	}
	fmt.Println("OK")
	return 0
})

func mountPrivateProc() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	return unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// startInPidNamespace starts helper as PID 1 of a new PID and mount
// namespace and returns it with the read end of its stdout and stderr.
func startInPidNamespace(t *testing.T, helper string) (*Process, *os.File) {
	t.Helper()
	testproc.NeedRoot(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	c := helperCmd(t, helper)
	c.Stdout, c.Stderr = w, w
	c.Cloneflags = unix.CLONE_NEWPID | unix.CLONE_NEWNS
	p, err := Start(c)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return p, r
}

func runInPidNamespace(t *testing.T, helper string) string {
	t.Helper()
	p, r := startInPidNamespace(t, helper)
	var out strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e.Code() != 0 {
		t.Fatalf("%s in a PID namespace: %s\n%s", helper, e, out.String())
	}
	return out.String()
}

func TestReaperAsPID1LosesNoStatusAndLeavesNoZombie(t *testing.T) {
	out := runInPidNamespace(t, "pid1-reaper")
	if !strings.Contains(out, "OK") {
		t.Fatalf("helper said: %s", out)
	}
}

// staleSignal starts a process, lets it be reaped, forces the kernel to
// hand its pid to a new process (ns_last_pid, possible only in our own
// PID namespace) and signals the old handle.
var _ = testproc.Register("stale-pidfd", func(args []string) int {
	if err := mountPrivateProc(); err != nil {
		fmt.Println("FAIL mount /proc:", err)
		return 1
	}
	old, err := Start(&Cmd{Path: "/bin/true"})
	if err != nil {
		fmt.Println("FAIL", err)
		return 1
	}
	<-old.Done()
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(old.Pid()-1)), 0); err != nil {
		fmt.Println("FAIL ns_last_pid:", err)
		return 1
	}
	reused, err := Start(&Cmd{Path: "/bin/sleep", Args: []string{"sleep", "30"}})
	if err != nil {
		fmt.Println("FAIL", err)
		return 1
	}
	if reused.Pid() != old.Pid() {
		fmt.Printf("FAIL: pid not reused (%d vs %d)\n", reused.Pid(), old.Pid())
		return 1
	}
	if err := old.Signal(syscall.SIGKILL); err != ErrProcessDone {
		fmt.Println("FAIL: stale handle signal returned", err)
		return 1
	}
	if err := old.KillTree(syscall.SIGKILL); err != ErrProcessDone {
		fmt.Println("FAIL: stale handle tree kill returned", err)
		return 1
	}
	time.Sleep(50 * time.Millisecond)
	select {
	case <-reused.Done():
		fmt.Println("FAIL: the process that reused the pid was killed")
		return 1
	default:
	}
	_ = reused.Signal(syscall.SIGKILL)
	<-reused.Done()
	fmt.Println("OK")
	return 0
})

func TestStalePidfdCannotSignalReusedPid(t *testing.T) {
	out := runInPidNamespace(t, "stale-pidfd")
	if !strings.Contains(out, "OK") {
		t.Fatalf("helper said: %s", out)
	}
}

// frozenCgroup makes a frozen cgroup2 directory next to the test's own
// cgroup and returns an open fd of it for Cmd.CgroupFD and a function that
// thaws it. A child cloned into it (CLONE_INTO_CGROUP) is frozen on its way
// back to user space, before it reaches execve; syscall.ForkExec (vfork
// semantics: the parent waits for the child's exec) then blocks until the
// cgroup is thawed. That is a real exec that does not finish, the way an
// exec of a binary on a hung network filesystem does not, without FUSE or
// NFS. Cleanup thaws and removes the directory.
func frozenCgroup(t *testing.T) (fd int, thaw func()) {
	t.Helper()
	dir := testCgroupDir(t, "frozen", "to freeze a child before its exec")
	thaw = func() {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.freeze"), []byte("0"), 0); err != nil {
			t.Errorf("thawing %s: %v", dir, err)
		}
	}
	t.Cleanup(thaw) // before testCgroupDir's removal: cleanups run last first
	if err := os.WriteFile(filepath.Join(dir, "cgroup.freeze"), []byte("1"), 0); err != nil {
		t.Skipf("cannot freeze a cgroup2 directory (%v): no way to hold a child before its exec", err)
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	procs := filepath.Join(dir, "cgroup.procs")
	t.Cleanup(func() {
		// Leave no process behind if the test failed half-way.
		b, _ := os.ReadFile(procs)
		for _, s := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(s); err == nil && pid > 1 {
				if pfd, err := unix.PidfdOpen(pid, 0); err == nil {
					_ = unix.PidfdSendSignal(pfd, unix.SIGKILL, nil, 0)
					unix.Close(pfd)
				}
			}
		}
	})
	return int(f.Fd()), thaw
}

// testCgroupDir makes a cgroup2 directory next to the test's own cgroup,
// named with suffix, and removes it after the test once it is empty (its
// processes reaped). It skips the test, saying what it needs the
// directory for (why), where no cgroup2 hierarchy is mounted.
func testCgroupDir(t *testing.T, suffix, why string) string {
	t.Helper()
	testproc.NeedRoot(t)
	l, err := cgroups.Detect()
	if err != nil || l.V2 == nil {
		t.Skipf("needs a cgroup2 hierarchy %s (layout: %v, %v)", why, l, err)
	}
	own, err := l.V2.OwnDir()
	if err != nil {
		t.Skipf("needs this process's own cgroup2 directory %s: %v", why, err)
	}
	dir := filepath.Join(own, "podsup-"+testInstancePrefix()+suffix)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("creating %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if !testproc.Eventually(30*time.Second, func() bool { err := os.Remove(dir); return err == nil || os.IsNotExist(err) }) {
			t.Errorf("removing %s: %v", dir, os.Remove(dir))
		}
	})
	return dir
}

// cgroupHasProcess reports whether the cgroup open as fd has a member.
func cgroupHasProcess(fd int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fd/%d/cgroup.procs", fd))
	return err == nil && len(strings.TrimSpace(string(b))) > 0
}

// An exec that does not finish (here: a child frozen before its execve)
// must stall nothing but its own Start: other spawns and the dispatch of
// other exits go on. Start used to hold the reaper's lock across fork+exec,
// so the reaper could not hand any exit to its owner, and no other Start
// could fork, until the stuck exec ended.
//
// What no Go program can avoid is not tested: syscall.ForkExec forks with
// CLONE_VFORK in a raw syscall that keeps its P (golang/go#11155), so a
// stop-the-world waits for the exec, and the garbage collector's would
// stop this test (and its thaw) with everything else. The collector is off
// for the test; docs/architecture.md says what that means for podsup.
func TestStuckExecStallsNeitherOtherSpawnsNorExits(t *testing.T) {
	gc := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(gc) }) // last: after every thaw
	cgfd, thaw := frozenCgroup(t)
	victim, err := Start(&Cmd{Path: "/bin/sleep", Args: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Signal(syscall.SIGKILL); <-victim.Done() })

	type started struct {
		p   *Process
		err error
	}
	stuck := make(chan started, 1)
	go func() {
		p, err := Start(&Cmd{Path: "/bin/true", UseCgroupFD: true, CgroupFD: cgfd})
		stuck <- started{p, err}
	}()
	t.Cleanup(func() {
		thaw()
		// Bounded: a cleanup that waits forever turns a failure into a
		// hang of the whole package.
		select {
		case s := <-stuck:
			if s.err == nil {
				select {
				case <-s.p.Done():
				case <-time.After(30 * time.Second):
					t.Errorf("the once-stuck process %d did not exit", s.p.Pid())
				}
			}
		case <-time.After(30 * time.Second):
			t.Error("the stuck Start never returned")
		}
	})
	if !testproc.Eventually(30*time.Second, func() bool { return cgroupHasProcess(cgfd) }) {
		t.Fatal("the child never appeared in the frozen cgroup")
	}

	const bound = 20 * time.Second // "promptly" on a loaded machine; a stall lasts until thaw
	other := make(chan started, 1)
	go func() {
		p, err := Start(&Cmd{Path: "/bin/true"})
		other <- started{p, err}
	}()
	select {
	case s := <-other:
		if s.err != nil {
			t.Fatalf("another Start failed: %v", s.err)
		}
		select {
		case <-s.p.Done():
		case <-time.After(bound):
			t.Errorf("the exit of another process was not dispatched within %v while an exec was stuck", bound)
		}
	case <-time.After(bound):
		t.Errorf("another Start did not return within %v while an exec was stuck", bound)
	}
	if err := victim.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-victim.Done():
		if victim.Exit().Signal() != syscall.SIGKILL {
			t.Errorf("victim: %s, want killed by SIGKILL", victim.Exit())
		}
	case <-time.After(bound):
		t.Errorf("the exit of a running process was not dispatched within %v while an exec was stuck", bound)
	}
	select {
	case <-stuck:
		t.Fatal("the frozen child's Start returned before the thaw: nothing was stuck, the test proves nothing")
	default:
	}
	thaw()
	select {
	case s := <-stuck:
		stuck <- s // for the cleanup
		if s.err != nil {
			t.Fatalf("the stuck Start failed after the thaw: %v", s.err)
		}
		select {
		case <-s.p.Done():
			if c := s.p.Exit().Code(); c != 0 {
				t.Errorf("the once-stuck /bin/true: %s", s.p.Exit())
			}
		case <-time.After(bound):
			t.Errorf("the once-stuck process's exit was not dispatched within %v", bound)
		}
	case <-time.After(bound):
		t.Fatalf("the stuck Start did not return within %v of the thaw", bound)
	}
}

// spawnRaces runs as PID 1 of a new PID namespace, where no process but
// its own children can reach its reaper, so the orphan count must stay 0.
// It checks the two races of a spawn that registers its pid after the
// exec: an exit reaped before the pid is registered still reaches its
// owner, and the child of an exec that failed is not an orphan.
var _ = testproc.Register("spawn-races", func(args []string) int {
	if err := mountPrivateProc(); err != nil {
		fmt.Println("FAIL mount /proc:", err)
		return 1
	}
	if msg := exitBeforeRegistration(); msg != "" {
		fmt.Println("FAIL", msg)
		return 1
	}
	if msg := failedExecsAmidExits(200); msg != "" {
		fmt.Println("FAIL", msg)
		return 1
	}
	if n := Stats().Orphans; n != 0 {
		fmt.Println("FAIL: counted", n, "orphans in a PID namespace where no process was orphaned")
		return 1
	}
	fmt.Println("OK")
	return 0
})

// exitBeforeRegistration holds Start between the exec and the
// registration until the reaper has reaped the child (its /proc entry is
// gone), so the exit is one the reaper collected for a pid it did not know.
func exitBeforeRegistration() string {
	reaped := make(chan bool, 1)
	testHookBeforeRegister = func(pid int) {
		reaped <- testproc.Eventually(30*time.Second, func() bool { _, _, ok := testproc.State(pid); return !ok })
	}
	defer func() { testHookBeforeRegister = nil }()
	var calls atomic.Int32
	p, err := Start(&Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "exit 7"}, OnExit: func(Exit) { calls.Add(1) }})
	if err != nil {
		return "start: " + err.Error()
	}
	if !<-reaped {
		return "the child was not reaped within 30s of its exec"
	}
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		return "an exit reaped before its pid was registered never reached its owner"
	}
	if c := p.Exit().Code(); c != 7 || p.Exit().Pid != p.Pid() {
		return fmt.Sprintf("exit reaped before registration: pid %d code %d, want pid %d code 7", p.Exit().Pid, c, p.Pid())
	}
	time.Sleep(100 * time.Millisecond) // a second delivery would come from the reaper by now
	if n := calls.Load(); n != 1 {
		return fmt.Sprintf("OnExit called %d times, want 1", n)
	}
	if n := Stats().Tracked; n != 0 {
		return fmt.Sprintf("%d processes still tracked", n)
	}
	return ""
}

// failedExecsAmidExits starts n commands that cannot be executed while n
// others exit, so the reaper is busy when the failed children exit and
// often collects them before ForkExec's own wait does.
func failedExecsAmidExits(n int) string {
	var wg sync.WaitGroup
	errs := make(chan string, 2*n)
	for i := 0; i < n; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := Start(&Cmd{Path: "/nonexistent/podsup-no-such-command"})
			if !errors.Is(err, ErrCommandNotFound) {
				errs <- fmt.Sprintf("start of a missing command: %v, want ErrCommandNotFound", err)
			}
		}()
		go func() {
			defer wg.Done()
			p, err := Start(&Cmd{Path: "/bin/true"})
			if err != nil {
				errs <- "start: " + err.Error()
				return
			}
			select {
			case <-p.Done():
			case <-time.After(60 * time.Second):
				errs <- "an exit was not delivered within 60s"
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		return e
	}
	if z := testproc.ZombiesOf(os.Getpid()); len(z) > 0 {
		return fmt.Sprintf("%d zombies left: %v", len(z), z)
	}
	return ""
}

func TestSpawnRacesAsPID1(t *testing.T) {
	out := runInPidNamespace(t, "spawn-races")
	if !strings.Contains(out, "OK") {
		t.Fatalf("helper said: %s", out)
	}
}

// The bookkeeping of spawns in flight, on a reaper of its own fed with
// made-up exits: which spawn may own which exit does not depend on the
// kernel, and the races it covers (the reaper collecting a child before
// its spawner registers it, or before ForkExec's own wait for a failed
// child) are too narrow to provoke on demand with real processes.

func fakeExit(pid, code int) Exit {
	return Exit{Pid: pid, Status: unix.WaitStatus(code << 8), Time: time.Now()}
}

func fakeProcess(pid int) *Process {
	return &Process{pid: pid, pgid: pid, pidfd: -1, done: make(chan struct{})}
}

func TestHeldExitReachesTheSpawnThatRegistersItsPid(t *testing.T) {
	r := newReaper()
	s := r.subscribe()
	if p := r.file(fakeExit(4242, 7)); p != nil {
		t.Fatal("an exit of an unknown pid found an owner")
	}
	if n := r.orphans.Load(); n != 0 {
		t.Fatalf("an exit reaped while a spawn is in flight was counted as an orphan (%d)", n)
	}
	p := fakeProcess(4242)
	r.register(s, p)
	if _, ok := r.owners[4242]; ok {
		t.Error("a pid whose exit is known was registered as running")
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the claimed exit was not delivered")
	}
	if c := p.Exit().Code(); c != 7 {
		t.Errorf("delivered exit code %d, want 7", c)
	}
	if n := r.orphans.Load(); n != 0 {
		t.Errorf("%d orphans, want 0", n)
	}
}

func TestFailedExecChildIsNotCountedAsOrphan(t *testing.T) {
	r := newReaper()
	s := r.subscribe()
	r.file(fakeExit(100, goExecFailedStatus)) // the child whose exec failed
	r.file(fakeExit(101, 0))                  // a real orphan, same window
	r.abandon(s)
	if n := r.orphans.Load(); n != 1 {
		t.Errorf("%d orphans, want 1: the failed exec's child is no orphan, the other exit is", n)
	}
	if len(r.held) != 0 || len(r.spawns) != 0 {
		t.Errorf("left %d held exits and %d spawns, want none", len(r.held), len(r.spawns))
	}
}

func TestHeldExitIsAnOrphanOnceNoSpawnInFlightCanOwnIt(t *testing.T) {
	r := newReaper()
	if r.file(fakeExit(3, 0)); r.orphans.Load() != 1 {
		t.Fatal("an unknown exit with no spawn in flight was not counted at once")
	}
	s1 := r.subscribe()
	r.file(fakeExit(5, 1)) // only s1 may own it
	s2 := r.subscribe()
	r.file(fakeExit(6, 0)) // s1 or s2 may own it
	r.register(s1, fakeProcess(7))
	if n := r.orphans.Load(); n != 2 {
		t.Errorf("after the first spawn registered another pid: %d orphans, want 2 (pid 5 is nobody's)", n)
	}
	if _, ok := r.held[6]; !ok {
		t.Error("pid 6's exit, reaped while the second spawn is in flight, was not kept for it")
	}
	r.abandon(s2) // a failed exec, but pid 6 exited 0: not its child
	if n := r.orphans.Load(); n != 3 {
		t.Errorf("after the last spawn ended: %d orphans, want 3", n)
	}
	if len(r.held) != 0 {
		t.Errorf("%d exits still held with no spawn in flight", len(r.held))
	}
	if p := r.file(fakeExit(7, 0)); p == nil || p.pid != 7 {
		t.Error("the registered pid's exit did not find its owner")
	}
}

func TestSpawnDoesNotClaimAnExitFromBeforeItSubscribed(t *testing.T) {
	r := newReaper()
	s1 := r.subscribe()
	r.file(fakeExit(9, 0)) // reaped before s2 subscribed
	s2 := r.subscribe()
	p := fakeProcess(9) // pid 9 reused by s2's child
	r.register(s2, p)
	if r.owners[9] != p {
		t.Error("a spawn claimed an exit reaped before it subscribed")
	}
	r.abandon(s1)
	if n := r.orphans.Load(); n != 1 {
		t.Errorf("%d orphans, want 1", n)
	}
}

// A spawn stuck in exec does not make the reaper keep every exit reaped
// meanwhile: past maxHeld the oldest are counted as orphans.
func TestHeldExitsAreBounded(t *testing.T) {
	r := newReaper()
	s := r.subscribe()
	for pid := 1000; pid < 1000+maxHeld+10; pid++ {
		r.file(fakeExit(pid, 0))
	}
	if len(r.held) != maxHeld {
		t.Errorf("%d exits held, want %d", len(r.held), maxHeld)
	}
	if n := r.orphans.Load(); n != 10 {
		t.Errorf("%d orphans counted while the spawn is in flight, want the 10 oldest", n)
	}
	if _, ok := r.held[1000]; ok {
		t.Error("the oldest exit is still held")
	}
	if _, ok := r.held[1000+maxHeld+9]; !ok {
		t.Error("the newest exit was evicted")
	}
	r.abandon(s)
	if n := r.orphans.Load(); n != uint64(maxHeld+10) {
		t.Errorf("%d orphans after the spawn ended, want %d", n, maxHeld+10)
	}
}

// pid1Adopts runs as PID 1 of a new PID namespace with no child at all,
// says READY and waits for an orphan it never forked to be reaped.
var _ = testproc.Register("pid1-adopts", func(args []string) int {
	if err := mountPrivateProc(); err != nil {
		fmt.Println("FAIL mount /proc:", err)
		return 1
	}
	before := Stats().Orphans // installs the reaper, which finds no child
	fmt.Println("READY")
	deadline := time.Now().Add(30 * time.Second)
	for Stats().Orphans == before {
		if time.Now().After(deadline) {
			fmt.Println("FAIL: the adopted orphan was not reaped within 30 s")
			return 1
		}
		time.Sleep(20 * time.Millisecond)
	}
	if z := testproc.ZombiesOf(1); len(z) > 0 {
		fmt.Printf("FAIL: zombies left: %v\n", z)
		return 1
	}
	fmt.Println("OK")
	return 0
})

func TestReaperAsPID1ReapsAnOrphanItGotWhileItHadNoChild(t *testing.T) {
	// A process that entered the namespace from outside (nsenter, as
	// `docker exec` does) leaves a child behind when it exits; that child
	// goes to PID 1, which then had no child to wait for. Only SIGCHLD
	// can tell it (installReaper).
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skip("nsenter (util-linux) is not installed: it enters the namespace from outside")
	}
	p, r := startInPidNamespace(t, "pid1-adopts")
	defer p.Signal(syscall.SIGKILL) //nolint:errcheck // gone already if it passed
	lines := bufio.NewScanner(r)
	if !lines.Scan() || lines.Text() != "READY" {
		t.Fatalf("helper said %q", lines.Text())
	}
	time.Sleep(100 * time.Millisecond) // its reaper reaches "no child" and waits
	in, err := Start(&Cmd{Path: nsenter, Args: []string{"nsenter", "-t", strconv.Itoa(p.Pid()), "-p", "--", "/bin/sh", "-c", "/bin/sleep 0.3 & exit 0"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if e, err := in.Wait(ctx); err != nil || e.Code() != 0 {
		t.Fatalf("nsenter: %v %v", e, err)
	}
	var out strings.Builder
	for lines.Scan() {
		out.WriteString(lines.Text() + "\n")
	}
	e, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e.Code() != 0 || !strings.Contains(out.String(), "OK") {
		t.Fatalf("PID 1 helper: %s\n%s", e, out.String())
	}
}

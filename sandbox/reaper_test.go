package sandbox

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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
	if z := zombiesOf(os.Getpid()); len(z) > 0 {
		return fmt.Sprintf("%d zombies left: %v", len(z), z)
	}
	if n := Stats().Tracked; n != 0 {
		return fmt.Sprintf("%d tracked processes still registered", n)
	}
	return ""
}

// orphanMaker forks n children that each exit after a short sleep, then
// exits without waiting: they become orphans of the nearest subreaper.
var _ = registerHelper("orphans", func(args []string) int {
	n, _ := strconv.Atoi(args[0])
	for i := 0; i < n; i++ {
		if _, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "0.2"}, &syscall.ProcAttr{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
})

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
var _ = registerHelper("pid1-reaper", func(args []string) int {
	if err := mountPrivateProc(); err != nil {
		fmt.Println("FAIL mount /proc:", err)
		return 1
	}
	if os.Getpid() != 1 {
		fmt.Println("FAIL: pid is", os.Getpid())
		return 1
	}
	exe, _ := os.Executable()
	oc := &Cmd{Path: exe, Args: []string{exe, "1000"}, Env: helperEnv("orphans"), Stderr: os.Stdout}
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

func runInPidNamespace(t *testing.T, helper string) string {
	t.Helper()
	needRoot(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := helperCmd(t, helper)
	c.Stdout, c.Stderr = w, w
	c.Cloneflags = unix.CLONE_NEWPID | unix.CLONE_NEWNS
	p, err := Start(c)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
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
var _ = registerHelper("stale-pidfd", func(args []string) int {
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

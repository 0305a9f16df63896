package proc

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A child forked on our behalf that exits, and is reaped, before Adopt
// registers it still has its exit delivered: the reaper held it.
func TestAdoptDeliversAnExitBeforeRegistration(t *testing.T) {
	got := make(chan Exit, 1)
	orphans := Stats().Orphans
	p, err := Adopt(Adoption{
		Fork: func() (int, int, error) {
			pidfd := -1
			pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", "exit 5"}, &syscall.ProcAttr{
				Sys: &syscall.SysProcAttr{PidFD: &pidfd},
			})
			if err != nil {
				return 0, -1, err
			}
			// Wake a reaper that had no child to wait for, and wait
			// until it has collected this one: signal 0 then fails.
			select {
			case getReaper().kick <- syscall.SIGCHLD:
			default:
			}
			deadline := time.Now().Add(10 * time.Second)
			for unix.PidfdSendSignal(pidfd, 0, nil, 0) == nil && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			return pid, pidfd, nil
		},
		OnExit: func(e Exit) { got <- e },
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-got:
		if e.Pid != p.Pid() || e.Code() != 5 {
			t.Errorf("exit %+v (code %d), want pid %d code 5", e, e.Code(), p.Pid())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit delivered for a child reaped before its adoption")
	}
	if _, err := p.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if Stats().Orphans != orphans {
		t.Errorf("the adopted child's exit was counted as an orphan")
	}
}

// A fork that fails adopts nothing and leaves the reaper's spawn ended.
func TestAdoptFailedFork(t *testing.T) {
	boom := errors.New("no fork")
	if _, err := Adopt(Adoption{Fork: func() (int, int, error) { return 0, -1, boom }}); !errors.Is(err, boom) {
		t.Fatalf("Adopt: %v, want the fork's error", err)
	}
	r := getReaper()
	r.mu.Lock()
	n := len(r.spawns)
	r.mu.Unlock()
	if n != 0 {
		t.Errorf("%d spawns in flight after a failed adoption", n)
	}
}

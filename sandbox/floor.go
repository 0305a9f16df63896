package sandbox

import (
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrReaperRunning is returned by ForkExecFloor in a process whose reaper
// has started: its wait4(-1) would race the floor's wait4(pid).
var ErrReaperRunning = errors.New("the reaper runs in this process: the fork+exec floor must run in a process of its own")

// ForkExecFloor starts argv[0] with a bare syscall.ForkExec and waits for
// it with wait4(pid), again and again for d, and returns how many it ran.
// It is the lower bound of what any Go supervisor's restart can cost (no
// reaper hand-off, pidfd, process group or bookkeeping), for benchmarks
// that set podsup beside it. Waiting is package sandbox's alone (it owns
// the one reaper), so the floor lives here, and it refuses to run once the
// reaper has started in this process.
func ForkExecFloor(argv []string, d time.Duration) (int, error) {
	if theReaper != nil {
		return 0, ErrReaperRunning
	}
	attr := &syscall.ProcAttr{Files: []uintptr{0, 1, 2}}
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); n++ {
		pid, err := syscall.ForkExec(argv[0], argv, attr)
		if err != nil {
			return n, err
		}
		var ws unix.WaitStatus
		for {
			if _, err = unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
				break
			}
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

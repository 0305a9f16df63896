package proc

import (
	"errors"
	"fmt"
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
// that set podsup beside it. Waiting is package proc's alone (it owns
// the one reaper), so the floor lives here, and it refuses to run once the
// reaper has started in this process.
func ForkExecFloor(argv []string, d time.Duration) (int, error) {
	return ForkExecFloorAs(argv, d, FloorSpawn{})
}

// FloorSpawn is what ForkExecFloorAs gives each child beyond a bare
// fork+exec: the zero value is ForkExecFloor's bare spawn.
type FloorSpawn struct {
	// LikeStart gives each child what Start gives every process: a
	// process group of its own and a pidfd, closed once it is reaped.
	LikeStart bool
	// CgroupDir, when not "", is a cgroup2 directory each child is placed
	// in at fork (CLONE_INTO_CGROUP), as a process with a cgroup of its
	// own is. The caller makes it and removes it, as for StopFloor.
	CgroupDir string
	// Env is each child's environment; nil gives it none.
	Env []string
}

// ForkExecFloorAs is ForkExecFloor with each child spawned as how says:
// with Start's process group, pidfd and cgroup placement it is the floor
// of a restart of podsup's own, which must have all three (race-free
// signals, whole-tree kills), without any of its bookkeeping.
func ForkExecFloorAs(argv []string, d time.Duration, how FloorSpawn) (int, error) {
	if theReaper != nil {
		return 0, ErrReaperRunning
	}
	pidfd := -1
	sys := &syscall.SysProcAttr{}
	if how.CgroupDir != "" {
		fd, err := unix.Open(how.CgroupDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, fmt.Errorf("opening cgroup %s: %w", how.CgroupDir, err)
		}
		defer unix.Close(fd) // an O_PATH fd: nothing to flush
		sys.UseCgroupFD, sys.CgroupFD = true, fd
	}
	if how.LikeStart {
		sys.Setpgid, sys.PidFD = true, &pidfd
	}
	attr := &syscall.ProcAttr{Env: how.Env, Files: []uintptr{0, 1, 2}, Sys: sys}
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); n++ {
		pid, err := syscall.ForkExec(argv[0], argv, attr)
		if err != nil {
			return n, err
		}
		if pidfd >= 0 {
			_ = unix.Close(pidfd) // a pidfd: nothing to flush
			pidfd = -1
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

// StopFloorResult is what StopFloor measured.
type StopFloorResult struct {
	// Started is how long starting the n processes took.
	Started time.Duration
	// Signalled is from the first SIGTERM to the last one sent.
	Signalled time.Duration
	// Reaped is from the first SIGTERM to the last exit reaped.
	Reaped time.Duration
	// Removed is from the first SIGTERM to the last cgroup removed (equal
	// to Reaped without cgroups).
	Removed time.Duration
	// SignallerCPU is this process's CPU time from the first SIGTERM to
	// the last one sent: what signalling costs, apart from the exits.
	SignallerCPU time.Duration
}

// StopFloor starts n copies of argv (which must run until signalled) with
// environment env, each in a cgroup2 directory of its own under cgroupDir
// when that is not "", then sends each SIGTERM through a pidfd, reaps them
// all with wait4 and removes the cgroups. It is the least any supervisor
// does to stop n processes (no events, status, reaper hand-off or tree
// check), for benchmarks that set podsup's stop beside it. Those must give
// env as podsup gives its processes theirs: a process's own start and exit
// are part of both figures, and they depend on it (with LANG set, a
// coreutils sleep loads the locale and costs 0.2 ms more CPU).
// Like ForkExecFloor it waits itself, so it refuses to run once the
// reaper has started here.
func StopFloor(argv, env []string, n int, cgroupDir string) (StopFloorResult, error) {
	var res StopFloorResult
	if theReaper != nil {
		return res, ErrReaperRunning
	}
	pids := make([]int, 0, n)
	var dirs []string
	cleanup := func() {
		for _, pid := range pids {
			if pid > 1 {
				if fd, err := unix.PidfdOpen(pid, 0); err == nil {
					_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
					_ = unix.Close(fd)
				}
			}
		}
		for range pids {
			var ws unix.WaitStatus
			if _, err := unix.Wait4(-1, &ws, 0, nil); err == unix.ECHILD {
				break
			}
		}
		for _, d := range dirs {
			_ = unix.Rmdir(d)
		}
	}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		sys := &syscall.SysProcAttr{Setpgid: true}
		if cgroupDir != "" {
			d := fmt.Sprintf("%s/%d", cgroupDir, i)
			if err := unix.Mkdir(d, 0o755); err != nil {
				cleanup()
				return res, fmt.Errorf("creating cgroup %s: %w", d, err)
			}
			dirs = append(dirs, d)
			fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				cleanup()
				return res, err
			}
			sys.UseCgroupFD, sys.CgroupFD = true, fd
		}
		pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{Env: env, Sys: sys})
		if sys.UseCgroupFD {
			_ = unix.Close(sys.CgroupFD) // an O_PATH fd: nothing to flush
		}
		if err != nil {
			cleanup()
			return res, err
		}
		pids = append(pids, pid)
	}
	res.Started = time.Since(t0)
	time.Sleep(time.Second) // let the last ones reach their exec'd program
	var ru0, ru1 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru0)
	t1 := time.Now()
	for i, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			pids = pids[i:]
			cleanup()
			return res, err
		}
		_ = unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0)
		_ = unix.Close(fd)
	}
	res.Signalled = time.Since(t1)
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru1)
	res.SignallerCPU = time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	for range pids {
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(-1, &ws, 0, nil)
			if err != unix.EINTR {
				break
			}
		}
	}
	pids = nil
	res.Reaped = time.Since(t1)
	for _, d := range dirs {
		if err := unix.Rmdir(d); err != nil {
			return res, fmt.Errorf("removing cgroup %s: %w", d, err)
		}
	}
	res.Removed = time.Since(t1)
	return res, nil
}

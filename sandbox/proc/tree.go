package proc

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// TreeKiller reaches every process an instance left behind (X10). The
// process group is the fallback; a cgroup is the way that also catches a
// double-forked setsid daemon.
type TreeKiller interface {
	KillTree(sig syscall.Signal) error
}

// processGroup kills the group the process leads (Start puts every process
// in a group of its own).
type processGroup struct{ p *Process }

func (g processGroup) KillTree(sig syscall.Signal) error {
	// While the leader is alive (or a zombie not yet reaped) a pidfd names
	// it exactly, so its group is reached without trusting a number.
	err := g.p.WithPidfd(func(pidfd int) error { return signalPidfd(pidfd, sig, pidfdSignalProcessGroup) })
	if err != ErrProcessDone && err != unix.EINVAL {
		return err
	}
	// EINVAL: a kernel older than 6.9; fall through to kill(2).
	// The leader has been reaped. While members of its group remain, the
	// kernel keeps the number in use, so no new process can have it. A live
	// process with pid == pgid therefore means the group is empty and the
	// number was reused: that group is not ours. (The remaining window, a
	// reuse between this check and kill, needs a pid wrap-around within
	// microseconds; a cgroup Tree has none, which is why sandboxes use one.)
	if fd, err := unix.PidfdOpen(g.p.pgid, 0); err == nil {
		_ = unix.Close(fd)
		return ErrProcessDone
	}
	return killProcessGroup(g.p.pgid, sig)
}

package proc

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrRefusedTarget is returned instead of signalling a pid or process group
// that would hit more than the one intended process tree: pid <= 0 reaches
// kill(2) as "every process you may signal" (-1) or "my own group" (0).
var ErrRefusedTarget = errors.New("refused to signal: target is not a single process or process group")

// ErrProcessDone is returned when signalling a process whose exit is known.
var ErrProcessDone = errors.New("process already finished")

// pidfdSignalProcessGroup is PIDFD_SIGNAL_PROCESS_GROUP (Linux 6.9): signal
// the process group the pidfd's process leads. Not yet in x/sys.
const pidfdSignalProcessGroup = 1 << 2

// signalPidfd is the one way podsup signals a single live process: through
// its pidfd, which refers to that process and never to a later reuse of its
// pid (a stale pidfd gets ESRCH).
func signalPidfd(pidfd int, sig syscall.Signal, flags int) error {
	if pidfd < 0 {
		return ErrProcessDone
	}
	err := unix.PidfdSendSignal(pidfd, sig, nil, flags)
	if err == unix.ESRCH {
		return ErrProcessDone
	}
	return err
}

// killProcessGroup is the one guarded place where podsup turns a number
// into a signal through kill(2). It is used only for a process group whose
// leader has already been reaped (so no pidfd can reach the group). It
// refuses pgid <= 1 — kill(-1) signals every process we may signal, kill(0)
// our own group — and podsup's own group.
func killProcessGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 || pgid == unix.Getpgrp() {
		return fmt.Errorf("process group %d: %w", pgid, ErrRefusedTarget)
	}
	err := unix.Kill(-pgid, sig)
	if err == unix.ESRCH {
		return ErrProcessDone
	}
	return err
}

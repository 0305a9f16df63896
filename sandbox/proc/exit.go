package proc

import (
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Exit is how a process ended, as wait4 reported it.
type Exit struct {
	Pid    int
	Status unix.WaitStatus
	Rusage unix.Rusage
	// Time is when the reaper collected the exit; it carries a monotonic
	// reading and is comparable with clock.Real readings.
	Time time.Time
}

// Code is the shell's view of the exit: the exit status, or 128+N when
// signal N killed the process.
func (e Exit) Code() int {
	switch {
	case e.Status.Exited():
		return e.Status.ExitStatus()
	case e.Status.Signaled():
		return 128 + int(e.Status.Signal())
	default:
		return 255
	}
}

// Signal is the signal that killed the process, or 0 if it exited.
func (e Exit) Signal() syscall.Signal {
	if e.Status.Signaled() {
		return syscall.Signal(e.Status.Signal())
	}
	return 0
}

// CoreDumped reports whether the kernel wrote a core dump.
func (e Exit) CoreDumped() bool { return e.Status.Signaled() && e.Status.CoreDump() }

func (e Exit) String() string {
	if sig := e.Signal(); sig != 0 {
		s := fmt.Sprintf("killed by signal %d (%s)", int(sig), unix.SignalName(sig))
		if e.CoreDumped() {
			s += ", core dumped"
		}
		return s
	}
	return fmt.Sprintf("exit status %d", e.Code())
}

package pid1

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sigRTMax is the highest signal number on Linux (SIGRTMAX).
const sigRTMax = 64

// Forwarded is every signal Run passes on, in the order of their numbers:
// 1–64 except
//   - SIGCHLD: it is about podsup's own children; the reaper consumes it;
//   - SIGKILL, SIGSTOP: cannot be caught;
//   - SIGTTIN, SIGTTOU: terminal job control of podsup itself (tini too);
//   - 32 and 33: the C library's and the Go runtime's own signals
//     (glibc's SIGCANCEL and SIGSETXID, Go's per-thread system calls);
//     glibc hands programs 34 as SIGRTMIN, so no application uses them.
//
// SIGURG and SIGPROF are forwarded only when they come from outside podsup:
// the Go runtime sends SIGURG to its own threads to preempt goroutines, and
// those are told apart by their sender (the kernel's si_pid), never passed
// on.
var Forwarded = func() []os.Signal {
	var sigs []os.Signal
	for s := syscall.Signal(1); s <= sigRTMax; s++ {
		if isForwarded(s) {
			sigs = append(sigs, s)
		}
	}
	return sigs
}()

func isForwarded(s syscall.Signal) bool {
	switch s {
	case syscall.SIGCHLD, syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGTTIN, syscall.SIGTTOU, 32, 33:
		return false
	}
	return s >= 1 && s <= sigRTMax
}

// isSynchronous reports the signals the kernel raises on the faulting
// thread itself (a bad address, an illegal instruction, a seccomp trap).
// They are never blocked on the signal thread: blocked, a fault there would
// kill podsup outright instead of reaching the Go runtime's handler. When
// sent from outside they are still forwarded, through os/signal.
func isSynchronous(s syscall.Signal) bool {
	switch s {
	case syscall.SIGILL, syscall.SIGTRAP, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGSYS, syscall.SIGSTKFLT:
		return true
	}
	return false
}

// waitedSignals is what the signal thread takes with sigtimedwait: every
// forwarded signal but the synchronous ones.
func waitedSignals() sigset {
	var set sigset
	for _, s := range Forwarded {
		if sig := s.(syscall.Signal); !isSynchronous(sig) {
			set.add(sig)
		}
	}
	return set
}

// goUnblocked are the forwarded signals the Go runtime unblocks on every
// thread it starts, whose Go handlers pass them to os/signal (they are in
// notifiedSignals). The signal thread leaves them unblocked too: it still
// takes them with sigtimedwait while it waits, and os/signal catches one
// that comes while it is busy, as on any other thread. Blocked there, each
// of them cost a thread wake-up: sigtimedwait puts the thread's mask back
// while the signal it woke for is still pending for the process, and the
// kernel then wakes another thread that does not block it
// (retarget_shared_pending), which finds nothing and sleeps again; on a
// machine with few cores that held up the child's own wake-up
// (docs/benchmarks.md, S5).
var goUnblocked = sigsetOf(syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGABRT)

// notifiedSignals is the safety net: the forwarded signals os/signal can
// deliver. The Go runtime unblocks SIGHUP, SIGINT, SIGTERM, SIGQUIT,
// SIGABRT and the synchronous signals on every thread it starts, so while
// the signal thread is busy forwarding, one of those can land on another
// thread; os/signal then hands it over and it is forwarded all the same.
// SIGURG is in it only when the runtime sends none of its own (see
// Prepare): otherwise its preemption signals would be indistinguishable
// there. Never in it: SIGPROF (the runtime's profiler handler keeps it)
// and 34 (no Go handler: its disposition is set aside in ignoreLoose).
func notifiedSignals() []os.Signal {
	var sigs []os.Signal
	for _, s := range Forwarded {
		switch s.(syscall.Signal) {
		case syscall.SIGURG:
			if runtimeSendsSIGURG {
				continue
			}
		case syscall.SIGPROF, 34:
			continue
		}
		sigs = append(sigs, s)
	}
	return sigs
}

// The kernel's constants x/sys does not spell.
const (
	siTKILL = -6 // si_code of tgkill(2)
	sigDFL  = 0  // SIG_DFL
	sigIGN  = 1  // SIG_IGN
)

// sigaction is the kernel's struct for rt_sigaction(2) on 64-bit Linux.
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// sigset is the kernel's signal set (64 signals, one bit each).
type sigset uint64

func (s *sigset) add(sig syscall.Signal) { *s |= 1 << (uint(sig) - 1) }

func (s sigset) has(sig syscall.Signal) bool { return s&(1<<(uint(sig)-1)) != 0 }

// threadMask sets how the calling thread's signal mask changes (SIG_BLOCK,
// SIG_UNBLOCK, SIG_SETMASK) and returns the previous mask.
func threadMask(how int, set sigset) (sigset, error) {
	var old sigset
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, uintptr(how),
		uintptr(unsafe.Pointer(&set)), uintptr(unsafe.Pointer(&old)), 8, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return old, nil
}

// siginfo is the kernel's siginfo_t (128 bytes), read as far as signals
// sent with kill(2), tgkill(2) or pidfd_send_signal(2) fill it. Its union
// of per-signal fields is aligned as a pointer: si_pid is at offset 16 on
// 64-bit systems and 12 on 32-bit ones (ARMv7 devices among them).
type siginfo struct {
	Signo int32
	Errno int32
	Code  int32
	_     [siginfoPad]byte
	Pid   int32 // the sender, as this process's PID namespace sees it (0 from an ancestor namespace)
	UID   uint32
	_     [siginfoSize - 12 - siginfoPad - 8]byte
}

const (
	siginfoSize = 128
	siginfoPad  = unsafe.Sizeof(uintptr(0)) - 4 // to the union's pointer alignment
)

// sigpoll takes one pending signal of set without waiting; ok is false when
// none is pending.
func sigpoll(set sigset, info *siginfo) (sig syscall.Signal, ok bool) {
	var zero unix.Timespec
	r, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGTIMEDWAIT,
		uintptr(unsafe.Pointer(&set)), uintptr(unsafe.Pointer(info)), uintptr(unsafe.Pointer(&zero)), 8, 0, 0)
	if errno != 0 {
		return 0, false
	}
	return syscall.Signal(r), true
}

// selfSent reports a signal of podsup's own, never forwarded: a SIGURG
// podsup sent itself, the Go runtime's preemption requests (tgkill to one
// of its threads) and Run's own wake-up. Seen from podsup's own PID
// namespace, its pid is also the sender's. The other signals podsup sends
// itself are the ones redirect.go's handler re-sends to the signal thread:
// signals from outside, forwarded.
func selfSent(sig syscall.Signal, info *siginfo) bool {
	return sig == syscall.SIGURG && info.Code == siTKILL && int(info.Pid) == unix.Getpid()
}

// ignoreIfDefault sets sig's disposition to SIG_IGN if it is SIG_DFL and
// reports whether it did. Signal 34 has no Go handler (the runtime leaves
// it to a C library that may want it) and is unblocked on every Go thread:
// its default action would end podsup whenever it landed on a thread other
// than the signal thread. Ignored, it cannot. Since the signal thread is
// the thread group leader and blocks it, the kernel still queues it
// (a signal blocked by the task it is sent to is never discarded on
// arrival) and hands it to the signal thread's sigtimedwait; only one that
// arrives while that thread is busy forwarding may be taken, and dropped,
// by another thread. Children inherit ignored dispositions: see loose.go
// for how Run's child gets them back at the default.
func ignoreIfDefault(sig syscall.Signal) bool {
	var old sigaction
	if rtSigaction(sig, nil, &old) != nil || old.handler != sigDFL {
		return false // unreadable, or the C library's (musl's SIGSYNCCALL under cgo): leave it be
	}
	return rtSigaction(sig, &sigaction{handler: sigIGN}, nil) == nil
}

func sigsetOf(sigs ...syscall.Signal) sigset {
	var set sigset
	for _, s := range sigs {
		set.add(s)
	}
	return set
}

// restoreDefault sets sig's disposition back to SIG_DFL.
func restoreDefault(sig syscall.Signal) {
	_ = rtSigaction(sig, &sigaction{handler: sigDFL}, nil)
}

// rtSigaction is rt_sigaction(2) with the kernel's struct.
func rtSigaction(sig syscall.Signal, act, old *sigaction) error {
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

//go:build (amd64 || arm64) && !podsup_portable

package pid1

import (
	_ "unsafe" // go:linkname
)

// hasSigwaitForward reports whether this architecture has
// sigwaitForwardRaw.
const hasSigwaitForward = true

// sigwaitForwardRaw is sigwaitForward's two system calls, in assembly: no
// Go code may run between them (see sigwaitForward).
func sigwaitForwardRaw(set *sigset, info *siginfo, fast sigset, pidfd int) (sig, errno uintptr, forwarded bool)

//go:linkname entersyscall runtime.entersyscall
func entersyscall()

//go:linkname exitsyscall runtime.exitsyscall
func exitsyscall()

// sigwaitForward is sigwait that also forwards a signal of fast to the
// child's pidfd the moment it is taken, before this thread goes back to
// the Go scheduler. Returning from a blocking system call, a goroutine
// first needs a P again; the one it left was handed to an idle list while
// it waited, and taking one from there also wakes the runtime's monitor
// thread. On two cores that cost a forwarded SIGTERM about 30 µs before
// its pidfd_send_signal (and the woken thread then competed with the
// child for a core), where tini's C loop calls kill(2) 6 µs after its
// sigtimedwait returns (docs/benchmarks.md, S5). Here both calls run
// inside one system-call section, as syscall.Syscall6 runs its one call:
// entered and left through the runtime's own entersyscall and
// exitsyscall, which the runtime keeps for callers outside it
// (go.dev/issue/67401), with nothing but assembly in between. Not
// instrumented by the race detector: it would need the P this thread does
// not hold in that section.
//
//go:nosplit
//go:norace
func sigwaitForward(set *sigset, info *siginfo, fast sigset, pidfd int) (sig, errno uintptr, forwarded bool) {
	entersyscall()
	sig, errno, forwarded = sigwaitForwardRaw(set, info, fast, pidfd)
	exitsyscall()
	return
}

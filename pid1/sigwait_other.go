//go:build (!amd64 && !arm64) || podsup_portable

package pid1

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hasSigwaitForward reports whether this architecture has
// sigwaitForwardRaw; without it the signal thread forwards in Go, after
// the wait.
const hasSigwaitForward = false

// sigwaitForward takes a signal as sigwait does and forwards nothing:
// forwarded is always false, the caller forwards.
func sigwaitForward(set *sigset, info *siginfo, _ sigset, _ int) (sig, errno uintptr, forwarded bool) {
	r, _, e := unix.Syscall6(unix.SYS_RT_SIGTIMEDWAIT, uintptr(unsafe.Pointer(set)), uintptr(unsafe.Pointer(info)), 0, 8, 0, 0)
	return r, uintptr(e), false
}

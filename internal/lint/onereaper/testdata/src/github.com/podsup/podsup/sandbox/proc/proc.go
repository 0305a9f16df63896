// Package proc stands for podsup's package of process primitives: it holds
// the one reaper, so it alone may wait.
package proc

import "syscall"

func reap() {
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
}

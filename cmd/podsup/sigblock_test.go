package main

import (
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

func blockSignalsAndExecPodsup(args []string) {
	runtime.LockOSThread()
	var set unix.Sigset_t
	for _, s := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGHUP, syscall.SIGTERM} {
		set.Val[(s-1)/64] |= 1 << ((uint(s) - 1) % 64)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
		return
	}
	exe, _ := os.Executable()
	_ = syscall.Exec(exe, append([]string{"podsup"}, args...), append(cleanEnv(), asPodsupEnv+"=1"))
}

package main

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// reexecMarker keeps resetInheritedSignalState from looping.
const reexecMarker = "PODSUP_SIGNAL_STATE_RESET"

// resetInheritedSignalState makes sure children start with an empty signal
// mask. Go restores the mask podsup *started with* in every child it forks
// and offers no hook to clear it, so when podsup inherits blocked signals
// (some parents block signals before exec) it re-executes itself once with
// the mask cleared. Ignored dispositions need no such step: podsup catches
// every signal it cares about, and Go resets caught ones to the default in
// children.
func resetInheritedSignalState() {
	if os.Getenv(reexecMarker) != "" {
		os.Unsetenv(reexecMarker)
		return
	}
	if blockedSignals() == 0 {
		return
	}
	runtime.LockOSThread() // the mask is per thread; exec from this one
	var empty unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &empty, nil); err != nil {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	// On failure keep running with the inherited mask rather than not at all.
	_ = syscall.Exec(exe, os.Args, append(os.Environ(), reexecMarker+"=1"))
}

// blockedSignals reads this thread's SigBlk from /proc.
func blockedSignals() uint64 {
	f, err := os.Open("/proc/thread-self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "SigBlk:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return n
		}
	}
	return 0
}

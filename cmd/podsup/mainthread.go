package main

import (
	"os"
	"runtime"
)

// The main goroutine starts locked to the main thread (runtime.main runs
// init functions there), and this keeps it so: `podsup run` makes it the
// signal thread, and the kernel offers every signal sent to podsup to the
// main thread first (package pid1). Other commands give it back at once.
func init() { runtime.LockOSThread() }

// releaseMainThread unlocks the main goroutine unless the command is
// `podsup run`.
func releaseMainThread() {
	if len(os.Args) > 1 && os.Args[1] == "run" {
		return
	}
	runtime.UnlockOSThread()
}

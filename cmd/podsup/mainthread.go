package main

import (
	"runtime"

	"github.com/spf13/cobra"
)

// The main goroutine starts locked to the main thread (runtime.main runs
// init functions there), and this keeps it so: `podsup run` makes it the
// signal thread, and the kernel offers every signal sent to podsup to the
// main thread first (package pid1). Every other command gives it back as
// soon as cobra knows which command runs (releaseMainThread).
func init() { runtime.LockOSThread() }

// releaseMainThread is the root command's PersistentPreRun: it unlocks the
// main goroutine unless the command is `podsup run`, wherever `run` stands
// among the global flags.
func releaseMainThread(cmd *cobra.Command, _ []string) {
	if cmd.Name() == "run" && cmd.Parent() != nil && !cmd.Parent().HasParent() {
		return
	}
	runtime.UnlockOSThread()
}

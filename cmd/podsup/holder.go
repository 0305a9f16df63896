package main

import (
	"os"

	"github.com/podsup/podsup/sandbox"
)

// runHolderIfAsked turns this process into a sandbox holder when podsup
// re-executed itself as one ("/proc/self/exe __podsup_init"): before any
// flag parsing or signal setup, since the holder does its own.
func runHolderIfAsked() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.HolderArg {
		os.Exit(sandbox.HolderMain())
	}
}

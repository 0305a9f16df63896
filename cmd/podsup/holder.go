package main

import "github.com/podsup/podsup/stack"

// runHolderIfAsked turns this process into a sandbox holder when podsup
// re-executed itself as one ("/proc/self/exe __podsup_init"): before any
// flag parsing or signal setup, since the holder does its own.
func runHolderIfAsked() { stack.HolderMain() }

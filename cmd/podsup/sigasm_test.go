//go:build (amd64 || arm64) && !podsup_portable

package main

// signalAssembly: pid1's assembly is built (sigwait_asm.go,
// redirect_asm.go), so a SIGPROF or signal 34 sent to any of podsup run's
// threads is redirected to its signal thread and forwarded.
const signalAssembly = true

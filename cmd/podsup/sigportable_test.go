//go:build (!amd64 && !arm64) || podsup_portable

package main

// signalAssembly: pid1's portable path is built (another architecture, or
// -tags podsup_portable): SIGPROF and 34 are forwarded only when they
// reach its signal thread (pid1/redirect_other.go).
const signalAssembly = false

//go:build (!amd64 && !arm64) || podsup_portable

package pid1

// redirectHandlerPC is 0 where no handler is written for the architecture:
// SIGPROF and 34 are then forwarded only when they reach the signal thread
// (see redirect.go), and 34 is ignored elsewhere (ignoreIfDefault).
func redirectHandlerPC() uintptr { return 0 }

//go:build (amd64 || arm64) && !podsup_portable

package pid1

// redirectHandler is the signal handler of redirect.go, in assembly: it
// runs on whatever thread the kernel picked, on the signal stack, and must
// not enter Go. Go code never calls it: its address is taken in
// assembly (redirectHandlerPC), which staticcheck cannot see.
//
//lint:ignore U1000 called by the kernel, through redirectHandlerPC
func redirectHandler()

// redirectHandlerPC is redirectHandler's entry address, for rt_sigaction.
func redirectHandlerPC() uintptr

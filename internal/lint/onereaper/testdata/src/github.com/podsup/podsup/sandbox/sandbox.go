// Package sandbox stands for podsup's runtime, the layer above the
// primitives: it starts processes through proc and must not wait itself.
package sandbox

import "os/exec"

func run() {
	_ = exec.Command("true").Run() // want `Run waits for a process outside package proc`
}

// Command podsup is a process supervisor: `podsup run -- CMD` is a PID-1
// wrapper like tini; `podsup up -f podsup.hcl` supervises groups of
// processes the way kubelet runs a pod's containers. The logic lives in the
// library packages; this command parses flags and wires them together.
package main

import (
	"fmt"
	"os"

	"github.com/podsup/podsup/internal/rootless"
	"github.com/podsup/podsup/internal/termsafe"
	"github.com/podsup/podsup/stack"
)

func main() {
	// podsup re-executed as a sandbox holder or the socket-activation
	// shim (package stack): before any flag parsing or signal setup,
	// since they do their own.
	stack.ReexecMain()
	if len(os.Args) > 1 && os.Args[1] == rootless.ChildArg {
		os.Exit(rootless.ChildMain()) // podsup up on its way into a user namespace
	}
	rootless.TakeMarker()
	resetInheritedSignalState()
	root := newRootCmd()
	if err := withCommandHint(root.Execute()); err != nil {
		var ee exitError
		if asExit(err, &ee) {
			os.Exit(ee.code)
		}
		// Quoted for the terminal: an error may echo a server's or a
		// file's words (internal/termsafe).
		fmt.Fprintln(termsafe.NewWriter(os.Stderr, termsafe.KeepTab), "podsup:", err)
		os.Exit(2)
	}
}

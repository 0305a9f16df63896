// Command podsup is a process supervisor: `podsup run -- CMD` is a PID-1
// wrapper like tini; `podsup up -f podsup.hcl` supervises groups of
// processes the way kubelet runs a pod's containers. The logic lives in the
// library packages; this command parses flags and wires them together.
package main

import (
	"fmt"
	"github.com/podsup/podsup/notify"
	"os"
)

func main() {
	runHolderIfAsked() // a sandbox holder is podsup re-executed; see package sandbox
	if len(os.Args) > 1 && os.Args[1] == notify.ListenPIDCommand {
		// The socket-activation shim: sets LISTEN_PID, execs the process.
		os.Exit(notify.ListenPIDMain(os.Args[2:]))
	}
	resetInheritedSignalState()
	root := newRootCmd()
	if err := root.Execute(); err != nil {
		var ee exitError
		if asExit(err, &ee) {
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "podsup:", err)
		os.Exit(2)
	}
}

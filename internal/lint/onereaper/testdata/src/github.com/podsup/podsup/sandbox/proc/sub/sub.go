// Package sub is under proc but is not proc: only the package holding the
// reaper may wait.
package sub

import "os"

func wait(p *os.Process) {
	_, _ = p.Wait() // want `\(\*os.Process\).Wait waits`
}

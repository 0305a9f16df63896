package bad

import (
	"os"
	"os/exec"
	"sync"
	"syscall"
)

type proc struct{}

func (proc) Wait() error { return nil }

func f() {
	c := exec.Command("true")
	_ = c.Run()               // want `Run waits for a process outside package proc`
	_ = c.Wait()              // want `Wait waits for a process outside package proc`
	_, _ = c.Output()         // want `Output waits`
	_, _ = c.CombinedOutput() // want `CombinedOutput waits`
	p, _ := os.FindProcess(1)
	_, _ = p.Wait() // want `\(\*os.Process\).Wait waits`
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(-1, &ws, 0, nil) // want `syscall.Wait4 waits`

	var wg sync.WaitGroup
	wg.Wait()
	_ = proc{}.Wait()
}

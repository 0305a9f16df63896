package proc

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Run both with: go test -run '^$' -bench 'Floor|SpawnUntil' -benchtime 3000x -count 5 ./sandbox
// (docs/benchmarks.md). The floor comes first: it waits for its own pid,
// which it may do only while the reaper is not running in this process.

// BenchmarkFloorForkExecWait4 is the floor: a bare ForkExec of /bin/true and
// wait4 on that pid, with no reaper, registration, pidfd or process group.
func BenchmarkFloorForkExecWait4(b *testing.B) {
	if theReaper != nil {
		b.Skip("the reaper already runs in this process and would race wait4(pid): run the floor first or alone (-bench Floor)")
	}
	for i := 0; i < b.N; i++ {
		pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{})
		if err != nil {
			b.Fatal(err)
		}
		var ws unix.WaitStatus
		for {
			if _, err = unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
				break
			}
		}
		if err != nil {
			b.Fatalf("wait4(%d): %v", pid, err)
		}
	}
}

// BenchmarkSpawnUntilExitKnown measures Start of /bin/true until its exit
// has been reaped and handed back: what a supervisor pays per (re)start,
// pidfd, process group, registration and reaper hand-off included.
func BenchmarkSpawnUntilExitKnown(b *testing.B) {
	StartReaper()
	for i := 0; i < b.N; i++ {
		p, err := Start(&Cmd{Path: "/bin/true", Args: []string{"true"}})
		if err != nil {
			b.Fatal(err)
		}
		<-p.Done()
	}
}

package proc

import (
	"fmt"
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

// BenchmarkSpawnBesideManyFDs is the linearity guard of a start at scale:
// Start of /bin/true until its exit is known while this process holds
// 0 or 10,000 more fds, as podsup holds one or two per running process.
// Forked on the calling thread ("inline") the kernel copies the fd table
// at the fork and closes every close-on-exec fd of the copy at the exec,
// so the time grows with the fds; through HostForker ("lean", forced here
// whatever the number of processes) it should not
// (docs/benchmarks.md, "Start and stop at scale"):
//
//	go test -run '^$' -bench SpawnBesideManyFDs -benchtime 500x -count 3 ./sandbox/proc
func BenchmarkSpawnBesideManyFDs(b *testing.B) {
	StartReaper()
	for _, fds := range []int{0, 10000} {
		for _, how := range []string{"inline", "lean"} {
			b.Run(fmt.Sprintf("fds=%d/%s", fds, how), func(b *testing.B) {
				held := holdFDs(b, fds)
				defer closeFDs(held)
				c := &Cmd{Path: "/bin/true", Args: []string{"true"}}
				if how == "lean" {
					old := leanForkAbove.Swap(0)
					defer leanForkAbove.Store(old)
					if leanThreadOnce() == nil {
						b.Skip("no lean thread here")
					}
					c.Forker = HostForker
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					p, err := Start(c)
					if err != nil {
						b.Fatal(err)
					}
					<-p.Done()
				}
			})
		}
	}
}

// holdFDs opens n close-on-exec fds of /dev/null, raising the soft
// RLIMIT_NOFILE as far as needed.
func holdFDs(b *testing.B, n int) []int {
	b.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	if want := uint64(n + 256); lim.Cur < want {
		if lim.Max < want {
			b.Skipf("RLIMIT_NOFILE's hard limit %d is under %d", lim.Max, want)
		}
		lim.Cur = want
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
			b.Fatal(err)
		}
	}
	fds := make([]int, 0, n)
	for range n {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			closeFDs(fds)
			b.Fatal(err)
		}
		fds = append(fds, fd)
	}
	return fds
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

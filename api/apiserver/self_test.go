package apiserver

import (
	"os"
	"testing"
)

func TestReadSelfCountsFdsGoroutinesAndRSS(t *testing.T) {
	first := readSelf()
	if first.Pid != os.Getpid() || first.Goroutines < 1 || first.Threads < 1 || first.RSSBytes <= 0 {
		t.Fatalf("readSelf() = %+v: want this pid, goroutines, threads and RSS > 0", first)
	}
	// One more open file and one more goroutine show as +1 each. Other
	// tests' goroutines and files may come and go between the two reads
	// (an HTTP server of an earlier test winding down), so a try whose
	// counts moved by something else is made again.
	var lastFDs, lastGoroutines [2]int
	for try := 0; try < 50; try++ {
		before := readSelf()
		f, err := os.Open("/dev/null")
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		done := make(chan struct{})
		go func() { <-release; close(done) }()
		after := readSelf()
		close(release)
		<-done
		f.Close()
		if after.OpenFDs == before.OpenFDs+1 && after.Goroutines == before.Goroutines+1 {
			return
		}
		lastFDs = [2]int{before.OpenFDs, after.OpenFDs}
		lastGoroutines = [2]int{before.Goroutines, after.Goroutines}
	}
	t.Errorf("50 tries, the last: open fds %d then %d after opening one file, goroutines %d then %d after starting one; want +1 each",
		lastFDs[0], lastFDs[1], lastGoroutines[0], lastGoroutines[1])
}

func TestStatusField(t *testing.T) {
	st := []byte("Name:\tpodsup\nThreads:\t7\nVmRSS:\t   1234 kB\n")
	if got := statusField(st, "Threads:"); got != 7 {
		t.Errorf("Threads = %d, want 7", got)
	}
	if got := statusField(st, "VmRSS:"); got != 1234 {
		t.Errorf("VmRSS = %d, want 1234", got)
	}
	if got := statusField(st, "VmSwap:"); got != 0 {
		t.Errorf("absent field = %d, want 0", got)
	}
}

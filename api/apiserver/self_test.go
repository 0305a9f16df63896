package apiserver

import (
	"os"
	"testing"
)

func TestReadSelfCountsFdsGoroutinesAndRSS(t *testing.T) {
	before := readSelf()
	if before.Pid != os.Getpid() || before.Goroutines < 1 || before.Threads < 1 || before.RSSBytes <= 0 {
		t.Fatalf("readSelf() = %+v: want this pid, goroutines, threads and RSS > 0", before)
	}
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	release := make(chan struct{})
	defer close(release)
	go func() { <-release }()
	after := readSelf()
	if after.OpenFDs != before.OpenFDs+1 {
		t.Errorf("open fds: %d, then %d after opening one file; want +1", before.OpenFDs, after.OpenFDs)
	}
	if after.Goroutines != before.Goroutines+1 {
		t.Errorf("goroutines: %d, then %d after starting one; want +1", before.Goroutines, after.Goroutines)
	}
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

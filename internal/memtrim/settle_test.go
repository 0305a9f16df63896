package memtrim

import (
	"runtime"
	"testing"
	"time"
)

// TestAfterStartupTrimsOnceQuiet: a burst's garbage is given back once a
// poll sees the heap quiet.
func TestAfterStartupTrimsOnceQuiet(t *testing.T) {
	for range 256 {
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil
	done := make(chan struct{})
	go func() {
		AfterStartup(Settling{Poll: 10 * time.Millisecond, Quiet: 1 << 40, Max: time.Minute}, func() bool { return true }, nil)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterStartup did not see a quiet heap")
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if held := ms.HeapSys - ms.HeapReleased; held > 128<<20 {
		t.Errorf("the heap still holds %d MiB from the kernel", held>>20)
	}
}

// TestAfterStartupGivesUp: a start-up that never ends is trimmed after Max
// all the same, and a closed stop ends the wait at once.
func TestAfterStartupGivesUp(t *testing.T) {
	start := time.Now()
	AfterStartup(Settling{Poll: 10 * time.Millisecond, Quiet: 1 << 40, Max: 100 * time.Millisecond}, func() bool { return false }, nil)
	if d := time.Since(start); d < 100*time.Millisecond || d > 10*time.Second {
		t.Errorf("AfterStartup returned after %v, want Max (100ms)", d)
	}
	stop := make(chan struct{})
	close(stop)
	start = time.Now()
	AfterStartup(Settling{Poll: time.Hour, Quiet: 0, Max: time.Hour}, nil, stop)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("AfterStartup ignored stop for %v", d)
	}
}

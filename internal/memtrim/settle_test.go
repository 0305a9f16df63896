package memtrim

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestSettleTrimsOnceQuiet: a burst's garbage is given back once a poll
// sees the heap quiet and the first starts over.
func TestSettleTrimsOnceQuiet(t *testing.T) {
	for range 256 {
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil
	done := make(chan struct{})
	go func() {
		StartupBegins(Settling{Poll: 10 * time.Millisecond, Quiet: 1 << 40, Max: time.Minute}, 0).Settle(func() bool { return true }, nil)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Settle did not see a quiet heap")
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if held := ms.HeapSys - ms.HeapReleased; held > 128<<20 {
		t.Errorf("the heap still holds %d MiB from the kernel", held>>20)
	}
}

// TestSettleGivesUp: a start-up that never ends is trimmed after Max all
// the same, and a closed stop ends the wait at once.
func TestSettleGivesUp(t *testing.T) {
	start := time.Now()
	StartupBegins(Settling{Poll: 10 * time.Millisecond, Quiet: 1 << 40, Max: 100 * time.Millisecond}, 0).Settle(func() bool { return false }, nil)
	if d := time.Since(start); d < 100*time.Millisecond || d > 10*time.Second {
		t.Errorf("Settle returned after %v, want Max (100ms)", d)
	}
	stop := make(chan struct{})
	close(stop)
	start = time.Now()
	StartupBegins(Settling{Poll: time.Hour, Max: time.Hour}, 0).Settle(nil, stop)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Settle ignored stop for %v", d)
	}
}

// TestStartupGCPercent: the GC percent is the start-up's until the first
// starts are over, then the one before, also when stop ends the wait; a
// few starts, or a GOGC in the environment, leave it alone.
func TestStartupGCPercent(t *testing.T) {
	t.Setenv("GOGC", "") // restored after the test; unset for it below
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	os.Unsetenv("GOGC")

	over := make(chan struct{})
	st := StartupBegins(Settling{Poll: 5 * time.Millisecond, Quiet: 0, Max: time.Minute, GCPercent: 25, GCPercentFrom: 10}, 10)
	if p := debug.SetGCPercent(25); p != 25 {
		t.Fatalf("GC percent %d during start-up, want 25", p)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		st.Settle(func() bool {
			select {
			case <-over:
				return true
			default:
				return false
			}
		}, stop)
		close(done)
	}()
	close(over)
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() != 100 {
		if time.Now().After(deadline) {
			t.Fatalf("GC percent %d after the first starts, want 100 back", gcPercent())
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop) // Quiet 0: the heap never settles
	<-done

	StartupBegins(Settling{Poll: time.Hour, Max: time.Hour, GCPercent: 25}, 1).Settle(nil, stop)
	if p := gcPercent(); p != 100 {
		t.Errorf("GC percent %d after a stopped start-up, want 100", p)
	}

	StartupBegins(Settling{GCPercent: 25, GCPercentFrom: 10}, 9)
	if p := gcPercent(); p != 100 {
		t.Errorf("GC percent %d for 9 starts (from 10), want it left alone (100)", p)
	}

	t.Setenv("GOGC", "100")
	StartupBegins(Settling{GCPercent: 25}, 1)
	if p := gcPercent(); p != 100 {
		t.Errorf("GC percent %d with GOGC set, want it left alone (100)", p)
	}
}

// gcPercent reads the GC percent (SetGCPercent is its only reader).
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFakeFiresTimersInDeadlineOrderAtTheirOwnTime(t *testing.T) {
	f := NewFake(Epoch)
	var got []time.Duration
	f.AfterFunc(3*time.Second, func() { got = append(got, f.Now().Sub(Epoch)) })
	f.AfterFunc(1*time.Second, func() { got = append(got, f.Now().Sub(Epoch)) })
	tm := f.NewTimer(2 * time.Second)
	f.Advance(2500 * time.Millisecond)
	if len(got) != 1 || got[0] != time.Second {
		t.Fatalf("after 2.5s: fired %v, want [1s]", got)
	}
	select {
	case at := <-tm.C():
		if at.Sub(Epoch) != 2*time.Second {
			t.Fatalf("timer value %v, want 2s", at.Sub(Epoch))
		}
	default:
		t.Fatal("2s timer did not fire by 2.5s")
	}
	f.Advance(time.Second)
	if len(got) != 2 || got[1] != 3*time.Second {
		t.Fatalf("after 3.5s: fired %v, want [1s 3s]", got)
	}
	if f.Now().Sub(Epoch) != 3500*time.Millisecond {
		t.Fatalf("now = %v", f.Now().Sub(Epoch))
	}
}

func TestFakeStopAndReset(t *testing.T) {
	f := NewFake(Epoch)
	fired := 0
	tm := f.AfterFunc(time.Second, func() { fired++ })
	if !tm.Stop() {
		t.Fatal("Stop of an armed timer returned false")
	}
	f.Advance(2 * time.Second)
	if fired != 0 {
		t.Fatal("stopped timer fired")
	}
	tm.Reset(time.Second)
	if d, ok := f.NextDeadline(); !ok || d.Sub(Epoch) != 3*time.Second {
		t.Fatalf("next deadline %v %v, want 3s", d.Sub(Epoch), ok)
	}
	f.Advance(time.Second)
	if fired != 1 {
		t.Fatalf("reset timer fired %d times, want 1", fired)
	}
}

func TestFakeBlockUntilWaitsForTimersToBeArmed(t *testing.T) {
	f := NewFake(Epoch)
	// Each arming comes once BlockUntil waits, so that it must be woken.
	done := blockUntilInBackground(t, f, 2)
	f.AfterFunc(time.Second, func() {})
	f.NewTimer(2 * time.Second)
	waitDone(t, done, "BlockUntil(2) after two timers were armed")
	if n := f.Pending(); n != 2 {
		t.Fatalf("BlockUntil(2) returned with %d timers armed", n)
	}

	// A fired timer no longer counts; re-arming it with Reset does.
	tm := f.NewTimer(time.Second)
	f.Advance(time.Second)
	if n := f.Pending(); n != 1 {
		t.Fatalf("after the 1s timers fired: %d armed, want 1", n)
	}
	done = blockUntilInBackground(t, f, 2)
	tm.Reset(time.Second)
	waitDone(t, done, "BlockUntil(2) after a Reset re-armed a fired timer")

	// With too few timers it waits until its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := f.BlockUntilContext(ctx, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("BlockUntilContext(3) with 2 armed: %v, want the context's deadline", err)
	}
}

// blockUntilInBackground calls f.BlockUntil(n) in a goroutine and returns
// once that call waits (a test in the package can see its channel).
func blockUntilInBackground(t *testing.T, f *Fake, n int) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() { f.BlockUntil(n); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		waiting := f.armed != nil
		f.mu.Unlock()
		if waiting {
			return done
		}
		if time.Now().After(deadline) {
			t.Fatal("BlockUntil never waited")
		}
		time.Sleep(time.Millisecond)
	}
}

func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked after 10s", what)
	}
}

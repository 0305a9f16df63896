package clock

import (
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

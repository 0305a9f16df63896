package proc

import (
	"testing"
	"time"
)

func TestForkGateSerializesButNeverWaitsLongOnAStuckHolder(t *testing.T) {
	g := newForkGate(forkGatePatience)
	stuck := g.enter() // a holder that never finishes in time
	defer stuck()
	t0 := time.Now()
	second := g.enter()
	waited := time.Since(t0)
	second()
	if waited < forkGatePatience/2 {
		t.Errorf("the second entry waited %s behind a holder: the gate did not serialize", waited)
	}
	if waited > 20*forkGatePatience {
		t.Errorf("the second entry waited %s behind a stuck holder, want about %s", waited, forkGatePatience)
	}
	// Releasing the stuck holder late must not free a token it no longer holds.
	stuck()
	third := g.enter()
	done := make(chan struct{})
	go func() { g.enter()(); close(done) }()
	select {
	case <-done:
		t.Fatal("a fourth entry got in while the third held the gate")
	case <-time.After(forkGatePatience / 4):
	}
	third()
	select {
	case <-done:
	case <-time.After(20 * forkGatePatience):
		t.Fatal("the fourth entry never got in after the third released")
	}
}

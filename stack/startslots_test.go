package stack

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A start waiting to run alone behind another hears its cancellation (a
// stop of its process) instead of waiting for the other to leave.
func TestStartAloneWaitHearsCancellation(t *testing.T) {
	t.Parallel()
	g := newStartSlots(2)
	leave, err := g.enter(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		l, err := g.enter(ctx, true)
		if err == nil {
			l()
		}
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("enter: %v, want context.Canceled", err)
		}
	case <-time.After(aloneWait / 2):
		t.Fatal("a cancelled start still waits for the one running alone")
	}
}

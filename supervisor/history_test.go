package supervisor

import (
	"github.com/podsup/podsup/supervisor/lifecycle"
	"testing"
)

func TestHistoryRingKeepsTheLastEventsInOrder(t *testing.T) {
	t.Parallel()
	h := &History{max: 3, changed: make(chan struct{})}
	_, woken := h.Since(0)
	for seq := uint64(1); seq <= 5; seq++ {
		h.add(lifecycle.Event{Seq: seq})
	}
	select {
	case <-woken:
	default:
		t.Fatal("followers were not woken")
	}
	evs, _ := h.Since(0)
	if len(evs) != 3 || evs[0].Seq != 3 || evs[1].Seq != 4 || evs[2].Seq != 5 {
		t.Fatalf("kept %+v, want seq 3, 4, 5", evs)
	}
	evs, _ = h.Since(4)
	if len(evs) != 1 || evs[0].Seq != 5 {
		t.Fatalf("since 4: %+v", evs)
	}
}

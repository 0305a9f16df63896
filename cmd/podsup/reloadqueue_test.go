package main

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestReloadQueueNeverBlocksAndCoalesces: while a reload is stuck, asking
// for more returns at once, and they coalesce into one more reload.
func TestReloadQueueNeverBlocksAndCoalesces(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	q := startReloadQueue(func() {
		runs.Add(1)
		started <- struct{}{}
		<-release
	})
	q.request()
	<-started // the first reload runs, and blocks
	done := make(chan struct{})
	go func() {
		for range 100 {
			q.request()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("asking for a reload blocked while one ran")
	}
	close(release)
	<-started // the one coalesced reload
	time.Sleep(100 * time.Millisecond)
	if n := runs.Load(); n != 2 {
		t.Fatalf("%d reloads ran for 101 requests made while the first ran; want 2", n)
	}
}

package main

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/podsup/podsup/clock"
)

// TestStopSignalRule drives `podsup up`'s signal loop on a fake clock: a
// repeat within 1s of the first stop signal is a duplicate, whichever
// signal it is; a later one escalates; SIGHUP reloads at any time.
func TestStopSignalRule(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	sigs := make(chan os.Signal)
	var got []string
	record := func(what string) func() { return func() { got = append(got, what) } }
	done := make(chan struct{})
	go func() {
		defer close(done)
		handleUpSignals(sigs, clk, record("reload"), record("stop"), record("escalate"), zerolog.Nop())
	}()
	send := func(s os.Signal, after time.Duration) {
		clk.Advance(after)
		sigs <- s
	}
	send(syscall.SIGHUP, 0)
	send(syscall.SIGTERM, time.Second)
	send(syscall.SIGTERM, 5*time.Millisecond)  // timeout(1): pid, then group
	send(syscall.SIGINT, 300*time.Millisecond) // still within 1s of the first
	send(syscall.SIGHUP, 100*time.Millisecond)
	send(syscall.SIGINT, 600*time.Millisecond) // 1.005s after the first: deliberate
	close(sigs)
	<-done
	want := []string{"reload", "stop", "reload", "escalate"}
	if len(got) != len(want) {
		t.Fatalf("actions %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("actions %q, want %q", got, want)
		}
	}
}

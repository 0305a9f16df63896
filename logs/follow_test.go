package logs

import (
	"context"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
)

// fastWriter writes 100 MB of 100-byte lines as fast as `yes | head` can.
// That is exactly 1,000,000 lines of 99 zeros.
const fastWriter = `yes $(printf %099d 0) | head -c 100000000`

const fastWriterLines = 1_000_000

// timeWriter runs the fast writer as g/p and returns how long it took to
// exit (it can only exit once capture took all but a pipe's worth).
func timeWriter(t *testing.T, h *Hub, inst string) time.Duration {
	t.Helper()
	start := time.Now()
	p, a := startSh(t, h, "g", "p", inst, spec.Log{}, fastWriter)
	<-p.Done()
	took := time.Since(start)
	waitDone(t, a)
	if e := p.Exit(); e.Code() != 0 {
		t.Fatalf("writer exited %d", e.Code())
	}
	return took
}

func TestSlowFollowerDoesNotSlowTheWriter(t *testing.T) {
	// Not parallel: it compares two timings, which other tests' load would skew.
	if testing.Short() {
		t.Skip("writes 100 MB twice; skipped with -short")
	}
	h := newTestHub(t, HubOptions{FollowBuffer: 256})
	alone := timeWriter(t, h, "1")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := h.Follow(ctx, "g", "p", 0)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct{ lines, skipped, markers int }
	result := make(chan seen, 1)
	go func() {
		var s seen
		for l := range ch {
			if l.Skipped > 0 {
				s.skipped += l.Skipped
				s.markers++
			} else {
				s.lines++
			}
			if s.lines+s.skipped == fastWriterLines {
				break // every line is accounted for
			}
			time.Sleep(time.Millisecond) // a deliberately slow reader
		}
		result <- s
	}()
	followed := timeWriter(t, h, "2")
	var s seen
	select {
	case s = <-result:
	case <-time.After(30 * time.Second):
		t.Fatal("the follower did not account for every line within 30s")
	}
	cancel()

	t.Logf("100 MB writer: %v alone, %v with a slow follower; follower got %d lines and %d markers for %d skipped lines",
		alone, followed, s.lines, s.markers, s.skipped)
	// Generous: two noisy cores, and the follower's copies cost something.
	if followed > 3*alone+2*time.Second {
		t.Errorf("the slow follower slowed the writer from %v to %v", alone, followed)
	}
	if s.markers == 0 || s.skipped < fastWriterLines/2 {
		t.Errorf("follower saw %d skip markers for %d lines; want most of 1M lines skipped, not waited for", s.markers, s.skipped)
	}
	if got := texts(mustTail(t, h, "g", "p", 1, false)); len(got) != 1 || len(got[0]) != 99 {
		t.Errorf("last line of the tail %q", got)
	}
}

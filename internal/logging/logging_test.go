package logging

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestConsoleFormatsZerologLines(t *testing.T) {
	var out bytes.Buffer
	zerolog.TimeFieldFormat = time.RFC3339Nano
	log := zerolog.New(&Console{Out: &out, TimeFormat: "15:04"}).With().Timestamp().Logger()
	log.Warn().Str("group", "web").Str("msg2", `has "quotes" and spaces`).Int("pid", 42).Bool("ok", true).Msg("process exited\twith code 1")
	got := out.String()
	for _, want := range []string{" WRN process exited\twith code 1", " group=web", ` msg2="has \"quotes\" and spaces"`, " pid=42", " ok=true"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if !strings.HasSuffix(got, "\n") || strings.Count(got, "\n") != 1 {
		t.Errorf("not one line: %q", got)
	}
	out.Reset()
	(&Console{Out: &out}).Write([]byte("not json\n"))
	if out.String() != "not json\n" {
		t.Errorf("non-JSON line changed: %q", out.String())
	}
}

type slowWriter struct {
	mu      sync.Mutex
	release chan struct{}
	buf     bytes.Buffer
}

func (s *slowWriter) Write(p []byte) (int, error) {
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func TestAsyncNeverBlocksAndCountsDrops(t *testing.T) {
	sw := &slowWriter{release: make(chan struct{})}
	a := NewAsync(sw, 10)
	start := time.Now()
	for i := 0; i < 1000; i++ {
		a.Write([]byte("line\n"))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("writes blocked on a stuck output for %v", d)
	}
	close(sw.release)
	a.Close()
	got := sw.buf.String()
	if !strings.Contains(got, "podsup: dropped ") {
		t.Fatalf("no drop notice in %q", got)
	}
	// At most one batch in flight plus a full queue: 2 x 10.
	if n := strings.Count(got, "line\n"); n < 10 || n > 20 {
		t.Fatalf("%d lines kept, want between 10 and 20", n)
	}
}

// countingWriter records each Write it is given, after the first is
// released.
type countingWriter struct {
	slowWriter
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	<-c.release
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	return c.buf.Write(p)
}

// A stream's burst of lines goes out in a few Writes, every byte of it in
// order; a record writer's (the journal) in one Write a line.
func TestAsyncStreamJoinsABurstOfLines(t *testing.T) {
	for _, stream := range []bool{true, false} {
		cw := &countingWriter{slowWriter: slowWriter{release: make(chan struct{})}}
		newAsync := NewAsync
		if stream {
			newAsync = NewAsyncStream
		}
		a := newAsync(cw, 0)
		var want strings.Builder
		long := strings.Repeat("x", maxJoined+10) + "\n" // alone in its Write
		for i := range 3000 {
			line := "line " + strings.Repeat("y", i%50) + "\n"
			if i == 1500 {
				line = long
			}
			want.WriteString(line)
			a.Write([]byte(line))
		}
		close(cw.release)
		a.Close()
		if got := cw.buf.String(); got != want.String() {
			t.Fatalf("stream=%v: the output is not the lines written, in order (%d bytes, want %d)", stream, len(got), want.Len())
		}
		switch {
		case stream && cw.writes > 10:
			t.Errorf("a stream got %d Writes for a burst of 3000 lines", cw.writes)
		case !stream && cw.writes != 3000:
			t.Errorf("a record writer got %d Writes for 3000 lines, want one a line", cw.writes)
		}
	}
}

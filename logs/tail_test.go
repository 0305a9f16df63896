package logs

import (
	"fmt"
	"math/rand"
	"testing"
)

// model is the obvious tail: a slice trimmed from the front.
type model struct{ lines []string }

func (m *model) add(s string, maxLines, maxBytes int) {
	m.lines = append(m.lines, s)
	for {
		size := 0
		for _, l := range m.lines {
			size += recordHeader + len(l)
		}
		if len(m.lines) <= maxLines && size <= maxBytes {
			return
		}
		m.lines = m.lines[1:]
	}
}

func TestTailMatchesModelUnderRandomLines(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(1))
	for _, bounds := range []struct{ lines, bytes int }{{1000, 4096}, {7, 1 << 20}, {3, 300}, {50, 1000}} {
		var tl tail
		var m model
		in := &instance{proc: &procLog{group: "g", process: "p"}, instance: "1"}
		for i := 0; i < 3000; i++ {
			s := fmt.Sprintf("%d:%s", i, make([]byte, rng.Intn(200)))
			tl.add(int64(i), 0, []byte(s), bounds.lines, bounds.bytes)
			m.add(s, bounds.lines, bounds.bytes)
			if i%97 == 0 || i == 2999 {
				got := texts(tl.lines(0, 0, in))
				if !equalStrings(got, m.lines) {
					t.Fatalf("bounds %+v after %d lines: tail has %d lines, model %d", bounds, i+1, len(got), len(m.lines))
				}
			}
			if len(tl.buf) > bounds.bytes {
				t.Fatalf("ring grew to %d bytes, bound %d", len(tl.buf), bounds.bytes)
			}
		}
		last := tl.lines(2, 0, in)
		if len(last) != 2 || last[1].Text != m.lines[len(m.lines)-1] || last[1].Time.UnixNano() != 2999 {
			t.Fatalf("bounds %+v: last two lines %+v", bounds, last)
		}
	}
}

func TestTailGrowsLazily(t *testing.T) {
	t.Parallel()
	var tl tail
	if cap(tl.buf) != 0 {
		t.Fatal("an empty tail allocated")
	}
	tl.add(1, flagStderr|flagPartial, []byte("hello"), DefaultTailLines, DefaultTailBytes)
	if len(tl.buf) != tailGrain {
		t.Fatalf("one short line allocated %d bytes, want %d", len(tl.buf), tailGrain)
	}
	in := &instance{proc: &procLog{group: "web", process: "api"}, instance: "7"}
	got := tl.lines(0, 0, in)
	want := Line{Group: "web", Process: "api", Instance: "7", Stream: Stderr, Text: "hello", Partial: true}
	got[0].Time = want.Time
	if got[0] != want {
		t.Fatalf("got %+v, want %+v", got[0], want)
	}
}

package supervisor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/clock"
	"github.com/podsup/podsup/supervisor/lifecycle"
)

// Event series (events.go): identical events within EventSeriesWindow are
// one event with a count, on the fake clock's times.

func unhealthy(at time.Time, msg string) lifecycle.Event {
	return lifecycle.Event{Time: at, Type: lifecycle.EventWarning, Reason: lifecycle.EventUnhealthy, Group: "web", Process: "api", Message: msg}
}

func TestCorrelatorFoldsIdenticalEventsWithinTheWindow(t *testing.T) {
	t.Parallel()
	c := newCorrelator(time.Minute, 100)
	t0 := clock.Epoch
	seq := uint64(0)
	see := func(e lifecycle.Event) lifecycle.Event {
		seq++
		e.Seq = seq
		e, _ = c.observe(e)
		return e
	}
	// Every 10 s for 5 minutes: one series whose count grows, each
	// repeat within a minute of the last.
	var last lifecycle.Event
	for i := 0; i <= 30; i++ {
		e := unhealthy(t0.Add(time.Duration(i)*10*time.Second), "Readiness probe failed: exit 1")
		e.InstanceID, e.Pid = fmt.Sprintf("api-%d", i), 100+i // not part of the key
		last = see(e)
	}
	if last.Count != 31 || !last.FirstTime.Equal(t0) || !last.Time.Equal(t0.Add(300*time.Second)) || last.Series != 1 {
		t.Errorf("after 31 repeats: count %d, first %s, last %s, series %d", last.Count, last.FirstTime, last.Time, last.Series)
	}
	// Another message, process or reason is another series.
	other := []lifecycle.Event{
		unhealthy(t0.Add(301*time.Second), "Readiness probe failed: exit 2"),
		{Time: t0.Add(302 * time.Second), Type: lifecycle.EventWarning, Reason: lifecycle.EventUnhealthy, Group: "web", Process: "sidecar", Message: "Readiness probe failed: exit 1"},
		{Time: t0.Add(303 * time.Second), Type: lifecycle.EventNormal, Reason: lifecycle.EventStarted, Group: "web", Process: "api", Message: "Readiness probe failed: exit 1"},
	}
	for _, e := range other {
		if got := see(e); got.Count != 1 || got.Series != got.Seq || !got.FirstTime.Equal(got.Time) {
			t.Errorf("%s %s %q: count %d, series %d (seq %d)", e.Reason, e.Process, e.Message, got.Count, got.Series, got.Seq)
		}
	}
	// More than a window after the last repeat, the series starts over.
	again := see(unhealthy(t0.Add(300*time.Second+time.Minute+time.Nanosecond), "Readiness probe failed: exit 1"))
	if again.Count != 1 || again.Series != again.Seq {
		t.Errorf("after a quiet window: count %d, series %d (seq %d)", again.Count, again.Series, again.Seq)
	}
}

func TestCorrelatorLogsARepeatingEventSparingly(t *testing.T) {
	t.Parallel()
	// A probe failing every 100 ms for five minutes: 3000 events, of which
	// the log gets the first, each power-of-two count, and otherwise one a
	// minute.
	c := newCorrelator(EventSeriesWindow, maxEventSeries)
	t0 := clock.Epoch
	var logged []string
	for i := 0; i < 3000; i++ {
		e, log := c.observe(unhealthy(t0.Add(time.Duration(i)*100*time.Millisecond), "Readiness probe failed: exit 1"))
		if log {
			logged = append(logged, fmt.Sprintf("x%d@%s", e.Count, e.Time.Sub(t0)))
		}
	}
	want := "x1@0s x2@100ms x4@300ms x8@700ms x16@1.5s x32@3.1s x64@6.3s x128@12.7s x256@25.5s x512@51.1s " +
		"x1024@1m42.3s x1624@2m42.3s x2048@3m24.7s x2648@4m24.7s"
	if got := strings.Join(logged, " "); got != want {
		t.Errorf("logged\n%s\nwant\n%s", got, want)
	}
}

func TestCorrelatorForgetsTheLeastRecentSeriesWhenFull(t *testing.T) {
	t.Parallel()
	c := newCorrelator(time.Hour, 3)
	t0 := clock.Epoch
	for i := 0; i < 4; i++ { // a, b, c, then d evicts a
		_, _ = c.observe(lifecycle.Event{Seq: uint64(i + 1), Time: t0.Add(time.Duration(i) * time.Second), Message: string(rune('a' + i))})
	}
	if len(c.series) != 3 {
		t.Fatalf("%d series kept, want 3", len(c.series))
	}
	if e, _ := c.observe(lifecycle.Event{Seq: 5, Time: t0.Add(5 * time.Second), Message: "b"}); e.Count != 2 {
		t.Errorf("b, still remembered: count %d, want 2", e.Count)
	}
	if e, _ := c.observe(lifecycle.Event{Seq: 6, Time: t0.Add(6 * time.Second), Message: "a"}); e.Count != 1 {
		t.Errorf("a, the least recent, was forgotten: count %d, want 1", e.Count)
	}
}

func TestHistoryKeepsOneEntryPerSeriesThroughAStorm(t *testing.T) {
	t.Parallel()
	// A probe failing every 100 ms for an hour, between other events: the
	// history (10 entries) keeps the others and one Unhealthy entry whose
	// count is every failure.
	bus := newEventBus(zerologNop(), 1<<16)
	h := &History{sub: bus.subscribe(), max: 10, changed: make(chan struct{})}
	go h.record()
	defer h.Close()
	t0 := clock.Epoch
	bus.publish(lifecycle.Event{Time: t0, Type: lifecycle.EventNormal, Reason: lifecycle.EventStarted, Group: "web", Process: "api", Message: "Started process api"})
	bus.publish(lifecycle.Event{Time: t0, Type: lifecycle.EventNormal, Reason: lifecycle.EventStarted, Group: "web", Process: "sidecar", Message: "Started process sidecar"})
	const failures = 36000
	for i := 0; i < failures; i++ {
		bus.publish(unhealthy(t0.Add(time.Duration(i)*100*time.Millisecond), "Readiness probe failed: exit 1"))
		if i == failures/2 {
			bus.publish(lifecycle.Event{Time: t0.Add(30 * time.Minute), Type: lifecycle.EventNormal, Reason: lifecycle.EventKilling, Group: "web", Process: "sidecar", Message: "Stopping process sidecar"})
		}
	}
	want := uint64(failures + 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var evs []lifecycle.Event
	h.Follow(ctx, 0, func(e lifecycle.Event) bool { return e.Seq < want })
	evs, _ = h.Since(0)
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s %s x%d", e.Reason, e.Process, e.Count))
	}
	if strings.Join(got, ", ") != fmt.Sprintf("Started api x1, Started sidecar x1, Killing sidecar x1, Unhealthy api x%d", failures) {
		t.Fatalf("history: %s", strings.Join(got, ", "))
	}
	u := evs[3]
	if u.Seq != want || !u.FirstTime.Equal(t0) || !u.Time.Equal(t0.Add((failures-1)*100*time.Millisecond)) {
		t.Errorf("the Unhealthy entry: seq %d (want %d), first %s, last %s", u.Seq, want, u.FirstTime, u.Time)
	}
	// A follower that saw the series' earlier publication gets the newer
	// one: the entries stay in Seq order.
	later, _ := h.Since(evs[2].Seq)
	if len(later) != 1 || later[0].Seq != want {
		t.Errorf("since the Killing event: %d events", len(later))
	}
}

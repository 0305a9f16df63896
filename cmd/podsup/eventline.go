package main

import (
	"fmt"
	"io"
	"time"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/termsafe"
)

// printEvent prints one event of `podsup events` as a table row, its
// words quoted for the terminal (termsafe): a message holds what a probe
// or a hook wrote ("Readiness probe failed: ..."), which must not retitle
// the window, clear the screen or overwrite the line with a bare CR. wide
// gives TIME in RFC 3339.
func printEvent(w io.Writer, e api.Event, wide bool) error {
	obj := e.Group
	if e.Process != "" {
		obj += "/" + e.Process
	}
	q := termsafe.Quote
	when, width := eventTime(e.Time, time.Now(), wide), 12
	if wide {
		width = len(eventTimeWide)
	}
	_, err := fmt.Fprintf(w, "%-*s  %-7s  %-20s  %-20s  %s%s\n", width, when, q(e.Type), q(e.Reason), q(obj), q(e.Message), seriesNote(e))
	return err
}

// eventTimeWide is TIME with -o wide: RFC 3339 to the millisecond, with
// the offset.
const eventTimeWide = "2006-01-02T15:04:05.000Z07:00"

// eventTime is the TIME column, in local time: the time of day to the
// millisecond for an event of today (the common case, and short), with the
// date for an older one, whose time of day alone would pass for today's;
// with wide, RFC 3339. kubectl events shows LAST SEEN as an age instead;
// podsup keeps the time (with the series' span in the message's
// "(x12 over 1m)"), which reads against the log's timestamps.
func eventTime(t, now time.Time, wide bool) string {
	t, now = t.Local(), now.Local()
	switch {
	case wide:
		return t.Format(eventTimeWide)
	case sameDay(t, now):
		return t.Format("15:04:05.000")
	}
	return t.Format("2006-01-02 15:04:05")
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd
}

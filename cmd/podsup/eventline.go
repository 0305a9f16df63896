package main

import (
	"fmt"
	"io"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/termsafe"
)

// printEventLine prints one event of `podsup events` as a table row, its
// words quoted for the terminal (termsafe): a message holds what a probe
// or a hook wrote ("Readiness probe failed: ..."), which must not retitle
// the window, clear the screen or overwrite the line with a bare CR.
func printEventLine(w io.Writer, e api.Event) error {
	obj := e.Group
	if e.Process != "" {
		obj += "/" + e.Process
	}
	q := termsafe.Quote
	_, err := fmt.Fprintf(w, "%-12s  %-7s  %-20s  %-20s  %s%s\n", e.Time.Local().Format("15:04:05.000"), q(e.Type), q(e.Reason), q(obj), q(e.Message), seriesNote(e))
	return err
}

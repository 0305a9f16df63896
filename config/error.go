package config

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"golang.org/x/sys/unix"
)

// Error is every problem found in a configuration file, with the sources
// needed to show each one in context. Parse and Load return it; callers
// print it with Print (or WriteText) and exit non-zero.
type Error struct {
	Diagnostics hcl.Diagnostics
	// Files maps a file name used in the diagnostics' ranges to its parsed
	// source, for the snippets.
	Files map[string]*hcl.File
}

// Error is one line per problem: "file:line:col: summary: detail".
func (e *Error) Error() string {
	lines := make([]string, 0, len(e.Diagnostics))
	for _, d := range e.Diagnostics {
		lines = append(lines, diagnosticLine(d))
	}
	return strings.Join(lines, "\n")
}

func diagnosticLine(d *hcl.Diagnostic) string {
	var b strings.Builder
	if d.Subject != nil {
		b.WriteString(position(*d.Subject) + ": ")
	}
	b.WriteString(d.Summary)
	if d.Detail != "" {
		b.WriteString(": ")
		b.WriteString(d.Detail)
	}
	return b.String()
}

// WriteText writes every problem human-readably: its file:line:col, the
// summary, the source lines with the culprit underlined, and the detail.
// color adds terminal escapes.
func (e *Error) WriteText(w io.Writer, color bool) error {
	tw := hcl.NewDiagnosticTextWriter(w, e.Files, 0, color)
	for _, d := range e.Diagnostics {
		// HCL's writer names the line but not the column; a file:line:col
		// head makes every problem clickable in editors and terminals.
		if d.Subject != nil {
			if _, err := fmt.Fprintf(w, "%s:\n", position(*d.Subject)); err != nil {
				return fmt.Errorf("writing diagnostics: %w", err)
			}
		}
		if err := tw.WriteDiagnostic(d); err != nil {
			return fmt.Errorf("writing diagnostics: %w", err)
		}
	}
	n := len(e.Diagnostics)
	plural := "s"
	if n == 1 {
		plural = ""
	}
	if _, err := fmt.Fprintf(w, "%d problem%s found.\n", n, plural); err != nil {
		return fmt.Errorf("writing diagnostics: %w", err)
	}
	return nil
}

// Print is WriteText with color when w is a terminal.
func (e *Error) Print(w io.Writer) error {
	return e.WriteText(w, isTerminal(w))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

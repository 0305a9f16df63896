package config

import (
	"bytes"
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
	// Omitted counts the problems found after the first MaxDiagnostics,
	// which are not kept.
	Omitted int
}

// MaxDiagnostics is how many problems an Error keeps and shows. A file
// of 490,000 wrong lines is 6 MB and as many problems: HCL's writer reads
// the file from its start for each snippet, and shows the first 50 in
// two minutes, all of them never (46b0b05's validate was at 1.5 GB after
// ten minutes, and a reload's log line would hold them all). The first
// hundred say what is wrong.
const MaxDiagnostics = 100

// snippetBudget is how many bytes of source WriteText lets HCL's writer
// read for snippets: about 3 s on the development machine (HCL splits
// every line into grapheme clusters).
const snippetBudget = 16 << 20

// newError is the Error for diags, keeping the first MaxDiagnostics;
// omitted more were found and dropped before.
func newError(diags hcl.Diagnostics, files map[string]*hcl.File, omitted int) *Error {
	e := &Error{Diagnostics: diags, Files: files, Omitted: omitted}
	if n := len(diags); n > MaxDiagnostics {
		e.Diagnostics = diags[:MaxDiagnostics:MaxDiagnostics]
		e.Omitted += n - MaxDiagnostics
	}
	return e
}

// omitted is the line that says how many problems are not shown.
func (e *Error) omitted() string {
	return fmt.Sprintf("... and %d more problems, not shown: fix these first.", e.Omitted)
}

// Error is one line per problem: "file:line:col: summary: detail".
func (e *Error) Error() string {
	lines := make([]string, 0, len(e.Diagnostics)+1)
	for _, d := range e.Diagnostics {
		lines = append(lines, diagnosticLine(d))
	}
	if e.Omitted > 0 {
		lines = append(lines, e.omitted())
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
//
// HCL's writer reads a problem's file from its start, and on to its end,
// for each snippet. WriteText hands it the file cut after the problem's
// last line, so a snippet costs the bytes before the problem only, and
// past snippetBudget bytes read in all a problem is shown without its
// source lines: a large file with many problems costs seconds, not hours.
func (e *Error) WriteText(w io.Writer, color bool) error {
	bare := hcl.NewDiagnosticTextWriter(w, nil, 0, color)
	budget := snippetBudget
	for _, d := range e.Diagnostics {
		// HCL's writer names the line but not the column; a file:line:col
		// head makes every problem clickable in editors and terminals.
		writer := bare
		if d.Subject != nil {
			if _, err := fmt.Fprintf(w, "%s:\n", position(*d.Subject)); err != nil {
				return fmt.Errorf("writing diagnostics: %w", err)
			}
			if f := e.Files[d.Subject.Filename]; f != nil {
				cut := snippetFile(f, d)
				if budget -= len(cut.Bytes); budget >= 0 {
					writer = hcl.NewDiagnosticTextWriter(w, map[string]*hcl.File{d.Subject.Filename: cut}, 0, color)
				}
			}
		}
		if err := writer.WriteDiagnostic(d); err != nil {
			return fmt.Errorf("writing diagnostics: %w", err)
		}
	}
	n := len(e.Diagnostics) + e.Omitted
	plural := "s"
	if n == 1 {
		plural = ""
	}
	shown := ""
	if e.Omitted > 0 {
		shown = fmt.Sprintf(" (the first %d are shown)", len(e.Diagnostics))
	}
	if _, err := fmt.Fprintf(w, "%d problem%s found%s.\n", n, plural, shown); err != nil {
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

// snippetFile is f cut after the line where d's subject (or context) ends:
// all HCL's writer needs for d's snippet, and the line numbers stay.
// The navigation (the "in group" context) is f's own.
func snippetFile(f *hcl.File, d *hcl.Diagnostic) *hcl.File {
	end := d.Subject.End.Byte
	if d.Context != nil {
		end = max(end, d.Context.End.Byte)
	}
	end = min(max(end, 0), len(f.Bytes))
	if i := bytes.IndexByte(f.Bytes[end:], '\n'); i >= 0 {
		end += i + 1
	} else {
		end = len(f.Bytes)
	}
	return &hcl.File{Body: f.Body, Bytes: f.Bytes[:end], Nav: f.Nav}
}

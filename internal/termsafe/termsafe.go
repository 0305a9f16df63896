// Package termsafe owns how text that podsup did not write itself (a
// process's output, a probe's message, a name, a command line, an error
// that echoes a server's words) is made harmless to the terminal that
// shows it: every character a terminal would act on rather than print is
// written as an escape (\x1b, \r, \u202e), as kubectl and systemctl do.
//
// Quoted are the C0 controls (tab too, unless the caller keeps it; newline
// always), DEL, the C1 controls (U+0080-U+009F, which some terminals read
// as ESC [ and the like), bytes that are not valid UTF-8, and the bidi
// overrides and isolates (U+202A-U+202E, U+2066-U+2069), which reorder
// what follows them on the screen. Printable UTF-8, non-ASCII letters
// included, is kept as it is.
//
// Text that needs no quoting is left exactly as it is, backslashes
// included: a command line such as printf 'a\n' prints as before. Text
// that is quoted also has each backslash doubled where it would read as
// the start of an escape ("\x41", "\n", "\\"), so that it reads back to
// the original exactly. A clean string that merely looks quoted (a
// process that prints the four characters \x1b) is shown as it is: it
// can look like a quoted ESC, but neither acts on the terminal.
package termsafe

import (
	"bytes"
	"io"
	"unicode/utf8"
)

// Flags choose what Append keeps.
type Flags uint8

const (
	// KeepTab keeps a tab as a tab: a process's own lines (podsup logs),
	// where tabs align columns and move the cursor nowhere harmful. In a
	// single-line field (a table cell, a tabwriter column) a tab is
	// quoted: it would shift the columns after it.
	KeepTab Flags = 1 << iota
	// Escaped says s is already escaped text, such as the body of a JSON
	// string literal: its backslashes are left alone, since they are its
	// own escapes, and only raw characters are quoted.
	Escaped
)

const hex = "0123456789abcdef"

// Quote returns s with every character a terminal would act on quoted
// (see the package doc), tab included; s itself when nothing needs it.
func Quote(s string) string {
	if !Needs(s, 0) {
		return s
	}
	return string(Append(make([]byte, 0, len(s)+16), s, 0))
}

// Needs reports whether Append would change s.
func Needs[S ~string | ~[]byte](s S, f Flags) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		if c == '\t' && f&KeepTab != 0 {
			i++
			continue
		}
		if c < 0x80 {
			return true
		}
		r, n := decodeRune(s, i)
		if r == utf8.RuneError && n <= 1 || unsafeRune(r) {
			return true
		}
		i += n
	}
	return false
}

// Append appends s to dst with every character a terminal would act on
// quoted: \a \b \t \n \v \f \r, \xHH for other bytes below 0x20, DEL
// and bytes that are not UTF-8, \u00HH for the C1 controls and \uHHHH
// for the bidi controls, and then \\ for a backslash that would read as
// an escape. s that needs none of it is appended as it is.
func Append[S ~string | ~[]byte](dst []byte, s S, f Flags) []byte {
	if !Needs(s, f) {
		return append(dst, s...)
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			if c == '\\' && f&Escaped == 0 && i+1 < len(s) && doubled(s[i+1]) {
				dst = append(dst, '\\')
			}
			dst = append(dst, c)
			i++
			continue
		}
		if c < 0x80 {
			switch {
			case c == '\t' && f&KeepTab != 0:
				dst = append(dst, c)
			case c == '\a':
				dst = append(dst, `\a`...)
			case c == '\b':
				dst = append(dst, `\b`...)
			case c == '\t':
				dst = append(dst, `\t`...)
			case c == '\n':
				dst = append(dst, `\n`...)
			case c == '\v':
				dst = append(dst, `\v`...)
			case c == '\f':
				dst = append(dst, `\f`...)
			case c == '\r':
				dst = append(dst, `\r`...)
			default: // the other C0 controls, ESC among them, and DEL
				dst = append(dst, '\\', 'x', hex[c>>4], hex[c&0xf])
			}
			i++
			continue
		}
		r, n := decodeRune(s, i)
		switch {
		case r == utf8.RuneError && n <= 1:
			dst = append(dst, '\\', 'x', hex[c>>4], hex[c&0xf])
			i++
			continue
		case unsafeRune(r):
			dst = append(dst, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		default:
			for j := 0; j < n; j++ {
				dst = append(dst, s[i+j])
			}
		}
		i += n
	}
	return dst
}

// doubled is whether a backslash followed by the byte c is doubled: when
// the two would read as one of Append's escapes, and when c starts
// anything but printable ASCII, which may be quoted into an escape itself
// (a backslash and then ESC is "\\\x1b", not "\\x1b").
func doubled(c byte) bool {
	switch c {
	case 'a', 'b', 't', 'n', 'v', 'f', 'r', 'x', 'u', '\\':
		return true
	}
	return c < 0x20 || c >= 0x7f
}

// unsafeRune is a non-ASCII rune a terminal acts on: a C1 control or a
// bidi override or isolate.
func unsafeRune(r rune) bool {
	return r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// decodeRune decodes the rune at s[i:] of a string or a byte slice.
func decodeRune[S ~string | ~[]byte](s S, i int) (rune, int) {
	var b [utf8.UTFMax]byte
	n := copy(b[:], s[i:min(i+utf8.UTFMax, len(s))])
	return utf8.DecodeRune(b[:n])
}

// Writer quotes what is written through it for a terminal, keeping
// newlines (it carries a stream of lines) and, with KeepTab, tabs: a
// process's output shown on a terminal. A character split between two
// writes is quoted whole; Flush writes an incomplete one left at the end.
type Writer struct {
	w   io.Writer
	f   Flags
	t   tail
	buf []byte
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer, f Flags) *Writer { return &Writer{w: w, f: f} }

// Write quotes p and writes it; it reports len(p) when the quoted bytes
// were written.
func (w *Writer) Write(p []byte) (int, error) {
	in := w.t.join(p)
	b := w.buf[:0]
	for {
		nl := bytes.IndexByte(in, '\n')
		if nl < 0 {
			b = Append(b, in, w.f)
			break
		}
		b = append(Append(b, in[:nl], w.f), '\n')
		in = in[nl+1:]
	}
	w.buf = b
	if _, err := w.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes, quoted, an incomplete character the last write ended in.
func (w *Writer) Flush() error {
	if len(w.t.pending) == 0 {
		return nil
	}
	b := Append(nil, w.t.pending, w.f)
	w.t.pending = nil
	_, err := w.w.Write(b)
	return err
}

// tail carries an incomplete UTF-8 sequence from the end of one write to
// the start of the next, so that a character split between writes is
// seen whole.
type tail struct{ pending []byte }

// join returns p after what the last write held back, less an incomplete
// sequence at its end, which it holds back in turn.
func (t *tail) join(p []byte) []byte {
	in := p
	if len(t.pending) > 0 {
		in = append(t.pending, p...)
		t.pending = nil
	}
	if k := incompleteTail(in); k > 0 {
		t.pending = append([]byte(nil), in[len(in)-k:]...)
		in = in[:len(in)-k]
	}
	return in
}

// incompleteTail is how many bytes at the end of p begin a UTF-8 sequence
// that p does not finish (0 when none).
func incompleteTail(p []byte) int {
	for k := 1; k <= min(utf8.UTFMax-1, len(p)); k++ {
		c := p[len(p)-k]
		if c < 0x80 {
			return 0
		}
		if c >= 0xc0 { // a start byte: is the sequence it starts cut short?
			need := 2
			switch {
			case c >= 0xf0:
				need = 4
			case c >= 0xe0:
				need = 3
			}
			if need > k && !utf8.FullRune(p[len(p)-k:]) {
				return k
			}
			return 0
		}
	}
	return 0
}

// AppendJSON appends the JSON text js with the characters encoding/json
// leaves raw that a terminal acts on, DEL, the C1 controls and the bidi
// controls, written as JSON's own \u escapes: the same JSON to a parser,
// inert on a terminal. (encoding/json already escapes the C0 controls,
// U+2028 and U+2029, and replaces bytes that are not UTF-8.) They can
// only stand inside JSON strings, so no parsing is needed.
func AppendJSON(dst, js []byte) []byte {
	for i := 0; i < len(js); {
		c := js[i]
		if c < 0x7f {
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(js[i:])
		if c == 0x7f || unsafeRune(r) {
			dst = append(dst, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		} else {
			dst = append(dst, js[i:i+n]...)
		}
		i += n
	}
	return dst
}

// JSONWriter applies AppendJSON to what is written through it: the JSON
// of -o json, written by an encoding/json Encoder or in whole lines.
type JSONWriter struct {
	w   io.Writer
	t   tail
	buf []byte
}

// NewJSONWriter returns a JSONWriter that writes to w.
func NewJSONWriter(w io.Writer) *JSONWriter { return &JSONWriter{w: w} }

// Write escapes p and writes it; a character split between two writes
// is escaped whole.
func (w *JSONWriter) Write(p []byte) (int, error) {
	w.buf = AppendJSON(w.buf[:0], w.t.join(p))
	if _, err := w.w.Write(w.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Package logging owns how podsup's own log lines reach a file or terminal:
// a fast console format for zerolog's JSON lines and an asynchronous writer
// that keeps slow output off the supervisor's goroutines.
//
// zerolog's ConsoleWriter decodes every line into a map with encoding/json
// and sorts its keys, a large share of podsup's CPU under a stream of
// restarts (docs/benchmarks.md, "Figures behind choices in the code").
// zerolog's lines are flat JSON objects
// with string, number, bool and null values, so a small scanner formats them
// with no reflection and one allocation-free pass.
//
// The console format quotes what a terminal would act on (internal/termsafe)
// in every message, key and value, whatever it writes to: a probe's output
// or a process's name reaches the log, and a log file is read on a terminal
// too (tail -f, less -R), where podsup cannot tell it will end up.
package logging

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/podsup/podsup/internal/termsafe"
)

// Console formats zerolog JSON lines as
//
//	15:04:05.000 INF message key=value key="value with spaces"
//
// Lines it cannot read are written as they are, but for the characters a
// terminal would act on, which are quoted.
type Console struct {
	Out io.Writer
	// TimeFormat defaults to "15:04:05.000", in local time.
	TimeFormat string

	mu  sync.Mutex
	buf []byte
}

var levelNames = map[string]string{
	"trace": "TRC", "debug": "DBG", "info": "INF", "warn": "WRN",
	"error": "ERR", "fatal": "FTL", "panic": "PNC",
}

// Write formats one JSON line (zerolog writes one per call).
func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out, ok := c.format(c.buf[:0], p)
	if !ok {
		out = termsafe.Append(c.buf[:0], bytes.TrimSuffix(p, []byte("\n")), termsafe.KeepTab)
		if len(p) > 0 && p[len(p)-1] == '\n' {
			out = append(out, '\n')
		}
	}
	c.buf = out
	_, err := c.Out.Write(out)
	return len(p), err
}

// Field is one key and its raw JSON value in a zerolog line.
type Field struct {
	Key   []byte // unquoted, escapes kept
	Value []byte // raw JSON value
}

// ScanLine appends the fields of one zerolog JSON line (a flat object) to
// fs, without decoding the line into a map: false when it is no JSON
// object this scanner reads.
func ScanLine(fs []Field, line []byte) ([]Field, bool) {
	s := bytes.TrimSpace(line)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return fs, false
	}
	s = s[1 : len(s)-1]
	for len(bytes.TrimSpace(s)) > 0 {
		s = bytes.TrimLeft(s, " ,")
		k, rest, ok := scanString(s)
		if !ok {
			return fs, false
		}
		rest = bytes.TrimLeft(rest, " ")
		if len(rest) == 0 || rest[0] != ':' {
			return fs, false
		}
		rest = bytes.TrimLeft(rest[1:], " ")
		v, rest2, ok := scanValue(rest)
		if !ok {
			return fs, false
		}
		fs = append(fs, Field{unquote(k), v})
		s = rest2
	}
	return fs, true
}

// Text is a JSON value's text: a string's, escapes decoded; any other
// value as it is written.
func Text(v []byte) string {
	if len(v) == 0 || v[0] != '"' {
		return string(v)
	}
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body)
	}
	var str string
	if err := json.Unmarshal(v, &str); err != nil {
		return string(body)
	}
	return str
}

func (c *Console) format(dst, line []byte) ([]byte, bool) {
	var fields [24]Field
	fs, ok := ScanLine(fields[:0], line)
	if !ok {
		return nil, false
	}
	var ts, level, msg []byte
	for _, f := range fs {
		switch string(f.Key) {
		case "time":
			ts = f.Value
		case "level":
			level = f.Value
		case "message":
			msg = f.Value
		}
	}
	tf := c.TimeFormat
	if tf == "" {
		tf = "15:04:05.000"
	}
	if ts != nil {
		if t, err := time.Parse(time.RFC3339Nano, string(unquote(ts))); err == nil {
			dst = t.Local().AppendFormat(dst, tf)
		} else {
			dst = termsafe.Append(dst, unquote(ts), termsafe.Escaped)
		}
		dst = append(dst, ' ')
	}
	if level != nil {
		name := levelNames[string(unquote(level))]
		if name == "" {
			name = "???"
		}
		dst = append(dst, name...)
		dst = append(dst, ' ')
	}
	var more []byte // a message's lines after its first
	if msg != nil {
		// A message keeps its tabs, as it always has: they move the
		// cursor nowhere harmful. One of several lines (a refused
		// reload's problems) has its first line here, before the
		// fields, and the others indented below, each quoted on its
		// own: a newline is the one control character shown as itself.
		text := ""
		if bytes.Contains(msg, []byte(`\n`)) { // one line costs no decode
			text = Text(msg)
		}
		if first, rest, multi := strings.Cut(text, "\n"); multi && utf8.ValidString(text) {
			dst = termsafe.Append(dst, first, termsafe.KeepTab)
			for _, l := range strings.Split(rest, "\n") {
				more = termsafe.Append(append(more, "\n    "...), l, termsafe.KeepTab)
			}
		} else {
			dst = appendUnquoted(dst, msg, termsafe.KeepTab)
		}
	}
	for _, f := range fs {
		switch string(f.Key) {
		case "time", "level", "message":
			continue
		}
		dst = append(dst, ' ')
		dst = termsafe.Append(dst, f.Key, termsafe.Escaped)
		dst = append(dst, '=')
		v := unquote(f.Value)
		if f.Value[0] == '"' && (len(v) == 0 || bytes.ContainsAny(v, " \t\"=")) {
			// Kept as a JSON literal, whose own escapes stay.
			dst = termsafe.Append(dst, f.Value, termsafe.Escaped)
		} else {
			dst = appendUnquoted(dst, f.Value, 0)
		}
	}
	return append(append(dst, more...), '\n'), true
}

// scanString reads a JSON string at the start of s.
func scanString(s []byte) (str, rest []byte, ok bool) {
	if len(s) == 0 || s[0] != '"' {
		return nil, nil, false
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return s[:i+1], s[i+1:], true
		}
	}
	return nil, nil, false
}

// scanValue reads a flat JSON value (string, number, true/false/null).
func scanValue(s []byte) (v, rest []byte, ok bool) {
	if len(s) == 0 {
		return nil, nil, false
	}
	if s[0] == '"' {
		return scanString(s)
	}
	if s[0] == '{' || s[0] == '[' {
		// Nested values: keep them raw up to the matching bracket.
		depth, inStr := 0, false
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case inStr && c == '\\':
				i++
			case c == '"':
				inStr = !inStr
			case !inStr && (c == '{' || c == '['):
				depth++
			case !inStr && (c == '}' || c == ']'):
				depth--
				if depth == 0 {
					return s[:i+1], s[i+1:], true
				}
			}
		}
		return nil, nil, false
	}
	i := bytes.IndexAny(s, ", ")
	if i < 0 {
		return s, nil, true
	}
	return s[:i], s[i:], true
}

// unquote strips the quotes of a JSON string without decoding escapes.
func unquote(v []byte) []byte {
	if len(v) >= 2 && v[0] == '"' {
		return v[1 : len(v)-1]
	}
	return v
}

// appendUnquoted appends a JSON value's text, decoding string escapes,
// with what a terminal would act on quoted.
func appendUnquoted(dst, v []byte, f termsafe.Flags) []byte {
	if len(v) == 0 || v[0] != '"' {
		return termsafe.Append(dst, v, termsafe.Escaped)
	}
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return termsafe.Append(dst, body, f)
	}
	if s, err := strconv.Unquote(string(v)); err == nil && utf8.ValidString(s) {
		return termsafe.Append(dst, s, f)
	}
	return termsafe.Append(dst, body, f|termsafe.Escaped)
}

package logs

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/podsup/podsup/internal/termsafe"
	"github.com/podsup/podsup/internal/tty"
)

// Formats of podsup's own output (spec.Supervisor.LogFormat).
const (
	FormatConsole = "console"
	FormatJSON    = "json"
)

// appendConsole formats a line the way docker compose does: the name padded
// to the widest name seen so far, " | ", the text; with a colour, the name
// and bar are in it.
func appendConsole(b []byte, name string, width int, color string, text []byte, quote bool) []byte {
	b = tty.AppendPrefix(b, name, width, color)
	return appendText(b, text, quote)
}

// appendText appends a process's line and a newline: quoted (escape
// sequences and bare CRs shown, not acted on) when it goes to an
// operator's terminal, as is otherwise.
func appendText(b, text []byte, quote bool) []byte {
	if quote {
		b = termsafe.Append(b, text, termsafe.KeepTab)
	} else {
		b = append(b, text...)
	}
	return append(b, '\n')
}

// appendJSON formats a line as one JSON object:
//
//	{"time":"2024-05-01T10:00:00.123456789Z","group":"web","process":"api","instance":"1","stream":"stdout","line":"..."}
//
// with "partial":true added when the line continues in the next one.
func appendJSON(b []byte, when time.Time, in *instance, s Stream, partial bool, text []byte) []byte {
	b = append(b, `{"time":"`...)
	b = when.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","group":`...)
	b = appendJSONString(b, in.proc.group)
	b = append(b, `,"process":`...)
	b = appendJSONString(b, in.proc.process)
	b = append(b, `,"instance":`...)
	b = appendJSONString(b, in.instance)
	b = append(b, `,"stream":"`...)
	b = append(b, s.String()...)
	b = append(b, `","line":`...)
	b = appendJSONString(b, text)
	if partial {
		b = append(b, `,"partial":true`...)
	}
	return append(b, "}\n"...)
}

// appendDroppedNotice is what podsup's output says after it had to drop
// lines because it could not be written fast enough.
func appendDroppedNotice(b []byte, format string, when time.Time, n int) []byte {
	msg := "podsup: dropped " + strconv.Itoa(n) + " lines"
	if format != FormatJSON {
		return append(append(b, msg...), '\n')
	}
	b = append(b, `{"time":"`...)
	b = when.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","stream":"podsup","dropped":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"line":`...)
	b = appendJSONString(b, msg)
	return append(b, "}\n"...)
}

// markHook appends a hook's line to dst behind its mark, "[hook:post_start] "
// and the like: the mark where a format has no stream field of its own
// (console lines, the text of the CRI files).
func markHook(dst []byte, s Stream, text []byte) []byte {
	dst = append(append(append(dst, '['), s.String()...), "] "...)
	return append(dst, text...)
}

// cri is the stream as a CRI log file names it: stdout or stderr only
// (parsers of the format know no other), a hook's lines being stdout.
func (s Stream) cri() Stream {
	if s == Stderr {
		return Stderr
	}
	return Stdout
}

// appendCRI formats a line for a log file the way the kubelet's CRI log
// files are: "TIME STREAM F|P TEXT", F for a full line, P for a piece of a
// line that was split at the line limit.
func appendCRI(b []byte, when time.Time, s Stream, partial bool, text []byte) []byte {
	b = when.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, ' ')
	b = append(b, s.String()...)
	if partial {
		b = append(b, " P "...)
	} else {
		b = append(b, " F "...)
	}
	b = append(b, text...)
	return append(b, '\n')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Invalid UTF-8 (a process's
// output is bytes, not text) becomes U+FFFD, as encoding/json does.
func appendJSONString[T string | []byte](b []byte, s T) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

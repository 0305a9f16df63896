package systemd

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/coreos/go-systemd/v22/journal"
	"github.com/rs/zerolog"

	"github.com/podsup/podsup/internal/logging"
)

// JournalSender sends one journal entry. JournalSend (go-systemd's
// journal.Send) is the real one; tests record entries instead, because
// go-systemd's socket path (/run/systemd/journal/socket) cannot be moved.
type JournalSender func(message string, priority journal.Priority, fields map[string]string) error

// JournalSend sends to journald with go-systemd's journal package (its
// native protocol, no cgo).
func JournalSend(message string, priority journal.Priority, fields map[string]string) error {
	return journal.Send(message, priority, fields)
}

// StderrIsJournal reports whether podsup's stderr is connected to the
// journal: JOURNAL_STREAM names fd 2's device and inode, as systemd sets it
// for StandardError=journal. Then podsup's own lines are better sent with
// fields than as text on that stream.
func StderrIsJournal() bool {
	ok, err := journal.StderrIsJournalStream()
	return ok && err == nil
}

// Identifier is SYSLOG_IDENTIFIER of podsup's own lines.
const Identifier = "podsup"

// LogWriter is a zerolog.LevelWriter for podsup's own log: give it a
// zerolog.Logger writing JSON. Each line becomes one journal entry with
// the line's level as PRIORITY, its message (followed by its fields as
// key=value, so journalctl shows them) as MESSAGE, SYSLOG_IDENTIFIER=podsup,
// and every field as PODSUP_<FIELD> (group → PODSUP_GROUP, process →
// PODSUP_PROCESS, ...) for journalctl's field matches.
type LogWriter struct {
	Send JournalSender
}

var _ zerolog.LevelWriter = LogWriter{}

// Write sends a line that carries no level of its own at info.
func (w LogWriter) Write(p []byte) (int, error) { return w.WriteLevel(zerolog.NoLevel, p) }

// WriteLevel sends one zerolog line. Without a level (a line that came
// through an io.Writer such as an asynchronous queue) the line's own
// "level" field gives the priority.
func (w LogWriter) WriteLevel(level zerolog.Level, p []byte) (int, error) {
	msg, fields, lineLevel := logEntry(p)
	if level == zerolog.NoLevel {
		if l, err := zerolog.ParseLevel(lineLevel); err == nil {
			level = l
		}
	}
	if err := w.Send(msg, levelPriority(level), fields); err != nil {
		return 0, fmt.Errorf("unable to send a log line to journald: %w", err)
	}
	return len(p), nil
}

// logEntry turns one JSON log line into MESSAGE and fields. A line that
// is not JSON is sent as it is. The line is scanned, not decoded into a
// map (internal/logging's scanner, as for the console format): a restart
// logs a few lines, and decoding was most of what each cost here.
func logEntry(p []byte) (msg string, fields map[string]string, level string) {
	var buf [24]logging.Field
	fs, ok := logging.ScanLine(buf[:0], p)
	if !ok {
		return strings.TrimRight(string(p), "\n"), map[string]string{"SYSLOG_IDENTIFIER": Identifier}, ""
	}
	fields = make(map[string]string, len(fs)+1)
	fields["SYSLOG_IDENTIFIER"] = Identifier
	// Sorted by key, and of a key given twice the last, as a decode
	// into a map would keep it.
	slices.SortStableFunc(fs, func(a, b logging.Field) int { return bytes.Compare(a.Key, b.Key) })
	var b strings.Builder
	for i, f := range fs {
		switch string(f.Key) {
		case zerolog.MessageFieldName:
			msg = logging.Text(f.Value)
			continue
		case zerolog.LevelFieldName:
			level = logging.Text(f.Value)
			continue
		case zerolog.TimestampFieldName:
			continue // journald's own timestamp
		}
		if i+1 < len(fs) && bytes.Equal(fs[i+1].Key, f.Key) {
			continue
		}
		k, v := string(f.Key), logging.Text(f.Value)
		fields["PODSUP_"+fieldName(k)] = v
		if strings.ContainsAny(v, " \n\"") {
			v = strconv.Quote(v)
		}
		b.WriteString(" " + k + "=" + v)
	}
	return msg + b.String(), fields, level
}

// fieldName makes a journal field name of a log key: upper case letters,
// digits and underscores (journald drops entries with anything else).
func fieldName(k string) string {
	b := []byte(strings.ToUpper(k))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// levelPriority maps a zerolog level to a syslog priority.
func levelPriority(l zerolog.Level) journal.Priority {
	switch l {
	case zerolog.TraceLevel, zerolog.DebugLevel:
		return journal.PriDebug
	case zerolog.WarnLevel:
		return journal.PriWarning
	case zerolog.ErrorLevel:
		return journal.PriErr
	case zerolog.FatalLevel:
		return journal.PriCrit
	case zerolog.PanicLevel:
		return journal.PriEmerg
	default:
		return journal.PriInfo
	}
}

// Stream priorities of process output without a "<N>" prefix.
const (
	StdoutPriority = journal.PriInfo
	StderrPriority = journal.PriWarning
)

// ProcessWriter sends a process's output to journald one line per entry,
// with SYSLOG_IDENTIFIER=<process>, PODSUP_GROUP, PODSUP_PROCESS,
// PODSUP_INSTANCE, PODSUP_STREAM and a priority: a line starting with
// "<N>" (sd-daemon(3)'s prefix, N in 0–7) has priority N with the prefix
// removed; otherwise stdout is info and stderr warning. A partial line
// waits for its newline, or for Close. Lines longer than 64 KiB are split.
type ProcessWriter struct {
	send   JournalSender
	fields map[string]string
	pri    journal.Priority

	mu  sync.Mutex
	buf []byte
}

// maxLine bounds a buffered partial line.
const maxLine = 64 << 10

// NewProcessWriter returns a writer for one stream ("stdout" or "stderr")
// of one instance.
func NewProcessWriter(send JournalSender, group, process, instance, stream string) *ProcessWriter {
	pri := StdoutPriority
	if stream == "stderr" {
		pri = StderrPriority
	}
	return &ProcessWriter{send: send, pri: pri, fields: map[string]string{
		"SYSLOG_IDENTIFIER": process,
		"PODSUP_GROUP":      group,
		"PODSUP_PROCESS":    process,
		"PODSUP_INSTANCE":   instance,
		"PODSUP_STREAM":     stream,
	}}
}

var _ io.WriteCloser = (*ProcessWriter)(nil)

// Write sends every complete line of p.
func (w *ProcessWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	var err error
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) >= maxLine {
				err = w.line(w.buf[:maxLine])
				w.buf = append(w.buf[:0], w.buf[maxLine:]...)
				continue
			}
			break
		}
		if e := w.line(w.buf[:i]); e != nil && err == nil {
			err = e
		}
		w.buf = w.buf[i+1:]
	}
	w.buf = append([]byte(nil), w.buf...)
	return len(p), err
}

// Close sends a last partial line.
func (w *ProcessWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) == 0 {
		return nil
	}
	err := w.line(w.buf)
	w.buf = nil
	return err
}

func (w *ProcessWriter) line(b []byte) error {
	msg, pri := linePriority(string(b), w.pri)
	return w.send(msg, pri, w.fields)
}

// linePriority strips an sd-daemon "<N>" prefix and returns its priority.
func linePriority(line string, def journal.Priority) (string, journal.Priority) {
	if len(line) >= 3 && line[0] == '<' && line[2] == '>' && line[1] >= '0' && line[1] <= '7' {
		return line[3:], journal.Priority(line[1] - '0')
	}
	return line, def
}

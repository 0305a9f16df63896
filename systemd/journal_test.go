package systemd

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/journal"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/internal/selftest"
	"github.com/podsup/podsup/sandbox/proc"
)

type entry struct {
	msg    string
	pri    journal.Priority
	fields map[string]string
}

type recorder struct{ entries []entry }

func (r *recorder) send(msg string, pri journal.Priority, fields map[string]string) error {
	r.entries = append(r.entries, entry{msg, pri, fields})
	return nil
}

// podsup's own lines: the zerolog level is the priority, fields become
// PODSUP_* fields and key=value text after the message.
func TestLogWriterFields(t *testing.T) {
	var r recorder
	log := zerolog.New(LogWriter{Send: r.send}).With().Timestamp().Logger()
	log.Warn().Str("group", "web").Str("process", "api").Int("exit_code", 3).Msg("process exited")
	log.Debug().Msg("quiet")
	log.Error().Str("err", "two words").Msg("boom")
	if len(r.entries) != 3 {
		t.Fatalf("%d entries", len(r.entries))
	}
	defer func() {
		if len(r.entries) != 4 {
			t.Errorf("%d entries", len(r.entries))
		}
	}()
	e := r.entries[0]
	if e.pri != journal.PriWarning || e.msg != "process exited exit_code=3 group=web process=api" {
		t.Errorf("entry %+v", e)
	}
	for k, v := range map[string]string{"SYSLOG_IDENTIFIER": "podsup", "PODSUP_GROUP": "web", "PODSUP_PROCESS": "api", "PODSUP_EXIT_CODE": "3"} {
		if e.fields[k] != v {
			t.Errorf("%s=%q, want %q", k, e.fields[k], v)
		}
	}
	if _, ok := e.fields["PODSUP_TIME"]; ok {
		t.Error("the timestamp is journald's, not a field")
	}
	// Through a plain io.Writer (podsup's async queue) the level comes
	// from the line.
	queued := zerolog.New(struct{ io.Writer }{LogWriter{Send: r.send}})
	queued.Error().Msg("via queue")
	if r.entries[3].pri != journal.PriErr {
		t.Errorf("level from the line: %d", r.entries[3].pri)
	}
	if r.entries[1].pri != journal.PriDebug || r.entries[2].pri != journal.PriErr || r.entries[2].msg != `boom err="two words"` {
		t.Errorf("entries %+v", r.entries[1:])
	}
}

// Process output: one entry per line, priority from the stream or a "<N>"
// prefix, partial lines wait for their newline or Close.
func TestProcessWriterLines(t *testing.T) {
	var r recorder
	w := NewProcessWriter(r.send, "web", "api", "web.1.api", "stderr")
	fmt.Fprint(w, "one\n<3>two\nthr")
	fmt.Fprint(w, "ee\n<7>")
	_ = w.Close()
	want := []entry{{"one", StderrPriority, nil}, {"two", journal.PriErr, nil}, {"three", StderrPriority, nil}, {"", journal.PriDebug, nil}}
	if len(r.entries) != len(want) {
		t.Fatalf("entries %+v", r.entries)
	}
	for i, e := range r.entries {
		if e.msg != want[i].msg || e.pri != want[i].pri {
			t.Errorf("entry %d: %q/%d, want %q/%d", i, e.msg, e.pri, want[i].msg, want[i].pri)
		}
	}
	f := r.entries[0].fields
	if f["PODSUP_GROUP"] != "web" || f["PODSUP_PROCESS"] != "api" || f["PODSUP_STREAM"] != "stderr" || f["SYSLOG_IDENTIFIER"] != "api" || f["PODSUP_INSTANCE"] != "web.1.api" {
		t.Errorf("fields %v", f)
	}
	var o recorder
	fmt.Fprint(NewProcessWriter(o.send, "g", "p", "i", "stdout"), "x\n")
	if o.entries[0].pri != StdoutPriority {
		t.Errorf("stdout priority %d", o.entries[0].pri)
	}
}

// The real go-systemd journal.Send, decoded from a fake journald. Its
// socket path is fixed (/run/systemd/journal/socket), so the test binary
// runs as a child in a mount namespace of its own with a tmpfs on /run
// and plays journald there.
func TestJournalDatagramThroughGoSystemd(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: mounts a tmpfs on /run in a private mount namespace")
	}
	proc.StartReaper()
	out, _ := selftest.Exec(t, proc.Cmd{RunAs: proc.RunAs{Env: append(os.Environ(), helperEnv+"=journald")}, Cloneflags: syscall.CLONE_NEWNS})
	got := out
	for _, want := range []string{"PRIORITY=4\n", "MESSAGE=process exited group=web\n", "SYSLOG_IDENTIFIER=podsup\n", "PODSUP_GROUP=web\n",
		"MESSAGE=two\nlines\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("journal datagrams lack %q:\n%s", want, got)
		}
	}
}

const helperEnv = "PODSUP_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "journald" {
		os.Exit(fakeJournald())
	}
	os.Exit(m.Run())
}

// fakeJournald runs in its own mount namespace: it binds
// /run/systemd/journal/socket on a private tmpfs, sends through
// go-systemd, and prints the decoded datagrams (binary-length fields
// unfolded) to stdout.
func fakeJournald() int {
	fail := func(err error) int { fmt.Println("helper:", err); return 1 }
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail(err)
	}
	if err := unix.Mount("tmpfs", "/run", "tmpfs", 0, "size=1m"); err != nil {
		return fail(err)
	}
	if err := os.MkdirAll("/run/systemd/journal", 0o755); err != nil {
		return fail(err)
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "/run/systemd/journal/socket", Net: "unixgram"})
	if err != nil {
		return fail(err)
	}
	log := zerolog.New(LogWriter{Send: JournalSend})
	log.Warn().Str("group", "web").Msg("process exited")
	if err := JournalSend("two\nlines", journal.PriInfo, nil); err != nil {
		return fail(err)
	}
	buf := make([]byte, 64<<10)
	for i := 0; i < 2; i++ {
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			return fail(err)
		}
		fmt.Print(decodeJournal(buf[:n]))
	}
	return 0
}

// decodeJournal unfolds journald's native format: KEY=VALUE lines, or KEY,
// newline, 64-bit little-endian length, value, newline.
func decodeJournal(b []byte) string {
	var out strings.Builder
	for len(b) > 0 {
		nl := strings.IndexByte(string(b), '\n')
		if nl < 0 {
			break
		}
		line := string(b[:nl])
		b = b[nl+1:]
		if strings.Contains(line, "=") {
			out.WriteString(line + "\n")
			continue
		}
		n := binary.LittleEndian.Uint64(b[:8])
		out.WriteString(line + "=" + string(b[8:8+n]) + "\n")
		b = b[8+n+1:]
	}
	return out.String()
}
